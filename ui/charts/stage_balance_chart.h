// SPDX-License-Identifier: MIT
#pragma once

#include "chart_base.h"

#include "shardscape/cost/cost_model.h"
#include "shardscape/model/layers.h"

#include <QList>
#include <QStringList>

#include <vector>

class QAbstractAxis;
class QBarCategoryAxis;
class QBarSeries;
class QBarSet;
class QLineSeries;
class QValueAxis;

namespace shardscape::ui {

/**
 * Compute time of each pipeline stage (forward + backward of one micro-batch, all its chunks, ms)
 * as bars labelled "i: layers a-b", the slowest stage highlighted and the mean dashed: the pipeline
 * runs at the pace of its slowest stage, so the gap between the two is the imbalance.
 */
class StageBalanceChart : public ChartBase
{
    Q_OBJECT

public:
    explicit StageBalanceChart(QWidget* parent = nullptr);
    ~StageBalanceChart() override;

    /** `layers`: CostModel::layers(), for the layer names in the tool tips (may be empty). */
    void setEvaluation(const Evaluation& evaluation, const std::vector<Layer>& layers);
    void clear();

    /** One set: stages[i].compute * 1e3 (ms) per stage. */
    QList<QBarSet*> barSets() const;
    QBarSeries* barSeries() const { return m_bars; }
    /** Two points at the mean stage time in ms. */
    QLineSeries* meanSeries() const { return m_mean; }
    /** "i: layers a-b" per stage (chunks joined by ", " for interleaved schedules). */
    QStringList stageLabels() const { return m_labels; }
    /** What the x axis shows now: the stage labels on one to three lines, or, when narrow, the stage numbers
        written (every stride-th, on a value axis, so that none is cut to "..."). */
    QStringList categories() const;
    /** The slowest stage, or -1. */
    int slowestStage() const { return m_slowest; }

protected:
    void resizeEvent(QResizeEvent* event) override;

private:
    enum class LabelStyle
    {
        OneLine,
        TwoLines,
        ThreeLines,
        Numbers
    };
    void fitCategoryLabels();
    /** `stride`: with bare numbers, every stride-th stage is numbered. */
    void applyLabelStyle(LabelStyle style, int stride);
    void onLabelsTruncated(bool truncated);
    /** Puts `axis` under the bars and the mean line in place of the other x axis. */
    void useXAxis(QAbstractAxis* axis);
    void showBarToolTip(bool hovered, int index);

    QBarSeries* m_bars = nullptr;
    QLineSeries* m_mean = nullptr;
    QBarCategoryAxis* m_axisX = nullptr; ///< stage labels with their layers
    QValueAxis* m_numberAxis = nullptr; ///< bare stage numbers (bar i at x = i), every stride-th written
    QAbstractAxis* m_shownX = nullptr; ///< the one of the two in the chart; the chart owns it, this widget the other
    QValueAxis* m_axisY = nullptr;
    QStringList m_labels;
    QStringList m_toolTips;
    int m_slowest = -1;
    LabelStyle m_labelStyle = LabelStyle::OneLine;
    int m_labelStride = 1;
    /** The widest style QtCharts cut at the room per bar below: refits with no more room stay narrower. */
    LabelStyle m_cutStyle = LabelStyle::Numbers;
    double m_cutPerBar = -1;
    double m_perBar = 0; ///< room per bar at the last fit, pixels
};

} // namespace shardscape::ui
