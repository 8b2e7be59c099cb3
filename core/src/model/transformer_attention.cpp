// SPDX-License-Identifier: MIT
// Attention in the transformer builder: q/k/v projections (separate or fused), rotary, the flash or
// unfused core, DeepSeek's latent attention, and the output projection.
#include "transformer_builder_impl.h"

#include <utility>

namespace shardscape::transformer_detail {

TensorId TransformerBuilder::attention(const std::string& p, TensorId n1, std::int64_t index)
{
    const std::string a = p + m_names.attn + ".";
    m_keys = m_shape.keysPerQuery(index, m_s);
    if (m_shape.kv_lora_rank > 0)
        return latentAttention(a, n1);
    Qkv qkv = m_shape.gptStyleBlocks() ? fusedQkv(a, n1) : separateQkv(a, n1);
    if (m_shape.qk_norm) {
        qkv.q = norm(a + "q_norm", qkv.q, m_shape.head_dim, TpRole::Local);
        qkv.k = norm(a + "k_norm", qkv.k, m_shape.head_dim, TpRole::Local);
    }
    if (!m_shape.learned_positions)
        qkv = rotary(a + "rotary", qkv);
    const TensorId context = m_shape.flash_attention ? flashCore(a + "core", qkv) : unfusedCore(a + "core", qkv);
    return linear(a + m_names.out, context, qWidth(), m_shape.hidden, m_biases.out, TpRole::Row, false);
}

TensorId TransformerBuilder::latentAttention(const std::string& a, TensorId n1)
{
    const std::int64_t h = m_shape.hidden;
    const std::int64_t heads = m_shape.num_heads;
    const std::int64_t qkDim = m_shape.qk_nope_head_dim + m_shape.qk_rope_head_dim;
    const std::int64_t vDim = m_shape.v_head_dim;
    TensorId q = -1;
    if (m_shape.q_lora_rank > 0) {
        const TensorId down = linear(a + "q_a_proj", n1, h, m_shape.q_lora_rank, false, TpRole::Replicated, false);
        const TensorId normed = norm(a + "q_a_layernorm", down, m_shape.q_lora_rank);
        q = linear(a + "q_b_proj", normed, m_shape.q_lora_rank, heads * qkDim, false, TpRole::Column, true);
    } else {
        q = linear(a + "q_proj", n1, h, heads * qkDim, false, TpRole::Column, true);
    }
    const TensorId latent = linear(a + "kv_a_proj_with_mqa", n1, h, m_shape.kv_lora_rank + m_shape.qk_rope_head_dim,
                                   false, TpRole::Replicated, false);
    const TensorId normed = norm(a + "kv_a_layernorm", latent, m_shape.kv_lora_rank);
    const TensorId kv = linear(a + "kv_b_proj", normed, m_shape.kv_lora_rank, heads * (m_shape.qk_nope_head_dim + vDim),
                               false, TpRole::Column, true);
    // Split kv into the no-rope keys and the values, and append the shared rope key to every head.
    const std::string split = a + "kv_split";
    Op op = makeOp(split, split, OpKind::Reshape, TpRole::Local);
    Qkv qkv {q, activation(split + ".k", bsh(heads * qkDim), true), activation(split + ".v", bsh(heads * vDim), true)};
    op.inputs = {kv, latent};
    op.outputs = {qkv.k, qkv.v};
    commit(std::move(op));
    qkv = rotary(a + "rotary", qkv, heads * qkDim, heads * qkDim);
    const TensorId context = flashCore(a + "core", qkv, heads * vDim, qkDim, vDim);
    return linear(a + m_names.out, context, heads * vDim, h, m_biases.out, TpRole::Row, false);
}

Qkv TransformerBuilder::separateQkv(const std::string& a, TensorId n1)
{
    const std::int64_t h = m_shape.hidden;
    return {linear(a + "q_proj", n1, h, qWidth(), m_biases.qkv, TpRole::Column, true),
            linear(a + "k_proj", n1, h, kvWidth(), m_biases.qkv, TpRole::Column, true),
            linear(a + "v_proj", n1, h, kvWidth(), m_biases.qkv, TpRole::Column, true)};
}

Qkv TransformerBuilder::fusedQkv(const std::string& a, TensorId n1)
{
    const std::int64_t width = qWidth() + 2 * kvWidth();
    const TensorId fused = linear(a + m_names.fusedQkv, n1, m_shape.hidden, width, m_biases.qkv, TpRole::Column, true);
    const std::string name = a + "split";
    Op op = makeOp(name, name, OpKind::Reshape, TpRole::Local);
    const Qkv qkv {activation(name + ".q", bsh(qWidth()), true), activation(name + ".k", bsh(kvWidth()), true),
                   activation(name + ".v", bsh(kvWidth()), true)};
    op.inputs = {fused};
    op.outputs = {qkv.q, qkv.k, qkv.v};
    commit(std::move(op));
    return qkv;
}

Qkv TransformerBuilder::rotary(const std::string& name, const Qkv& in, std::int64_t qWide, std::int64_t kWide)
{
    Op op = makeOp(name, name, OpKind::Elementwise, TpRole::Local);
    const Qkv out {activation(name + ".q", bsh(qWide), true), activation(name + ".k", bsh(kWide), true), in.v};
    op.inputs = {in.q, in.k};
    op.outputs = {out.q, out.k};
    op.flops_fwd = kRotaryFlops * (elements(in.q) + elements(in.k));
    op.flops_bwd_input = op.flops_fwd;
    commit(std::move(op));
    return out;
}

double TransformerBuilder::coreFlops(std::int64_t qkDim, std::int64_t vDim) const
{
    return 2 * m_tokens * static_cast<double>(m_keys) * static_cast<double>(m_shape.num_heads)
        * static_cast<double>(qkDim + vDim);
}

TensorId TransformerBuilder::flashCore(const std::string& name, const Qkv& qkv)
{
    return flashCore(name, qkv, qWidth(), m_shape.head_dim, m_shape.head_dim);
}

TensorId TransformerBuilder::flashCore(const std::string& name, const Qkv& qkv, std::int64_t outWidth,
                                       std::int64_t qkDim, std::int64_t vDim)
{
    Op op = makeOp(name, name, OpKind::FlashAttention, TpRole::Heads);
    const TensorId o = activation(name + ".out", bsh(outWidth), true);
    const TensorId lse = activation(name + ".lse", {m_b, m_shape.num_heads, m_s}, true, DType::F32);
    op.inputs = {qkv.q, qkv.k, qkv.v};
    op.outputs = {o, lse};
    op.saved = {qkv.q, qkv.k, qkv.v, o, lse};
    op.flops_fwd = coreFlops(qkDim, vDim);
    op.flops_bwd_input = 2 * op.flops_fwd;
    commit(std::move(op));
    return o;
}

TensorId TransformerBuilder::fusedSoftmax(const std::string& module, TensorId scores)
{
    // Megatron's FusedScaleMaskSoftmax: scale, mask and softmax in one kernel. Its backward needs only its output
    // (dx = y * (dy - sum(dy * y))).
    Op softmax = makeOp(module + ".softmax", module, OpKind::Softmax, TpRole::Local);
    const TensorId probs = activation(module + ".probs", m_graph.tensor(scores).shape, true);
    softmax.inputs = {scores};
    softmax.outputs = {probs};
    softmax.saved = {probs};
    softmax.flops_fwd = kSoftmaxFlops * elements(scores);
    softmax.flops_bwd_input = kBackwardFactor * kSoftmaxFlops * elements(scores);
    commit(std::move(softmax));
    return probs;
}

TensorId TransformerBuilder::torchMaskedSoftmax(const std::string& module, TensorId scores)
{
    // Megatron's FusedScaleMaskSoftmax.forward_torch_softmax (megatron/core/fusions/fused_softmax.py), taken when
    // --no-masked-softmax-fusion turns the fused kernel off: attention_mask_func masks the 16-bit scores in place
    // (masked_fill_ with the boolean causal mask, [b, 1, s, s] from the data loader or [s, s] built in place), then
    // torch.nn.Softmax runs in the scores' dtype (softmax_in_fp32 is off unless query-key layer scaling is on).
    // Backward passes the gradient through the mask (grad.masked_fill) after the softmax's backward.
    const double n = elements(scores);
    Op mask = makeOp(module + ".mask", module, OpKind::Elementwise, TpRole::Local);
    const TensorId masked = activation(module + ".masked", m_graph.tensor(scores).shape, true);
    mask.inputs = {scores};
    mask.outputs = {masked};
    mask.flops_fwd = n;
    mask.flops_bwd_input = n;
    mask.bytes_read = bytes(scores) + static_cast<double>(m_b) * static_cast<double>(m_s) * static_cast<double>(m_s);
    mask.bytes_written = bytes(masked);
    commit(std::move(mask));
    return fusedSoftmax(module, masked);
}

TensorId TransformerBuilder::eagerSoftmax(const std::string& module, TensorId scores)
{
    // Hugging Face's eager_attention_forward (transformers/models/llama/modeling_llama.py and the families that
    // copy it): torch.matmul(q, k^T) * scaling, + causal_mask, softmax(dtype=torch.float32), .to(q.dtype). Each is
    // a kernel of its own over the s x s scores; the softmax saves its fp32 output for backward, and the 16-bit copy
    // is what the PV matmul saves.
    const Shape shape = m_graph.tensor(scores).shape;
    const double n = elements(scores);
    const auto elementwise = [&](const std::string& name, TensorId in, DType dtype, double flops) {
        Op op = makeOp(module + "." + name, module, OpKind::Elementwise, TpRole::Local);
        const TensorId out = activation(module + "." + name + ".out", shape, true, dtype);
        op.inputs = {in};
        op.outputs = {out};
        op.flops_fwd = flops * n;
        op.flops_bwd_input = flops * n;
        return std::pair {op, out};
    };
    auto [scale, scaled] = elementwise("scale", scores, m_dtype, 1);
    commit(std::move(scale));
    // The additive mask [b, 1, s, s] is read beside the scores: once, at the least (it is broadcast over the heads).
    auto [mask, masked] = elementwise("mask", scaled, m_dtype, 1);
    mask.bytes_read = bytes(scaled)
        + static_cast<double>(m_b) * static_cast<double>(m_s) * static_cast<double>(m_s) * dtypeBytes(m_dtype);
    mask.bytes_written = bytes(masked);
    commit(std::move(mask));

    Op softmax = makeOp(module + ".softmax", module, OpKind::Softmax, TpRole::Local);
    const TensorId probs32 = activation(module + ".probs_fp32", shape, true, DType::F32);
    softmax.inputs = {masked};
    softmax.outputs = {probs32};
    softmax.saved = {probs32};
    softmax.flops_fwd = kSoftmaxFlops * n;
    softmax.flops_bwd_input = kBackwardFactor * kSoftmaxFlops * n;
    commit(std::move(softmax));

    auto [cast, probs] = elementwise("cast", probs32, m_dtype, 1);
    commit(std::move(cast));
    return probs;
}

TensorId TransformerBuilder::unfusedCore(const std::string& module, const Qkv& qkv)
{
    const Shape scoresShape {m_b, m_shape.num_heads, m_s, m_s};
    const double half = coreFlops() / 2;

    Op score = makeOp(module + ".score", module, OpKind::AttentionScore, TpRole::Heads);
    const TensorId scores = activation(module + ".scores", scoresShape, true);
    score.inputs = {qkv.q, qkv.k};
    score.outputs = {scores};
    score.saved = {qkv.q, qkv.k};
    score.flops_fwd = half;
    score.flops_bwd_input = 2 * half;
    commit(std::move(score));

    TensorId probs = m_shape.hf_eager_attention ? eagerSoftmax(module, scores)
        : m_shape.masked_softmax_fusion         ? fusedSoftmax(module, scores)
                                                : torchMaskedSoftmax(module, scores);

    if (m_shape.dropout > 0)
        probs = dropout(module + ".dropout", module, probs, TpRole::Local, true);

    Op context = makeOp(module + ".context", module, OpKind::AttentionContext, TpRole::Heads);
    const TensorId out = activation(module + ".out", bsh(qWidth()), true);
    context.inputs = {probs, qkv.v};
    context.outputs = {out};
    context.saved = {probs, qkv.v};
    context.flops_fwd = half;
    context.flops_bwd_input = 2 * half;
    commit(std::move(context));
    return out;
}

} // namespace shardscape::transformer_detail
