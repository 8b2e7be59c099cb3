// SPDX-License-Identifier: MIT
// Builds the forward op graph of a decoder-only transformer (GPT-2, GPT-NeoX, BLOOM and the Llama family).
//
// The graph follows the conventions the memory model, the sharding solver and the exporters rely on:
// HF module paths, Megatron tensor-parallel roles, and Op::saved lists that reproduce the activation
// memory of Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer Models"),
// Table 2: s*b*h*(34 + 5*a*s/h) bytes per GPT block in 16-bit precision with dropout and no fused attention.
#include "shardscape/model/hf_config.h"

#include "transformer_builder_impl.h"

#include "shardscape/support/error.h"
#include "shardscape/support/strings.h"

#include <algorithm>
#include <utility>

namespace shardscape {

namespace detail {
/** buildTransformerGraph with explicit linear biases (TransformerShape has no field for them). */
ModelGraph buildTransformerGraphWithBiases(const TransformerShape& shape, bool qkvBias, bool outBias, bool mlpBias,
                                           const BuildOptions& options, std::string name);
} // namespace detail

namespace transformer_detail {

namespace {

ModuleNames gpt2Names()
{
    return {"transformer.wte",
            "transformer.wpe",
            "transformer.embed_add",
            "transformer.drop",
            "transformer.h",
            "transformer.ln_f",
            "ln_1",
            "ln_2",
            "attn",
            "c_attn",
            "c_proj",
            "attn.resid_dropout",
            "mlp",
            "c_fc",
            "c_proj",
            "mlp.dropout"};
}

/** GPTNeoXForCausalLM's module names (GPT-NeoX-20B, Pythia). */
ModuleNames gptNeoxNames()
{
    return {"gpt_neox.embed_in",
            "gpt_neox.embed_positions",
            "gpt_neox.embed_add",
            "gpt_neox.emb_dropout",
            "gpt_neox.layers",
            "gpt_neox.final_layer_norm",
            "input_layernorm",
            "post_attention_layernorm",
            "attention",
            "query_key_value",
            "dense",
            "attention.resid_dropout",
            "mlp",
            "dense_h_to_4h",
            "dense_4h_to_h",
            "mlp.dropout"};
}

/** BloomForCausalLM's module names. */
ModuleNames bloomNames()
{
    return {"transformer.word_embeddings",
            "transformer.embed_positions",
            "transformer.embed_add",
            "transformer.embed_dropout",
            "transformer.h",
            "transformer.ln_f",
            "input_layernorm",
            "post_attention_layernorm",
            "self_attention",
            "query_key_value",
            "dense",
            "self_attention.resid_dropout",
            "mlp",
            "dense_h_to_4h",
            "dense_4h_to_h",
            "mlp.dropout"};
}

ModuleNames llamaNames(bool moe)
{
    const std::string mlp = moe ? "block_sparse_moe" : "mlp";
    return {"model.embed_tokens",
            "model.embed_positions",
            "model.embed_add",
            "model.embed_dropout",
            "model.layers",
            "model.norm",
            "input_layernorm",
            "post_attention_layernorm",
            "self_attn",
            "qkv_proj",
            "o_proj",
            "self_attn.resid_dropout",
            mlp,
            "up_proj",
            "down_proj",
            mlp + ".dropout"};
}

void requirePositive(std::int64_t value, const char* field)
{
    if (value < 1)
        throw InputError(cat("transformer shape: ", field, " must be >= 1, got ", value),
                         "check the model description");
}

void validateShape(const TransformerShape& t)
{
    requirePositive(t.hidden, "hidden");
    requirePositive(t.num_layers, "num_layers");
    requirePositive(t.num_heads, "num_heads");
    requirePositive(t.num_kv_heads, "num_kv_heads");
    requirePositive(t.head_dim, "head_dim");
    requirePositive(t.ffn_hidden, "ffn_hidden");
    requirePositive(t.vocab, "vocab");
    requirePositive(t.max_positions, "max_positions");
    if (t.num_layers > kMaxTransformerLayers)
        throw InputError(
            cat("transformer shape: ", t.num_layers, " layers is over the limit of ", kMaxTransformerLayers),
            "check the layer count: no real model is that deep");
    if (t.num_heads % t.num_kv_heads != 0)
        throw InputError(
            cat("transformer shape: num_kv_heads (", t.num_kv_heads, ") does not divide num_heads (", t.num_heads, ")"),
            "grouped-query attention needs whole groups of query heads per KV head");
    if (t.num_experts < 0 || t.top_k < 0 || t.top_k > t.num_experts || (t.num_experts > 0 && t.top_k < 1))
        throw InputError(cat("transformer shape: top_k (", t.top_k, ") must be in 1..num_experts (", t.num_experts,
                             ") for a mixture of experts, and both 0 for a dense model"));
    if (!(t.dropout >= 0 && t.dropout < 1))
        throw InputError(cat("transformer shape: dropout must be in [0, 1), got ", t.dropout));
    if (t.kv_lora_rank > 0) {
        requirePositive(t.qk_rope_head_dim, "qk_rope_head_dim");
        requirePositive(t.qk_nope_head_dim, "qk_nope_head_dim");
        requirePositive(t.v_head_dim, "v_head_dim");
    }
    for (const auto& [value, field] :
         {std::pair {t.dense_ffn_hidden, "dense_ffn_hidden"}, std::pair {t.first_dense_layers, "first_dense_layers"},
          std::pair {t.shared_expert_ffn, "shared_expert_ffn"}, std::pair {t.q_lora_rank, "q_lora_rank"},
          std::pair {t.kv_lora_rank, "kv_lora_rank"}, std::pair {t.attention_window, "attention_window"},
          std::pair {t.global_layer_every, "global_layer_every"}})
        if (value < 0)
            throw InputError(cat("transformer shape: ", field, " must be >= 0, got ", value));
    requirePositive(t.moe_layer_step, "moe_layer_step");
    if (t.norm != "rmsnorm" && t.norm != "layernorm")
        throw InputError(cat("transformer shape: unknown norm '", t.norm, "'"), "use \"rmsnorm\" or \"layernorm\"");
}

/** The shape as the run built it: a job config's Megatron local layer (BuildOptions) replaces the model file's
    attention kernel. */
TransformerShape asBuilt(TransformerShape shape, const BuildOptions& options)
{
    if (options.megatron_local_attention) {
        shape.flash_attention = false;
        shape.hf_eager_attention = false;
        shape.masked_softmax_fusion = options.masked_softmax_fusion;
    }
    return shape;
}

} // namespace

TransformerBuilder::TransformerBuilder(const TransformerShape& shape, Biases biases, const BuildOptions& options,
                                       std::string name)
    : m_shape(asBuilt(shape, options))
    , m_biases(biases)
    , m_dtype(options.dtype)
    , m_names(shape.family == "gpt2"           ? gpt2Names()
                  : shape.family == "gpt_neox" ? gptNeoxNames()
                  : shape.family == "bloom"    ? bloomNames()
                                               : llamaNames(shape.num_experts > 0 && shape.family == "mixtral"))
    , m_b(options.batch)
    , m_s(options.seq_len != 0 ? options.seq_len : std::min<std::int64_t>(shape.max_positions, 4096))
{
    validateShape(shape);
    checkBatch();
    m_tokens = static_cast<double>(m_b) * static_cast<double>(m_s);
    m_keys = m_s;
    m_graph.name = std::move(name);
    m_graph.batch = m_b;
    m_graph.seq_len = m_s;
    m_graph.dtype = m_dtype;
    m_graph.transformer = m_shape;
}

ModelGraph TransformerBuilder::build()
{
    const TensorId ids = activation("input_ids", {m_b, m_s}, false, DType::I64);
    const TensorId labels = activation("labels", {m_b, m_s}, false, DType::I64);
    TensorId x = embeddings(ids);
    for (std::int64_t i = 0; i < m_shape.num_layers; ++i)
        x = block(m_names.blocks + "." + std::to_string(i) + ".", x, i);
    head(x, labels);
    return std::move(m_graph);
}

void TransformerBuilder::checkBatch() const
{
    if (m_b < 1 || m_s < 1)
        throw InputError(cat("batch (", m_b, ") and seq_len (", m_s, ") must be >= 1"),
                         "give at least one sequence of one token");
    if (static_cast<double>(m_b) * static_cast<double>(m_s) > kMaxTokens)
        throw InputError(cat("batch x seq_len = ", m_b, " x ", m_s, " is over ", kMaxTokens, " tokens per micro-batch"),
                         "use a smaller micro-batch or sequence");
    if (m_shape.learned_positions && m_s > m_shape.max_positions)
        throw InputError(cat("seq_len ", m_s, " is longer than the ", m_shape.max_positions,
                             " learned position embeddings of '", m_shape.family, "'"),
                         cat("use --seq-len ", m_shape.max_positions, " or less"));
}

// --- tensors and ops ---------------------------------------------------------------------------

TensorId TransformerBuilder::addTensor(std::string name, Shape shape, DType dtype, bool isParam, bool tpSharded)
{
    double elements = 1;
    for (const auto d : shape)
        elements *= static_cast<double>(d);
    if (elements > kMaxTensorElements)
        throw InputError(cat("tensor '", name, "' would have ", elements, " elements"),
                         "use a smaller batch or sequence length (or flash attention, which stores no "
                         "s x s scores)");
    Tensor t;
    t.name = std::move(name);
    t.shape = std::move(shape);
    t.dtype = dtype;
    t.is_param = isParam;
    t.tp_sharded = tpSharded;
    return m_graph.addTensor(std::move(t));
}

TensorId TransformerBuilder::activation(std::string name, Shape shape, bool tpSharded, DType dtype)
{
    return addTensor(std::move(name), std::move(shape), dtype, false, tpSharded);
}

TensorId TransformerBuilder::activation(std::string name, Shape shape, bool tpSharded)
{
    return activation(std::move(name), std::move(shape), tpSharded, m_dtype);
}

TensorId TransformerBuilder::parameter(std::string name, Shape shape, bool tpSharded)
{
    return addTensor(std::move(name), std::move(shape), m_dtype, true, tpSharded);
}

Op TransformerBuilder::makeOp(std::string name, std::string module, OpKind kind, TpRole role)
{
    Op op;
    op.name = std::move(name);
    op.module = std::move(module);
    op.kind = kind;
    op.tp_role = role;
    return op;
}

void TransformerBuilder::commit(Op op)
{
    if (op.bytes_read == 0 && op.bytes_written == 0) {
        for (const auto t : op.inputs)
            op.bytes_read += bytes(t);
        for (const auto t : op.params)
            op.bytes_read += bytes(t);
        for (const auto t : op.outputs)
            op.bytes_written += bytes(t);
    }
    m_graph.addOp(std::move(op));
}

// --- generic layers ------------------------------------------------------------------------------

TensorId TransformerBuilder::linear(const std::string& module, TensorId input, std::int64_t in, std::int64_t out,
                                    bool bias, TpRole role, bool outputSharded)
{
    Op op = makeOp(module, module, OpKind::Linear, role);
    const bool weightSharded = role != TpRole::Replicated;
    op.inputs = {input};
    op.params = {parameter(module + ".weight", {in, out}, weightSharded)};
    if (bias)
        op.params.push_back(parameter(module + ".bias", {out}, role == TpRole::Column));
    const TensorId y = activation(module + ".out", bsh(out), outputSharded);
    op.outputs = {y};
    op.saved = {input};
    const double matmul = 2 * m_tokens * static_cast<double>(in) * static_cast<double>(out);
    const double biasAdd = bias ? m_tokens * static_cast<double>(out) : 0;
    op.flops_fwd = matmul + biasAdd;
    op.flops_bwd_input = matmul;
    op.flops_bwd_weight = matmul + biasAdd;
    commit(std::move(op));
    return y;
}

TensorId TransformerBuilder::norm(const std::string& module, TensorId input, std::int64_t width, TpRole role)
{
    Op op = makeOp(module, module, OpKind::Norm, role);
    const bool sharded = role == TpRole::Local;
    op.inputs = {input};
    op.params = {parameter(module + ".weight", {width}, false)};
    if (m_shape.norm == "layernorm")
        op.params.push_back(parameter(module + ".bias", {width}, false));
    const TensorId y = activation(module + ".out", m_graph.tensor(input).shape, sharded);
    op.outputs = {y};
    op.saved = {input};
    const double n = elements(input);
    op.flops_fwd = kNormFlops * n;
    op.flops_bwd_input = kBackwardFactor * kNormFlops * n;
    op.flops_bwd_weight = kNormWeightGradFlops * n;
    commit(std::move(op));
    return y;
}

TensorId TransformerBuilder::dropout(const std::string& name, const std::string& module, TensorId input, TpRole role,
                                     bool sharded)
{
    Op op = makeOp(name, module, OpKind::Dropout, role);
    const Shape shape = m_graph.tensor(input).shape;
    const TensorId y = activation(name + ".out", shape, sharded);
    const TensorId mask = activation(name + ".mask", shape, sharded, DType::U8);
    op.inputs = {input};
    op.outputs = {y, mask};
    op.saved = {mask};
    op.flops_fwd = kDropoutFlops * elements(input);
    op.flops_bwd_input = elements(input);
    commit(std::move(op));
    return y;
}

TensorId TransformerBuilder::residualDropout(const std::string& module, TensorId input)
{
    if (m_shape.dropout <= 0)
        return input;
    return dropout(module, module, input, TpRole::Replicated, false);
}

TensorId TransformerBuilder::residual(const std::string& module, TensorId skip, TensorId branch)
{
    Op op = makeOp(module, module, OpKind::Elementwise, TpRole::Replicated);
    const TensorId y = activation(module + ".out", m_graph.tensor(skip).shape, false);
    op.inputs = {skip, branch};
    op.outputs = {y};
    op.flops_fwd = kResidualFlops * elements(y);
    commit(std::move(op));
    return y;
}

// --- embedding and head ------------------------------------------------------------------------

TensorId TransformerBuilder::embeddings(TensorId ids)
{
    const double rowBytes = static_cast<double>(m_shape.hidden) * dtypeBytes(m_dtype);
    Op op = makeOp(m_names.embed, m_names.embed, OpKind::Embedding, TpRole::Vocab);
    m_embeddingTable = parameter(m_names.embed + ".weight", {m_shape.vocab, m_shape.hidden}, true);
    TensorId x = activation(m_names.embed + ".out", bsh(m_shape.hidden), false);
    op.inputs = {ids};
    op.params = {m_embeddingTable};
    op.outputs = {x};
    op.saved = {ids};
    // Backward scatter-adds one gradient row per token into the table.
    op.flops_bwd_weight = m_tokens * static_cast<double>(m_shape.hidden);
    // A gather reads only the rows it looks up, not the whole table.
    op.bytes_read = bytes(ids) + m_tokens * rowBytes;
    op.bytes_written = bytes(x);
    commit(std::move(op));
    if (m_shape.learned_positions)
        x = addPositions(x, rowBytes);
    // Megatron-DeepSpeed's VocabParallelEmbedding normalises its output before the embedding dropout
    // (megatron/mpu/layers.py, --embed-layernorm); the norm saves its input for the backward.
    if (m_shape.embedding_norm)
        x = norm(m_names.embed + "_layernorm", x);
    if (m_shape.dropout > 0)
        x = dropout(m_names.embedDropout, m_names.embedDropout, x, TpRole::Replicated, false);
    return x;
}

TensorId TransformerBuilder::addPositions(TensorId tokens, double rowBytes)
{
    Op lookup = makeOp(m_names.positions, m_names.positions, OpKind::Embedding, TpRole::Replicated);
    const TensorId table = parameter(m_names.positions + ".weight", {m_shape.max_positions, m_shape.hidden}, false);
    const TensorId pos = activation(m_names.positions + ".out", {1, m_s, m_shape.hidden}, false);
    lookup.params = {table};
    lookup.outputs = {pos};
    lookup.flops_bwd_weight = m_tokens * static_cast<double>(m_shape.hidden); // sum over the batch
    lookup.bytes_read = static_cast<double>(m_s) * rowBytes;
    lookup.bytes_written = bytes(pos);
    commit(std::move(lookup));

    Op add = makeOp(m_names.embedAdd, m_names.embedAdd, OpKind::Elementwise, TpRole::Replicated);
    const TensorId y = activation(m_names.embedAdd + ".out", bsh(m_shape.hidden), false);
    add.inputs = {tokens, pos};
    add.outputs = {y};
    add.flops_fwd = kResidualFlops * elements(y);
    commit(std::move(add));
    return y;
}

void TransformerBuilder::head(TensorId x, TensorId labels)
{
    const TensorId normed = norm(m_names.finalNorm, x);
    const std::int64_t h = m_shape.hidden;
    const std::int64_t V = m_shape.vocab;
    Op lm = makeOp("lm_head", "lm_head", OpKind::Linear, TpRole::Vocab);
    lm.inputs = {normed};
    lm.params = {m_shape.tied_embeddings ? m_embeddingTable : parameter("lm_head.weight", {h, V}, true)};
    const TensorId logits = activation("lm_head.out", bsh(V), true);
    lm.outputs = {logits};
    lm.saved = {normed};
    const double matmul = 2 * m_tokens * static_cast<double>(h) * static_cast<double>(V);
    lm.flops_fwd = matmul;
    lm.flops_bwd_input = matmul;
    lm.flops_bwd_weight = matmul;
    commit(std::move(lm));

    Op loss = makeOp("loss", "loss", OpKind::Loss, TpRole::Vocab);
    const TensorId value = activation("loss.out", {1}, false, DType::F32);
    loss.inputs = {logits, labels};
    loss.outputs = {value};
    loss.saved = {logits};
    loss.flops_fwd = kLossFlopsPerLogit * elements(logits);
    // softmax(logits) - one_hot(labels), recomputing the softmax: about the forward's arithmetic.
    loss.flops_bwd_input = kLossFlopsPerLogit * elements(logits);
    commit(std::move(loss));
}

// --- the block -----------------------------------------------------------------------------------

TensorId TransformerBuilder::block(const std::string& p, TensorId x, std::int64_t index)
{
    const TensorId n1 = norm(p + m_names.norm1, x);
    TensorId attnOut = attention(p, n1, index);
    if (m_shape.sandwich_norms)
        attnOut = norm(p + "post_attention_layernorm", attnOut);
    attnOut = residualDropout(p + m_names.attnDropout, attnOut);
    const TensorId r1 = residual(p + "residual1", x, attnOut);
    const TensorId n2 = norm(p + (m_shape.sandwich_norms ? "pre_feedforward_layernorm" : m_names.norm2), r1);
    TensorId mlpOut = m_shape.isMoeLayer(index)
        ? moe(p, n2)
        : mlp(p + m_names.mlp + ".", n2,
              m_shape.num_experts > 0 && m_shape.dense_ffn_hidden > 0 ? m_shape.dense_ffn_hidden : m_shape.ffn_hidden);
    if (m_shape.sandwich_norms)
        mlpOut = norm(p + "post_feedforward_layernorm", mlpOut);
    const TensorId dropped = residualDropout(p + m_names.mlpDropout, mlpOut);
    return residual(p + "residual2", r1, dropped);
}

} // namespace transformer_detail

using transformer_detail::Biases;
using transformer_detail::TransformerBuilder;

ModelGraph detail::buildTransformerGraphWithBiases(const TransformerShape& shape, bool qkvBias, bool outBias,
                                                   bool mlpBias, const BuildOptions& options, std::string name)
{
    return TransformerBuilder(shape, Biases {qkvBias, outBias, mlpBias}, options, std::move(name)).build();
}

ModelGraph buildTransformerGraph(const TransformerShape& shape, const BuildOptions& options, std::string name)
{
    // Without a config to say otherwise, each family's published biases: GPT-style blocks everywhere, Qwen2 on q/k/v.
    const bool everywhere = shape.gptStyleBlocks();
    const bool qkv = everywhere || shape.family == "qwen2";
    return detail::buildTransformerGraphWithBiases(shape, qkv, everywhere, everywhere, options, std::move(name));
}

} // namespace shardscape
