// SPDX-License-Identifier: MIT
// Memory-bound ops with the profiler's own kernels (copy, bias+GELU, RMSNorm, LayerNorm, softmax) and the
// device-to-device copy bandwidth.
#pragma once

#include "bench.h"
#include "profile_db.h"

#include <vector>

namespace shardscape::profiler {

/** The dtypes memory ops are measured in: those of `dtypes` among bf16, fp16, fp32. */
std::vector<DType> memoryDTypes(const std::vector<DType>& dtypes);

int memorySteps(const std::vector<DType>& dtypes, bool quick);

/**
 * Per dtype: checks every op against the CPU (vector and scalar paths; CheckFailure when wrong), then times
 * each op over input sizes 1 MiB .. 1 GiB (rows of 4096), rotating buffer sets past twice the L2.
 */
std::vector<MemoryOpResult> runMemoryPhase(const std::vector<DType>& dtypes, bool quick, BenchContext& context);

/** cudaMemcpyAsync device-to-device of up to 1 GiB: (read + write) bytes per second. */
double measureHbmCopy(BenchContext& context);

} // namespace shardscape::profiler
