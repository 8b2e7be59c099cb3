// SPDX-License-Identifier: MIT
// Builds the forward op graph of a decoder-only transformer (GPT-2 and the Llama family).
//
// The graph follows the conventions the memory model, the sharding solver and the exporters rely on:
// HF module paths, Megatron tensor-parallel roles, and Op::saved lists that reproduce the activation
// memory of Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer Models"),
// Table 2: s*b*h*(34 + 5*a*s/h) bytes per GPT block in 16-bit precision with dropout and no fused attention.
#include "shardscape/model/hf_config.h"

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

namespace {

// FLOPs per element of the memory-bound ops. They are rough counts of the arithmetic in the usual
// kernels; these ops are costed by their bytes, so the constants only keep FLOP totals honest.
constexpr double kNormFlops = 5; // mean, variance (or mean square), subtract, scale, shift
constexpr double kNormWeightGradFlops = 2; // per element: dgamma (and dbeta) reductions
constexpr double kGeluFlops = 8; // tanh approximation: a cubic, a tanh and a few multiplies
constexpr double kSwigluFlops = 5; // silu(g) = g * sigmoid(g) (~4) times up (1), per output element
constexpr double kRotaryFlops = 3; // x * cos + rotate_half(x) * sin
constexpr double kSoftmaxFlops = 5; // scale and mask, max, exp, sum, divide
constexpr double kDropoutFlops = 2; // compare a random number, scale
constexpr double kResidualFlops = 1; // one add
constexpr double kLossFlopsPerLogit = 4; // max, exp, sum, pick: log-softmax and NLL
// Backward of an elementwise op does about twice its forward arithmetic (the derivative and the chain rule).
constexpr double kBackwardFactor = 2;

constexpr double kMaxTokens = 1e9; // b * s per micro-batch
// 1e15 elements is petabytes: larger tensors are a mistake, and the int64 element counts stay exact.
constexpr double kMaxTensorElements = 1e15;

using Shape = std::vector<std::int64_t>;

/** Which linears carry a bias. */
struct Biases
{
    bool qkv = false;
    bool out = false;
    bool mlp = false;
};

/** HF module names of one family; everything else in the builder is family-independent. */
struct ModuleNames
{
    std::string embed, positions, embedAdd, embedDropout, blocks, finalNorm;
    std::string norm1, norm2, attn, fusedQkv, out, attnDropout, mlp, fc, proj, mlpDropout;
};

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

/** Emits the ops and tensors of one transformer; each sub-block has its own function. */
class TransformerBuilder
{
public:
    TransformerBuilder(const TransformerShape& shape, Biases biases, const BuildOptions& options, std::string name)
        : m_shape(shape)
        , m_biases(biases)
        , m_dtype(options.dtype)
        , m_names(shape.family == "gpt2" ? gpt2Names() : llamaNames(shape.num_experts > 0 && shape.family == "mixtral"))
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
        m_graph.transformer = shape;
    }

    ModelGraph build()
    {
        const TensorId ids = activation("input_ids", {m_b, m_s}, false, DType::I64);
        const TensorId labels = activation("labels", {m_b, m_s}, false, DType::I64);
        TensorId x = embeddings(ids);
        for (std::int64_t i = 0; i < m_shape.num_layers; ++i)
            x = block(m_names.blocks + "." + std::to_string(i) + ".", x, i);
        head(x, labels);
        return std::move(m_graph);
    }

private:
    void checkBatch() const
    {
        if (m_b < 1 || m_s < 1)
            throw InputError(cat("batch (", m_b, ") and seq_len (", m_s, ") must be >= 1"),
                             "give at least one sequence of one token");
        if (static_cast<double>(m_b) * static_cast<double>(m_s) > kMaxTokens)
            throw InputError(
                cat("batch x seq_len = ", m_b, " x ", m_s, " is over ", kMaxTokens, " tokens per micro-batch"),
                "use a smaller micro-batch or sequence");
        if (m_shape.learned_positions && m_s > m_shape.max_positions)
            throw InputError(cat("seq_len ", m_s, " is longer than the ", m_shape.max_positions,
                                 " learned position embeddings of '", m_shape.family, "'"),
                             cat("use --seq-len ", m_shape.max_positions, " or less"));
    }

    // --- tensors and ops ---------------------------------------------------------------------------

    TensorId addTensor(std::string name, Shape shape, DType dtype, bool isParam, bool tpSharded)
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

    TensorId activation(std::string name, Shape shape, bool tpSharded, DType dtype)
    {
        return addTensor(std::move(name), std::move(shape), dtype, false, tpSharded);
    }
    TensorId activation(std::string name, Shape shape, bool tpSharded)
    {
        return activation(std::move(name), std::move(shape), tpSharded, m_dtype);
    }
    TensorId parameter(std::string name, Shape shape, bool tpSharded)
    {
        return addTensor(std::move(name), std::move(shape), m_dtype, true, tpSharded);
    }

