// SPDX-License-Identifier: MIT
#pragma once

namespace shardscape {

/** Peak bytes on one device, by what holds them. */
struct MemoryBreakdown
{
    double weights = 0; ///< parameters as the framework keeps them (sharded masters, unsharded compute copies)
    double gradients = 0; ///< gradient buffers (main grads, reduce buffers, buckets)
    double optimizer = 0; ///< resident states (fp32 master, moments) and optimizer transients
    double activations = 0; ///< stashed micro-batches at the peak (in-flight count x per-micro-batch stash)
    double transient = 0; ///< the working set at the peak: recompute, loss logits, biggest live temporaries
    /** Outside PyTorch's tensors: CUDA context, NCCL and cuBLAS workspaces (`runtime`) plus the caching allocator's
        slack between reserved and allocated blocks (`fragmentation`). reserve = runtime + fragmentation. */
    double reserve = 0;
    double runtime = 0; ///< part of reserve: never seen by torch.cuda.max_memory_reserved
    double fragmentation = 0; ///< part of reserve: max_memory_reserved - max_memory_allocated
    /** What a calibration on the user's own runs adds (CostParams::calibrated_memory_bytes; may be negative). */
    double calibrated = 0;

    double total() const { return allocated() + reserve; }
    /** What torch.cuda.max_memory_allocated reports at the peak. */
    double allocated() const { return weights + gradients + optimizer + activations + transient + calibrated; }
    /** What torch.cuda.max_memory_reserved (torchtitan's "max_reserved", Megatron's "max reserved") reports. */
    double allocatorReserved() const { return allocated() + fragmentation; }
};

} // namespace shardscape
