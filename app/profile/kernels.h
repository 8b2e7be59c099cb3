// SPDX-License-Identifier: MIT
// Host launchers for the profiler's own CUDA kernels (kernels.cu). Pointers are device pointers; `dtype`
// selects the storage type (bf16, fp16, fp32; fp8 only for fillUniform; tf32 is stored as fp32).
// Each launcher enqueues on `stream` and returns cudaGetLastError() of the launch.
#pragma once

#include "dtype.h"

#include <cstddef>
#include <cstdint>
#include <cuda_runtime_api.h>

namespace shardscape::profiler {

/** Fills `count` elements with uniform values in [-1, 1) from a counter-based hash of (seed, index). */
cudaError_t launchFillUniform(void* data, std::size_t count, DType dtype, std::uint64_t seed, cudaStream_t stream);

/** Keeps the GPU busy for about `nanoseconds` (globaltimer), so the work enqueued behind it runs back to back. */
cudaError_t launchSpin(std::uint64_t nanoseconds, cudaStream_t stream);

/** out = in, `bytes` bytes (16-byte vectors when both are aligned). */
cudaError_t launchCopy(const void* in, void* out, std::size_t bytes, cudaStream_t stream);

/** y[r][c] = gelu_tanh(x[r][c] + bias[c]) over rows x cols. */
cudaError_t launchBiasGelu(const void* x, const void* bias, void* y, std::int64_t rows, std::int64_t cols, DType dtype,
                           cudaStream_t stream);

/** y = x / sqrt(mean(x^2) + eps) * weight, per row. */
cudaError_t launchRmsNorm(const void* x, const void* weight, void* y, std::int64_t rows, std::int64_t cols, float eps,
                          DType dtype, cudaStream_t stream);

/** y = (x - mean) / sqrt(var + eps) * weight + bias, per row. */
cudaError_t launchLayerNorm(const void* x, const void* weight, const void* bias, void* y, std::int64_t rows,
                            std::int64_t cols, float eps, DType dtype, cudaStream_t stream);

/** Row softmax; y may be x. */
cudaError_t launchSoftmax(const void* x, void* y, std::int64_t rows, std::int64_t cols, DType dtype,
                          cudaStream_t stream);

/**
 * Causal softmax over `matrices` row-major seq x seq score matrices: row i keeps columns 0..i and writes 0 to
 * the rest. The scores are already scaled. y may be x.
 */
cudaError_t launchCausalSoftmax(const void* x, void* y, std::int64_t matrices, std::int64_t seq, DType dtype,
                                cudaStream_t stream);

} // namespace shardscape::profiler
