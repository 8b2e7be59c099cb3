// SPDX-License-Identifier: MIT
// Alpa's layer clustering DP: G(k, r) = min_i max(G(i - 1, r - 1), C(i, k)) over contiguous op ranges,
// C(i, k) = bytes of activations produced before op i and read by ops i..k, with a FLOP cap per layer;
// then a second pass that keeps max C at its optimum and minimises the sum of squared layer FLOPs.
#include "shardscape/model/layer_construction.h"

#include "shardscape/support/error.h"
#include "shardscape/support/strings.h"

#include <cmath>
#include <limits>
#include <map>

namespace shardscape {

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

/** The ops in order with what the DP reads: FLOP prefix sums and, per input, the producer's position. */
struct Linearised
{
    std::vector<OpId> order;
    std::vector<double> flopsBefore; ///< flopsBefore[k] = FLOPs of ops 0..k-1
    std::vector<std::vector<std::pair<TensorId, int>>> inputs; ///< per op: (tensor, producer position)
    std::vector<double> tensorBytes;
};

Linearised linearise(const ModelGraph& graph)
{
    Linearised lin;
    lin.order = graph.topologicalOrder();
    const auto producer = graph.producers();
    std::vector<int> position(graph.ops().size(), -1);
    for (std::size_t k = 0; k < lin.order.size(); ++k)
        position[static_cast<std::size_t>(lin.order[k])] = static_cast<int>(k);
    lin.flopsBefore.assign(lin.order.size() + 1, 0.0);
    lin.inputs.resize(lin.order.size());
    for (std::size_t k = 0; k < lin.order.size(); ++k) {
        const Op& op = graph.op(lin.order[k]);
        lin.flopsBefore[k + 1] = lin.flopsBefore[k] + op.flops_fwd + op.flops_bwd_input + op.flops_bwd_weight;
        for (const auto t : op.inputs) {
            const OpId from = producer[static_cast<std::size_t>(t)];
            // Graph inputs (token ids, labels) come from the host, not from another layer.
            if (from >= 0 && !graph.tensor(t).is_param)
                lin.inputs[k].emplace_back(t, position[static_cast<std::size_t>(from)]);
        }
    }
    lin.tensorBytes.reserve(graph.tensors().size());
    for (const auto& t : graph.tensors())
        lin.tensorBytes.push_back(t.bytes());
    return lin;
}

/**
 * Visits every layer candidate ops[i..k-1] whose FLOPs fit `cap`, for i ascending and k ascending, with its
 * received bytes C(i, k) maintained incrementally: a tensor counts once, when the first op of the range
 * reading it is added, if its producer lies before i.
 */
template<typename Visit> void forEachRange(const Linearised& lin, double cap, Visit&& visit)
{
    const std::size_t n = lin.order.size();
    std::vector<std::size_t> stamp(lin.tensorBytes.size(), std::numeric_limits<std::size_t>::max());
    for (std::size_t i = 0; i < n; ++i) {
        double received = 0;
        for (std::size_t k = i + 1; k <= n; ++k) {
            if (lin.flopsBefore[k] - lin.flopsBefore[i] > cap)
                break;
            for (const auto& [t, from] : lin.inputs[k - 1])
                if (from < static_cast<int>(i) && stamp[static_cast<std::size_t>(t)] != i) {
                    stamp[static_cast<std::size_t>(t)] = i;
                    received += lin.tensorBytes[static_cast<std::size_t>(t)];
                }
            if (!visit(i, k, received))
                break;
        }
    }
}

/** Layers r = 1..L that ops[0..k-1] can hold when ops[k..] must still fill L - r layers. */
struct LayerRange
{
    std::size_t first;
    std::size_t last;
};
LayerRange layersFor(std::size_t start, std::size_t end, std::size_t n, std::size_t layers)
{
    // The range is layer r; r - 1 layers hold the `start` ops before it and L - r layers the n - end after.
    const std::size_t first = layers > n - end ? std::max<std::size_t>(1, layers - (n - end)) : 1;
    const std::size_t last = std::min(layers, start + 1);
    return {first, last};
}

LayerKind kindOf(const ModelGraph& graph, const std::vector<OpId>& ops)
{
    bool embedding = false, loss = false;
    for (const auto id : ops) {
        embedding = embedding || graph.op(id).kind == OpKind::Embedding;
        loss = loss || graph.op(id).kind == OpKind::Loss;
    }
    if (embedding && loss)
        return LayerKind::Other;
    return embedding ? LayerKind::Embedding : (loss ? LayerKind::Head : LayerKind::Block);
}

/** Cuts at `cap`; empty when no clustering fits. Returns the layer boundaries (end positions). */
std::vector<std::size_t> cluster(const Linearised& lin, std::size_t layers, double cap, double& maxReceived)
{
    const std::size_t n = lin.order.size();
    // Pass 1: the smallest largest receive.
    std::vector<std::vector<double>> worst(layers + 1, std::vector<double>(n + 1, kInfinity));
    worst[0][0] = 0;
    forEachRange(lin, cap, [&](std::size_t i, std::size_t k, double received) {
        const auto [first, last] = layersFor(i, k, n, layers);
        for (std::size_t r = first; r <= last; ++r)
            if (worst[r - 1][i] < kInfinity)
                worst[r][k] = std::min(worst[r][k], std::max(worst[r - 1][i], received));
        return true;
    });
    maxReceived = worst[layers][n];
    if (!(maxReceived < kInfinity))
        return {};

    // Pass 2: least sum of squared FLOPs among the clusterings whose every layer receives <= the optimum.
    std::vector<std::vector<double>> spread(layers + 1, std::vector<double>(n + 1, kInfinity));
    std::vector<std::vector<std::size_t>> start(layers + 1, std::vector<std::size_t>(n + 1, 0));
    spread[0][0] = 0;
    forEachRange(lin, cap, [&](std::size_t i, std::size_t k, double received) {
        if (received > maxReceived)
            return false; // C(i, k) only grows with k
        const double flops = lin.flopsBefore[k] - lin.flopsBefore[i];
        const auto [first, last] = layersFor(i, k, n, layers);
        for (std::size_t r = first; r <= last; ++r) {
            const double value = spread[r - 1][i] + flops * flops;
            if (spread[r - 1][i] < kInfinity && value < spread[r][k]) {
                spread[r][k] = value;
                start[r][k] = i;
            }
        }
        return true;
    });
    std::vector<std::size_t> ends(layers);
    std::size_t k = n;
    for (std::size_t r = layers; r >= 1; --r) {
        ends[r - 1] = k;
        k = start[r][k];
    }
    return ends;
}

} // namespace

