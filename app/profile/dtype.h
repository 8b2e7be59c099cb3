// SPDX-License-Identifier: MIT
// The data types the profiler measures, their names in the profile DB, and exact host-side encoders/decoders
// for the 16- and 8-bit formats (the CPU references see the very bits the GPU reads).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shardscape::profiler {

enum class DType : std::uint8_t
{
    BF16,
    FP16,
    TF32, ///< stored as fp32; cuBLAS rounds the inputs to TF32 inside the tensor cores
    FP32,
    FP8E4M3, ///< OCP e4m3 (finite-only, max 448); GEMM output is bf16
};

/** Every dtype, in the order used for defaults and output. */
const std::vector<DType>& allDTypes();

/** Name written into the profile DB, the same canonical names as core's model/dtype.h: bf16 f16 tf32 f32 fp8. */
std::string_view dtypeName(DType dtype);

/** Accepts the canonical names and the usual aliases (fp16, half, fp32, float, fp8_e4m3, e4m3, ...). */
std::optional<DType> parseDType(std::string_view name);

/** Bytes per stored element (tf32: 4, fp8: 1). */
int dtypeBytes(DType dtype);

/** Lowest compute capability (major * 10 + minor) whose cuBLASLt runs the dtype's GEMMs. */
int dtypeMinComputeCapability(DType dtype);

/** Round-to-nearest-even encoders (as the CUDA conversion intrinsics); e4m3 saturates to +-448. */
std::uint16_t encodeBF16(float value);
std::uint16_t encodeFP16(float value);
std::uint8_t encodeFP8E4M3(float value);

float decodeBF16(std::uint16_t bits);
float decodeFP16(std::uint16_t bits);
float decodeFP8E4M3(std::uint8_t bits);

/** The value `value` becomes when stored as `dtype` (tf32 and fp32: unchanged). */
float quantize(DType dtype, float value);

/** Values -> their bytes in `dtype` storage (tf32 as fp32), little-endian as the GPU reads them. */
std::vector<unsigned char> encodeValues(const std::vector<float>& values, DType dtype);

/** Bytes in `dtype` storage -> values. */
std::vector<float> decodeValues(const std::vector<unsigned char>& bytes, DType dtype);

} // namespace shardscape::profiler
