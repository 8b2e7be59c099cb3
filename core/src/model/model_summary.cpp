// SPDX-License-Identifier: MIT
#include "shardscape/model/model_summary.h"

#include <nlohmann/json.hpp>

namespace shardscape {

ModelSummary summarizeModel(const ModelGraph& graph)
{
    ModelSummary s;
    s.name = graph.name;
    s.batch = graph.batch;
    s.seq_len = graph.seq_len;
    s.params = graph.paramCount();
    s.active_params = graph.activeParamCount();
    s.flops_per_token_fwd = graph.forwardFlops() / graph.tokens();
    s.num_ops = graph.ops().size();
    s.layers = layersByModule(graph);
    for (const auto& layer : s.layers)
        s.activation_bytes += layer.activation_bytes;
    return s;
}

nlohmann::json toJson(const ModelSummary& s, const ModelGraph& graph)
{
    nlohmann::json doc;
    doc["model"] = s.name;
    doc["micro_batch"] = s.batch;
    doc["seq_len"] = s.seq_len;
    doc["params"] = s.params;
    doc["active_params"] = s.active_params;
    doc["flops_per_token_fwd"] = s.flops_per_token_fwd;
    doc["activation_bytes"] = s.activation_bytes;
    doc["num_ops"] = s.num_ops;
    if (graph.transformer) {
        const auto& t = *graph.transformer;
        doc["architecture"] = {{"family", t.family},
                               {"hidden", t.hidden},
                               {"num_layers", t.num_layers},
                               {"num_heads", t.num_heads},
                               {"num_kv_heads", t.num_kv_heads},
                               {"ffn_hidden", t.ffn_hidden},
                               {"vocab", t.vocab},
                               {"num_experts", t.num_experts},
                               {"top_k", t.top_k}};
    }
    auto& layers = doc["layers"] = nlohmann::json::array();
    const double tokens = graph.tokens();
    for (const auto& layer : s.layers)
        layers.push_back({{"name", layer.name},
                          {"kind", layerKindName(layer.kind)},
                          {"params", layer.params},
                          {"flops_per_token_fwd", layer.flops_fwd / tokens},
                          {"activation_bytes", layer.activation_bytes},
                          {"num_ops", layer.ops.size()}});
    return doc;
}

} // namespace shardscape
