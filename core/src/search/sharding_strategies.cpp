// SPDX-License-Identifier: MIT
// The strategies each op offers on the tensor-parallel group (the table in sharding_model.h), kept to
// those its shapes, heads and the user's partition constraints allow.
#include "sharding_model.h"
#include "shardscape/cost/layer_cost.h"

#include <algorithm>
#include <vector>

namespace shardscape::sharding_detail {

// --- strategies of one op ---

std::vector<Choice> ShardingModel::opChoices(OpId id) const
{
    const Op& op = m_graph.op(id);
    std::vector<Choice> candidates;
    const auto add = [&](ShardStrategy s, std::vector<Layout> in, std::vector<Layout> inGrad, std::vector<Layout> out) {
        Choice c;
        c.strategy = s;
        c.in = std::move(in);
        c.inGrad = std::move(inGrad);
        c.out = std::move(out);
        candidates.push_back(std::move(c));
    };
    const std::size_t nIn = op.inputs.size();
    const std::size_t nOut = op.outputs.size();
    const auto all = [](std::size_t n, Layout l) { return std::vector<Layout>(n, l); };

    add(ShardStrategy::Replicate, all(nIn, Layout::R), all(nIn, Layout::R), all(nOut, Layout::R));
    if (m_tp > 1) {
        switch (op.kind) {
        case OpKind::Linear:
        case OpKind::MoeRouter:
            if (weightMatrix(op)) {
                add(ShardStrategy::Batch, all(nIn, Layout::T), all(nIn, Layout::T), all(nOut, Layout::T));
                add(ShardStrategy::Column, all(nIn, Layout::R), all(nIn, Layout::P), all(nOut, Layout::F));
                add(ShardStrategy::Row, all(nIn, Layout::F), all(nIn, Layout::F), all(nOut, Layout::P));
            } else {
                addBatch(op, add);
            }
            break;
        case OpKind::FlashAttention:
        case OpKind::AttentionScore:
        case OpKind::AttentionContext:
            if (headsDivide(op))
                add(ShardStrategy::Heads, all(nIn, Layout::F), all(nIn, Layout::F), all(nOut, Layout::F));
            if (static_cast<double>(m_graph.batch) >= m_tp && m_graph.batch % m_tp == 0)
                add(ShardStrategy::Batch, all(nIn, Layout::T), all(nIn, Layout::T), all(nOut, Layout::T));
            break;
        case OpKind::Embedding:
            add(ShardStrategy::Batch, all(nIn, Layout::T), all(nIn, Layout::T), all(nOut, Layout::T));
            if (!op.params.empty()) {
                add(ShardStrategy::Row, all(nIn, Layout::R), all(nIn, Layout::R), all(nOut, Layout::P));
                add(ShardStrategy::Column, all(nIn, Layout::R), all(nIn, Layout::R), all(nOut, Layout::F));
            }
            break;
        case OpKind::Loss:
            add(ShardStrategy::Batch, all(nIn, Layout::T), all(nIn, Layout::T), all(nOut, Layout::R));
            if (nIn >= 1) {
                auto in = all(nIn, Layout::R);
                in[0] = Layout::F;
                add(ShardStrategy::Column, in, in, all(nOut, Layout::R));
            }
            break;
        case OpKind::MoeExperts: {
            add(ShardStrategy::Batch, all(nIn, Layout::T), all(nIn, Layout::T), all(nOut, Layout::T));
            // Expert tensor parallelism: tokens dispatched on every device, each expert's ffn split.
            auto out = all(nOut, Layout::F);
            if (nOut >= 1)
                out[0] = Layout::P;
            if (nOut >= 2)
                out[1] = Layout::R; // the dispatched tokens
            add(ShardStrategy::Column, all(nIn, Layout::R), all(nIn, Layout::P), out);
            break;
        }
        case OpKind::Norm:
            add(ShardStrategy::Batch, all(nIn, Layout::T), all(nIn, Layout::T), all(nOut, Layout::T));
            break;
        case OpKind::Softmax:
        case OpKind::Elementwise:
        case OpKind::Dropout:
        case OpKind::Reshape:
            addFollow(op, Layout::T, add);
            if (op.kind != OpKind::Softmax || (nIn >= 1 && shape(op.inputs[0]).size() == 4))
                addFollow(op, Layout::F, add);
            break;
        case OpKind::MatMul:
        case OpKind::Conv:
        case OpKind::Unknown:
            addBatch(op, add);
            break;
        }
    }

    std::vector<Choice> choices;
    for (auto& c : candidates) {
        if (!allowed(op, c.strategy) || !layoutsValid(op, c) || !weightsMaySplit(op, c.strategy))
            continue;
        c.outGrad.resize(c.out.size());
        for (std::size_t i = 0; i < c.out.size(); ++i)
            c.outGrad[i] = c.out[i] == Layout::P ? Layout::R : c.out[i];
        cost(id, c);
        choices.push_back(std::move(c));
    }
    return choices;
}

template<typename Add> void ShardingModel::addBatch(const Op& op, const Add& add) const
{
    // Generic ops: split the leading dims of everything; a 2-D second operand stays whole (its
    // gradient is then a partial sum).
    std::vector<Layout> in(op.inputs.size(), Layout::T);
    std::vector<Layout> grad(op.inputs.size(), Layout::T);
    for (std::size_t i = 1; i < op.inputs.size(); ++i)
        if (shape(op.inputs[i]).size() < 3) {
            in[i] = Layout::R;
            grad[i] = Layout::P;
        }
    add(ShardStrategy::Batch, in, grad, std::vector<Layout>(op.outputs.size(), Layout::T));
}

template<typename Add> void ShardingModel::addFollow(const Op& op, Layout layout, const Add& add) const
{
    if (op.outputs.empty())
        return;
    const auto& outShape = shape(op.outputs[0]);
    std::vector<Layout> in;
    for (const auto t : op.inputs) {
        const auto& s = shape(t);
        if (s == outShape || op.kind == OpKind::Reshape)
            in.push_back(layout);
        else if (layout == Layout::F && !s.empty() && s.size() == outShape.size() && s.back() == outShape.back())
            in.push_back(Layout::F);
        else
            in.push_back(Layout::R);
    }
    // A replicated broadcast input's gradient is summed over the split: a partial sum.
    std::vector<Layout> grad = in;
    for (auto& g : grad)
        if (g == Layout::R)
            g = Layout::P;
    const bool heads = layout == Layout::F && outShape.size() == 4;
    add(layout == Layout::T ? ShardStrategy::Batch : (heads ? ShardStrategy::Heads : ShardStrategy::Column), in, grad,
        std::vector<Layout>(op.outputs.size(), layout));
}

const Tensor* ShardingModel::weightMatrix(const Op& op) const
{
    if (op.params.empty() || op.inputs.empty() || op.outputs.empty())
        return nullptr;
    const Tensor& w = m_graph.tensor(op.params[0]);
    // An operand whose shape the importer could not infer has no last dimension to match.
    if (w.shape.size() != 2 || shape(op.inputs[0]).empty() || shape(op.outputs[0]).empty())
        return nullptr;
    const auto in = shape(op.inputs[0]).back();
    const auto out = shape(op.outputs[0]).back();
    const bool straight = w.shape[0] == in && w.shape[1] == out;
    const bool transposed = w.shape[0] == out && w.shape[1] == in; // a tied embedding used as the head
    return straight || transposed ? &w : nullptr;
}

bool ShardingModel::headsDivide(const Op& op) const
{
    std::int64_t heads = 0;
    for (const auto t : op.outputs)
        if (shape(t).size() == 4 || (op.kind == OpKind::FlashAttention && shape(t).size() == 3 && t != op.outputs[0]))
            heads = shape(t)[1];
    for (const auto t : op.inputs)
        if (shape(t).size() == 4)
            heads = shape(t)[1];
    if (heads <= 0 && m_graph.transformer)
        heads = m_graph.transformer->num_heads;
    if (heads <= 0 || heads % m_tp != 0)
        return false;
    // [b, s, heads x head_dim] operands: whole heads per device, for grouped key/value heads too.
    std::int64_t headDim = 0;
    for (const auto t : op.outputs)
        if (shape(t).size() == 3 && t == op.outputs[0] && op.kind != OpKind::AttentionScore)
            headDim = shape(t).back() / heads;
    if (headDim <= 0 && !op.inputs.empty() && shape(op.inputs[0]).size() == 3)
        headDim = shape(op.inputs[0]).back() / heads;
    for (const auto t : op.inputs) {
        const auto& s = shape(t);
        if (s.size() != 3)
            continue;
        if (headDim <= 0 || s.back() % headDim != 0 || (s.back() / headDim) % m_tp != 0)
            return false;
    }
    return true;
}

bool ShardingModel::layoutsValid(const Op& op, const Choice& c) const
{
    for (std::size_t i = 0; i < op.inputs.size(); ++i)
        if (!valid(op.inputs[i], c.in[i]) || (c.inGrad[i] != Layout::P && !valid(op.inputs[i], c.inGrad[i])))
            return false;
    for (std::size_t i = 0; i < op.outputs.size(); ++i)
        if (!valid(op.outputs[i], c.out[i]))
            return false;
    return true;
}

bool ShardingModel::allowed(const Op& op, ShardStrategy s) const
{
    for (const auto& rule : m_options.constraints.rules) {
        const bool matches = !rule.op.empty() ? rule.op == op.name : !matchedModule(op.module, {rule.module}).empty();
        if (matches && std::find(rule.allowed.begin(), rule.allowed.end(), s) == rule.allowed.end())
            return false;
    }
    return true;
}

double ShardingModel::paramFactor(const Op& op, TensorId p, ShardStrategy s) const
{
    const Tensor& w = m_graph.tensor(p);
    const bool main = p == op.params.front();
    switch (op.kind) {
    case OpKind::Linear:
    case OpKind::MoeRouter: {
        if (op.inputs.empty() || op.outputs.empty() || shape(op.inputs[0]).empty() || shape(op.outputs[0]).empty())
            return 1;
        const double in = static_cast<double>(shape(op.inputs[0]).back());
        const double out = static_cast<double>(shape(op.outputs[0]).back());
        if (s == ShardStrategy::Column)
            return splitFactor(out); // weight and bias
        if (s == ShardStrategy::Row && main)
            return splitFactor(in);
        return 1;
    }
    case OpKind::Embedding:
        if (w.shape.size() == 2 && s == ShardStrategy::Row)
            return splitFactor(static_cast<double>(w.shape[0]));
        if (w.shape.size() == 2 && s == ShardStrategy::Column)
            return splitFactor(static_cast<double>(w.shape[1]));
        return 1;
    case OpKind::MoeExperts:
        // Stacked expert weights [E, h, f] and [E, f, h]: column splits every expert's ffn dim.
        return s == ShardStrategy::Column ? splitFactor(static_cast<double>(shape(op.params.front()).back())) : 1;
    default:
        return 1;
    }
}

bool ShardingModel::weightsMaySplit(const Op& op, ShardStrategy s) const
{
    if (op.params.empty() || m_options.ignore_small_tensor_threshold <= 0)
        return true;
    double largest = 0;
    for (const auto p : op.params)
        largest = std::max(largest, bytes(p));
    if (largest >= m_options.ignore_small_tensor_threshold)
        return true;
    for (const auto p : op.params)
        if (paramFactor(op, p, s) < 1)
            return false;
    return true;
}

} // namespace shardscape::sharding_detail
