// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/cost/framework_profile.h"

#include <QList>
#include <QWidget>

class QComboBox;
class QDoubleSpinBox;
class QFormLayout;
class QLineEdit;
class QSettings;
class QSpinBox;

namespace shardscape::ui {

struct PlanRequest;

/**
 * The planner's options (PlannerConfig, AutoDist names in the tooltips): global batch, sequence length, stage count,
 * micro-batch, ZeRO, recomputation, schedule, solver, top-k, pruning ratios, the method and the framework, and locks
 * on the TP, DP, CP, EP and VPP degrees (a comma list each; empty searches the dimension). The lowest
 * value of a spin box means "search it" / "the model's default", as its text says. In inference mode (is_train false)
 * the training rows give way to the serving request: input and output lengths, concurrency, weight and KV-cache
 * formats, latency bounds, the serving engine and its memory fraction.
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
    /** Inference mode: the planner sizes a serving deployment (is_train false) instead of a training job. */
    bool isInference() const;
    void setInference(bool inference);
    /** The TPOT bound in ms (0 = none), as the inference row sets it. */
    void setMaxTpotMs(double ms);

    void saveSettings(QSettings& settings) const;
    void restoreSettings(const QSettings& settings);

signals:
    void changed();
    /** The sequence length changed: the model graph must be rebuilt. */
    void seqLenChanged(int tokens);
    /** Training or inference was chosen: the window shows the views of that mode. */
    void modeChanged(bool inference);

private:
    void createInferenceRows();
    void showModeRows();

    QFormLayout* m_form = nullptr;
    QComboBox* m_mode;
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
    /** Dimension locks (DimensionLocks): a comma list of values, or empty to search. */
    QLineEdit* m_lockTp;
    QLineEdit* m_lockDp;
    QLineEdit* m_lockCp;
    QLineEdit* m_lockEp;
    QLineEdit* m_lockVpp;
    // Inference (serving) rows.
    QSpinBox* m_inputLen;
    QSpinBox* m_outputLen;
    QSpinBox* m_concurrency;
    QComboBox* m_weightDtype;
    QComboBox* m_kvDtype;
    QDoubleSpinBox* m_maxTtft;
    QDoubleSpinBox* m_maxTpot;
    QComboBox* m_engine;
    QDoubleSpinBox* m_memoryFraction;
    QList<QWidget*> m_trainingRows;
    QList<QWidget*> m_inferenceRows;
};

} // namespace shardscape::ui
