// SPDX-License-Identifier: MIT
// The Profile panel on the offscreen platform: a profile written by saveProfile is shown with its measured points and
// the datasheet's over the same shapes; a corrupt file is reported, not used; real nccl-tests logs are imported;
// a fake shardscape-profile drives the progress bar, reports "no CUDA device" and is cancelled; the main window
// plans with the measured profile (cost source profile:...) and with the datasheet when it is turned off.
#include "charts/profile_chart.h"
#include "jobs/plan_job.h"
#include "jobs/plan_request.h"
#include "jobs/profiler_process.h"
#include "widgets/main_window.h"
#include "widgets/profile_panel.h"

#include "shardscape/cost/cost_source.h"
#include "shardscape/hardware/cluster.h"
#include "shardscape/profile/nccl_tests_import.h"
#include "shardscape/profile/profile.h"

#include <QApplication>
#include <QChart>
#include <QCheckBox>
#include <QFile>
#include <QLabel>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QScatterSeries>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <QValueAxis>

#include <cmath>

using namespace shardscape;
using namespace shardscape::ui;

namespace {

constexpr int kPlanTimeoutMs = 120'000;
const QString kH100Log = QStringLiteral(SHARDSCAPE_SOURCE_DIR "/tests/data/nccl-tests/h100_2x8_all_reduce_perf.log");

bool near(double a, double b)
{
    return std::abs(a - b) <= 1e-9 * std::max({1.0, std::abs(a), std::abs(b)});
}

/** A small measured profile of an H100: three bf16 and one f16 GEMM, three all-reduce sizes on 8 ranks. */
Profile smallProfile()
{
    Profile p;
    p.created_utc = "2026-01-02T03:04:05Z";
    p.tool = "tst_profile_panel";
    p.device.name = "NVIDIA H100 80GB HBM3";
    const std::pair<std::int64_t, double> gemms[] = {{1024, 4.0e-5}, {4096, 1.9e-4}, {8192, 1.5e-3}};
    for (const auto& [m, t] : gemms)
        p.matmul.push_back({DType::BF16, m, m, m, t, "test"});
    p.matmul.push_back({DType::F16, 2048, 2048, 2048, 3.2e-5, "test"});
    const std::pair<double, double> sizes[] = {{1.048576e6, 3.0e-5}, {6.7108864e7, 3.5e-4}, {1.073741824e9, 3.6e-3}};
    for (const auto& [bytes, t] : sizes)
        p.collectives.push_back({"all_reduce", bytes, 8, 8, DType::BF16, t, 0, "test"});
    return p;
}

void writeText(const QString& path, const QByteArray& text)
{
    QFile file(path);
    QVERIFY(file.open(QIODevice::WriteOnly | QIODevice::Truncate));
    file.write(text);
}

/** A stand-in for shardscape-profile: records its arguments, prints progress lines, then runs `tail`. */
QString fakeProfiler(const QTemporaryDir& dir, const QByteArray& tail)
{
    const QString path = dir.filePath(QStringLiteral("fake-profile.sh"));
    writeText(path,
              "#!/bin/sh\necho \"$@\" > \"" + dir.filePath(QStringLiteral("args.txt")).toUtf8()
                  + "\"\necho 'progress 1 4 device'\necho 'progress 2 4 matmul bf16'\n" + tail);
    QFile::setPermissions(path, QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
    return path;
}

void closeMessageBoxes()
{
    for (QWidget* w : QApplication::topLevelWidgets())
        if (auto* box = qobject_cast<QMessageBox*>(w))
            box->close();
}

} // namespace

class TestProfilePanel : public QObject
{
    Q_OBJECT

private slots:
    void initTestCase()
    {
        QVERIFY(m_cache.isValid());
        // The per-device cache is this test's own, whatever the user measured.
        qputenv("XDG_CACHE_HOME", m_cache.path().toUtf8());
        QStandardPaths::setTestModeEnabled(true);
    }

    void cleanup() { closeMessageBoxes(); }

