// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/model/dtype.h"
#include "shardscape/model/op_kind.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace shardscape {

using TensorId = std::int32_t;
using OpId = std::int32_t;

/** Most elements one tensor may have (ModelGraph::addTensor refuses more): far above any real model (a 1M x 1M
    weight is 1e12) and low enough that element counts stay exact in int64 and double. */
inline constexpr double kMaxGraphTensorElements = 1e15;

/** A tensor: an activation flowing between ops, or a parameter. */
struct Tensor
{
    std::string name;
    std::vector<std::int64_t> shape;
    DType dtype = DType::BF16;
    bool is_param = false;
    /** Sharded along the tensor-parallel dimension in the Megatron plan (heads / ffn columns / vocab).
        Activations that are not are the ones sequence parallelism shards instead. */
    bool tp_sharded = false;

    std::int64_t elements() const;
    double bytes() const;
};

/** One operation of the forward graph. Backward costs are stored alongside (input and weight grads apart). */
struct Op
{
    std::string name;
    /** Dotted module path, e.g. "model.layers.3.mlp.up_proj"; groups ops into layers and recompute modules. */
    std::string module;
    OpKind kind = OpKind::Unknown;
    TpRole tp_role = TpRole::Replicated;
    std::vector<TensorId> inputs; ///< activations consumed
    std::vector<TensorId> outputs; ///< activations produced
    std::vector<TensorId> params; ///< weights read (may be shared with other ops: tied embeddings)
    /** Tensors (inputs or outputs) this op keeps alive for its backward pass. */
    std::vector<TensorId> saved;
    double flops_fwd = 0; ///< FLOPs of the forward pass for the graph's batch and sequence
    double flops_bwd_input = 0; ///< FLOPs to compute input gradients
    double flops_bwd_weight = 0; ///< FLOPs to compute weight gradients
    double bytes_read = 0; ///< HBM bytes read in the forward pass
    double bytes_written = 0; ///< HBM bytes written in the forward pass
    /** MoE only: number of experts and experts per token. */
    std::int32_t num_experts = 0;
    std::int32_t top_k = 0;
    /** Unknown ops: the original op type (e.g. an ONNX op_type) for reports. */
    std::string source_type;
};

/**
 * The architecture of a known transformer, when the graph came from one (HF config or a recognised
 * ONNX export). Exporters and validity checks (tp must divide heads) read it; generic graphs leave it empty.
 */
struct TransformerShape
{
    std::string family; ///< "gpt2", "llama", "mistral", "qwen2", "mixtral"
    std::int64_t hidden = 0;
    std::int64_t num_layers = 0;
    std::int64_t num_heads = 0;
    std::int64_t num_kv_heads = 0;
    std::int64_t head_dim = 0;
    std::int64_t ffn_hidden = 0; ///< per expert for MoE
    std::int64_t vocab = 0;
    std::int64_t max_positions = 0;
    std::int64_t num_experts = 0; ///< 0 for dense
    std::int64_t top_k = 0;
    bool gated_mlp = false; ///< SwiGLU (3 matrices) vs GELU MLP (2 matrices)
    bool tied_embeddings = false;
    bool learned_positions = false;
    bool flash_attention = true; ///< no s^2 scores stored
    /** Unfused attention as Hugging Face's eager_attention_forward runs it (a config's _attn_implementation
        "eager"): scale and mask in kernels of their own, softmax in fp32, its output cast back; otherwise unfused
        attention is Megatron's CoreAttention with its fused scale-mask-softmax. */
    bool hf_eager_attention = false;
    /** Unfused Megatron attention only: whether FusedScaleMaskSoftmax runs its fused kernel (--masked-softmax-fusion,
        the default). Without it, forward_torch_softmax (megatron/core/fusions/fused_softmax.py) masks the scores in
        place with masked_fill_ and then runs a 16-bit torch softmax: a second pass over the s x s scores each way. */
    bool masked_softmax_fusion = true;
    double dropout = 0.0;
    std::string norm = "rmsnorm"; ///< "rmsnorm" or "layernorm"
    /** RoPE's base frequency (HF rope_theta: 10000 for Llama 2, 500000 for Llama 3); 0 = not stated. Costs do not
        depend on it; the Megatron export writes it as --rotary-base. */
    double rope_theta = 0;

    // --- mixture-of-experts layout (defaults: every layer routes to num_experts experts of ffn_hidden) ------
    std::int64_t dense_ffn_hidden = 0; ///< MLP width of an MoE model's dense layers (0 = ffn_hidden)
    std::int64_t first_dense_layers = 0; ///< leading dense layers (DeepSeek first_k_dense_replace)
    std::int64_t moe_layer_step = 1; ///< layer i >= first_dense_layers is MoE when (i + 1) % step == 0
    std::int64_t shared_expert_ffn = 0; ///< width of the always-on shared expert MLP (all of them), 0 = none
    bool shared_expert_gate = false; ///< Qwen2-MoE's sigmoid gate on the shared expert ([h, 1])

