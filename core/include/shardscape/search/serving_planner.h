// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/cost/serving.h"
#include "shardscape/search/planner.h"

#include <stop_token>
#include <string>
#include <vector>

namespace shardscape {

/** The serving deployments the planner found for is_train false. */
struct ServingPlanResult
{
    /** Feasible deployments, highest output tokens/s first (under the latency bounds), at most topk. */
    std::vector<ServingEstimate> top;
    /** The best infeasible ones (most concurrency first), each with its reason, for display. */
    std::vector<ServingEstimate> infeasible;
    SearchCounts counts;
    std::vector<std::string> explanation;
    std::vector<std::string> log; ///< MoAI-style lines; the selected one says "train : false"
    bool cancelled = false;
    std::string model_name;
    Cluster cluster; ///< the GPUs planned for (what an export names)
};

/**
 * Searches tp, pp, dp and (MoE) ep over every GPU of the cluster for serving `graph` with the request of
 * config (is_train false: input_len, output_len, concurrency, weight_dtype, kv_cache_dtype, latency bounds) and ranks
 * the deployments by output tokens per second. Synchronous and pure; returns within 100 ms of `stop`.
 */
ServingPlanResult planServing(const ModelGraph& graph, const Cluster& cluster, const PlannerConfig& config,
                              ProgressSink& progress, std::stop_token stop = {});

/** The MoAI one-liner of a serving deployment: "num_stages : 1, TP 8, DP 1, EP 1, train : false, ...". */
std::string servingConfigLine(const ServingEstimate& estimate);

} // namespace shardscape
