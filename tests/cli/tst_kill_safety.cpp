// SPDX-License-Identifier: MIT
// kill -9 at random moments of every writer a user can start: `plan --save-plan`, `export --out` and the desktop
// app's --export-plan. After each kill the output file must be absent or complete (the old file or the new one), and
// once a run completes no temporary may be left in the folder. Real timing, many repetitions, no test hooks in the
// programs. SHARDSCAPE_KILL_SEED=<n> replays one run's kill moments.
#include "shardscape/plan/plan_file.h"
#include "shardscape/support/error.h"

#include <QDir>
#include <QElapsedTimer>
#include <QProcess>
#include <QRandomGenerator>
#include <QSet>
#include <QTemporaryDir>
#include <QTest>

#include <nlohmann/json.hpp>

#include <fstream>
#include <functional>

namespace {

using Validate = std::function<QString(const QString& path)>; // empty when the file is whole

QString validPlanFile(const QString& path)
{
    try {
        shardscape::loadPlanFile(path.toStdString());
        return {};
    } catch (const shardscape::InputError& error) {
        return QString::fromStdString(error.message());
    }
}

QString validChromeTrace(const QString& path)
{
    std::ifstream in(path.toStdString(), std::ios::binary);
    const auto doc = nlohmann::json::parse(in, nullptr, false);
    if (doc.is_discarded())
        return QStringLiteral("not JSON (a partial write?)");
    if (!doc.contains("traceEvents") || !doc["traceEvents"].is_array() || doc["traceEvents"].empty())
        return QStringLiteral("no traceEvents");
    return {};
}

/** What the kills did: how many landed, and how many left a writer's temporary behind (killed mid-write). */
struct KillStats
{
    int runs = 0;
    int killed = 0;
    int finished = 0;
    int absent = 0;
    int temps_seen = 0; ///< distinct temporaries found after a kill
};

class Writer
{
public:
    /** `outputs`: the files besides `target` that a completed run leaves in the target's folder. */
    Writer(QString program, QStringList args, QString target, Validate validate, QStringList outputs = {})
        : m_program(std::move(program))
        , m_args(std::move(args))
        , m_target(std::move(target))
        , m_validate(std::move(validate))
        , m_outputs(std::move(outputs))
    {
        m_outputs << QFileInfo(m_target).fileName();
    }

