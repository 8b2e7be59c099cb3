// SPDX-License-Identifier: MIT
#include "shardscape/model/op_kind.h"

#include <array>
#include <utility>

namespace shardscape {

namespace {
constexpr std::array<std::pair<OpKind, std::string_view>, 16> kOpKinds {{
    {OpKind::Linear, "linear"},
    {OpKind::MatMul, "matmul"},
    {OpKind::AttentionScore, "attention_score"},
    {OpKind::AttentionContext, "attention_context"},
    {OpKind::FlashAttention, "flash_attention"},
    {OpKind::Softmax, "softmax"},
    {OpKind::Norm, "norm"},
    {OpKind::Elementwise, "elementwise"},
    {OpKind::Dropout, "dropout"},
    {OpKind::Embedding, "embedding"},
    {OpKind::Loss, "loss"},
    {OpKind::MoeRouter, "moe_router"},
    {OpKind::MoeExperts, "moe_experts"},
    {OpKind::Conv, "conv"},
    {OpKind::Reshape, "reshape"},
    {OpKind::Unknown, "unknown"},
}};
constexpr std::array<std::pair<TpRole, std::string_view>, 7> kTpRoles {{
    {TpRole::Replicated, "replicated"},
    {TpRole::Column, "column"},
    {TpRole::Row, "row"},
    {TpRole::Heads, "heads"},
    {TpRole::Vocab, "vocab"},
    {TpRole::Local, "local"},
    {TpRole::Experts, "experts"},
}};

template<typename Enum, std::size_t N>
std::string_view nameOf(const std::array<std::pair<Enum, std::string_view>, N>& table, Enum value)
{
    for (const auto& [e, name] : table)
        if (e == value)
            return name;
    return "?";
}

template<typename Enum, std::size_t N>
std::optional<Enum> parseName(const std::array<std::pair<Enum, std::string_view>, N>& table, std::string_view name)
{
    for (const auto& [e, n] : table)
        if (n == name)
            return e;
    return std::nullopt;
}
} // namespace

std::string_view opKindName(OpKind kind)
{
    return nameOf(kOpKinds, kind);
}
std::optional<OpKind> parseOpKind(std::string_view name)
{
    return parseName(kOpKinds, name);
}
std::string_view tpRoleName(TpRole role)
{
    return nameOf(kTpRoles, role);
}
std::optional<TpRole> parseTpRole(std::string_view name)
{
    return parseName(kTpRoles, name);
}

} // namespace shardscape
