// SPDX-License-Identifier: MIT
// The transformer builder's class and constants (transformer_builder.cpp: tensors, generic layers, embedding,
// head and block; transformer_attention.cpp; transformer_mlp.cpp). Private to core/src/model.
#pragma once

#include "shardscape/model/hf_config.h"

#include <cstdint>
#include <string>
#include <vector>

namespace shardscape::transformer_detail {

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

/** The query, key and value activations of one attention layer. */
struct Qkv
{
    TensorId q, k, v;
};

/** Emits the ops and tensors of one transformer; each sub-block has its own function. */
class TransformerBuilder
{
public:
    TransformerBuilder(const TransformerShape& shape, Biases biases, const BuildOptions& options, std::string name);
    ModelGraph build();

private:
    void checkBatch() const;

    // --- tensors and ops ---------------------------------------------------------------------------

    TensorId addTensor(std::string name, Shape shape, DType dtype, bool isParam, bool tpSharded);
    TensorId activation(std::string name, Shape shape, bool tpSharded, DType dtype);
    TensorId activation(std::string name, Shape shape, bool tpSharded);
    TensorId parameter(std::string name, Shape shape, bool tpSharded);
    double bytes(TensorId id) const { return m_graph.tensor(id).bytes(); }
    double elements(TensorId id) const { return static_cast<double>(m_graph.tensor(id).elements()); }
    static Op makeOp(std::string name, std::string module, OpKind kind, TpRole role);

    /** Adds the op; unless the caller set its traffic, it reads inputs and params once and writes outputs. */
    void commit(Op op);

    /** Shape [b, s, width]. */
    Shape bsh(std::int64_t width) const { return {m_b, m_s, width}; }

    // --- generic layers ------------------------------------------------------------------------------

    /** y = x @ W (+ b), W of shape [in, out]. Saves its input. Column biases are sharded, row biases not. */
    TensorId linear(const std::string& module, TensorId input, std::int64_t in, std::int64_t out, bool bias,
                    TpRole role, bool outputSharded);

    /** LayerNorm (weight and bias) or RMSNorm (weight) over the hidden size. Saves its input. */
    TensorId norm(const std::string& module, TensorId input) { return norm(module, input, m_shape.hidden); }

    /** The same over the last `width` elements (an MLA latent, or one head under TpRole::Local). */
    TensorId norm(const std::string& module, TensorId input, std::int64_t width, TpRole role = TpRole::Replicated);

    /** Dropout: outputs the dropped tensor and a u8 mask of the same shape, which backward needs. */
    TensorId dropout(const std::string& name, const std::string& module, TensorId input, TpRole role, bool sharded);

    /** The post-projection dropout of a block, present only when the model trains with dropout. */
    TensorId residualDropout(const std::string& module, TensorId input);

    /** Residual add: belongs to the block; backward just passes the gradient on, so it saves nothing. */
    TensorId residual(const std::string& module, TensorId skip, TensorId branch);

    // --- embedding and head ------------------------------------------------------------------------

    /** Token embedding (+ learned positions) (+ dropout). */
    TensorId embeddings(TensorId ids);

    /**
     * GPT-2's learned positions: a [max_positions, h] table read for positions 0..s-1, broadcast over
     * the batch. Megatron keeps it whole on every tensor-parallel rank (it has no vocabulary to split).
     */
    TensorId addPositions(TensorId tokens, double rowBytes);

    /** Final norm, LM head (tied to the token embedding or not) and the cross-entropy loss. */
    void head(TensorId x, TensorId labels);

    // --- the block -----------------------------------------------------------------------------------

    /** Pre-norm block: x + attn(norm1(x)), then + mlp(norm2(.)). `p` is "model.layers.N." Gemma's sandwich norms
        also normalise each branch's output before its residual add. */
    TensorId block(const std::string& p, TensorId x, std::int64_t index);

    /** Attention: projections, (rotary), core, output projection. Returns the o_proj / c_proj output. */
    TensorId attention(const std::string& p, TensorId n1, std::int64_t index);

    /**
     * DeepSeek's multi-head latent attention (modeling_deepseek_v3.py DeepseekV3Attention, Megatron's
     * MLASelfAttention): q through q_a_proj -> q_a_layernorm -> q_b_proj (or one q_proj), kv through
     * kv_a_proj_with_mqa to a kv_lora_rank latent plus one shared rope key, kv_a_layernorm, then kv_b_proj to
     * every head's no-rope key and value. The down projections are replicated, the up projections split by head.
     */
    TensorId latentAttention(const std::string& a, TensorId n1);
    std::int64_t qWidth() const { return m_shape.num_heads * m_shape.head_dim; }
    std::int64_t kvWidth() const { return m_shape.num_kv_heads * m_shape.head_dim; }