    /** Runs to completion; returns the wall time in ms. Fails the test when it does not exit 0 or the file is bad. */
    qint64 runToEnd() const
    {
        QProcess process;
        prepare(process);
        QElapsedTimer timer;
        timer.start();
        process.start(m_program, m_args);
        if (!process.waitForFinished(120'000) || process.exitStatus() != QProcess::NormalExit
            || process.exitCode() != 0) {
            qWarning().noquote() << process.readAllStandardError();
            return -1;
        }
        return timer.elapsed();
    }

    /**
     * `runs` times: start the writer, SIGKILL it after a random delay in [0, 1.15 x `fullMs`] (half of the runs
     * in the last 30% of the run, where the write happens), then check the target. Every fourth run starts with no
     * target, the others with the previous run's file in place.
     */
    KillStats killRepeatedly(int runs, qint64 fullMs, QRandomGenerator& random) const
    {
        KillStats stats;
        QSet<QString> temps;
        const QDir folder = QFileInfo(m_target).dir();
        for (int i = 0; i < runs; ++i) {
            if (i % 4 == 0)
                QFile::remove(m_target);
            const qint64 from = i % 2 == 0 ? 0 : fullMs * 7 / 10;
            const qint64 delayMs = from + random.bounded(fullMs * 115 / 100 - from + 1);
            QProcess process;
            prepare(process);
            process.start(m_program, m_args);
            if (!process.waitForStarted(10'000)) {
                QTest::qFail(qPrintable(QStringLiteral("cannot start %1").arg(m_program)), __FILE__, __LINE__);
                return stats;
            }
            if (!process.waitForFinished(static_cast<int>(delayMs))) {
                process.kill(); // SIGKILL on Unix
                process.waitForFinished(10'000);
            }
            ++stats.runs;
            if (process.exitStatus() == QProcess::CrashExit)
                ++stats.killed;
            else
                ++stats.finished;
            if (!QFileInfo::exists(m_target)) {
                ++stats.absent;
            } else if (const QString problem = m_validate(m_target); !problem.isEmpty()) {
                QTest::qFail(qPrintable(QStringLiteral("run %1, killed after %2 ms: %3 is damaged: %4")
                                            .arg(i)
                                            .arg(delayMs)
                                            .arg(m_target, problem)),
                             __FILE__, __LINE__);
                return stats;
            }
            for (const QString& name : leftovers(folder))
                temps.insert(name);
        }
        stats.temps_seen = static_cast<int>(temps.size());
        return stats;
    }

    /** Everything in the folder but the outputs: writers' temporaries. */
    QStringList leftovers(const QDir& folder) const
    {
        QStringList names
            = folder.entryList(QDir::Files | QDir::Hidden | QDir::System | QDir::NoDotAndDotDot, QDir::Name);
        for (const QString& output : m_outputs)
            names.removeAll(output);
        return names;
    }

private:
    /** Runs in the target's folder (plan drops its dump there), the desktop app without a display. */
    void prepare(QProcess& process) const
    {
        process.setWorkingDirectory(QFileInfo(m_target).path());
        QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
        environment.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
        process.setProcessEnvironment(environment);
    }

    QString m_program;
    QStringList m_args;
    QString m_target;
    Validate m_validate;
    QStringList m_outputs;
};

quint32 seed()
{
    bool ok = false;
    const quint32 fromEnv = qEnvironmentVariable("SHARDSCAPE_KILL_SEED").toUInt(&ok);
    return ok ? fromEnv : QRandomGenerator::global()->generate();
}

} // namespace

class TestKillSafety : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase()
    {
        m_seed = seed();
        qInfo("SHARDSCAPE_KILL_SEED=%u replays these kill moments", m_seed);
    }

    void cliSavePlan()
    {
        QTemporaryDir dir;
        const QString target = dir.filePath(QStringLiteral("plan.json"));
        // plan also writes the selected-config dump into its working directory (the target's folder).
        const Writer writer(QStringLiteral(SHARDSCAPE_CLI),
                            {QStringLiteral("plan"), QStringLiteral("--model"), QStringLiteral("llama2-7b"),
                             QStringLiteral("--cluster"), QStringLiteral("h100-sxm"), QStringLiteral("--save-plan"),
                             target},
                            target, validPlanFile, {QStringLiteral("advanced_parallelization_selected_config.dump")});
        runKills(writer, dir, 30);
    }

    void cliExportTrace()
    {
        QTemporaryDir dir;
        const QString plan = dir.filePath(QStringLiteral("source.plan.json"));
        // 512 micro-batches through 8 stages: a trace of ~2 MB, so that many kills land inside the write.
        QProcess simulate;
        simulate.start(QStringLiteral(SHARDSCAPE_CLI),
                       {QStringLiteral("simulate"), QStringLiteral("--model"), QStringLiteral("llama2-7b"),
                        QStringLiteral("--cluster"), QStringLiteral("h100-sxm"), QStringLiteral("--tp"),
                        QStringLiteral("1"), QStringLiteral("--pp"), QStringLiteral("8"), QStringLiteral("--dp"),
                        QStringLiteral("1"), QStringLiteral("--micro-batch"), QStringLiteral("1"),
                        QStringLiteral("--global-batch"), QStringLiteral("512"), QStringLiteral("--save-plan"), plan});
        QVERIFY(simulate.waitForFinished(60'000));
        QVERIFY2(simulate.exitCode() == 0, simulate.readAllStandardError().constData());

        QTemporaryDir out;
        const QString target = out.filePath(QStringLiteral("trace.json"));
        const Writer writer(QStringLiteral(SHARDSCAPE_CLI),
                            {QStringLiteral("export"), QStringLiteral("--plan"), plan, QStringLiteral("--format"),
                             QStringLiteral("chrome-trace"), QStringLiteral("--out"), target},
                            target, validChromeTrace);
        runKills(writer, out, 30);
    }

    void guiExportPlan()
    {
        const QString gui = QStringLiteral(SHARDSCAPE_GUI);
        if (gui.isEmpty())
            QSKIP("the desktop app is not built (SHARDSCAPE_BUILD_GUI=OFF)");
        QTemporaryDir dir;
        const QString target = dir.filePath(QStringLiteral("gui.plan.json"));
        const Writer writer(gui, {QStringLiteral("--export-plan"), target}, target, validPlanFile);
        runKills(writer, dir, 14);
    }

private:
    void runKills(const Writer& writer, const QTemporaryDir& dir, int runs)
    {
        QVERIFY(dir.isValid());
        const QDir folder(dir.path());
        // The faster of two runs: the first may pay for cold caches, and too long a span would kill too few runs.
        const qint64 firstMs = writer.runToEnd();
        const qint64 secondMs = writer.runToEnd();
        QVERIFY2(firstMs >= 0 && secondMs >= 0, "the writer fails without being killed");
        const qint64 fullMs = std::min(firstMs, secondMs);
        QRandomGenerator random(m_seed);
        const KillStats stats = writer.killRepeatedly(runs, std::max<qint64>(fullMs, 1), random);
        if (QTest::currentTestFailed())
            return;
        qInfo("%d runs of ~%lld ms: %d killed, %d finished first, target absent after %d, writer temporaries seen "
              "after %d (killed mid-write)",
              stats.runs, static_cast<long long>(fullMs), stats.killed, stats.finished, stats.absent, stats.temps_seen);
        QVERIFY2(stats.killed > 0, "no run was killed: the kill moments never fell inside a run");

        // A completed run replaces the file and removes the temporaries the killed runs left.
        QVERIFY(writer.runToEnd() >= 0);
        const QStringList left = writer.leftovers(folder);
        QVERIFY2(left.isEmpty(), qPrintable(QStringLiteral("left behind: ") + left.join(QStringLiteral(", "))));
    }

    quint32 m_seed = 0;
};

QTEST_GUILESS_MAIN(TestKillSafety)
#include "tst_kill_safety.moc"
