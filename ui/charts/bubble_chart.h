// SPDX-License-Identifier: MIT
#pragma once

#include "chart_base.h"

#include <utility>
#include <vector>

class QLineSeries;
class QLogValueAxis;
class QScatterSeries;
class QValueAxis;

namespace shardscape::ui {

/**
 * Pipeline bubble ratio (idle over busy compute time, in percent) against the number of
 * micro-batches per step for the selected plan, with the plan's current count marked: how much
 * more gradient accumulation would buy. The points come from the core's simulator.
 */
class BubbleChart : public ChartBase
{
    Q_OBJECT

public:
    explicit BubbleChart(QWidget* parent = nullptr);
    ~BubbleChart() override;

    /** `points`: (micro-batches, bubble ratio as a fraction) pairs, any order; `currentMicrobatches` is marked. */
    void setCurve(const std::vector<std::pair<int, double>>& points, int currentMicrobatches);
    void clear();

    /** The curve: x micro-batches, y bubble ratio in percent (fraction x 100), sorted by x. */
    QLineSeries* curveSeries() const { return m_curve; }
    /** The current micro-batch count's point (one point, or none when it is not among the points). */
    QScatterSeries* currentSeries() const { return m_current; }
    /** The bubble axis: the idle share of the step, 0-100%. */
    QValueAxis* valueAxis() const { return m_axisY; }

private:
    QLineSeries* m_curve = nullptr;
    QScatterSeries* m_current = nullptr;
    QLogValueAxis* m_axisX = nullptr;
    QValueAxis* m_axisY = nullptr;
};

} // namespace shardscape::ui
