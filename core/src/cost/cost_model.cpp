// SPDX-License-Identifier: MIT
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

std::string_view oomRiskName(OomRisk risk)
{
    switch (risk) {
    case OomRisk::Fits:
        return "fits";
    case OomRisk::Tight:
        return "tight";
    case OomRisk::Likely:
        break;
    }
    return "likely";
}

double Evaluation::peakMemory() const
{
    double peak = 0;
    for (const auto& s : stages)
        peak = std::max(peak, s.memory.total());
    return peak;
}

std::vector<int> Evaluation::chunkLayers() const
{
    const int pp = static_cast<int>(stages.size());
    const int vpp = pp > 0 ? static_cast<int>(stages.front().chunks.size()) : 0;
    std::vector<int> counts(pp > 0 ? static_cast<std::size_t>(layerChunks(config.schedule, pp, vpp)) : 0, 0);
    for (int r = 0; r < pp; ++r)
        for (int k = 0; k < static_cast<int>(stages[static_cast<std::size_t>(r)].chunks.size()); ++k) {
            const auto [first, last] = stages[static_cast<std::size_t>(r)].chunks[static_cast<std::size_t>(k)];
            const auto chunk
                = static_cast<std::size_t>(layerChunkOf(config.schedule, pp, chunkStage(config.schedule, pp, r, k)));
            if (chunk < counts.size())
                counts[chunk] = last - first + 1;
        }
    return counts;
}

namespace {

/** Identical layers (every decoder block of a transformer) get the same signature, so they share costs. */
std::size_t layerSignature(const ModelGraph& graph, const Layer& layer)
{
    std::ostringstream text;
    text.precision(17);
    text << static_cast<int>(layer.kind) << '|';
    for (const auto id : layer.ops) {
        const Op& op = graph.op(id);
        const std::string relative
            = startsWith(op.module, layer.name) ? op.module.substr(layer.name.size()) : op.module;
        text << relative << ':' << static_cast<int>(op.kind) << ':' << static_cast<int>(op.tp_role) << ':'
             << op.flops_fwd << ':' << op.flops_bwd_input << ':' << op.flops_bwd_weight << ':' << op.bytes_read << ':'
             << op.bytes_written << ':' << op.inputs.size() << op.outputs.size() << op.saved.size() << ';';
        for (const auto t : op.saved)
            text << graph.tensor(t).bytes() << graph.tensor(t).tp_sharded << ',';
        for (const auto t : op.outputs)
            text << graph.tensor(t).bytes() << ',';
    }
    return std::hash<std::string> {}(text.str());
}

/**
 * ZeRO-3 / FSDP communication on a chunk's critical path, per micro-batch: {forward, backward} seconds.
 * Every layer is gathered by its own collective (FSDP wraps each block; DeepSpeed fetches each module's
 * parameters), so each pays the collective's latency, which grows with the ring across thousands of ranks.
 * - Forward: layer i's gather is issued while layer i-1 computes (the first layer's has nothing to hide under).
 * - Backward: the block is gathered again (reshard_after_forward; DeepSpeed releases after use, and gathers a
 *   third time for a recomputed forward), and its gradients are reduce-scattered every micro-batch, under the
 *   backward of the neighbouring layer; the chunk's last reduce-scatter has nothing after it.
 * Only `zero3_prefetch_overlap` of a collective hides (its kernels share the SMs and HBM), and only the part of a
 * gather the framework issues ahead: FSDP the whole next block, DeepSpeed its prefetch bucket
 * (stage3_prefetch_bucket_size), so a block larger than the bucket waits for the rest of its gather.
 */
std::pair<double, double> shardedDpExposedTime(const ParallelConfig& c, const FrameworkProfile& framework,
                                               const CostParams& params, const CostSource& source, int first,
                                               const std::vector<double>& layerDense,
                                               const std::vector<const LayerCost*>& costs, const GroupShape& group,
                                               DType dtype)
{
    const double overlap = params.zero3_prefetch_overlap;
    const double weightBytes = dtypeBytes(dtype);
    const double gradBytes = gradientBytes(framework, params, c, dtype);
    const bool regather = framework.zero3_regather_for_recompute && c.recompute != RecomputeKind::None;
    double forward = 0, backward = 0;
    const std::size_t n = layerDense.size();
    for (std::size_t i = 0; i < n; ++i) {
        const double elements = layerDense[i];
        if (elements <= 0)
            continue;
        const LayerCost& lc = *costs[static_cast<std::size_t>(first) + i];
        const double ahead
            = framework.zero3_prefetch_elements > 0 ? std::min(1.0, framework.zero3_prefetch_elements / elements) : 1.0;
        const double gather = source.collectiveTime(Collective::AllGather, elements * weightBytes, group)
            + framework.sharded_dp_overhead_s;
        const double scatter = source.collectiveTime(Collective::ReduceScatter, elements * gradBytes, group)
            + framework.sharded_dp_overhead_s;
        const double before = i > 0 ? costs[static_cast<std::size_t>(first) + i - 1]->forward : 0.0;
        forward += gather - std::min(overlap * ahead * gather, before);
        const double gathers = (regather ? 2 : 1) * gather;
        const double under = lc.backward_input + lc.backward_weight;
        const double scatterUnder = i > 0 ? costs[static_cast<std::size_t>(first) + i - 1]->backward_input
                + costs[static_cast<std::size_t>(first) + i - 1]->backward_weight
                                          : 0.0;
        backward += gathers - std::min(overlap * ahead * gathers, under);
        backward += scatter - std::min(overlap * scatter, scatterUnder);
    }
    return {forward, backward};
}

double adamStepBytesPerParam()
{
    // Reads fp32 master, m, v and the 16-bit gradient; writes master, m, v and the 16-bit weight.
    return 4 + 4 + 4 + 2 + 4 + 4 + 4 + 2;
}

} // namespace

