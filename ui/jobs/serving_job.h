// SPDX-License-Identifier: MIT
#pragma once

#include "jobs/job_tracker.h"
#include "jobs/plan_request.h"

#include "shardscape/search/serving_planner.h"

#include <QObject>

#include <memory>

Q_DECLARE_METATYPE(std::shared_ptr<const shardscape::ServingPlanResult>)

namespace shardscape::ui {

/** Loads the model and the cluster and runs planServing for a request whose config says is_train false. */
std::shared_ptr<const ServingPlanResult> runServingRequest(const PlanRequest& request, ProgressSink& progress,
                                                           std::stop_token stop);

/**
 * The cause and the way out when no deployment serves the request (the CLI's message): "llama3-405b cannot be served
 * on 8 h100-sxm: weights need 101.5 GB per GPU ... (add GPUs, ...)". Empty when one does.
 */
std::string nothingServesMessage(const ServingPlanResult& result, const PlanRequest& request);

/**
 * Runs the serving planner off the GUI thread, as PlanJob runs the training one: latest request wins, cancel() stops
 * it within 100 ms, every signal is emitted on the GUI thread.
 */
class ServingJob : public QObject
{
    Q_OBJECT
public:
    explicit ServingJob(QObject* parent = nullptr);
    ~ServingJob() override;

    quint64 start(const PlanRequest& request);
    void cancel();
    bool isRunning() const;
    const PlanRequest& request() const { return m_request; }

signals:
    void started(quint64 generation);
    /** The deployments for the latest request; `result->top` is empty when none serves it. */
    void servingAvailable(std::shared_ptr<const shardscape::ServingPlanResult> result);
    void progressChanged(const QString& phase, quint64 done, quint64 total);
    void logLine(const QString& line);
    void failed(const QString& message);
    void cancelled();

private:
    PlanRequest m_request;
    JobTracker m_tracker;
};

} // namespace shardscape::ui