    void showsProfileAndChartsTheMeasuredPoints()
    {
        QTemporaryDir dir;
        const Profile profile = smallProfile();
        saveProfile(dir.filePath(QStringLiteral("profile.json")).toStdString(), profile);

        ProfilePanel panel;
        panel.setCluster(QStringLiteral("h100-sxm"), 1, 8);
        QCOMPARE(panel.state(), ProfileState::Missing); // nothing in this test's cache
        QSignalSpy changed(&panel, &ProfilePanel::profileChanged);
        panel.setProfileDir(dir.path());
        QCOMPARE(changed.count(), 1);
        QCOMPARE(panel.state(), ProfileState::Valid);
        QVERIFY2(panel.statusText().startsWith(QStringLiteral("valid: NVIDIA H100 80GB HBM3")),
                 qPrintable(panel.statusText()));
        QVERIFY(panel.usesProfile());
        QVERIFY(panel.useProfileBox()->isChecked());

        const auto datasheet = makeDatasheetCostSource(loadCluster("h100-sxm", 1, 8), {});
        // Matmul: one series per dtype in DType order (f16, bf16), x = GFLOP, y = TFLOP/s of each row; the datasheet
        // over the same shapes.
        ProfileChart* matmul = panel.matmulChart();
        QCOMPARE(matmul->measuredSeries().size(), 2);
        QCOMPARE(matmul->datasheetSeries().size(), 2);
        QCOMPARE(matmul->measuredSeries()[0]->name(), QStringLiteral("f16 measured"));
        QCOMPARE(matmul->measuredSeries()[1]->name(), QStringLiteral("bf16 measured"));
        QCOMPARE(matmul->datasheetSeries()[1]->name(), QStringLiteral("bf16 datasheet"));
        QCOMPARE(matmul->measuredSeries()[0]->count(), 1);
        const QList<QPointF> bf16 = matmul->measuredSeries()[1]->points();
        const QList<QPointF> bf16Sheet = matmul->datasheetSeries()[1]->points();
        QCOMPARE(bf16.size(), 3);
        QCOMPARE(bf16Sheet.size(), 3);
        for (int i = 0; i < 3; ++i) {
            const MatmulRow& row = profile.matmul[static_cast<std::size_t>(i)];
            QVERIFY(near(bf16[i].x(), row.flops() / 1e9));
            QVERIFY(near(bf16[i].y(), row.flops() / row.time_s / 1e12));
            QVERIFY(near(bf16Sheet[i].x(), row.flops() / 1e9));
            const double sheet = datasheet->matmulTime(static_cast<double>(row.m), static_cast<double>(row.n),
                                                       static_cast<double>(row.k), row.dtype);
            QVERIFY(near(bf16Sheet[i].y(), row.flops() / sheet / 1e12));
        }

        // Collectives: bus bandwidth = bytes / time / 1e9 * 2(n-1)/n by MB; the datasheet's collectiveTime likewise.
        ProfileChart* collectives = panel.collectiveChart();
        QCOMPARE(collectives->measuredSeries().size(), 1);
        const QList<QPointF> ar = collectives->measuredSeries()[0]->points();
        const QList<QPointF> arSheet = collectives->datasheetSeries()[0]->points();
        QCOMPARE(ar.size(), 3);
        QCOMPARE(arSheet.size(), 3);
        for (int i = 0; i < 3; ++i) {
            const CollectiveRow& row = profile.collectives[static_cast<std::size_t>(i)];
            QVERIFY(near(ar[i].x(), row.bytes / 1e6));
            QVERIFY(near(ar[i].y(), row.bytes / row.time_s / 1e9 * 2 * 7 / 8));
            const double sheet = datasheet->collectiveTime(Collective::AllReduce, row.bytes, {8, 8});
            QVERIFY(near(arSheet[i].y(), row.bytes / sheet / 1e9 * 2 * 7 / 8));
        }
        // The log axis spans the points in whole decades.
        QVERIFY(collectives->workAxis()->min() <= ar.front().x());
        QVERIFY(collectives->workAxis()->max() >= ar.back().x());

        // The planner gets the directory; turning the profile off asks it to ignore the profile, and re-plans.
        PlanRequest request;
        panel.applyTo(request);
        QCOMPARE(QString::fromStdString(request.config.profile_dir), dir.path());
        QVERIFY(request.config.use_profile);
        QVERIFY(!request.config.re_profile);
        panel.useProfileBox()->setChecked(false);
        QCOMPARE(changed.count(), 2);
        panel.applyTo(request);
        QVERIFY(!request.config.use_profile);
        QVERIFY(!request.config.re_profile);
        QVERIFY(!panel.usesProfile());
    }

