// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/search/serving_planner.h"

#include <QWidget>

#include <memory>

class QLabel;
class QSplitter;
class QTableWidget;

namespace shardscape::ui {

class MemoryChart;
class ServingParetoChart;

/**
 * What an inference plan (is_train false) shows: the deployments in a table (rank, TP x PP x DP and EP, GPUs,
 * concurrency, TTFT, TPOT, output tokens/s, per GPU, KV cache; the best infeasible ones greyed with their reason),
 * and below it the throughput-latency Pareto chart and the selected deployment's memory per GPU with its KV cache.
 * The charts are built only when ui/charts is part of the build.
 */
class ServingView : public QWidget
{
    Q_OBJECT
public:
    explicit ServingView(QWidget* parent = nullptr);
    ~ServingView() override;

    /** Shows a plan; `maxTpotMs` (0 = none) draws the TPOT bound. Selects the best deployment, if any. */
    void setResult(std::shared_ptr<const ServingPlanResult> result, double maxTpotMs);
    void clear();

    /** Selects row `row` (feasible deployments first, then the infeasible ones); -1 clears the selection. */
    void selectRow(int row);
    int selectedRow() const;
    /** The deployment of a table row, or null. */
    const ServingEstimate* deployment(int row) const;
    bool isFeasibleRow(int row) const;

    QTableWidget* table() const { return m_table; }
    /** Null when the charts are not built in. */
    ServingParetoChart* paretoChart() const { return m_pareto; }
    MemoryChart* memoryChart() const { return m_memory; }

signals:
    void selectionChanged(int row);

private:
    void showSelection();

    std::shared_ptr<const ServingPlanResult> m_result;
    QLabel* m_summary;
    QTableWidget* m_table;
    QSplitter* m_splitter;
    ServingParetoChart* m_pareto = nullptr;
    MemoryChart* m_memory = nullptr;
};

} // namespace shardscape::ui
