// SPDX-License-Identifier: MIT
#include "widgets/profile_panel.h"

#include "charts/profile_chart.h"
#include "jobs/plan_request.h"
#include "jobs/profiler_process.h"
#include "models/format.h"
#include "models/profile_curves.h"
#include "widgets/error_box.h"

#include "shardscape/cost/cost_source.h"
#include "shardscape/profile/profile_import.h"
#include "shardscape/profile/profile_summary.h"
#include "shardscape/search/log_calibration.h"
#include "shardscape/support/error.h"

#include <QApplication>
#include <QCheckBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFontDatabase>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenu>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QTabWidget>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>

namespace shardscape::ui {

namespace {

QString text(const std::string& s)
{
    return QString::fromStdString(s);
}

QString nativePath(const std::filesystem::path& path)
{
    return QDir::toNativeSeparators(QString::fromStdString(path.string()));
}

/** The part of a cost source name before its per-kind details: "profile:nvidia-h200", "datasheet". */
QString shortSourceName(const QString& name)
{
    const qsizetype open = name.indexOf(QStringLiteral(" ("));
    return open > 0 ? name.left(open) : name;
}

} // namespace

ProfilePanel::ProfilePanel(QWidget* parent)
    : QWidget(parent)
    , m_profiler(new ProfilerProcess(this))
{
    createWidgets();
    connect(m_profiler, &ProfilerProcess::progressChanged, this, [this](int done, int total, const QString& phase) {
        m_progress->setRange(0, std::max(total, 1));
        m_progress->setValue(std::min(done, std::max(total, 1)));
        m_progress->setFormat(QStringLiteral("%1 / %2").arg(done).arg(total));
        m_phase->setText(phase);
    });
    connect(m_profiler, &ProfilerProcess::outputLine, this, &ProfilePanel::appendLog);
    connect(m_profiler, &ProfilerProcess::finished, this, &ProfilePanel::onProfilerFinished);
    connect(m_profiler, &ProfilerProcess::cancelled, this, [this] {
        setRunning(false);
        m_phase->setText(tr("cancelled"));
        appendLog(tr("profiler cancelled; the profile was not changed"));
    });
    setRunning(false);
    reload(false);
}

ProfilePanel::~ProfilePanel() = default;

void ProfilePanel::createWidgets()
{
    m_device = new QLabel;
    m_device->setWordWrap(true);
    m_file = new QLabel;
    m_file->setWordWrap(true);
    m_file->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_stateLabel = new QLabel;
    m_stateLabel->setWordWrap(true);
    m_stateLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_measured = new QLabel;
    m_calibrated = new QLabel;
    m_calibrated->setWordWrap(true);
    m_calibrated->setToolTip(tr("Factors fitted on your own training runs (Import Training Logs…); the Details tab "
                                "lists the runs"));
    m_measured->setWordWrap(true);
    m_planned = new QLabel(tr("(plan to see)"));
    m_planned->setWordWrap(true);

    m_choose = new QToolButton;
    m_choose->setText(tr("Choose…"));
    m_choose->setToolTip(tr("Use another profile for the planner"));
    m_choose->setPopupMode(QToolButton::InstantPopup);
    auto* chooseMenu = new QMenu(m_choose);
    connect(chooseMenu->addAction(tr("Profile &Directory…")), &QAction::triggered, this,
            &ProfilePanel::chooseDirectory);
    connect(chooseMenu->addAction(tr("Profile &File (profile.json)…")), &QAction::triggered, this,
            &ProfilePanel::chooseFile);
    chooseMenu->addSeparator();
    connect(chooseMenu->addAction(tr("D&efault Location (per-device cache)")), &QAction::triggered, this,
            [this] { setProfileDir({}); });
    m_choose->setMenu(chooseMenu);

    m_useProfile = new QCheckBox(tr("Use measured profile"));
    m_useProfile->setToolTip(tr("Off: the planner costs everything from the datasheet (planner config use_profile)"));
    connect(m_useProfile, &QCheckBox::toggled, this, [this](bool on) {
        if (!m_useProfile->isEnabled())
            return;
        m_userDisabled = !on;
        reload(true);
    });

    m_import = new QPushButton(tr("Import nccl-tests Logs…"));
    m_import->setToolTip(tr("Add all_reduce_perf, all_gather_perf, reduce_scatter_perf, alltoall_perf or "
                            "sendrecv_perf output (text or -J JSON) to the profile"));
    connect(m_import, &QPushButton::clicked, this, [this] {
        const QStringList files = QFileDialog::getOpenFileNames(this, tr("Import nccl-tests Logs"), QString(),
                                                                tr("nccl-tests output (*.log *.txt *.out *.json);;"
                                                                   "All files (*)"));
        if (!files.isEmpty())
            importLogs(files);
    });
    m_importTraining = new QPushButton(tr("Import Training Logs…"));
    m_importTraining->setToolTip(
        tr("Calibrate the profile on your own runs: Megatron-LM, torchtitan or DeepSpeed training logs, each with "
           "its job config beside it under the same name (.sh, .toml, .json; a Megatron log's own argument dump "
           "otherwise). The Log tab shows each run's step time before and after, and left out of the fit"));
    connect(m_importTraining, &QPushButton::clicked, this, [this] {
        const QStringList files = QFileDialog::getOpenFileNames(this, tr("Import Training Logs"), QString(),
                                                                tr("Training logs (*.log *.txt *.out);;"
                                                                   "All files (*)"));
        if (!files.isEmpty())
            importTrainingLogs(files);
    });
    m_run = new QPushButton(tr("Run Profiler…"));
    m_run->setToolTip(tr("Measure this machine's GPU with shardscape-profile (a separate process) into the "
                         "profile's directory"));
    connect(m_run, &QPushButton::clicked, this, &ProfilePanel::runProfiler);
    m_quick = new QCheckBox(tr("Quick"));
    m_quick->setToolTip(tr("A small grid of shapes and sizes (--quick): minutes instead of tens of minutes"));
    m_progress = new QProgressBar;
    m_progress->setTextVisible(true);
    m_phase = new QLabel;
    m_cancel = new QToolButton;
    m_cancel->setText(tr("Cancel"));
    m_cancel->setToolTip(tr("Stop the profiler (nothing is written)"));
    connect(m_cancel, &QToolButton::clicked, this, &ProfilePanel::cancelProfiler);

    auto* form = new QFormLayout;
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    form->setRowWrapPolicy(QFormLayout::DontWrapRows);
    form->addRow(tr("Device:"), m_device);
    auto* fileRow = new QHBoxLayout;
    fileRow->addWidget(m_file, 1);
    fileRow->addWidget(m_choose, 0, Qt::AlignTop);
    form->addRow(tr("Profile:"), fileRow);
    form->addRow(tr("State:"), m_stateLabel);
    form->addRow(tr("Measured:"), m_measured);
    form->addRow(tr("Calibrated:"), m_calibrated);
    form->addRow(tr("Planner uses:"), m_planned);

    auto* actions = new QHBoxLayout;
    actions->addWidget(m_useProfile);
    actions->addStretch(1);
    actions->addWidget(m_import);
    actions->addWidget(m_importTraining);
    auto* runRow = new QHBoxLayout;
    runRow->addWidget(m_run);
    runRow->addWidget(m_quick);
    runRow->addWidget(m_progress, 1);
    runRow->addWidget(m_cancel);

    m_matmulChart = new ProfileChart(ProfileChart::Kind::Matmul);
    m_collectiveChart = new ProfileChart(ProfileChart::Kind::Collectives);
    m_details = new QPlainTextEdit;
    m_details->setReadOnly(true);
    m_details->setLineWrapMode(QPlainTextEdit::NoWrap);
    m_log = new QPlainTextEdit;
    m_log->setReadOnly(true);
    m_log->setMaximumBlockCount(5000);
    m_log->setLineWrapMode(QPlainTextEdit::NoWrap);
    m_log->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    m_log->setPlaceholderText(tr("Imports and the profiler's messages appear here."));
    m_tabs = new QTabWidget;
    m_tabs->setDocumentMode(true);
    m_tabs->addTab(m_collectiveChart, tr("Collectives"));
    m_tabs->addTab(m_matmulChart, tr("Matmul"));
    m_tabs->addTab(m_details, tr("Details"));
    m_tabs->addTab(m_log, tr("Log"));

    auto* layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addLayout(actions);
    layout->addLayout(runRow);
    layout->addWidget(m_phase);
    layout->addWidget(m_tabs, 1);
}

void ProfilePanel::setCluster(const QString& spec, int nodes, int gpusPerNode)
{
    m_clusterSpec = spec;
    try {
        m_cluster = loadCluster(spec.toStdString(), nodes, gpusPerNode);
        m_clusterError.clear();
    } catch (const InputError& error) {
        m_cluster.reset();
        m_clusterError = text(error.message());
    }
    reload(false);
}

void ProfilePanel::applyTo(PlanRequest& request) const
{
    request.config.profile_dir = QDir::toNativeSeparators(m_explicitDir).toStdString();
    request.config.use_profile = !m_userDisabled;
}

bool ProfilePanel::usesProfile() const
{
    return m_choice.profile && !m_userDisabled;
}

void ProfilePanel::setPlannedCostSource(const QString& name)
{
    m_planned->setText(shortSourceName(name));
    m_planned->setToolTip(name);
}

void ProfilePanel::refresh()
{
    reload(true);
}

void ProfilePanel::setProfileDir(const QString& dir)
{
    m_explicitDir = dir;
    reload(true);
    // The user named it: say at once when it cannot be used.
    if (!dir.isEmpty() && (m_state == ProfileState::Corrupt || m_state == ProfileState::WrongVersion))
        report(tr("Unusable Profile"),
               tr("%1 (import nccl-tests logs or run the profiler to write a new one there after moving the file "
                  "away, or choose another profile)")
                   .arg(text(m_status.reason)));
}

QString ProfilePanel::plannerKey() const
{
    return QStringLiteral("%1|%2|%3")
        .arg(m_explicitDir, usesProfile() ? QStringLiteral("on") : QStringLiteral("off"),
             m_choice.profile ? nativePath(m_choice.file) : QString());
}

void ProfilePanel::reload(bool notify)
{
    m_choice = {};
    m_status = {};
    if (m_cluster) {
        ProfileRequest request;
        request.profile_dir = QDir::toNativeSeparators(m_explicitDir).toStdString();
        m_choice = findProfile(m_cluster->device, request);
        if (!m_choice.file.empty())
            m_status = inspectProfile(m_choice.file);
    }
    m_state = m_status.state;
    {
        const QSignalBlocker block(m_useProfile);
        m_useProfile->setEnabled(m_choice.profile != nullptr);
        m_useProfile->setChecked(m_choice.profile && !m_userDisabled);
    }
    showState();
    updateCharts();
    const QString key = plannerKey();
    const bool changed = key != m_lastKey;
    m_lastKey = key;
    if (notify && changed)
        emit profileChanged();
}

void ProfilePanel::showState()
{
    if (!m_cluster) {
        m_device->setText(tr("no cluster: %1").arg(m_clusterError));
        m_file->clear();
        m_stateText = tr("unknown (no cluster)");
        m_stateLabel->setText(m_stateText);
        m_measured->clear();
        return;
    }
    const DeviceSpec& device = m_cluster->device;
    m_device->setText(QStringLiteral("%1 (%2)").arg(text(device.display_name), text(device.name)));
    m_file->setText(m_choice.file.empty() ? tr("none under %1").arg(nativePath(profileCacheRoot()))
                                          : nativePath(m_choice.file));
    m_file->setToolTip(m_explicitDir.isEmpty()
                           ? tr("Found in the per-device cache (%1)").arg(nativePath(profileCacheRoot()))
                           : tr("Chosen by you"));
    QString colour = QStringLiteral("#b00020");
    switch (m_state) {
    case ProfileState::Missing:
        colour = QStringLiteral("#555555");
        m_stateText = m_choice.file.empty()
            ? tr("missing: no measured profile for %1; costs come from the datasheet").arg(text(device.name))
            : tr("missing: %1").arg(text(m_status.reason));
        break;
    case ProfileState::Corrupt:
        m_stateText = tr("corrupt: %1").arg(text(m_status.reason));
        break;
    case ProfileState::WrongVersion:
        m_stateText = tr("old version: %1").arg(text(m_status.reason));
        break;
    case ProfileState::Valid: {
        const Profile& p = *m_status.profile;
        if (!m_choice.profile) {
            colour = QStringLiteral("#a15c00");
            m_stateText = tr("valid but not used: measured on %1, not on the cluster's %2 (choose it to use it "
                             "anyway)")
                              .arg(text(p.device.name), text(device.name));
        } else {
            colour = QStringLiteral("#1b7f3b");
            m_stateText = tr("valid: %1, written %2 by %3")
                              .arg(text(p.device.name), text(p.created_utc), text(p.tool.empty() ? "?" : p.tool));
        }
        break;
    }
    }
    m_stateLabel->setText(
        QStringLiteral("<span style=\"color:%1\">%2</span>").arg(colour, m_stateText.toHtmlEscaped()));

    QStringList details;
    for (const auto& note : m_choice.notes)
        details << tr("note: %1").arg(text(note));
    if (m_status.profile) {
        QStringList measured;
        QStringList datasheet;
        for (const auto& kind : summarizeProfile(*m_status.profile)) {
            (kind.lines.empty() ? datasheet : measured) << text(kind.kind);
            details << (kind.lines.empty() ? tr("%1: not measured (datasheet)").arg(text(kind.kind))
                                           : text(kind.kind) + QLatin1Char(':'));
            for (const auto& line : kind.lines)
                details << QStringLiteral("    ") + text(line);
        }
        m_measured->setText(tr("%1; datasheet for %2")
                                .arg(measured.isEmpty() ? tr("nothing") : measured.join(QStringLiteral(", ")),
                                     datasheet.isEmpty() ? tr("nothing") : datasheet.join(QStringLiteral(", "))));
        if (const auto& c = m_status.profile->calibration) {
            const QString scales = text(describeCalibration(*c));
            m_calibrated->setText(
                (c->runs.size() == 1 ? tr("on 1 training run: %1") : tr("on %1 training runs: %2").arg(c->runs.size()))
                    .arg(scales));
            details << tr("calibration (%1), fitted on:").arg(text(c->created_utc));
            for (const auto& run : c->runs)
                details << tr("    %1 (%2, %3): measured %4 s, predicted %5 s, calibrated %6 s")
                               .arg(text(run.log), text(run.framework), text(run.config))
                               .arg(run.measured_step_s, 0, 'f', 3)
                               .arg(run.predicted_step_s, 0, 'f', 3)
                               .arg(run.calibrated_step_s, 0, 'f', 3);
        } else {
            m_calibrated->setText(tr("no (Import Training Logs… fits it on your runs)"));
        }
    } else {
        m_measured->setText(tr("nothing; the datasheet for everything"));
        m_calibrated->setText(tr("no"));
    }
    m_details->setPlainText(details.join(QLatin1Char('\n')));
}

void ProfilePanel::updateCharts()
{
    if (!m_cluster || !m_status.profile) {
        m_matmulChart->clear();
        m_collectiveChart->clear();
        return;
    }
    // The datasheet of the cluster's device over the measured shapes and sizes: what the profile replaces.
    const auto datasheet = makeDatasheetCostSource(*m_cluster, CostParams {});
    const QString subtitle = tr("%1 (%2) against the %3 datasheet")
                                 .arg(text(m_status.profile->device.name),
                                      QFileInfo(nativePath(m_status.file)).fileName(), text(m_cluster->device.name));
    m_matmulChart->setCurves(matmulCurves(*m_status.profile, *datasheet), subtitle);
    m_collectiveChart->setCurves(collectiveCurves(*m_status.profile, *datasheet), subtitle);
    // Show the chart that has something on it.
    if (m_status.profile->collectives.empty() && !m_status.profile->matmul.empty())
        m_tabs->setCurrentWidget(m_matmulChart);
}

QString ProfilePanel::profileFile() const
{
    return m_choice.file.empty() ? QString() : nativePath(m_choice.file);
}

QString ProfilePanel::statusText() const
{
    return m_stateText;
}

QString ProfilePanel::logText() const
{
    return m_log->toPlainText();
}

void ProfilePanel::report(const QString& title, const QString& message)
{
    appendLog(tr("%1: %2").arg(title, message));
    showError(this, title, message);
    emit problemReported(title, message);
}

void ProfilePanel::appendLog(const QString& line)
{
    m_log->appendPlainText(line);
}

QString ProfilePanel::targetDir() const
{
    if (!m_explicitDir.isEmpty())
        return m_explicitDir;
    if (!m_choice.file.empty())
        return nativePath(m_choice.file.parent_path());
    return {};
}

void ProfilePanel::chooseDirectory()
{
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Choose a Profile Directory"), targetDir());
    if (!dir.isEmpty())
        setProfileDir(dir);
}

void ProfilePanel::chooseFile()
{
    const QString file = QFileDialog::getOpenFileName(this, tr("Choose a Profile"), targetDir(),
                                                      tr("Profiles (profile.json);;JSON files (*.json)"));
    if (file.isEmpty())
        return;
    const QFileInfo info(file);
    // The planner config names a directory (profile_dir) and reads the profile.json in it.
    if (info.fileName()
        != QString::fromUtf8(kProfileFileName.data(), static_cast<qsizetype>(kProfileFileName.size()))) {
        report(tr("Unusable Profile"),
               tr("%1 is not named profile.json, the name the planner reads in a profile directory (rename it to "
                  "profile.json in a directory of its own and choose that)")
                   .arg(QDir::toNativeSeparators(file)));
        return;
    }
    setProfileDir(info.absolutePath());
}

bool ProfilePanel::importLogs(const QStringList& files)
{
    std::vector<std::filesystem::path> logs;
    for (const QString& file : files)
        logs.emplace_back(file.toStdString());
    try {
        // Without a profile for this device, the logs name their GPU and go to its default directory.
        const NcclImportResult result
            = importNcclTestsLogs(logs, targetDir().toStdString(), {}, "shardscape " SHARDSCAPE_VERSION " import-nccl");
        for (const auto& line : result.lines)
            appendLog(text(line));
        appendLog(tr("saved %1 (%2 collective rows, device %3)")
                      .arg(nativePath(result.file))
                      .arg(result.profile.collectives.size())
                      .arg(text(result.profile.device.name)));
        // A first import into the default location of another device: point at it so that it is shown.
        if (m_explicitDir.isEmpty() && m_choice.file.empty() && m_cluster
            && !profileMatchesDevice(result.profile.device.name, m_cluster->device))
            m_explicitDir = nativePath(result.file.parent_path());
        // New rows in the profile the planner reads: its costs changed.
        reload(false);
        if (usesProfile())
            emit profileChanged();
        return true;
    } catch (const InputError& error) {
        report(tr("Cannot Import the nccl-tests Logs"), text(error.message()));
    }
    return false;
}

QString ProfilePanel::calibrationText() const
{
    return m_calibrated->text();
}

bool ProfilePanel::importTrainingLogs(const QStringList& files)
{
    LogImportRequest request;
    bool describedByConfig = true;
    for (const QString& file : files) {
        LogRunSpec run;
        run.log = file.toStdString();
        const QFileInfo info(file);
        for (const char* extension : {"sh", "toml", "json"}) {
            const QString config = info.dir().filePath(info.completeBaseName() + QLatin1Char('.') + extension);
            if (QFileInfo::exists(config)) {
                run.job_config = config.toStdString();
                // Megatron scripts carry the model's shape; TOML and DeepSpeed JSON name it or leave it out.
                describedByConfig = describedByConfig && QLatin1String(extension) == QLatin1String("sh");
                break;
            }
        }
        request.runs.push_back(std::move(run));
    }
    if (!describedByConfig)
        request.model = m_modelSpec.toStdString();
    request.cluster = m_clusterSpec.toStdString();
    request.profile_dir = targetDir().toStdString();
    request.tool = "shardscape " SHARDSCAPE_VERSION " import-log";
    try {
        QApplication::setOverrideCursor(Qt::WaitCursor);
        const LogImportResult result = shardscape::importTrainingLogs(request);
        QApplication::restoreOverrideCursor();
        for (const auto& run : result.runs) {
            appendLog(tr("%1 (%2, %3): measured %4 s per step (%5 of %6 logged steps); predicted %7 s (%8) -> "
                         "calibrated %9 s (%10)%11")
                          .arg(text(run.log), text(run.format), text(run.config))
                          .arg(run.measured_step_s, 0, 'f', 3)
                          .arg(run.steps_used)
                          .arg(run.steps_logged)
                          .arg(run.predicted_step_s, 0, 'f', 3)
                          .arg(format::relativeDelta(run.measured_step_s, run.predicted_step_s))
                          .arg(run.calibrated_step_s, 0, 'f', 3)
                          .arg(format::relativeDelta(run.measured_step_s, run.calibrated_step_s))
                          .arg(run.held_out_step_s > 0
                                   ? tr("; left out of the fit %1 s (%2)")
                                         .arg(run.held_out_step_s, 0, 'f', 3)
                                         .arg(format::relativeDelta(run.measured_step_s, run.held_out_step_s))
                                   : QString()));
            if (run.measured_peak_bytes > 0)
                appendLog(tr("  peak (max %1): measured %2 GB, predicted %3 GB (%4) -> calibrated %5 GB (%6)")
                              .arg(text(run.peak_kind))
                              .arg(run.measured_peak_bytes / 1e9, 0, 'f', 2)
                              .arg(run.predicted_peak_bytes / 1e9, 0, 'f', 2)
                              .arg(format::relativeDelta(run.measured_peak_bytes, run.predicted_peak_bytes))
                              .arg(run.calibrated_peak_bytes / 1e9, 0, 'f', 2)
                              .arg(format::relativeDelta(run.measured_peak_bytes, run.calibrated_peak_bytes)));
            for (const auto& warning : run.warnings)
                appendLog(tr("  warning: %1").arg(text(warning)));
        }
        const ProfileCalibration& c = result.calibration;
        appendLog(tr("calibration: %1").arg(text(describeCalibration(c, 3))));
        for (const auto& note : result.notes)
            appendLog(tr("note: %1").arg(text(note)));
        appendLog(tr("saved %1").arg(nativePath(result.file)));
        m_tabs->setCurrentWidget(m_log);
        if (m_explicitDir.isEmpty() && m_choice.file.empty())
            m_explicitDir = nativePath(result.file.parent_path());
        reload(false);
        if (usesProfile())
            emit profileChanged();
        return true;
    } catch (const InputError& error) {
        QApplication::restoreOverrideCursor();
        report(tr("Cannot Import the Training Logs"), text(error.message()));
    }
    return false;
}

bool ProfilePanel::runProfiler()
{
    QString dir = targetDir();
    if (dir.isEmpty() && m_cluster)
        dir = nativePath(defaultProfileDir(m_cluster->device.name));
    if (dir.isEmpty()) {
        report(tr("Cannot Run the Profiler"),
               tr("there is no directory to write the profile to (choose a profile directory first)"));
        return false;
    }
    QString error;
    if (!m_profiler->start(dir, m_quick->isChecked(), &error)) {
        report(tr("Cannot Run the Profiler"), error);
        return false;
    }
    appendLog(QStringLiteral("$ %1 %2").arg(
        m_profiler->executable(), ProfilerProcess::arguments(dir, m_quick->isChecked()).join(QLatin1Char(' '))));
    m_progress->setRange(0, 0); // busy until the first progress line
    m_phase->setText(tr("starting the profiler…"));
    m_tabs->setCurrentWidget(m_log);
    setRunning(true);
    return true;
}

void ProfilePanel::cancelProfiler()
{
    if (!m_profiler->isRunning())
        return;
    m_phase->setText(tr("cancelling…"));
    m_profiler->cancel();
}

void ProfilePanel::setRunning(bool running)
{
    m_run->setEnabled(!running);
    m_import->setEnabled(!running);
    m_choose->setEnabled(!running);
    m_cancel->setEnabled(running);
    m_cancel->setVisible(running);
    m_progress->setVisible(running);
    m_phase->setVisible(running || !m_phase->text().isEmpty());
}

void ProfilePanel::onProfilerFinished(int exitCode, bool crashed)
{
    setRunning(false);
    const QString tail = m_profiler->stderrTail();
    const QString lastLine = tail.section(QLatin1Char('\n'), -1);
    if (crashed) {
        m_phase->setText(tr("the profiler crashed"));
        report(tr("Profiler Crashed"),
               tr("shardscape-profile ended abnormally (a driver fault?); the profile was not changed: %1 (the app "
                  "is unaffected; check the GPU driver, or run it again with Quick)")
                   .arg(tail.isEmpty() ? tr("no message") : tail));
        return;
    }
    appendLog(tr("shardscape-profile exited with code %1").arg(exitCode));
    if (exitCode == ProfilerProcess::kExitNoDevice) {
        m_phase->setText(tr("no CUDA device"));
        report(tr("No CUDA Device"),
               tr("no CUDA device: shardscape-profile found no usable GPU on this machine (%1). Run it on a GPU "
                  "machine and copy/import the profile (shardscape-profile --out DIR there, then copy DIR here and "
                  "Choose it, or import nccl-tests logs)")
                   .arg(lastLine.isEmpty() ? tr("no message") : lastLine));
        return;
    }
    if (exitCode != 0) {
        m_phase->setText(tr("the profiler failed (exit code %1)").arg(exitCode));
        QString wayOut = tr("see the Log tab, fix the cause and run it again");
        if (exitCode == 2)
            wayOut = tr("the profiler does not understand this app's command line: install the matching version");
        else if (exitCode == 4)
            wayOut = tr("a kernel gave wrong results and nothing was recorded: check the GPU and its driver, or "
                        "import nccl-tests logs instead");
        report(tr("Profiler Failed"),
               tr("shardscape-profile failed with exit code %1: %2 (%3)")
                   .arg(exitCode)
                   .arg(tail.isEmpty() ? tr("no message") : tail, wayOut));
        return;
    }
    m_phase->setText(tr("profile written"));
    // A fresh measurement the user asked for: use it.
    m_userDisabled = false;
    reload(false);
    if (usesProfile())
        emit profileChanged();
    if (m_state != ProfileState::Valid)
        report(tr("Unusable Profile"),
               tr("the profiler finished but %1 is not usable: %2 (run the profiler again)")
                   .arg(profileFile(), m_stateText));
}

void ProfilePanel::saveSettings(QSettings& settings) const
{
    settings.setValue(QStringLiteral("profile/dir"), m_explicitDir);
    settings.setValue(QStringLiteral("profile/useMeasured"), !m_userDisabled);
    settings.setValue(QStringLiteral("profile/quick"), m_quick->isChecked());
}

void ProfilePanel::restoreSettings(const QSettings& settings)
{
    m_explicitDir = settings.value(QStringLiteral("profile/dir")).toString();
    m_userDisabled = !settings.value(QStringLiteral("profile/useMeasured"), true).toBool();
    m_quick->setChecked(settings.value(QStringLiteral("profile/quick"), false).toBool());
    reload(true);
}

} // namespace shardscape::ui
