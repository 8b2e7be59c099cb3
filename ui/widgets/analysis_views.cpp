// SPDX-License-Identifier: MIT
#include "widgets/analysis_views.h"

#include <QGridLayout>
#include <QResizeEvent>
#include <QSplitter>
#include <QVBoxLayout>

// The views are written separately (ui/timeline, ui/charts); each one is used when it is part of the build.
#if defined(SHARDSCAPE_HAVE_TIMELINE) && __has_include("timeline/timeline_view.h")
#include "timeline/timeline_view.h"
#define SHARDSCAPE_TIMELINE_VIEW 1
#endif
#if defined(SHARDSCAPE_HAVE_CHARTS) && __has_include("charts/memory_chart.h")
#include "charts/memory_chart.h"
#define SHARDSCAPE_MEMORY_CHART 1
#endif
#if defined(SHARDSCAPE_HAVE_CHARTS) && __has_include("charts/pareto_chart.h")
#include "charts/pareto_chart.h"
#define SHARDSCAPE_PARETO_CHART 1
#endif
#if defined(SHARDSCAPE_HAVE_CHARTS) && __has_include("charts/bubble_chart.h")
#include "charts/bubble_chart.h"
#define SHARDSCAPE_BUBBLE_CHART 1
#endif
#if defined(SHARDSCAPE_HAVE_CHARTS) && __has_include("charts/stage_balance_chart.h")
#include "charts/stage_balance_chart.h"
#define SHARDSCAPE_BALANCE_CHART 1
#endif

namespace shardscape::ui {

namespace {

/** Wide enough for four charts side by side, pixels. */
constexpr int kFourColumnWidth = 1300;

} // namespace

AnalysisViews::AnalysisViews(QWidget* parent)
    : QWidget(parent)
    , m_splitter(new QSplitter(Qt::Vertical, this))
{
    m_splitter->setChildrenCollapsible(false);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_splitter);

#ifdef SHARDSCAPE_TIMELINE_VIEW
    m_timeline = new TimelineView(m_splitter);
    m_timeline->setObjectName(QStringLiteral("timeline"));
    m_splitter->addWidget(m_timeline);
#endif
#ifdef SHARDSCAPE_MEMORY_CHART
    m_memory = new MemoryChart;
    m_charts.push_back(m_memory);
#endif
#ifdef SHARDSCAPE_PARETO_CHART
    m_pareto = new ParetoChart;
    m_charts.push_back(m_pareto);
#endif
#ifdef SHARDSCAPE_BUBBLE_CHART
    m_bubble = new BubbleChart;
    m_charts.push_back(m_bubble);
#endif
#ifdef SHARDSCAPE_BALANCE_CHART
    m_balance = new StageBalanceChart;
    m_charts.push_back(m_balance);
#endif
    if (!m_charts.empty()) {
        m_chartArea = new QWidget(m_splitter);
        m_chartGrid = new QGridLayout(m_chartArea);
        m_chartGrid->setContentsMargins(0, 0, 0, 0);
        m_chartGrid->setSpacing(4);
        for (QWidget* chart : m_charts)
            chart->setParent(m_chartArea);
        m_splitter->addWidget(m_chartArea);
        layoutCharts(2);
    }
    if (m_timeline && m_chartArea) {
        m_splitter->setStretchFactor(0, 4);
        m_splitter->setStretchFactor(1, 5);
    }
}

bool AnalysisViews::isEmpty() const
{
    return !m_timeline && m_charts.empty();
}

void AnalysisViews::layoutCharts(int columns)
{
    if (!m_chartGrid || columns == m_columns)
        return;
    m_columns = columns;
    for (QWidget* chart : m_charts)
        m_chartGrid->removeWidget(chart);
    for (int i = 0; i < 4; ++i) {
        m_chartGrid->setColumnStretch(i, 0);
        m_chartGrid->setRowStretch(i, 0);
    }
    for (std::size_t i = 0; i < m_charts.size(); ++i) {
        const int index = static_cast<int>(i);
        m_chartGrid->addWidget(m_charts[i], index / columns, index % columns);
        m_chartGrid->setColumnStretch(index % columns, 1);
        m_chartGrid->setRowStretch(index / columns, 1);
    }
}

