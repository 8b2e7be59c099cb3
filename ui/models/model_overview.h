// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/model/layers.h"
#include "shardscape/model/model_graph.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace shardscape::ui {

/** One row of the layer tree: a pipeline layer, or a module inside it. Per-token numbers are forward only. */
struct LayerNode
{
    std::string name; ///< module path, e.g. "model.layers.7" or "model.layers.7.mlp"
    std::string kind; ///< "embedding", "block", "head", "other"; "module" for children
    double params = 0; ///< unique parameter elements first used here
    double flops_per_token = 0; ///< forward FLOPs / (batch x seq_len)
    double activation_bytes = 0; ///< kept for backward, one sequence, no parallelism, no recomputation
    std::size_t ops = 0;
    /** Routed experts of an MoE layer's expert module: how many, and how many each token visits (0 elsewhere). The
        parameters are every expert's; the FLOPs per token are the visited ones'. */
    int experts = 0;
    int experts_per_token = 0;
    std::vector<LayerNode> children; ///< empty for modules and for layers with a single module
};

/** What the model panel shows: the loaded graph with its planning layers and their modules. */
struct ModelOverview
{
    std::string spec; ///< what was loaded (preset name or path)
    std::shared_ptr<const ModelGraph> graph;
    double params = 0;
    double flops_per_token = 0;
    std::vector<LayerNode> layers; ///< in pipeline order
};

/**
 * Groups each planning layer's ops by the next component of their module path (attention, MLP, norms), summing
 * params, FLOPs and saved activations with the core's per-layer rules, so children add up to their layer. In an MoE
 * layer the module holding the experts is split one level further (router, routed experts, shared expert), and the
 * routed experts' row says how many experts there are and how many each token visits.
 */
ModelOverview buildModelOverview(std::string spec, std::shared_ptr<const ModelGraph> graph,
                                 const std::vector<Layer>& layers);

} // namespace shardscape::ui
