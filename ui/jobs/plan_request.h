// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/search/planner.h"

#include <cstdint>
#include <memory>
#include <stop_token>
#include <string>

namespace shardscape::ui {

/** Everything the window's panels say about one planning run: plain data, copied into the job. */
struct PlanRequest
{
    std::string model_spec = "llama2-7b"; ///< preset name, HF config.json, native graph .json or .onnx
    std::int64_t seq_len = 0; ///< tokens per sequence; 0 = the model's default
    std::string cluster_spec = "h100-sxm"; ///< device preset or cluster .json
    int nodes = 1;
    int gpus_per_node = 8;
    std::int64_t global_batch = 256; ///< sequences per step
    PlannerConfig config;
};

/** Per-device memory limit the planner applies for a request, bytes (what its evaluations were checked against). */
double memoryLimitBytes(const PlannerConfig& config, const Cluster& cluster);

/** Loads the model and the cluster and runs planOrReuse. Synchronous; throws InputError for bad input. */
std::shared_ptr<const PlanResult> runPlanRequest(const PlanRequest& request, ProgressSink& progress,
                                                 std::stop_token stop);

/**
 * The cause and the way out when nothing fits (the CLI's message): "llama3-405b fits nowhere on 1 x 8 h100-sxm: the
 * best configuration needs 412.3 GB per GPU, over the 80.0 GB limit (add GPUs, ...)". Empty when a plan fits.
 */
std::string nothingFitsMessage(const PlanResult& result, const PlanRequest& request);

} // namespace shardscape::ui
