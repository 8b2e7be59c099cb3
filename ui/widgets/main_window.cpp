// SPDX-License-Identifier: MIT
#include "widgets/main_window.h"

#include "jobs/evaluate_job.h"
#include "jobs/model_job.h"
#include "jobs/plan_job.h"
#include "jobs/serving_job.h"
#include "models/candidates_model.h"
#include "models/format.h"
#include "models/layers_model.h"
#include "widgets/analysis_views.h"
#include "widgets/candidates_panel.h"
#include "widgets/cluster_panel.h"
#include "widgets/compare_widget.h"
#include "widgets/error_box.h"
#include "widgets/exports.h"
#include "widgets/model_panel.h"
#include "widgets/planner_panel.h"
#include "widgets/profile_panel.h"
#include "widgets/recent_files.h"
#include "widgets/serving_view.h"
#include "widgets/what_if_panel.h"

#include "shardscape/support/error.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDir>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QFontDatabase>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QSettings>
#include <QSplitter>
#include <QStackedWidget>
#include <QStatusBar>
#include <QTimer>
#include <QToolBar>
#include <QToolButton>
#include <QVBoxLayout>

namespace shardscape::ui {

namespace {

bool isModelFile(const QString& path)
{
    const QString suffix = QFileInfo(path).suffix().toLower();
    return suffix == QLatin1String("json") || suffix == QLatin1String("onnx");
}

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

MainWindow::MainWindow(const MainWindowOptions& options, QWidget* parent)
    : QMainWindow(parent)
    , m_options(options)
    , m_planJob(new PlanJob(this))
    , m_servingJob(new ServingJob(this))
    , m_evaluateJob(new EvaluateJob(this))
    , m_modelJob(new ModelJob(this))
{
    setWindowTitle(tr("Shardscape"));
    setAcceptDrops(true);
    setDockOptions(QMainWindow::AnimatedDocks | QMainWindow::AllowTabbedDocks);
    createPanels();
    createDocks();
    createActions();
    connectJobs();
    setPlanning(false);

    applyDefaultLayout();
    if (m_options.use_settings)
        restoreSettings();
    if (!m_options.model.isEmpty())
        m_modelPanel->setModelSpec(m_options.model);
    if (!m_options.cluster.isEmpty())
        m_clusterPanel->setClusterSpec(m_options.cluster);
    if (m_options.nodes > 0)
        m_clusterPanel->setNodes(m_options.nodes);
    if (m_options.gpus_per_node > 0)
        m_clusterPanel->setGpusPerNode(m_options.gpus_per_node);
    if (m_options.inference)
        m_plannerPanel->setInference(true);
    showMode(m_plannerPanel->isInference());
    if (!m_options.profile_dir.isEmpty()) {
        m_profilePanel->setProfileDir(m_options.profile_dir);
        findChild<QDockWidget*>(QStringLiteral("profileDock"))->raise();
    }

    // From here on a job saves the session as it starts; during the restore above a half-restored one would be.
    m_sessionReady = true;
    loadModelOverview();
    updateProfileCluster();
    connect(m_clusterPanel, &ClusterPanel::changed, this, &MainWindow::updateProfileCluster);
    // Another profile, new measurements or the switch: the candidates must be re-costed.
    connect(m_profilePanel, &ProfilePanel::profileChanged, this, [this] {
        statusBar()->showMessage(tr("Profile changed: planning again"), 5000);
        plan();
    });
    connect(m_profilePanel, &ProfilePanel::problemReported, this, [this](const QString&, const QString& message) {
        m_lastError = message;
        emit errorShown(message);
    });
    if (m_options.plan_on_start)
        plan();
}

MainWindow::~MainWindow() = default;

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

void MainWindow::createActions()
{
    QMenu* file = menuBar()->addMenu(tr("&File"));
    m_openAction = file->addAction(QIcon::fromTheme(QStringLiteral("document-open")), tr("&Open Model…"));
    m_openAction->setShortcut(QKeySequence::Open);
    m_openAction->setToolTip(tr("Open an HF config.json, a native graph .json or an .onnx file (Ctrl+O)"));
    connect(m_openAction, &QAction::triggered, this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Open Model"), m_lastDir,
                                                          tr("Models (*.json *.onnx);;All files (*)"));
        if (!path.isEmpty())
            openModelFile(path);
    });
    QMenu* recentMenu = file->addMenu(tr("Open &Recent"));
    m_recent = new RecentFiles(recentMenu, this);
    connect(m_recent, &RecentFiles::fileChosen, this, &MainWindow::openModelFile);
    file->addSeparator();

