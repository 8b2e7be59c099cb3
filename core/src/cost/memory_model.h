// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/cost/cost_params.h"
#include "shardscape/cost/framework_profile.h"
#include "shardscape/cost/layer_cost.h"
#include "shardscape/cost/memory.h"
#include "shardscape/cost/parallel_config.h"
#include "shardscape/model/dtype.h"

namespace shardscape {

/** The divisors ZeRO applies to a rank's dense and expert parameters (dp x cp / zero_ngroups, over ep for experts). */
struct ShardDivisors
{
    double dense = 1;
    double expert = 1;
};

/** Bytes per gradient element as the framework accumulates and reduces them (Generic: CostParams::grad_bytes). */
double gradientBytes(const FrameworkProfile& profile, const CostParams& params, const ParallelConfig& c, DType dtype);

/** bf16 pipeline training through an optimizer with fp32 gradient buffers for the whole stage: DeepSpeed's
    BF16_Optimizer, which its engine picks for bf16 under a pipeline at ZeRO stage 0 (runtime/engine.py
    _do_optimizer_sanity_check; at stage 1 with the default bf16 grad_accum_dtype it picks ZeRO-1 instead). */
bool pipelineFp32Grads(const FrameworkProfile& profile, const ParallelConfig& c, DType dtype);

/** Fp32 master weights and Adam states sharded over data parallelism: ZeRO >= 1, and BF16_Optimizer, which shards
    them itself (runtime/bf16_optimizer.py partitions fp32_groups_flat_partition over the DP group). */
bool shardsOptimizerStates(const FrameworkProfile& profile, const ParallelConfig& c, DType dtype);

/** FSDP keeps every block's 16-bit unsharded copy from forward to backward: ZeRO-2 (reshard_after_forward=False),
    and torchtitan under pipeline parallelism (apply_fsdp turns resharding after forward off). */
bool keepsUnshardedCopies(const FrameworkProfile& profile, const ParallelConfig& c);

/** Resident bytes of a set of parameters on one device: weights, gradients, optimizer states. */
struct ParameterMemory
{
    double weights = 0;
    double gradients = 0;
    double optimizer = 0;
    double total() const { return weights + gradients + optimizer; }
};

/**
 * What the framework keeps per parameter under the config's ZeRO stage (framework_profile.cpp cites each term).
 * Generic keeps the CostParams coefficients (grad_bytes, opt_resident_coef, opt_transient_coef). Fixed buffers
 * (buckets) are not included: see fixedBufferBytes.
 */
ParameterMemory parameterMemory(const FrameworkProfile& profile, const CostParams& params, const ParallelConfig& c,
                                const LayerParams& p, DType dtype, ShardDivisors shard);

/** Bytes of a rank's buffers that do not scale with its parameters (DeepSpeed's reduce buckets). */
double fixedBufferBytes(const FrameworkProfile& profile, const ParallelConfig& c);

/** A block's unsharded gradient bytes per element before its reduce-scatter (FrameworkProfile::
    zero3_unsharded_grad_bytes), or the parameters' dtype alone under ParallelConfig::grad_reduce_bf16. */
double unshardedGradBytes(const FrameworkProfile& profile, const ParallelConfig& c, double weightBytes);

/** ZeRO-3 / FSDP: unsharded 16-bit parameters of the live blocks and one block's unsharded gradients, bytes. */
double shardedDpWorkingBytes(const FrameworkProfile& profile, const ParallelConfig& c, double largestBlockParams,
                             double weightBytes);

/** The framework holds a module's unsharded parameters and gradients per module, in its own order (FSDP1/FSDP2,
    Megatron-FSDP under ZeRO-3, or ZeRO-2 over fp32 shards), so a stage's peak is the worst single layer's: see
    shardedDpLayerPeakBytes. Otherwise (DeepSpeed's parameter coordinator, Generic) shardedDpWorkingBytes applies. */
bool perModuleShardedPeak(const FrameworkProfile& profile, const ParallelConfig& c);

/**
 * perModuleShardedPeak: what is live beside the saved activations while one layer runs its backward, bytes: its own
 * unsharded 16-bit parameters and the neighbour's being prefetched (zero3_live_blocks - 1 of them), and the larger of
 * the layer's working set (recomputed activations, the loss's gradient) and its unsharded gradients. FSDP2 reshards
 * and reduce-scatters a module in its post-backward hook (torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py
 * post_backward: reshard, then foreach_reduce), after autograd has freed the module's backward inputs, so the
 * working set and the reduce-scatter's gradient copies are not live at once. `layerParams`, `neighbourParams`:
 * dense elements per rank.
 */
double shardedDpLayerPeakBytes(const FrameworkProfile& profile, const ParallelConfig& c, double layerParams,
                               double neighbourParams, double layerWorking, double weightBytes);
/** The gathered bytes FSDP2 keeps from the forward into the backward (FrameworkProfile::keeps_last_forward_gather):
    `retainedParams` (dense elements per rank) of the modules it does not reshard (CostModel's retainedParams). */
double retainedGatherBytes(const FrameworkProfile& profile, const ParallelConfig& c, double retainedParams,
                           double weightBytes);

/** Memory outside the tensors: CUDA context, NCCL buffers, cuBLAS workspaces; Generic: CostParams' reserve. */
double runtimeBytes(const FrameworkProfile& profile, const CostParams& params, const ParallelConfig& c);

/** Fills reserve = runtime + the caching allocator's slack over the allocated peak. */
void addReserve(MemoryBreakdown& m, const FrameworkProfile& profile, const CostParams& params, const ParallelConfig& c);

} // namespace shardscape
