// SPDX-License-Identifier: MIT
#pragma once

#include <QObject>
#include <QProcess>
#include <QStringList>

namespace shardscape::ui {

/**
 * shardscape-profile as a child process (never in-process: a driver crash must not take the app down). It runs with
 * --progress, whose stdout lines "progress <done> <total> <phase>" become progressChanged(); stderr lines become
 * outputLine() and the last ones are kept for the failure message. Exit codes (app/profile/errors.h): 0 written,
 * 1 other error, 2 bad arguments, 3 no CUDA device (or a CUDA/NCCL failure), 4 correctness check failed.
 */
class ProfilerProcess : public QObject
{
    Q_OBJECT
public:
    static constexpr int kExitNoDevice = 3;

    explicit ProfilerProcess(QObject* parent = nullptr);
    /** Kills a running profiler: the app never leaves one behind. */
    ~ProfilerProcess() override;

    /** shardscape-profile next to the running binary, else on PATH; empty when it is not installed. */
    static QString findInstalled();
    /** The executable start() runs: setExecutable()'s, else findInstalled(). */
    QString executable() const;
    /** Runs `path` instead of the installed profiler (tests; a profiler built elsewhere). Empty: the installed one. */
    void setExecutable(const QString& path) { m_executable = path; }

    /** The command line for an output directory: --progress --out DIR [--quick]. */
    static QStringList arguments(const QString& outDir, bool quick);
    /**
     * Starts the profiler writing `outDir`/profile.json. False with `error` set (the cause and a way out) when the
     * profiler is not installed, is already running or cannot be started.
     */
    bool start(const QString& outDir, bool quick, QString* error);
    /** Kills the running profiler; cancelled() follows once it is gone. */
    void cancel();
    bool isRunning() const;
    /** The last stderr lines (at most 40), newest last. */
    QString stderrTail() const { return m_tail.join(QLatin1Char('\n')); }

signals:
    void progressChanged(int done, int total, const QString& phase);
    /** One line of stderr (or a stdout line that is not a progress line). */
    void outputLine(const QString& line);
    /** The profiler exited by itself with `exitCode`; `crashed` when a signal ended it (exitCode is then -1). */
    void finished(int exitCode, bool crashed);
    /** cancel() took effect. */
    void cancelled();

private:
    void readStdout();
    void readStderr();
    void addTail(const QString& line);

    QProcess* m_process = nullptr;
    QString m_executable;
    QStringList m_tail;
    QByteArray m_stdoutBuffer;
    QByteArray m_stderrBuffer;
    bool m_cancelling = false;
};

} // namespace shardscape::ui
