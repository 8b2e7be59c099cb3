// SPDX-License-Identifier: MIT
#include "shardscape/cost/cost_model.h"

#include "cost_model_assembly.h"
#include "memory_model.h"
#include "shardscape/cost/uncertainty.h"
#include "v_stage_split.h"

#include "shardscape/support/error.h"
#include "shardscape/support/strings.h"
#include "shardscape/support/units.h"

#include <algorithm>
#include <cctype>
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

double Evaluation::runtimeMemory() const
{
    double runtime = 0;
    for (const auto& s : stages)
        runtime = std::max(runtime, s.memory.runtime);
    return runtime;
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

/** HBM bytes per parameter of folding a bf16 gradient into an fp32 buffer with hp.add_(lp.to(fp32)). */
constexpr double kHpGradFoldBytesPerParam = 2 + 4 + 4 + 4 + 4;

bool allDigits(std::string_view text)
{
    return !text.empty() && std::all_of(text.begin(), text.end(), [](unsigned char ch) { return std::isdigit(ch); });
}

/** The number a block's module path ends in ("model.layers.7" -> 7), or -1. */
long long trailingIndex(const std::string& name)
{
    const std::size_t dot = name.rfind('.');
    const std::string last = dot == std::string::npos ? name : name.substr(dot + 1);
    return allDigits(last) && last.size() <= 9 ? std::stoll(last) : -1;
}

/** CostModel::blockIndices: matchedModule matches "7" at any path component "7", so every numeric component of
    every op's path must be its own block's index. */
std::vector<long long> blockIndicesOf(const ModelGraph& graph, const std::vector<Layer>& layers)
{
    std::vector<long long> out;
    for (const auto& layer : layers) {
        const long long own = layer.kind == LayerKind::Block ? trailingIndex(layer.name) : -1;
        if (layer.kind == LayerKind::Block && own < 0)
            return {};
        for (const auto id : layer.ops) {
            const std::string& module = graph.op(id).module;
            for (std::size_t begin = 0; begin <= module.size();) {
                const std::size_t end = std::min(module.find('.', begin), module.size());
                const std::string_view part(module.data() + begin, end - begin);
                if (allDigits(part) && (part.size() > 9 || std::stoll(std::string(part)) != own))
                    return {};
                begin = end + 1;
            }
        }
        out.push_back(own);
    }
    return out;
}

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
                                               const std::vector<double>& layerFp8Gathered,
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
        const double fp8 = i < layerFp8Gathered.size() ? layerFp8Gathered[i] : 0.0;
        const double gather
            = source.collectiveTime(Collective::AllGather, (elements - fp8) * weightBytes + fp8 * 1.0, group)
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

/** Whether FSDP all-gathers the float8 linears' weights as float8 (FrameworkProfile::fsdp_gathers_fp8_tensorwise, or
    FP8 parameters: ParallelConfig::fp8_param_gather): tensorwise recipes with the weights sharded over more than one
    rank, as the torchtitan export configures it. */
bool fsdpGathersFp8(const FrameworkProfile& framework, const ParallelConfig& c)
{
    return (framework.fsdp_gathers_fp8_tensorwise || c.fp8_param_gather) && c.fp8_linears
        && c.fp8_recipe == Float8Recipe::Tensorwise && c.zero_stage == 3 && c.dp * c.cp > 1;
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
    m_blockIndex = blockIndicesOf(*m_graph, m_layers);
    for (const auto& layer : m_layers)
        m_blockOrdinal.push_back(layer.kind == LayerKind::Block ? m_blockCount++ : -1);

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
        std::unordered_set<TensorId> seen, fp8Seen;
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
            // The FP8 linears' weights, for their FP8 gathers and copies.
            if (op.kind == OpKind::Linear && !op.params.empty()
                && (op.tp_role == TpRole::Column || op.tp_role == TpRole::Row || op.tp_role == TpRole::Replicated)
                && fp8Seen.insert(op.params.front()).second) {
                const Tensor& weight = m_graph->tensor(op.params.front());
                (weight.tp_sharded ? m_paramParts[l].fp8_split : m_paramParts[l].fp8_whole)
                    += static_cast<double>(weight.elements());
            }
        }
    }
}