CostModel::CostModel(std::shared_ptr<const ModelGraph> graph, Cluster cluster, CostParams params,
                     std::shared_ptr<const CostSource> source, std::vector<Layer> layers)
    : m_graph(std::move(graph))
    , m_cluster(std::move(cluster))
    , m_params(params)
    , m_source(source ? std::move(source) : makeDatasheetCostSource(m_cluster, params))
{
    m_layers = layers.empty() ? layersByModule(*m_graph) : std::move(layers);
    m_producer = m_graph->producers();
    double flops = 0;
    for (std::size_t l = 0; l < m_layers.size(); ++l) {
        const auto& layer = m_layers[l];
        m_signature.push_back(layerSignature(*m_graph, layer));
        const auto known = std::find(m_signature.begin(), m_signature.end() - 1, m_signature.back());
        if (known != m_signature.end() - 1) {
            m_classOf.push_back(m_classOf[static_cast<std::size_t>(known - m_signature.begin())]);
        } else {
            m_classOf.push_back(static_cast<int>(m_classRepresentative.size()));
            m_classRepresentative.push_back(l);
        }
        flops += layer.flops_fwd + layer.flops_bwd;
    }
    m_flopsPerToken = flops / m_graph->tokens();

    // Which layers use each parameter: one that several use (a tied embedding) is kept aside per layer.
    std::unordered_map<TensorId, int> users;
    for (const auto& layer : m_layers) {
        std::unordered_set<TensorId> mine;
        for (const auto id : layer.ops)
            for (const auto t : m_graph->op(id).params)
                if (mine.insert(t).second)
                    ++users[t];
    }
    m_paramParts.resize(m_layers.size());
    for (std::size_t l = 0; l < m_layers.size(); ++l) {
        std::unordered_set<TensorId> seen;
        for (const auto id : m_layers[l].ops) {
            const Op& op = m_graph->op(id);
            for (const auto t : op.params) {
                if (!seen.insert(t).second)
                    continue;
                if (users[t] > 1) {
                    m_paramParts[l].shared.push_back(t);
                    continue;
                }
                const Tensor& tensor = m_graph->tensor(t);
                const double elements = static_cast<double>(tensor.elements());
                const bool expert = op.kind == OpKind::MoeExperts;
                (expert ? (tensor.tp_sharded ? m_paramParts[l].expert_split : m_paramParts[l].expert_whole)
                        : (tensor.tp_sharded ? m_paramParts[l].dense_split : m_paramParts[l].dense_whole))
                    += elements;
            }
        }
    }
}

LayerParams CostModel::spanParams(int first, int last, const ParallelConfig& c) const
{
    LayerParams p;
    const double ep = std::max(1, c.ep);
    std::vector<TensorId> shared;
    for (int l = first; l <= last; ++l) {
        const LayerParamParts& parts = m_paramParts[static_cast<std::size_t>(l)];
        p.dense += parts.dense_split / c.tp + parts.dense_whole;
        p.expert += (parts.expert_split / c.expertTp() + parts.expert_whole) / ep;
        shared.insert(shared.end(), parts.shared.begin(), parts.shared.end());
    }
    if (!shared.empty()) {
        // Tied weights: what paramsPerDevice does for the few tensors several layers use.
        std::vector<const Layer*> members;
        for (int l = first; l <= last; ++l)
            if (!m_paramParts[static_cast<std::size_t>(l)].shared.empty())
                members.push_back(&m_layers[static_cast<std::size_t>(l)]);
        std::sort(shared.begin(), shared.end());
        shared.erase(std::unique(shared.begin(), shared.end()), shared.end());
        for (const auto t : shared) {
            const Tensor& tensor = m_graph->tensor(t);
            // The op kind decides dense or expert: find one op of the span that reads it.
            bool expert = false;
            for (const Layer* layer : members)
                for (const auto id : layer->ops)
                    for (const auto q : m_graph->op(id).params)
                        if (q == t && m_graph->op(id).kind == OpKind::MoeExperts)
                            expert = true;
            const double elements = static_cast<double>(tensor.elements());
            if (expert)
                p.expert += elements / (tensor.tp_sharded ? c.expertTp() : 1) / ep;
            else
                p.dense += elements / (tensor.tp_sharded ? c.tp : 1);
        }
    }
    return p;
}