    QMenu* exportMenu = file->addMenu(tr("&Export"));
    m_exportPlanAction = exportMenu->addAction(tr("&Plan File (JSON)…"));
    m_exportPlanAction->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_E));
    connect(m_exportPlanAction, &QAction::triggered, this, [this] {
        exportWithDialog(tr("Export Plan"), tr("Plan files (*.json)"), QStringLiteral("plan.json"),
                         [this](const QString& path) { return exportPlan(path); });
    });
    m_exportResultAction = exportMenu->addAction(tr("&Result (JSON, every candidate)…"));
    m_exportResultAction->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_E));
    connect(m_exportResultAction, &QAction::triggered, this, [this] {
        exportWithDialog(tr("Export Result"), tr("JSON files (*.json)"), QStringLiteral("result.json"),
                         [this](const QString& path) { return exportResult(path); });
    });
    m_exportTraceAction = exportMenu->addAction(tr("&Chrome Trace (Perfetto)…"));
    connect(m_exportTraceAction, &QAction::triggered, this, [this] {
        exportWithDialog(tr("Export Chrome Trace"), tr("Trace files (*.json)"), QStringLiteral("trace.json"),
                         [this](const QString& path) { return exportChromeTrace(path); });
    });
    // The core's exporters for the selected plan; the plan file and the shown timeline are above.
    exportMenu->addSeparator();
    for (const ExportTarget target : exportTargets()) {
        if (target == ExportTarget::Json || target == ExportTarget::ChromeTrace)
            continue;
        const QString name = format::text(exportTargetName(target));
        // The names the exports' companions expect (the torchrun launcher runs the torchtitan config next to it).
        const QString fileName = QString::fromStdString(exportDefaultFileName(target));
        const QString suffix = QLatin1Char('.') + QFileInfo(fileName).suffix();
        QString title;
        switch (target) {
        case ExportTarget::Torchtitan:
            title = tr("&torchtitan Config (main, Python)…");
            break;
        case ExportTarget::Megatron:
            title = tr("&Megatron-LM Launch Script…");
            break;
        case ExportTarget::DeepSpeed:
            title = tr("&DeepSpeed Config (JSON)…");
            break;
        case ExportTarget::Torchrun:
            title = tr("torch&run Launcher…");
            break;
        case ExportTarget::Dump:
            title = tr("Selected-Config D&ump…");
            break;
        case ExportTarget::Json:
        case ExportTarget::ChromeTrace:
            break;
        }
        if (title.isEmpty())
            title = name + QStringLiteral("…");
        connect(exportMenu->addAction(title), &QAction::triggered, this, [this, target, name, suffix, fileName] {
            exportWithDialog(tr("Export for %1").arg(name), tr("%1 files (*%2)").arg(name, suffix), fileName,
                             [this, target](const QString& path) { return exportForTarget(target, path); });
        });
        if (target == ExportTarget::Torchtitan) // the v0.2.x releases read TOML job files
            connect(exportMenu->addAction(tr("torchtitan &v0.2 Job (TOML)…")), &QAction::triggered, this, [this] {
                exportWithDialog(
                    tr("Export for torchtitan v0.2"), tr("torchtitan job files (*.toml)"),
                    QString::fromStdString(exportDefaultFileName(ExportTarget::Torchtitan, "v0.2")),
                    [this](const QString& path) { return exportForTarget(ExportTarget::Torchtitan, path, "v0.2"); });
            });
    }
    exportMenu->addSeparator();
    for (const ServingExportTarget target : {ServingExportTarget::Vllm, ServingExportTarget::Sglang}) {
        const QString name = format::text(servingExportTargetName(target));
        const QString title
            = target == ServingExportTarget::Vllm ? tr("&vLLM Serve Command…") : tr("&SGLang Launch Command…");
        connect(exportMenu->addAction(title), &QAction::triggered, this, [this, target, name] {
            exportWithDialog(tr("Export for %1").arg(name), tr("Shell scripts (*.sh)"), name + QStringLiteral(".sh"),
                             [this, target](const QString& path) { return exportServing(target, path); });
        });
    }
    const auto views = m_views->imageViews();
    if (!views.empty()) {
        m_exportImageMenu = exportMenu->addMenu(tr("&Image"));
        for (const auto& view : views) {
            connect(m_exportImageMenu->addAction(view.name + QStringLiteral("…")), &QAction::triggered, this,
                    [this, view] {
                        exportWithDialog(tr("Export %1").arg(view.name), tr("PNG image (*.png);;SVG image (*.svg)"),
                                         view.fileStem + QStringLiteral(".png"), [this, view](const QString& path) {
                                             if (view.exportImage(path))
                                                 return true;
                                             reportError(
                                                 tr("Export Failed"),
                                                 tr("cannot write %1 (choose a folder you can write to)").arg(path));
                                             return false;
                                         });
                    });
        }
    }
    file->addSeparator();
    QAction* quit = file->addAction(tr("&Quit"), this, &QWidget::close);
    quit->setShortcut(QKeySequence::Quit);

    QMenu* planMenu = menuBar()->addMenu(tr("&Plan"));
    m_planAction = planMenu->addAction(QIcon::fromTheme(QStringLiteral("media-playback-start")), tr("&Plan"));
    m_planAction->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_R));
    m_planAction->setToolTip(tr("Search the best parallel plans (Ctrl+R)"));
    connect(m_planAction, &QAction::triggered, this, &MainWindow::plan);
    connect(m_planButton, &QPushButton::clicked, this, &MainWindow::plan);
    m_cancelAction = planMenu->addAction(QIcon::fromTheme(QStringLiteral("process-stop")), tr("&Cancel"));
    m_cancelAction->setShortcut(QKeySequence(Qt::Key_Escape));
    m_cancelAction->setToolTip(tr("Stop planning (Esc)"));
    connect(m_cancelAction, &QAction::triggered, this, &MainWindow::cancelPlan);
    connect(m_cancelButton, &QToolButton::clicked, this, &MainWindow::cancelPlan);
    planMenu->addSeparator();
    m_pinAction = planMenu->addAction(tr("P&in Selected Candidate"));
    m_pinAction->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_P));
    connect(m_pinAction, &QAction::triggered, this, [this] { pinCandidate(m_candidates->currentCandidate()); });
    QAction* filter = planMenu->addAction(tr("&Filter Candidates"));
    filter->setShortcut(QKeySequence::Find);
    connect(filter, &QAction::triggered, m_candidates, &CandidatesPanel::focusFilter);

    QMenu* view = menuBar()->addMenu(tr("&View"));
    for (auto* dock : findChildren<QDockWidget*>())
        view->addAction(dock->toggleViewAction());

    QMenu* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("&About Shardscape"), this, [this] {
        QMessageBox::about(this, tr("About Shardscape"),
                           tr("<b>Shardscape %1</b><p>Plans how to parallelize the training of a large model across "
                              "GPUs, predicts step time, MFU, bubbles and memory with an event simulator, and "
                              "exports the plan.</p><p>Shortcuts: Ctrl+R plan, Esc cancel, Ctrl+O open a model, "
                              "Ctrl+E export the plan, Ctrl+P pin for comparison, Ctrl+F filter.</p>")
                               .arg(QStringLiteral(SHARDSCAPE_VERSION)));
    });

    QToolBar* tools = addToolBar(tr("Main"));
    tools->setObjectName(QStringLiteral("mainToolBar"));
    tools->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    tools->addAction(m_openAction);
    tools->addAction(m_planAction);
    tools->addAction(m_cancelAction);
    tools->addSeparator();
    tools->addAction(m_pinAction);
    tools->addAction(m_exportPlanAction);
}

