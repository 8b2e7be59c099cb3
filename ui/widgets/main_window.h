// SPDX-License-Identifier: MIT
#pragma once

#include "jobs/plan_request.h"
#include "jobs/selection_evaluation.h"
#include "models/model_overview.h"

#include "shardscape/plan/exporters.h"
#include "shardscape/plan/serving_export.h"
#include "shardscape/search/serving_planner.h"

#include <QMainWindow>

#include <functional>
#include <memory>
#include <string>
#include <vector>

class QAction;
class QLabel;
class QMenu;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QSplitter;
class QStackedWidget;
class QToolButton;

namespace shardscape::ui {

class AnalysisViews;
class CandidatesPanel;
class ClusterPanel;
class CompareWidget;
class EvaluateJob;
class ModelJob;
class ModelPanel;
class PlanJob;
class PlannerPanel;
class ProfilePanel;
class RecentFiles;
class ServingJob;
class ServingView;
class WhatIfPanel;

/** How the window starts. */
struct MainWindowOptions
{
    bool use_settings = true; ///< restore inputs and window state at start, save them at exit
    bool plan_on_start = true; ///< plan the inputs at once (the embedded default on a first start)
    QString model; ///< overrides the model (preset or file)
    QString cluster; ///< overrides the device preset or cluster file
    int nodes = 0; ///< > 0 overrides
    int gpus_per_node = 0; ///< > 0 overrides
    QString profile_dir; ///< overrides the measured-profile directory; the Profile panel is brought to the front
    bool inference = false; ///< start in inference mode (size a serving deployment)
};

/**
 * Shardscape's main window: inputs on the left (model and layer tree, cluster, planner), the candidates and the
 * views of the selected one in the middle, what-if, comparison, explanation and log on the right. Planning,
 * re-evaluation and model loading run as background jobs; the latest request wins.
 */
class MainWindow : public QMainWindow
{
    Q_OBJECT
public:
    explicit MainWindow(const MainWindowOptions& options = {}, QWidget* parent = nullptr);
    ~MainWindow() override;

    /** The request the panels describe now. */
    PlanRequest currentRequest() const;

    /** Plans currentRequest() in the background (superseding a running plan). */
    void plan();
    void cancelPlan();
    /** Loads a model file into the model panel (and the recent files); errors go to a message box. */
    void openModelFile(const QString& path);

    /** Writers behind File > Export; false (after a message box) when it failed. */
    bool exportPlan(const QString& path);
    bool exportResult(const QString& path);
    bool exportChromeTrace(const QString& path);
    /** The selected candidate through one of the core's exporters (torchtitan, Megatron-LM, DeepSpeed, ...). */
    /** `frameworkVersion`: the release to write for (empty = the framework's current line). */
    bool exportForTarget(ExportTarget target, const QString& path, const std::string& frameworkVersion = {});
    /** The selected serving deployment as the engine's launch script (vLLM, SGLang). */
    bool exportServing(ServingExportTarget target, const QString& path);
    /** Whether the centre shows an inference plan (the planner's inference mode) rather than a training one. */
    bool isServingShown() const;

    // For tests and the app's --screenshot.
    PlanJob* planJob() const { return m_planJob; }
    ServingJob* servingJob() const { return m_servingJob; }
    ServingView* servingView() const { return m_servingView; }
    const std::shared_ptr<const ServingPlanResult>& currentServing() const { return m_serving; }
    EvaluateJob* evaluateJob() const { return m_evaluateJob; }
    ModelPanel* modelPanel() const { return m_modelPanel; }
    /** Open Recent's files, most recent first. */
    QStringList recentFiles() const;
    ClusterPanel* clusterPanel() const { return m_clusterPanel; }
    PlannerPanel* plannerPanel() const { return m_plannerPanel; }
    CandidatesPanel* candidatesPanel() const { return m_candidates; }
    AnalysisViews* analysisViews() const { return m_views; }
    WhatIfPanel* whatIfPanel() const { return m_whatIf; }
    CompareWidget* compareWidget() const { return m_compare; }
    ProfilePanel* profilePanel() const { return m_profilePanel; }
    const std::shared_ptr<const PlanResult>& currentResult() const { return m_result; }
    /** The re-evaluated selection (with its timeline) or the what-if on display. */
    const std::shared_ptr<const Evaluation>& shownEvaluation() const { return m_shown; }
    QString lastError() const { return m_lastError; }

signals:
    /** A plan's candidates are in the table. */
    void planShown();
    /** The selected candidate was re-evaluated and every view shows it. */
    void selectionShown();
    /** A what-if edit was re-simulated and is shown. */
    void whatIfShown();
    /** An error was reported to the user (message box or status). */
    void errorShown(const QString& message);

protected:
    void closeEvent(QCloseEvent* event) override;
    void showEvent(QShowEvent* event) override;
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;

private:
    void applyDefaultLayout();
    void createPanels();
    void createActions();
    void createDocks();
    void connectJobs();
    void restoreSettings();
    /** saveSettings() when the window uses settings: called as each job starts, so a crash loses nothing. */
    void saveSession() const;
    void saveSettings() const;
    void setPlanning(bool planning);
    void reportError(const QString& title, const QString& message);
    void loadModelOverview();
    /** Tells the profile panel which device the cluster panel describes now. */
    void updateProfileCluster();