    /** Llama family: q_proj, k_proj, v_proj (k and v narrower under grouped-query attention). */
    Qkv separateQkv(const std::string& a, TensorId n1);

    /** GPT-2: one c_attn projection to [b, s, 3h], then a split into q, k, v. */
    Qkv fusedQkv(const std::string& a, TensorId n1);

    /** Rotary position embedding of q and k; backward rotates back with the same tables, so it saves nothing. */
    Qkv rotary(const std::string& name, const Qkv& in) { return rotary(name, in, qWidth(), kvWidth()); }
    Qkv rotary(const std::string& name, const Qkv& in, std::int64_t qWide, std::int64_t kWide);

    /** QK^T + PV FLOPs over all query-key pairs the layer attends (non-causal count, as Megatron's and MPT's MFU
        formulas): s x s for global attention, s x window for sliding-window or chunked layers. */
    double coreFlops(std::int64_t qkDim, std::int64_t vDim) const;
    double coreFlops() const { return coreFlops(m_shape.head_dim, m_shape.head_dim); }

    /** One fused kernel: keeps q, k, v, o and the f32 log-sum-exp [b, a, s] for backward, no s x s scores. */
    TensorId flashCore(const std::string& name, const Qkv& qkv);
    TensorId flashCore(const std::string& name, const Qkv& qkv, std::int64_t outWidth, std::int64_t qkDim,
                       std::int64_t vDim);

    /** Scores, softmax, (dropout), context: the s x s tensors Korthikanti's 5as/h term counts. */
    TensorId unfusedCore(const std::string& module, const Qkv& qkv);
    /** The scores' softmax: Megatron's one fused kernel, its torch fallback (masked_softmax_fusion off), or
        Hugging Face's eager chain (hf_eager_attention). */
    TensorId fusedSoftmax(const std::string& module, TensorId scores);
    TensorId torchMaskedSoftmax(const std::string& module, TensorId scores);
    TensorId eagerSoftmax(const std::string& module, TensorId scores);

    /** Dense MLP: SwiGLU (gate, up, act, down) or GELU (fc, act, proj). Returns the down projection. */
    TensorId mlp(const std::string& p, TensorId n2) { return mlp(p + m_names.mlp + ".", n2, m_shape.ffn_hidden); }

    /** The same with inner width f under module prefix m ("model.layers.N.mlp."). */
    TensorId mlp(const std::string& m, TensorId n2, std::int64_t f);

    /** GELU(x) or SwiGLU(gate, up) = silu(gate) * up: saves its inputs, runs on each rank's ffn shard. */
    TensorId activationFunction(const std::string& name, std::vector<TensorId> inputs, double flopsPerElement,
                                std::int64_t width);

    /** Mixtral's sparse MLP: a router over E experts, each token going to top_k of them. */
    TensorId moe(const std::string& p, TensorId n2);

    /**
     * The always-on shared expert beside the routed ones, a dense MLP every token passes (DeepSeek's
     * shared_experts, n_shared_experts x moe_intermediate_size wide; Qwen2-MoE's shared_expert, scaled by a
     * sigmoid gate [h, 1]; Llama 4's shared_expert), added to the routed output.
     */
    TensorId withSharedExpert(const std::string& m, TensorId n2, TensorId routed);

    /**
     * All experts of one layer as one op. Its outputs include the token-routed internals that backward
     * needs (dispatched inputs [k*b*s, h], up projections and activation [k*b*s, f]); weights are
     * stacked per expert: w1 (gate) [E, h, f], w3 (up) [E, h, f], w2 (down) [E, f, h].
     */
    TensorId experts(const std::string& name, TensorId n2, TensorId routerLogits);

    /**
     * The experts' HBM traffic: inputs and all E experts' weights once, the dispatched tokens by each up
     * projection, the projections by the activation, the activation by the down projection, and the down
     * projection's [k*b*s, h] output (written, then read by the weighted combine).
     */
    void setExpertsTraffic(Op& op, TensorId dispatched, TensorId act, const std::vector<TensorId>& projections);
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

} // namespace shardscape::transformer_detail
