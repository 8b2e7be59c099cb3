// SPDX-License-Identifier: MIT
#include "jobs/plan_request.h"

#include "shardscape/hardware/cluster.h"
#include "shardscape/model/model_source.h"
#include "shardscape/plan/plan_reuse.h"
#include "shardscape/support/strings.h"
#include "shardscape/support/units.h"

namespace shardscape::ui {

double memoryLimitBytes(const PlannerConfig& config, const Cluster& cluster)
{
    return config.memory_constraint > 0 ? config.memory_constraint * units::kGB : cluster.device.memory_bytes;
}

std::shared_ptr<const PlanResult> runPlanRequest(const PlanRequest& request, ProgressSink& progress,
                                                 std::stop_token stop)
{
    progress.progress("loading the model", 0, 1);
    BuildOptions build;
    build.seq_len = request.seq_len;
    Problem problem;
    problem.graph = std::make_shared<const ModelGraph>(loadModel(request.model_spec, build));
    problem.cluster = loadCluster(request.cluster_spec, request.nodes, request.gpus_per_node);
    problem.global_batch = request.global_batch;
    progress.log(cat("Planning ", problem.graph->name, " (seq_len ", problem.graph->seq_len, ", global batch ",
                     request.global_batch, ") on ", problem.cluster.nodes, " x ", problem.cluster.gpus_per_node, " ",
                     problem.cluster.device.name));
    return std::make_shared<const PlanResult>(planOrReuse(problem, request.config, progress, stop));
}

std::string nothingFitsMessage(const PlanResult& result, const PlanRequest& request)
{
    if (!result.top.empty() || result.cancelled || !result.model)
        return {};
    const Cluster& cluster = result.model->cluster();
    const std::string where = cat(cluster.nodes, " x ", cluster.gpus_per_node, " ", cluster.device.name);
    if (!request.config.load_plan_path.empty()) {
        const std::string reason
            = result.infeasible.empty() ? "it cannot be evaluated" : result.infeasible.front().reason;
        return cat("the plan in ", request.config.load_plan_path, " does not run on ", where, ": ", reason,
                   " (plan again without loading a plan)");
    }
    if (!result.nothing_costed.empty())
        return cat(result.model->graph().name, " has no plan on ", where, ": ", result.nothing_costed);
    return cat(result.model->graph().name, " fits nowhere on ", where, ": ", whyNothingFits(result),
               " (add nodes, choose method zero3, recompute full, or a shorter sequence)");
}

} // namespace shardscape::ui
