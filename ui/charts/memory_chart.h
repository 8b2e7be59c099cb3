// SPDX-License-Identifier: MIT
#pragma once

#include "chart_base.h"

#include "shardscape/cost/cost_model.h"
#include "shardscape/cost/serving.h"

#include <QList>
#include <QStringList>

class QAreaSeries;
class QBarSet;
class QLineSeries;
class QStackedBarSeries;
class QValueAxis;

namespace shardscape::ui {

/**
 * Peak memory of one device of every pipeline stage as stacked bars (weights, gradients, optimizer
 * states, stashed activations, transient buffers, reserve; GB = 1e9 bytes) against a dashed line at
 * the per-device memory limit, and a shaded band across the stages from the low to the high end of the predicted
 * peak's range (the calibration residuals' spread; Evaluation::peak_memory_range). The title names the
 * configuration and the OOM risk.
 */
class MemoryChart : public ChartBase
{
    Q_OBJECT

public:
    explicit MemoryChart(QWidget* parent = nullptr);
    ~MemoryChart() override;

    void setEvaluation(const Evaluation& evaluation);
    /** A serving deployment: one bar for a GPU of its fullest stage, stacked weights, the KV cache the requests in
        flight hold, the rest of the KV pool the engine reserved, activations and reserve, against the GPU's limit. */
    void setServing(const ServingEstimate& estimate);
    void clear();

    /** One set per component, in the order weights, gradients, optimizer, activations, transient, reserve; GB per
     * stage. */
    QList<QBarSet*> barSets() const;
    QStackedBarSeries* barSeries() const { return m_bars; }
    /** Two points at the memory limit in GB spanning all stages; empty without a limit. */
    QLineSeries* limitSeries() const { return m_limit; }
    /** The limit line's height, GB (0 when there is none). */
    double limitGB() const { return m_limitGB; }
    /** Stages the bars stand for (0 when none). */
    int stageCount() const { return static_cast<int>(m_stages.size()); }
    /** The stage numbers written along the x axis: every stride-th stage, as many as have room. */
    QStringList stageLabels() const;
    QValueAxis* valueAxis() const { return m_axisY; }
    /** The peak-memory range band (empty without a range): upper and lower lines at its high and low end, GB. */
    QAreaSeries* peakRangeSeries() const { return m_range; }
    /** The band's low and high end, GB (0, 0 when there is none). */
    std::pair<double, double> peakRangeGB() const { return m_rangeGB; }

private:
    void showBarToolTip(bool hovered, int index, QBarSet* set);
    void resizeEvent(QResizeEvent* event) override;
    /** Stage numbers thinned to what the axis has room for (a 64-stage pipeline on a quarter-screen chart). */
    void fitStageLabels();

    QStackedBarSeries* m_bars = nullptr;
    QLineSeries* m_limit = nullptr;
    QLineSeries* m_rangeLow = nullptr;
    QLineSeries* m_rangeHigh = nullptr;
    QAreaSeries* m_range = nullptr;
    std::pair<double, double> m_rangeGB {0, 0};
    QValueAxis* m_axisX = nullptr; ///< stage numbers (bar i at x = i)
    QValueAxis* m_axisY = nullptr;
    double m_limitGB = 0;
    int m_labelStride = 0; ///< every m_labelStride-th stage is numbered
    std::vector<MemoryBreakdown> m_stages; ///< bytes, for the tool tips
    std::vector<int> m_devices; ///< GPUs per stage, for the tool tips
    QString m_servingToolTip; ///< the bar's tool tip for a serving deployment
};

} // namespace shardscape::ui
