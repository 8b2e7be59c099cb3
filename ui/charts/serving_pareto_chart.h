// SPDX-License-Identifier: MIT
#pragma once

#include "chart_base.h"

#include "shardscape/cost/serving.h"

#include <vector>

class QLineSeries;
class QScatterSeries;
class QValueAxis;
class QXYSeries;

namespace shardscape::ui {

/**
 * The serving trade-off: output tokens per second per GPU against time per output token (ms). Every deployment the
 * planner kept is a point at its planned concurrency; the selected one also draws its whole curve (concurrency 1, 2,
 * 4, ... up to what its KV cache holds), and the Pareto front over all deployments' curves shows the most throughput
 * any of them reaches at each latency. A TPOT bound is a dashed vertical line.
 */
class ServingParetoChart : public ChartBase
{
    Q_OBJECT

public:
    explicit ServingParetoChart(QWidget* parent = nullptr);
    ~ServingParetoChart() override;

    /** `selectedIndex` indexes `deployments` (feasible ones); -1 selects nothing. `maxTpotMs` 0 = no bound. */
    void setDeployments(const std::vector<ServingEstimate>& deployments, int selectedIndex, double maxTpotMs);
    void setSelectedIndex(int selectedIndex);
    void clear();

    QScatterSeries* deploymentSeries() const { return m_points; }
    QScatterSeries* selectedSeries() const { return m_selected; }
    QLineSeries* curveSeries() const { return m_curve; }
    QLineSeries* frontSeries() const { return m_front; }
    QLineSeries* boundSeries() const { return m_bound; }
    int selectedIndex() const { return m_selectedIndex; }

Q_SIGNALS:
    /** The user clicked the deployment at `index` (into setDeployments' vector). */
    void deploymentClicked(int index);

private:
    void showPointToolTip(const QPointF& point, bool state, const QXYSeries* series, const std::vector<QString>& texts);

    QScatterSeries* m_points = nullptr;
    QScatterSeries* m_selected = nullptr;
    QLineSeries* m_curve = nullptr;
    QLineSeries* m_front = nullptr;
    QLineSeries* m_bound = nullptr;
    QValueAxis* m_axisX = nullptr;
    QValueAxis* m_axisY = nullptr;
    std::vector<ServingEstimate> m_deployments;
    std::vector<QString> m_pointTexts; ///< parallel to m_points
    std::vector<QString> m_frontTexts; ///< parallel to m_front
    std::vector<QString> m_curveTexts; ///< parallel to m_curve
    int m_selectedIndex = -1;
};

} // namespace shardscape::ui
