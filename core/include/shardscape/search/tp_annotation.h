// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/cost/cost_source.h"
#include "shardscape/model/layers.h"
#include "shardscape/model/model_graph.h"
#include "shardscape/search/sharding_solver.h"

#include <memory>
#include <string>
#include <vector>

namespace shardscape {

/** True when any op carries a tensor-parallel role (the transformer builders annotate Megatron's plan). */
bool hasTensorParallelRoles(const ModelGraph& graph);

/** A copy of `graph` with every op replicated and no tensor marked sharded (what a raw import looks like). */
ModelGraph withoutTensorParallelRoles(const ModelGraph& graph);

/** What the intra-op solver decided, for the log. */
struct TpAnnotationReport
{
    int tp = 1;
    int column = 0, row = 0, heads = 0, local = 0, replicated = 0;
    std::string solver;
    std::vector<std::string> warnings; ///< layers the solver could not plan (kept replicated)
};

/**
 * Runs the intra-op sharding solver on every layer at tensor-parallel width `options.tp` and writes the
 * strategies it picks back as roles: column/row/heads ops keep their role, ops that follow a split input
 * become local, everything else replicated; tensors produced split (and split weights) are marked sharded.
 * The cost model then prices every tp with those roles, as it does Megatron's for the built-in transformers.
 */
ModelGraph annotateTensorParallel(const ModelGraph& graph, const std::vector<Layer>& layers, const CostSource& costs,
                                  const ShardingOptions& options, TpAnnotationReport* report = nullptr);

} // namespace shardscape
