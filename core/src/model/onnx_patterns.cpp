// SPDX-License-Identifier: MIT
// Node patterns emitted as one op: decomposed norm chains, Linear + bias, log-softmax + NLL loss, and
// unfused attention cores.
#include "onnx_importer.h"

#include <algorithm>
#include <optional>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace shardscape::onnx_detail {

// --- pattern helpers -----------------------------------------------------------------------------------

bool Importer::is(int n, std::string_view type) const
{
    return n >= 0 && defaultDomain(node(n).proto->domain()) && node(n).proto->op_type() == type;
}

std::vector<int> Importer::liveConsumers(int v) const
{
    std::vector<int> out;
    if (v < 0)
        return out;
    for (const int c : consumers(v))
        if (!node(c).folded && (out.empty() || out.back() != c))
            out.push_back(c);
    return out;
}

int Importer::single(int v) const
{
    const auto live = liveConsumers(v);
    if (live.size() != 1 || isGraphOutput(v))
        return -1;
    const int c = live.front();
    return node(c).group < 0 && node(c).attention < 0 ? c : -1;
}

int Importer::other(int n, int v) const
{
    const int a = input(n, 0);
    const int b = input(n, 1);
    return a == v ? b : b == v ? a : -1;
}

bool Importer::isSquareOf(int n, int v) const
{
    if (is(n, "Pow"))
        return input(n, 0) == v && isStatic(input(n, 1));
    return is(n, "Mul") && input(n, 0) == v && input(n, 1) == v;
}

bool Importer::groupIsClosed(const Group& g) const
{
    std::unordered_set<int> members(g.nodes.begin(), g.nodes.end());
    const int last = lastInOrder(g.nodes);
    for (const int n : g.nodes) {
        if (n == last)
            continue;
        for (const int out : node(n).outputs)
            if (out >= 0) {
                if (isGraphOutput(out))
                    return false;
                for (const int c : liveConsumers(out))
                    if (!members.count(c))
                        return false;
            }
    }
    return true;
}

int Importer::lastInOrder(const std::vector<int>& nodes) const
{
    return *std::max_element(nodes.begin(), nodes.end(), [this](int a, int b) {
        return m_position[static_cast<std::size_t>(a)] < m_position[static_cast<std::size_t>(b)];
    });
}

void Importer::addGroup(Group g)
{
    g.final = lastInOrder(g.nodes);
    const int id = static_cast<int>(m_groups.size());
    for (const int n : g.nodes)
        node(n).group = id;
    m_groups.push_back(std::move(g));
}

// --- patterns ------------------------------------------------------------------------------------------

void Importer::findNorms()
{
    for (const int n : m_order)
        if (is(n, "ReduceMean") && !node(n).folded && node(n).group < 0)
            if (auto g = matchNorm(n)) {
                addGroup(std::move(*g));
                ++m_report.norms_fused;
            }
}

std::optional<Group> Importer::matchNorm(int reduce) const
{
    const int in = input(reduce, 0);
    if (!isActivation(in))
        return std::nullopt;
    Group g;
    g.kind = OpKind::Norm;
    int center = -1;
    int variance = -1;
    const int sub = single(out0(reduce));
    if (is(sub, "Sub") && input(sub, 0) == in && input(sub, 1) == out0(reduce)) {
        // LayerNorm: the centred input is squared, averaged and divided by the root of that.
        g.input = in;
        center = out0(sub);
        int square = -1;
        for (const int c : liveConsumers(center))
            if (isSquareOf(c, center))
                square = c;
        const int second = square >= 0 ? single(out0(square)) : -1;
        if (!is(second, "ReduceMean"))
            return std::nullopt;
        g.nodes = {reduce, sub, square, second};
        variance = out0(second);
    } else {
        const int square = value(in).producer;
        if (square < 0 || node(square).group >= 0 || node(square).folded || liveConsumers(in).size() != 1)
            return std::nullopt;
        const int x = input(square, 0);
        if (!isSquareOf(square, x) || !isActivation(x))
            return std::nullopt;
        g.input = center = x;
        g.nodes = {square, reduce};
        variance = out0(reduce);
    }

    // [+ eps] -> sqrt -> (x / root) or (1 / root, x * that), with casts anywhere.
    int v = variance;
    int normalized = -1;
    bool root = false;
    for (int step = 0; step < 8 && normalized < 0; ++step) {
        const int n = single(v);
        if (n < 0)
            return std::nullopt;
        const bool upstream = (is(n, "Cast") || is(n, "Sqrt") || is(n, "Reciprocal"))
            || (is(n, "Add") && isStatic(other(n, v))) || (is(n, "Div") && input(n, 1) == v && isStatic(input(n, 0)));
        if (upstream) {
            root = root || is(n, "Sqrt") || is(n, "Reciprocal");
            g.nodes.push_back(n);
            v = out0(n);
            continue;
        }
        if ((is(n, "Div") && input(n, 0) == center && input(n, 1) == v) || (is(n, "Mul") && other(n, v) == center)) {
            normalized = n;
            g.nodes.push_back(n);
        } else {
            return std::nullopt;
        }
    }
    if (normalized < 0 || !root)
        return std::nullopt;

    // Optional cast back, scale and shift by weights.
    v = out0(normalized);
    bool scaled = false;
    bool shifted = false;
    for (int step = 0; step < 4; ++step) {
        const int n = single(v);
        if (n < 0)
            break;
        if (is(n, "Cast")) {
            g.nodes.push_back(n);
        } else if (!scaled && !shifted && is(n, "Mul") && isParam(other(n, v))) {
            g.paramValues.push_back(other(n, v));
            g.nodes.push_back(n);
            scaled = true;
        } else if (!shifted && is(n, "Add") && isParam(other(n, v))) {
            g.paramValues.push_back(other(n, v));
            g.nodes.push_back(n);
            shifted = true;
        } else {
            break;
        }
        v = out0(n);
    }
    if (!groupIsClosed(g))
        return std::nullopt;
    return g;
}

