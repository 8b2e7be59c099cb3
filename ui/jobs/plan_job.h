// SPDX-License-Identifier: MIT
#pragma once

#include "jobs/job_tracker.h"
#include "jobs/plan_request.h"

#include <QObject>

#include <memory>

Q_DECLARE_METATYPE(std::shared_ptr<const shardscape::PlanResult>)

namespace shardscape::ui {

/**
 * Runs the planner off the GUI thread. start() supersedes any running plan (latest request wins: the older one is
 * stopped and its result, progress and log are dropped); cancel() stops the running one within 100 ms and
 * cancelled() tells when it did. Every signal is emitted on the GUI thread.
 */
class PlanJob : public QObject
{
    Q_OBJECT
public:
    explicit PlanJob(QObject* parent = nullptr);
    ~PlanJob() override;

    /** Starts planning `request`; returns its generation (increasing). */
    quint64 start(const PlanRequest& request);
    /** Asks the running plan to stop; cancelled() follows once it has. No effect when idle. */
    void cancel();
    bool isRunning() const;
    /** The request whose answer is (or was last) awaited. */
    const PlanRequest& request() const { return m_request; }
    quint64 generation() const { return m_tracker.generation(); }

signals:
    void started(quint64 generation);
    /** The plan for the latest request; `result->top` is empty when nothing fits (see nothingFitsMessage). */
    void planAvailable(std::shared_ptr<const shardscape::PlanResult> result);
    /** `phase` is "loading the model", "enumerating", "costing", "simulating" ...; done <= total. */
    void progressChanged(const QString& phase, quint64 done, quint64 total);
    void logLine(const QString& line);
    /** Bad input or an internal error: the cause and a way out. */
    void failed(const QString& message);
    void cancelled();

private:
    PlanRequest m_request;
    JobTracker m_tracker;
};

} // namespace shardscape::ui
