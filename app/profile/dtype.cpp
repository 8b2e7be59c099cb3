// SPDX-License-Identifier: MIT
#include "dtype.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

namespace shardscape::profiler {

namespace {

struct DTypeInfo
{
    DType dtype;
    std::string_view name;
    int bytes;
    int minComputeCapability;
};
// bf16/tf32 tensor cores arrive with Ampere (8.0); cuBLASLt FP8 GEMMs need Ada or Hopper (8.9+).
constexpr std::array<DTypeInfo, 5> kInfo {{
    {DType::BF16, "bf16", 2, 80},
    {DType::FP16, "f16", 2, 70},
    {DType::TF32, "tf32", 4, 80},
    {DType::FP32, "f32", 4, 70},
    {DType::FP8E4M3, "fp8", 1, 89},
}};
constexpr std::array<std::pair<std::string_view, DType>, 12> kAliases {{
    {"bfloat16", DType::BF16},
    {"fp16", DType::FP16},
    {"float16", DType::FP16},
    {"half", DType::FP16},
    {"fp32", DType::FP32},
    {"float32", DType::FP32},
    {"float", DType::FP32},
    {"fp8_e4m3", DType::FP8E4M3},
    {"fp8e4m3", DType::FP8E4M3},
    {"e4m3", DType::FP8E4M3},
    {"float8_e4m3fn", DType::FP8E4M3},
    {"f8e4m3", DType::FP8E4M3},
}};

/** A binary floating-point format with an implicit leading 1 and subnormals. */
struct Format
{
    int exponentBits;
    int mantissaBits;
    int bias;
    float maxFinite;
    bool saturate; ///< out-of-range values become +-maxFinite (e4m3) instead of infinity
};
constexpr Format kBF16 {8, 7, 127, 3.38953139e38f, false};
constexpr Format kFP16 {5, 10, 15, 65504.0f, false};
constexpr Format kE4M3 {4, 3, 7, 448.0f, true};

std::uint32_t encode(const Format& f, float value)
{
    const std::uint32_t signBit = std::signbit(value) ? 1u << (f.exponentBits + f.mantissaBits) : 0u;
    const std::uint32_t expMask = (1u << f.exponentBits) - 1;
    if (std::isnan(value)) // e4m3 NaN is S.1111.111; the others: all-ones exponent, top mantissa bit set
        return signBit | (f.saturate ? 0x7Fu : (expMask << f.mantissaBits) | (1u << (f.mantissaBits - 1)));
    const double a = std::fabs(static_cast<double>(value));
    if (a == 0)
        return signBit;
    const int minNormalExp = 1 - f.bias;
    int e = 0;
    std::frexp(a, &e); // a = frac * 2^e, frac in [0.5, 1): unbiased exponent of 1.m form is e - 1
    const int exp = std::max(e - 1, minNormalExp);
    const double quantum = std::ldexp(1.0, exp - f.mantissaBits);
    double rounded = std::nearbyint(a / quantum) * quantum; // the default rounding mode: to nearest, ties to even
    if (rounded > f.maxFinite) {
        if (!f.saturate)
            return signBit | (expMask << f.mantissaBits); // infinity
        rounded = f.maxFinite;
    }
    if (rounded == 0) // below half the smallest subnormal
        return signBit;
    // Encode the exactly representable `rounded` (rounding may have carried it into the next binade).
    std::frexp(rounded, &e);
    if (e - 1 < minNormalExp) // subnormal: exponent field 0, mantissa counts quanta of 2^(minNormalExp - m)
        return signBit | static_cast<std::uint32_t>(std::ldexp(rounded, f.mantissaBits - minNormalExp));
    const auto mantissa
        = static_cast<std::uint32_t>(std::ldexp(rounded, f.mantissaBits - (e - 1)) - std::ldexp(1.0, f.mantissaBits));
    return signBit | (static_cast<std::uint32_t>(e - 1 + f.bias) << f.mantissaBits) | mantissa;
}

float decode(const Format& f, std::uint32_t bits)
{
    const std::uint32_t expMask = (1u << f.exponentBits) - 1;
    const std::uint32_t manMask = (1u << f.mantissaBits) - 1;
    const bool negative = (bits >> (f.exponentBits + f.mantissaBits)) & 1u;
    const std::uint32_t exp = (bits >> f.mantissaBits) & expMask;
    const std::uint32_t man = bits & manMask;
    double value = 0;
    if (f.saturate && exp == expMask && man == manMask)
        value = std::numeric_limits<double>::quiet_NaN();
    else if (!f.saturate && exp == expMask)
        value = man ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
    else if (exp == 0)
        value = std::ldexp(static_cast<double>(man), 1 - f.bias - f.mantissaBits);
    else
        value = std::ldexp(1.0 + std::ldexp(static_cast<double>(man), -f.mantissaBits), static_cast<int>(exp) - f.bias);
    return static_cast<float>(negative ? -value : value);
}

} // namespace

const std::vector<DType>& allDTypes()
{
    static const std::vector<DType> all {DType::BF16, DType::FP16, DType::TF32, DType::FP32, DType::FP8E4M3};
    return all;
}

std::string_view dtypeName(DType dtype)
{
    return kInfo[static_cast<std::size_t>(dtype)].name;
}

std::optional<DType> parseDType(std::string_view name)
{
    for (const auto& info : kInfo)
        if (info.name == name)
            return info.dtype;
    for (const auto& [alias, dtype] : kAliases)
        if (alias == name)
            return dtype;
    return std::nullopt;
}

int dtypeBytes(DType dtype)
{
    return kInfo[static_cast<std::size_t>(dtype)].bytes;
}

int dtypeMinComputeCapability(DType dtype)
{
    return kInfo[static_cast<std::size_t>(dtype)].minComputeCapability;
}

std::uint16_t encodeBF16(float value)
{
    return static_cast<std::uint16_t>(encode(kBF16, value));
}
std::uint16_t encodeFP16(float value)
{
    return static_cast<std::uint16_t>(encode(kFP16, value));
}
std::uint8_t encodeFP8E4M3(float value)
{
    return static_cast<std::uint8_t>(encode(kE4M3, value));
}
float decodeBF16(std::uint16_t bits)
{
    return decode(kBF16, bits);
}
float decodeFP16(std::uint16_t bits)
{
    return decode(kFP16, bits);
}
float decodeFP8E4M3(std::uint8_t bits)
{
    return decode(kE4M3, bits);
}

float quantize(DType dtype, float value)
{
    switch (dtype) {
    case DType::BF16:
        return decodeBF16(encodeBF16(value));
    case DType::FP16:
        return decodeFP16(encodeFP16(value));
    case DType::FP8E4M3:
        return decodeFP8E4M3(encodeFP8E4M3(value));
    case DType::TF32:
    case DType::FP32:
        break;
    }
    return value;
}

/** Host values -> the bytes the GPU reads. */
std::vector<unsigned char> encodeValues(const std::vector<float>& values, DType dtype)
{
    std::vector<unsigned char> bytes(values.size() * static_cast<std::size_t>(dtypeBytes(dtype)));
    for (std::size_t i = 0; i < values.size(); ++i) {
        switch (dtype) {
        case DType::BF16: {
            const std::uint16_t b = encodeBF16(values[i]);
            std::memcpy(&bytes[2 * i], &b, 2);
            break;
        }
        case DType::FP16: {
            const std::uint16_t b = encodeFP16(values[i]);
            std::memcpy(&bytes[2 * i], &b, 2);
            break;
        }
        case DType::FP8E4M3:
            bytes[i] = encodeFP8E4M3(values[i]);
            break;
        case DType::TF32:
        case DType::FP32:
            std::memcpy(&bytes[4 * i], &values[i], 4);
            break;
        }
    }
    return bytes;
}

/** Bytes read back -> values (`dtype` is the storage type). */
std::vector<float> decodeValues(const std::vector<unsigned char>& bytes, DType dtype)
{
    const std::size_t size = static_cast<std::size_t>(dtypeBytes(dtype));
    std::vector<float> values(bytes.size() / size);
    for (std::size_t i = 0; i < values.size(); ++i) {
        switch (dtype) {
        case DType::BF16:
        case DType::FP16: {
            std::uint16_t b = 0;
            std::memcpy(&b, &bytes[2 * i], 2);
            values[i] = dtype == DType::BF16 ? decodeBF16(b) : decodeFP16(b);
            break;
        }
        case DType::FP8E4M3:
            values[i] = decodeFP8E4M3(bytes[i]);
            break;
        case DType::TF32:
        case DType::FP32:
            std::memcpy(&values[i], &bytes[4 * i], 4);
            break;
        }
    }
    return values;
}

} // namespace shardscape::profiler
