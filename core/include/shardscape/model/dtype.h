// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace shardscape {

/** Element types of tensors. */
enum class DType : std::uint8_t
{
    F64,
    F32,
    TF32,
    F16,
    BF16,
    FP8,
    I64,
    I32,
    I8,
    U8,
    Bool
};

/** Bytes per element (TF32 is stored as 4 bytes). */
int dtypeBytes(DType dtype);
/** Canonical lower-case name: "bf16", "f32", "fp8", ... */
std::string_view dtypeName(DType dtype);
/** Parses a name; accepts the canonical names and common aliases ("bfloat16", "float16", "float32"). */
std::optional<DType> parseDType(std::string_view name);

} // namespace shardscape
