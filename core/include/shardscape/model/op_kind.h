// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace shardscape {

/** What an op computes; drives its cost (compute- or memory-bound) and its sharding choices. */
enum class OpKind : std::uint8_t
{
    Linear, ///< x @ W (+ b): a matmul with a weight
    MatMul, ///< activation @ activation, not attention (generic)
    AttentionScore, ///< Q @ K^T inside an unfused attention core
    AttentionContext, ///< softmax(P) @ V inside an unfused attention core
    FlashAttention, ///< fused attention core (stores no s^2 scores)
    Softmax,
    Norm, ///< LayerNorm / RMSNorm
    Elementwise, ///< activations, residual adds, rotary, scaling
    Dropout,
    Embedding, ///< a table lookup (Gather)
    Loss, ///< cross-entropy
    MoeRouter, ///< gate logits + top-k
    MoeExperts, ///< the experts' MLPs of one MoE layer, token-routed
    Conv,
    Reshape, ///< view/transpose/concat: zero FLOPs, real bytes
    Unknown, ///< kept from an imported graph, costed as memory-bound
};

/** Lower-case name used in files and tables: "linear", "attention_score", ... */
std::string_view opKindName(OpKind kind);
std::optional<OpKind> parseOpKind(std::string_view name);

/**
 * The Megatron-style tensor-parallel role an op plays in the transformer builders' plan.
 * Column: weight split by output features (input all-gathered/grad all-reduced);
 * Row: weight split by input features (output all-reduced / reduce-scattered);
 * Heads: attention core split by heads; Vocab: embedding or LM head split by vocabulary;
 * Local: runs on the shard its inputs have (no communication); Replicated: every rank runs it whole.
 */
enum class TpRole : std::uint8_t
{
    Replicated,
    Column,
    Row,
    Heads,
    Vocab,
    Local,
    Experts
};

std::string_view tpRoleName(TpRole role);
std::optional<TpRole> parseTpRole(std::string_view name);

} // namespace shardscape