GroupShape CostModel::groupShape(const ParallelConfig& config, std::string_view dims) const
{
    // Ranks are numbered with the first dimension of rank_order varying fastest; a node holds gpus_per_node
    // consecutive ranks. A group's members in one node: per dimension, how many of its coordinates fit.
    const int gpn = m_cluster.gpus_per_node;
    const auto sizeOf = [&](std::string_view d) {
        if (d == "tp")
            return config.tp;
        if (d == "cp")
            return config.cp;
        if (d == "dp")
            return config.dp;
        if (d == "pp")
            return config.pp;
        return 1;
    };
    std::vector<std::string> order;
    std::stringstream in(config.rank_order);
    for (std::string d; std::getline(in, d, '-');)
        order.push_back(d);
    GroupShape shape;
    shape.size = 1;
    shape.per_node = 1;
    long stride = 1;
    for (const auto& d : order) {
        const int n = sizeOf(d);
        if (dims.find(d) != std::string_view::npos) {
            shape.size *= n;
            const long fits = stride >= gpn ? 1 : std::clamp<long>(gpn / stride, 1, n);
            shape.per_node *= static_cast<int>(fits);
        }
        stride *= n;
    }
    return shape;
}

const FrameworkProfile& CostModel::frameworkOf(const ParallelConfig& c) const
{
    return m_frameworkOverride ? *m_frameworkOverride : frameworkProfile(c.framework);
}

double CostModel::runtimeBytes(const ParallelConfig& c) const
{
    return shardscape::runtimeBytes(frameworkOf(c), m_params, c);
}

double CostModel::fragmentationFactor(const ParallelConfig& c) const
{
    return std::max(1.0, frameworkOf(c).fragmentation);
}

std::vector<int> CostModel::defaultStageLayers(int chunks) const
{
    const int total = static_cast<int>(m_layers.size());
    int blocks = 0;
    for (const auto& layer : m_layers)
        blocks += layer.kind == LayerKind::Block ? 1 : 0;
    const int leading = m_layers.front().kind == LayerKind::Embedding ? 1 : 0;
    const int trailing = m_layers.back().kind == LayerKind::Head ? 1 : 0;
    if (blocks < chunks || blocks + leading + trailing != total) {
        // Not a plain embedding-blocks-head stack: split the layer list as evenly as possible.
        std::vector<int> counts(static_cast<std::size_t>(chunks), total / chunks);
        for (int i = 0; i < total % chunks; ++i)
            ++counts[static_cast<std::size_t>(i)];
        return counts;
    }
    // Megatron's default: blocks evenly over chunks, the embedding on the first and the head on the last.
    std::vector<int> counts(static_cast<std::size_t>(chunks), blocks / chunks);
    for (int i = 0; i < blocks % chunks; ++i)
        ++counts[static_cast<std::size_t>(chunks - 1 - (i + 1) % chunks)]; // spare blocks away from the ends first
    counts.front() += leading;
    counts.back() += trailing;
    return counts;
}

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
    return frameworkRestriction(frameworkOf(c), c);
}

