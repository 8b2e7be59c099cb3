// SPDX-License-Identifier: MIT
#include "jobs/plan_job.h"

#include "jobs/forwarding_progress.h"

namespace shardscape::ui {

PlanJob::PlanJob(QObject* parent)
    : QObject(parent)
    , m_tracker(this)
{
    qRegisterMetaType<std::shared_ptr<const PlanResult>>();
}

PlanJob::~PlanJob() = default;

quint64 PlanJob::start(const PlanRequest& request)
{
    m_request = request;
    // The generation is known only after start(); the handlers compare against the one stored here.
    auto generation = std::make_shared<quint64>(0);
    auto sink = std::make_shared<ForwardingProgress>(
        m_tracker.mailbox(),
        [this, generation](const QString& phase, quint64 done, quint64 total) {
            if (*generation == m_tracker.generation())
                emit progressChanged(phase, done, total);
        },
        [this, generation](const QString& line) {
            if (*generation == m_tracker.generation())
                emit logLine(line);
        });
    *generation
        = m_tracker.start([request, sink](std::stop_token stop) { return runPlanRequest(request, *sink, stop); },
                          [this](JobOutcome<std::shared_ptr<const PlanResult>> outcome) {
                              if (outcome.cancelled)
                                  emit cancelled();
                              else if (!outcome.error.isEmpty())
                                  emit failed(outcome.error);
                              else
                                  emit planAvailable(std::move(*outcome.value));
                          });
    emit started(*generation);
    return *generation;
}

void PlanJob::cancel()
{
    m_tracker.cancel();
}

bool PlanJob::isRunning() const
{
    return m_tracker.isRunning();
}

} // namespace shardscape::ui