void MainWindow::connectJobs()
{
    // The training and the serving planner report alike; only their answers differ.
    const auto connectPlanner = [this](auto* job) {
        using Job = std::remove_pointer_t<decltype(job)>;
        connect(job, &Job::started, this, [this] {
            setPlanning(true);
            m_log->appendPlainText(QStringLiteral("──"));
        });
        connect(job, &Job::progressChanged, this, [this](const QString& phase, quint64 done, quint64 total) {
            m_phase->setText(phase);
            m_progress->setValue(total > 0 ? static_cast<int>(done * 1000 / total) : 0);
            m_progress->setFormat(total > 1 ? QStringLiteral("%1 / %2").arg(done).arg(total) : QStringLiteral("%p%"));
        });
        connect(job, &Job::logLine, m_log, &QPlainTextEdit::appendPlainText);
        connect(job, &Job::failed, this, [this](const QString& message) {
            setPlanning(false);
            m_log->appendPlainText(tr("planning failed: %1").arg(message));
            reportError(tr("Planning Failed"), message);
        });
        connect(job, &Job::cancelled, this, [this] {
            setPlanning(false);
            m_log->appendPlainText(tr("planning cancelled"));
            statusBar()->showMessage(tr("Planning cancelled"), 5000);
        });
    };
    connectPlanner(m_planJob);
    connectPlanner(m_servingJob);
    connect(m_planJob, &PlanJob::planAvailable, this, &MainWindow::onPlanAvailable);
    connect(m_servingJob, &ServingJob::servingAvailable, this, &MainWindow::onServingAvailable);

    connect(m_evaluateJob, &EvaluateJob::evaluationAvailable, this, &MainWindow::onEvaluationAvailable);
    connect(m_evaluateJob, &EvaluateJob::failed, this, [this](const QString& message) {
        m_whatIf->showProblem(message);
        m_log->appendPlainText(tr("evaluation failed: %1").arg(message));
        emit errorShown(message);
    });

    connect(m_modelJob, &ModelJob::modelAvailable, this, [this](std::shared_ptr<const ModelOverview> overview) {
        const QString spec = QString::fromStdString(overview->spec);
        if (spec == m_pendingRecent)
            m_recent->add(spec);
        saveSession(); // the model that loaded and Open Recent, before anything else runs
        m_pendingRecent.clear();
        m_overview = overview;
        m_modelPanel->setOverview(std::move(overview));
    });
    connect(m_modelJob, &ModelJob::failed, this, [this](const QString& spec, const QString& message) {
        // A model that does not load stays out of Open Recent and the model list; the last one that loaded is shown
        // again, with the error beside it and in the box.
        m_pendingRecent.clear();
        if (m_overview && QString::fromStdString(m_overview->spec) != spec) {
            m_modelPanel->forgetModelSpec(spec, QString::fromStdString(m_overview->spec));
            m_modelPanel->setOverview(m_overview);
        }
        m_modelPanel->setLoadError(message);
        reportError(tr("Cannot Load the Model"), message);
    });
}

