// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/cost/cost_source.h"
#include "shardscape/cost/framework_profile.h"
#include "shardscape/cost/parallel_config.h"
#include "shardscape/model/layers.h"
#include "shardscape/model/model_graph.h"

#include <cstdint>
#include <string>
#include <vector>

namespace shardscape {

/** How one layer is laid out: everything about a ParallelConfig that changes a layer's cost. */
struct LayerLayout
{
    int tp = 1;
    int cp = 1;
    int ep = 1;
    int etp = 1; ///< the experts' tensor-parallel width (ParallelConfig::expertTp)
    bool sequence_parallel = false;
    bool tp_comm_overlap = false; ///< SP collectives overlap the GEMMs beside them (ParallelConfig)
    bool moe_a2a_overlap = false; ///< expert all-to-alls run under another micro-batch's compute (ParallelConfig)
    bool moe_shared_expert_overlap = false; ///< the shared expert runs under the all-to-alls (ParallelConfig)
    double moe_capacity_factor = 0; ///< ParallelConfig::moe_capacity_factor (0 = dropless)
    double moe_router_imbalance = 1; ///< ParallelConfig::moe_router_imbalance
    /** The most of an overlapped collective that hides under compute (its kernels share the SMs and HBM):
        CostParams::zero3_prefetch_overlap, the same fraction ZeRO-3 prefetching gets. */
    double overlap_hidden_fraction = 0.6;
    bool fp8_linears = false; ///< linear GEMMs in FP8 with dynamic scaling casts (ParallelConfig)
    bool eager_kernels = false; ///< unfused elementwise kernels of eager PyTorch (ParallelConfig)
    double micro_batch = 1; ///< sequences per micro-batch
    RecomputeKind recompute = RecomputeKind::None;
    std::vector<std::string> recompute_modules;
    /** The framework's fp32 loss: bytes per logit saved for backward, and live beside them at the loss's peak
        (FrameworkProfile). */
    double loss_saved_bytes_per_logit = 4;
    double loss_working_bytes_per_logit = 6;
    /** Recomputation is PyTorch's selective activation checkpointing (torchtitan): the block is one checkpoint
        region whose policy saves the outputs of some GEMMs and attention kernels and recomputes everything else,
        so only those outputs and the region's inputs are stashed. By modules: the GEMMs and attention kernels not
        listed; Selective: torchtitan's per-op policy (the attention kernel and every odd-numbered matmul). */
    bool selective_checkpoint_policy = false;
    /** The per-op policy caches the attention kernel's output (FrameworkProfile::op_sac_caches_attention). */
    bool policy_caches_attention = true;
    /** K and V are repeated to the query heads before the attention kernel saves them
        (FrameworkProfile::attention_repeats_kv). */
    bool attention_repeats_kv = false;
    /** How many times faster than the device's FlashAttention-2 rate the framework's attention kernel runs
        (DeviceSpec::fused_attention_speedup where FrameworkProfile::vendor_fused_attention, else 1). */
    double attention_speedup = 1;
    /** Column-parallel linears save their all-gathered input under SP (FrameworkProfile::sp_saves_gathered_inputs). */
    bool sp_saves_gathered_inputs = false;
    /** Context parallelism as the framework runs it (FrameworkProfile::cp_comm and the merge / dK-dV terms). */
    CpComm cp_comm = CpComm::P2PRing;
    double cp_merge_bytes_per_element = 10;
    double cp_dkv_bytes_per_element = 2;
    /** TP overlap runs its GEMMs as tp sequential chunks of m / tp rows (FrameworkProfile). */
    bool tp_overlap_serial_chunks = false;
    /** TP overlap fuses a collective only with a matmul that reads or writes it directly (FrameworkProfile). */
    bool tp_overlap_by_pattern = false;
    /** Tensorwise FP8 linears gather their input and output gradient in FP8 (FrameworkProfile). */
    bool tp_gathers_fp8_tensorwise = false;
    /** Column-parallel backward collectives run beside the linear's own GEMMs (FrameworkProfile). */
    bool tp_backward_comm_async = false;
    /** FP8 linears fed by a norm take their cast from the norm kernel (FrameworkProfile::fp8_cast_in_norm). */
    bool fp8_cast_in_norm = false;
    /** Linears reading one input run as one GEMM (FrameworkProfile::fused_column_gemms). */
    bool fused_column_gemms = false;
    /** The FP8 scaling recipe of the linears when fp8_linears is on. */
    Float8Recipe fp8_recipe = Float8Recipe::Tensorwise;
    GroupShape tp_group;
    GroupShape cp_group;
    GroupShape ep_group;
    GroupShape etp_group;
};

/** Costs of one layer for one micro-batch on one device. Seconds, bytes, FLOPs, parameter elements. */
struct LayerCost
{
    double forward = 0; ///< compute + exposed TP/CP/EP communication
    double backward_input = 0; ///< input-gradient compute + recomputation + exposed communication
    double backward_weight = 0; ///< weight-gradient compute
    double recompute = 0; ///< seconds of recomputation inside backward_input
    double tp_comm = 0; ///< TP/SP collective seconds (forward + backward), already inside the times above
    double other_comm = 0; ///< CP ring and EP all-to-all seconds exposed, already inside the times above
    double other_comm_forward = 0; ///< the forward's part of other_comm (the rest is in backward_input)
    double flops = 0; ///< model FLOPs (forward + backward) on this device
    double recompute_flops = 0; ///< extra forward FLOPs of recomputation on this device
    double recompute_model_flops = 0; ///< the same recomputation counted once for the model (for HFU)
    double activation_bytes = 0; ///< stashed from forward to backward
    double largest_activation_bytes = 0; ///< the biggest single activation produced (transient sizing)
    /** Bytes live only while this layer runs its backward: the activations a recomputed module re-creates (they
        are all alive at once before its backward starts) and the loss's fp32 logits working set. */
    double working_bytes = 0;
    /** Seconds of the forward's FP8 weight casts, per micro-batch, inside `forward` (a framework that caches the
        FP8 weights for the step pays them once: FrameworkProfile::fp8_weight_cached_per_step). */
    double fp8_weight_cast = 0;
    double output_bytes = 0; ///< activation sent to the next pipeline stage when a boundary follows
};

/** Parameters one device holds for a layer, by how they are sharded. */
struct LayerParams
{
    double dense = 0; ///< elements per device, non-expert (already divided by tp where sharded)
    double expert = 0; ///< elements per device of MoE experts (divided by tp x ep)
};

/**
 * Routed token copies the busiest expert-parallel rank computes, over the mean per rank. Dropless: the larger of the
 * router's own skew and the sampling spread of top-k routing, E[max of ep counts of mean mu] ~ mu + sqrt(2 mu ln ep)
 * (the Gaussian bound on the largest of ep nearly independent binomial counts), so 1 + sqrt(2 ln(ep) / mu). A capacity
 * factor caps it: no expert computes more than capacity x its even share, the rest is dropped.
 * `routedPerRank` is mu, the mean routed token copies per rank per micro-batch.
 */
double expertLoadFactor(double capacityFactor, double routerImbalance, int ep, double routedPerRank);

/**
 * Computes layer costs from the op graph: each op's share under the layout (tp-sharded roles and, with
 * sequence parallelism, the replicated ones divide by tp; everything divides by cp), its roofline time
 * from the cost source, Megatron's collectives, and the stash implied by the saved tensors and the
 * recomputation rules (a recomputed module keeps only its external inputs).
 */
LayerCost computeLayerCost(const ModelGraph& graph, const std::vector<OpId>& producer, const Layer& layer,
                           const LayerLayout& layout, const CostSource& source);

/** Parameters of `layer` per device; `ops` may span several layers (a pipeline stage) so tied weights count once. */
LayerParams paramsPerDevice(const ModelGraph& graph, const std::vector<const Layer*>& layers, int tp, int ep, int etp);

/** The [k x n] operand a weight is in its op's GEMM, before any tensor-parallel split. */
struct WeightGemm
{
    double k = 0, n = 0;
};

/**
 * A linear's weight is its last two dimensions. A convolution's weight, [out, in / groups, kernel...], is the
 * operand of the implicit GEMM cuDNN runs (im2col): n = the output channels, k = in / groups x the kernel window,
 * and the output positions are m. Zero dimensions where the weight has fewer than two.
 */
WeightGemm weightGemmOf(const Op& op, const Tensor& weight);

/** True when `module` lies inside a module whose path ends with `suffix` (component-wise); "ROOT" matches all. */
std::string matchedModule(const std::string& module, const std::vector<std::string>& suffixes);

} // namespace shardscape
