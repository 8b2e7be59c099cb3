// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace shardscape {

/**
 * How FP8 linears scale their operands (torchao's Float8LinearRecipeName, torchtitan's
 * [quantize.linear.float8] recipe_name; Megatron's --fp8-recipe tensorwise).
 * Tensorwise: one dynamic scale per tensor; each operand is cast once and its FP8 copy (and transpose) reused by
 * the backward GEMMs. Rowwise: one scale per row along the GEMM's reduction dimension, so every operand is cast
 * again, along the other axis, for the GEMM that reduces over its other dimension.
 */
enum class Float8Recipe : std::uint8_t
{
    Tensorwise,
    Rowwise
};

/** "tensorwise", "rowwise" */
std::string_view float8RecipeName(Float8Recipe recipe);
std::optional<Float8Recipe> parseFloat8Recipe(std::string_view name);

} // namespace shardscape
