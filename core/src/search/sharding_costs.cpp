// SPDX-License-Identifier: MIT
// Layouts and costs in the sharding model: what share of a tensor a device holds, the collective between two
// layouts, and each choice's compute, communication and memory.
#include "sharding_model.h"
#include "shardscape/cost/layer_cost.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

namespace shardscape::sharding_detail {

namespace {

bool hasGradient(DType dtype)
{
    return dtype == DType::F64 || dtype == DType::F32 || dtype == DType::TF32 || dtype == DType::F16
        || dtype == DType::BF16 || dtype == DType::FP8;
}

double product(const std::vector<std::int64_t>& shape, std::size_t begin, std::size_t end)
{
    double p = 1;
    for (std::size_t i = begin; i < end && i < shape.size(); ++i)
        p *= static_cast<double>(shape[i]);
    return p;
}

} // namespace

// --- tensors ---

double ShardingModel::tokenDim(TensorId t) const
{
    const auto& s = shape(t);
    if (s.size() == 4)
        return static_cast<double>(s[0]);
    if (!hasGradient(m_graph.tensor(t).dtype) && s.size() == 2)
        return product(s, 0, 2);
    return s.size() >= 2 ? product(s, 0, s.size() - 1) : static_cast<double>(s.empty() ? 1 : s[0]);
}

double ShardingModel::featureDim(TensorId t) const
{
    const auto& s = shape(t);
    if (s.size() == 4)
        return static_cast<double>(s[1]);
    return s.empty() ? 1 : static_cast<double>(s.back());
}

bool ShardingModel::valid(TensorId t, Layout layout) const
{
    switch (layout) {
    case Layout::R:
        return true;
    case Layout::P:
        return !small(t) && m_tp > 1;
    case Layout::T:
        return !small(t) && m_tp > 1 && tokenDim(t) >= m_tp;
    case Layout::F:
        break;
    }
    return !small(t) && m_tp > 1 && featureDim(t) >= m_tp;
}

double ShardingModel::factor(TensorId t, Layout layout) const
{
    switch (layout) {
    case Layout::R:
    case Layout::P:
        return 1;
    case Layout::T:
        return splitFactor(tokenDim(t));
    case Layout::F:
        break;
    }
    return splitFactor(featureDim(t));
}

std::optional<Conversion> ShardingModel::convert(TensorId t, Layout a, Layout b) const
{
    if (a == b || b == Layout::P || a == Layout::R)
        return std::nullopt;
    const double whole = bytes(t);
    Conversion c;
    if (b == Layout::R) {
        c.kind = a == Layout::P ? Collective::AllReduce : Collective::AllGather;
        c.bytes = whole;
    } else if (a == Layout::P) {
        c.kind = Collective::ReduceScatter;
        c.bytes = whole;
    } else {
        // T <-> F: each device sends what it holds, split into tp pieces.
        c.kind = Collective::AllToAll;
        c.bytes = whole * factor(t, a);
    }
    c.time = m_costs.collectiveTime(c.kind, c.bytes, m_group);
    return c;
}

std::optional<Conversion> ShardingModel::backward(const TensorEdge& e, const Choice& from, const Choice& to) const
{
    if (!hasGradient(m_graph.tensor(e.tensor).dtype))
        return std::nullopt;
    return convert(e.tensor, to.inGrad[static_cast<std::size_t>(e.toSlot)],
                   from.outGrad[static_cast<std::size_t>(e.fromSlot)]);
}

double ShardingModel::edgeTime(const TensorEdge& e, int i, int j) const
{
    const auto& a = m_nodes[static_cast<std::size_t>(e.from)].choices[static_cast<std::size_t>(i)];
    const auto& b = m_nodes[static_cast<std::size_t>(e.to)].choices[static_cast<std::size_t>(j)];
    double t = 0;
    if (const auto f
        = convert(e.tensor, a.out[static_cast<std::size_t>(e.fromSlot)], b.in[static_cast<std::size_t>(e.toSlot)]))
        t += f->time;
    if (const auto g = backward(e, a, b))
        t += g->time;
    return t;
}

std::int64_t ShardingModel::units(double memoryBytes) const
{
    const double g = m_options.memory_granularity;
    if (g > 0)
        return static_cast<std::int64_t>(std::ceil(memoryBytes / g - 1e-9));
    return static_cast<std::int64_t>(std::llround(memoryBytes));
}

// --- costs of one choice ---

void ShardingModel::cost(OpId id, Choice& c) const
{
    const Op& op = m_graph.op(id);
    const DType dtype = m_graph.dtype;
    const bool split = c.strategy != ShardStrategy::Replicate;
    const double share = split ? 1.0 / m_tp : 1.0;

    if ((op.kind == OpKind::Linear || op.kind == OpKind::MoeRouter) && weightMatrix(op)) {
        double k = static_cast<double>(shape(op.inputs[0]).back());
        double n = static_cast<double>(shape(op.outputs[0]).back());
        double m = static_cast<double>(m_graph.tensor(op.inputs[0]).elements()) / k;
        if (c.strategy == ShardStrategy::Batch)
            m *= factor(op.inputs[0], Layout::T);
        else if (c.strategy == ShardStrategy::Column)
            n *= splitFactor(n);
        else if (c.strategy == ShardStrategy::Row)
            k *= splitFactor(k);
        c.compute_s = gemmPasses(op, m, n, k, dtype);
    } else if (op.kind == OpKind::FlashAttention) {
        // Flash backward recomputes the scores: five GEMM passes to the forward's two (x 1.25 of 2x).
        c.compute_s = m_costs.attentionTime(op.flops_fwd * share, dtype)
            + m_costs.attentionTime(op.flops_bwd_input * share * 1.25, dtype);
    } else if ((op.kind == OpKind::AttentionScore || op.kind == OpKind::AttentionContext || op.kind == OpKind::MatMul
                || op.kind == OpKind::MoeExperts || op.kind == OpKind::Conv)
               && op.flops_fwd > 0) {
        double n = 1024, k = 1024;
        if (!op.params.empty() && shape(op.params[0]).size() >= 2) {
            const WeightGemm w = weightGemmOf(op, m_graph.tensor(op.params[0]));
            k = w.k;
            n = w.n;
        } else if (!op.outputs.empty() && shape(op.outputs[0]).size() >= 2) {
            // Activation @ activation (attention scores or context): batched GEMMs.
            const auto& o = shape(op.outputs[0]);
            n = static_cast<double>(o.back());
            k = static_cast<double>(o[o.size() - 2]);
        }
        double m = op.flops_fwd / (2 * n * k);
        if (c.strategy == ShardStrategy::Column)
            n *= splitFactor(n);
        else
            m *= share;
        c.compute_s = gemmPasses(op, m, n, k, dtype);
        if (op.params.empty()) {
            // The folded [m x k] @ [k x n] leaves out the batch dimension and with it the b x heads x s x s tensor
            // QK^T writes and PV reads; streaming it once forward and twice in backward bounds these GEMMs (the
            // pipeline cost model's batchedGemmBytes, layer_cost.cpp).
            double streamed = 0;
            for (const TensorId t : op.inputs)
                streamed += m_graph.tensor(t).bytes();
            for (const TensorId t : op.outputs)
                streamed += m_graph.tensor(t).bytes();
            streamed *= share;
            c.compute_s = std::max(c.compute_s, m_costs.memoryTime(streamed) + m_costs.memoryTime(2 * streamed));
        }
    } else {
        // Memory-bound: every device streams its share; a partial-sum output is written whole.
        const bool partialOut = std::find(c.out.begin(), c.out.end(), Layout::P) != c.out.end();
        const double moved = op.bytes_read * share + op.bytes_written * (partialOut ? 1.0 : share);
        c.compute_s = m_costs.memoryTime(moved);
        // Backward reads the saved input and the output gradient and writes the input gradient.
        if (op.flops_bwd_input + op.flops_bwd_weight > 0)
            c.compute_s += m_costs.memoryTime(1.5 * moved);
    }

    // Collectives inside the op.
    if (c.strategy == ShardStrategy::Batch && !op.params.empty()) {
        // Weights replicated while the tokens are split: each device holds a partial weight gradient.
        double gradBytes = 0;
        for (const auto p : op.params)
            gradBytes += bytes(p);
        const double t = m_costs.collectiveTime(Collective::AllReduce, gradBytes, m_group);
        c.comm_s += t;
        c.collectives.push_back({Collective::AllReduce, true, gradBytes, t, op.name + " weight gradients"});
    }
    if (op.kind == OpKind::Loss && c.strategy == ShardStrategy::Column && !op.inputs.empty()) {
        // Vocab-parallel cross-entropy: max, sum of exponentials and target logit, fp32 per token.
        const double tokens = tokenDim(op.inputs[0]);
        const double t = m_costs.collectiveTime(Collective::AllReduce, 4 * tokens, m_group);
        for (int i = 0; i < 3; ++i) {
            c.comm_s += t;
            c.collectives.push_back({Collective::AllReduce, false, 4 * tokens, t, op.name + " vocab-parallel softmax"});
        }
    }

    // Memory: parameters first used here, and saved activations charged once.
    for (const auto p : op.params)
        if (m_firstParamUser[static_cast<std::size_t>(p)] == id)
            c.memory_bytes += bytes(p) * paramFactor(op, p, c.strategy) * m_options.param_memory_factor;
    for (std::size_t i = 0; i < op.outputs.size(); ++i)
        if (m_saved[static_cast<std::size_t>(op.outputs[i])])
            c.memory_bytes += bytes(op.outputs[i]) * factor(op.outputs[i], c.out[i]);
    for (std::size_t i = 0; i < op.inputs.size(); ++i) {
        const TensorId t = op.inputs[i];
        if (!producedInside(t) && m_firstSaver[static_cast<std::size_t>(t)] == id
            && std::find(op.inputs.begin(), op.inputs.begin() + static_cast<std::ptrdiff_t>(i), t)
                == op.inputs.begin() + static_cast<std::ptrdiff_t>(i))
            c.memory_bytes += bytes(t) * factor(t, c.in[i]);
    }
}

double ShardingModel::gemmPasses(const Op& op, double m, double n, double k, DType dtype) const
{
    if (op.flops_fwd <= 0)
        return 0;
    double t = m_costs.matmulTime(m, n, k, dtype);
    if (op.flops_bwd_input > 0)
        t += m_costs.matmulTime(m, k, n, dtype) * op.flops_bwd_input / op.flops_fwd;
    if (op.flops_bwd_weight > 0)
        t += m_costs.matmulTime(k, n, m, dtype) * op.flops_bwd_weight / op.flops_fwd;
    return t;
}

} // namespace shardscape::sharding_detail
