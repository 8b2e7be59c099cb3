// SPDX-License-Identifier: MIT
// Causal attention forward the unfused way: cuBLAS strided-batched QK^T, the profiler's causal softmax, cuBLAS
// strided-batched PV. (cuDNN's fused attention needs cudnn_frontend, which the build does not use.)
#pragma once

#include "bench.h"
#include "model_shapes.h"
#include "profile_db.h"

#include <vector>

namespace shardscape::profiler {

/** The dtypes attention is measured in: those of `dtypes` among bf16, fp16. */
std::vector<DType> attentionDTypes(const std::vector<DType>& dtypes);

int attentionSteps(const std::vector<AttentionShape>& shapes, const std::vector<DType>& dtypes);

/** Per dtype: a CPU check on a small causal attention (CheckFailure when wrong), then each shape timed. */
std::vector<AttentionResult> runAttentionPhase(const std::vector<AttentionShape>& shapes,
                                               const std::vector<DType>& dtypes, BenchContext& context);

} // namespace shardscape::profiler
