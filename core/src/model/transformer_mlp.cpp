// SPDX-License-Identifier: MIT
// The MLP in the transformer builder: dense (GELU or gated), and mixture-of-experts layers with their
// router, experts and shared expert.
#include "transformer_builder_impl.h"

#include <utility>

namespace shardscape::transformer_detail {

TensorId TransformerBuilder::mlp(const std::string& m, TensorId n2, std::int64_t f)
{
    const std::int64_t h = m_shape.hidden;
    const bool bias = m_biases.mlp;
    TensorId hidden = -1;
    if (m_shape.gated_mlp) {
        const TensorId gate = linear(m + "gate_proj", n2, h, f, bias, TpRole::Column, true);
        const TensorId up = linear(m + "up_proj", n2, h, f, bias, TpRole::Column, true);
        hidden = activationFunction(m + "act", {gate, up}, kSwigluFlops, f);
    } else {
        const TensorId fc = linear(m + m_names.fc, n2, h, f, bias, TpRole::Column, true);
        hidden = activationFunction(m + "act", {fc}, kGeluFlops, f);
    }
    return linear(m + m_names.proj, hidden, f, h, bias, TpRole::Row, false);
}

TensorId TransformerBuilder::activationFunction(const std::string& name, std::vector<TensorId> inputs,
                                                double flopsPerElement, std::int64_t width)
{
    Op op = makeOp(name, name, OpKind::Elementwise, TpRole::Local);
    const TensorId y = activation(name + ".out", bsh(width), true);
    op.inputs = inputs;
    op.outputs = {y};
    op.saved = std::move(inputs);
    op.flops_fwd = flopsPerElement * elements(y);
    op.flops_bwd_input = kBackwardFactor * op.flops_fwd;
    commit(std::move(op));
    return y;
}

TensorId TransformerBuilder::moe(const std::string& p, TensorId n2)
{
    const std::string m = p + m_names.mlp + ".";
    const std::int64_t h = m_shape.hidden;
    const std::int64_t E = m_shape.num_experts;

    Op router = makeOp(m + "gate", m + "gate", OpKind::MoeRouter, TpRole::Replicated);
    const TensorId logits = activation(m + "gate.out", bsh(E), false);
    router.inputs = {n2};
    router.params = {parameter(m + "gate.weight", {h, E}, false)};
    router.outputs = {logits};
    router.saved = {n2};
    const double routerFlops = 2 * m_tokens * static_cast<double>(h) * static_cast<double>(E);
    router.flops_fwd = routerFlops;
    router.flops_bwd_input = routerFlops;
    router.flops_bwd_weight = routerFlops;
    commit(std::move(router));
    const TensorId routed = experts(m + "experts", n2, logits);
    return m_shape.shared_expert_ffn > 0 ? withSharedExpert(m, n2, routed) : routed;
}

TensorId TransformerBuilder::withSharedExpert(const std::string& m, TensorId n2, TensorId routed)
{
    const bool qwen = m_shape.shared_expert_gate;
    const bool deepseek = m_shape.family == "deepseek_v2" || m_shape.family == "deepseek_v3";
    const std::string name = m + (deepseek ? "shared_experts." : "shared_expert.");
    TensorId shared = mlp(name, n2, m_shape.shared_expert_ffn);
    if (qwen) {
        const TensorId gate = linear(m + "shared_expert_gate", n2, m_shape.hidden, 1, false, TpRole::Replicated, false);
        Op scale
            = makeOp(m + "shared_expert_scale", m + "shared_expert_scale", OpKind::Elementwise, TpRole::Replicated);
        const TensorId y = activation(m + "shared_expert_scale.out", bsh(m_shape.hidden), false);
        scale.inputs = {shared, gate};
        scale.outputs = {y};
        scale.saved = {shared, gate};
        scale.flops_fwd = 5 * elements(y); // sigmoid of the gate, broadcast multiply
        scale.flops_bwd_input = kBackwardFactor * scale.flops_fwd;
        commit(std::move(scale));
        shared = y;
    }
    return residual(m + "shared_add", routed, shared);
}

TensorId TransformerBuilder::experts(const std::string& name, TensorId n2, TensorId routerLogits)
{
    const std::int64_t h = m_shape.hidden;
    const std::int64_t f = m_shape.ffn_hidden;
    const std::int64_t E = m_shape.num_experts;
    const std::int64_t routed = m_shape.top_k * m_b * m_s;
    const bool gated = m_shape.gated_mlp;
    Op op = makeOp(name, name, OpKind::MoeExperts, TpRole::Experts);
    op.num_experts = static_cast<std::int32_t>(E);
    op.top_k = static_cast<std::int32_t>(m_shape.top_k);
    op.params = {parameter(name + ".w1", {E, h, f}, true)};
    if (gated)
        op.params.push_back(parameter(name + ".w3", {E, h, f}, true));
    op.params.push_back(parameter(name + ".w2", {E, f, h}, true));

    const TensorId z = activation(name + ".out", bsh(h), false);
    const TensorId dispatched = activation(name + ".dispatched", {routed, h}, false);
    std::vector<TensorId> projections {activation(name + ".w1_out", {routed, f}, true)};
    if (gated)
        projections.push_back(activation(name + ".w3_out", {routed, f}, true));
    const TensorId act = activation(name + ".act", {routed, f}, true);
    op.inputs = {n2, routerLogits};
    op.outputs = {z, dispatched};
    op.outputs.insert(op.outputs.end(), projections.begin(), projections.end());
    op.outputs.push_back(act);
    op.saved = {dispatched};
    op.saved.insert(op.saved.end(), projections.begin(), projections.end());
    op.saved.push_back(act);

    const double matrices = static_cast<double>(op.params.size());
    const double matmuls = static_cast<double>(routed) * matrices * 2 * static_cast<double>(h) * static_cast<double>(f);
    op.flops_fwd = matmuls;
    op.flops_bwd_input = matmuls;
    op.flops_bwd_weight = matmuls;
    setExpertsTraffic(op, dispatched, act, projections);
    commit(std::move(op));
    return z;
}

void TransformerBuilder::setExpertsTraffic(Op& op, TensorId dispatched, TensorId act,
                                           const std::vector<TensorId>& projections)
{
    const double ups = static_cast<double>(projections.size());
    const double down = bytes(dispatched);
    op.bytes_read = bytes(op.inputs[0]) + bytes(op.inputs[1]) + ups * bytes(dispatched)
        + ups * bytes(projections.front()) + bytes(act) + down;
    for (const auto p : op.params)
        op.bytes_read += bytes(p);
    op.bytes_written = down;
    for (const auto t : op.outputs)
        op.bytes_written += bytes(t);
}

} // namespace shardscape::transformer_detail