PlanRequest MainWindow::currentRequest() const
{
    PlanRequest request;
    request.model_spec = m_modelPanel->modelSpec().toStdString();
    m_clusterPanel->applyTo(request);
    m_plannerPanel->applyTo(request);
    m_profilePanel->applyTo(request);
    // Ticks name layers of the model in the tree; while another model is still loading they mean nothing.
    const LayersModel* layers = m_modelPanel->layersModel();
    if (layers->overview() && layers->overview()->spec == request.model_spec) {
        request.config.pipeline_pivots = layers->pivots();
        if (m_plannerPanel->recompute() == PlannerPanel::Recompute::SearchOrTicked)
            request.config.recompute_modules = layers->recomputeModules();
    }
    return request;
}

void MainWindow::plan()
{
    const PlanRequest request = currentRequest();
    saveSession();
    // One planner at a time: the latest request, of either mode, wins.
    if (request.config.is_train) {
        m_servingJob->cancel();
        m_planJob->start(request);
    } else {
        m_planJob->cancel();
        m_servingJob->start(request);
    }
}

void MainWindow::cancelPlan()
{
    if (!m_planJob->isRunning() && !m_servingJob->isRunning())
        return;
    m_phase->setText(tr("cancelling…"));
    m_planJob->cancel();
    m_servingJob->cancel();
}

void MainWindow::setPlanning(bool planning)
{
    m_cancelAction->setEnabled(planning);
    m_cancelButton->setEnabled(planning);
    m_progress->setVisible(planning);
    m_cancelButton->setVisible(planning);
    if (!planning) {
        m_phase->clear();
        m_progress->setValue(0);
    } else {
        m_phase->setText(tr("starting"));
    }
}

void MainWindow::reportError(const QString& title, const QString& message)
{
    m_lastError = message;
    statusBar()->showMessage(message, 10000);
    showError(this, title, message);
    emit errorShown(message);
}

void MainWindow::loadModelOverview()
{
    saveSession();
    m_modelJob->start(m_modelPanel->modelSpec().toStdString(), m_plannerPanel->seqLen());
}

void MainWindow::updateProfileCluster()
{
    PlanRequest request;
    m_clusterPanel->applyTo(request);
    m_profilePanel->setCluster(QString::fromStdString(request.cluster_spec), request.nodes, request.gpus_per_node);
    m_profilePanel->setModelSpec(m_modelPanel->modelSpec());
}