void Importer::findLinearBiases()
{
    for (const int n : m_order) {
        const NodeInfo& mm = node(n);
        if (mm.folded || mm.group >= 0 || mm.info.category != Category::MatMul || mm.inputs.size() != 2)
            continue;
        const int a = mm.inputs[0];
        const int w = mm.inputs[1];
        if (!isActivation(a) || !isParam(w))
            continue;
        const int add = single(out0(n));
        if (!is(add, "Add"))
            continue;
        const int bias = other(add, out0(n));
        const Shape& out = value(out0(n)).shape;
        if (!isParam(bias) || !value(bias).shapeKnown || value(bias).shape.empty() || out.empty()
            || elementCount(value(bias).shape) != static_cast<double>(out.back()))
            continue;
        Group g;
        g.kind = OpKind::Linear;
        g.nodes = {n, add};
        g.paramValues = {bias};
        addGroup(std::move(g));
    }
}

void Importer::findLosses()
{
    for (const int n : m_order) {
        if (!is(n, "LogSoftmax") || node(n).folded || node(n).group >= 0)
            continue;
        const int nll = single(out0(n));
        if (!is(nll, "NegativeLogLikelihoodLoss") || input(nll, 0) != out0(n))
            continue;
        Group g;
        g.kind = OpKind::Loss;
        g.nodes = {n, nll};
        g.input = input(n, 0);
        addGroup(std::move(g));
    }
}

bool Importer::isActivationMatMul(int n) const
{
    return n >= 0 && !node(n).folded && node(n).group < 0 && node(n).attention < 0
        && node(n).info.category == Category::MatMul && isActivation(input(n, 0)) && isActivation(input(n, 1));
}

int Importer::findScore(int v, int depth, std::vector<int>& chain) const
{
    const int p = value(v).producer;
    if (p < 0 || depth > 6 || single(v) < 0)
        return -1;
    if (isActivationMatMul(p))
        return p;
    const bool scaleOrMask
        = is(p, "Div") || is(p, "Mul") || is(p, "Add") || is(p, "Sub") || is(p, "Where") || is(p, "Cast");
    if (!scaleOrMask || node(p).folded || node(p).group >= 0 || node(p).attention >= 0)
        return -1;
    chain.push_back(p);
    for (const int in : node(p).inputs) {
        if (!isActivation(in))
            continue;
        const std::size_t mark = chain.size();
        if (const int score = findScore(in, depth + 1, chain); score >= 0)
            return score;
        chain.resize(mark);
    }
    chain.pop_back();
    return -1;
}

void Importer::findAttention()
{
    for (const int s : m_order) {
        if (!is(s, "Softmax") || node(s).folded || node(s).group >= 0 || !isActivation(input(s, 0)))
            continue;
        std::vector<int> members;
        const int score = findScore(input(s, 0), 0, members);
        if (score < 0)
            continue;
        int v = out0(s);
        int context = -1;
        std::vector<int> after;
        for (int step = 0; step < 4 && context < 0; ++step) {
            const int c = single(v);
            if (c < 0)
                break;
            if (is(c, "Cast") || is(c, "Dropout")) {
                after.push_back(c);
                v = out0(c);
            } else if (isActivationMatMul(c) && input(c, 0) == v) {
                context = c;
            } else {
                break;
            }
        }
        if (context < 0)
            continue;
        const int id = static_cast<int>(m_attention.size());
        m_attention.push_back({score, context, {}});
        members.push_back(s);
        members.insert(members.end(), after.begin(), after.end());
        members.push_back(score);
        members.push_back(context);
        // q and k scaled separately before the product (torch 2's scaled_dot_product_attention export).
        for (const int in : node(score).inputs) {
            const int p = value(in).producer;
            if ((is(p, "Mul") || is(p, "Div")) && !node(p).folded && node(p).group < 0 && node(p).attention < 0
                && single(in) == score && (isStatic(input(p, 1)) || isStatic(input(p, 0))))
                members.push_back(p);
        }
        for (const int m : members)
            node(m).attention = id;
        node(score).role = AttentionRole::Score;
        node(context).role = AttentionRole::Context;
        ++m_report.attention_cores;
    }
}

} // namespace shardscape::onnx_detail
