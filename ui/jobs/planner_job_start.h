// SPDX-License-Identifier: MIT
#pragma once

#include "jobs/forwarding_progress.h"
#include "jobs/job_tracker.h"

#include <memory>
#include <stop_token>
#include <utility>

namespace shardscape::ui {

/**
 * Starts a planner on `tracker` for a job object with the planner jobs' signals (started, progressChanged, logLine,
 * failed, cancelled) and `available` for its answer. `work(ProgressSink&, std::stop_token)` runs off the GUI thread;
 * progress and log lines of a superseded request are dropped. Returns the request's generation.
 */
template<typename Job, typename Work, typename Value>
quint64 startPlannerJob(Job* job, JobTracker& tracker, Work work, void (Job::*available)(Value))
{
    // The generation is known only after start(); the handlers compare against the one stored here.
    auto generation = std::make_shared<quint64>(0);
    auto sink = std::make_shared<ForwardingProgress>(
        tracker.mailbox(),
        [job, &tracker, generation](const QString& phase, quint64 done, quint64 total) {
            if (*generation == tracker.generation())
                Q_EMIT job->progressChanged(phase, done, total);
        },
        [job, &tracker, generation](const QString& line) {
            if (*generation == tracker.generation())
                Q_EMIT job->logLine(line);
        });
    *generation = tracker.start([work = std::move(work), sink](std::stop_token stop) { return work(*sink, stop); },
                                [job, available](auto outcome) {
                                    if (outcome.cancelled)
                                        Q_EMIT job->cancelled();
                                    else if (!outcome.error.isEmpty())
                                        Q_EMIT job->failed(outcome.error);
                                    else
                                        Q_EMIT(job->*available)(std::move(*outcome.value));
                                });
    Q_EMIT job->started(*generation);
    return *generation;
}

} // namespace shardscape::ui
