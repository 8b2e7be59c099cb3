// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/cost/framework_profile.h"

#include <QWidget>

class QComboBox;
class QDoubleSpinBox;
class QSettings;
class QSpinBox;

namespace shardscape::ui {

struct PlanRequest;

/**
 * The planner's options (PlannerConfig, AutoDist names in the tooltips): global batch, sequence length, stage count,
 * micro-batch, ZeRO, recomputation, schedule, solver, top-k, pruning ratios, the method and the framework. The lowest
 * value of a spin box means "search it" / "the model's default", as its text says.
 */
class PlannerPanel : public QWidget
{
    Q_OBJECT
public:
    enum class Recompute
    {
        SearchOrTicked, ///< the layer tree's ticks when there are any, else search none/selective/full
        Full ///< every block ("ROOT")
    };

    explicit PlannerPanel(QWidget* parent = nullptr);

    /** Writes global_batch, seq_len and every planner option it owns into `request`. */
    void applyTo(PlanRequest& request) const;
    Recompute recompute() const;

    void setGlobalBatch(int sequences);
    void setSeqLen(int tokens);
    int seqLen() const;
    /** Chooses the framework as a user would: options it cannot run are greyed out and reset to search/auto. */
    void setFramework(Framework framework);

    void saveSettings(QSettings& settings) const;
    void restoreSettings(const QSettings& settings);

signals:
    void changed();
    /** The sequence length changed: the model graph must be rebuilt. */
    void seqLenChanged(int tokens);

private:
    QSpinBox* m_globalBatch;
    QSpinBox* m_seqLen;
    QSpinBox* m_stages;
    QSpinBox* m_microBatch;
    QComboBox* m_zero;
    QComboBox* m_recompute;
    QComboBox* m_schedule;
    QComboBox* m_solver;
    QSpinBox* m_topk;
    QDoubleSpinBox* m_maxBubble;
    QDoubleSpinBox* m_minBalance;
    QComboBox* m_method;
    QComboBox* m_framework;
};

} // namespace shardscape::ui