QStringList MainWindow::recentFiles() const
{
    return m_recent->files();
}

void MainWindow::openModelFile(const QString& path)
{
    const QFileInfo info(path);
    if (!info.isFile()) {
        reportError(tr("Cannot Open the Model"),
                    tr("%1 does not exist or is not a file (choose an HF config.json, a native graph .json or an "
                       ".onnx file)")
                        .arg(path));
        return;
    }
    m_lastDir = info.absolutePath();
    // Open Recent lists the file once it has loaded (ModelJob::modelAvailable), not before.
    m_pendingRecent = info.absoluteFilePath();
    m_modelPanel->setModelSpec(info.absoluteFilePath());
}

void MainWindow::onPlanAvailable(std::shared_ptr<const PlanResult> result)
{
    setPlanning(false);
    m_evaluateJob->discard();
    m_result = std::move(result);
    m_resultRequest = m_planJob->request();
    m_selected.reset();
    m_shown.reset();
    m_selectedRow = -1;
    m_whatIf->clearBaseline();
    m_candidates->setResult(m_result);
    const QString costSource = QString::fromStdString(m_result->model->source().name());
    m_profilePanel->setPlannedCostSource(costSource);

    const std::string nothingFits = nothingFitsMessage(*m_result, m_resultRequest);
    QStringList why;
    if (!nothingFits.empty())
        why << QString::fromStdString(nothingFits) << QString();
    for (const auto& line : m_result->explanation.lines)
        why << QString::fromStdString(line);
    why << QString() << tr("Costs: %1").arg(costSource) << QString()
        << tr("%1 candidates, %2 feasible, %3 simulated in %4.")
               .arg(m_result->counts.candidates_total)
               .arg(m_result->counts.candidates_feasible)
               .arg(m_result->counts.simulated)
               .arg(format::seconds(m_result->counts.elapsed_s));
    m_explanation->setPlainText(why.join(QLatin1Char('\n')));
    m_views->setCandidates(m_result, m_result->top.empty() ? -1 : 0);
    const Cluster& cluster = m_result->model->cluster();
    setWindowTitle(tr("%1 on %2 × %3 %4")
                       .arg(QString::fromStdString(m_result->model->graph().name))
                       .arg(cluster.nodes)
                       .arg(cluster.gpus_per_node)
                       .arg(QString::fromStdString(cluster.device.name)));
    statusBar()->showMessage(tr("Planned %1 on %2 GPUs: %3 feasible candidates")
                                 .arg(QString::fromStdString(m_result->model->graph().name))
                                 .arg(m_result->model->cluster().worldSize())
                                 .arg(m_result->counts.candidates_feasible),
                             10000);
    emit planShown();

    if (!nothingFits.empty())
        reportError(tr("Nothing Fits"), QString::fromStdString(nothingFits));
    if (m_candidates->model()->rowCount() > 0)
        m_candidates->selectCandidate(0);
    else
        m_views->clear();
}

QString MainWindow::candidateTitle(int row) const
{
    const Evaluation* e = m_candidates->model()->evaluation(row);
    if (!e)
        return {};
    const QString rank = m_candidates->model()->isFeasible(row) ? QStringLiteral("#%1").arg(row + 1) : tr("infeasible");
    return QStringLiteral("%1  %2").arg(rank, format::text(e->config.describe()));
}

void MainWindow::onCandidateChanged(int row)
{
    m_selectedRow = row;
    const Evaluation* e = m_candidates->model()->evaluation(row);
    if (!e || !m_result) {
        m_evaluateJob->discard();
        m_whatIf->clearBaseline();
        m_views->clear();
        return;
    }
    EvaluationRequest request;
    request.purpose = EvaluationPurpose::Selection;
    request.model = m_result->model;
    request.config = e->config;
    request.workload.global_batch = e->config.globalBatch();
    request.workload.seq_len = m_result->model->graph().seq_len;
    request.workload.memory_limit_bytes = e->memory_limit_bytes > 0
        ? e->memory_limit_bytes
        : memoryLimitBytes(m_resultRequest.config, m_result->model->cluster());
    m_evaluateJob->start(request);
    m_views->setSelectedCandidate(m_candidates->model()->isFeasible(row) ? row : -1);
    // Until the simulation with its timeline comes back, the views show this candidate's estimate, not the last one.
    m_views->showPending(*e, m_result->model, candidateTitle(row));
}

