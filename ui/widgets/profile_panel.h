// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/hardware/cluster.h"
#include "shardscape/profile/profile_db.h"

#include <QWidget>

#include <memory>
#include <optional>

class QCheckBox;
class QLabel;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QSettings;
class QTabWidget;
class QToolButton;

namespace shardscape::ui {

class ProfileChart;
class ProfilerProcess;
struct PlanRequest;

/**
 * The measured profile behind the cost model: which profile.json the planner uses for the cluster's device (found
 * as the planner finds it: the chosen directory, else the per-device cache), its state with the reason when it is
 * not usable, what it measured, and the measured against datasheet charts. The user can choose another profile,
 * import nccl-tests logs into it, run shardscape-profile as a child process (progress, log, cancel), and turn the
 * measured profile off for the planner. Problems are reported in a non-blocking message box and problemReported().
 */
class ProfilePanel : public QWidget
{
    Q_OBJECT
public:
    explicit ProfilePanel(QWidget* parent = nullptr);
    ~ProfilePanel() override;

    /** The cluster whose device the profile is for (a preset or cluster file; errors show in the state line). */
    void setCluster(const QString& spec, int nodes, int gpusPerNode);
    /** Writes config.profile_dir (the chosen directory) and config.use_profile (off when the user turned it off). */
    void applyTo(PlanRequest& request) const;
    /** The cost source the last plan used (its result's cost_source), shown as what the planner uses. */
    void setPlannedCostSource(const QString& name);

    /** Looks at the profile again (after a change outside the app). */
    void refresh();
    /** A directory holding profile.json, or empty for the per-device cache directory. Re-plans when it changes. */
    void setProfileDir(const QString& dir);
    QString profileDir() const { return m_explicitDir; }
    /** Imports nccl-tests logs into the profile (atomically); false after reporting the problem. */
    bool importLogs(const QStringList& files);
    /** The model of the job configs that do not describe it (torchtitan TOML, DeepSpeed JSON). */
    void setModelSpec(const QString& spec) { m_modelSpec = spec; }
    /**
     * Calibrates the profile on training logs (Megatron-LM, torchtitan, DeepSpeed) as `profile import-log` does:
     * each log's job config is the file beside it with the same name (.sh, .toml or .json), else the log's own
     * Megatron argument dump. The table of before / after / left-out errors goes to the Log tab; a message box says
     * what failed. Returns whether the profile was written.
     */
    bool importTrainingLogs(const QStringList& files);
    QPushButton* importTrainingLogsButton() const { return m_importTraining; }
    QString calibrationText() const;
    /** Starts shardscape-profile for the profile's directory; false after reporting the problem. */
    bool runProfiler();
    void cancelProfiler();

    /** Whether the planner uses the measured profile (a usable one exists and the switch is on). */
    bool usesProfile() const;

    // For tests and the window.
    ProfilerProcess* profiler() const { return m_profiler; }
    ProfileState state() const { return m_state; }
    /** The file looked at (empty when no profile could be looked for). */
    QString profileFile() const;
    QString statusText() const;
    ProfileChart* matmulChart() const { return m_matmulChart; }
    ProfileChart* collectiveChart() const { return m_collectiveChart; }
    QCheckBox* useProfileBox() const { return m_useProfile; }
    QCheckBox* quickBox() const { return m_quick; }
    QProgressBar* progressBar() const { return m_progress; }
    QLabel* phaseLabel() const { return m_phase; }
    QString logText() const;

    void saveSettings(QSettings& settings) const;
    void restoreSettings(const QSettings& settings);

signals:
    /** What the planner would use changed (another profile, new rows, the switch): plan again. */
    void profileChanged();
    /** A problem was shown to the user: `message` is the cause and a way out. */
    void problemReported(const QString& title, const QString& message);

private:
    void createWidgets();
    /** Re-reads the profile; emits profileChanged() when the cost source the planner would get changed. */
    void reload(bool notify);
    void showState();
    void updateCharts();
    void report(const QString& title, const QString& message);
    void appendLog(const QString& line);
    void setRunning(bool running);
    void onProfilerFinished(int exitCode, bool crashed);
    void chooseDirectory();
    void chooseFile();
    /** Where an import or a profiler run writes: the chosen directory, the found profile's, else the default. */
    QString targetDir() const;
    /** What the planner would be given, to detect changes. */
    QString plannerKey() const;

    std::optional<Cluster> m_cluster;
    QString m_clusterError;
    QString m_explicitDir;
    bool m_userDisabled = false; ///< the user turned the measured profile off
    ProfileChoice m_choice;
    ProfileStatus m_status;
    ProfileState m_state = ProfileState::Missing;
    QString m_stateText;
    QString m_lastKey;

    ProfilerProcess* m_profiler;
    QLabel* m_device = nullptr;
    QLabel* m_file = nullptr;
    QLabel* m_stateLabel = nullptr;
    QLabel* m_measured = nullptr;
    QLabel* m_calibrated = nullptr;
    QLabel* m_planned = nullptr;
    QToolButton* m_choose = nullptr;
    QCheckBox* m_useProfile = nullptr;
    QPushButton* m_import = nullptr;
    QPushButton* m_importTraining = nullptr;
    QString m_clusterSpec;
    QString m_modelSpec;
    QPushButton* m_run = nullptr;
    QCheckBox* m_quick = nullptr;
    QProgressBar* m_progress = nullptr;
    QLabel* m_phase = nullptr;
    QToolButton* m_cancel = nullptr;
    QTabWidget* m_tabs = nullptr;
    ProfileChart* m_matmulChart = nullptr;
    ProfileChart* m_collectiveChart = nullptr;
    QPlainTextEdit* m_details = nullptr;
    QPlainTextEdit* m_log = nullptr;
};

} // namespace shardscape::ui
