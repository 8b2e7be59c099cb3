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
    /** Fraction of the datasheet dense peak that a large, well-shaped GEMM reaches (cuBLAS bf16). */
    double matmul_efficiency = 0.78;
    /** GEMM dimension at which efficiency halves: g(x) = x / (x + matmul_half_dim) per dimension. */
    double matmul_half_dim = 48;
    /** Fraction of peak a fused (flash) attention kernel reaches, forward and backward. */
    double attention_efficiency = 0.55;
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
    /** Fraction of ZeRO-3 parameter all-gathers hidden under compute by prefetching. */
    double zero3_prefetch_overlap = 0.8;
    /** Bytes per parameter of the optimizer's resident state in units of the weight size (Adam + fp32
        master weights with 16-bit weights: 6 x 2 B = 12 B), nnScaler's opt_resident_coef. */
    double opt_resident_coef = 6;
    /** Optimizer transient buffers in units of the weight size (nnScaler's opt_transient_coef). */
    double opt_transient_coef = 0;
    /** Transient memory = coef x the largest activation a device holds at once (nnScaler's transient_mem_coef). */
    double transient_mem_coef = 2;
    /** Runtime reserve per device: CUDA context, cuBLAS workspace, NCCL buffers, allocator fragmentation. */
    double runtime_reserve_bytes = 3.0 * units::kGiB;
    /** Bytes per gradient element as communicated and stored (bf16). */
    double grad_bytes = 2;
};

} // namespace shardscape
