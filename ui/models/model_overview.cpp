// SPDX-License-Identifier: MIT
#include "models/model_overview.h"

#include "shardscape/support/strings.h"

#include <map>

namespace shardscape::ui {

namespace {

/** The child module an op belongs to inside layer `layer`: "<layer>.<next component>", or its own module. */
std::string childModule(const std::string& layer, const std::string& module)
{
    if (module.size() > layer.size() && startsWith(module, layer) && module[layer.size()] == '.') {
        const auto end = module.find('.', layer.size() + 1);
        return module.substr(0, end);
    }
    return module.empty() ? layer : module;
}

} // namespace

ModelOverview buildModelOverview(std::string spec, std::shared_ptr<const ModelGraph> graph,
                                 const std::vector<Layer>& layers)
{
    ModelOverview out;
    out.spec = std::move(spec);
    out.graph = graph;
    const double tokens = std::max(1.0, graph->tokens());
    out.params = graph->paramCount();
    out.flops_per_token = graph->forwardFlops() / tokens;

    const std::vector<OpId> producer = graph->producers();
    std::vector<bool> paramSeen(graph->tensors().size(), false);
    out.layers.reserve(layers.size());
    for (const Layer& layer : layers) {
        LayerNode node;
        node.name = layer.name;
        node.kind = std::string(layerKindName(layer.kind));
        node.params = layer.params;
        node.flops_per_token = layer.flops_fwd / tokens;
        node.activation_bytes = layer.activation_bytes / static_cast<double>(std::max<std::int64_t>(1, graph->batch));
        node.ops = layer.ops.size();

        // The module holding an MoE layer's routed experts (e.g. "model.layers.3.mlp") is opened one level further.
        std::string moeParent;
        for (const OpId op : layer.ops)
            if (graph->op(op).kind == OpKind::MoeExperts)
                moeParent = childModule(layer.name, graph->op(op).module);
        // Children in order of first appearance, each summarised like a layer of its own.
        std::vector<std::string> order;
        std::map<std::string, std::vector<OpId>> groups;
        for (const OpId op : layer.ops) {
            std::string key = childModule(layer.name, graph->op(op).module);
            if (!moeParent.empty() && key == moeParent && key != layer.name)
                key = childModule(moeParent, graph->op(op).module);
            auto [it, inserted] = groups.try_emplace(key);
            if (inserted)
                order.push_back(key);
            it->second.push_back(op);
        }
        if (order.size() > 1) {
            for (const auto& key : order) {
                const Layer part = summarizeLayer(*graph, producer, key, LayerKind::Other, groups[key], paramSeen);
                LayerNode child;
                child.name = part.name;
                child.kind = "module";
                child.params = part.params;
                child.flops_per_token = part.flops_fwd / tokens;
                child.activation_bytes
                    = part.activation_bytes / static_cast<double>(std::max<std::int64_t>(1, graph->batch));
                child.ops = part.ops.size();
                for (const OpId op : groups[key])
                    if (graph->op(op).kind == OpKind::MoeExperts) {
                        child.kind = "experts";
                        child.experts = graph->op(op).num_experts;
                        child.experts_per_token = graph->op(op).top_k;
                    }
                node.children.push_back(std::move(child));
            }
        } else {
            // Keep paramSeen in step with the layers for the children of later layers.
            summarizeLayer(*graph, producer, layer.name, layer.kind, layer.ops, paramSeen);
        }
        out.layers.push_back(std::move(node));
    }
    return out;
}

} // namespace shardscape::ui