void MainWindow::onWhatIfEdited(const ParallelConfig& config)
{
    if (!m_result || !m_selected)
        return;
    EvaluationRequest request;
    request.purpose = EvaluationPurpose::WhatIf;
    request.model = m_result->model;
    request.config = config;
    request.workload.global_batch = config.globalBatch();
    request.workload.seq_len = m_result->model->graph().seq_len;
    request.workload.memory_limit_bytes = m_selected->memory_limit_bytes;
    request.require_full_cluster = false;
    saveSession();
    m_evaluateJob->start(request);
}

void MainWindow::onEvaluationAvailable(const SelectionEvaluation& result)
{
    if (!m_result)
        return;
    const Evaluation& e = *result.evaluation;
    m_shown = result.evaluation;
    m_shownPurpose = result.purpose;
    if (result.purpose == EvaluationPurpose::Selection) {
        m_selected = result.evaluation;
        m_whatIf->setBaseline(e, m_result->model->cluster().worldSize());
        m_selectedBubbleCurve = result.bubble_curve;
        m_views->showEvaluation(result.evaluation, m_result->model, result.bubble_curve, candidateTitle(m_selectedRow));
    } else {
        m_whatIf->showResult(e, result.evaluate_s);
        m_views->showEvaluation(result.evaluation, m_result->model, result.bubble_curve,
                                tr("what-if  %1").arg(format::text(e.config.describe())));
    }
    if (m_views->isEmpty())
        emitShown();
}

void MainWindow::emitShown()
{
    if (m_shownPurpose == EvaluationPurpose::Selection)
        emit selectionShown();
    else
        emit whatIfShown();
}

void MainWindow::pinCandidate(int row)
{
    const Evaluation* e = m_candidates->model()->evaluation(row);
    if (!e) {
        statusBar()->showMessage(tr("Select a candidate to pin"), 5000);
        return;
    }
    m_compare->pin(*e, candidateTitle(row));
    if (auto* dock = findChild<QDockWidget*>(QStringLiteral("compareDock"))) {
        dock->show();
        dock->raise();
    }
}

void MainWindow::exportWithDialog(const QString& title, const QString& filter, const QString& suggestion,
                                  const std::function<bool(const QString&)>& write)
{
    const QString start = (m_lastDir.isEmpty() ? QDir::currentPath() : m_lastDir) + QLatin1Char('/') + suggestion;
    QString selectedFilter;
    QString path = QFileDialog::getSaveFileName(this, title, start, filter, &selectedFilter);
    if (path.isEmpty())
        return;
    if (QFileInfo(path).suffix().isEmpty())
        path += selectedFilter.contains(QLatin1String("*.svg")) ? QStringLiteral(".svg")
            : selectedFilter.contains(QLatin1String("*.png"))   ? QStringLiteral(".png")
                                                                : QStringLiteral(".json");
    m_lastDir = QFileInfo(path).absolutePath();
    if (write(path))
        statusBar()->showMessage(tr("Wrote %1").arg(QDir::toNativeSeparators(path)), 5000);
}

bool MainWindow::exportPlan(const QString& path)
{
    try {
        if (isServingShown()) {
            saveFileAtomically(path, servingPlanFileText(selectedDeployment(), *m_serving, m_servingRequest));
            return true;
        }
        const Evaluation* e = m_candidates->model()->evaluation(m_candidates->currentCandidate());
        if (!m_result || !e)
            throw InputError("there is no selected plan to export", "plan (Ctrl+R) and select a candidate");
        saveFileAtomically(path, planFileText(*e, *m_result->model, m_resultRequest));
        return true;
    } catch (const InputError& error) {
        reportError(tr("Export Failed"), QString::fromStdString(error.message()));
    }
    return false;
}

bool MainWindow::exportResult(const QString& path)
{
    try {
        if (isServingShown()) {
            if (!m_serving)
                throw InputError("there is no plan to export", "plan first (Ctrl+R)");
            saveFileAtomically(path, servingResultFileText(*m_serving));
            return true;
        }
        if (!m_result)
            throw InputError("there is no plan to export", "plan first (Ctrl+R)");
        saveFileAtomically(path, resultFileText(*m_result));
        return true;
    } catch (const InputError& error) {
        reportError(tr("Export Failed"), QString::fromStdString(error.message()));
    }
    return false;
}