void AnalysisViews::resizeEvent(QResizeEvent* event)
{
    QWidget::resizeEvent(event);
    layoutCharts(event->size().width() >= kFourColumnWidth ? 4 : 2);
}

void AnalysisViews::showEvaluation(const Evaluation& evaluation, const std::vector<Layer>& layers,
                                   const std::vector<std::pair<int, double>>& bubbleCurve, const QString& title)
{
#ifdef SHARDSCAPE_TIMELINE_VIEW
    m_timeline->setTimeline(evaluation.simulation, title);
#endif
#ifdef SHARDSCAPE_MEMORY_CHART
    m_memory->setEvaluation(evaluation);
#endif
#ifdef SHARDSCAPE_BUBBLE_CHART
    m_bubble->setCurve(bubbleCurve, evaluation.config.num_microbatches);
#endif
#ifdef SHARDSCAPE_BALANCE_CHART
    m_balance->setEvaluation(evaluation, layers);
#endif
    Q_UNUSED(evaluation)
    Q_UNUSED(layers)
    Q_UNUSED(bubbleCurve)
    Q_UNUSED(title)
}

void AnalysisViews::setCandidates(const PlanResult& result, int selectedFeasible)
{
#ifdef SHARDSCAPE_PARETO_CHART
    m_pareto->setCandidates(result.top, result.infeasible, selectedFeasible);
#endif
    Q_UNUSED(result)
    Q_UNUSED(selectedFeasible)
}

void AnalysisViews::clear()
{
#ifdef SHARDSCAPE_TIMELINE_VIEW
    m_timeline->clear();
#endif
#ifdef SHARDSCAPE_MEMORY_CHART
    m_memory->clear();
#endif
#ifdef SHARDSCAPE_PARETO_CHART
    m_pareto->clear();
#endif
#ifdef SHARDSCAPE_BUBBLE_CHART
    m_bubble->clear();
#endif
#ifdef SHARDSCAPE_BALANCE_CHART
    m_balance->clear();
#endif
}

int AnalysisViews::timelineEventCount() const
{
#ifdef SHARDSCAPE_TIMELINE_VIEW
    return m_timeline->eventCount();
#else
    return -1;
#endif
}

std::vector<AnalysisViews::ImageView> AnalysisViews::imageViews() const
{
    std::vector<ImageView> out;
#ifdef SHARDSCAPE_TIMELINE_VIEW
    out.push_back({tr("Timeline"), QStringLiteral("timeline"),
                   [view = m_timeline](const QString& path) { return view->exportImage(path); }});
#endif
#ifdef SHARDSCAPE_MEMORY_CHART
    out.push_back({tr("Memory Chart"), QStringLiteral("memory"),
                   [view = m_memory](const QString& path) { return view->exportImage(path); }});
#endif
#ifdef SHARDSCAPE_PARETO_CHART
    out.push_back({tr("Pareto Chart"), QStringLiteral("pareto"),
                   [view = m_pareto](const QString& path) { return view->exportImage(path); }});
#endif
#ifdef SHARDSCAPE_BUBBLE_CHART
    out.push_back({tr("Bubble Chart"), QStringLiteral("bubble"),
                   [view = m_bubble](const QString& path) { return view->exportImage(path); }});
#endif
#ifdef SHARDSCAPE_BALANCE_CHART
    out.push_back({tr("Stage Balance Chart"), QStringLiteral("stage-balance"),
                   [view = m_balance](const QString& path) { return view->exportImage(path); }});
#endif
    return out;
}

QByteArray AnalysisViews::saveState() const
{
    return m_splitter->saveState();
}

void AnalysisViews::restoreState(const QByteArray& state)
{
    m_splitter->restoreState(state);
}

} // namespace shardscape::ui
