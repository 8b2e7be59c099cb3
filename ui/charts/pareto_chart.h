// SPDX-License-Identifier: MIT
#pragma once

#include "chart_base.h"

#include "shardscape/cost/cost_model.h"

#include <vector>

class QLineSeries;
class QScatterSeries;
class QValueAxis;

namespace shardscape::ui {

/**
 * Step time (seconds) against peak memory per device (GB) for every candidate the planner costed:
 * feasible and infeasible ones as two scatter series, the selected one ringed, the Pareto front of
 * the feasible ones (nothing both faster and smaller) as a line, and the memory limit dashed.
 */
class ParetoChart : public ChartBase
{
    Q_OBJECT

public:
    explicit ParetoChart(QWidget* parent = nullptr);
    ~ParetoChart() override;

    /** `selectedIndex` indexes `feasible`; -1 selects nothing. Candidates without a finite step time are left out. */
    void setCandidates(const std::vector<Evaluation>& feasible, const std::vector<Evaluation>& infeasible,
                       int selectedIndex);
    /** Rings another feasible candidate without rebuilding the chart. */
    void setSelectedIndex(int selectedIndex);
    void clear();

    QScatterSeries* feasibleSeries() const { return m_feasible; }
    QScatterSeries* infeasibleSeries() const { return m_infeasible; }
    /** One point (the selected candidate) or none. */
    QScatterSeries* selectedSeries() const { return m_selected; }
    QLineSeries* frontSeries() const { return m_front; }
    QLineSeries* limitSeries() const { return m_limit; }
    int selectedIndex() const { return m_selectedIndex; }

Q_SIGNALS:
    /** The user clicked the feasible candidate at `index` (into setCandidates' `feasible`). */
    void candidateClicked(int index);

private:
    struct Point
    {
        int index = 0; ///< into the input vector
        QString text; ///< tool tip
    };
    void onHovered(const QPointF& point, bool state, bool feasible);

    QScatterSeries* m_feasible = nullptr;
    QScatterSeries* m_infeasible = nullptr;
    QScatterSeries* m_selected = nullptr;
    QLineSeries* m_front = nullptr;
    QLineSeries* m_limit = nullptr;
    QValueAxis* m_axisX = nullptr;
    QValueAxis* m_axisY = nullptr;
    std::vector<Point> m_feasiblePoints; ///< parallel to m_feasible's points
    std::vector<Point> m_infeasiblePoints;
    int m_selectedIndex = -1;
};

} // namespace shardscape::ui
