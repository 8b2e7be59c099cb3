// SPDX-License-Identifier: MIT
// The cost of one layer under a configuration's layout (tensor, context and expert groups, recomputation),
// memoised by layer signature.
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

namespace {

LayerLayout layoutOf(const ParallelConfig& c, const FrameworkProfile& framework, GroupShape tpGroup, GroupShape cpGroup,
                     const Cluster& cluster)
{
    const int gpusPerNode = cluster.gpus_per_node;
    LayerLayout layout;
    layout.tp = c.tp;
    layout.cp = c.cp;
    layout.ep = c.ep;
    layout.etp = c.expertTp();
    layout.sequence_parallel = c.sequence_parallel;
    layout.tp_comm_overlap = c.tp_comm_overlap;
    layout.moe_a2a_overlap = c.moe_a2a_overlap;
    layout.moe_shared_expert_overlap = c.moe_shared_expert_overlap;
    layout.moe_capacity_factor = c.moe_capacity_factor;
    layout.moe_router_imbalance = c.moe_router_imbalance;
    layout.fp8_linears = c.fp8_linears;
    layout.fp8_recipe = c.fp8_recipe;
    layout.eager_kernels = c.eager_kernels;
    layout.micro_batch = c.micro_batch;
    layout.recompute = c.recompute;
    layout.recompute_modules = c.recompute_modules;
    if (!c.eager_kernels && framework.compiles_loss) {
        layout.loss_saved_bytes_per_logit = framework.compiled_loss_saved_bytes_per_logit;
        layout.loss_working_bytes_per_logit = framework.compiled_loss_working_bytes_per_logit;
    } else {
        const bool lossParallel = c.tp > 1 && framework.loss_parallel_eager_working_bytes_per_logit > 0;
        layout.loss_saved_bytes_per_logit = framework.loss_saved_bytes_per_logit;
        layout.loss_working_bytes_per_logit = lossParallel ? framework.loss_parallel_eager_working_bytes_per_logit
                                                           : framework.loss_working_bytes_per_logit;
    }
    layout.cp_comm = framework.cp_comm;
    layout.cp_merge_bytes_per_element = framework.cp_merge_bytes_per_element;
    layout.cp_dkv_bytes_per_element = framework.cp_dkv_bytes_per_element;
    layout.tp_overlap_serial_chunks = framework.tp_overlap_serial_chunks;
    layout.tp_overlap_by_pattern = framework.tp_overlap_by_pattern;
    layout.tp_gathers_fp8_tensorwise = framework.tp_gathers_fp8_tensorwise;
    layout.tp_backward_comm_async = framework.tp_backward_comm_async;
    layout.fp8_cast_in_norm = framework.fp8_cast_in_norm;
    layout.fused_column_gemms = framework.fused_column_gemms;
    // torchtitan's per-op AC is PyTorch's selective checkpointing policy; Megatron's --recompute-modules are
    // module checkpoints whose outputs stay alive for the ops that consume them.
    layout.selective_checkpoint_policy = c.framework == Framework::Torchtitan;
    layout.policy_caches_attention = framework.op_sac_caches_attention;
    layout.attention_repeats_kv = framework.attention_repeats_kv;
    if (framework.vendor_fused_attention && cluster.device.fused_attention_speedup > 0)
        layout.attention_speedup = cluster.device.fused_attention_speedup;
    layout.sp_saves_gathered_inputs = framework.sp_saves_gathered_inputs;
    layout.tp_group = tpGroup;
    layout.cp_group = cpGroup;
    // Experts spread over consecutive data-parallel ranks (Megatron's tp-cp-ep-dp order).
    // The experts' grid folds etp fastest, then ep (Megatron's expert rank generator): ep ranks sit etp apart.
    layout.ep_group = {c.ep, std::max(1, std::min(c.ep, gpusPerNode / std::max(1, c.expertTp())))};
    layout.etp_group = {c.expertTp(), std::max(1, std::min(c.expertTp(), gpusPerNode))};
    return layout;
}

/**
 * Which of a layer's ops a recompute-by-modules list selects, relative to the layer. Identical layers (one cost
 * class) differ here when the list names particular blocks, e.g. torchtitan's AC of every second block
 * ["model.layers.1", "model.layers.3", ...]. Calibration fix: such layers shared the first block's cached cost,
 * so no block or every block was recomputed.
 */
std::string recomputePattern(const ModelGraph& graph, const Layer& layer, const std::vector<std::string>& modules)
{
    std::string pattern;
    for (const auto id : layer.ops) {
        const std::string matched = matchedModule(graph.op(id).module, modules);
        if (matched.empty())
            pattern += '-';
        else if (startsWith(matched, layer.name))
            pattern += '+' + matched.substr(layer.name.size()); // inside this layer: layer-specific
        else
            pattern += '^' + matched; // an ancestor of every layer (or ROOT): the same for all of them
        pattern += ';';
    }
    return pattern;
}

/** `c` recomputing every block (full) or none, in place of its list of block indices. */
ParallelConfig wholeBlocks(ParallelConfig c, bool recomputed)
{
    c.recompute = recomputed ? RecomputeKind::Full : RecomputeKind::None;
    c.recompute_modules.clear();
    return c;
}

/** `c` with every block's linears in FP8 (fp8 true) or in the model's dtype (false): the two layouts a config with
    BF16 first and last blocks mixes. */
ParallelConfig uniformPrecision(ParallelConfig c, bool fp8)
{
    c.fp8_linears = fp8;
    c.fp8_bf16_first_layers = 0;
    c.fp8_bf16_last_layers = 0;
    return c;
}

} // namespace