    void corruptProfileIsReportedNotUsed()
    {
        QTemporaryDir dir;
        saveProfile(dir.filePath(QStringLiteral("profile.json")).toStdString(), smallProfile());
        // One digit changed after the checksum was written: an edit or a truncated copy.
        QFile file(dir.filePath(QStringLiteral("profile.json")));
        QVERIFY(file.open(QIODevice::ReadOnly));
        const QByteArray original = file.readAll();
        file.close();
        QByteArray bytes = original;
        bytes.replace("4096", "4097");
        QVERIFY(bytes != original);
        writeText(file.fileName(), bytes);

        ProfilePanel panel;
        panel.setCluster(QStringLiteral("h100-sxm"), 1, 8);
        QSignalSpy problems(&panel, &ProfilePanel::problemReported);
        panel.setProfileDir(dir.path());
        QCOMPARE(panel.state(), ProfileState::Corrupt);
        QVERIFY2(panel.statusText().contains(QStringLiteral("checksum mismatch")), qPrintable(panel.statusText()));
        QCOMPARE(problems.count(), 1);
        QVERIFY(problems.front().at(1).toString().contains(QStringLiteral("choose another profile")));
        QVERIFY(!panel.usesProfile());
        QVERIFY(!panel.useProfileBox()->isEnabled());
        QVERIFY(panel.matmulChart()->measuredSeries().isEmpty());
        QVERIFY(panel.collectiveChart()->measuredSeries().isEmpty());
        // Not a JSON document at all.
        writeText(file.fileName(), "{\"format\": \"shardscape.profile/1\", ");
        panel.refresh();
        QCOMPARE(panel.state(), ProfileState::Corrupt);
        // An import never overwrites it.
        QVERIFY(!panel.importLogs({kH100Log}));
        QCOMPARE(problems.count(), 2);
        QVERIFY(problems.back().at(1).toString().contains(QStringLiteral("not touching the profile")));
    }

    void importAddsCollectiveRows()
    {
        QTemporaryDir dir;
        ProfilePanel panel;
        panel.setCluster(QStringLiteral("h100-sxm"), 2, 8);
        panel.setProfileDir(dir.path());
        QCOMPARE(panel.state(), ProfileState::Missing);
        QSignalSpy changed(&panel, &ProfilePanel::profileChanged);
        QVERIFY(panel.importLogs({kH100Log}));
        QCOMPARE(changed.count(), 1);
        QCOMPARE(panel.state(), ProfileState::Valid);
        QVERIFY(panel.usesProfile());

        const Profile saved = loadProfile(dir.filePath(QStringLiteral("profile.json")).toStdString());
        QCOMPARE(saved.device.name, std::string("NVIDIA H100 80GB HBM3"));
        const auto runs = readNcclTestsFile(kH100Log.toStdString());
        QCOMPARE(runs.size(), std::size_t {1});
        QCOMPARE(saved.collectives.size(), runs.front().results.size());
        ProfileChart* chart = panel.collectiveChart();
        QCOMPARE(chart->measuredSeries().size(), 1);
        QCOMPARE(chart->measuredSeries()[0]->count(), static_cast<int>(saved.collectives.size()));
        QCOMPARE(chart->measuredSeries()[0]->name(), QStringLiteral("measured"));
        QVERIFY2(chart->chart()->title().contains(QStringLiteral("all_reduce 16 ranks (8 per node)")),
                 qPrintable(chart->chart()->title()));
        // 8 B .. 8.59 GB: the log axis steps by 1000 and spans every point.
        QCOMPARE(chart->workAxis()->base(), 1000.0);
        QVERIFY(chart->workAxis()->min() <= 8e-6 && chart->workAxis()->max() >= 8589.9);
        QVERIFY2(panel.logText().contains(QStringLiteral("31 added, 0 replaced")), qPrintable(panel.logText()));

        // The same log again replaces rather than duplicates.
        QVERIFY(panel.importLogs({kH100Log}));
        QVERIFY(panel.logText().contains(QStringLiteral("0 added, 31 replaced")));
        QCOMPARE(loadProfile(dir.filePath(QStringLiteral("profile.json")).toStdString()).collectives.size(),
                 saved.collectives.size());
        // A file that is not an nccl-tests log is refused with its name.
        QSignalSpy problems(&panel, &ProfilePanel::problemReported);
        QVERIFY(!panel.importLogs({QStringLiteral(SHARDSCAPE_SOURCE_DIR "/resources/models/gpt2.json")}));
        QCOMPARE(problems.count(), 1);
        QVERIFY(problems.front().at(1).toString().contains(QStringLiteral("gpt2.json")));
    }

