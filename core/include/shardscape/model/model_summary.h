// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/model/layers.h"
#include "shardscape/model/model_graph.h"

#include <nlohmann/json_fwd.hpp>
#include <vector>

namespace shardscape {

/** What `inspect` shows: totals and one row per layer, per token where that makes sense. */
struct ModelSummary
{
    std::string name;
    std::int64_t batch = 1;
    std::int64_t seq_len = 0;
    double params = 0; ///< unique parameters
    double active_params = 0; ///< per token (MoE: top_k of num_experts)
    double flops_per_token_fwd = 0; ///< forward FLOPs / (batch x seq_len)
    double activation_bytes = 0; ///< all layers, one micro-batch, no parallelism, no recomputation
    std::size_t num_ops = 0;
    std::vector<Layer> layers;
};

ModelSummary summarizeModel(const ModelGraph& graph);

/** The `inspect --json` document (DESIGN.md: params, active_params, flops_per_token_fwd, layers[]). */
nlohmann::json toJson(const ModelSummary& summary, const ModelGraph& graph);

} // namespace shardscape
