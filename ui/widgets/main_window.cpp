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
#include "widgets/model_panel.h"
#include "widgets/planner_panel.h"
#include "widgets/profile_panel.h"
#include "widgets/recent_files.h"
#include "widgets/what_if_panel.h"

#include <QCloseEvent>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileInfo>
#include <QLabel>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QStatusBar>
#include <QToolButton>

namespace shardscape::ui {

namespace {

bool isModelFile(const QString& path)
{
    const QString suffix = QFileInfo(path).suffix().toLower();
    return suffix == QLatin1String("json") || suffix == QLatin1String("onnx");
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
    // A plan that recomputes the first n blocks of each chunk keeps doing so under an edited pipeline: the block
    // indices follow the new chunks (Megatron's --recompute-num-layers is per chunk).
    if (const int n = recomputedBlocksPerChunk(config); n > 0)
        request.config = m_result->model->withFirstBlocksRecomputed(config, n);
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

void MainWindow::closeEvent(QCloseEvent* event)
{
    if (m_options.use_settings)
        saveSettings();
    m_planJob->cancel();
    m_servingJob->cancel();
    QMainWindow::closeEvent(event);
}

} // namespace shardscape::ui
