// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/model/model_graph.h"

#include <nlohmann/json_fwd.hpp>
#include <string_view>

namespace shardscape {

/** Inputs of the graph builders that are not part of the architecture. */
struct BuildOptions
{
    std::int64_t batch = 1; ///< sequences per micro-batch
    std::int64_t seq_len = 0; ///< tokens per sequence; 0 = min(max_position_embeddings, 4096)
    DType dtype = DType::BF16; ///< activation and weight dtype
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