LayerConstruction constructLayersDetailed(const ModelGraph& graph, int layerNum, double eps)
{
    const auto opCount = graph.ops().size();
    if (layerNum < 1 || static_cast<std::size_t>(layerNum) > opCount)
        throw InputError(cat("layer construction: layer_num must be in 1..", opCount, " (the ops of '", graph.name,
                             "'), got ", layerNum));
    if (!(eps >= 0) || !std::isfinite(eps))
        throw InputError(cat("layer construction: eps must be >= 0, got ", eps));

    const Linearised lin = linearise(graph);
    const auto layers = static_cast<std::size_t>(layerNum);
    const double total = lin.flopsBefore.back();
    LayerConstruction result;
    std::vector<std::size_t> ends;
    for (;;) {
        // A relative slack so that exactly balanced layers are not lost to rounding.
        const double cap = (1 + eps) * total / static_cast<double>(layers) * (1 + 1e-12);
        ends = cluster(lin, layers, cap, result.max_input_bytes);
        if (!ends.empty() || cap >= total)
            break;
        eps = eps > 0 ? 2 * eps : 0.5;
    }
    result.eps = eps;

    const auto producer = graph.producers();
    std::vector<bool> paramSeen(graph.tensors().size(), false);
    std::map<std::string, int> uses;
    std::size_t begin = 0;
    for (const auto end : ends) {
        std::vector<OpId> ops(lin.order.begin() + static_cast<std::ptrdiff_t>(begin),
                              lin.order.begin() + static_cast<std::ptrdiff_t>(end));
        std::string name = commonModulePrefix(graph, ops, "layer");
        if (const int seen = uses[name]++; seen > 0)
            name = cat(name, "#", seen + 1);
        const LayerKind kind = kindOf(graph, ops);
        result.layers.push_back(summarizeLayer(graph, producer, std::move(name), kind, std::move(ops), paramSeen));
        begin = end;
    }
    return result;
}

std::vector<Layer> constructLayers(const ModelGraph& graph, int layerNum, double eps)
{
    return constructLayersDetailed(graph, layerNum, eps).layers;
}

} // namespace shardscape
