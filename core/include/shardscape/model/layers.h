// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/model/model_graph.h"

#include <string>
#include <vector>

namespace shardscape {

/** Role of a layer in the pipeline; the first and last stages carry the embedding and the head. */
enum class LayerKind : std::uint8_t
{
    Embedding,
    Block,
    Head,
    Other
};
std::string_view layerKindName(LayerKind kind);

/** A group of ops that a pipeline stage boundary never splits. */
struct Layer
{
    std::string name; ///< module path of the group, e.g. "model.layers.7"
    LayerKind kind = LayerKind::Other;
    std::vector<OpId> ops; ///< in topological order
    double params = 0; ///< unique parameter elements first used in this layer
    double flops_fwd = 0; ///< forward FLOPs for the graph's batch x seq_len
    double flops_bwd = 0; ///< backward FLOPs (input + weight gradients)
    /** Bytes kept alive for backward for one micro-batch, no parallelism and no recomputation. */
    double activation_bytes = 0;
    /** Bytes of the activations entering the layer (what a pipeline boundary sends). */
    double input_bytes = 0;
};

/**
 * Groups ops into layers by module path: every op under "<prefix>.<N>" (the repeated blocks, e.g.
 * "model.layers.7" or "transformer.h.7") forms layer N; ops before the first block form an embedding
 * layer and ops after the last one a head layer. Throws InputError when the graph has no repeated
 * block structure (use automatic layer construction instead).
 */
std::vector<Layer> layersByModule(const ModelGraph& graph);

/** Fills params, FLOPs and activation bytes of a layer made of `ops`. Shared by every way of grouping. */
/** The longest module path (whole components) shared by `ops`, or `fallback` when they share none. */
std::string commonModulePrefix(const ModelGraph& graph, const std::vector<OpId>& ops, std::string fallback);

/** `producer` is graph.producers(); `paramSeen` marks parameters already counted by earlier layers. */
Layer summarizeLayer(const ModelGraph& graph, const std::vector<OpId>& producer, std::string name, LayerKind kind,
                     std::vector<OpId> ops, std::vector<bool>& paramSeen);

} // namespace shardscape
