// SPDX-License-Identifier: MIT
#include "shardscape/model/layers.h"

#include "shardscape/support/error.h"
#include "shardscape/support/strings.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <unordered_set>

namespace shardscape {

std::string_view layerKindName(LayerKind kind)
{
    switch (kind) {
    case LayerKind::Embedding:
        return "embedding";
    case LayerKind::Block:
        return "block";
    case LayerKind::Head:
        return "head";
    case LayerKind::Other:
        break;
    }
    return "other";
}

Layer summarizeLayer(const ModelGraph& graph, const std::vector<OpId>& producer, std::string name, LayerKind kind,
                     std::vector<OpId> ops, std::vector<bool>& paramSeen)
{
    Layer layer;
    layer.name = std::move(name);
    layer.kind = kind;
    std::unordered_set<OpId> members(ops.begin(), ops.end());
    std::unordered_set<TensorId> saved;
    std::unordered_set<TensorId> entering;
    for (const auto id : ops) {
        const Op& op = graph.op(id);
        layer.flops_fwd += op.flops_fwd;
        layer.flops_bwd += op.flops_bwd_input + op.flops_bwd_weight;
        for (const auto p : op.params) {
            if (!paramSeen[static_cast<std::size_t>(p)]) {
                paramSeen[static_cast<std::size_t>(p)] = true;
                layer.params += static_cast<double>(graph.tensor(p).elements());
            }
        }
        for (const auto t : op.saved)
            if (!graph.tensor(t).is_param && saved.insert(t).second)
                layer.activation_bytes += graph.tensor(t).bytes();
        for (const auto t : op.inputs) {
            const OpId from = producer[static_cast<std::size_t>(t)];
            if (from >= 0 && !members.count(from) && entering.insert(t).second)
                layer.input_bytes += graph.tensor(t).bytes();
        }
    }
    layer.ops = std::move(ops);
    return layer;
}

namespace {

/** "model.layers.7.mlp" -> {"model.layers", 7}; the first all-digit path component marks a block. */
std::optional<std::pair<std::string, long>> blockOf(const std::string& module)
{
    std::size_t start = 0;
    while (start <= module.size()) {
        const std::size_t end = std::min(module.find('.', start), module.size());
        const std::string_view part(module.data() + start, end - start);
        if (!part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; })
            && part.size() < 10) {
            long index = 0;
            std::from_chars(part.data(), part.data() + part.size(), index);
            return std::make_pair(start > 0 ? module.substr(0, start - 1) : std::string(), index);
        }
        start = end + 1;
    }
    return std::nullopt;
}

} // namespace

std::string commonModulePrefix(const ModelGraph& graph, const std::vector<OpId>& ops, std::string fallback)
{
    if (ops.empty())
        return fallback;
    std::string prefix = graph.op(ops.front()).module;
    for (const auto id : ops) {
        const std::string& m = graph.op(id).module;
        std::size_t n = 0;
        while (n < prefix.size() && n < m.size() && prefix[n] == m[n])
            ++n;
        prefix.resize(n);
    }
    // Back to a whole path component.
    bool whole = true;
    for (const auto id : ops) {
        const std::string& m = graph.op(id).module;
        if (m.size() > prefix.size() && m[prefix.size()] != '.')
            whole = false;
    }
    if (!whole) {
        const auto dot = prefix.rfind('.');
        prefix.resize(dot == std::string::npos ? 0 : dot);
    }
    return prefix.empty() ? fallback : prefix;
}

std::vector<Layer> layersByModule(const ModelGraph& graph)
{
    const auto order = graph.topologicalOrder();
    const auto producer = graph.producers();

    // The block prefix is the one with the most distinct indices ("model.layers" in a Llama).
    std::map<std::string, std::unordered_set<long>> indicesByPrefix;
    for (const auto& op : graph.ops())
        if (const auto block = blockOf(op.module))
            indicesByPrefix[block->first].insert(block->second);
    const auto best = std::max_element(indicesByPrefix.begin(), indicesByPrefix.end(),
                                       [](const auto& a, const auto& b) { return a.second.size() < b.second.size(); });
    if (best == indicesByPrefix.end())
        throw InputError(
            cat("model '", graph.name, "' has no repeated blocks in its module paths (like model.layers.N)"),
            "use automatic layer construction (layer_num) instead");
    const std::string& prefix = best->first;

    std::map<long, std::vector<OpId>> blocks;
    std::vector<OpId> before;
    std::vector<OpId> after;
    // An op outside the blocks belongs to the head once anything it reads descends from a block.
    std::vector<bool> downstream(graph.ops().size(), false);
    for (const auto id : order) {
        const Op& op = graph.op(id);
        const auto block = blockOf(op.module);
        const bool inBlock = block && block->first == prefix;
        bool fed = false;
        for (const auto t : op.inputs)
            if (const OpId from = producer[static_cast<std::size_t>(t)];
                from >= 0 && downstream[static_cast<std::size_t>(from)])
                fed = true;
        downstream[static_cast<std::size_t>(id)] = inBlock || fed;
        if (inBlock)
            blocks[block->second].push_back(id);
        else if (fed)
            after.push_back(id);
        else
            before.push_back(id);
    }

    std::vector<bool> paramSeen(graph.tensors().size(), false);
    std::vector<Layer> layers;
    layers.reserve(blocks.size() + 2);
    if (!before.empty()) {
        std::string name = commonModulePrefix(graph, before, "embedding");
        layers.push_back(
            summarizeLayer(graph, producer, std::move(name), LayerKind::Embedding, std::move(before), paramSeen));
    }
    for (auto& [index, ops] : blocks)
        layers.push_back(summarizeLayer(graph, producer,
                                        prefix.empty() ? std::to_string(index) : cat(prefix, ".", index),
                                        LayerKind::Block, std::move(ops), paramSeen));
    if (!after.empty()) {
        std::string name = commonModulePrefix(graph, after, "head");
        layers.push_back(
            summarizeLayer(graph, producer, std::move(name), LayerKind::Head, std::move(after), paramSeen));
    }
    return layers;
}

} // namespace shardscape