bool MainWindow::exportChromeTrace(const QString& path)
{
    try {
        if (!m_shown)
            throw InputError("there is no timeline to export", "plan (Ctrl+R) and select a candidate");
        saveFileAtomically(path, chromeTraceText(*m_shown));
        return true;
    } catch (const InputError& error) {
        reportError(tr("Export Failed"), QString::fromStdString(error.message()));
    }
    return false;
}

bool MainWindow::exportForTarget(ExportTarget target, const QString& path, const std::string& frameworkVersion)
{
    try {
        if (isServingShown())
            throw InputError("the plan shown is a serving deployment, which a training framework does not run",
                             "export it with File > Export > vLLM or SGLang, or plan in training mode");
        const int row = m_candidates->currentCandidate();
        const Evaluation* e = m_candidates->model()->evaluation(row);
        if (!m_result || !e)
            throw InputError("there is no selected plan to export", "plan (Ctrl+R) and select a candidate");
        // The selection's re-evaluated timeline saves the exporter a re-simulation.
        const SimulationResult* timeline = m_selected && m_selected->config.describe() == e->config.describe()
            ? m_selected->simulation.get()
            : nullptr;
        ExportOptions options;
        options.framework_version = frameworkVersion;
        const ExportResult exported = exportedText(target, *e, *m_result->model, m_resultRequest, timeline, options);
        saveExport(path, exported.text, exported.notes);
        return true;
    } catch (const InputError& error) {
        reportError(tr("Export Failed"), QString::fromStdString(error.message()));
    }
    return false;
}

void MainWindow::saveExport(const QString& path, const std::string& text, const std::vector<std::string>& notes)
{
    saveFileAtomically(path, QByteArray::fromStdString(text));
    // What the target cannot express is also written into the file as comments.
    for (const auto& note : notes)
        m_log->appendPlainText(tr("export note: %1").arg(QString::fromStdString(note)));
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event)
{
    const auto urls = event->mimeData()->urls();
    if (urls.size() == 1 && urls.front().isLocalFile() && isModelFile(urls.front().toLocalFile()))
        event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event)
{
    const auto urls = event->mimeData()->urls();
    if (urls.size() == 1 && urls.front().isLocalFile()) {
        event->acceptProposedAction();
        openModelFile(urls.front().toLocalFile());
    }
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

void MainWindow::closeEvent(QCloseEvent* event)
{
    if (m_options.use_settings)
        saveSettings();
    m_planJob->cancel();
    m_servingJob->cancel();
    QMainWindow::closeEvent(event);
}

void MainWindow::saveSession() const
{
    // Written before every job starts, not only at exit: whatever a job does to the process, the user's model,
    // cluster, settings and recent files are on disk.
    if (m_options.use_settings && m_sessionReady)
        saveSettings();
}

void MainWindow::saveSettings() const
{
    QSettings settings;
    settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
    settings.setValue(QStringLiteral("window/state"), saveState());
    settings.setValue(QStringLiteral("window/centerSplitter"), m_centerSplitter->saveState());
    settings.setValue(QStringLiteral("window/inputsSplitter"), m_inputsSplitter->saveState());
    settings.setValue(QStringLiteral("window/views"), m_views->saveState());
    settings.setValue(QStringLiteral("window/lastDir"), m_lastDir);
    m_modelPanel->saveSettings(settings);
    m_clusterPanel->saveSettings(settings);
    m_plannerPanel->saveSettings(settings);
    m_candidates->saveSettings(settings);
    m_profilePanel->saveSettings(settings);
    m_recent->save(settings);
}

void MainWindow::restoreSettings()
{
    QSettings settings;
    restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray());
    if (restoreState(settings.value(QStringLiteral("window/state")).toByteArray()))
        m_defaultDocks = false;
    m_centerSplitter->restoreState(settings.value(QStringLiteral("window/centerSplitter")).toByteArray());
    m_inputsSplitter->restoreState(settings.value(QStringLiteral("window/inputsSplitter")).toByteArray());
    m_views->restoreState(settings.value(QStringLiteral("window/views")).toByteArray());
    m_lastDir = settings.value(QStringLiteral("window/lastDir")).toString();
    m_modelPanel->restoreSettings(settings);
    m_clusterPanel->restoreSettings(settings);
    m_plannerPanel->restoreSettings(settings);
    m_candidates->restoreSettings(settings);
    m_profilePanel->restoreSettings(settings);
    m_recent->load(settings);
}

} // namespace shardscape::ui
