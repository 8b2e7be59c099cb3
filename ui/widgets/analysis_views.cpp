// SPDX-License-Identifier: MIT
#include "widgets/analysis_views.h"

#include "widgets/idle_steps.h"

#include <QGridLayout>
#include <QResizeEvent>
#include <QSplitter>
#include <QStackedWidget>
#include <QTabWidget>
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

/** Smallest size at which a chart stays readable (axis labels and legend unelided), pixels. */
constexpr int kChartWidth = 340;
constexpr int kChartHeight = 270;

} // namespace

AnalysisViews::AnalysisViews(QWidget* parent)
    : QWidget(parent)
    , m_splitter(new QSplitter(Qt::Vertical, this))
    , m_steps(new IdleSteps(this))
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
    m_charts.emplace_back(m_memory, tr("Memory"));
#endif
#ifdef SHARDSCAPE_PARETO_CHART
    m_pareto = new ParetoChart;
    m_charts.emplace_back(m_pareto, tr("Step Time vs Memory"));
    connect(m_pareto, &ParetoChart::candidateClicked, this, &AnalysisViews::candidateClicked);
#endif
#ifdef SHARDSCAPE_BUBBLE_CHART
    m_bubble = new BubbleChart;
    m_charts.emplace_back(m_bubble, tr("Bubbles"));
#endif
#ifdef SHARDSCAPE_BALANCE_CHART
    m_balance = new StageBalanceChart;
    m_charts.emplace_back(m_balance, tr("Stage Balance"));
#endif
    if (!m_charts.empty()) {
        // The area's own minimum, not its pages': it may get smaller than a grid of charts, then shows tabs.
        m_chartArea = new QStackedWidget(m_splitter);
        m_chartArea->setMinimumSize(kChartWidth, kChartHeight);
        m_chartArea->installEventFilter(this);
        m_chartGridPage = new QWidget;
        m_chartGrid = new QGridLayout(m_chartGridPage);
        m_chartGrid->setContentsMargins(0, 0, 0, 0);
        m_chartGrid->setSpacing(4);
        m_chartTabs = new QTabWidget;
        m_chartTabs->setDocumentMode(true);
        m_chartArea->addWidget(m_chartGridPage);
        m_chartArea->addWidget(m_chartTabs);
        m_splitter->addWidget(m_chartArea);
        arrangeCharts(QSize(2 * kChartWidth, 2 * kChartHeight));
    }
    if (m_timeline && m_chartArea) {
        // Proportions: the splitter scales them to the space it gets.
        m_splitter->setSizes({200, 640});
        m_splitter->setStretchFactor(0, 1);
        m_splitter->setStretchFactor(1, 2);
    }
}

bool AnalysisViews::isEmpty() const
{
    return !m_timeline && m_charts.empty();
}

void AnalysisViews::arrangeCharts(QSize area)
{
    const auto count = static_cast<int>(m_charts.size());
    const ChartLayout layout = area.width() >= count * kChartWidth             ? ChartLayout::Row
        : area.width() >= 2 * kChartWidth && area.height() >= 2 * kChartHeight ? ChartLayout::Grid
                                                                               : ChartLayout::Tabs;
    if (layout == m_layout)
        return;
    m_layout = layout;
    const int current = m_chartTabs->currentIndex();
    while (m_chartTabs->count() > 0)
        m_chartTabs->removeTab(0);
    for (int i = 0; i < 4; ++i) {
        m_chartGrid->setColumnStretch(i, 0);
        m_chartGrid->setRowStretch(i, 0);
    }
    if (layout == ChartLayout::Tabs) {
        for (const auto& [chart, title] : m_charts) {
            m_chartGrid->removeWidget(chart);
            m_chartTabs->addTab(chart, title);
        }
        m_chartTabs->setCurrentIndex(std::max(0, current));
        m_chartArea->setCurrentWidget(m_chartTabs);
        return;
    }
    const int columns = layout == ChartLayout::Row ? count : 2;
    for (int i = 0; i < count; ++i) {
        QWidget* chart = m_charts[static_cast<std::size_t>(i)].first;
        m_chartGrid->addWidget(chart, i / columns, i % columns);
        chart->show();
        m_chartGrid->setColumnStretch(i % columns, 1);
        m_chartGrid->setRowStretch(i / columns, 1);
    }
    m_chartArea->setCurrentWidget(m_chartGridPage);
}

