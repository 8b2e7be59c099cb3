// SPDX-License-Identifier: MIT
#pragma once

#include <algorithm>

#include "shardscape/cost/framework_profile.h"
#include "shardscape/model/dtype.h"
#include "shardscape/sim/schedule.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shardscape {

/** Activation recomputation: none, selective (attention core), full (every block), or named modules. */
enum class RecomputeKind : std::uint8_t
{
    None,
    Selective,
    Full,
    Modules
};
std::string_view recomputeName(RecomputeKind kind);
std::optional<RecomputeKind> parseRecompute(std::string_view name);

/**
 * One parallel configuration of a training step. The world is tp x cp x dp x pp GPUs; ep splits the
 * experts over ranks of the dp x cp group (Megatron's expert grid), so it adds no factor.
 * global batch = dp x micro_batch x num_microbatches sequences.
 */
struct ParallelConfig
{
    /** The experts' tensor-parallel width (etp, or tp when unset). */
    int expertTp() const { return etp > 0 ? etp : tp; }
    /** Ranks holding the same expert shard: tp x cp x dp / (ep x etp), over which expert gradients are synced. */
    int expertDp() const { return std::max(1, tp * cp * dp / std::max(1, ep * expertTp())); }

    int tp = 1;
    int pp = 1;
    int dp = 1;
    int cp = 1;
    int ep = 1;
    /** Expert tensor parallelism (Megatron's --expert-tensor-parallel-size): experts split over etp ranks, 0 = tp.
        MoE layers fold their own grid: etp x ep x expert-dp = tp x cp x dp, so ep may span tensor-parallel ranks
        once etp < tp. */
    int etp = 0;
    int vpp = 1; ///< model chunks per pipeline rank (interleaved schedule)
    int micro_batch = 1; ///< sequences per micro-batch per data-parallel rank
    int num_microbatches = 1; ///< per step per data-parallel rank (update_freq / gradient accumulation)
    int zero_stage = 0; ///< 0: none, 1: optimizer states, 2: + gradients, 3: + parameters
    int zero_ngroups = 1; ///< ZeRO shards within dp / zero_ngroups ranks (hierarchical partitioning)
    bool sequence_parallel = false; ///< Megatron SP: shards the non-TP activations by tp
    /** Overlap the sequence-parallel all-gathers / reduce-scatters with the GEMMs next to them (Megatron-LM's
        --tp-comm-overlap with Transformer Engine userbuffers, torchtitan's async TP). Needs sequence_parallel. */
    bool tp_comm_overlap = false;
    /** Overlap the distributed optimizer's parameter all-gather with the next step's forward (Megatron-LM's
        --overlap-param-gather). Only meaningful with ZeRO-1/2, whose updated shards are gathered once a step. */
    bool overlap_param_gather = false;
    /** Overlap the expert-parallel all-to-alls of one micro-batch with another micro-batch's compute (Megatron-Core's
        --overlap-moe-expert-parallel-comm: in the 1F1B steady state a forward and a backward run interleaved layer by
        layer, so each one's dispatch and combine run under the other's compute). Needs ep > 1 and two or more
        micro-batches. */
    bool moe_a2a_overlap = false;
    /** Run the shared expert while the routed tokens' dispatch and combine all-to-alls are on the wire (Megatron-Core's
        --moe-shared-expert-overlap; without it the shared expert runs before the router). Needs ep > 1 and a shared
        expert; Megatron refuses it together with moe_a2a_overlap. */
    bool moe_shared_expert_overlap = false;
    /** The experts' capacity factor (Megatron's --moe-expert-capacity-factor): an expert computes at most this many
        times its even share of the routed tokens and drops the rest. 0 = dropless: every routed token is computed,
        and the busiest expert-parallel rank sets the pace. */
    double moe_capacity_factor = 0;
    /** Router load imbalance: routed tokens on the busiest expert-parallel rank over the mean (1 = even). A trained
        router's own skew; the statistical spread of top-k routing over a micro-batch is added by the cost model. */
    double moe_router_imbalance = 1;
    /** Linear layers run their GEMMs in FP8 with dynamic scaling (torchtitan's float8 converter, Transformer
        Engine's --fp8-format hybrid); attention, norms and the rest stay in the model's dtype. */
    bool fp8_linears = false;
    /** Their scaling recipe (only read when fp8_linears is on). */
    Float8Recipe fp8_recipe = Float8Recipe::Tensorwise;
    /** Decoder blocks at the start and at the end of the model whose linears stay in the model's dtype under
        fp8_linears (Megatron's --first-last-layers-bf16 with --num-layers-at-start-in-bf16 and
        --num-layers-at-end-in-bf16; Megatron-Bridge's FP8 current-scaling recipe keeps 1 and 1). Counted over the
        whole model, as megatron/core/fp8_utils.py is_first_last_bf16_layer does with the global layer number. */
    int fp8_bf16_first_layers = 0;
    int fp8_bf16_last_layers = 0;
    /** Gradients accumulate and reduce in the model's 16-bit dtype instead of fp32 (Megatron's
        --grad-reduce-in-bf16: megatron/core/distributed/param_and_grad_buffer.py gives the grad buffers
        param.dtype unless grad_reduce_in_fp32; Megatron-Bridge's performance recipes set ddp.grad_reduce_in_fp32
        False). Halves the gradient buffers and the data-parallel gradient traffic. */
    bool grad_reduce_bf16 = false;
    /** The FP8 linears' weights are FP8 parameters, all-gathered in FP8 (Megatron's --fp8-param-gather: Transformer
        Engine's fp8_model_init; Megatron-Bridge's FP8 recipes set it): no 16-bit copy beside the FP8 one, and 1 byte
        per element in the distributed optimizer's parameter all-gather. Needs fp8_linears and ZeRO 1 or more. */
    bool fp8_param_gather = false;
    /** Whether fp8_linears leaves some blocks in the model's dtype. */
    bool hasFp8Bf16Layers() const { return fp8_linears && (fp8_bf16_first_layers > 0 || fp8_bf16_last_layers > 0); }
    /** Eager PyTorch (no torch.compile): RMSNorm, rotary embedding and SwiGLU run as chains of unfused kernels,
        several of them in fp32, instead of one fused kernel each (torch.compile, Megatron/Transformer Engine). */
    bool eager_kernels = false;
    /** The framework the plan is for: its memory terms, its sharded-DP implementation and what it can run
        (framework_profile.h). Generic keeps the CostParams coefficients. */
    Framework framework = Framework::Generic;
    /** The framework's release line the plan is for (frameworkVersions: "core_v0.19", "main", "v0.2", ...); empty
        = its current one. Costs do not depend on it; the exports write what that release accepts. */
    std::string framework_version;
    RecomputeKind recompute = RecomputeKind::None;
    std::vector<std::string> recompute_modules; ///< suffixes of module paths; "ROOT" = every block
    ScheduleKind schedule = ScheduleKind::OneFOneB;
    /** Layers per pipeline chunk (pp x vpp entries, summing to the model's layer count); empty = automatic. */
    std::vector<int> stage_layers;
    /** Rank order, fastest-varying first (Megatron's convention): placement of every group. */
    std::string rank_order = "tp-cp-dp-pp";