    // --- attention variants --------------------------------------------------------------------------------
    bool qk_norm = false; ///< RMSNorm over each head of q and k (Qwen3, Gemma 3)
    /** A norm right after the token embedding, before the first block (BLOOM's word_embeddings_layernorm;
        Megatron-DeepSpeed's --embed-layernorm, which runs it on the first pipeline stage). */
    bool embedding_norm = false;
    bool sandwich_norms = false; ///< Gemma 2/3: norms after attention and MLP too (four per block)
    /** Multi-head latent attention (DeepSeek-V2/V3) when kv_lora_rank > 0: q (optionally through a q_lora_rank
        down/up projection) and a compressed kv_lora_rank latent plus a shared rope key. */
    std::int64_t q_lora_rank = 0;
    std::int64_t kv_lora_rank = 0;
    std::int64_t qk_rope_head_dim = 0;
    std::int64_t qk_nope_head_dim = 0;
    std::int64_t v_head_dim = 0;
    /** Local attention: each query attends to at most this many keys (sliding window or chunk); 0 = global. */
    std::int64_t attention_window = 0;
    /** With a window: every global_layer_every-th layer attends globally (Gemma 3: 6, Gemma 2: 2, Llama 4: 4);
        0 = every layer is local. */
    std::int64_t global_layer_every = 0;

    /** GPT-2, GPT-NeoX and BLOOM blocks: one fused q/k/v GEMM, and biases on every linear unless a config says
        otherwise. */
    bool gptStyleBlocks() const { return family == "gpt2" || family == "gpt_neox" || family == "bloom"; }
    /** Whether layer i routes to experts. */
    bool isMoeLayer(std::int64_t i) const
    {
        return num_experts > 0 && i >= first_dense_layers && (i + 1) % std::max<std::int64_t>(1, moe_layer_step) == 0;
    }
    /** Keys each query of layer i sees at most (seq_len when global). */
    std::int64_t keysPerQuery(std::int64_t i, std::int64_t seqLen) const
    {
        const bool global = attention_window <= 0 || (global_layer_every > 0 && (i + 1) % global_layer_every == 0);
        return global ? seqLen : std::min(seqLen, attention_window);
    }
};

/**
 * A model's forward op graph for one micro-batch of `batch` sequences of `seq_len` tokens.
 * Every cost scales linearly with `batch`; the attention terms scale with seq_len^2.
 * Built by the loaders; immutable once built (share it as shared_ptr<const ModelGraph>).
 */
class ModelGraph
{
public:
    std::string name;
    std::int64_t batch = 1;
    std::int64_t seq_len = 0;
    DType dtype = DType::BF16;
    std::optional<TransformerShape> transformer;
    /** What the loader assumed or left out of the file (an unknown model_type, a vision tower not built). */
    std::vector<std::string> load_notes;

    const std::vector<Tensor>& tensors() const { return m_tensors; }
    const std::vector<Op>& ops() const { return m_ops; }
    const Tensor& tensor(TensorId id) const { return m_tensors.at(static_cast<std::size_t>(id)); }
    const Op& op(OpId id) const { return m_ops.at(static_cast<std::size_t>(id)); }

    /** Pre-sizes storage for loaders that know the counts (avoids rehashing large graphs). */
    void reserve(std::size_t tensors, std::size_t ops);
    /** Adds a tensor; names must be unique (InputError otherwise). */
    TensorId addTensor(Tensor tensor);
    /** Adds an op; names must be unique and every tensor id valid (InputError otherwise). */
    OpId addOp(Op op);
    std::optional<TensorId> findTensor(const std::string& tensorName) const;
    std::optional<OpId> findOp(const std::string& opName) const;

    /** Unique parameter elements (a tensor shared by several ops counts once). */
    double paramCount() const;
    /** Parameters touched per token: MoE experts count top_k / num_experts of their weights. */
    double activeParamCount() const;
    /** Sum of forward FLOPs of all ops for the graph's batch x seq_len tokens. */
    double forwardFlops() const;
    double tokens() const { return static_cast<double>(batch * seq_len); }

    /**
     * Ops in a topological order of the data flow (producer before consumer).
     * Throws InputError naming ops on a cycle; also checks each activation has at most one producer.
     */
    std::vector<OpId> topologicalOrder() const;
    /** Producer op of each tensor (-1 for graph inputs and parameters). */
    std::vector<OpId> producers() const;

private:
    std::vector<Tensor> m_tensors;
    std::vector<Op> m_ops;
    std::unordered_map<std::string, TensorId> m_tensorByName;
    std::unordered_map<std::string, OpId> m_opByName;
};

} // namespace shardscape
