// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/search/planner.h"

#include <QWidget>

#include <functional>
#include <memory>
#include <utility>
#include <vector>

class QGridLayout;
class QSplitter;
class QStackedWidget;
class QTabWidget;

namespace shardscape::ui {

class IdleSteps;
class TimelineView;
class MemoryChart;
class ParetoChart;
class BubbleChart;
class StageBalanceChart;

/**
 * The views one evaluated configuration drives: the pipeline timeline on top, the memory, Pareto, bubble and
 * stage-balance charts below: four in a row when wide, two by two when there is room, else as tabs (so that a
 * small window never squeezes a chart below its readable size). Each view is built only when its code is part of
 * the build (ui/timeline, ui/charts), so no placeholder ever shows.
 */
class AnalysisViews : public QWidget
{
    Q_OBJECT
public:
    explicit AnalysisViews(QWidget* parent = nullptr);

    /** True when neither the timeline nor any chart is built in. */
    bool isEmpty() const;

    /**
     * Shows one configuration: timeline (when simulated), memory, stage balance and the bubble curve. The views are
     * updated one per quiet event-loop pass (IdleSteps), so that no pass stalls the GUI for long; evaluationShown()
     * follows the last one. A newer call replaces what is left of an older one.
     */
    void showEvaluation(std::shared_ptr<const Evaluation> evaluation, std::shared_ptr<const CostModel> model,
                        std::vector<std::pair<int, double>> bubbleCurve, const QString& title);
    /** Every candidate of a plan on the Pareto chart; `selectedFeasible` indexes result.top (-1: none). Plotted in a
        quiet pass of its own, so that the plan's arrival stays one short event. */
    void setCandidates(std::shared_ptr<const PlanResult> result, int selectedFeasible);
    /** Marks another candidate (index into the plan's top; -1: none) without rebuilding the Pareto chart. */
    void setSelectedCandidate(int selectedFeasible);
    /** The planner's estimate of a candidate whose full simulation is still running: every view leaves the
        previous selection at once (the timeline says the simulation is coming); evaluationShown is not emitted. */
    void showPending(const Evaluation& estimate, std::shared_ptr<const CostModel> model, const QString& title);
    void clear();

    /** Events the timeline displays; -1 when the timeline is not built in. */
    int timelineEventCount() const;
    /** The timeline's title: the candidate it shows or is simulating (empty without the timeline view). */
    QString timelineTitle() const;

    /** A view that can be written to PNG or SVG (by the file name's extension). */
    struct ImageView
    {
        QString name; ///< "Timeline", "Memory chart", ...
        QString fileStem; ///< "timeline", "memory", ...
        std::function<bool(const QString& path)> exportImage;
    };
    std::vector<ImageView> imageViews() const;

    /** How the charts are arranged now. */
    enum class ChartLayout
    {
        None,
        Row, ///< four in a row
        Grid, ///< two by two
        Tabs ///< one at a time
    };
    ChartLayout chartLayout() const { return m_layout; }

    QByteArray saveState() const;
    void restoreState(const QByteArray& state);

signals:
    /** Every view shows the evaluation passed to the latest showEvaluation(). */
    void evaluationShown();
    /** The user clicked a feasible candidate on the Pareto chart (index into the plan's top). */
    void candidateClicked(int feasibleIndex);

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    void arrangeCharts(QSize area);
    enum StepKey
    {
        TimelineStep,
        MemoryStep,
        BubbleStep,
        BalanceStep,
        AnnounceStep,
        ParetoStep
    };

    QSplitter* m_splitter;
    QStackedWidget* m_chartArea = nullptr;
    QWidget* m_chartGridPage = nullptr;
    QGridLayout* m_chartGrid = nullptr;
    QTabWidget* m_chartTabs = nullptr;
    std::vector<std::pair<QWidget*, QString>> m_charts; ///< with their tab titles
    ChartLayout m_layout = ChartLayout::None;
    quint64 m_showGeneration = 0;
    IdleSteps* m_steps;
    int m_selectedFeasible = -1;
    quint64 m_pendingGeneration = 0; ///< the generation showPending started: it announces nothing
    TimelineView* m_timeline = nullptr;
    MemoryChart* m_memory = nullptr;
    ParetoChart* m_pareto = nullptr;
    BubbleChart* m_bubble = nullptr;
    StageBalanceChart* m_balance = nullptr;
};

} // namespace shardscape::ui
