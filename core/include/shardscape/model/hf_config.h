// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/model/model_graph.h"

#include <nlohmann/json_fwd.hpp>
#include <string_view>

namespace shardscape {

/**
 * Most decoder layers a built transformer may have. The deepest published models have about 1000 (DeepNet); the
 * graph grows by about 20 ops per layer and `inspect` takes about 1 ms per layer, so 100k layers (1.9 GB, 90 s) is
 * a typo rather than a model.
 */
inline constexpr std::int64_t kMaxTransformerLayers = 10'000;

/** Inputs of the graph builders that are not part of the architecture. */
struct BuildOptions
{
    std::int64_t batch = 1; ///< sequences per micro-batch
    std::int64_t seq_len = 0; ///< tokens per sequence; 0 = min(max_position_embeddings, 4096)
    DType dtype = DType::BF16; ///< activation and weight dtype
    /** The run used Megatron-Core's local layer (--transformer-impl local in its job config; applyJobAttention in
        plan/config_import.h): transformer models build their attention core unfused, whatever the model file says,
        through the fused softmax kernel or, with masked_softmax_fusion off, the torch fallback. */
    bool megatron_local_attention = false;
    bool masked_softmax_fusion = true;
};

/**
 * Reads the architecture from a Hugging Face config.json (GPT-2, Llama 1/2/3, Mistral, Qwen2, Mixtral).
 * Dispatches on `model_type`, falling back to `architectures[0]`. Throws InputError naming the field
 * when one is missing, of the wrong type or out of range, and for an unsupported architecture.
 */
TransformerShape parseHfConfig(const nlohmann::json& config, std::string_view origin);

/** Builds the forward op graph of a decoder-only transformer (see README "Model graphs"). */
ModelGraph buildTransformerGraph(const TransformerShape& shape, const BuildOptions& options, std::string name);

/** parseHfConfig + buildTransformerGraph. */
ModelGraph buildFromHfConfig(const nlohmann::json& config, const BuildOptions& options, std::string name);

} // namespace shardscape