    void builtProfilerIsFound()
    {
#ifdef SHARDSCAPE_TEST_BUILT_PROFILER
        // app/gui and app/profile are sibling folders of a build tree: Run Profiler must find it there.
        QVERIFY2(ProfilerProcess::findInstalled().endsWith(QStringLiteral("shardscape-profile")),
                 qPrintable(ProfilerProcess::findInstalled()));
#else
        QSKIP("shardscape-profile is not built here (no CUDA compiler)");
#endif
    }

    void emptyChartTicksReadDistinct()
    {
        // With nothing measured the value axis runs 0-1: its six ticks must not print "1, 1, 1, 0, 0".
        ProfileChart chart(ProfileChart::Kind::Collectives);
        const auto axes = chart.chart()->axes(Qt::Vertical);
        QCOMPARE(axes.size(), 1);
        const auto* axis = qobject_cast<const QValueAxis*>(axes.front());
        QVERIFY(axis);
        QStringList labels;
        for (int i = 0; i < axis->tickCount(); ++i)
            labels << QString::asprintf(axis->labelFormat().toLatin1().constData(),
                                        axis->min() + (axis->max() - axis->min()) * i / (axis->tickCount() - 1));
        labels.removeDuplicates();
        QCOMPARE(labels.size(), axis->tickCount());
    }

    void importTrainingLogsCalibratesTheProfile()
    {
        // A real Megatron-LM log of an exported plan run on an H200, its launch script beside it.
        const QString log
            = QStringLiteral(SHARDSCAPE_SOURCE_DIR "/tests/data/training_logs/h200-megatron/a-mb2-s2k.log");
        QTemporaryDir dir;
        ProfilePanel panel;
        panel.setCluster(QStringLiteral("h200"), 1, 1);
        panel.setProfileDir(dir.path());
        QSignalSpy changed(&panel, &ProfilePanel::profileChanged);
        QVERIFY(panel.importTrainingLogs({log}));
        QCOMPARE(changed.count(), 1);
        QCOMPARE(panel.state(), ProfileState::Valid);
        const Profile saved = loadProfile(dir.filePath(QStringLiteral("profile.json")).toStdString());
        QVERIFY(saved.calibration.has_value());
        const CalibrationRun& run = saved.calibration->runs.at(0);
        QVERIFY(std::fabs(run.calibrated_step_s / run.measured_step_s - 1) < 0.03);
        QVERIFY2(panel.logText().contains(QStringLiteral("a-mb2-s2k.log (megatron")), qPrintable(panel.logText()));
        QVERIFY(panel.logText().contains(QStringLiteral("calibration: time x")));
        QVERIFY(panel.importTrainingLogsButton()->toolTip().contains(QStringLiteral("job config")));
        QVERIFY2(panel.calibrationText().startsWith(QStringLiteral("on 1 training run: time x")),
                 qPrintable(panel.calibrationText()));

        // Not a training log: refused with its name, the profile untouched.
        QSignalSpy problems(&panel, &ProfilePanel::problemReported);
        QVERIFY(!panel.importTrainingLogs({QStringLiteral(SHARDSCAPE_SOURCE_DIR "/resources/models/gpt2.json")}));
        QCOMPARE(problems.count(), 1);
        QVERIFY(problems.front().at(1).toString().contains(QStringLiteral("gpt2.json")));
        QCOMPARE(loadProfile(dir.filePath(QStringLiteral("profile.json")).toStdString()).calibration->runs.size(),
                 std::size_t {1});
    }