double CostModel::fp8LinearElements(int first, int last, const ParallelConfig& c) const
{
    double elements = 0;
    if (c.fp8_linears)
        for (int l = first; l <= last; ++l)
            if (!keepsModelDtype(static_cast<std::size_t>(l), c)) {
                const LayerParamParts& parts = m_paramParts[static_cast<std::size_t>(l)];
                elements += parts.fp8_split / c.tp + parts.fp8_whole;
            }
    return elements;
}

double CostModel::fp8WeightBytes(int first, int last, const ParallelConfig& c, const FrameworkProfile& f) const
{
    // Transformer Engine's FP8 copy of a weight: 1 B, plus 1 B for its transpose where FP8 GEMMs are TN only
    // (DeviceSpec::fp8_gemm_any_layout). Without FP8 parameters it sits beside the 16-bit weight the parameter
    // memory counts (where the framework caches it); with them (fp8_param_gather, which frameworkRestriction allows
    // only where it can run) it replaces it. Megatron-FSDP (ZeRO 2/3) gathers and caches its weights its own way:
    // not modelled.
    if (!c.fp8_linears || c.zero_stage >= 2 || (!c.fp8_param_gather && !f.fp8_weight_cache))
        return 0;
    const double copy = m_cluster.device.fp8_gemm_any_layout ? 1 : 2;
    const double perElement = c.fp8_param_gather ? copy - dtypeBytes(m_graph->dtype) : copy;
    return perElement * fp8LinearElements(first, last, c);
}