    double bytes(TensorId id) const { return m_graph.tensor(id).bytes(); }
    double elements(TensorId id) const { return static_cast<double>(m_graph.tensor(id).elements()); }

    static Op makeOp(std::string name, std::string module, OpKind kind, TpRole role)
    {
        Op op;
        op.name = std::move(name);
        op.module = std::move(module);
        op.kind = kind;
        op.tp_role = role;
        return op;
    }

    /** Adds the op; unless the caller set its traffic, it reads inputs and params once and writes outputs. */
    void commit(Op op)
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

    /** Shape [b, s, width]. */
    Shape bsh(std::int64_t width) const { return {m_b, m_s, width}; }

    // --- generic layers ------------------------------------------------------------------------------

    /** y = x @ W (+ b), W of shape [in, out]. Saves its input. Column biases are sharded, row biases not. */
    TensorId linear(const std::string& module, TensorId input, std::int64_t in, std::int64_t out, bool bias,
                    TpRole role, bool outputSharded)
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

    /** LayerNorm (weight and bias) or RMSNorm (weight) over the hidden size. Saves its input. */
    TensorId norm(const std::string& module, TensorId input) { return norm(module, input, m_shape.hidden); }

    /** The same over the last `width` elements (an MLA latent, or one head under TpRole::Local). */
    TensorId norm(const std::string& module, TensorId input, std::int64_t width, TpRole role = TpRole::Replicated)
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

    /** Dropout: outputs the dropped tensor and a u8 mask of the same shape, which backward needs. */
    TensorId dropout(const std::string& name, const std::string& module, TensorId input, TpRole role, bool sharded)
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

    /** The post-projection dropout of a block, present only when the model trains with dropout. */
    TensorId residualDropout(const std::string& module, TensorId input)
    {
        if (m_shape.dropout <= 0)
            return input;
        return dropout(module, module, input, TpRole::Replicated, false);
    }

    /** Residual add: belongs to the block; backward just passes the gradient on, so it saves nothing. */
    TensorId residual(const std::string& module, TensorId skip, TensorId branch)
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