namespace {

LayerLayout layoutOf(const ParallelConfig& c, const FrameworkProfile& framework, GroupShape tpGroup, GroupShape cpGroup,
                     int gpusPerNode)
{
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
    layout.loss_saved_bytes_per_logit = framework.loss_saved_bytes_per_logit;
    layout.loss_working_bytes_per_logit = framework.loss_working_bytes_per_logit;
    layout.cp_comm = framework.cp_comm;
    layout.cp_merge_bytes_per_element = framework.cp_merge_bytes_per_element;
    layout.cp_dkv_bytes_per_element = framework.cp_dkv_bytes_per_element;
    layout.tp_overlap_serial_chunks = framework.tp_overlap_serial_chunks;
    layout.tp_backward_comm_async = framework.tp_backward_comm_async;
    // torchtitan's per-op AC is PyTorch's selective checkpointing policy; Megatron's --recompute-modules are
    // module checkpoints whose outputs stay alive for the ops that consume them.
    layout.selective_checkpoint_policy = c.framework == Framework::Torchtitan;
    layout.attention_repeats_kv = framework.attention_repeats_kv;
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

} // namespace

const LayerCost& CostModel::layerCost(std::size_t layer, const ParallelConfig& c) const
{
    LayerLayout layout = layoutOf(c, frameworkOf(c), groupShape(c, "tp"), groupShape(c, "cp"), m_cluster.gpus_per_node);
    layout.overlap_hidden_fraction = m_params.zero3_prefetch_overlap;
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
              layout.loss_working_bytes_per_logit, ',', layout.selective_checkpoint_policy, ',',
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

struct CostModel::Assembly
{
    struct Chunk
    {
        int first = 0, last = 0;
        LayerParams params;
        double largest = 0;
        double recomputeModelFlops = 0;
        double tpComm = 0, otherComm = 0, otherCommForward = 0, recompute = 0;
        double weights = 0, gradients = 0, optimizer = 0;
        double working = 0; ///< the largest layer working set (recompute, loss) of the chunk
        double largestLayerParams = 0; ///< dense elements of the chunk's largest layer (ZeRO-3 unsharded buffers)
        std::pair<double, double> shardedDpExposed; ///< ZeRO-3 comm not hidden per micro-batch: forward, backward
    };
    PipelineSpec spec;
    std::vector<Chunk> chunks;
    std::vector<double> optimizerStep; ///< per pipeline rank
};

std::unique_ptr<CostModel::Assembly> CostModel::assemble(const ParallelConfig& c) const
{
    auto a = std::make_unique<Assembly>();
    // Virtual stages (what the simulator runs) and the model stages their layers come from: the same list, except
    // under DualPipe, whose two directions run the same pp model stages.
    const int chunks = c.pp * c.vpp;
    const int modelChunks = layerChunks(c.schedule, c.pp, c.vpp);
    const auto costs = layerCosts(c);
    std::vector<int> counts = c.stage_layers;
    if (counts.empty() && isVShaped(c.schedule) && c.pp > 1) {
        // A V puts both ends of the model (embedding, head) on rank 0: split by time so that no rank is the busiest
        // by them (torchtitan leaves that to pipeline_parallel_first/last_stage_less_layers).
        std::vector<double> time;
        time.reserve(costs.size());
        for (const auto& lc : costs)
            time.push_back(lc->forward + lc->backward_input + lc->backward_weight);
        counts = vShapedStageSplit(time, isBidirectional(c.schedule) ? c.pp / 2 : c.pp);
    }
    if (counts.empty())
        counts = defaultStageLayers(modelChunks);
    std::vector<int> firstLayer(static_cast<std::size_t>(modelChunks) + 1, 0);
    for (int k = 0; k < modelChunks; ++k)
        firstLayer[static_cast<std::size_t>(k) + 1]
            = firstLayer[static_cast<std::size_t>(k)] + counts[static_cast<std::size_t>(k)];
    const double weightBytes = dtypeBytes(m_graph->dtype);
    const int dpGroup = c.dp * c.cp;
    const double denseShard = static_cast<double>(dpGroup) / c.zero_ngroups;
    const double expertShard = std::max(1.0, static_cast<double>(c.expertDp()) / c.zero_ngroups);
    const bool ppInterNode = groupShape(c, "pp").nodes() > 1;
    // DualPipe keeps every model stage on two ranks, one per direction, and sums the pair's gradients
    // (example_dualpipe.py adds the partner's grads): each stage's gradients sync over twice the replicas, the
    // partner sitting on another node when the pipeline spans nodes. The shards stay per direction.
    const auto replicated = [&](GroupShape g) {
        return isBidirectional(c.schedule) ? GroupShape {2 * g.size, ppInterNode ? g.per_node : 2 * g.per_node} : g;
    };
    const GroupShape dpShape = groupShape(c, "cp-dp");
    const GroupShape denseSync = replicated(dpShape);
    // Expert replicas sit ep x etp ranks apart (Megatron's expert rank order: etp fastest, then ep, then expert dp).
    const GroupShape expertSync = replicated(
        {c.expertDp(), std::max(1, std::min(c.expertDp(), m_cluster.gpus_per_node / (c.ep * c.expertTp())))});
    // ZeRO's weight shards live in one direction's data-parallel group; its gradient reductions span both.
    const GroupShape denseZero {std::max(1, dpGroup / c.zero_ngroups), std::max(1, dpShape.per_node / c.zero_ngroups)};
    const GroupShape denseZeroGrads = replicated(denseZero);
    const auto sharded = [&](double dense, double expert, bool shard) {
        return shard ? dense / denseShard + expert / expertShard : dense + expert;
    };
    const FrameworkProfile& framework = frameworkOf(c);
    // Gradients travel in the dtype they accumulate in: fp32 in Megatron and FSDP (reduce_dtype), bf16 in DeepSpeed.
    const double gradCommBytes = gradientBytes(framework, m_params, c, m_graph->dtype);

    PipelineSpec& spec = a->spec;
    spec.schedule = c.pp == 1 ? ScheduleKind::OneFOneB : c.schedule;
    spec.pp = c.pp;
    spec.vpp = c.vpp;
    spec.num_microbatches = c.num_microbatches;
    spec.blocking_p2p = framework.pipeline_p2p_blocks_compute
        && !(c.schedule == ScheduleKind::Interleaved1F1B && framework.interleaved_p2p_overlaps);
    spec.stages.resize(static_cast<std::size_t>(chunks));
    a->chunks.resize(static_cast<std::size_t>(chunks));
    a->optimizerStep.assign(static_cast<std::size_t>(c.pp), 0.0);

    for (int k = 0; k < chunks; ++k) {
        auto& chunk = a->chunks[static_cast<std::size_t>(k)];
        auto& stage = spec.stages[static_cast<std::size_t>(k)];
        const auto layerChunk = static_cast<std::size_t>(layerChunkOf(c.schedule, c.pp, k));
        chunk.first = firstLayer[layerChunk];
        chunk.last = firstLayer[layerChunk + 1] - 1;
        for (int l = chunk.first; l <= chunk.last; ++l) {
            const LayerCost& lc = *costs[static_cast<std::size_t>(l)];
            stage.forward += lc.forward;
            stage.backward_input += lc.backward_input;
            stage.backward_weight += lc.backward_weight;
            stage.activation_bytes += lc.activation_bytes;
            chunk.largest = std::max(chunk.largest, lc.largest_activation_bytes);
            chunk.recomputeModelFlops += lc.recompute_model_flops;
            chunk.tpComm += lc.tp_comm;
            chunk.otherComm += lc.other_comm;
            chunk.otherCommForward += lc.other_comm_forward;
            chunk.recompute += lc.recompute;
            chunk.working = std::max(chunk.working, lc.working_bytes);
        }
        stage.send_forward = !endsChain(c.schedule, c.pp, c.vpp, k)
            ? m_source->p2pTime(costs[static_cast<std::size_t>(chunk.last)]->output_bytes, ppInterNode)
            : 0;
        // The input gradient going back has the size of the previous chunk's output.
        stage.send_backward = !startsChain(c.schedule, c.pp, k)
            ? m_source->p2pTime(
                costs[static_cast<std::size_t>(a->chunks[static_cast<std::size_t>(k - 1)].last)]->output_bytes,
                ppInterNode)
            : 0;
        stage.exposed_comm_forward = std::min(stage.forward, chunk.otherCommForward);
        stage.exposed_comm_backward
            = std::min(stage.backward_input, std::max(0.0, chunk.otherComm - chunk.otherCommForward));

        chunk.params = spanParams(chunk.first, chunk.last, c);
        const double dense = chunk.params.dense;
        const double expert = chunk.params.expert;
        const ParameterMemory resident
            = parameterMemory(framework, m_params, c, chunk.params, m_graph->dtype, {denseShard, expertShard});
        chunk.weights = resident.weights;
        chunk.gradients = resident.gradients;
        chunk.optimizer = resident.optimizer;
        // Per layer of the chunk, only where sharded data parallelism needs it (this runs for every candidate):
        // ZeRO-3 gathers and reduce-scatters one layer at a time, and FSDP holds the largest layer unsharded.
        std::vector<double> layerDense;
        if (c.zero_stage >= 2) {
            layerDense.reserve(static_cast<std::size_t>(chunk.last - chunk.first + 1));
            for (int l = chunk.first; l <= chunk.last; ++l) {
                layerDense.push_back(spanParams(l, l, c).dense);
                chunk.largestLayerParams = std::max(chunk.largestLayerParams, layerDense.back());
            }
        }
        stage.static_bytes = chunk.weights + chunk.gradients + chunk.optimizer;

        // Data-parallel gradient sync (ZeRO 1/2: reduce-scatter + all-gather, the same volume as an all-reduce).
        const double expertSyncTime
            = m_source->collectiveTime(Collective::AllReduce, expert * gradCommBytes, expertSync);
        const auto exposed = [&](double comm, double compute) {
            return std::max(comm * (1 - m_params.zero3_prefetch_overlap), comm - compute);
        };
        // The once-a-step gather of updated weight shards (ZeRO 1/2). With overlap_param_gather it runs bucket by
        // bucket under the next step's first forward, hiding as much of it as the gradient sync hides under the
        // last backward (dp_overlap).
        const auto paramGather = [&](double gather, double forward) {
            return c.overlap_param_gather ? gather - std::min(gather, m_params.dp_overlap * forward) : gather;
        };
        if (c.zero_stage >= 2) {
            // Sharded gradients cannot accumulate locally: ZeRO-2/3 reduce-scatter them every micro-batch, and
            // ZeRO-3 also gathers the weights for every forward and backward. Prefetching and bucketing hide most
            // of it under compute.
            const double scatter
                = m_source->collectiveTime(Collective::ReduceScatter, dense * gradCommBytes, denseZeroGrads);
            const double gather = m_source->collectiveTime(Collective::AllGather, dense * weightBytes, denseZero);
            if (c.zero_stage >= 3) {
                chunk.shardedDpExposed = shardedDpExposedTime(c, framework, m_params, *m_source, chunk.first,
                                                              layerDense, costs, denseZero, m_graph->dtype);
                stage.forward += chunk.shardedDpExposed.first;
                stage.backward_input += chunk.shardedDpExposed.second;
                stage.grad_sync = expertSyncTime;
            } else {
                stage.backward_input += exposed(scatter, stage.backward_input + stage.backward_weight);
                // The updated weight shards are all-gathered once per step.
                stage.grad_sync = paramGather(gather, stage.forward) + expertSyncTime;
            }
        } else if (c.zero_stage == 1) {
            // ZeRO-1 (Megatron's distributed optimizer): reduce-scatter the gradients, update the local shard, then
            // all-gather the updated 16-bit weights. Calibration fix: this was costed as an all-reduce of
            // gradients, which moves grad_bytes (fp32 in Megatron, DeepSpeed bf16) instead of the weights' 2 bytes in
            // the gather half.
            stage.grad_sync = m_source->collectiveTime(Collective::ReduceScatter, dense * gradCommBytes, denseZeroGrads)
                + paramGather(m_source->collectiveTime(Collective::AllGather, dense * weightBytes, denseZero),
                              stage.forward)
                + expertSyncTime;
        } else {
            stage.grad_sync
                = m_source->collectiveTime(Collective::AllReduce, dense * gradCommBytes, denseSync) + expertSyncTime;
        }
        stage.grad_sync_overlap = framework.grad_sync_overlaps_backward
            ? m_params.dp_overlap * (stage.backward_input + stage.backward_weight)
            : 0;

        // The optimizer step streams the rank's (sharded) states once.
        a->optimizerStep[static_cast<std::size_t>(stageRank(c.schedule, c.pp, k))]
            += sharded(dense, expert, c.zero_stage >= 1) * adamStepBytesPerParam();
    }
    // Under a V the embedding (stage 0) and the head (stage 2pp - 1) share rank 0: their gradients add locally.
    if (c.pp > 1 && !isVShaped(c.schedule) && m_graph->transformer && m_graph->transformer->tied_embeddings) {
        // Tied input and output embeddings live on the first and the last pipeline rank; after the flush their two
        // gradients are summed by an all-reduce between those ranks (Megatron finalize_model_grads
        // _allreduce_word_embedding_grads, DeepSpeed pipe/engine.py _exec_reduce_tied_grads), in the gradient
        // dtype, once the data-parallel sync is done.
        const TransformerShape& t = *m_graph->transformer;
        const double elements = static_cast<double>(t.vocab) * static_cast<double>(t.hidden) / c.tp;
        const GroupShape ends {2, ppInterNode ? 1 : 2};
        const double tied = m_source->collectiveTime(Collective::AllReduce, elements * gradCommBytes, ends);
        spec.stages.front().grad_sync += tied;
        spec.stages.back().grad_sync += tied;
    }
    for (double& bytes : a->optimizerStep)
        bytes = m_source->memoryTime(bytes);
    spec.optimizer_step = *std::max_element(a->optimizerStep.begin(), a->optimizerStep.end());
    return a;
}

void CostModel::finish(Evaluation& e, const Assembly& a, const std::vector<double>& peakStash,
                       const std::vector<int>& inflight, double stepTime, double pipelineTime,
                       const std::vector<double>& busy) const
{
    const ParallelConfig& c = e.config;
    e.step_time = stepTime;

    // Per pipeline rank: memory at its peak and its share of the layers.
    e.stages.assign(static_cast<std::size_t>(c.pp), StageReport {});
    for (int r = 0; r < c.pp; ++r) {
        StageReport& report = e.stages[static_cast<std::size_t>(r)];
        report.devices = c.tp * c.cp * c.dp;
        report.first_layer = a.chunks[static_cast<std::size_t>(r)].first;
        double largest = 0;
        double working = 0;
        double largestLayerParams = 0;
        for (int ch = 0; ch < c.vpp; ++ch) {
            const int k = chunkStage(c.schedule, c.pp, r, ch);
            const auto& chunk = a.chunks[static_cast<std::size_t>(k)];
            const auto& stage = a.spec.stages[static_cast<std::size_t>(k)];
            report.chunks.emplace_back(chunk.first, chunk.last);
            report.last_layer = chunk.last;
            report.compute += stage.forward + stage.backward_input + stage.backward_weight;
            report.memory.weights += chunk.weights;
            report.memory.gradients += chunk.gradients;
            report.memory.optimizer += chunk.optimizer;
            largest = std::max(largest, chunk.largest);
            working = std::max(working, chunk.working);
            largestLayerParams = std::max(largestLayerParams, chunk.largestLayerParams);
        }
        // Per micro-batch of the step: under DualPipe each micro-batch passes one of the rank's two stages.
        report.compute *= static_cast<double>(chainMicrobatches(c.schedule, c.num_microbatches)) / c.num_microbatches;
        const FrameworkProfile& framework = frameworkOf(c);
        report.memory.activations = std::max(0.0, peakStash[static_cast<std::size_t>(r)]);
        report.memory.transient = m_params.transient_mem_coef * largest + working
            + shardedDpWorkingBytes(framework, c, largestLayerParams, dtypeBytes(m_graph->dtype))
            + fixedBufferBytes(framework, c);
        // A negative calibration never takes the peak below what the model itself holds.
        report.memory.calibrated = std::max(m_params.calibrated_memory_bytes, -report.memory.allocated());
        addReserve(report.memory, framework, m_params, c);
        report.peak_inflight = inflight[static_cast<std::size_t>(r)];
    }

    // Throughput and utilisation.
    const double tokens = static_cast<double>(c.globalBatch()) * static_cast<double>(m_graph->seq_len);
    const double world = c.worldSize();
    const double modelFlops = m_flopsPerToken * tokens;
    double recomputeFlops = 0;
    for (const auto& chunk : a.chunks)
        recomputeFlops += chunk.recomputeModelFlops;
    // per micro-batch of one replica; under DualPipe each virtual stage sees half of them
    recomputeFlops *= static_cast<double>(chainMicrobatches(c.schedule, c.num_microbatches)) * c.dp;
    const double peak = m_cluster.device.peak(m_graph->dtype);
    e.tokens_per_s = tokens / e.step_time;
    e.tflops_per_gpu = modelFlops / e.step_time / world / units::kTera;
    e.mfu = modelFlops / (e.step_time * world * peak);
    e.hfu = (modelFlops + recomputeFlops) / (e.step_time * world * peak);

    // Where the time of the busiest rank goes.
    const auto busiest = static_cast<int>(std::max_element(busy.begin(), busy.end()) - busy.begin());
    double tpComm = 0, otherComm = 0, recompute = 0, shardedDp = 0;
    for (int ch = 0; ch < c.vpp; ++ch) {
        const int k = chunkStage(c.schedule, c.pp, busiest, ch);
        shardedDp += a.chunks[static_cast<std::size_t>(k)].shardedDpExposed.first
            + a.chunks[static_cast<std::size_t>(k)].shardedDpExposed.second;
        tpComm += a.chunks[static_cast<std::size_t>(k)].tpComm;
        otherComm += a.chunks[static_cast<std::size_t>(k)].otherComm;
        recompute += a.chunks[static_cast<std::size_t>(k)].recompute;
    }
    const double m = chainMicrobatches(c.schedule, c.num_microbatches); // through each of the rank's chunks
    e.time.tp_comm = tpComm * m;
    e.time.other_comm = otherComm * m;
    e.time.recompute = recompute * m;
    e.time.sharded_dp = shardedDp * m;
    e.time.compute = busy[static_cast<std::size_t>(busiest)] - e.time.tp_comm - e.time.other_comm - e.time.recompute
        - e.time.sharded_dp;
    e.time.pp_bubble = std::max(0.0, pipelineTime - busy[static_cast<std::size_t>(busiest)]);
    e.bubble_ratio = e.step_time > 0 ? e.time.pp_bubble / e.step_time : 0;
    e.time.optimizer = a.spec.optimizer_step;
    e.time.dp_exposed = std::max(0.0, stepTime - pipelineTime - a.spec.optimizer_step);

    // Feasible only when every stage fits; the reason names the worst stage.
    e.feasible = true;
    std::size_t worst = 0;
    for (std::size_t r = 1; r < e.stages.size(); ++r)
        if (e.stages[r].memory.total() > e.stages[worst].memory.total())
            worst = r;
    const auto& mem = e.stages[worst].memory;
    if (mem.total() > e.memory_limit_bytes) {
        e.feasible = false;
        e.reason = cat("pipeline stage ", worst, " needs ", memoryText(mem.total()), " per GPU, over the ",
                       memoryText(e.memory_limit_bytes), " limit (weights ", memoryText(mem.weights), ", grads ",
                       memoryText(mem.gradients), ", optimizer ", memoryText(mem.optimizer), ", activations ",
                       memoryText(mem.activations), ", transient ", memoryText(mem.transient), ", reserve ",
                       memoryText(mem.reserve),
                       mem.calibrated != 0 ? cat(", calibration ", memoryText(mem.calibrated)) : std::string(), ")");
    }
}

Evaluation CostModel::evaluate(const ParallelConfig& c, const Workload& w, const EvaluateOptions& options,
                               std::stop_token stop) const
{
    Evaluation e;
    e.config = c;
    e.cost_source = m_source->name();
    e.memory_limit_bytes = w.memory_limit_bytes > 0 ? w.memory_limit_bytes : m_cluster.device.memory_bytes;
    e.reason = structuralProblem(c, w, options.require_full_cluster);
    if (!e.reason.empty())
        return e;
    auto a = assemble(c);
    a->spec.record_events = options.record_timeline;
    auto sim = std::make_shared<SimulationResult>(simulatePipeline(a->spec, stop));
    e.simulation = sim;
    std::vector<double> stash(static_cast<std::size_t>(c.pp), 0.0);
    for (int r = 0; r < c.pp; ++r) {
        double fixedBytes = 0;
        for (int ch = 0; ch < c.vpp; ++ch)
            fixedBytes += a->spec.stages[static_cast<std::size_t>(chunkStage(c.schedule, c.pp, r, ch))].static_bytes;
        stash[static_cast<std::size_t>(r)] = sim->peak_memory[static_cast<std::size_t>(r)] - fixedBytes;
    }
    finish(e, *a, stash, sim->peak_inflight, sim->step_time, sim->pipeline_time, sim->busy);
    applyUncertainty(e, m_graph->seq_len, w.min_memory_headroom_bytes);
    return e;
}

CostModel::LayerProfile CostModel::layerProfile(const ParallelConfig& c) const
{
    LayerProfile profile;
    const auto costs = layerCosts(c);
    const double weightBytes = dtypeBytes(m_graph->dtype);
    const double denseShard = static_cast<double>(c.dp * c.cp) / c.zero_ngroups;
    const double expertShard = std::max(1.0, static_cast<double>(c.expertDp()) / c.zero_ngroups);
    const FrameworkProfile& framework = frameworkOf(c);
    for (std::size_t l = 0; l < m_layers.size(); ++l) {
        const LayerCost& lc = *costs[l];
        const LayerParams p = spanParams(static_cast<int>(l), static_cast<int>(l), c);
        profile.time.push_back(lc.forward + lc.backward_input + lc.backward_weight);
        profile.static_bytes.push_back(
            parameterMemory(framework, m_params, c, p, m_graph->dtype, {denseShard, expertShard}).total());
        profile.stash_bytes.push_back(lc.activation_bytes);
        profile.transient_bytes.push_back(m_params.transient_mem_coef * lc.largest_activation_bytes + lc.working_bytes
                                          + shardedDpWorkingBytes(framework, c, p.dense, weightBytes));
    }
    return profile;
}

Evaluation CostModel::estimate(const ParallelConfig& c, const Workload& w, bool requireFullCluster) const
{
    Evaluation e;
    e.config = c;
    e.cost_source = m_source->name();
    e.memory_limit_bytes = w.memory_limit_bytes > 0 ? w.memory_limit_bytes : m_cluster.device.memory_bytes;
    e.reason = structuralProblem(c, w, requireFullCluster);
    if (!e.reason.empty())
        return e;
    const auto a = assemble(c);
    const auto& stages = a->spec.stages;
    const int p = c.pp;
    const int v = c.vpp;
    const int m = chainMicrobatches(c.schedule, c.num_microbatches); // through each virtual stage
    const ScheduleKind schedule = a->spec.schedule;

    std::vector<double> busy(static_cast<std::size_t>(p), 0.0);
    std::vector<double> stash(static_cast<std::size_t>(p), 0.0);
    std::vector<int> inflight(static_cast<std::size_t>(p), 0);
    double sumChunk = 0, maxChunk = 0, maxZbGap = 0, maxSync = 0, maxF = 0, maxBi = 0, maxW = 0;
    for (int k = 0; k < p * v; ++k) {
        const auto& s = stages[static_cast<std::size_t>(k)];
        const double compute = s.forward + s.backward_input + s.backward_weight;
        const double sends = s.send_forward + s.send_backward;
        busy[static_cast<std::size_t>(stageRank(schedule, p, k))] += compute * m;
        sumChunk += compute + sends;
        // Sends delay every micro-batch's cycle only when the stage waits for them; otherwise they lengthen the
        // pipeline's fill once (sumChunk).
        maxChunk = std::max(maxChunk, compute + (a->spec.blocking_p2p ? sends : 0));
        maxZbGap
            = std::max(maxZbGap, s.forward + s.backward_input - s.backward_weight + s.send_forward + s.send_backward);
        maxSync = std::max(maxSync, s.grad_sync - s.grad_sync_overlap);
        maxF = std::max(maxF, s.forward + s.send_forward);
        maxBi = std::max(maxBi, s.backward_input + s.send_backward);
        maxW = std::max(maxW, s.backward_weight);
    }
    // In flight per rank, by the schedule's warm-up rule (micro-batches, or chunk-micro-batches when interleaved).
    for (int r = 0; r < p; ++r) {
        int count = 0;
        switch (schedule) {
        case ScheduleKind::GPipe:
            count = m;
            break;
        case ScheduleKind::OneFOneB:
            count = std::min(m, p - r);
            break;
        case ScheduleKind::ZeroBubbleH1:
            count = std::min(m, p); // W runs late, so every rank keeps up to p micro-batches
            break;
        case ScheduleKind::Interleaved1F1B:
            count = std::min(m * v, (p - r - 1) * 2 + (v - 1) * p + 1);
            break;
        case ScheduleKind::ZeroBubbleV:
            count = 2 * p; // chunk-micro-batches: 1F1B's p whole micro-batches (Qi et al., ZB-V)
            break;
        case ScheduleKind::DualPipeV:
            count = 2 * p + 1; // PP + 1 chunk-micro-batches (DualPipe README)
            break;
        case ScheduleKind::DualPipe:
            count = p + 1; // PP + 1 stage-micro-batches over both directions (DualPipe README)
            break;
        }
        inflight[static_cast<std::size_t>(r)] = count;
        double perMicrobatch = 0;
        for (int ch = 0; ch < v; ++ch)
            perMicrobatch += stages[static_cast<std::size_t>(chunkStage(schedule, p, r, ch))].activation_bytes;
        stash[static_cast<std::size_t>(r)] = schedule == ScheduleKind::Interleaved1F1B || isVShaped(schedule)
            ? perMicrobatch / v * count
            : perMicrobatch * count;
    }
    double pipelineTime = 0;
    const double maxBusy = *std::max_element(busy.begin(), busy.end());
    switch (schedule) {
    case ScheduleKind::GPipe:
    case ScheduleKind::OneFOneB:
        // Alpa (OSDI'22, Eq. 2): every chunk once, plus m - 1 times the slowest.
        pipelineTime = std::max(sumChunk + (m - 1) * maxChunk, maxBusy);
        break;
    case ScheduleKind::Interleaved1F1B:
        pipelineTime = maxBusy + (p - 1) * maxChunk;
        break;
    case ScheduleKind::ZeroBubbleH1:
        // Qi et al. (ICLR'24): ZB-H1's bubble is (p - 1)(T_F + T_B - T_W).
        pipelineTime = maxBusy + (p - 1) * std::max(0.0, maxZbGap);
        break;
    case ScheduleKind::ZeroBubbleV:
        // Per chunk: the last rank waits p - 1 forwards for its first input; a backward longer than the W that
        // fills behind it adds the difference (exact at F = B = W, within a chunk's F elsewhere; tst_sim).
        pipelineTime = maxBusy + (p - 1) * std::max(maxF, maxF + maxBi - maxW);
        break;
    case ScheduleKind::DualPipeV:
        // DualPipe README: (PP/2 - 1)(F&B + B - 3W) with PP = 2p stages, F&B = F + B and B = I + W per chunk.
        pipelineTime = maxBusy + (p - 1) * std::max(maxF, maxF + 2 * maxBi - maxW);
        break;
    case ScheduleKind::DualPipe:
        // The same formula with PP = p stages: DualPipe runs as two halves of a DualPipeV over p / 2 ranks.
        pipelineTime = maxBusy + (p / 2 - 1) * std::max(maxF, maxF + 2 * maxBi - maxW);
        break;
    }
    const double stepTime = pipelineTime + std::max(0.0, maxSync) + a->spec.optimizer_step;
    finish(e, *a, stash, inflight, stepTime, pipelineTime, busy);
    applyUncertainty(e, m_graph->seq_len, w.min_memory_headroom_bytes);
    return e;
}

} // namespace shardscape
