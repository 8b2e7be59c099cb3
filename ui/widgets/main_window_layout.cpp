// SPDX-License-Identifier: MIT
// The main window's panels and docks: what goes where, and the narrow-screen arrangement.
#include "widgets/main_window.h"

#include "jobs/evaluate_job.h"
#include "models/format.h"
#include "widgets/analysis_views.h"
#include "widgets/candidates_panel.h"
#include "widgets/cluster_panel.h"
#include "widgets/compare_widget.h"
#include "widgets/model_panel.h"
#include "widgets/planner_panel.h"
#include "widgets/profile_panel.h"
#include "widgets/serving_view.h"
#include "widgets/what_if_panel.h"

#include <QDockWidget>
#include <QFontDatabase>
#include <QGroupBox>
#include <QLabel>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QSplitter>
#include <QStackedWidget>
#include <QStatusBar>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>

namespace shardscape::ui {

namespace {

QDockWidget* makeDock(const QString& title, const QString& name, QWidget* content, QWidget* parent)
{
    auto* dock = new QDockWidget(title, parent);
    dock->setObjectName(name);
    dock->setWidget(content);
    dock->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable
                      | QDockWidget::DockWidgetClosable);
    return dock;
}

/** Window width below which the docks share one side column, pixels. */
constexpr int kThreeColumnWidth = 1500;

QScrollArea* scrolled(QWidget* content)
{
    auto* area = new QScrollArea;
    area->setWidget(content);
    area->setWidgetResizable(true);
    area->setFrameShape(QFrame::NoFrame);
    area->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    return area;
}

} // namespace

void MainWindow::applyDefaultLayout()
{
    // The table shows about eight candidates; the timeline and the charts share the rest.
    resize(1600, 1000);
    m_centerSplitter->setSizes({235, 765});
    m_inputsSplitter->setSizes({360, 640});
}

void MainWindow::createPanels()
{
    m_modelPanel = new ModelPanel;
    m_clusterPanel = new ClusterPanel;
    m_plannerPanel = new PlannerPanel;
    m_candidates = new CandidatesPanel;
    m_views = new AnalysisViews;
    m_whatIf = new WhatIfPanel;
    m_compare = new CompareWidget;
    m_profilePanel = new ProfilePanel;
    m_log = new QPlainTextEdit;
    m_log->setReadOnly(true);
    m_log->setMaximumBlockCount(5000);
    m_log->setLineWrapMode(QPlainTextEdit::NoWrap);
    m_log->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    m_explanation = new QPlainTextEdit;
    m_explanation->setReadOnly(true);
    m_explanation->setPlaceholderText(tr("Why the best plan won appears here after planning."));

    m_centerSplitter = new QSplitter(Qt::Vertical);
    m_centerSplitter->setObjectName(QStringLiteral("centerSplitter"));
    m_centerSplitter->setChildrenCollapsible(false);
    m_centerSplitter->addWidget(m_candidates);
    if (m_views->isEmpty()) {
        m_views->hide();
    } else {
        m_centerSplitter->addWidget(m_views);
        m_centerSplitter->setStretchFactor(0, 2);
        m_centerSplitter->setStretchFactor(1, 5);
    }
    m_servingView = new ServingView;
    m_servingView->setObjectName(QStringLiteral("servingView"));
    m_centerStack = new QStackedWidget;
    m_centerStack->addWidget(m_centerSplitter);
    m_centerStack->addWidget(m_servingView);
    setCentralWidget(m_centerStack);
    connect(m_plannerPanel, &PlannerPanel::modeChanged, this, [this](bool inference) {
        showMode(inference);
        statusBar()->showMessage(inference ? tr("Inference mode: press Plan (Ctrl+R) to size a serving deployment")
                                           : tr("Training mode: press Plan (Ctrl+R)"),
                                 5000);
    });

    connect(m_modelPanel, &ModelPanel::modelSpecChanged, this, [this] {
        m_profilePanel->setModelSpec(m_modelPanel->modelSpec());
        loadModelOverview();
        statusBar()->showMessage(tr("Model changed: press Plan (Ctrl+R)"), 5000);
    });
    connect(m_modelPanel, &ModelPanel::openRequested, this, [this] { m_openAction->trigger(); });
    auto* seqLenDelay = new QTimer(this);
    seqLenDelay->setSingleShot(true);
    seqLenDelay->setInterval(300);
    connect(seqLenDelay, &QTimer::timeout, this, &MainWindow::loadModelOverview);
    connect(m_plannerPanel, &PlannerPanel::seqLenChanged, seqLenDelay, qOverload<>(&QTimer::start));
    connect(m_candidates, &CandidatesPanel::currentCandidateChanged, this, &MainWindow::onCandidateChanged);
    connect(m_candidates, &CandidatesPanel::pinRequested, this, &MainWindow::pinCandidate);
    // The Pareto chart indexes the feasible candidates, which are the table's first rows.
    connect(m_views, &AnalysisViews::candidateClicked, m_candidates, &CandidatesPanel::selectCandidate);
    connect(m_views, &AnalysisViews::evaluationShown, this, &MainWindow::emitShown);
    connect(m_whatIf, &WhatIfPanel::configEdited, this, &MainWindow::onWhatIfEdited);
    // Nothing was simulated for an edit past the cluster: the views go back to the plan rather than keep showing
    // the previous what-if.
    connect(m_whatIf, &WhatIfPanel::outsideCluster, this, [this] {
        m_evaluateJob->discard();
        if (m_selected && m_result) {
            m_shown = m_selected;
            m_shownPurpose = EvaluationPurpose::Selection;
            m_views->showEvaluation(m_selected, m_result->model, m_selectedBubbleCurve, candidateTitle(m_selectedRow));
        }
    });
    connect(m_whatIf, &WhatIfPanel::resetRequested, this, [this] { onCandidateChanged(m_selectedRow); });
    connect(m_whatIf, &WhatIfPanel::pinRequested, this, [this] {
        if (m_whatIf->result())
            m_compare->pin(*m_whatIf->result(),
                           tr("what-if %1").arg(format::text(m_whatIf->result()->config.describe())));
    });
}

