// SPDX-License-Identifier: MIT
// What the planner plans with: the graph's tensor-parallel roles (the intra-op solver when it has none), the
// layers it partitions, the cost source, and the one-line summary of the selected configuration.
#include "shardscape/search/planner.h"

#include "shardscape/model/layer_construction.h"
#include "shardscape/search/tp_annotation.h"
#include "shardscape/support/error.h"
#include "shardscape/support/strings.h"

#include <algorithm>

namespace shardscape {

std::shared_ptr<const ModelGraph> withShardingRoles(std::shared_ptr<const ModelGraph> graph,
                                                    const std::vector<Layer>& layers, const Cluster& cluster,
                                                    const CostParams& params, const PlannerConfig& config,
                                                    std::string* note)
{
    if (hasTensorParallelRoles(*graph) || cluster.gpus_per_node < 2)
        return graph;
    ShardingOptions options;
    options.tp = 1;
    while (options.tp * 2 <= std::min(cluster.gpus_per_node, 8))
        options.tp *= 2;
    options.solver = config.solver;
    options.memory_granularity = config.memory_granularity;
    options.ignore_small_tensor_threshold = config.ignore_small_tensor_threshold;
    options.param_memory_factor = 2 + config.opt_resident_coef;
    if (!config.partition_constraints_path.empty())
        options.constraints = loadPartitionConstraints(config.partition_constraints_path);
    const auto source = makeDatasheetCostSource(cluster, params);
    TpAnnotationReport report;
    auto annotated
        = std::make_shared<const ModelGraph>(annotateTensorParallel(*graph, layers, *source, options, &report));
    if (note) {
        *note = cat("no tensor-parallel roles in the graph: the intra-op solver (", report.solver, ") split it at tp ",
                    report.tp, ": ", report.column, " column, ", report.row, " row, ", report.heads, " heads, ",
                    report.local, " local, ", report.replicated, " replicated ops");
        for (const auto& warning : report.warnings)
            *note += "; " + warning;
    }
    return annotated;
}

std::vector<Layer> planningLayers(const ModelGraph& graph, const PlannerConfig& config, std::string* note)
{
    if (config.layer_num > 0) {
        auto layers = constructLayers(graph, config.layer_num);
        if (note)
            *note = cat("automatic layer construction: ", layers.size(), " layers (layer_num ", config.layer_num, ")");
        return layers;
    }
    try {
        return layersByModule(graph);
    } catch (const InputError&) {
        const int count = static_cast<int>(std::min<std::size_t>(graph.ops().size(), 32));
        if (note)
            *note = cat("no repeated blocks in the module paths: automatic layer construction into ", count, " layers");
        return constructLayers(graph, count);
    }
}

ProfileRequest profileRequestOf(const PlannerConfig& config)
{
    ProfileRequest request;
    request.profile_dir = config.profile_dir;
    request.use_profile = config.use_profile;
    request.re_profile = config.re_profile;
    request.parallel_profile = config.parallel_profile;
    return request;
}

std::shared_ptr<const CostSource> plannerCostSource(const Cluster& cluster, CostParams& params,
                                                    const PlannerConfig& config,
                                                    const std::function<void(std::string)>& log)
{
    const CostSourceChoice choice = chooseCostSource(cluster, params, profileRequestOf(config));
    params.calibrated_memory_bytes = choice.calibrated_memory_bytes;
    for (const auto& note : choice.profile.notes)
        log("profile: " + note);
    return choice.source;
}

std::string selectedConfigLine(const Evaluation& e)
{
    const ParallelConfig& c = e.config;
    const int recomputation = c.recompute == RecomputeKind::None ? 0
        : c.recompute == RecomputeKind::Selective                ? 1
        : c.recompute == RecomputeKind::Full                     ? 2
                                                                 : 3;
    std::string layers;
    for (const int n : e.chunkLayers())
        layers += cat(layers.empty() ? "" : " ", n);
    return cat(
        "num_stages : ", c.pp, ", num_micro_batches : ", c.num_microbatches, ", batch_per_device : ", c.micro_batch,
        ", TP ", c.tp, ", DP ", c.dp, ", CP ", c.cp, ", EP ", c.ep, ", VPP ", c.vpp,
        ", recomputation : ", recomputation, ", distribute_param : ", c.zero_stage >= 3 ? "true" : "false",
        ", distribute_grad : ", c.zero_stage >= 2 ? "true" : "false",
        ", distribute_optimizer : ", c.zero_stage >= 1 ? "true" : "false",
        ", sequence_parallel : ", c.sequence_parallel ? "true" : "false",
        ", schedule : ", scheduleName(c.pp > 1 ? c.schedule : ScheduleKind::OneFOneB), ", stage_layers : [", layers,
        "]", c.framework != Framework::Generic ? cat(", framework : ", frameworkName(c.framework)) : std::string());
}

} // namespace shardscape