    /** Token embedding (+ learned positions) (+ dropout). */
    TensorId embeddings(TensorId ids)
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
        if (m_shape.dropout > 0)
            x = dropout(m_names.embedDropout, m_names.embedDropout, x, TpRole::Replicated, false);
        return x;
    }

    /**
     * GPT-2's learned positions: a [max_positions, h] table read for positions 0..s-1, broadcast over
     * the batch. Megatron keeps it whole on every tensor-parallel rank (it has no vocabulary to split).
     */
    TensorId addPositions(TensorId tokens, double rowBytes)
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

    /** Final norm, LM head (tied to the token embedding or not) and the cross-entropy loss. */
    void head(TensorId x, TensorId labels)
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

    /** Pre-norm block: x + attn(norm1(x)), then + mlp(norm2(.)). `p` is "model.layers.N." Gemma's sandwich norms
        also normalise each branch's output before its residual add. */
    TensorId block(const std::string& p, TensorId x, std::int64_t index)
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
                  m_shape.num_experts > 0 && m_shape.dense_ffn_hidden > 0 ? m_shape.dense_ffn_hidden
                                                                          : m_shape.ffn_hidden);
        if (m_shape.sandwich_norms)
            mlpOut = norm(p + "post_feedforward_layernorm", mlpOut);
        const TensorId dropped = residualDropout(p + m_names.mlpDropout, mlpOut);
        return residual(p + "residual2", r1, dropped);
    }

    struct Qkv
    {
        TensorId q, k, v;
    };

    /** Attention: projections, (rotary), core, output projection. Returns the o_proj / c_proj output. */
    TensorId attention(const std::string& p, TensorId n1, std::int64_t index)
    {
        const std::string a = p + m_names.attn + ".";
        m_keys = m_shape.keysPerQuery(index, m_s);
        if (m_shape.kv_lora_rank > 0)
            return latentAttention(a, n1);
        Qkv qkv = m_shape.family == "gpt2" ? fusedQkv(a, n1) : separateQkv(a, n1);
        if (m_shape.qk_norm) {
            qkv.q = norm(a + "q_norm", qkv.q, m_shape.head_dim, TpRole::Local);
            qkv.k = norm(a + "k_norm", qkv.k, m_shape.head_dim, TpRole::Local);
        }
        if (!m_shape.learned_positions)
            qkv = rotary(a + "rotary", qkv);
        const TensorId context = m_shape.flash_attention ? flashCore(a + "core", qkv) : unfusedCore(a + "core", qkv);
        return linear(a + m_names.out, context, qWidth(), m_shape.hidden, m_biases.out, TpRole::Row, false);
    }

    /**
     * DeepSeek's multi-head latent attention (modeling_deepseek_v3.py DeepseekV3Attention, Megatron's
     * MLASelfAttention): q through q_a_proj -> q_a_layernorm -> q_b_proj (or one q_proj), kv through
     * kv_a_proj_with_mqa to a kv_lora_rank latent plus one shared rope key, kv_a_layernorm, then kv_b_proj to
     * every head's no-rope key and value. The down projections are replicated, the up projections split by head.
     */
    TensorId latentAttention(const std::string& a, TensorId n1)
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
        const TensorId kv = linear(a + "kv_b_proj", normed, m_shape.kv_lora_rank,
                                   heads * (m_shape.qk_nope_head_dim + vDim), false, TpRole::Column, true);
        // Split kv into the no-rope keys and the values, and append the shared rope key to every head.
        const std::string split = a + "kv_split";
        Op op = makeOp(split, split, OpKind::Reshape, TpRole::Local);
        Qkv qkv {q, activation(split + ".k", bsh(heads * qkDim), true),
                 activation(split + ".v", bsh(heads * vDim), true)};
        op.inputs = {kv, latent};
        op.outputs = {qkv.k, qkv.v};
        commit(std::move(op));
        qkv = rotary(a + "rotary", qkv, heads * qkDim, heads * qkDim);
        const TensorId context = flashCore(a + "core", qkv, heads * vDim, qkDim, vDim);
        return linear(a + m_names.out, context, heads * vDim, h, m_biases.out, TpRole::Row, false);
    }

    std::int64_t qWidth() const { return m_shape.num_heads * m_shape.head_dim; }
    std::int64_t kvWidth() const { return m_shape.num_kv_heads * m_shape.head_dim; }

    /** Llama family: q_proj, k_proj, v_proj (k and v narrower under grouped-query attention). */
    Qkv separateQkv(const std::string& a, TensorId n1)
    {
        const std::int64_t h = m_shape.hidden;
        return {linear(a + "q_proj", n1, h, qWidth(), m_biases.qkv, TpRole::Column, true),
                linear(a + "k_proj", n1, h, kvWidth(), m_biases.qkv, TpRole::Column, true),
                linear(a + "v_proj", n1, h, kvWidth(), m_biases.qkv, TpRole::Column, true)};
    }

    /** GPT-2: one c_attn projection to [b, s, 3h], then a split into q, k, v. */
    Qkv fusedQkv(const std::string& a, TensorId n1)
    {
        const std::int64_t width = qWidth() + 2 * kvWidth();
        const TensorId fused
            = linear(a + m_names.fusedQkv, n1, m_shape.hidden, width, m_biases.qkv, TpRole::Column, true);
        const std::string name = a + "split";
        Op op = makeOp(name, name, OpKind::Reshape, TpRole::Local);
        const Qkv qkv {activation(name + ".q", bsh(qWidth()), true), activation(name + ".k", bsh(kvWidth()), true),
                       activation(name + ".v", bsh(kvWidth()), true)};
        op.inputs = {fused};
        op.outputs = {qkv.q, qkv.k, qkv.v};
        commit(std::move(op));
        return qkv;
    }

    /** Rotary position embedding of q and k; backward rotates back with the same tables, so it saves nothing. */
    Qkv rotary(const std::string& name, const Qkv& in) { return rotary(name, in, qWidth(), kvWidth()); }

    Qkv rotary(const std::string& name, const Qkv& in, std::int64_t qWide, std::int64_t kWide)
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

    /** QK^T + PV FLOPs over all query-key pairs the layer attends (non-causal count, as Megatron's and MPT's MFU
        formulas): s x s for global attention, s x window for sliding-window or chunked layers. */
    double coreFlops(std::int64_t qkDim, std::int64_t vDim) const
    {
        return 2 * m_tokens * static_cast<double>(m_keys) * static_cast<double>(m_shape.num_heads)
            * static_cast<double>(qkDim + vDim);
    }
    double coreFlops() const { return coreFlops(m_shape.head_dim, m_shape.head_dim); }

    /** One fused kernel: keeps q, k, v, o and the f32 log-sum-exp [b, a, s] for backward, no s x s scores. */
    TensorId flashCore(const std::string& name, const Qkv& qkv)
    {
        return flashCore(name, qkv, qWidth(), m_shape.head_dim, m_shape.head_dim);
    }

    TensorId flashCore(const std::string& name, const Qkv& qkv, std::int64_t outWidth, std::int64_t qkDim,
                       std::int64_t vDim)
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

    /** Scores, softmax, (dropout), context: the s x s tensors Korthikanti's 5as/h term counts. */
    TensorId unfusedCore(const std::string& module, const Qkv& qkv)
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

        // Softmax backward needs only its output (dx = y * (dy - sum(dy * y))).
        Op softmax = makeOp(module + ".softmax", module, OpKind::Softmax, TpRole::Local);
        TensorId probs = activation(module + ".probs", scoresShape, true);
        softmax.inputs = {scores};
        softmax.outputs = {probs};
        softmax.saved = {probs};
        softmax.flops_fwd = kSoftmaxFlops * elements(scores);
        softmax.flops_bwd_input = kBackwardFactor * kSoftmaxFlops * elements(scores);
        commit(std::move(softmax));

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

    /** Dense MLP: SwiGLU (gate, up, act, down) or GELU (fc, act, proj). Returns the down projection. */
    TensorId mlp(const std::string& p, TensorId n2) { return mlp(p + m_names.mlp + ".", n2, m_shape.ffn_hidden); }

    /** The same with inner width f under module prefix m ("model.layers.N.mlp."). */
    TensorId mlp(const std::string& m, TensorId n2, std::int64_t f)
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

    /** GELU(x) or SwiGLU(gate, up) = silu(gate) * up: saves its inputs, runs on each rank's ffn shard. */
    TensorId activationFunction(const std::string& name, std::vector<TensorId> inputs, double flopsPerElement,
                                std::int64_t width)
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

    /** Mixtral's sparse MLP: a router over E experts, each token going to top_k of them. */
    TensorId moe(const std::string& p, TensorId n2)
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

    /**
     * The always-on shared expert beside the routed ones, a dense MLP every token passes (DeepSeek's
     * shared_experts, n_shared_experts x moe_intermediate_size wide; Qwen2-MoE's shared_expert, scaled by a
     * sigmoid gate [h, 1]; Llama 4's shared_expert), added to the routed output.
     */
    TensorId withSharedExpert(const std::string& m, TensorId n2, TensorId routed)
    {
        const bool qwen = m_shape.shared_expert_gate;
        const bool deepseek = m_shape.family == "deepseek_v2" || m_shape.family == "deepseek_v3";
        const std::string name = m + (deepseek ? "shared_experts." : "shared_expert.");
        TensorId shared = mlp(name, n2, m_shape.shared_expert_ffn);
        if (qwen) {
            const TensorId gate
                = linear(m + "shared_expert_gate", n2, m_shape.hidden, 1, false, TpRole::Replicated, false);
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

    /**
     * All experts of one layer as one op. Its outputs include the token-routed internals that backward
     * needs (dispatched inputs [k*b*s, h], up projections and activation [k*b*s, f]); weights are
     * stacked per expert: w1 (gate) [E, h, f], w3 (up) [E, h, f], w2 (down) [E, f, h].
     */
    TensorId experts(const std::string& name, TensorId n2, TensorId routerLogits)
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
        const double matmuls
            = static_cast<double>(routed) * matrices * 2 * static_cast<double>(h) * static_cast<double>(f);
        op.flops_fwd = matmuls;
        op.flops_bwd_input = matmuls;
        op.flops_bwd_weight = matmuls;
        setExpertsTraffic(op, dispatched, act, projections);
        commit(std::move(op));
        return z;
    }

    /**
     * The experts' HBM traffic: inputs and all E experts' weights once, the dispatched tokens by each up
     * projection, the projections by the activation, the activation by the down projection, and the down
     * projection's [k*b*s, h] output (written, then read by the weighted combine).
     */
    void setExpertsTraffic(Op& op, TensorId dispatched, TensorId act, const std::vector<TensorId>& projections)
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

    TransformerShape m_shape;
    Biases m_biases;
    DType m_dtype;
    ModuleNames m_names;
    std::int64_t m_b;
    std::int64_t m_s;
    double m_tokens = 0;
    ModelGraph m_graph;
    TensorId m_embeddingTable = -1;
    std::int64_t m_keys = 0; ///< keys per query of the block being built (the window, or seq_len)
};

} // namespace

ModelGraph detail::buildTransformerGraphWithBiases(const TransformerShape& shape, bool qkvBias, bool outBias,
                                                   bool mlpBias, const BuildOptions& options, std::string name)
{
    return TransformerBuilder(shape, Biases {qkvBias, outBias, mlpBias}, options, std::move(name)).build();
}

ModelGraph buildTransformerGraph(const TransformerShape& shape, const BuildOptions& options, std::string name)
{
    // Without a config to say otherwise, each family's published biases: GPT-2 everywhere, Qwen2 on q/k/v.
    const bool gpt2 = shape.family == "gpt2";
    const bool qkv = gpt2 || shape.family == "qwen2";
    return detail::buildTransformerGraphWithBiases(shape, qkv, gpt2, gpt2, options, std::move(name));
}

} // namespace shardscape
