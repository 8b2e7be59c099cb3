// SPDX-License-Identifier: MIT
// What CostModel::assemble hands CostModel::finish: a candidate's pipeline spec with the per-chunk terms the
// evaluation reports. Private to core/src/cost.
#pragma once

#include "shardscape/cost/cost_model.h"
#include "shardscape/sim/simulator.h"

#include <utility>
#include <vector>

namespace shardscape {

struct CostModel::Assembly
{
    struct Chunk
    {
        int first = 0, last = 0;
        LayerParams params;
        double largest = 0;
        double recomputeModelFlops = 0;
        double tpComm = 0, otherComm = 0, otherCommForward = 0, recompute = 0;
        double weights = 0, gradients = 0, optimizer = 0;
        double working = 0; ///< the largest layer working set (recompute, loss) of the chunk
        double largestLayerParams = 0; ///< dense elements of the chunk's largest layer (ZeRO-3 unsharded buffers)
        /** perModuleShardedPeak: the worst layer's shardedDpLayerPeakBytes (its working set included). */
        double shardedDpLayerPeak = 0;
        std::pair<double, double> shardedDpExposed; ///< ZeRO-3 comm not hidden per micro-batch: forward, backward
    };
    PipelineSpec spec;
    std::vector<Chunk> chunks;
    std::vector<double> optimizerStep; ///< per pipeline rank
};

} // namespace shardscape