    int worldSize() const { return tp * cp * dp * pp; }
    int globalBatch() const { return dp * micro_batch * num_microbatches; }
    /** "tp2 pp4 dp8 mb1 m64 zero1 sp recompute=selective 1f1b" */
    std::string describe() const;
};

/** Whether every recomputed module is a decoder block's index ("0", "5"): whole blocks, as Megatron's
    --recompute-method block and the planner's partial recomputation choose them. */
bool recomputesBlockIndices(const ParallelConfig& c);

/** The recomputed blocks' indices, ascending and distinct; empty unless recomputesBlockIndices. */
std::vector<long long> recomputedBlocks(const ParallelConfig& c);

/** N when the config recomputes the first N blocks of each model chunk (equal runs of consecutive block indices, the
    first from 0: Megatron's --recompute-method block --recompute-num-layers N), else 0. */
int recomputedBlocksPerChunk(const ParallelConfig& c);

/**
 * What the config recomputes, for a table cell: "none", "selective", "full", "modules", or, for block indices,
 * "block N" when they are the first N blocks of each model chunk (equal runs of consecutive indices: Megatron's
 * --recompute-num-layers N), "1 in k blocks" for every k-th block from the k-th on (torchtitan's layer SAC on one
 * stage), and "K blocks" otherwise.
 */
std::string recomputeLabel(const ParallelConfig& c);

} // namespace shardscape
