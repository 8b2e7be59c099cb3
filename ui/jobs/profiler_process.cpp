// SPDX-License-Identifier: MIT
#include "jobs/profiler_process.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QRegularExpression>
#include <QStandardPaths>

namespace shardscape::ui {

namespace {

constexpr qsizetype kTailLines = 40;
constexpr int kKillWaitMs = 3000;

const QString& profilerName()
{
    static const QString name = QStringLiteral("shardscape-profile");
    return name;
}

/** Splits complete lines off `buffer`, keeping a partial last line for the next read. */
QStringList takeLines(QByteArray& buffer)
{
    QStringList lines;
    qsizetype newline = 0;
    while ((newline = buffer.indexOf('\n')) >= 0) {
        lines << QString::fromUtf8(buffer.left(newline)).trimmed();
        buffer.remove(0, newline + 1);
    }
    return lines;
}

} // namespace

ProfilerProcess::ProfilerProcess(QObject* parent)
    : QObject(parent)
{
}

ProfilerProcess::~ProfilerProcess()
{
    if (m_process && m_process->state() != QProcess::NotRunning) {
        m_process->disconnect(this);
        m_process->kill();
        m_process->waitForFinished(kKillWaitMs);
    }
}

QString ProfilerProcess::findInstalled()
{
    // Next to the app first (an install's bin/, a build tree), so a PATH entry of another version does not win.
    const QString beside = QDir(QCoreApplication::applicationDirPath()).filePath(profilerName());
    const QFileInfo info(beside);
    if (info.isFile() && info.isExecutable())
        return info.absoluteFilePath();
#ifdef SHARDSCAPE_BUILT_PROFILER
    // The profiler this build made, in its own folder of the build tree.
    const QFileInfo built(QStringLiteral(SHARDSCAPE_BUILT_PROFILER));
    if (built.isFile() && built.isExecutable())
        return built.absoluteFilePath();
#endif
    return QStandardPaths::findExecutable(profilerName());
}

QString ProfilerProcess::executable() const
{
    return m_executable.isEmpty() ? findInstalled() : m_executable;
}

QStringList ProfilerProcess::arguments(const QString& outDir, bool quick)
{
    QStringList args {QStringLiteral("--progress"), QStringLiteral("--out"), outDir};
    if (quick)
        args << QStringLiteral("--quick");
    return args;
}

bool ProfilerProcess::start(const QString& outDir, bool quick, QString* error)
{
    if (isRunning()) {
        *error = tr("the profiler is already running (wait for it or cancel it)");
        return false;
    }
    const QString program = executable();
    if (program.isEmpty()) {
        *error = tr("shardscape-profile is not installed next to this app or on PATH (it is built only where CUDA is: "
                    "configure with -DSHARDSCAPE_WITH_CUDA=ON on a GPU machine, run it there and import or copy the "
                    "profile directory here)");
        return false;
    }
    delete m_process;
    m_process = new QProcess(this);
    m_tail.clear();
    m_stdoutBuffer.clear();
    m_stderrBuffer.clear();
    m_cancelling = false;
    connect(m_process, &QProcess::readyReadStandardOutput, this, &ProfilerProcess::readStdout);
    connect(m_process, &QProcess::readyReadStandardError, this, &ProfilerProcess::readStderr);
    connect(m_process, &QProcess::finished, this, [this](int exitCode, QProcess::ExitStatus status) {
        // Lines without a final newline are still lines.
        m_stdoutBuffer.append('\n');
        m_stderrBuffer.append('\n');
        readStdout();
        readStderr();
        if (m_cancelling)
            emit cancelled();
        else
            emit finished(status == QProcess::CrashExit ? -1 : exitCode, status == QProcess::CrashExit);
    });
    m_process->start(program, arguments(outDir, quick));
    if (!m_process->waitForStarted()) {
        *error = tr("cannot start %1: %2 (check that it is an executable shardscape-profile)")
                     .arg(QDir::toNativeSeparators(program), m_process->errorString());
        m_process->deleteLater();
        m_process = nullptr;
        return false;
    }
    return true;
}

void ProfilerProcess::cancel()
{
    if (!isRunning())
        return;
    m_cancelling = true;
    m_process->kill();
}

bool ProfilerProcess::isRunning() const
{
    return m_process && m_process->state() != QProcess::NotRunning;
}

void ProfilerProcess::readStdout()
{
    if (!m_process)
        return;
    m_stdoutBuffer += m_process->readAllStandardOutput();
    static const QRegularExpression progress(QStringLiteral("^progress (\\d+) (\\d+) ?(.*)$"));
    for (const QString& line : takeLines(m_stdoutBuffer)) {
        if (line.isEmpty())
            continue;
        const auto match = progress.match(line);
        if (match.hasMatch())
            emit progressChanged(match.captured(1).toInt(), match.captured(2).toInt(), match.captured(3));
        else
            emit outputLine(line);
    }
}

void ProfilerProcess::readStderr()
{
    if (!m_process)
        return;
    m_stderrBuffer += m_process->readAllStandardError();
    for (const QString& line : takeLines(m_stderrBuffer)) {
        if (line.isEmpty())
            continue;
        addTail(line);
        emit outputLine(line);
    }
}

void ProfilerProcess::addTail(const QString& line)
{
    m_tail << line;
    if (m_tail.size() > kTailLines)
        m_tail.removeFirst();
}

} // namespace shardscape::ui