void MainWindow::createDocks()
{
    // Inputs: the model with its layer tree above, cluster and planner options below.
    auto* modelBox = new QGroupBox(tr("Model"));
    auto* modelLayout = new QVBoxLayout(modelBox);
    modelLayout->addWidget(m_modelPanel);
    auto* clusterBox = new QGroupBox(tr("Cluster"));
    auto* clusterLayout = new QVBoxLayout(clusterBox);
    clusterLayout->addWidget(m_clusterPanel);
    auto* plannerBox = new QGroupBox(tr("Planner"));
    auto* plannerLayout = new QVBoxLayout(plannerBox);
    plannerLayout->addWidget(m_plannerPanel);
    m_planButton = new QPushButton(tr("&Plan"));
    m_planButton->setToolTip(tr("Search the best parallel plans for these inputs (Ctrl+R)"));
    m_planButton->setDefault(true);
    auto* options = new QWidget;
    auto* optionsLayout = new QVBoxLayout(options);
    optionsLayout->setContentsMargins(0, 0, 0, 0);
    optionsLayout->addWidget(clusterBox);
    optionsLayout->addWidget(plannerBox);
    optionsLayout->addStretch(1);
    auto* optionsColumn = new QWidget;
    auto* columnLayout = new QVBoxLayout(optionsColumn);
    columnLayout->setContentsMargins(0, 0, 0, 0);
    columnLayout->addWidget(scrolled(options), 1);
    columnLayout->addWidget(m_planButton);

    m_inputsSplitter = new QSplitter(Qt::Vertical);
    m_inputsSplitter->setObjectName(QStringLiteral("inputsSplitter"));
    m_inputsSplitter->setChildrenCollapsible(false);
    m_inputsSplitter->addWidget(modelBox);
    m_inputsSplitter->addWidget(optionsColumn);
    m_inputsSplitter->setStretchFactor(0, 3);
    m_inputsSplitter->setStretchFactor(1, 4);
    auto* inputs = makeDock(tr("Inputs"), QStringLiteral("inputsDock"), m_inputsSplitter, this);
    addDockWidget(Qt::LeftDockWidgetArea, inputs);

    auto* whatIf = makeDock(tr("What-if"), QStringLiteral("whatIfDock"), scrolled(m_whatIf), this);
    auto* compare = makeDock(tr("Compare"), QStringLiteral("compareDock"), m_compare, this);
    auto* profile = makeDock(tr("Profile"), QStringLiteral("profileDock"), m_profilePanel, this);
    // Short titles: on narrow screens all docks share one column of tabs.
    auto* why = makeDock(tr("Why"), QStringLiteral("explanationDock"), m_explanation, this);
    auto* log = makeDock(tr("Log"), QStringLiteral("logDock"), m_log, this);
    addDockWidget(Qt::RightDockWidgetArea, whatIf);
    tabifyDockWidget(whatIf, compare);
    tabifyDockWidget(compare, profile);
    addDockWidget(Qt::RightDockWidgetArea, why);
    tabifyDockWidget(why, log);
    whatIf->raise();
    why->raise();
    resizeDocks({inputs, whatIf}, {410, 360}, Qt::Horizontal);
    resizeDocks({whatIf, why}, {470, 400}, Qt::Vertical);

    // The status bar: what the planner does now, how far it is, and a way to stop it.
    m_phase = new QLabel;
    m_progress = new QProgressBar;
    m_progress->setRange(0, 1000);
    m_progress->setMaximumWidth(260);
    m_progress->setTextVisible(true);
    m_cancelButton = new QToolButton;
    m_cancelButton->setText(tr("Cancel"));
    m_cancelButton->setToolTip(tr("Stop planning (Esc)"));
    statusBar()->addPermanentWidget(m_phase);
    statusBar()->addPermanentWidget(m_progress);
    statusBar()->addPermanentWidget(m_cancelButton);
}

void MainWindow::showEvent(QShowEvent* event)
{
    QMainWindow::showEvent(event);
    if (!m_defaultDocks)
        return;
    m_defaultDocks = false;
    // Narrow screens: one side column (inputs, what-if, comparison, explanation and log as tabs) so that the table
    // and the charts keep a readable width.
    if (width() < kThreeColumnWidth) {
        auto* inputs = findChild<QDockWidget*>(QStringLiteral("inputsDock"));
        for (const char* name : {"whatIfDock", "compareDock", "profileDock", "explanationDock", "logDock"})
            if (auto* dock = findChild<QDockWidget*>(QLatin1String(name)))
                tabifyDockWidget(inputs, dock);
        inputs->raise();
        resizeDocks({inputs}, {360}, Qt::Horizontal);
    }
}

} // namespace shardscape::ui