double CostModel::retainedParams(int first, int last, const ParallelConfig& c, const FrameworkProfile& f) const
{
    if (last < first)
        return 0;
    if (!f.fsdp_root_keeps_embedding)
        return spanParams(last, last, c).dense;
    // The span less its blocks counts a tied embedding once; the last block is added back.
    double blocks = 0, lastBlock = 0;
    for (int l = first; l <= last; ++l)
        if (m_layers[static_cast<std::size_t>(l)].kind == LayerKind::Block) {
            lastBlock = spanParams(l, l, c).dense;
            blocks += lastBlock;
        }
    return spanParams(first, last, c).dense - blocks + lastBlock;
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

std::vector<std::string> CostModel::firstBlocksOfEachChunk(const std::vector<int>& chunkLayers, int n) const
{
    std::vector<std::string> out;
    if (m_blockIndex.empty())
        return out;
    std::size_t next = 0;
    for (const int count : chunkLayers) {
        int taken = 0;
        for (int i = 0; i < count && next < m_blockIndex.size(); ++i, ++next)
            if (m_blockIndex[next] >= 0 && taken < n) {
                out.push_back(std::to_string(m_blockIndex[next]));
                ++taken;
            }
    }
    return out;
}

int CostModel::mostBlocksPerChunk(const std::vector<int>& chunkLayers) const
{
    int most = 0;
    std::size_t next = 0;
    for (const int count : chunkLayers) {
        int blocks = 0;
        for (int i = 0; i < count && next < m_layers.size(); ++i, ++next)
            blocks += m_layers[next].kind == LayerKind::Block ? 1 : 0;
        most = std::max(most, blocks);
    }
    return most;
}

ParallelConfig CostModel::withFirstBlocksRecomputed(ParallelConfig config, int n) const
{
    const int chunks = layerChunks(config.schedule, config.pp, config.vpp);
    // V and DualPipe pipelines split by time (assemble), not by defaultStageLayers; Megatron runs neither.
    const bool timeSplit = config.pp > 1 && (isVShaped(config.schedule) || config.schedule == ScheduleKind::DualPipe);
    if (m_blockIndex.empty() || n < 1 || timeSplit
        || (!config.stage_layers.empty() && static_cast<int>(config.stage_layers.size()) != chunks))
        return config;
    const std::vector<int> layers = config.stage_layers.empty() ? defaultStageLayers(chunks) : config.stage_layers;
    config.recompute_modules.clear();
    if (n >= mostBlocksPerChunk(layers)) {
        config.recompute = RecomputeKind::Full;
        return config;
    }
    config.recompute = RecomputeKind::Modules;
    config.recompute_modules = firstBlocksOfEachChunk(layers, n);
    return config;
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
    const bool fp32GradBuffers = pipelineFp32Grads(framework, c, m_graph->dtype);

    // One stage-to-stage transfer of a tensor that every tensor-parallel rank holds whole. Where the framework
    // partitions it (FrameworkProfile::pipeline_p2p_partitioned), each rank sends its 1/tp slice and the receiver
    // gathers the slices over its tensor-parallel group before it can compute.
    const bool partitioned = framework.pipeline_p2p_partitioned && c.tp > 1 && c.pp > 1;
    const GroupShape tpShape = partitioned ? groupShape(c, "tp") : GroupShape {}; // parsed only where it is used
    const auto stageTransfer = [&](double bytes) {
        if (!partitioned)
            return m_source->p2pTime(bytes, ppInterNode);
        return m_source->p2pTime(bytes / c.tp, ppInterNode)
            + m_source->collectiveTime(Collective::AllGather, bytes, tpShape);
    };

    // FP8 weights cast once per step and reused by its other micro-batches (Transformer Engine's weight workspace:
    // transformer_engine/pytorch/module/linear.py _Linear.forward, update_ws = is_first_microbatch; Megatron sets
    // is_first_microbatch on each model chunk's first micro-batch, megatron/core/extensions/transformer_engine.py).
    const double weightCastReused
        = framework.fp8_weight_cached_per_step && c.fp8_linears ? 1.0 - 1.0 / std::max(1, c.num_microbatches) : 0.0;
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
            stage.forward += lc.forward - weightCastReused * lc.fp8_weight_cast;
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
            ? stageTransfer(costs[static_cast<std::size_t>(chunk.last)]->output_bytes)
            : 0;
        // The input gradient going back has the size of the previous chunk's output.
        stage.send_backward = !startsChain(c.schedule, c.pp, k)
            ? stageTransfer(
                costs[static_cast<std::size_t>(a->chunks[static_cast<std::size_t>(k - 1)].last)]->output_bytes)
            : 0;
        if (framework.pipeline_keeps_stage_io && c.pp > 1) {
            // Kept per in-flight micro-batch beside what the layers save (FrameworkProfile::pipeline_keeps_stage_io).
            if (!endsChain(c.schedule, c.pp, c.vpp, k))
                stage.activation_bytes += costs[static_cast<std::size_t>(chunk.last)]->output_bytes / c.tp;
            if (c.tp == 1 && !startsChain(c.schedule, c.pp, k))
                stage.activation_bytes
                    += costs[static_cast<std::size_t>(a->chunks[static_cast<std::size_t>(k - 1)].last)]->output_bytes;
        }
        stage.exposed_comm_forward = std::min(stage.forward, chunk.otherCommForward);
        stage.exposed_comm_backward
            = std::min(stage.backward_input, std::max(0.0, chunk.otherComm - chunk.otherCommForward));

        chunk.params = spanParams(chunk.first, chunk.last, c);
        const double dense = chunk.params.dense;
        // The distributed optimizer's parameter all-gather: FP8 parameters travel in 1 byte.
        const double paramGatherBytes = c.fp8_linears && c.fp8_param_gather
            ? dense * weightBytes - fp8LinearElements(chunk.first, chunk.last, c) * (weightBytes - 1)
            : dense * weightBytes;
        const double expert = chunk.params.expert;
        const ParameterMemory resident
            = parameterMemory(framework, m_params, c, chunk.params, m_graph->dtype, {denseShard, expertShard});
        chunk.weights = resident.weights + fp8WeightBytes(chunk.first, chunk.last, c, framework);
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
        if (perModuleShardedPeak(framework, c)) {
            // In backward the module gathered ahead of a layer is the one before it; the first layer's forward
            // gathers the one after it.
            const std::size_t n = layerDense.size();
            for (std::size_t i = 0; i < n; ++i) {
                const double neighbour = i > 0 ? layerDense[i - 1] : (n > 1 ? layerDense[1] : 0.0);
                const double working = costs[static_cast<std::size_t>(chunk.first) + i]->working_bytes;
                chunk.shardedDpLayerPeak
                    = std::max(chunk.shardedDpLayerPeak,
                               shardedDpLayerPeakBytes(framework, c, layerDense[i], neighbour, working, weightBytes));
            }
            if (n > 0)
                chunk.shardedDpLayerPeak += retainedGatherBytes(
                    framework, c, retainedParams(chunk.first, chunk.last, c, framework), weightBytes);
        }
        stage.static_bytes = chunk.weights + chunk.gradients + chunk.optimizer;
        if (fp32GradBuffers) {
            // BF16_Optimizer folds each micro-batch's bf16 gradients into its fp32 buffers at the end of the
            // backward (pipe/engine.py _exec_backward_pass -> update_hp_grads, or the per-parameter grad hooks
            // under immediate_grad_update; bf16_optimizer.py _update_hp_grad: hp_grad.add_(lp.grad.to(fp32))),
            // on the compute stream: the fp32 copy reads 2 B and writes 4 B, the add reads 4 + 4 B and writes 4 B.
            stage.backward_weight += m_source->memoryTime((dense + expert) * kHpGradFoldBytesPerParam);
        }

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
            const double gather = m_source->collectiveTime(Collective::AllGather, paramGatherBytes, denseZero);
            if (c.zero_stage >= 3) {
                std::vector<double> layerFp8;
                if (fsdpGathersFp8(framework, c))
                    for (int l = chunk.first; l <= chunk.last; ++l)
                        layerFp8.push_back(fp8LinearElements(l, l, c));
                chunk.shardedDpExposed = shardedDpExposedTime(c, framework, m_params, *m_source, chunk.first,
                                                              layerDense, layerFp8, costs, denseZero, m_graph->dtype);
                stage.forward += chunk.shardedDpExposed.first;
                stage.backward_input += chunk.shardedDpExposed.second;
                stage.grad_sync = expertSyncTime;
            } else {
                stage.backward_input += exposed(scatter, stage.backward_input + stage.backward_weight);
                // The updated weight shards are all-gathered once per step.
                stage.grad_sync = paramGather(gather, stage.forward) + expertSyncTime;
            }
        } else if (fp32GradBuffers) {
            // BF16_Optimizer (DeepSpeed's choice at ZeRO stage 0): the pipeline engine all-reduces the whole fp32
            // gradient buffers (pipe/engine.py _bf16_reduce_grads -> engine.py buffered_allreduce_fallback), each
            // rank updates its shard of the fp32 master weights, and step() all-gathers the updated bf16 weights
            // (bf16_optimizer.py update_lp_params -> all_gather_dp_groups): an all-reduce, not a reduce-scatter. The
            // all-reduce travels in the engine's communication_data_type, bf16 when bf16 is on (engine.py
            // allreduce_bucket casts the fp32 buffer, all-reduces the copy and copies it back).
            stage.grad_sync = m_source->collectiveTime(Collective::AllReduce, dense * weightBytes, denseSync)
                + m_source->collectiveTime(Collective::AllGather, dense * weightBytes, denseZero) + expertSyncTime;
        } else if (c.zero_stage == 1) {
            // ZeRO-1 (Megatron's distributed optimizer): reduce-scatter the gradients, update the local shard, then
            // all-gather the updated 16-bit weights. Calibration fix: this was costed as an all-reduce of
            // gradients, which moves grad_bytes (fp32 in Megatron, DeepSpeed bf16) instead of the weights' 2 bytes in
            // the gather half.
            stage.grad_sync = m_source->collectiveTime(Collective::ReduceScatter, dense * gradCommBytes, denseZeroGrads)
                + paramGather(m_source->collectiveTime(Collective::AllGather, paramGatherBytes, denseZero),
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
            += sharded(dense, expert, shardsOptimizerStates(framework, c, m_graph->dtype)) * adamStepBytesPerParam();
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

} // namespace shardscape
