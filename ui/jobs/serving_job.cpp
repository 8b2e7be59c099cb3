// SPDX-License-Identifier: MIT
#include "jobs/serving_job.h"

#include "jobs/planner_job_start.h"

#include "shardscape/hardware/cluster.h"
#include "shardscape/model/model_source.h"
#include "shardscape/support/strings.h"

namespace shardscape::ui {

std::shared_ptr<const ServingPlanResult> runServingRequest(const PlanRequest& request, ProgressSink& progress,
                                                           std::stop_token stop)
{
    progress.progress("loading the model", 0, 1);
    const ModelGraph graph = loadModel(request.model_spec, BuildOptions {});
    const Cluster cluster = loadCluster(request.cluster_spec, request.nodes, request.gpus_per_node);
    progress.log(cat("Planning serving of ", graph.name, " (", request.config.input_len, " in, ",
                     request.config.output_len, " out) on ", cluster.nodes, " x ", cluster.gpus_per_node, " ",
                     cluster.device.name));
    return std::make_shared<const ServingPlanResult>(planServing(graph, cluster, request.config, progress, stop));
}

std::string nothingServesMessage(const ServingPlanResult& result, const PlanRequest& request)
{
    if (!result.top.empty() || result.cancelled)
        return {};
    const std::string reason
        = result.infeasible.empty() ? std::string("no deployment shape divides it") : result.infeasible.front().reason;
    const int gpus = request.nodes * request.gpus_per_node;
    return cat(result.model_name, " cannot be served on ", gpus, gpus == 1 ? " GPU: " : " GPUs: ", reason,
               " (add nodes, choose weights fp8 or int4, KV cache fp8, shorter inputs or outputs, a lower concurrency "
               "or looser latency bounds)");
}

ServingJob::ServingJob(QObject* parent)
    : QObject(parent)
    , m_tracker(this)
{
    qRegisterMetaType<std::shared_ptr<const ServingPlanResult>>();
}

ServingJob::~ServingJob() = default;

quint64 ServingJob::start(const PlanRequest& request)
{
    m_request = request;
    return startPlannerJob(
        this, m_tracker,
        [request](ProgressSink& progress, std::stop_token stop) { return runServingRequest(request, progress, stop); },
        &ServingJob::servingAvailable);
}

void ServingJob::cancel()
{
    m_tracker.cancel();
}

bool ServingJob::isRunning() const
{
    return m_tracker.isRunning();
}

} // namespace shardscape::ui
