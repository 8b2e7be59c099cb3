// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/support/units.h"

namespace shardscape {

/**
 * The physically meaningful knobs of the datasheet cost model. Every default is documented here and in
 * the README; calibration (tests/bench/bench_calibration) tunes only these, never per-configuration factors.
 */
struct CostParams
{
    /** Fraction of the datasheet dense peak that a large, well-shaped GEMM sustains in training (cuBLAS bf16),
        for devices whose preset states no measured `matmul_efficiency` (a100-*: 0.84, h100-sxm: 0.72). Calibrated
        2024-25 (tests/bench/calibration_results.md): measured maxima are 0.80-0.86 (MAMF), sustained ~0.71. */
    double matmul_efficiency = 0.75;
    /** GEMM dimension at which efficiency halves: g(x) = x / (x + matmul_half_dim) per dimension. 256: a GEMM fills
        one wave of 128x256 tiles on 100+ SMs only from about 2k x 2k outputs (wave quantization), and short k
        pays the prologue/epilogue (calibrated; was 48, which made 2k-wide GEMMs 95% efficient). */
    double matmul_half_dim = 256;
    /** Fraction of peak a fused (flash) attention kernel reaches, averaged over forward and backward (backward runs
        2.5x the forward's FLOPs), for devices whose preset states no `attention_efficiency` (a100-*: 0.36,
        h100-sxm: 0.20). FlashAttention-2 reaches 50-73% of the A100's peak forward but only ~35% of the H100's. */
    double attention_efficiency = 0.3;
    /** Share of the score blocks a causal attention kernel computes (it skips the masked half). */
    double attention_causal_fraction = 0.5;
    /** Fraction of HBM bandwidth a streaming (memory-bound) kernel reaches. */
    double memory_efficiency = 0.75;
    /** Shortest time any kernel takes (launch and tail), seconds. */
    double min_kernel_time = 4e-6;
    /** Fraction of a link's bandwidth a large NCCL collective reaches inside a node / across nodes. */
    double intra_node_efficiency = 0.75;
    double inter_node_efficiency = 0.85;
    /** Fraction of the last micro-batch's backward under which data-parallel gradient sync can hide. */
    double dp_overlap = 0.9;
    /** Fraction of ZeRO-3 parameter all-gathers (and per-micro-batch gradient reduce-scatters) hidden under
        compute by prefetching. 0.6: FSDP prefetches one block ahead, and the NCCL kernels that overlap share the
        SMs and HBM with the compute they hide under (calibrated against llm-foundry's FSDP runs; was 0.8). */
    double zero3_prefetch_overlap = 0.6;
    /** Bytes per parameter of the optimizer's resident state in units of the weight size (Adam + fp32
        master weights with 16-bit weights: 6 x 2 B = 12 B), nnScaler's opt_resident_coef. */
    double opt_resident_coef = 6;
    /** Optimizer transient buffers in units of the weight size (nnScaler's opt_transient_coef). */
    double opt_transient_coef = 0;
    /** Transient memory = coef x the largest activation a device holds at once (nnScaler's transient_mem_coef). */
    double transient_mem_coef = 2;
    /** Runtime reserve per device: CUDA context, cuBLAS workspace, NCCL buffers, allocator fragmentation. */
    double runtime_reserve_bytes = 3.0 * units::kGiB;
    /** Bytes per gradient element as communicated and stored: 4, fp32, as Megatron (accumulate_allreduce_grads_in_fp32,
        forced on for bf16), FSDP2 (reduce_dtype float32) and Composer's default mixed precision reduce and keep them
        (was 2). */
    double grad_bytes = 4;
    /** Tensor memory per device that the user's own runs showed beyond the model (may be negative): a measured
        profile's calibration (`profile import-log`), 0 otherwise. MemoryBreakdown::calibrated. */
    double calibrated_memory_bytes = 0;
};

} // namespace shardscape