    void profilerWithoutDeviceReportsIt()
    {
        QTemporaryDir dir;
        ProfilePanel panel;
        panel.setCluster(QStringLiteral("h100-sxm"), 1, 8);
        panel.setProfileDir(dir.filePath(QStringLiteral("out")));
        panel.quickBox()->setChecked(true);
        panel.profiler()->setExecutable(fakeProfiler(
            dir,
            "echo 'shardscape-profile: no CUDA device: cudaGetDeviceCount: no CUDA-capable device is detected' "
            ">&2\nexit 3\n"));
        QSignalSpy progress(panel.profiler(), &ProfilerProcess::progressChanged);
        QSignalSpy problems(&panel, &ProfilePanel::problemReported);
        QSignalSpy changed(&panel, &ProfilePanel::profileChanged);
        QVERIFY(panel.runProfiler());
        QVERIFY(problems.wait(10'000));

        QCOMPARE(progress.count(), 2);
        QCOMPARE(progress.back().at(0).toInt(), 2);
        QCOMPARE(progress.back().at(1).toInt(), 4);
        QCOMPARE(progress.back().at(2).toString(), QStringLiteral("matmul bf16"));
        QCOMPARE(panel.progressBar()->maximum(), 4);
        QCOMPARE(panel.progressBar()->value(), 2);
        QCOMPARE(problems.front().at(0).toString(), QStringLiteral("No CUDA Device"));
        const QString message = problems.front().at(1).toString();
        QVERIFY2(message.contains(QStringLiteral("no CUDA device")) && message.contains(QStringLiteral("GPU machine"))
                     && message.contains(QStringLiteral("no CUDA-capable device is detected")),
                 qPrintable(message));
        QCOMPARE(panel.phaseLabel()->text(), QStringLiteral("no CUDA device"));
        QVERIFY(panel.logText().contains(QStringLiteral("no CUDA-capable device is detected")));
        QCOMPARE(changed.count(), 0);

        QFile args(dir.filePath(QStringLiteral("args.txt")));
        QVERIFY(args.open(QIODevice::ReadOnly));
        QCOMPARE(QString::fromUtf8(args.readAll()).trimmed(),
                 QStringLiteral("--progress --out %1 --quick").arg(dir.filePath(QStringLiteral("out"))));
    }

    void profilerIsCancelledAndFailuresNamed()
    {
        QTemporaryDir dir;
        ProfilePanel panel;
        panel.setCluster(QStringLiteral("h100-sxm"), 1, 8);
        panel.setProfileDir(dir.path());
        panel.profiler()->setExecutable(fakeProfiler(dir, "exec sleep 60\n"));
        QSignalSpy progress(panel.profiler(), &ProfilerProcess::progressChanged);
        QSignalSpy cancelled(panel.profiler(), &ProfilerProcess::cancelled);
        QVERIFY(panel.runProfiler());
        QTRY_COMPARE_WITH_TIMEOUT(progress.count(), 2, 10'000);
        QVERIFY(panel.profiler()->isRunning());
        panel.cancelProfiler();
        QVERIFY(cancelled.wait(5'000));
        QVERIFY(!panel.profiler()->isRunning());

        // A correctness failure: the exit code and the stderr tail are in the message.
        panel.profiler()->setExecutable(fakeProfiler(
            dir, "echo 'shardscape-profile: correctness check failed, nothing recorded: gemm' >&2\nexit 4\n"));
        QSignalSpy problems(&panel, &ProfilePanel::problemReported);
        QVERIFY(panel.runProfiler());
        QVERIFY(problems.wait(10'000));
        QVERIFY(problems.front().at(1).toString().contains(QStringLiteral("exit code 4")));
        QVERIFY(problems.front().at(1).toString().contains(QStringLiteral("correctness check failed")));

        // Not there at all.
        panel.profiler()->setExecutable(dir.filePath(QStringLiteral("no-such-profiler")));
        QVERIFY(!panel.runProfiler());
        QCOMPARE(problems.count(), 2);
        QVERIFY(problems.back().at(1).toString().contains(QStringLiteral("cannot start")));
    }

    void plannerUsesTheMeasuredProfile()
    {
        QTemporaryDir dir;
        saveProfile(dir.filePath(QStringLiteral("profile.json")).toStdString(), smallProfile());
        MainWindowOptions options;
        options.use_settings = false;
        options.plan_on_start = false;
        options.model = QStringLiteral("gpt2");
        options.cluster = QStringLiteral("h100-sxm");
        options.nodes = 1;
        options.gpus_per_node = 8;
        MainWindow window(options);
        QSignalSpy shown(&window, &MainWindow::planShown);
        // Choosing the profile re-plans with it.
        window.profilePanel()->setProfileDir(dir.path());
        QVERIFY2(shown.wait(kPlanTimeoutMs), qPrintable(window.lastError()));
        const auto& result = window.currentResult();
        QVERIFY(!result->top.empty());
        const std::string measured = "profile:nvidia-h100-80gb-hbm3 (matmul, collectives)";
        QVERIFY2(result->top.front().cost_source.starts_with(measured), result->top.front().cost_source.c_str());
        QVERIFY(window.currentRequest().config.profile_dir == dir.path().toStdString());
        // Turning it off re-plans on the datasheet.
        window.profilePanel()->useProfileBox()->setChecked(false);
        QVERIFY2(shown.wait(kPlanTimeoutMs), qPrintable(window.lastError()));
        QCOMPARE(window.currentResult()->top.front().cost_source, std::string("datasheet"));
    }

private:
    QTemporaryDir m_cache;
};

QTEST_MAIN(TestProfilePanel)
#include "tst_profile_panel.moc"
