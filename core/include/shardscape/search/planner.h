// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/cost/cost_model.h"
#include "shardscape/profile/profile_cost_source.h"
#include "shardscape/search/planner_config.h"
#include "shardscape/support/progress.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <vector>

namespace shardscape {

/** What to plan: a model graph (built for the sequence length; any micro-batch), a cluster and a batch. */
struct Problem
{
    std::shared_ptr<const ModelGraph> graph;
    Cluster cluster;
    std::int64_t global_batch = 0; ///< sequences per step
};

/** Search statistics, for the log and the result JSON. */
struct SearchCounts
{
    std::uint64_t candidates_total = 0; ///< configurations enumerated
    std::uint64_t candidates_feasible = 0; ///< fitting in memory and passing the pruning rules
    std::uint64_t simulated = 0; ///< run through the event simulator
    double enumerate_s = 0; ///< seconds to build the candidates
    double cost_s = 0; ///< seconds to cost them
    double elapsed_s = 0; ///< seconds in all
};

/** Why the winner won: the runner-up (and the best of other shapes) with the difference explained. */
struct Explanation
{
    std::vector<std::string> lines;
};

struct PlanResult
{
    std::shared_ptr<const CostModel> model;
    /** Feasible, best first, at most topk: every plan whose OOM risk is "fits" (shortest step first), then the
        "tight" ones (shortest step first). */
    std::vector<Evaluation> top;
    /** The best infeasible configurations (lowest memory first), each with its reason, for display. */
    std::vector<Evaluation> infeasible;
    SearchCounts counts;
    Explanation explanation;
    std::vector<std::string> log; ///< MoAI-style log lines
    bool cancelled = false;
    /** When nothing fits: the smallest per-device peak memory any candidate needs, bytes (0 when none was costed). */
    double min_memory_needed = 0;
    /** The per-device memory limit the search applied, bytes (the --memory / memory_constraint value or the device's
        capacity; 0 when memory was not considered). Messages quote this one. */
    double memory_limit_bytes = 0;
    /** When no candidate could be costed at all (every one left the pipeline limits or does not split the model):
        why, with the counts and the way out; empty otherwise. */
    std::string nothing_costed;
    /** When nothing fits under PlannerConfig::locks: for each lock whose release finds a plan, a line saying so. */
    std::vector<std::string> lock_advice;
    /** What PlannerConfig::framework removed from the search (SearchSpace::framework_limits); empty for generic. */
    std::vector<std::string> framework_limits;
};

/**
 * Searches tp, pp, dp, cp, ep, vpp, micro-batch, micro-batches, ZeRO, recomputation and schedule within the
 * cluster (only what config.framework runs), partitions layers into stages by an exact min-max DP under per-stage
 * memory, costs candidates in parallel and simulates the best; plans whose OOM risk is "fits" rank before "tight" ones.
 * Synchronous and pure; deterministic whatever the thread count; returns within 100 ms of `stop` being requested (with
 * `cancelled` set). Throws InputError for bad inputs.
 */
PlanResult plan(const Problem& problem, const PlannerConfig& config, ProgressSink& progress, std::stop_token stop = {});

/**
 * Why a result has no plan, in one true sentence without the model and cluster (the caller names them): what stopped
 * every candidate before costing, or the least memory one needs over the limit the search applied, or, when the
 * closest candidate failed for another reason, that candidate and its reason. Empty when the result has a plan.
 */
std::string whyNothingFits(const PlanResult& result);

/**
 * The memory every GPU spends before the model gets any (CUDA context, NCCL and cuBLAS workspaces), bytes, when that
 * alone is over the limit the search applied: no layout can fit, only a higher limit helps. 0 otherwise.
 */
double runtimeOverLimit(const PlanResult& result);

/**
 * The layers the planner partitions: Alpa's automatic construction when config.layer_num > 0, else by module
 * path, falling back to min(ops, 32) automatic layers for graphs without repeated blocks. `note` says which.
 */
std::vector<Layer> planningLayers(const ModelGraph& graph, const PlannerConfig& config, std::string* note = nullptr);

/**
 * For a graph without tensor-parallel roles (an ONNX import, a hand-written native graph), the intra-op sharding
 * solver (config.solver: dp or ilp, honouring partition_constraints_path) picks each op's split at the node's
 * tensor-parallel width and the roles it finds are written into a copy; annotated graphs are returned as they are.
 */
std::shared_ptr<const ModelGraph> withShardingRoles(std::shared_ptr<const ModelGraph> graph,
                                                    const std::vector<Layer>& layers, const Cluster& cluster,
                                                    const CostParams& params, const PlannerConfig& config,
                                                    std::string* note = nullptr);

/** The profile options of a planner config (profile_dir, use_profile, re_profile, parallel_profile). */
ProfileRequest profileRequestOf(const PlannerConfig& config);

/**
 * The cost source the planner uses for `cluster`: the measured profile for its device (config.profile_dir, else the
 * per-device cache directory) over the datasheet; the decisions (corrupt or foreign profiles ignored, re_profile)
 * go to `log` one line each, prefixed "profile: ". Sets `params.calibrated_memory_bytes` from the profile's
 * calibration (0 without one).
 */
std::shared_ptr<const CostSource> plannerCostSource(const Cluster& cluster, CostParams& params,
                                                    const PlannerConfig& config,
                                                    const std::function<void(std::string)>& log);

/** The MoAI one-liner for a plan: "num_stages : 2, num_micro_batches : 4, batch_per_device : 1, TP 2, ...", ending
    with ", framework : NAME" when the plan is for a named framework. */
std::string selectedConfigLine(const Evaluation& evaluation);

} // namespace shardscape
