// SPDX-License-Identifier: MIT
// GEMM throughput with cuBLASLt (bf16, fp16, tf32, fp32, fp8 e4m3).
#pragma once

#include "bench.h"
#include "model_shapes.h"
#include "profile_db.h"

#include <vector>

namespace shardscape::profiler {

/** Progress steps runMatmulPhase takes for `cases` on a device of `computeCapability`. */
int matmulSteps(const std::vector<GemmCase>& cases, int computeCapability);

/**
 * For each dtype in `cases` (in order): checks every cuBLASLt algorithm the heuristic offers on a small GEMM
 * against the CPU (CheckFailure when one is wrong), then times the dtype's GEMMs: the fastest of the top
 * heuristic algorithms, median of the repetitions, rotating buffer sets past twice the L2; each timed GEMM's
 * result is spot-checked. Dtypes the device lacks, fp8 shapes not multiples of 16 and GEMMs that do not fit
 * in memory are skipped with a note.
 */
std::vector<MatmulResult> runMatmulPhase(const std::vector<GemmCase>& cases, BenchContext& context);

} // namespace shardscape::profiler
