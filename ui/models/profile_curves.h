// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/cost/cost_source.h"
#include "shardscape/profile/profile.h"

#include <string>
#include <vector>

namespace shardscape::ui {

/** One point of a throughput curve: `work` (FLOPs or bytes) on x, `rate` (TFLOP/s or GB/s) on y. */
struct CurvePoint
{
    double work = 0;
    double rate = 0;
    std::string label; ///< what was measured, for tool tips: "4096 x 4096 x 4096", "128 MiB"
};

/** A measured series and the datasheet's prediction for the same work, both by increasing work. */
struct ProfileCurve
{
    std::string name; ///< "bf16", "all_reduce 16 ranks (8 per node)"
    std::vector<CurvePoint> measured;
    std::vector<CurvePoint> datasheet;
};

/**
 * GEMM throughput per dtype: work = 2mnk FLOPs, rate = TFLOP/s (1e12) of each matmul row, and the datasheet's
 * matmulTime() for the same (m, n, k, dtype). Dtypes in DType order.
 */
std::vector<ProfileCurve> matmulCurves(const Profile& profile, const CostSource& datasheet);

/**
 * Collective bus bandwidth per op and group measured: work = the row's bytes (nccl-tests `size`), rate = GB/s (1e9)
 * as nccl-tests defines it (bytes / time * ncclBusBandwidthFactor), and the datasheet's collectiveTime() (p2pTime()
 * for send_recv, inter-node when the group spans nodes) for the same bytes and group converted the same way.
 */
std::vector<ProfileCurve> collectiveCurves(const Profile& profile, const CostSource& datasheet);

} // namespace shardscape::ui