bool AnalysisViews::eventFilter(QObject* watched, QEvent* event)
{
    if (watched == m_chartArea && event->type() == QEvent::Resize)
        arrangeCharts(static_cast<QResizeEvent*>(event)->size());
    return QWidget::eventFilter(watched, event);
}

void AnalysisViews::showEvaluation(std::shared_ptr<const Evaluation> evaluation, std::shared_ptr<const CostModel> model,
                                   std::vector<std::pair<int, double>> bubbleCurve, const QString& title)
{
    // One step per view, each in a quiet pass of the event loop; a view's step still queued from an older
    // evaluation is replaced.
    const quint64 generation = ++m_showGeneration;
#ifdef SHARDSCAPE_TIMELINE_VIEW
    m_steps->post(TimelineStep, [this, evaluation, title] { m_timeline->setTimeline(evaluation->simulation, title); });
#endif
#ifdef SHARDSCAPE_MEMORY_CHART
    m_steps->post(MemoryStep, [this, evaluation] { m_memory->setEvaluation(*evaluation); });
#endif
#ifdef SHARDSCAPE_BUBBLE_CHART
    m_steps->post(BubbleStep, [this, evaluation, curve = std::move(bubbleCurve)] {
        m_bubble->setCurve(curve, evaluation->config.num_microbatches);
    });
#endif
#ifdef SHARDSCAPE_BALANCE_CHART
    m_steps->post(BalanceStep, [this, evaluation, model] { m_balance->setEvaluation(*evaluation, model->layers()); });
#endif
    m_steps->postLast(AnnounceStep, [this, generation] {
        if (generation == m_showGeneration && generation != m_pendingGeneration)
            emit evaluationShown();
    });
    Q_UNUSED(evaluation)
    Q_UNUSED(model)
    Q_UNUSED(bubbleCurve)
    Q_UNUSED(title)
}

void AnalysisViews::showPending(const Evaluation& estimate, std::shared_ptr<const CostModel> model,
                                const QString& title)
{
    // The planner's estimate has no timeline and no bubble curve: the views show what it has at once, so that none
    // keeps the previous selection while the full simulation runs, and the timeline says it is coming.
    auto evaluation = std::make_shared<Evaluation>(estimate);
    evaluation->simulation.reset();
    showEvaluation(std::move(evaluation), std::move(model), {}, title);
    m_pendingGeneration = m_showGeneration; // its last step comes later, from the event loop
    // The timeline's title and its "simulating" state are cheap and say at once which candidate is coming.
    m_steps->runNow(TimelineStep);
}

void AnalysisViews::setCandidates(std::shared_ptr<const PlanResult> result, int selectedFeasible)
{
    m_selectedFeasible = selectedFeasible;
#ifdef SHARDSCAPE_PARETO_CHART
    m_steps->post(ParetoStep, [this, result = std::move(result)] {
        m_pareto->setCandidates(result->top, result->infeasible, m_selectedFeasible);
    });
#endif
    Q_UNUSED(result)
}

void AnalysisViews::setSelectedCandidate(int selectedFeasible)
{
    m_selectedFeasible = selectedFeasible;
#ifdef SHARDSCAPE_PARETO_CHART
    m_pareto->setSelectedIndex(selectedFeasible);
#endif
}

void AnalysisViews::clear()
{
    ++m_showGeneration;
    m_steps->clear();
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

QString AnalysisViews::timelineTitle() const
{
#ifdef SHARDSCAPE_TIMELINE_VIEW
    return m_timeline->title();
#else
    return {};
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
