// SPDX-License-Identifier: MIT
// Whether a configuration can run at all on this model and cluster, before anything is costed: divisibility,
// the cluster's size, the layer split, the framework's limits.
#include "shardscape/cost/cost_model.h"

#include "memory_model.h"
#include "shardscape/cost/uncertainty.h"
#include "v_stage_split.h"

#include "shardscape/support/error.h"
#include "shardscape/support/strings.h"
#include "shardscape/support/units.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <sstream>
#include <unordered_set>

namespace shardscape {

std::string CostModel::structuralProblem(const ParallelConfig& c, const Workload& w, bool requireFullCluster) const
{
    for (const auto& [name, value] : {std::pair<const char*, int> {"tp", c.tp},
                                      {"pp", c.pp},
                                      {"dp", c.dp},
                                      {"cp", c.cp},
                                      {"ep", c.ep},
                                      {"vpp", c.vpp},
                                      {"micro-batch", c.micro_batch},
                                      {"micro-batches", c.num_microbatches},
                                      {"zero_ngroups", c.zero_ngroups}})
        if (value < 1)
            return cat(name, " must be at least 1 (got ", value, ")");
    if (requireFullCluster && c.worldSize() != m_cluster.worldSize())
        return cat("tp x cp x dp x pp = ", c.worldSize(), " GPUs, but the cluster has ", m_cluster.worldSize(), " (",
                   m_cluster.nodes, " x ", m_cluster.gpus_per_node, ")");
    {
        std::vector<std::string> dims;
        std::stringstream in(c.rank_order);
        for (std::string d; std::getline(in, d, '-');)
            dims.push_back(d);
        std::sort(dims.begin(), dims.end());
        if (dims != std::vector<std::string> {"cp", "dp", "pp", "tp"})
            return cat("rank order '", c.rank_order, "' must name tp, cp, dp and pp once each, e.g. tp-cp-dp-pp");
    }
    if (w.global_batch > 0 && c.globalBatch() != w.global_batch)
        return cat("global batch ", w.global_batch, " is not dp x micro-batch x micro-batches = ", c.dp, " x ",
                   c.micro_batch, " x ", c.num_microbatches);
    if (w.seq_len > 0 && w.seq_len != m_graph->seq_len)
        return cat("the model graph was built for seq_len ", m_graph->seq_len, ", not ", w.seq_len);
    if (m_graph->transformer) {
        const auto& t = *m_graph->transformer;
        if (t.num_heads % c.tp)
            return cat("tp ", c.tp, " does not divide the ", t.num_heads, " attention heads");
        if (t.num_kv_heads % c.tp)
            return cat("tp ", c.tp, " does not divide the ", t.num_kv_heads, " key/value heads");
        // Dense MLPs (and shared experts) split by tp, routed experts by etp.
        const std::int64_t denseFfn = t.num_experts > 0 && t.dense_ffn_hidden > 0 ? t.dense_ffn_hidden : t.ffn_hidden;
        if ((t.num_experts == 0 || t.first_dense_layers > 0 || t.moe_layer_step > 1) && denseFfn % c.tp)
            return cat("tp ", c.tp, " does not divide the FFN size ", denseFfn);
        if (t.shared_expert_ffn % c.tp)
            return cat("tp ", c.tp, " does not divide the shared expert's FFN size ", t.shared_expert_ffn);
        if (t.num_experts > 0 && t.ffn_hidden % c.expertTp())
            return cat("etp ", c.expertTp(), " does not divide the experts' FFN size ", t.ffn_hidden);
        if (c.ep > 1 && (t.num_experts == 0 || t.num_experts % c.ep))
            return t.num_experts == 0 ? std::string("ep > 1 needs a mixture-of-experts model")
                                      : cat("ep ", c.ep, " does not divide the ", t.num_experts, " experts");
    } else if (c.ep > 1) {
        return "ep > 1 needs a mixture-of-experts model";
    }
    if (c.etp < 0 || (c.etp > 0 && (c.etp > c.tp || c.tp % c.etp)))
        return cat("etp ", c.etp, " must divide tp ", c.tp, " (experts split over part of the tensor-parallel ranks)");
    if (c.etp > 0 && c.etp != c.tp && c.sequence_parallel == false && c.tp > 1)
        return "etp < tp needs sequence parallelism (each tensor-parallel rank routes its own tokens)";
    if (c.ep > 1 && (c.tp * c.cp * c.dp) % (c.ep * c.expertTp()))
        return cat("ep x etp = ", c.ep * c.expertTp(), " must divide tp x cp x dp = ", c.tp * c.cp * c.dp,
                   " (Megatron folds the experts' grid over the same ranks)");
    if (c.cp > 1 && m_graph->seq_len % (2 * c.cp))
        return cat("cp ", c.cp, " needs seq_len divisible by 2 x cp (load-balanced chunks); seq_len is ",
                   m_graph->seq_len);
    if (c.sequence_parallel && c.tp == 1)
        return "sequence parallelism needs tp > 1";
    if (c.tp_comm_overlap && !c.sequence_parallel)
        return "TP communication overlap needs sequence parallelism (Megatron-LM's --tp-comm-overlap and torchtitan's "
               "async TP overlap the SP all-gathers and reduce-scatters): turn sequence parallelism on";
    if (c.overlap_param_gather && c.zero_stage != 1 && c.zero_stage != 2)
        return "overlapping the parameter all-gather needs ZeRO-1 or ZeRO-2 (Megatron-LM's distributed optimizer), "
               "whose updated shards are gathered once a step: set ZeRO to 1 or 2, or turn the overlap off";
    if (c.moe_a2a_overlap && (c.ep < 2 || c.num_microbatches < 2))
        return "overlapping the expert all-to-alls needs ep > 1 and at least two micro-batches (one micro-batch's "
               "all-to-all runs under another's compute): raise ep or the micro-batches, or turn the overlap off";
    if (c.moe_a2a_overlap && c.pp > 1 && !overlapsMicrobatchPairs(c.schedule))
        return "overlapping the expert all-to-alls needs two micro-batches side by side: Megatron's combined 1F1B "
               "(pp = 1 or the interleaved schedule) or DualPipe's F&B chunks (dualpipev, dualpipe): use one of "
               "those, or turn the overlap off";
    if (c.moe_shared_expert_overlap && c.ep < 2)
        return "overlapping the shared expert with the expert all-to-alls needs ep > 1: raise ep, or turn the overlap "
               "off";
    if (c.moe_shared_expert_overlap && (!m_graph->transformer || m_graph->transformer->shared_expert_ffn <= 0))
        return "the model has no shared expert to overlap with the expert all-to-alls: turn the overlap off";
    if (c.moe_shared_expert_overlap && c.moe_a2a_overlap)
        return "Megatron runs the shared-expert overlap or the all-to-all overlap with another micro-batch, not both "
               "(transformer_config.py asserts it): turn one off";
    if (!(c.moe_capacity_factor >= 0) || c.moe_capacity_factor > 1e3)
        return cat("the expert capacity factor must be 0 (dropless) or a positive number, got ", c.moe_capacity_factor);
    if (!(c.moe_router_imbalance >= 1) || c.moe_router_imbalance > 1e3)
        return cat("the router imbalance is the busiest expert-parallel rank's tokens over the mean, 1 or more; got ",
                   c.moe_router_imbalance);
    if (c.fp8_linears && m_cluster.device.peak(DType::FP8) <= 0)
        return cat(m_cluster.device.name, " has no FP8 tensor-core rate: turn FP8 linears off");
    if (c.fp8_bf16_first_layers < 0 || c.fp8_bf16_last_layers < 0)
        return "the BF16 first and last layers under FP8 are counts of blocks, 0 or more";
    if (c.hasFp8Bf16Layers() && c.fp8_bf16_first_layers + c.fp8_bf16_last_layers > m_blockCount)
        return cat("the BF16 first (", c.fp8_bf16_first_layers, ") and last (", c.fp8_bf16_last_layers,
                   ") layers under FP8 are more than the model's ", m_blockCount, " decoder blocks: lower them");
    if (c.hasFp8Bf16Layers() && (c.framework == Framework::MegatronCore || c.framework == Framework::NeMo)
        && std::max(c.fp8_bf16_first_layers, c.fp8_bf16_last_layers) > m_blockCount / c.pp)
        // megatron/core/transformer/transformer_config.py __post_init__: each count at most num_layers // pp.
        return cat("Megatron keeps at most num_layers / pp = ", m_blockCount / c.pp,
                   " BF16 layers at the start and at the end under FP8 (got ", c.fp8_bf16_first_layers, " and ",
                   c.fp8_bf16_last_layers, "): lower them");
    if (c.zero_stage < 0 || c.zero_stage > 3)
        return cat("ZeRO stage must be 0..3 (got ", c.zero_stage, ")");
    if ((c.dp * c.cp) % c.zero_ngroups)
        return cat("zero_ngroups ", c.zero_ngroups, " must divide dp x cp = ", c.dp * c.cp);
    if (c.recompute == RecomputeKind::Modules && c.recompute_modules.empty())
        return "recompute by modules needs at least one module name";
    const int chunks = layerChunks(c.schedule, c.pp, c.vpp);
    const std::string_view chunkRule = layerChunksName(c.schedule);
    if (chunks > static_cast<int>(m_layers.size()))
        return cat(chunkRule, " = ", chunks, " pipeline chunks but the model has only ", m_layers.size(), " layers");
    if (isVShaped(c.schedule)) {
        if (c.pp < 2 || c.vpp != 2)
            return cat("the ", scheduleName(c.schedule), " schedule needs pp >= 2 and vpp = 2 (two chunks per rank)");
        if (c.num_microbatches < 2 * c.pp)
            return cat("the ", scheduleName(c.schedule), " schedule needs at least 2 x pp = ", 2 * c.pp,
                       " micro-batches (got ", c.num_microbatches, ")");
        if (isBidirectional(c.schedule) && (c.pp % 2 || c.num_microbatches % 2))
            return cat("the dualpipe schedule feeds half the micro-batches from each end: pp (", c.pp,
                       ") and the micro-batch count (", c.num_microbatches, ") must both be even");
    } else if (c.vpp > 1 && c.schedule != ScheduleKind::Interleaved1F1B) {
        return "vpp > 1 needs the interleaved schedule";
    }
    if (c.schedule == ScheduleKind::Interleaved1F1B) {
        if (c.pp < 2 || c.vpp < 2)
            return "the interleaved schedule needs pp >= 2 and vpp >= 2";
        if (c.num_microbatches % c.pp)
            return cat("the interleaved schedule needs micro-batches (", c.num_microbatches, ") divisible by pp (",
                       c.pp, ")");
    }
    if (!c.stage_layers.empty()) {
        if (static_cast<int>(c.stage_layers.size()) != chunks)
            return cat("stage layer list has ", c.stage_layers.size(), " entries, expected ", chunkRule, " = ", chunks);
        long sum = 0;
        for (const int n : c.stage_layers) {
            if (n < 1)
                return "every pipeline chunk needs at least one layer";
            sum += n;
        }
        if (sum != static_cast<long>(m_layers.size()))
            return cat("stage layer counts sum to ", sum, ", but the model has ", m_layers.size(), " layers");
    }
    if (m_cluster.device.peak(m_graph->dtype) <= 0)
        return cat(m_cluster.device.name, " has no ", dtypeName(m_graph->dtype), " tensor-core rate");
    const FrameworkProfile& framework = frameworkOf(c);
    if (std::string problem = frameworkRestriction(framework, c); !problem.empty())
        return problem;
    if (const std::string cause = frameworkModelRestriction(framework.framework, c.framework_version, *m_graph);
        !cause.empty())
        return cat(cause, ": ", kModelRestrictionWayOut);
    return {};
}

} // namespace shardscape
