// SPDX-License-Identifier: MIT
#include "shardscape/model/dtype.h"

#include <array>
#include <utility>

namespace shardscape {

namespace {
struct DTypeInfo
{
    DType dtype;
    std::string_view name;
    int bytes;
};
constexpr std::array<DTypeInfo, 11> kDTypes {{
    {DType::F64, "f64", 8},
    {DType::F32, "f32", 4},
    {DType::TF32, "tf32", 4},
    {DType::F16, "f16", 2},
    {DType::BF16, "bf16", 2},
    {DType::FP8, "fp8", 1},
    {DType::I64, "i64", 8},
    {DType::I32, "i32", 4},
    {DType::I8, "i8", 1},
    {DType::U8, "u8", 1},
    {DType::Bool, "bool", 1},
}};
constexpr std::array<std::pair<std::string_view, DType>, 12> kAliases {{
    {"float64", DType::F64},
    {"double", DType::F64},
    {"float32", DType::F32},
    {"float", DType::F32},
    {"fp32", DType::F32},
    {"float16", DType::F16},
    {"fp16", DType::F16},
    {"half", DType::F16},
    {"bfloat16", DType::BF16},
    {"float8", DType::FP8},
    {"int64", DType::I64},
    {"int32", DType::I32},
}};
} // namespace

int dtypeBytes(DType dtype)
{
    return kDTypes[static_cast<std::size_t>(dtype)].bytes;
}

std::string_view dtypeName(DType dtype)
{
    return kDTypes[static_cast<std::size_t>(dtype)].name;
}

std::optional<DType> parseDType(std::string_view name)
{
    for (const auto& info : kDTypes)
        if (info.name == name)
            return info.dtype;
    for (const auto& [alias, dtype] : kAliases)
        if (alias == name)
            return dtype;
    return std::nullopt;
}

} // namespace shardscape
