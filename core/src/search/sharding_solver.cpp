// SPDX-License-Identifier: MIT
// Intra-op sharding: strategy names, options, and solveSharding, which builds the sharding model
// (sharding_model.h) and hands its problem to the DP or ILP solver.
#include "shardscape/search/sharding_solver.h"

#include "sharding_model.h"
#include "shardscape/support/error.h"
#include "shardscape/support/strings.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

namespace shardscape {

std::string_view strategyName(ShardStrategy strategy)
{
    switch (strategy) {
    case ShardStrategy::Replicate:
        return "replicate";
    case ShardStrategy::Batch:
        return "batch";
    case ShardStrategy::Column:
        return "column";
    case ShardStrategy::Row:
        return "row";
    case ShardStrategy::Heads:
        break;
    }
    return "heads";
}

std::optional<ShardStrategy> parseShardStrategy(std::string_view name)
{
    for (int i = 0; i < kShardStrategyCount; ++i)
        if (strategyName(static_cast<ShardStrategy>(i)) == name)
            return static_cast<ShardStrategy>(i);
    return std::nullopt;
}

void ShardingOptions::validate() const
{
    if (tp < 1 || tp > 4096)
        throw InputError(cat("sharding: tp must be in 1..4096, got ", tp));
    if (tp_per_node < 0)
        throw InputError(cat("sharding: tp_per_node must be >= 0, got ", tp_per_node));
    if (!(memory_limit_bytes > 0))
        throw InputError(cat("sharding: memory_limit_bytes must be > 0, got ", memory_limit_bytes),
                         "give the per-device memory in bytes (infinity for no limit)");
    if (solver != "dp" && solver != "ilp")
        throw InputError(cat("sharding: unknown solver '", solver, "'"), "use \"dp\" or \"ilp\"");
    if (!(time_limit_s > 0))
        throw InputError(cat("sharding: time_limit_s must be > 0, got ", time_limit_s));
    if (!std::isfinite(memory_granularity))
        throw InputError("sharding: memory_granularity must be finite");
    if (!(ignore_small_tensor_threshold >= 0) || !std::isfinite(ignore_small_tensor_threshold))
        throw InputError(
            cat("sharding: ignore_small_tensor_threshold must be >= 0, got ", ignore_small_tensor_threshold));
    if (!(param_memory_factor >= 0) || !std::isfinite(param_memory_factor))
        throw InputError(cat("sharding: param_memory_factor must be >= 0, got ", param_memory_factor));
}

int ShardingPlan::count(Collective kind, bool backward) const
{
    return static_cast<int>(std::count_if(collectives.begin(), collectives.end(), [&](const ShardingCollective& c) {
        return c.kind == kind && c.backward == backward;
    }));
}

const OpSharding* ShardingPlan::find(OpId op) const
{
    for (const auto& entry : ops)
        if (entry.op == op)
            return &entry;
    return nullptr;
}

using sharding_detail::ShardingModel;

ShardingPlan solveSharding(const ModelGraph& graph, const std::vector<OpId>& ops, const CostSource& costs,
                           const ShardingOptions& options, std::stop_token stop)
{
    options.validate();
    const auto start = std::chrono::steady_clock::now();
    ShardingPlan plan;
    plan.solver = options.solver;
    const ShardingModel model(graph, ops, costs, options);
    const auto finish = [&](ShardingPlan& p) -> ShardingPlan& {
        p.solve_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        return p;
    };
    if (!model.infeasibleReason().empty()) {
        plan.status = "infeasible";
        plan.reason = model.infeasibleReason();
        return finish(plan);
    }
    const ShardingProblem problem = model.problem();
    ShardingSolution solution = options.solver == "ilp" ? solveShardingIlp(problem, options.time_limit_s, stop)
                                                        : solveShardingDp(problem, options.max_states, stop);
    plan.status = solution.status;
    plan.states_explored = solution.states_explored;
    plan.warnings = std::move(solution.warnings);
    if (!solution.crowded_nodes.empty()) {
        std::vector<std::string> names;
        for (const int v : solution.crowded_nodes)
            names.push_back(model.nodeName(v));
        plan.warnings.push_back(cat("ops that widen the DP state most (constrain them to shrink it): ", join(names)));
    }
    const bool solved = solution.choice.size() == problem.nodes.size()
        && (solution.status == "optimal" || solution.status == "time limit, best found"
            || solution.status == "state cap, best found");
    if (!solved) {
        if (plan.status == "infeasible")
            plan.reason = cat("no sharding on tp=", options.tp, " fits ", humanBytes(options.memory_limit_bytes),
                              " per device: the ops need at least ", humanBytes(model.minimumMemory()),
                              " (every op at its smallest), and edges or rounding to ",
                              humanBytes(std::max(options.memory_granularity, 0.0)), " may need more");
        else
            plan.reason = cat("the ", options.solver, " solver stopped without a plan (", plan.status, ")");
        return finish(plan);
    }
    model.fill(plan, solution.choice);
    plan.feasible = true;
    return finish(plan);
}

} // namespace shardscape