    void onPlanAvailable(std::shared_ptr<const PlanResult> result);
    void onServingAvailable(std::shared_ptr<const ServingPlanResult> result);
    /** Shows the training views or the serving view in the centre. */
    void showMode(bool inference);
    /** The deployment selected in the serving view, or an InputError naming what to do. */
    const ServingEstimate& selectedDeployment() const;
    void onCandidateChanged(int row);
    void onEvaluationAvailable(const SelectionEvaluation& result);
    void onWhatIfEdited(const ParallelConfig& config);
    /** selectionShown() or whatIfShown(), as the evaluation on display is. */
    void emitShown();
    void pinCandidate(int row);
    void exportWithDialog(const QString& title, const QString& filter, const QString& suffix,
                          const std::function<bool(const QString&)>& write);
    QString candidateTitle(int row) const;
    /** Writes an export atomically and logs what it could not express. Throws InputError when it cannot write. */
    void saveExport(const QString& path, const std::string& text, const std::vector<std::string>& notes);

    MainWindowOptions m_options;
    PlanJob* m_planJob;
    ServingJob* m_servingJob;
    EvaluateJob* m_evaluateJob;
    ModelJob* m_modelJob;

    ModelPanel* m_modelPanel = nullptr;
    ClusterPanel* m_clusterPanel = nullptr;
    PlannerPanel* m_plannerPanel = nullptr;
    CandidatesPanel* m_candidates = nullptr;
    AnalysisViews* m_views = nullptr;
    WhatIfPanel* m_whatIf = nullptr;
    CompareWidget* m_compare = nullptr;
    ProfilePanel* m_profilePanel = nullptr;
    QPlainTextEdit* m_log = nullptr;
    QPlainTextEdit* m_explanation = nullptr;
    QStackedWidget* m_centerStack = nullptr;
    QSplitter* m_centerSplitter = nullptr;
    ServingView* m_servingView = nullptr;
    QSplitter* m_inputsSplitter = nullptr;
    QPushButton* m_planButton = nullptr;
    QLabel* m_phase = nullptr;
    QProgressBar* m_progress = nullptr;
    QToolButton* m_cancelButton = nullptr;
    RecentFiles* m_recent = nullptr;

    QAction* m_openAction = nullptr;
    QAction* m_planAction = nullptr;
    QAction* m_cancelAction = nullptr;
    QAction* m_pinAction = nullptr;
    QAction* m_exportPlanAction = nullptr;
    QAction* m_exportResultAction = nullptr;
    QAction* m_exportTraceAction = nullptr;
    QMenu* m_exportImageMenu = nullptr;

    std::shared_ptr<const ServingPlanResult> m_serving;
    PlanRequest m_servingRequest; ///< the request m_serving answers
    std::shared_ptr<const PlanResult> m_result;
    PlanRequest m_resultRequest; ///< the request m_result answers
    std::shared_ptr<const ModelOverview> m_overview;
    std::shared_ptr<const Evaluation> m_selected; ///< the selection, re-evaluated with its timeline
    std::vector<std::pair<int, double>> m_selectedBubbleCurve;
    QString m_pendingRecent; ///< a model file opened but not yet loaded: Open Recent gets it once it loads ///< its
                             ///< bubble against micro-batches
    std::shared_ptr<const Evaluation> m_shown;
    EvaluationPurpose m_shownPurpose = EvaluationPurpose::Selection;
    int m_selectedRow = -1;
    QString m_lastError;
    QString m_lastDir;
    bool m_defaultDocks = true; ///< no saved dock layout: arrange the docks for the first shown width
    bool m_sessionReady = false; ///< the restore is over: saveSession may write
};

} // namespace shardscape::ui