bool CostModel::keepsModelDtype(std::size_t layer, const ParallelConfig& c) const
{
    if (!c.hasFp8Bf16Layers() || layer >= m_blockOrdinal.size() || m_blockOrdinal[layer] < 0)
        return false;
    const int ordinal = m_blockOrdinal[layer];
    return ordinal < c.fp8_bf16_first_layers || ordinal >= m_blockCount - c.fp8_bf16_last_layers;
}

LayerLayout CostModel::layerLayout(const ParallelConfig& c) const
{
    LayerLayout layout = layoutOf(c, frameworkOf(c), groupShape(c, "tp"), groupShape(c, "cp"), m_cluster);
    layout.overlap_hidden_fraction = m_params.zero3_prefetch_overlap;
    return layout;
}

const LayerCost& CostModel::layerCost(std::size_t layer, const ParallelConfig& c) const
{
    if (c.hasFp8Bf16Layers())
        return layerCost(layer, uniformPrecision(c, !keepsModelDtype(layer, c)));
    if (recomputesBlockIndices(c) && !m_blockIndex.empty()) {
        const std::vector<long long> listed = recomputedBlocks(c);
        return layerCost(layer, wholeBlocks(c, std::binary_search(listed.begin(), listed.end(), m_blockIndex[layer])));
    }
    const LayerLayout layout = layerLayout(c);
    const std::size_t representative = m_classRepresentative[static_cast<std::size_t>(m_classOf[layer])];
    std::size_t subject = representative;
    std::string pattern;
    if (c.recompute == RecomputeKind::Modules) {
        pattern = recomputePattern(*m_graph, m_layers[layer], c.recompute_modules);
        if (layer != representative
            && pattern != recomputePattern(*m_graph, m_layers[representative], c.recompute_modules))
            subject = layer;
    }
    std::string key
        = cat(m_signature[layer], '|', c.tp, ',', c.cp, ',', c.ep, ',', c.expertTp(), ',', c.sequence_parallel,
              c.tp_comm_overlap, c.fp8_linears, static_cast<int>(c.fp8_recipe), c.eager_kernels, c.moe_a2a_overlap,
              c.moe_shared_expert_overlap, ',', c.moe_capacity_factor, ',', c.moe_router_imbalance, ',', c.micro_batch,
              ',', static_cast<int>(c.recompute), ',', join(c.recompute_modules, "+"), ',', layout.tp_group.per_node,
              ',', layout.cp_group.per_node, ',', layout.ep_group.per_node, ',', layout.loss_saved_bytes_per_logit, ',',
              layout.loss_working_bytes_per_logit, ',', layout.selective_checkpoint_policy,
              layout.policy_caches_attention, layout.tp_overlap_by_pattern, layout.tp_gathers_fp8_tensorwise, ',',
              // Every layout term a framework sets (CP exchange, TP-overlap chunking, loss bytes) follows from it.
              static_cast<int>(c.framework), '|', pattern);
    std::lock_guard lock(m_cacheMutex);
    auto& slot = m_cache[key];
    if (!slot)
        slot
            = std::make_unique<LayerCost>(computeLayerCost(*m_graph, m_producer, m_layers[subject], layout, *m_source));
    return *slot;
}

std::vector<const LayerCost*> CostModel::layerCosts(const ParallelConfig& c) const
{
    if (c.hasFp8Bf16Layers()) {
        // Megatron's BF16 first and last blocks (fp8_utils.py is_first_last_bf16_layer) run outside the FP8
        // autocast: each block costs as in an all-FP8 or an all-BF16 model, sharing those cache entries.
        std::vector<const LayerCost*> out = layerCosts(uniformPrecision(c, true));
        const std::vector<const LayerCost*> wide = layerCosts(uniformPrecision(c, false));
        for (std::size_t l = 0; l < out.size(); ++l)
            if (keepsModelDtype(l, c))
                out[l] = wide[l];
        return out;
    }
    if (recomputesBlockIndices(c) && !m_blockIndex.empty()) {
        // Whole blocks by index (Megatron's block method): each layer costs as under full recomputation when its
        // index is listed, as without otherwise (what matchedModule gives when no other path component is a
        // number), so the two lists share those configurations' cache entries instead of one per index list.
        const std::vector<long long> listed = recomputedBlocks(c);
        const std::vector<const LayerCost*> full = layerCosts(wholeBlocks(c, true));
        std::vector<const LayerCost*> out = layerCosts(wholeBlocks(c, false));
        for (std::size_t l = 0; l < out.size(); ++l)
            if (std::binary_search(listed.begin(), listed.end(), m_blockIndex[l]))
                out[l] = full[l];
        return out;
    }
    if (c.recompute == RecomputeKind::Modules) {
        // The list may select modules of particular layers: look every layer up (layerCost shares what it can).
        std::vector<const LayerCost*> out(m_layers.size());
        for (std::size_t l = 0; l < out.size(); ++l)
            out[l] = &layerCost(l, c);
        return out;
    }
    std::vector<const LayerCost*> byClass(m_classRepresentative.size());
    for (std::size_t k = 0; k < byClass.size(); ++k)
        byClass[k] = &layerCost(m_classRepresentative[k], c);
    std::vector<const LayerCost*> out(m_layers.size());
    for (std::size_t l = 0; l < out.size(); ++l)
        out[l] = byClass[static_cast<std::size_t>(m_classOf[l])];
    return out;
}

} // namespace shardscape
