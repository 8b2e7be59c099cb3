// SPDX-License-Identifier: MIT
#include "memory_model.h"

#include <algorithm>

namespace shardscape {

bool pipelineFp32Grads(const FrameworkProfile& f, const ParallelConfig& c, DType dtype)
{
    return f.pipeline_bf16_fp32_grads && c.pp > 1 && c.zero_stage == 0 && dtype == DType::BF16;
}

bool shardsOptimizerStates(const FrameworkProfile& f, const ParallelConfig& c, DType dtype)
{
    return c.zero_stage >= 1 || pipelineFp32Grads(f, c, dtype);
}

double gradientBytes(const FrameworkProfile& f, const CostParams& params, const ParallelConfig& c, DType dtype)
{
    if (pipelineFp32Grads(f, c, dtype))
        return 4;
    // --grad-reduce-in-bf16: the buffers, and so the reduce, in the parameters' dtype.
    if (c.grad_reduce_bf16)
        return std::min<double>(dtypeBytes(dtype),
                                f.framework == Framework::Generic ? params.grad_bytes : f.grad_bytes);
    return f.framework == Framework::Generic ? params.grad_bytes : f.grad_bytes;
}

double unshardedGradBytes(const FrameworkProfile& f, const ParallelConfig& c, double weightBytes)
{
    return c.grad_reduce_bf16 ? std::min(weightBytes, f.zero3_unsharded_grad_bytes) : f.zero3_unsharded_grad_bytes;
}

namespace {

/** torchtitan's pipeline stages: FSDP driven by torch.distributed.pipelining (PipelineStage). */
bool pipelinedFsdp(const FrameworkProfile& f, const ParallelConfig& c)
{
    return c.pp > 1 && f.framework == Framework::Torchtitan;
}

} // namespace

bool keepsUnshardedCopies(const FrameworkProfile& f, const ParallelConfig& c)
{
    return c.zero_stage == 2 || pipelinedFsdp(f, c);
}

ParameterMemory parameterMemory(const FrameworkProfile& f, const CostParams& params, const ParallelConfig& c,
                                const LayerParams& p, DType dtype, ShardDivisors shard)
{
    const double weightBytes = dtypeBytes(dtype);
    const double whole = p.dense + p.expert;
    const double sharded = p.dense / shard.dense + p.expert / shard.expert;
    const auto per = [&](bool isSharded) { return isSharded ? sharded : whole; };
    ParameterMemory m;
    const double gradBytes = gradientBytes(f, params, c, dtype);
    if (f.framework == Framework::Generic) {
        m.weights = per(c.zero_stage >= 3) * weightBytes;
        m.gradients = per(c.zero_stage >= 2) * gradBytes;
        m.optimizer = per(c.zero_stage >= 1) * weightBytes * (params.opt_resident_coef + params.opt_transient_coef);
        return m;
    }
    if (f.sharded_fp32_params) {
        // FSDP: fp32 shards are the master copy; ZeRO-2 (reshard_after_forward=False) keeps every block's 16-bit
        // unsharded copy from its forward to its backward. Without sharding (DDP) the model stays fp32.
        const bool fsdp = c.zero_stage >= 2;
        m.weights = 4 * per(fsdp) + (keepsUnshardedCopies(f, c) ? weightBytes * whole : 0);
        m.gradients = f.grad_bytes * per(fsdp);
        // torchtitan's pipeline stages (torch/distributed/pipelining/stage.py backward_maybe_with_nosync) turn
        // FSDP's gradient sync off for every backward but the last; FSDP2 then keeps each parameter's whole
        // gradient, upcast to the fp32 reduce dtype, until that last backward reduce-scatters it
        // (torch/distributed/fsdp/_fully_shard/_fsdp_param.py to_accumulated_grad_if_needed).
        if (fsdp && pipelinedFsdp(f, c) && c.num_microbatches > 1)
            m.gradients += 4 * whole;
        m.optimizer = f.adam_state_bytes * per(fsdp);
        return m;
    }
    m.weights = weightBytes * per(c.zero_stage >= 3);
    // Under grad_reduce_bf16 the optimizer's fp32 copy of its gradients (Megatron's DistributedOptimizer
    // _copy_model_grads_to_main_grads: shard_model_grad.float()) exists during the step only, after the
    // activations are gone: not at the peak.
    if (pipelineFp32Grads(f, c, dtype))
        m.gradients = (f.grad_bytes + 4) * whole; // the bf16 .grad and the fp32 accumulation buffer
    else if (c.zero_stage >= 2)
        m.gradients = (gradBytes + f.fp32_grad_partition_bytes) * sharded;
    else if (c.zero_stage == 1)
        m.gradients = gradBytes * whole + f.fp32_grad_partition_bytes * (f.zero1_full_grad_buffer ? whole : sharded);
    else
        m.gradients = (gradBytes + f.fp32_grad_partition_bytes) * whole;
    m.optimizer = (f.master_bytes + f.adam_state_bytes) * per(shardsOptimizerStates(f, c, dtype));
    return m;
}

double fixedBufferBytes(const FrameworkProfile& f, const ParallelConfig& c)
{
    if (c.zero_stage < 2 || f.sharded_fp32_params)
        return 0;
    // DeepSpeed doubles its ipg bucket with overlap_comm, on by default at stage 3 only (zero/config.py).
    return (c.zero_stage >= 3 ? 2 : 1) * f.grad_bucket_bytes + f.gather_bucket_bytes;
}

double shardedDpWorkingBytes(const FrameworkProfile& f, const ParallelConfig& c, double largestBlockParams,
                             double weightBytes)
{
    if (f.framework == Framework::Generic)
        return c.zero_stage >= 3 ? 2 * largestBlockParams * weightBytes : 0;
    if (c.zero_stage < 2 || (c.zero_stage == 2 && !f.sharded_fp32_params))
        return 0; // ZeRO-1/2 keep whole 16-bit weights; their grads are in parameterMemory
    const double liveParams = keepsUnshardedCopies(f, c) ? 0 : f.zero3_live_blocks * largestBlockParams * weightBytes;
    return liveParams + unshardedGradBytes(f, c, weightBytes) * largestBlockParams;
}

bool perModuleShardedPeak(const FrameworkProfile& f, const ParallelConfig& c)
{
    return f.framework != Framework::Generic && f.sharded_dp == ShardedDpImpl::PerModule
        && (c.zero_stage >= 3 || (c.zero_stage == 2 && f.sharded_fp32_params));
}

double shardedDpLayerPeakBytes(const FrameworkProfile& f, const ParallelConfig& c, double layerParams,
                               double neighbourParams, double layerWorking, double weightBytes)
{
    const double live = keepsUnshardedCopies(f, c)
        ? 0
        : (layerParams + std::max(0, f.zero3_live_blocks - 1) * neighbourParams) * weightBytes;
    return live + std::max(layerWorking, unshardedGradBytes(f, c, weightBytes) * layerParams);
}

double retainedGatherBytes(const FrameworkProfile& f, const ParallelConfig& c, double retainedParams,
                           double weightBytes)
{
    return f.keeps_last_forward_gather && !keepsUnshardedCopies(f, c) ? retainedParams * weightBytes : 0;
}

double runtimeBytes(const FrameworkProfile& f, const CostParams& params, const ParallelConfig& c)
{
    if (f.framework == Framework::Generic)
        return params.runtime_reserve_bytes;
    // Communicators a rank uses in a step: one per parallel dimension wider than one rank.
    int communicators = 0;
    for (const int size : {c.tp, c.cp, c.dp * c.cp, c.pp, c.ep})
        communicators += size > 1 ? 1 : 0;
    return f.cuda_context_bytes + f.cublas_workspace_bytes + f.nccl_bytes_per_communicator * communicators;
}

void addReserve(MemoryBreakdown& m, const FrameworkProfile& f, const CostParams& params, const ParallelConfig& c)
{
    m.runtime = runtimeBytes(f, params, c);
    m.fragmentation = std::max(0.0, f.fragmentation - 1) * m.allocated();
    m.reserve = m.runtime + m.fragmentation;
}

} // namespace shardscape
