// SPDX-License-Identifier: MIT
#include "shardscape/plan/plan_reuse.h"

#include "shardscape/plan/plan_file.h"
#include "shardscape/support/error.h"
#include "shardscape/support/strings.h"
#include "shardscape/support/units.h"

#include <chrono>

namespace shardscape {

PlanResult reusePlan(const Problem& problem, const PlannerConfig& config, ProgressSink& progress)
{
    const auto start = std::chrono::steady_clock::now();
    config.validate();
    if (!problem.graph)
        throw InputError("no model to plan", "load a model first");
    const LoadedPlan loaded = loadPlanFile(config.load_plan_path);

    Cluster cluster = problem.cluster;
    if (config.mesh_row > 0)
        cluster.nodes = config.mesh_row;
    if (config.mesh_col > 0)
        cluster.gpus_per_node = config.mesh_col;
    CostParams params;
    params.transient_mem_coef = config.transient_mem_coef;
    params.opt_resident_coef = config.opt_resident_coef;
    params.opt_transient_coef = config.opt_transient_coef;
    PlanResult result;
    std::vector<Layer> layers = planningLayers(*problem.graph, config);
    const auto graph = withShardingRoles(problem.graph, layers, cluster, params, config);
    const auto log = [&](std::string line) {
        progress.log(line);
        result.log.push_back(std::move(line));
    };
    const auto source = plannerCostSource(cluster, params, config, log);
    auto model = std::make_shared<const CostModel>(graph, cluster, params, source, std::move(layers));
    result.model = model;
    log(cat("reusing the plan in ", config.load_plan_path, " (", loaded.config.describe(), ")"));
    const std::int64_t globalBatch = problem.global_batch > 0 ? problem.global_batch : loaded.global_batch;
    for (const auto& warning : planStalenessWarnings(loaded, *model, globalBatch, problem.graph->seq_len))
        log("warning: " + warning);

    ParallelConfig c = loaded.config;
    // Pin the split the plan was evaluated with, when it still fits this model's layers.
    if (c.stage_layers.empty() && loaded.num_layers == static_cast<int>(model->layers().size()))
        c.stage_layers = loaded.resolved_stage_layers;
    if (globalBatch != c.globalBatch() && globalBatch % (static_cast<std::int64_t>(c.dp) * c.micro_batch) == 0)
        c.num_microbatches = static_cast<int>(globalBatch / (static_cast<std::int64_t>(c.dp) * c.micro_batch));
    // A named framework in the config (--framework) overrides the plan's; generic keeps what the plan was made for.
    if (config.framework != Framework::Generic && config.framework != c.framework) {
        log(cat("warning: plan was made for ", frameworkName(c.framework), ", now ", frameworkName(config.framework),
                ": re-simulating it with ", frameworkName(config.framework), "'s memory terms and limits"));
        c.framework = config.framework;
    }

    Workload workload;
    workload.global_batch = globalBatch;
    workload.seq_len = problem.graph->seq_len;
    workload.memory_limit_bytes = !config.consider_mem ? 1e30
        : config.memory_constraint > 0                 ? config.memory_constraint * units::kGB
                                                       : cluster.device.memory_bytes;
    workload.min_memory_headroom_bytes = config.min_memory_headroom < 0 ? -1 : config.min_memory_headroom * units::kGB;
    Evaluation e = model->evaluate(c, workload);
    result.counts.candidates_total = 1;
    result.counts.simulated = e.stages.empty() ? 0 : 1;
    if (e.feasible) {
        result.counts.candidates_feasible = 1;
        result.explanation.lines.push_back(cat("reused plan: ", c.describe(), ": ", fixed(e.step_time, 3),
                                               " s per step now, ", fixed(loaded.metrics.step_time_s, 3),
                                               " s when it was made"));
        log("selected configuration : " + selectedConfigLine(e));
        result.top.push_back(std::move(e));
    } else {
        log(cat("the reused plan does not run here: ", e.reason));
        result.min_memory_needed = e.stages.empty() ? 0 : e.peakMemory();
        result.infeasible.push_back(std::move(e));
    }
    result.counts.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
}

PlanResult planOrReuse(const Problem& problem, const PlannerConfig& config, ProgressSink& progress,
                       std::stop_token stop)
{
    return config.load_plan_path.empty() ? plan(problem, config, progress, stop) : reusePlan(problem, config, progress);
}

} // namespace shardscape
