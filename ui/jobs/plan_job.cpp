// SPDX-License-Identifier: MIT
#include "jobs/plan_job.h"

#include "jobs/planner_job_start.h"

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
    return startPlannerJob(
        this, m_tracker,
        [request](ProgressSink& progress, std::stop_token stop) { return runPlanRequest(request, progress, stop); },
        &PlanJob::planAvailable);
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
