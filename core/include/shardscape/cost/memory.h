// SPDX-License-Identifier: MIT
#pragma once

namespace shardscape {

/** Peak bytes on one device, by what holds them. */
struct MemoryBreakdown
{
    double weights = 0;
    double gradients = 0;
    double optimizer = 0; ///< resident states (fp32 master, moments) and optimizer transients
    double activations = 0; ///< stashed micro-batches at the peak (in-flight count x per-micro-batch stash)
    double transient = 0; ///< workspaces and the biggest live temporaries
    double reserve = 0; ///< CUDA context, NCCL buffers, allocator fragmentation

    double total() const { return weights + gradients + optimizer + activations + transient + reserve; }
};

} // namespace shardscape
