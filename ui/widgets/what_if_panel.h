// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/cost/cost_model.h"

#include <QWidget>

#include <optional>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;
class QTimer;

namespace shardscape::ui {

/**
 * Edits the selected plan's configuration (tp, pp, dp, vpp, micro-batch, micro-batches, ZeRO, recomputation,
 * schedule, framework, layers per stage) and shows the re-simulated result against the original: step time and its
 * predicted range, throughput, MFU, peak memory with its range and OOM risk, and bubble, with their change. Edits
 * within one event-loop pass are coalesced, then configEdited() asks for a re-simulation.
 */
class WhatIfPanel : public QWidget
{
    Q_OBJECT
public:
    explicit WhatIfPanel(QWidget* parent = nullptr);

    /** The configuration to start from: resets every editor to it and clears the what-if result. */
    void setBaseline(const Evaluation& baseline, int clusterGpus);
    void clearBaseline();
    bool hasBaseline() const { return m_baseline.has_value(); }

    /** The configuration as edited. */
    ParallelConfig editedConfig() const;

    /** The re-simulated edit; `seconds` is what the re-simulation took. */
    void showResult(const Evaluation& result, double seconds);
    /** The edit could not be evaluated (malformed): the cause. */
    void showProblem(const QString& message);
    /** The last what-if result shown, if any. */
    const std::optional<Evaluation>& result() const { return m_result; }

    /** Sets one editor by name ("tp", "pp", "dp", "vpp", "micro_batch", "num_microbatches", "recompute_blocks"), as
        a user would. */
    void setValue(const QString& field, int value);
    /** Chooses the framework as a user would. */
    void setFramework(Framework framework);
    /** The text of one cell of the prediction table: row by its label ("Step range", "OOM risk", ...), column 1 the
        plan, 2 the what-if, 3 the change; empty when there is no such row. */
    QString predictionText(const QString& row, int column) const;
    /** The status line under the table (rich text when it warns). */
    QString statusText() const;

signals:
    /** The edit needs more GPUs than the cluster has: nothing is simulated, the panel says so in red. */
    void outsideCluster(const shardscape::ParallelConfig& config);
    void configEdited(const shardscape::ParallelConfig& config);
    /** "Back to the plan": the editors were reset to the baseline. */
    void resetRequested();
    void pinRequested();

private:
    void scheduleEdit();
    /** Whether the recomputation box allows choosing blocks: full, or a plan's block set. */
    bool recomputesWholeBlocks() const;
    void loadEditors(const ParallelConfig& config);
    void updateTable();

    std::optional<Evaluation> m_baseline;
    std::optional<Evaluation> m_result;
    int m_clusterGpus = 0;
    bool m_loading = false;

    QSpinBox* m_tp;
    QSpinBox* m_pp;
    QSpinBox* m_dp;
    QSpinBox* m_vpp;
    QSpinBox* m_microBatch;
    QSpinBox* m_microBatches;
    QComboBox* m_zero;
    QComboBox* m_recompute;
    QSpinBox* m_recomputeBlocks; ///< with full recomputation: the first N blocks of each chunk, 0 = all
    QComboBox* m_schedule;
    QCheckBox* m_tpOverlap;
    QCheckBox* m_paramGatherOverlap;
    QCheckBox* m_a2aOverlap;
    QCheckBox* m_sharedExpertOverlap;
    QDoubleSpinBox* m_capacity;
    QDoubleSpinBox* m_imbalance;
    QCheckBox* m_fp8;
    QCheckBox* m_eager;
    QCheckBox* m_gradBf16;
    QCheckBox* m_fp8Params;
    QComboBox* m_framework;
    QLineEdit* m_stageLayers;
    QLabel* m_status;
    QLabel* m_table[10][4] {};
    QPushButton* m_reset;
    QPushButton* m_pin;
    QTimer* m_debounce;
};

} // namespace shardscape::ui
