// SPDX-License-Identifier: MIT
// The cost model against closed forms: Korthikanti et al. 2022 (Table 2) activation memory, the
// (2 + 2 + 12) bytes per parameter of bf16 + Adam and its ZeRO divisions, ring collectives, and
// Megatron's tensor-parallel communication volume.
#include "shardscape/cost/cost_model.h"
#include "shardscape/cost/uncertainty.h"
#include "shardscape/model/hf_config.h"
#include "shardscape/model/model_source.h"

#include <nlohmann/json.hpp>

#include <QTest>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <optional>

using namespace shardscape;

namespace {

constexpr std::int64_t kHidden = 1024;
constexpr std::int64_t kHeads = 16;
constexpr std::int64_t kSeq = 512;
constexpr std::int64_t kBatch = 2;

/** A GPT-3-style block as in Korthikanti et al.: GELU MLP of 4h, LayerNorm, dropout, unfused attention. */
TransformerShape korthikantiShape()
{
    TransformerShape t;
    t.family = "gpt2";
    t.hidden = kHidden;
    t.num_layers = 4;
    t.num_heads = kHeads;
    t.num_kv_heads = kHeads;
    t.head_dim = kHidden / kHeads;
    t.ffn_hidden = 4 * kHidden;
    t.vocab = 1000;
    t.max_positions = kSeq;
    t.gated_mlp = false;
    t.tied_embeddings = true;
    t.learned_positions = true;
    t.flash_attention = false;
    t.dropout = 0.1;
    t.norm = "layernorm";
    return t;
}

std::shared_ptr<const ModelGraph> korthikantiGraph()
{
    BuildOptions options;
    options.batch = kBatch;
    options.seq_len = kSeq;
    return std::make_shared<const ModelGraph>(buildTransformerGraph(korthikantiShape(), options, "gpt-k"));
}

/** A preset model at a sequence length (micro-batch 1). */
std::shared_ptr<const ModelGraph> presetGraph(const std::string& preset, std::int64_t seqLen)
{
    BuildOptions options;
    options.seq_len = seqLen;
    return std::make_shared<const ModelGraph>(loadModel(preset, options));
}

Cluster h100Node(int nodes = 1)
{
    return loadCluster("h100-sxm", nodes, 8);
}

/** A configuration on part of one H100 node, under its framework's profile or the one given. */
Evaluation evaluatePartOfNode(const std::shared_ptr<const ModelGraph>& graph, const ParallelConfig& config,
                              const std::optional<FrameworkProfile>& profile = std::nullopt)
{
    Workload workload;
    workload.memory_limit_bytes = 1e15;
    EvaluateOptions partOfTheNode;
    partOfTheNode.require_full_cluster = false;
    CostModel model(graph, h100Node());
    if (profile)
        model.overrideFrameworkProfile(*profile);
    return model.evaluate(config, workload, partOfTheNode);
}

/** A DeepSpeed configuration on part of one H100 node, under DeepSpeed's profile or the one given. */
Evaluation evaluateDeepSpeed(const std::shared_ptr<const ModelGraph>& graph, ParallelConfig config,
                             const std::optional<FrameworkProfile>& profile = std::nullopt)
{
    config.framework = Framework::DeepSpeed;
    return evaluatePartOfNode(graph, config, profile);
}

/** DeepSpeed's profile with one of its switches turned off. */
FrameworkProfile deepSpeedWithout(bool FrameworkProfile::*the_switch)
{
    FrameworkProfile profile = frameworkProfile(Framework::DeepSpeed);
    profile.*the_switch = false;
    return profile;
}

/** Evaluates with the timeline recorded, without a memory limit. */
Evaluation evaluateWithTimeline(const CostModel& model, const ParallelConfig& config)
{
    Workload workload;
    workload.memory_limit_bytes = 1e15;
    EvaluateOptions record;
    record.record_timeline = true;
    return model.evaluate(config, workload, record);
}

/** Rank 0's first send of an activation to the next stage, or null. */
const TimelineEvent* firstSendForward(const Evaluation& e)
{
    if (!e.simulation)
        return nullptr;
    const auto& events = e.simulation->events;
    const auto send = std::find_if(events.begin(), events.end(), [](const TimelineEvent& ev) {
        return ev.rank == 0 && ev.kind == EventKind::SendForward;
    });
    return send == events.end() ? nullptr : &*send;
}

const Layer& firstBlock(const std::vector<Layer>& layers)
{
    for (const auto& layer : layers)
        if (layer.kind == LayerKind::Block)
            return layer;
    throw std::logic_error("no block");
}

const Layer& firstBlock(const CostModel& model)
{
    return firstBlock(model.layers());
}

/** The first block's ops of one kind, as a layer of their own (to cost them apart from the rest). */
Layer opsOfKind(const ModelGraph& graph, const std::vector<Layer>& layers, OpKind kind)
{
    Layer only = firstBlock(layers);
    only.ops.clear();
    for (const auto id : firstBlock(layers).ops)
        if (graph.op(id).kind == kind)
            only.ops.push_back(id);
    return only;
}

/** Qwen3-30B-A3B at seq 4096 on 4 H100 nodes, and the index of its first (MoE) block. */
struct Qwen3MoeBlock
{
    std::unique_ptr<CostModel> model;
    std::size_t layer = 0;
};

Qwen3MoeBlock qwen3MoeBlock()
{
    BuildOptions options;
    options.seq_len = 4096;
    Qwen3MoeBlock b;
    b.model = std::make_unique<CostModel>(std::make_shared<const ModelGraph>(loadModel("qwen3-30b-a3b", options)),
                                          h100Node(4));
    b.layer = static_cast<std::size_t>(&firstBlock(*b.model) - b.model->layers().data());
    return b;
}

/** A preset's (or any graph's) first block, costed from the H100 datasheet or a given source under any layout. */
struct PresetBlock
{
    std::shared_ptr<const ModelGraph> graph;
    std::vector<OpId> producer;
    std::vector<Layer> layers;
    std::shared_ptr<const CostSource> source;

    explicit PresetBlock(std::shared_ptr<const ModelGraph> g)
        : graph(std::move(g))
        , producer(graph->producers())
        , layers(layersByModule(*graph))
        , source(makeDatasheetCostSource(loadCluster("h100-sxm", 1, 8), {}))
    {
    }
    PresetBlock(const std::string& preset, std::int64_t seqLen)
        : PresetBlock(presetGraph(preset, seqLen))
    {
    }
    const Layer& block() const { return firstBlock(layers); }
    LayerCost cost(const LayerLayout& layout) const { return cost(layout, *source); }
    LayerCost cost(const LayerLayout& layout, const CostSource& with) const
    {
        return computeLayerCost(*graph, producer, block(), layout, with);
    }

private:
    static std::shared_ptr<const ModelGraph> presetGraph(const std::string& preset, std::int64_t seqLen)
    {
        BuildOptions options;
        options.seq_len = seqLen;
        return std::make_shared<const ModelGraph>(loadModel(preset, options));
    }
};

double relativeError(double actual, double expected)
{
    return std::fabs(actual - expected) / std::fabs(expected);
}

/** One node's tensor-parallel layout with sequence parallelism: the collectives' closed forms use it. */
LayerLayout sequenceParallelLayout(int tp)
{
    LayerLayout layout;
    layout.tp = tp;
    layout.tp_group = {tp, 8};
    layout.sequence_parallel = true;
    return layout;
}

/** The datasheet source with every GEMM scaled by `gemmScale`: isolates how communication hides under GEMMs. */
class ScaledGemmSource final : public CostSource
{
public:
    ScaledGemmSource(std::shared_ptr<const CostSource> base, double gemmScale)
        : m_base(std::move(base))
        , m_scale(gemmScale)
    {
    }
    std::string name() const override { return "scaled"; }
    double matmulTime(double m, double n, double k, DType dtype) const override
    {
        return m_scale * m_base->matmulTime(m, n, k, dtype);
    }
    double attentionTime(double flops, DType dtype) const override { return m_base->attentionTime(flops, dtype); }
    double memoryTime(double bytes) const override { return m_base->memoryTime(bytes); }
    double collectiveTime(Collective kind, double bytes, const GroupShape& group) const override
    {
        return m_base->collectiveTime(kind, bytes, group);
    }
    double p2pTime(double bytes, bool interNode) const override { return m_base->p2pTime(bytes, interNode); }
    double minKernelTime() const override { return m_base->minKernelTime(); }

private:
    std::shared_ptr<const CostSource> m_base;
    double m_scale;
};

/** Only streaming kernels cost time, exactly 1 ps per byte: isolates HBM traffic. */
class TrafficOnlySource final : public CostSource
{
public:
    std::string name() const override { return "traffic"; }
    double matmulTime(double, double, double, DType) const override { return 0; }
    double attentionTime(double, DType) const override { return 0; }
    double memoryTime(double bytes) const override { return bytes * 1e-12; }
    double collectiveTime(Collective, double, const GroupShape&) const override { return 0; }
    double p2pTime(double, bool) const override { return 0; }
    double minKernelTime() const override { return 0; }
};

/** Collectives cost 1 ps per byte and every GEMM a whole second: whatever TP overlap fuses hides all but its
    first chunk, and what it does not fuse stays whole. */
class CollectiveOnlySource final : public CostSource
{
public:
    std::string name() const override { return "collectives"; }
    double matmulTime(double, double, double, DType) const override { return 1; }
    double attentionTime(double, DType) const override { return 0; }
    double memoryTime(double) const override { return 0; }
    double collectiveTime(Collective, double bytes, const GroupShape&) const override { return bytes * 1e-12; }
    double p2pTime(double, bool) const override { return 0; }
    double minKernelTime() const override { return 0; }
};

} // namespace

class TestCost : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void korthikantiActivationMemory_data()
    {
        QTest::addColumn<int>("tp");
        QTest::addColumn<bool>("sp");
        QTest::addColumn<QString>("recompute");
        for (const int tp : {1, 2, 4, 8}) {
            for (const char* recompute : {"none", "selective", "full"}) {
                QTest::addRow("tp%d %s", tp, recompute) << tp << false << recompute;
                if (tp > 1)
                    QTest::addRow("tp%d sp %s", tp, recompute) << tp << true << recompute;
            }
        }
    }
    void korthikantiActivationMemory()
    {
        QFETCH(int, tp);
        QFETCH(bool, sp);
        QFETCH(QString, recompute);
        const auto graph = korthikantiGraph();
        CostModel model(graph, h100Node());
        ParallelConfig config;
        config.tp = tp;
        config.sequence_parallel = sp;
        config.micro_batch = static_cast<int>(kBatch);
        config.recompute = *parseRecompute(recompute.toStdString());
        const auto index = static_cast<std::size_t>(&firstBlock(model) - model.layers().data());
        const double bytes = model.layerCost(index, config).activation_bytes;

        // Korthikanti et al. 2022, Table 2 (bytes per layer, 16-bit activations, 1-byte dropout masks).
        const double s = kSeq, b = kBatch, h = kHidden, a = kHeads, t = tp;
        const double sbh = s * b * h;
        double expected = 0;
        if (recompute == "full")
            expected = sp ? 2 * sbh / t : 2 * sbh;
        else if (recompute == "selective")
            expected = sp ? 34 * sbh / t : sbh * (10 + 24 / t);
        else
            expected = sp ? sbh / t * (34 + 5 * a * s / h) : sbh * (10 + 24 / t + 5 * a * s / (h * t));
        QVERIFY2(relativeError(bytes, expected) < 1e-12,
                 qPrintable(QStringLiteral("%1 bytes, expected %2").arg(bytes, 0, 'f', 0).arg(expected, 0, 'f', 0)));
    }

    void recomputeModulesMatchBySuffix()
    {
        QCOMPARE(matchedModule("model.layers.3.mlp.up_proj", {"mlp"}), std::string("model.layers.3.mlp"));
        QCOMPARE(matchedModule("model.layers.3.self_attn.core", {"self_attn.core"}),
                 std::string("model.layers.3.self_attn.core"));
        QCOMPARE(matchedModule("model.layers.3.mlp_gate", {"mlp"}), std::string());
        QCOMPARE(matchedModule("model.layers.3.mlp", {"ROOT"}), std::string("model"));

        // Recomputing the attention core by name equals selective recomputation.
        const auto graph = korthikantiGraph();
        CostModel model(graph, h100Node());
        ParallelConfig byName;
        byName.micro_batch = static_cast<int>(kBatch);
        byName.recompute = RecomputeKind::Modules;
        byName.recompute_modules = {"attn.core"};
        ParallelConfig selective = byName;
        selective.recompute = RecomputeKind::Selective;
        const auto index = static_cast<std::size_t>(&firstBlock(model) - model.layers().data());
        QCOMPARE(model.layerCost(index, byName).activation_bytes, model.layerCost(index, selective).activation_bytes);
        QVERIFY(model.layerCost(index, byName).recompute_flops > 0);
    }

    void bytesPerParameterFollowZero_data()
    {
        QTest::addColumn<int>("framework");
        QTest::addColumn<int>("zero");
        QTest::addColumn<double>("weights");
        QTest::addColumn<double>("grads");
        QTest::addColumn<double>("optimizer");
        const auto row = [](const char* name, Framework f, int zero, double w, double g, double o) {
            QTest::newRow(name) << static_cast<int>(f) << zero << w << g << o;
        };
        // Generic: bf16 weights 2 B, gradients CostParams::grad_bytes (fp32 by default), Adam fp32 master + two
        // moments 12 B; dp = 8 shards.
        const double g = CostParams {}.grad_bytes;
        row("zero0", Framework::Generic, 0, 2.0, g, 12.0);
        row("zero1", Framework::Generic, 1, 2.0, g, 12.0 / 8);
        row("zero2", Framework::Generic, 2, 2.0, g / 8, 12.0 / 8);
        row("zero3", Framework::Generic, 3, 2.0 / 8, g / 8, 12.0 / 8);
        // dp = 8. Megatron's distributed optimizer: 2 + 4 + 12/d (docs/source/api-guide/dist_optimizer.md).
        row("megatron zero0", Framework::MegatronCore, 0, 2, 4, 12);
        row("megatron zero1", Framework::MegatronCore, 1, 2, 4, 12.0 / 8);
        // ZeRO paper: 2 + 2 + 12/d, 2 + 14/d, 16/d.
        row("deepspeed zero1", Framework::DeepSpeed, 1, 2, 2, 12.0 / 8);
        row("deepspeed zero2", Framework::DeepSpeed, 2, 2, 2.0 / 8, 12.0 / 8);
        row("deepspeed zero3", Framework::DeepSpeed, 3, 2.0 / 8, 2.0 / 8, 12.0 / 8);
        // FSDP2 with fp32 sharded parameters: 4/d + 4/d + 8/d; ZeRO-2 keeps the 16-bit copy from forward to backward.
        row("torchtitan zero3", Framework::Torchtitan, 3, 4.0 / 8, 4.0 / 8, 8.0 / 8);
        row("torchtitan zero2", Framework::Torchtitan, 2, 4.0 / 8 + 2, 4.0 / 8, 8.0 / 8);
    }
    void bytesPerParameterFollowZero()
    {
        QFETCH(int, framework);
        QFETCH(int, zero);
        QFETCH(double, weights);
        QFETCH(double, grads);
        QFETCH(double, optimizer);
        BuildOptions options;
        options.seq_len = 1024;
        const auto graph = std::make_shared<const ModelGraph>(loadModel("llama2-7b", options));
        CostModel model(graph, h100Node());
        ParallelConfig config;
        config.dp = 8;
        config.zero_stage = zero;
        config.framework = static_cast<Framework>(framework);
        Workload workload;
        workload.memory_limit_bytes = 1e15;
        const Evaluation e = model.evaluate(config, workload);
        QVERIFY2(e.feasible, e.reason.c_str());
        const double params = graph->paramCount();
        const auto& mem = e.stages.front().memory;
        QVERIFY(relativeError(mem.weights, weights * params) < 1e-12);
        QVERIFY(relativeError(mem.gradients, grads * params) < 1e-12);
        QVERIFY(relativeError(mem.optimizer, optimizer * params) < 1e-12);
        // The reserve is the runtime plus the allocator's slack over what is allocated.
        const FrameworkProfile& profile = frameworkProfile(config.framework);
        QVERIFY(std::fabs(mem.fragmentation - (profile.fragmentation - 1) * mem.allocated()) <= 1e-12 * mem.total());
        QVERIFY(relativeError(mem.reserve, mem.runtime + mem.fragmentation) < 1e-12);
    }

    void torchtitanPipelineAccumulatesUnshardedFp32Grads()
    {
        // Under pipeline parallelism torchtitan's stages run FSDP with gradient sync off for every backward but the
        // last, so FSDP2 keeps each parameter's whole gradient in fp32 until then: 4/d + 4 B of gradients per
        // parameter of the stage beside 4/d + 2 of weights (the fp32 shard and the unsharded bf16 copy). One
        // micro-batch has no earlier backward to accumulate over.
        CostModel model(presetGraph("llama2-7b", 1024), h100Node());
        ParallelConfig config;
        config.dp = 4;
        config.pp = 2;
        config.zero_stage = 3;
        config.num_microbatches = 4;
        config.framework = Framework::Torchtitan;
        Workload workload;
        workload.memory_limit_bytes = 1e15;
        for (const int microbatches : {4, 1}) {
            config.num_microbatches = microbatches;
            const Evaluation e = model.evaluate(config, workload);
            QVERIFY2(e.feasible || microbatches == 1, e.reason.c_str());
            if (!e.feasible)
                continue; // torchtitan's 1F1B refuses fewer micro-batches than stages
            const auto& mem = e.stages.front().memory;
            const double stageParams = mem.weights / (4.0 / 4 + 2);
            QVERIFY(relativeError(mem.gradients, (4.0 / 4 + (microbatches > 1 ? 4 : 0)) * stageParams) < 1e-12);
        }
    }

    // --- framework memory profiles (core/src/cost/framework_profile.cpp) ---------------------------------------

    void lossSavesFp32Logits()
    {
        // The head's stash holds the fp32 softmax (4 B per logit), not the 16-bit logits; the working set is the
        // framework's bytes per logit beside it.
        BuildOptions options;
        options.seq_len = 1024;
        const auto graph = std::make_shared<const ModelGraph>(loadModel("llama2-7b", options));
        const auto producer = graph->producers();
        const auto layers = layersByModule(*graph);
        const Layer& head = layers.back();
        QCOMPARE(head.kind, LayerKind::Head);
        const auto source = makeDatasheetCostSource(h100Node(), {});
        LayerLayout layout;
        layout.loss_saved_bytes_per_logit = 4;
        layout.loss_working_bytes_per_logit = 8;
        const LayerCost fp32 = computeLayerCost(*graph, producer, head, layout, *source);
        layout.loss_saved_bytes_per_logit = 0;
        const LayerCost none = computeLayerCost(*graph, producer, head, layout, *source);
        const double logits = 1024.0 * graph->transformer->vocab;
        QVERIFY(relativeError(fp32.activation_bytes - none.activation_bytes, 4 * logits) < 1e-12);
        QVERIFY(relativeError(fp32.working_bytes, 8 * logits) < 1e-12);

        // Per framework: llm-foundry's default loss (flash-attn's xentropy) saves the 16-bit logits and an fp32
        // log-sum-exp per row and writes a 16-bit gradient: 2 B per logit saved and 2 B working, against Megatron's
        // 4 and 2 and torchtitan's 4 and 8 (F.cross_entropy on an fp32 upcast).
        const auto headCost = [&](Framework framework) {
            const FrameworkProfile& profile = frameworkProfile(framework);
            LayerLayout framed;
            framed.loss_saved_bytes_per_logit = profile.loss_saved_bytes_per_logit;
            framed.loss_working_bytes_per_logit = profile.loss_working_bytes_per_logit;
            return computeLayerCost(*graph, producer, head, framed, *source);
        };
        const LayerCost composer = headCost(Framework::Composer);
        const LayerCost megatron = headCost(Framework::MegatronCore);
        const LayerCost torchtitan = headCost(Framework::Torchtitan);
        QVERIFY(relativeError(megatron.activation_bytes - composer.activation_bytes, 2 * logits) < 1e-12);
        QVERIFY(relativeError(torchtitan.activation_bytes - composer.activation_bytes, 2 * logits) < 1e-12);
        QVERIFY(relativeError(composer.working_bytes, 2 * logits) < 1e-12);
        QVERIFY(relativeError(megatron.working_bytes, 2 * logits) < 1e-12);
        QVERIFY(relativeError(torchtitan.working_bytes, 8 * logits) < 1e-12);
    }

    // --- activations as the framework's model code saves them (tests/gpu/layer_probe.py measured them) ----------

    void eagerSwigluStashesTheSiluOutput()
    {
        // F.silu(w1(x)) * w3(x) in eager mode saves silu(gate) beside gate and up: one more ffn-wide tensor per
        // token; a fused SwiGLU does not.
        const PresetBlock block("llama3-8b", 1024);
        LayerLayout layout;
        const LayerCost fused = block.cost(layout);
        layout.eager_kernels = true;
        const LayerCost eager = block.cost(layout);
        const double siluBytes = 1024.0 * block.graph->transformer->ffn_hidden * 2;
        QVERIFY(relativeError(eager.activation_bytes - fused.activation_bytes, siluBytes) < 1e-12);
        // Fully recomputed, the block stashes its input only; the silu output is back in the working set.
        layout.recompute = RecomputeKind::Full;
        const LayerCost full = block.cost(layout);
        QVERIFY(relativeError(full.working_bytes, eager.activation_bytes - full.activation_bytes) < 1e-12);
    }

    void repeatedKvIsStashedAtQueryHeads()
    {
        // repeat_kv before the attention kernel: K and V are saved with num_heads heads instead of num_kv_heads.
        const PresetBlock block("llama3-70b", 2048);
        LayerLayout layout;
        const LayerCost native = block.cost(layout);
        layout.attention_repeats_kv = true;
        const LayerCost repeated = block.cost(layout);
        const auto& t = *block.graph->transformer;
        const double extra = 2.0 * 2048 * (t.num_heads - t.num_kv_heads) * t.head_dim * 2;
        QVERIFY(relativeError(repeated.activation_bytes - native.activation_bytes, extra) < 1e-12);
        // The torchtitan profile repeats (v0.2.0-v0.2.1); Megatron's Transformer Engine attention does not.
        QVERIFY(frameworkProfile(Framework::Torchtitan).attention_repeats_kv);
        QVERIFY(!frameworkProfile(Framework::MegatronCore).attention_repeats_kv);
    }

    void torchtitanPerOpPolicyStash()
    {
        // torchtitan's selective_ac_option = "op" caches the attention kernel's outputs and every odd-numbered
        // matmul's (wq, wv, w1, w2 in forward order) and recomputes the rest. Eager, the block stashes its input,
        // q (h), v (kv width), one ffn-wide GEMM output, w2's output (h), the attention output (h) and its fp32
        // log-sum-exp per head (measured: stashMatchesTheMeasuredLayer). Compiled, the partitioner keeps only what
        // the backward graph reads: w2's output, which only the residual add consumes, is not saved.
        BuildOptions options;
        options.seq_len = 2048;
        const auto graph = std::make_shared<const ModelGraph>(loadModel("llama3-8b", options));
        CostModel model(graph, h100Node());
        ParallelConfig c;
        c.framework = Framework::Torchtitan;
        c.recompute = RecomputeKind::Selective;
        c.eager_kernels = true;
        const auto index = static_cast<std::size_t>(&firstBlock(model) - model.layers().data());
        const LayerCost& lc = model.layerCost(index, c);
        const auto& t = *graph->transformer;
        const double tokens = 2048;
        const double perToken
            = 2.0 * t.hidden * 4 + 2.0 * t.num_kv_heads * t.head_dim + 2.0 * t.ffn_hidden + 4.0 * t.num_heads;
        QVERIFY2(relativeError(lc.activation_bytes, tokens * perToken) < 1e-9,
                 qPrintable(QString::number(lc.activation_bytes / (tokens * perToken))));
        ParallelConfig compiled = c;
        compiled.eager_kernels = false;
        const LayerCost& lcCompiled = model.layerCost(index, compiled);
        const double compiledPerToken = perToken - 2.0 * t.hidden;
        QVERIFY2(relativeError(lcCompiled.activation_bytes, tokens * compiledPerToken) < 1e-9,
                 qPrintable(QString::number(lcCompiled.activation_bytes / (tokens * compiledPerToken))));
        // With TP 2 and SP everything is split in two, and the policy also caches the reduce-scattered output of
        // wo (_c10d_functional.reduce_scatter_tensor is on its save list): one more h-wide tensor, eager only.
        ParallelConfig sp = c;
        sp.tp = 2;
        sp.sequence_parallel = true;
        QVERIFY(relativeError(model.layerCost(index, sp).activation_bytes, tokens * (perToken + 2.0 * t.hidden) / 2)
                < 1e-9);
        // The recomputation re-runs wk, wo and w3 (the even matmuls) and no attention.
        QVERIFY(lc.recompute > 0);
        QVERIFY(lc.recompute
                < model.layerCost(
                           index,
                           [&] {
                               ParallelConfig none = c;
                               none.recompute = RecomputeKind::None;
                               return none;
                           }())
                        .forward
                    / 2);
        // From pytorch/torchtitan#1196 torchtitan runs cuDNN attention first on compute capability 10 (B200), and
        // until #2095 its save list named only the flash and efficient SDPA kernels: the policy then recomputes the
        // attention and stashes neither its output (h per token) nor its log-sum-exp (fp32 per head).
        FrameworkProfile blackwell = frameworkProfile(Framework::Torchtitan);
        blackwell.op_sac_caches_attention = false;
        model.overrideFrameworkProfile(blackwell);
        QVERIFY(relativeError(lc.activation_bytes - model.layerCost(index, c).activation_bytes,
                              tokens * (2.0 * t.hidden + 4.0 * t.num_heads))
                < 1e-9);
    }

    void torchtitanPerOpPolicyGathersAgainAndKeepsReduceScatters()
    {
        // torchtitan's per-op policy saves reduce_scatter_tensor and not all_gather_into_tensor (_save_list in
        // parallelize_llama.py at 820504e). Under TP 8 with SP, a Llama 3 block therefore gathers the attention and
        // MLP inputs again in backward (the weight gradients of wq, wv and w1, which the policy caches, read them)
        // and never repeats a reduce-scatter. Every collective is C here and every GEMM one second. Vanilla TP
        // exposes its eight forward and backward collectives and the two gathers: 10 C. Full recomputation repeats
        // all four forward collectives: 12 C.
        const PresetBlock block("llama3-8b", 4096);
        const CollectiveOnlySource source;
        LayerLayout none = sequenceParallelLayout(8);
        none.selective_checkpoint_policy = true;
        const double c = block.cost(none, source).tp_comm / 8;
        QVERIFY(c > 0);
        LayerLayout policy = none;
        policy.recompute = RecomputeKind::Selective;
        QVERIFY2(relativeError(block.cost(policy, source).tp_comm, 10 * c) < 1e-9,
                 std::to_string(block.cost(policy, source).tp_comm / c).c_str());
        LayerLayout full = none;
        full.recompute = RecomputeKind::Full;
        full.selective_checkpoint_policy = false;
        QVERIFY(relativeError(block.cost(full, source).tp_comm, 12 * c) < 1e-9);
        // Async TP fuses each repeated gather only into the recomputed GEMM that reads it as its left operand (wk;
        // w3), so one chunk of each stays exposed: C / 8 twice beside the forward and backward 6 C / 8 + 2 C.
        LayerLayout async = policy;
        async.tp_comm_overlap = true;
        async.tp_overlap_by_pattern = true;
        QVERIFY2(relativeError(block.cost(async, source).tp_comm, 8 * c / 8 + 2 * c) < 1e-9,
                 std::to_string(block.cost(async, source).tp_comm / c).c_str());

        // Compiled, the partitioner recomputes only what the backward reads: wk and w3, not wo, whose output only
        // the saved reduce-scatter reads (two GEMMs of one second). Eager recomputation runs wo as well, and so does
        // the compiled block without SP, where the residual add that the second norm reads is recomputed from it.
        QVERIFY(relativeError(block.cost(policy, source).recompute, 2) < 1e-12);
        LayerLayout eager = policy;
        eager.eager_kernels = true;
        QVERIFY(relativeError(block.cost(eager, source).recompute, 3) < 1e-12);
        LayerLayout single = policy;
        single.tp = 1;
        single.tp_group = {};
        single.sequence_parallel = false;
        QVERIFY(relativeError(block.cost(single, source).recompute, 3) < 1e-12);
    }

    void gradientsFreedEachStepTradeWithActivations()
    {
        // A loop that sets its gradients to None after each step (torchtune's single-device recipe) starts the one
        // backward of a step with the activations A and the working set T and no gradient, and ends it with every
        // gradient G: the peak is weights + optimizer + max(A + T, G), not their sum.
        const auto graph = presetGraph("llama3-8b", 2048);
        FrameworkProfile profile = frameworkProfile(Framework::Generic);
        profile.gradients_freed_each_step = true;
        const auto peaks = [&](const ParallelConfig& c) {
            const Evaluation kept = evaluatePartOfNode(graph, c);
            const Evaluation traded = evaluatePartOfNode(graph, c, profile);
            return std::pair {kept.stages.at(0).memory, traded.stages.at(0).memory};
        };
        ParallelConfig c;
        c.micro_batch = 4;
        c.recompute = RecomputeKind::None;
        // Without recomputation A + T exceeds G: no gradient is live at the peak.
        const auto [kept, traded] = peaks(c);
        QVERIFY(kept.activations + kept.transient > kept.gradients);
        QCOMPARE(traded.gradients, 0.0);
        QVERIFY(relativeError(traded.allocated(), kept.allocated() - kept.gradients) < 1e-12);
        // Full recomputation keeps only the block inputs: G wins and the peak is weights + optimizer + G.
        c.recompute = RecomputeKind::Full;
        const auto [keptFull, tradedFull] = peaks(c);
        QVERIFY(keptFull.gradients > keptFull.activations + keptFull.transient);
        QVERIFY(relativeError(tradedFull.allocated(), keptFull.weights + keptFull.optimizer + keptFull.gradients)
                < 1e-12);
        // Two micro-batches accumulate: the second's activations sit beside the first's gradients.
        c.num_microbatches = 2;
        const auto [keptTwo, tradedTwo] = peaks(c);
        QCOMPARE(tradedTwo.allocated(), keptTwo.allocated());
    }

    void transformerEngineRunsCudnnAttentionOnHopper()
    {
        // Transformer Engine picks cuDNN's fused attention on sm90 (get_attention_backend), which the FlashAttention-3
        // paper measures at 1.6x FlashAttention-2 on the H100; PyTorch's SDPA keeps FlashAttention-2 there.
        QCOMPARE(loadCluster("h100-sxm", 1, 8).device.fused_attention_speedup, 1.6);
        QCOMPARE(loadCluster("h200", 1, 8).device.fused_attention_speedup, 1.6);
        QCOMPARE(loadCluster("a100-80g", 1, 8).device.fused_attention_speedup, 0.0);
        QVERIFY(frameworkProfile(Framework::MegatronCore).vendor_fused_attention);
        QVERIFY(frameworkProfile(Framework::NeMo).vendor_fused_attention);
        QVERIFY(!frameworkProfile(Framework::Torchtitan).vendor_fused_attention);
        QVERIFY(!frameworkProfile(Framework::DeepSpeed).vendor_fused_attention);

        // In a block, only the attention kernel's share speeds up: forward and backward both by the ratio.
        const PresetBlock b("llama3-8b", 4096);
        LayerLayout fa2;
        LayerLayout none = fa2;
        none.attention_speedup = 1e12;
        LayerLayout cudnn = fa2;
        cudnn.attention_speedup = 1.6;
        const LayerCost base = b.cost(fa2);
        const LayerCost noAttention = b.cost(none);
        const LayerCost fused = b.cost(cudnn);
        const double attentionFwd = base.forward - noAttention.forward;
        const double attentionBwd = base.backward_input - noAttention.backward_input;
        QVERIFY(attentionFwd > 0 && attentionBwd > 2 * attentionFwd);
        QVERIFY(relativeError(fused.forward, noAttention.forward + attentionFwd / 1.6) < 1e-9);
        QVERIFY(relativeError(fused.backward_input, noAttention.backward_input + attentionBwd / 1.6) < 1e-9);

        // The cost model applies the ratio for Megatron-Core on an H100 and not on an A100 or for torchtitan.
        const auto graph = presetGraph("llama3-8b", 4096);
        ParallelConfig c;
        c.framework = Framework::MegatronCore;
        FrameworkProfile withoutCudnn = frameworkProfile(Framework::MegatronCore);
        withoutCudnn.vendor_fused_attention = false;
        const double h100Gain
            = evaluatePartOfNode(graph, c, withoutCudnn).step_time - evaluatePartOfNode(graph, c).step_time;
        const double layers = static_cast<double>(graph->transformer->num_layers);
        QVERIFY(relativeError(h100Gain, layers * (attentionFwd + attentionBwd) * (1 - 1 / 1.6)) < 1e-6);
        Workload workload;
        workload.memory_limit_bytes = 1e15;
        EvaluateOptions part;
        part.require_full_cluster = false;
        CostModel a100(graph, loadCluster("a100-80g", 1, 8));
        const double a100Fused = a100.evaluate(c, workload, part).step_time;
        a100.overrideFrameworkProfile(withoutCudnn);
        QCOMPARE(a100.evaluate(c, workload, part).step_time, a100Fused);
    }

    void transformerEngineFp8CastsInTheNormAndCachesWeights()
    {
        // Transformer Engine's LayerNormLinear takes the FP8 input from the norm kernel: Q, K, V, gate and up lose
        // their input casts (5 B per element of the tokens x hidden input each: the amax read, the cast read and the
        // 1-byte write). Its FP8 weights are cast on a step's first micro-batch only.
        const std::int64_t seq = 4096;
        const PresetBlock b("llama3-8b", seq);
        LayerLayout fp8;
        fp8.fp8_linears = true;
        LayerLayout inNorm = fp8;
        inNorm.fp8_cast_in_norm = true;
        const double hbm = 3.35e12 * CostParams {}.memory_efficiency;
        const double inputCast = 5.0 * static_cast<double>(seq) * 4096 / hbm;
        QVERIFY(relativeError(b.cost(fp8).forward - b.cost(inNorm).forward, 5 * inputCast) < 1e-9);
        QCOMPARE(b.cost(fp8).backward_input, b.cost(inNorm).backward_input);
        // Weight casts: 5 B per element of every linear weight of the block, per micro-batch.
        const double linearWeights = 4096.0 * (4096 + 1024 + 1024 + 4096) + 3.0 * 4096 * 14336;
        QVERIFY(relativeError(b.cost(fp8).fp8_weight_cast, 5 * linearWeights / hbm) < 1e-9);

        // Over a step of m micro-batches the cached weights save (m - 1) casts per block.
        const auto graph = presetGraph("llama3-8b", seq);
        ParallelConfig c;
        c.framework = Framework::MegatronCore;
        c.fp8_linears = true;
        c.num_microbatches = 8;
        FrameworkProfile uncached = frameworkProfile(Framework::MegatronCore);
        uncached.fp8_weight_cached_per_step = false;
        const double saved = evaluatePartOfNode(graph, c, uncached).step_time - evaluatePartOfNode(graph, c).step_time;
        const double layers = static_cast<double>(graph->transformer->num_layers);
        QVERIFY(relativeError(saved, 7 * layers * 5 * linearWeights / hbm) < 1e-6);
    }

    void megatronRunsQkvAndGateUpAsOneGemm()
    {
        // Megatron's linear_qkv and linear_fc1 are one GEMM each (attention.py, mlp.py); the graph lists Q, K, V and
        // gate, up apart. Under TP 8 Llama 3 70B's K and V are 128 columns wide: alone, they run far below the rate
        // of the fused 1280-column GEMM.
        const std::int64_t seq = 4096;
        const PresetBlock b("llama3-70b", seq);
        LayerLayout apart;
        apart.tp = 8;
        apart.tp_group = {8, 8};
        LayerLayout fused = apart;
        fused.fused_column_gemms = true;
        const CostSource& src = *b.source;
        const double m = static_cast<double>(seq), h = 8192, kv = 1024 / 8.0, q = 8192 / 8.0, ffn = 28672 / 8.0;
        const DType bf16 = DType::BF16;
        const double separate
            = src.matmulTime(m, q, h, bf16) + 2 * src.matmulTime(m, kv, h, bf16) + 2 * src.matmulTime(m, ffn, h, bf16);
        const double together = src.matmulTime(m, q + 2 * kv, h, bf16) + src.matmulTime(m, 2 * ffn, h, bf16);
        QVERIFY(separate > together);
        QVERIFY(relativeError(b.cost(apart).forward - b.cost(fused).forward, separate - together) < 1e-9);
        QVERIFY(frameworkProfile(Framework::MegatronCore).fused_column_gemms);
        QVERIFY(!frameworkProfile(Framework::Torchtitan).fused_column_gemms);
    }

    void fsdpPeakIsTheWorstLayerNotASumOfMaxima()
    {
        // Under FSDP2 a stage's peak beside the saved activations is one layer's: its own bf16 parameters, the
        // neighbour being gathered, and the larger of its working set and its unsharded gradients (bf16 + the fp32
        // reduce-scatter copy), since post_backward reduce-scatters after autograd has freed the layer's backward
        // inputs; plus the forward's last gather, which wait_for_unshard keeps until the next forward. For Llama 3 8B
        // that layer is the untied head: 2 Ph (own) + 2 Pb (the last block) + max(loss working, 6 Ph) + 2 Ph.
        const auto graph = presetGraph("llama3-8b", 2048);
        CostModel model(graph, h100Node());
        ParallelConfig c;
        c.framework = Framework::Torchtitan;
        c.zero_stage = 3;
        c.dp = 8;
        c.recompute = RecomputeKind::Selective;
        Workload workload;
        workload.memory_limit_bytes = 1e15;
        const Evaluation e = model.evaluate(c, workload);
        QVERIFY2(e.feasible, e.reason.c_str());
        const auto& t = *graph->transformer;
        const double head = static_cast<double>(t.vocab) * t.hidden + t.hidden; // output and the final norm
        const double block = t.hidden * (2.0 * t.hidden + 2.0 * t.num_kv_heads * t.head_dim)
            + 3.0 * t.hidden * t.ffn_hidden + 2.0 * t.hidden;
        double largest = 0;
        for (std::size_t l = 0; l < model.layers().size(); ++l)
            largest = std::max(largest, model.layerCost(l, c).largest_activation_bytes);
        const double headWorking = model.layerCost(model.layers().size() - 1, c).working_bytes;
        const double expected = CostParams {}.transient_mem_coef * largest + 2 * head + 2 * block
            + std::max(headWorking, 6 * head) + 2 * head;
        const double transient = e.stages.front().memory.transient;
        QVERIFY2(relativeError(transient, expected) < 1e-9, qPrintable(QString::number(transient / expected)));
        // Summing the stage's largest working set with two gathered heads and their gradients would count the loss
        // working set and the head's gradient copies at once.
        QVERIFY(transient < CostParams {}.transient_mem_coef * largest + headWorking + 2 * (2 * head) + 6 * head);
    }

    void torchtitanSpSavesTheGatheredInput()
    {
        // torchtitan's DTensor TP all-gathers the norm's sequence shard before attention and feed_forward, and the
        // colwise matmuls save the gathered tensor: without recomputation a block keeps two full-sequence h-wide
        // tensors where Megatron keeps their shards (it gathers again in backward). The head keeps the gathered
        // final-norm output the same way. Full recomputation stashes only block inputs: no change there.
        const auto graph = presetGraph("llama3-8b", 2048);
        CostModel gathered(graph, h100Node());
        CostModel shards(graph, h100Node()); // overrideFrameworkProfile must come before any evaluation
        FrameworkProfile shardProfile = frameworkProfile(Framework::Torchtitan);
        shardProfile.sp_saves_gathered_inputs = false;
        shards.overrideFrameworkProfile(shardProfile);
        ParallelConfig c;
        c.framework = Framework::Torchtitan;
        c.tp = 4;
        c.sequence_parallel = true;
        c.recompute = RecomputeKind::None;
        const auto block = static_cast<std::size_t>(&firstBlock(gathered) - gathered.layers().data());
        const auto head = gathered.layers().size() - 1;
        const LayerCost gatheredBlock = gathered.layerCost(block, c);
        const LayerCost gatheredHead = gathered.layerCost(head, c);
        const LayerCost shardBlock = shards.layerCost(block, c);
        const LayerCost shardHead = shards.layerCost(head, c);
        c.recompute = RecomputeKind::Full;
        const double gatheredFull = gathered.layerCost(block, c).activation_bytes;
        const double shardFull = shards.layerCost(block, c).activation_bytes;
        const double hTensor = 2048.0 * graph->transformer->hidden * 2;
        const double extra = hTensor * (1 - 1.0 / 4);
        QVERIFY2(relativeError(gatheredBlock.activation_bytes - shardBlock.activation_bytes, 2 * extra) < 1e-9,
                 qPrintable(QString::number((gatheredBlock.activation_bytes - shardBlock.activation_bytes) / extra)));
        QVERIFY(relativeError(gatheredHead.activation_bytes - shardHead.activation_bytes, extra) < 1e-9);
        QCOMPARE(gatheredFull, shardFull);
    }

    void torchtitanBeforeRootSplitKeepsTheEmbeddingGathered()
    {
        // Before pytorch/torchtitan#1094 the root FSDP unit held the embedding with the norm and output, and FSDP2
        // never reshards the root after forward; the last block stayed gathered too. At the step's peak each rank
        // then holds, beyond today's gathered norm and output, the whole bf16 embedding and one block: 2 B each.
        const auto graph = presetGraph("llama3-8b", 4096);
        Cluster cluster = h100Node();
        CostModel today(graph, cluster);
        CostModel before(graph, cluster);
        FrameworkProfile old = frameworkProfile(Framework::Torchtitan);
        old.fsdp_root_keeps_embedding = true;
        before.overrideFrameworkProfile(old);
        ParallelConfig c;
        c.framework = Framework::Torchtitan;
        c.dp = 8;
        c.zero_stage = 3;
        c.micro_batch = 1;
        c.recompute = RecomputeKind::Full;
        Workload w;
        w.global_batch = 8;
        w.seq_len = 4096;
        const Evaluation a = today.evaluate(c, w);
        const Evaluation b = before.evaluate(c, w);
        const auto& t = *graph->transformer;
        const double embedding = static_cast<double>(t.vocab) * t.hidden;
        // q and o h x h, k and v h x (h kv / heads), three MLP matrices, two RMSNorm weights.
        const double block = 2.0 * t.hidden * t.hidden * (1 + static_cast<double>(t.num_kv_heads) / t.num_heads)
            + 3.0 * t.hidden * t.ffn_hidden + 2.0 * t.hidden;
        const double expected = 2 * (embedding + block);
        const double grew = b.stages.front().memory.allocated() - a.stages.front().memory.allocated();
        QVERIFY2(relativeError(grew, expected) < 1e-9,
                 qPrintable(QString("%1 GB vs %2 GB").arg(grew / 1e9).arg(expected / 1e9)));
        // Under pipeline parallelism torchtitan keeps every unit gathered anyway: nothing changes.
        c.dp = 4;
        c.pp = 2;
        c.num_microbatches = 2;
        w.global_batch = 8;
        QCOMPARE(before.evaluate(c, w).stages.front().memory.allocated(),
                 today.evaluate(c, w).stages.front().memory.allocated());
    }

    void torchtitanCompiledLossKeepsTheLogits()
    {
        // torchtitan compiles the loss with the model (build_cross_entropy_loss): Inductor saves the 16-bit logits
        // and per-row statistics (2 B per logit) in place of the fp32 log-softmax (4), and its fused backward
        // writes a 16-bit gradient (2) where eager F.cross_entropy on an fp32 upcast holds 8 (the TP case:
        // torchtitanEagerLossParallelHoldsMore).
        const auto graph = presetGraph("llama3-8b", 1024);
        CostModel model(graph, h100Node());
        const auto headIndex = model.layers().size() - 1;
        QCOMPARE(model.layers()[headIndex].kind, LayerKind::Head);
        const double logits = 1024.0 * graph->transformer->vocab;
        ParallelConfig c;
        c.framework = Framework::Torchtitan;
        c.eager_kernels = true;
        const LayerCost eager = model.layerCost(headIndex, c);
        c.eager_kernels = false;
        const LayerCost compiled = model.layerCost(headIndex, c);
        QVERIFY2(relativeError(eager.activation_bytes - compiled.activation_bytes, 2 * logits) < 1e-9,
                 qPrintable(QString::number((eager.activation_bytes - compiled.activation_bytes) / logits)));
        QVERIFY(relativeError(eager.working_bytes, 8 * logits) < 1e-9);
        QVERIFY(relativeError(compiled.working_bytes, 2 * logits) < 1e-9);
        // A framework that does not compile its loss keeps its own figures with a compiled model: Megatron's 2.
        ParallelConfig megatron;
        megatron.framework = Framework::MegatronCore;
        QVERIFY(relativeError(model.layerCost(headIndex, megatron).working_bytes, 2 * logits) < 1e-9);
    }

    void stashMatchesTheMeasuredLayer()
    {
        // One torchtitan Llama 3 layer (8B and 70B widths, micro-batch 1-4, 2k-8k tokens), measured on an H100 by
        // tests/gpu/layer_probe.py: memory allocated after the forward minus before it. The engine's stash must
        // match within 1% for every torchtitan mode it simulates (none, full, per-op SAC), eager and compiled (a
        // compiled block does not save silu(gate)).
        std::ifstream in(SHARDSCAPE_SOURCE_DIR "/tests/data/measured_layers_h100.json");
        QVERIFY(in.good());
        const auto doc = nlohmann::json::parse(in);
        const auto cluster = h100Node();
        int compared = 0;
        for (const auto& row : doc.at("rows")) {
            const std::string mode = row.at("recompute");
            if (row.value("gqa", false) || (mode != "none" && mode != "full" && mode != "op-sac"))
                continue;
            BuildOptions options;
            options.seq_len = row.at("seq_len");
            CostModel model(std::make_shared<const ModelGraph>(loadModel(row.at("width"), options)), cluster);
            ParallelConfig c;
            c.framework = Framework::Torchtitan;
            c.eager_kernels = !row.value("compiled", false);
            c.micro_batch = row.at("micro_batch");
            c.recompute = mode == "none" ? RecomputeKind::None
                : mode == "full"         ? RecomputeKind::Full
                                         : RecomputeKind::Selective;
            const auto index = static_cast<std::size_t>(&firstBlock(model) - model.layers().data());
            const double measured = row.at("stash_bytes");
            const double predicted = model.layerCost(index, c).activation_bytes;
            QVERIFY2(relativeError(predicted, measured) < 0.01,
                     qPrintable(QString("%1 mb %2 seq %3 %4: predicted %5, measured %6")
                                    .arg(QString::fromStdString(row.at("width").get<std::string>()))
                                    .arg(c.micro_batch)
                                    .arg(options.seq_len)
                                    .arg(QString::fromStdString(mode))
                                    .arg(predicted)
                                    .arg(measured)));
            ++compared;
        }
        QCOMPARE(compared, 58);
    }

    void fullRecomputeWorkingSetIsTheBlockStash()
    {
        // While a fully recomputed block runs backward, everything it would have saved is alive again.
        const auto graph = korthikantiGraph();
        const auto producer = graph->producers();
        const auto layers = layersByModule(*graph);
        const Layer* block = &firstBlock(layers);
        const auto source = makeDatasheetCostSource(h100Node(), {});
        LayerLayout layout;
        layout.micro_batch = kBatch;
        const LayerCost kept = computeLayerCost(*graph, producer, *block, layout, *source);
        layout.recompute = RecomputeKind::Full;
        const LayerCost full = computeLayerCost(*graph, producer, *block, layout, *source);
        QVERIFY(full.activation_bytes < kept.activation_bytes / 10);
        QVERIFY(relativeError(full.working_bytes, kept.activation_bytes - full.activation_bytes) < 1e-12);
        QCOMPARE(kept.working_bytes, 0.0);
    }

    void hierarchicalLatencyIsNotShared()
    {
        // Across 128 nodes x 8 GPUs each NIC's ring still takes 127 steps: a tiny all-gather costs
        // 7 NVLink + 127 network latencies (it was 7 + 127 / 8).
        const Cluster cluster = h100Node(128);
        const auto source = makeDatasheetCostSource(cluster, {});
        const double t = source->collectiveTime(Collective::AllGather, 8.0 * 1024, {1024, 8});
        const double latency = 7 * cluster.device.intra_node.latency + 127 * cluster.device.inter_node.latency;
        QVERIFY(t >= latency);
        QVERIFY(relativeError(t, latency) < 0.01);
    }

    void deepSpeedZero3ExposesMoreThanFsdp()
    {
        // Same model and layout: DeepSpeed prefetches only a 5e7-element bucket and gathers again for the
        // recomputed forward, FSDP the whole next block; both report what is exposed in time.sharded_dp.
        BuildOptions options;
        options.seq_len = 2048;
        const auto graph = std::make_shared<const ModelGraph>(loadModel("llama2-70b", options));
        CostModel model(graph, h100Node(64));
        ParallelConfig config;
        config.dp = 512;
        config.zero_stage = 3;
        config.recompute = RecomputeKind::Full;
        Workload workload;
        workload.memory_limit_bytes = 1e15;
        config.framework = Framework::Torchtitan;
        const Evaluation fsdp = model.evaluate(config, workload);
        config.framework = Framework::DeepSpeed;
        const Evaluation ds = model.evaluate(config, workload);
        QVERIFY2(fsdp.feasible && ds.feasible, (fsdp.reason + ds.reason).c_str());
        QVERIFY(fsdp.time.sharded_dp > 0);
        QVERIFY(ds.time.sharded_dp > 1.5 * fsdp.time.sharded_dp);
        QVERIFY(ds.step_time > fsdp.step_time);
    }

    void deepSpeedBf16PipelineKeepsFp32Grads_data()
    {
        QTest::addColumn<bool>("bf16");
        QTest::addColumn<int>("zero");
        QTest::addColumn<double>("gradBytes");
        QTest::addColumn<double>("optimizerBytes");
        // At ZeRO stage 0 DeepSpeed runs bf16 pipelines through BF16_Optimizer: the bf16 .grad and an fp32
        // accumulation buffer of every parameter of the stage, and the fp32 master and Adam states sharded over the
        // data-parallel ranks (here 8). At stage 1 with the default bf16 grad_accum_dtype it runs ZeRO-1 with bf16
        // gradients, as it does fp16.
        QTest::newRow("bf16 zero0") << true << 0 << 6.0 << 12.0 / 8;
        QTest::newRow("bf16 zero1") << true << 1 << 2.0 << 12.0 / 8;
        QTest::newRow("fp16 zero1") << false << 1 << 2.0 << 12.0 / 8;
    }
    void deepSpeedBf16PipelineKeepsFp32Grads()
    {
        QFETCH(bool, bf16);
        QFETCH(int, zero);
        QFETCH(double, gradBytes);
        QFETCH(double, optimizerBytes);
        BuildOptions options;
        options.seq_len = 1024;
        options.dtype = bf16 ? DType::BF16 : DType::F16;
        const auto graph = std::make_shared<const ModelGraph>(loadModel("llama2-7b", options));
        CostModel model(graph, h100Node(2));
        ParallelConfig config;
        config.pp = 2;
        config.dp = 8;
        config.num_microbatches = 4;
        config.zero_stage = zero;
        config.framework = Framework::DeepSpeed;
        Workload workload;
        workload.memory_limit_bytes = 1e15;
        const Evaluation e = model.evaluate(config, workload);
        QVERIFY2(e.feasible, e.reason.c_str());
        for (const auto& stage : e.stages) {
            const double params = stage.memory.weights / 2; // 16-bit weights, unsharded below ZeRO-3
            QVERIFY(relativeError(stage.memory.gradients, gradBytes * params) < 1e-12);
            QVERIFY(relativeError(stage.memory.optimizer, optimizerBytes * params) < 1e-12);
        }
    }

    /**
     * DeepSpeed's BF16_Optimizer under a pipeline: every micro-batch's backward ends by folding the bf16 gradients
     * into the fp32 buffers (hp.add_(lp.to(fp32)): 2 + 4 + 4 + 4 + 4 = 18 B per parameter through HBM), and after
     * the flush the engine all-reduces the fp32 buffers (cast to its bf16 communication dtype on the way) and
     * step() all-gathers the updated bf16 weights.
     */
    void deepSpeedBf16PipelineFoldsAndAllReducesFp32Grads()
    {
        ParallelConfig config;
        config.pp = 2;
        config.dp = 2;
        config.num_microbatches = 4;
        config.zero_stage = 0; // where DeepSpeed picks BF16_Optimizer for bf16 pipelines
        const auto graph = presetGraph("llama2-7b", 1024);
        const Evaluation e = evaluateDeepSpeed(graph, config);
        const Evaluation without
            = evaluateDeepSpeed(graph, config, deepSpeedWithout(&FrameworkProfile::pipeline_bf16_fp32_grads));
        QVERIFY2(e.feasible && without.feasible, (e.reason + without.reason).c_str());
        const Cluster cluster = h100Node();
        const double hbm = cluster.device.hbm_bandwidth * CostParams {}.memory_efficiency;
        for (std::size_t s = 0; s < e.stages.size(); ++s) {
            const double params = e.stages[s].memory.weights / 2;
            QVERIFY(relativeError(e.stages[s].compute - without.stages[s].compute, 18 * params / hbm) < 1e-9);
        }
        // Stage 0 runs the last backward, so its sync is what the step waits for.
        const double params = e.stages.front().memory.weights / 2;
        const auto source = makeDatasheetCostSource(cluster, {});
        const double sync = source->collectiveTime(Collective::AllReduce, 2 * params, {2, 2})
            + source->collectiveTime(Collective::AllGather, 2 * params, {2, 2});
        QVERIFY2(relativeError(e.time.dp_exposed, sync) < 1e-9,
                 (std::to_string(e.time.dp_exposed) + " vs " + std::to_string(sync)).c_str());
    }

    void deepSpeedPipelineKeepsStageOutputs_data()
    {
        QTest::addColumn<int>("tp");
        // Without tensor parallelism DeepSpeed's pipe_buffers hold each in-flight micro-batch's whole output and the
        // received input beside the clone the forward runs on; with it, the output's 1/tp partition only.
        QTest::newRow("tp1") << 1;
        QTest::newRow("tp2") << 2;
    }
    void deepSpeedPipelineKeepsStageOutputs()
    {
        QFETCH(int, tp);
        const auto graph = presetGraph("llama2-7b", 2048);
        ParallelConfig config;
        config.tp = tp;
        config.pp = 4;
        config.num_microbatches = 8;
        config.zero_stage = 1;
        const Evaluation e = evaluateDeepSpeed(graph, config);
        const Evaluation without
            = evaluateDeepSpeed(graph, config, deepSpeedWithout(&FrameworkProfile::pipeline_keeps_stage_io));
        QVERIFY2(e.feasible && without.feasible, (e.reason + without.reason).c_str());
        const double hidden = 2.0 * 2048 * graph->transformer->hidden; // one sequence's residual stream in bf16
        for (std::size_t s = 0; s < e.stages.size(); ++s) {
            const bool first = s == 0;
            const bool last = s + 1 == e.stages.size();
            const double perMicrobatch = (last ? 0 : hidden / tp) + (tp == 1 && !first ? hidden : 0);
            const double added = e.stages[s].memory.activations - without.stages[s].memory.activations;
            QVERIFY2(std::abs(added - perMicrobatch * e.stages[s].peak_inflight) <= 1e-6 * hidden,
                     (std::to_string(s) + ": " + std::to_string(added)).c_str());
        }
    }

    void pipelineP2pBlocksWhereTheFrameworkWaits_data()
    {
        QTest::addColumn<int>("framework");
        QTest::addColumn<int>("vpp");
        QTest::addColumn<bool>("blocks");
        // DeepSpeed's pipe/p2p.py send/recv are synchronous; Megatron waits on its 1F1B requests and overlaps the
        // interleaved schedule's (overlap_p2p_comm); PyTorch pipelining's sends are isend, waited for later.
        QTest::newRow("deepspeed 1f1b") << int(Framework::DeepSpeed) << 1 << true;
        QTest::newRow("megatron 1f1b") << int(Framework::MegatronCore) << 1 << true;
        QTest::newRow("megatron interleaved") << int(Framework::MegatronCore) << 2 << false;
        QTest::newRow("torchtitan 1f1b") << int(Framework::Torchtitan) << 1 << false;
    }
    void pipelineP2pBlocksWhereTheFrameworkWaits()
    {
        QFETCH(int, framework);
        QFETCH(int, vpp);
        QFETCH(bool, blocks);
        BuildOptions options;
        options.seq_len = 2048;
        const auto graph = std::make_shared<const ModelGraph>(loadModel("llama2-7b", options));
        CostModel model(graph, h100Node(4)); // pp across nodes: every send crosses InfiniBand
        ParallelConfig config;
        config.pp = 4;
        config.dp = 8;
        config.vpp = vpp;
        config.schedule = vpp > 1 ? ScheduleKind::Interleaved1F1B : ScheduleKind::OneFOneB;
        config.num_microbatches = 8;
        config.framework = static_cast<Framework>(framework);
        config.zero_stage = config.framework == Framework::Torchtitan ? 3 : 1; // FSDP2 only there
        const Evaluation e = evaluateWithTimeline(model, config);
        QVERIFY2(e.feasible, e.reason.c_str());
        // Rank 0's first send, and the compute it runs next.
        const TimelineEvent* send = firstSendForward(e);
        QVERIFY(send);
        QVERIFY(send->duration > 0);
        double nextCompute = 1e300;
        for (const auto& ev : e.simulation->events)
            if (ev.rank == 0 && ev.stream == 0 && ev.start >= send->start && ev.kind == EventKind::Forward)
                nextCompute = std::min(nextCompute, ev.start);
        QVERIFY(nextCompute < 1e300);
        const double sendEnd = send->start + send->duration;
        if (blocks)
            QVERIFY(nextCompute >= sendEnd - 1e-12);
        else
            QVERIFY(nextCompute < sendEnd);
    }

    /** A cluster's measured link efficiency (nccl-tests busbw / line rate) replaces the default for that link. */
    void measuredLinkEfficiencyReplacesTheDefault()
    {
        Cluster cluster = loadCluster("a100-80g", 4, 8);
        const double bytes = 1e9;
        const auto defaults = makeDatasheetCostSource(cluster, {});
        const double line = cluster.device.inter_node.bandwidth;
        const double latency = cluster.device.inter_node.latency;
        QVERIFY(relativeError(defaults->p2pTime(bytes, true),
                              bytes / (line * CostParams {}.inter_node_efficiency) + latency)
                < 1e-12);
        cluster.device.inter_node.efficiency = 0.295;
        const auto measured = makeDatasheetCostSource(cluster, {});
        QVERIFY(relativeError(measured->p2pTime(bytes, true), bytes / (line * 0.295) + latency) < 1e-12);
        // One rank per node: 2 (n - 1) / n of the bytes over each node's link, and the tree's 2 log2(n) latencies.
        const double allReduce = measured->collectiveTime(Collective::AllReduce, bytes, {4, 1});
        QVERIFY2(relativeError(allReduce, 1.5 * bytes / (line * 0.295) + 4 * latency) < 1e-12,
                 std::to_string(allReduce).c_str());
        // NVLink keeps the default.
        QCOMPARE(measured->p2pTime(bytes, false), defaults->p2pTime(bytes, false));
    }

    void stageTransfersTravelAsTheFrameworkSendsThem_data()
    {
        QTest::addColumn<int>("framework");
        QTest::addColumn<bool>("partitioned");
        // DeepSpeed's pipeline engine sends each tensor-parallel rank's 1/tp PartitionedTensor slice and the receiver
        // all-gathers it over the TP group (pipe/engine.py is_pipe_partitioned); Megatron-Core sends the whole tensor.
        QTest::newRow("deepspeed") << int(Framework::DeepSpeed) << true;
        QTest::newRow("megatron") << int(Framework::MegatronCore) << false;
    }
    void stageTransfersTravelAsTheFrameworkSendsThem()
    {
        QFETCH(int, framework);
        QFETCH(bool, partitioned);
        const auto graph = presetGraph("llama2-7b", 2048);
        const Cluster cluster = h100Node(4);
        CostModel model(graph, cluster); // tp 2 x dp 4 fill a node: every stage boundary crosses InfiniBand
        ParallelConfig config;
        config.tp = 2;
        config.pp = 4;
        config.dp = 4;
        config.num_microbatches = 8;
        config.zero_stage = 1;
        config.framework = static_cast<Framework>(framework);
        const Evaluation e = evaluateWithTimeline(model, config);
        QVERIFY2(e.feasible, e.reason.c_str());
        const TimelineEvent* send = firstSendForward(e);
        QVERIFY(send);
        const double bytes = 2.0 * 2048 * graph->transformer->hidden; // one sequence's residual stream in bf16
        const auto source = makeDatasheetCostSource(cluster, {});
        const double expected = partitioned
            ? source->p2pTime(bytes / 2, true) + source->collectiveTime(Collective::AllGather, bytes, {2, 2})
            : source->p2pTime(bytes, true);
        QVERIFY2(relativeError(send->duration, expected) < 1e-9,
                 (std::to_string(send->duration) + " vs " + std::to_string(expected)).c_str());
    }

    void expertAllToAllHidesUnderTheOtherMicroBatch()
    {
        // Megatron's --overlap-moe-expert-parallel-comm: a layer's four all-to-alls (dispatch and combine, forward
        // and backward) run under another micro-batch's compute of the same layer; at most the SM-sharing
        // fraction (CostParams::zero3_prefetch_overlap) of them hides.
        const Qwen3MoeBlock block = qwen3MoeBlock();
        const CostModel& model = *block.model;
        const std::size_t moeLayer = block.layer;
        ParallelConfig config;
        config.dp = 32;
        config.ep = 32;
        config.num_microbatches = 2;
        config.framework = Framework::MegatronCore;
        const LayerCost exposed = model.layerCost(moeLayer, config);
        config.moe_a2a_overlap = true;
        const LayerCost hidden = model.layerCost(moeLayer, config);
        const double a2a = exposed.other_comm;
        QVERIFY(a2a > 0);
        const double compute = exposed.forward + exposed.backward_input + exposed.backward_weight - a2a;
        const double expected = std::max(a2a * (1 - CostParams {}.zero3_prefetch_overlap), a2a - compute);
        QVERIFY2(relativeError(hidden.other_comm, expected) < 1e-12,
                 (std::to_string(hidden.other_comm) + " vs " + std::to_string(expected)).c_str());
        QVERIFY(
            relativeError(hidden.forward + hidden.backward_input + hidden.backward_weight, compute + hidden.other_comm)
            < 1e-12);
        // Megatron runs it in its combined 1F1B only: pp = 1 or interleaved; torchtitan does not have it.
        Workload workload;
        workload.memory_limit_bytes = 1e15;
        config.pp = 2;
        config.dp = 16;
        config.ep = 16;
        config.num_microbatches = 4;
        QVERIFY(model.evaluate(config, workload).reason.find("interleaved") != std::string::npos);
        config.pp = 1;
        config.dp = 32;
        config.ep = 32;
        config.framework = Framework::Torchtitan;
        config.zero_stage = 3;
        QVERIFY(model.evaluate(config, workload).reason.find("does not overlap expert all-to-alls")
                != std::string::npos);
    }

    void busiestExpertRankSetsThePace()
    {
        // Closed forms of the load factor: the sampling spread of top-k routing over ep ranks, the router's own
        // skew, and the capacity factor's cap.
        QCOMPARE(expertLoadFactor(0, 1, 1, 4096), 1.0);
        QVERIFY(relativeError(expertLoadFactor(0, 1, 8, 4096), 1 + std::sqrt(2 * std::log(8.0) / 4096)) < 1e-12);
        QCOMPARE(expertLoadFactor(0, 1.5, 8, 4096), 1.5);
        QCOMPARE(expertLoadFactor(1.25, 1.5, 8, 4096), 1.25);
        QCOMPARE(expertLoadFactor(0.5, 1, 1, 4096), 0.5); // capacity below the even share drops tokens anyway

        // Qwen3-30B-A3B, ep 32, seq 4096, micro-batch 1: 8 x 4096 routed copies per rank on average.
        const Qwen3MoeBlock block = qwen3MoeBlock();
        const CostModel& model = *block.model;
        const std::size_t moeLayer = block.layer;
        ParallelConfig config;
        config.dp = 32;
        config.ep = 32;
        config.framework = Framework::MegatronCore;
        const double spread = expertLoadFactor(0, 1, 32, 8.0 * 4096);
        const LayerCost even = model.layerCost(moeLayer, config);
        config.moe_router_imbalance = 2;
        const LayerCost skewed = model.layerCost(moeLayer, config);
        // The all-to-all's receive on the busiest rank, and the routed copies it stashes, scale with its load:
        // dispatch and combine, forward and backward, of 8 copies of [4096 x 2048] bf16 tokens.
        const auto a2a = [&](double load) {
            return 4 * model.source().collectiveTime(Collective::AllToAll, 8 * 4096.0 * 2048 * 2 * load, {32, 8});
        };
        QVERIFY(relativeError(even.other_comm, a2a(spread)) < 1e-12);
        QVERIFY(relativeError(skewed.other_comm, a2a(2)) < 1e-12);
        QVERIFY(skewed.activation_bytes > even.activation_bytes);
        QVERIFY(skewed.flops > even.flops);
        // A capacity factor of 1 drops what the busiest rank gets above its even share.
        config.moe_capacity_factor = 1;
        const LayerCost capped = model.layerCost(moeLayer, config);
        QVERIFY(relativeError(capped.other_comm, a2a(1)) < 1e-12);
        QVERIFY(capped.flops < even.flops);
        // torchtitan's experts are dropless.
        Workload workload;
        workload.memory_limit_bytes = 1e15;
        config.framework = Framework::Torchtitan;
        config.zero_stage = 3;
        const Evaluation e = model.evaluate(config, workload);
        QVERIFY2(e.reason.find("dropless") != std::string::npos, e.reason.c_str());
        config.framework = Framework::Generic;
        config.moe_router_imbalance = 0.5;
        QVERIFY(model.evaluate(config, workload).reason.find("router imbalance") != std::string::npos);
    }

    void sharedExpertRunsUnderTheAllToAlls()
    {
        // Megatron's --moe-shared-expert-overlap: DeepSeek-V3's shared expert runs on a side stream while the
        // routed tokens are dispatched and combined. GEMMs far longer than the all-to-alls hide them whole; instant
        // ones hide nearly nothing.
        BuildOptions options;
        options.seq_len = 4096;
        const auto graph = std::make_shared<const ModelGraph>(loadModel("deepseek-v3", options));
        const Cluster cluster = h100Node(8);
        const auto datasheet = makeDatasheetCostSource(cluster, {});
        ParallelConfig config;
        config.dp = 64;
        config.ep = 64;
        config.framework = Framework::MegatronCore;
        ParallelConfig overlapped = config;
        overlapped.moe_shared_expert_overlap = true;
        for (const double scale : {1e3, 1e-9}) {
            CostModel model(graph, cluster, {}, std::make_shared<ScaledGemmSource>(datasheet, scale));
            std::size_t moeLayer = 0;
            while (model.layerCost(moeLayer, config).other_comm <= 0)
                ++moeLayer;
            const LayerCost plain = model.layerCost(moeLayer, config);
            const LayerCost hidden = model.layerCost(moeLayer, overlapped);
            if (scale > 1) {
                QCOMPARE(hidden.other_comm, 0.0);
            } else {
                QVERIFY(hidden.other_comm < plain.other_comm);
                QVERIFY(hidden.other_comm > 0.9 * plain.other_comm);
            }
        }
        // Refused without a shared expert, together with the other all-to-all overlap, and for torchtitan.
        Workload workload;
        workload.memory_limit_bytes = 1e15;
        const Qwen3MoeBlock qwen = qwen3MoeBlock();
        ParallelConfig noShared = overlapped;
        noShared.dp = 32;
        noShared.ep = 32;
        QVERIFY(qwen.model->evaluate(noShared, workload).reason.find("no shared expert") != std::string::npos);
        CostModel model(graph, cluster);
        overlapped.moe_a2a_overlap = true;
        overlapped.num_microbatches = 2;
        QVERIFY(model.evaluate(overlapped, workload).reason.find("not both") != std::string::npos);
        overlapped.moe_a2a_overlap = false;
        overlapped.framework = Framework::Torchtitan;
        overlapped.zero_stage = 3;
        QVERIFY(model.evaluate(overlapped, workload).reason.find("--moe-shared-expert-overlap") != std::string::npos);
    }

    void dualPipeKeepsTwoCopiesAndSumsTheirGradients()
    {
        // DualPipe over 4 ranks (one H100 node, dp 1): rank r holds model stage r for one direction and stage 3 - r
        // for the other (DualPipe README: parameters 2x), and each stage's two copies sum their gradients
        // (example_dualpipe.py): an all-reduce between 2 ranks of one node, the same collective as 1F1B's gradient
        // all-reduce over dp 2 on that node, for the same stage.
        CostModel model(presetGraph("llama2-7b", 4096), h100Node());
        Workload workload;
        workload.global_batch = 8;
        workload.seq_len = 4096;
        workload.memory_limit_bytes = 1e15;
        EvaluateOptions timeline;
        timeline.record_timeline = true;
        timeline.require_full_cluster = false;
        ParallelConfig dual;
        dual.pp = 4;
        dual.vpp = 2;
        dual.num_microbatches = 8;
        dual.schedule = ScheduleKind::DualPipe;
        ParallelConfig oneF = dual;
        oneF.vpp = 1;
        oneF.schedule = ScheduleKind::OneFOneB;
        oneF.dp = 2;
        oneF.num_microbatches = 4;
        const Evaluation d = model.evaluate(dual, workload, timeline);
        const Evaluation o = model.evaluate(oneF, workload, timeline);
        QVERIFY2(d.step_time > 0 && o.step_time > 0, (d.reason + o.reason).c_str());
        for (int r = 0; r < 4; ++r) {
            const double both = o.stages[std::size_t(r)].memory.weights + o.stages[std::size_t(3 - r)].memory.weights;
            QCOMPARE(d.stages[std::size_t(r)].memory.weights, both);
        }
        const auto syncOf = [](const Evaluation& e, int stage) {
            for (const auto& event : e.simulation->events)
                if (event.kind == EventKind::GradSync && event.stage == stage)
                    return event.duration;
            return 0.0;
        };
        QVERIFY(syncOf(d, 1) > 0);
        QCOMPARE(syncOf(d, 1), syncOf(o, 1));
        QCOMPARE(syncOf(d, 6), syncOf(o, 1)); // stage 1 again, the other direction's copy on rank 2
        // Without DualPipe, dp 1 has nothing to sync.
        ParallelConfig single = oneF;
        single.dp = 1;
        single.num_microbatches = 8;
        QCOMPARE(syncOf(model.evaluate(single, workload, timeline), 1), 0.0);
    }

    void vPipelineSplitsByTime()
    {
        // Llama 3 70B (80 blocks, a 128k-vocabulary head worth about a block) on a ZB-V of 8 ranks: the even split
        // (5 blocks per chunk, the embedding and the head on rank 0) leaves rank 0 a head's time over the others.
        // Split by time, rank 0 gives up a block, no rank exceeds the even split's busiest, and every rank is within
        // one block of the others.
        CostModel model(presetGraph("llama3-70b", 1024), h100Node(8));
        Workload workload;
        workload.global_batch = 128;
        workload.seq_len = 1024;
        workload.memory_limit_bytes = 1e15;
        ParallelConfig config;
        config.tp = 4;
        config.pp = 8;
        config.vpp = 2;
        config.dp = 2;
        config.num_microbatches = 64;
        config.schedule = ScheduleKind::ZeroBubbleV;
        ParallelConfig even = config;
        even.stage_layers.assign(16, 5);
        even.stage_layers.front() += 1; // the embedding
        even.stage_layers.back() += 1; // the head
        const Evaluation split = model.evaluate(config, workload);
        const Evaluation plain = model.evaluate(even, workload);
        QVERIFY2(split.step_time > 0 && plain.step_time > 0, (split.reason + plain.reason).c_str());
        const auto busiest = [](const Evaluation& e) {
            double most = 0;
            for (const auto& stage : e.stages)
                most = std::max(most, stage.compute);
            return most;
        };
        const auto layersOn = [](const StageReport& stage) {
            int n = 0;
            for (const auto& [first, last] : stage.chunks)
                n += last - first + 1;
            return n;
        };
        QVERIFY(layersOn(split.stages.front()) < layersOn(plain.stages.front()));
        QVERIFY(busiest(split) <= busiest(plain));
        const double block = split.stages[1].compute / (layersOn(split.stages[1]));
        for (const auto& stage : split.stages)
            QVERIFY(busiest(split) - stage.compute <= 1.01 * block);
        QVERIFY(split.step_time <= plain.step_time);
    }

    void expertGroupedGemmPadsAndReadsWeights()
    {
        // Qwen3-30B-A3B: 128 experts of [2048 x 768], top-8. One device, no EP.
        // - 4,096 tokens: 256 rows per expert, whole 128-row tiles: the experts cost the plain GEMM time.
        // - 16 tokens: 128 token copies over 128 experts, one row each: every expert's matrices are read.
        const auto source = makeDatasheetCostSource(h100Node(), {});
        const auto expertsForward = [&](std::int64_t seq) {
            BuildOptions options;
            options.seq_len = seq;
            const auto graph = std::make_shared<const ModelGraph>(loadModel("qwen3-30b-a3b", options));
            const auto producer = graph->producers();
            const auto layers = layersByModule(*graph);
            const Layer experts = opsOfKind(*graph, layers, OpKind::MoeExperts);
            return computeLayerCost(*graph, producer, experts, LayerLayout {}, *source).forward;
        };
        const double rows = 4096.0 * 8;
        const double plain = source->matmulTime(3 * rows, 768, 2048, DType::BF16);
        QVERIFY(relativeError(expertsForward(4096), plain) < 1e-12);
        const double weights = source->memoryTime(128.0 * 3 * 2048 * 768 * 2);
        QVERIFY(relativeError(expertsForward(16), weights) < 1e-12);
    }

    void unfusedAttentionGemmsStreamTheScores_data()
    {
        QTest::addColumn<int>("tp");
        QTest::newRow("tp1") << 1;
        QTest::newRow("tp2") << 2;
    }

    void unfusedAttentionGemmsStreamTheScores()
    {
        // QK^T writes b x a x s x s scores and PV reads them back; with head_dim 64 that traffic, not the FLOPs,
        // bounds both GEMMs. Each moves q (or v), k (or the output) and the scores: per device
        // (2 b s h + b a s^2) x 2 bytes / tp, once forward and twice in backward.
        QFETCH(int, tp);
        const auto graph = korthikantiGraph();
        const auto producer = graph->producers();
        const auto layers = layersByModule(*graph);
        const auto source = makeDatasheetCostSource(h100Node(), {});
        LayerLayout layout;
        layout.tp = tp;
        layout.micro_batch = kBatch;
        const double bytes
            = (2.0 * kBatch * kSeq * kHidden + static_cast<double>(kBatch) * kHeads * kSeq * kSeq) * 2 / tp;
        for (const OpKind kind : {OpKind::AttentionScore, OpKind::AttentionContext}) {
            const Layer gemm = opsOfKind(*graph, layers, kind);
            QCOMPARE(gemm.ops.size(), std::size_t {1});
            const LayerCost cost = computeLayerCost(*graph, producer, gemm, layout, *source);
            QVERIFY(relativeError(cost.forward, source->memoryTime(bytes)) < 1e-12);
            QVERIFY(relativeError(cost.backward_input, source->memoryTime(2 * bytes)) < 1e-12);
        }
    }

    void convolutionRunsAsAnImplicitGemm()
    {
        // A ResNet 3x3 convolution, 256 -> 256 channels on 56 x 56, batch 8: cuDNN's implicit GEMM is
        // [8 x 56 x 56] x [256 x 3 x 3] @ [256 x 3 x 3] x [256]. Read as a linear's last two weight dimensions, the
        // weight [256, 256, 3, 3] would be a 3 x 3 GEMM thousands of times slower.
        ModelGraph g;
        g.name = "conv";
        g.batch = 8;
        g.seq_len = 1;
        const auto x = g.addTensor({"x", {8, 256, 56, 56}, DType::BF16, false, false});
        const auto w = g.addTensor({"conv.weight", {256, 256, 3, 3}, DType::BF16, true, false});
        const auto y = g.addTensor({"y", {8, 256, 56, 56}, DType::BF16, false, false});
        Op conv;
        conv.name = "conv";
        conv.module = "net.conv";
        conv.kind = OpKind::Conv;
        conv.inputs = {x};
        conv.outputs = {y};
        conv.params = {w};
        conv.saved = {x};
        const double m = 8.0 * 56 * 56, n = 256, k = 256.0 * 9;
        conv.flops_fwd = 2 * m * n * k;
        conv.flops_bwd_input = conv.flops_fwd;
        conv.flops_bwd_weight = conv.flops_fwd;
        g.addOp(conv);
        Layer layer;
        layer.name = "net.conv";
        layer.kind = LayerKind::Block;
        layer.ops = {0};
        LayerLayout layout;
        layout.micro_batch = 8;
        const auto source = makeDatasheetCostSource(h100Node(), {});
        const LayerCost cost = computeLayerCost(g, g.producers(), layer, layout, *source);
        QVERIFY(relativeError(cost.forward, source->matmulTime(m, n, k, DType::BF16)) < 1e-12);
        QVERIFY(relativeError(cost.backward_input, source->matmulTime(m, k, n, DType::BF16)) < 1e-12);
        QVERIFY(relativeError(cost.backward_weight, source->matmulTime(k, n, m, DType::BF16)) < 1e-12);
    }

    void expertTensorParallelFoldsTheExperts()
    {
        // Qwen3-30B-A3B on 16 GPUs, tp 2 with SP. Experts split by tp (etp 2) or whole on each rank (etp 1).
        BuildOptions options;
        options.seq_len = 4096;
        const auto graph = std::make_shared<const ModelGraph>(loadModel("qwen3-30b-a3b", options));
        const Cluster cluster = h100Node(2);
        CostModel model(graph, cluster);
        const std::size_t block = static_cast<std::size_t>(&firstBlock(model) - model.layers().data());
        ParallelConfig config;
        config.tp = 2;
        config.sequence_parallel = true;
        config.dp = 8;
        config.framework = Framework::MegatronCore;
        const double split = model.layerCost(block, config).other_comm;
        config.etp = 1;
        const double whole = model.layerCost(block, config).other_comm;
        // etp 2 all-gathers the routed tokens (top-8 copies of each rank's 2,048 tokens) over the pair before the
        // expert GEMMs and reduce-scatters after, forward and backward; etp 1 keeps each rank's tokens.
        const double routed = 4096.0 * 2048 * 2 * 8 / 2 * 2;
        const auto source = makeDatasheetCostSource(cluster, {});
        const double pair = source->collectiveTime(Collective::AllGather, routed, {2, 2})
            + source->collectiveTime(Collective::ReduceScatter, routed, {2, 2});
        QCOMPARE(whole, 0.0);
        QVERIFY2(relativeError(split, 2 * pair) < 1e-12,
                 (std::to_string(split) + " vs " + std::to_string(2 * pair)).c_str());
        // Memory: ep 8 x etp 1 folds over tp x dp = 16 ranks; each holds 16 of the 128 experts whole, and
        // their optimizer states shard over the 2 expert replicas.
        Workload workload;
        workload.memory_limit_bytes = 1e15;
        config.ep = 8;
        config.zero_stage = 1;
        const Evaluation e = model.evaluate(config, workload);
        QVERIFY2(e.feasible, e.reason.c_str());
        QCOMPARE(config.expertDp(), 2);
        double experts = 0;
        for (const auto& tensor : graph->tensors())
            if (tensor.is_param && tensor.name.find(".experts.") != std::string::npos)
                experts += static_cast<double>(tensor.elements());
        QVERIFY(e.stages.front().memory.weights > 2 * experts / 8);
        config.ep = 16; // ep x etp = 16 still folds; ep 32 does not
        QVERIFY(model.evaluate(config, workload).feasible);
        config.ep = 32;
        QVERIFY(model.evaluate(config, workload).reason.find("must divide tp x cp x dp") != std::string::npos);
    }

    void tiedEmbeddingGradsMeetAfterTheFlush()
    {
        // GPT-2 ties its input and output embeddings: with two pipeline ranks and no data parallelism the only
        // gradient sync is the tied all-reduce between them (vocab x hidden, fp16 gradients in DeepSpeed), and
        // DeepSpeed's pipeline engine runs it after the last backward: all of it is exposed.
        BuildOptions options;
        options.seq_len = 1024;
        options.dtype = DType::F16;
        const auto graph = std::make_shared<const ModelGraph>(loadModel("gpt2", options));
        QVERIFY(graph->transformer && graph->transformer->tied_embeddings);
        const Cluster cluster = h100Node();
        ParallelConfig config;
        config.pp = 2;
        config.num_microbatches = 4;
        config.zero_stage = 1;
        const Evaluation e = evaluateDeepSpeed(graph, config);
        QVERIFY2(e.feasible, e.reason.c_str());
        const double elements = static_cast<double>(graph->transformer->vocab * graph->transformer->hidden);
        const auto source = makeDatasheetCostSource(cluster, {});
        const double allReduce = source->collectiveTime(Collective::AllReduce, 2 * elements, {2, 2});
        QVERIFY(allReduce > 0);
        QVERIFY2(relativeError(e.time.dp_exposed, allReduce) < 1e-9,
                 (std::to_string(e.time.dp_exposed) + " vs " + std::to_string(allReduce)).c_str());
    }

    void frameworksBoundWhatRuns_data()
    {
        QTest::addColumn<int>("framework");
        QTest::addColumn<int>("zero");
        QTest::addColumn<int>("pp");
        QTest::addColumn<QString>("reason");
        const auto row = [](const char* name, Framework f, int zero, int pp, const char* reason) {
            QTest::newRow(name) << static_cast<int>(f) << zero << pp << QString(reason);
        };
        row("torchtitan has no zero1", Framework::Torchtitan, 1, 1, "torchtitan runs ZeRO stages 2, 3 only");
        row("deepspeed pipeline refuses zero2", Framework::DeepSpeed, 2, 2, "refuses ZeRO-2");
        row("composer has no pipeline", Framework::Composer, 3, 2, "composer has no pipeline parallelism");
        row("megatron runs zero1 pp2", Framework::MegatronCore, 1, 2, "");
    }
    void frameworksBoundWhatRuns()
    {
        QFETCH(int, framework);
        QFETCH(int, zero);
        QFETCH(int, pp);
        QFETCH(QString, reason);
        BuildOptions options;
        options.seq_len = 1024;
        const auto graph = std::make_shared<const ModelGraph>(loadModel("llama2-7b", options));
        CostModel model(graph, h100Node());
        ParallelConfig config;
        config.pp = pp;
        config.dp = 8 / pp;
        config.num_microbatches = 4;
        config.zero_stage = zero;
        config.framework = static_cast<Framework>(framework);
        const std::string problem = model.structuralProblem(config, {}, true);
        if (reason.isEmpty())
            QVERIFY2(problem.empty(), problem.c_str());
        else
            QVERIFY2(QString::fromStdString(problem).contains(reason), problem.c_str());
    }

    void oomRiskFollowsTheMemoryRange()
    {
        Evaluation e;
        e.config.framework = Framework::MegatronCore;
        e.stages.resize(1);
        e.stages[0].memory.weights = 60e9;
        e.step_time = 2;
        const ResidualBand& band = bandFor(calibrationResiduals().peak_memory, "megatron-core");
        const double high = 60e9 * (1 + std::max(0.0, band.high));
        e.memory_limit_bytes = 59e9;
        applyUncertainty(e, 4096, -1);
        QCOMPARE(e.oom_risk, OomRisk::Likely);
        e.memory_limit_bytes = high + 1e6;
        applyUncertainty(e, 4096, -1);
        QCOMPARE(e.oom_risk, OomRisk::Fits);
        applyUncertainty(e, 4096, high - 60e9 + 5e9); // more headroom asked for than the range leaves
        QCOMPARE(e.oom_risk, OomRisk::Tight);
        QVERIFY(e.peak_memory_range.low <= 60e9 && e.peak_memory_range.high >= 60e9);
        QVERIFY(e.step_time_range.low <= 2 && e.step_time_range.high >= 2);
        QCOMPARE(e.regime, std::string("data"));
    }

    void ringCollectivesFollowAlphaBeta()
    {
        CostParams params;
        const Cluster cluster = h100Node();
        const auto source = makeDatasheetCostSource(cluster, params);
        const double bytes = 1e9;
        const double bw = cluster.device.intra_node.bandwidth * params.intra_node_efficiency;
        const double lat = cluster.device.intra_node.latency;
        // All-reduce inside a node: 2 (n-1)/n S / B, with the tree's 2 log2(n) latency steps.
        QVERIFY(relativeError(source->collectiveTime(Collective::AllReduce, bytes, {8, 8}),
                              2 * 7.0 / 8 * bytes / bw + 2 * 3 * lat)
                < 1e-12);
        QVERIFY(
            relativeError(source->collectiveTime(Collective::AllGather, bytes, {4, 4}), 3.0 / 4 * bytes / bw + 3 * lat)
            < 1e-12);
        // Across 4 nodes with one rank each: the same on the NICs.
        const double nic = cluster.device.inter_node.bandwidth * params.inter_node_efficiency;
        QVERIFY(relativeError(source->collectiveTime(Collective::ReduceScatter, bytes, {4, 1}),
                              3.0 / 4 * bytes / nic + 3 * cluster.device.inter_node.latency)
                < 1e-12);
        // Hierarchical all-reduce over 2 nodes x 8: reduce-scatter in the node, all-reduce of 1/8 across, all-gather.
        const double hierarchical = (7.0 / 8 * bytes / bw + 7 * lat)
            + (2 * 0.5 * bytes / 8 / nic + 2 * cluster.device.inter_node.latency) + (7.0 / 8 * bytes / bw + 7 * lat);
        QVERIFY(relativeError(source->collectiveTime(Collective::AllReduce, bytes, {16, 8}), hierarchical) < 1e-12);
        QCOMPARE(source->collectiveTime(Collective::AllReduce, bytes, {1, 1}), 0.0);
    }

    void megatronLayerHasFourTpCollectives()
    {
        BuildOptions options;
        options.seq_len = 2048;
        const auto graph = std::make_shared<const ModelGraph>(loadModel("llama2-7b", options));
        CostModel model(graph, h100Node());
        const auto index = static_cast<std::size_t>(&firstBlock(model) - model.layers().data());
        const double activation = 2048.0 * 4096 * 2; // s x b x h x 2 bytes
        const GroupShape group {8, 8};
        ParallelConfig tp;
        tp.tp = 8;
        // Two all-reduces forward (after o_proj and down_proj), two backward (input grads of qkv and gate/up).
        QVERIFY(relativeError(model.layerCost(index, tp).tp_comm,
                              4 * model.source().collectiveTime(Collective::AllReduce, activation, group))
                < 1e-12);
        ParallelConfig sp = tp;
        sp.sequence_parallel = true;
        const double agrs = model.source().collectiveTime(Collective::AllGather, activation, group)
            + model.source().collectiveTime(Collective::ReduceScatter, activation, group);
        QVERIFY(relativeError(model.layerCost(index, sp).tp_comm, 4 * agrs) < 1e-12);
        ParallelConfig none;
        QCOMPARE(model.layerCost(index, none).tp_comm, 0.0);
    }

    void megatronBackwardTpCommRunsBesideItsGemms()
    {
        // Megatron's column-parallel backward (LinearWithGradAccumulationAndAsyncCommunication): the SP re-gather of
        // the saved input runs under the dgrad GEMM, the dgrad's all-reduce / reduce-scatter under the wgrad GEMM.
        // The row-parallel backward's all-gather (SP) and every forward collective still wait.
        BuildOptions options;
        options.seq_len = 2048;
        const auto graph = std::make_shared<const ModelGraph>(loadModel("llama2-7b", options));
        const Cluster cluster = h100Node();
        const auto datasheet = makeDatasheetCostSource(cluster, {});
        const double activation = 2048.0 * 4096 * 2;
        const GroupShape group {8, 8};
        const double ar = datasheet->collectiveTime(Collective::AllReduce, activation, group);
        const double ag = datasheet->collectiveTime(Collective::AllGather, activation, group);
        const double rs = datasheet->collectiveTime(Collective::ReduceScatter, activation, group);
        ParallelConfig tp;
        tp.tp = 8;
        tp.framework = Framework::MegatronCore;
        ParallelConfig sp = tp;
        sp.sequence_parallel = true;
        {
            // GEMMs far longer than the collectives: the backward keeps only the row-parallel all-gathers.
            CostModel model(graph, cluster, {}, std::make_shared<ScaledGemmSource>(datasheet, 1e3));
            const auto index = static_cast<std::size_t>(&firstBlock(model) - model.layers().data());
            QVERIFY(relativeError(model.layerCost(index, tp).tp_comm, 2 * ar) < 1e-12);
            QVERIFY(relativeError(model.layerCost(index, sp).tp_comm, 2 * (ag + rs) + 2 * ag) < 1e-12);
        }
        {
            // Instant GEMMs hide nothing, and the SP re-gathers come on top of what a synchronous backward pays.
            CostModel model(graph, cluster, {}, std::make_shared<ScaledGemmSource>(datasheet, 1e-9));
            const auto index = static_cast<std::size_t>(&firstBlock(model) - model.layers().data());
            QVERIFY(relativeError(model.layerCost(index, tp).tp_comm, 4 * ar) < 1e-6);
            QVERIFY(relativeError(model.layerCost(index, sp).tp_comm, 4 * (ag + rs) + 2 * ag) < 1e-6);
        }
        // Megatron-LM before the async all-reduce (2021-09) waited for it: the profile override restores that.
        CostModel model(graph, cluster, {}, std::make_shared<ScaledGemmSource>(datasheet, 1e3));
        FrameworkProfile sync = frameworkProfile(Framework::MegatronCore);
        sync.tp_backward_comm_async = false;
        model.overrideFrameworkProfile(sync);
        const auto index = static_cast<std::size_t>(&firstBlock(model) - model.layers().data());
        QVERIFY(relativeError(model.layerCost(index, tp).tp_comm, 4 * ar) < 1e-12);
    }

    /**
     * torchtitan's vocabulary-parallel loss (loss_parallel, on with TP) run op by op by DTensor's handlers holds
     * 12 B per logit beside the saved log-softmax at its backward (grad_input, grad_input + exp(x), the product)
     * where the fused cross-entropy holds 8; compiled (torchtitan compiles it with the model), Inductor's fused
     * backward holds only the 16-bit gradient: 2.
     */
    void torchtitanEagerLossParallelHoldsMore()
    {
        const auto graph = presetGraph("llama2-7b", 1024);
        CostModel model(graph, h100Node());
        const std::size_t head = model.layers().size() - 1;
        ParallelConfig config;
        config.tp = 2;
        config.dp = 4;
        config.zero_stage = 3;
        config.framework = Framework::Torchtitan;
        const double logits = 1024.0 * graph->transformer->vocab / config.tp;
        config.eager_kernels = true;
        const double eager = model.layerCost(head, config).working_bytes;
        config.eager_kernels = false;
        const double compiled = model.layerCost(head, config).working_bytes;
        QVERIFY2(relativeError(eager, 12 * logits) < 1e-9, std::to_string(eager / logits).c_str());
        QVERIFY2(relativeError(compiled, 2 * logits) < 1e-9, std::to_string(compiled / logits).c_str());
        // Without TP there is no loss_parallel: the fused path, eager or not.
        config.tp = 1;
        config.dp = 8;
        config.eager_kernels = true;
        QVERIFY(relativeError(model.layerCost(head, config).working_bytes, 8 * 2 * logits) < 1e-9);
    }

    void tpCommOverlapHidesAllButOneChunk()
    {
        BuildOptions options;
        options.seq_len = 2048;
        const auto graph = std::make_shared<const ModelGraph>(loadModel("llama2-7b", options));
        const Cluster cluster = h100Node();
        const auto datasheet = makeDatasheetCostSource(cluster, {});
        ParallelConfig sp;
        sp.tp = 8;
        sp.sequence_parallel = true;
        ParallelConfig overlapped = sp;
        overlapped.tp_comm_overlap = true;
        // GEMMs far longer than the collectives: only the first of tp pipelined chunks stays exposed.
        {
            CostModel model(graph, cluster, {}, std::make_shared<ScaledGemmSource>(datasheet, 1e3));
            const auto index = static_cast<std::size_t>(&firstBlock(model) - model.layers().data());
            QVERIFY(relativeError(model.layerCost(index, overlapped).tp_comm, model.layerCost(index, sp).tp_comm / 8)
                    < 1e-12);
        }
        // Instant GEMMs hide nothing: the overlapped layer pays every collective in full.
        {
            CostModel model(graph, cluster, {}, std::make_shared<ScaledGemmSource>(datasheet, 1e-9));
            const auto index = static_cast<std::size_t>(&firstBlock(model) - model.layers().data());
            QVERIFY(relativeError(model.layerCost(index, overlapped).tp_comm, model.layerCost(index, sp).tp_comm)
                    < 1e-6);
        }
        // Megatron-LM and torchtitan overlap only sequence-parallel layouts.
        CostModel model(graph, cluster);
        ParallelConfig noSp = overlapped;
        noSp.sequence_parallel = false;
        noSp.dp = 1;
        Workload workload;
        workload.global_batch = 1;
        const Evaluation e = model.evaluate(noSp, workload);
        QVERIFY(!e.feasible);
        QVERIFY2(e.reason.find("needs sequence parallelism") != std::string::npos, e.reason.c_str());
    }

    void paramGatherOverlapHidesUnderForward()
    {
        BuildOptions options;
        options.seq_len = 2048;
        const auto graph = std::make_shared<const ModelGraph>(loadModel("llama2-7b", options));
        CostModel model(graph, loadCluster("h100-sxm", 4, 8));
        ParallelConfig base;
        base.dp = 32;
        base.zero_stage = 1;
        base.num_microbatches = 2;
        Workload workload;
        workload.global_batch = 64;
        workload.memory_limit_bytes = 1e15;
        ParallelConfig overlapped = base;
        overlapped.overlap_param_gather = true;
        const Evaluation a = model.evaluate(base, workload);
        const Evaluation b = model.evaluate(overlapped, workload);
        QVERIFY2(a.feasible && b.feasible, (a.reason + b.reason).c_str());
        // What is hidden is at most the weight all-gather itself: 2 bytes per parameter over the dp group.
        const double params = graph->paramCount();
        const double gather = model.source().collectiveTime(Collective::AllGather, params * 2, {32, 8});
        QVERIFY(b.step_time < a.step_time);
        QVERIFY2(a.step_time - b.step_time <= gather * (1 + 1e-9),
                 qPrintable(QString("%1 > %2").arg(a.step_time - b.step_time).arg(gather)));
        ParallelConfig zero3 = overlapped;
        zero3.zero_stage = 3;
        const Evaluation c = model.evaluate(zero3, workload);
        QVERIFY(!c.feasible);
        QVERIFY2(c.reason.find("ZeRO-1 or ZeRO-2") != std::string::npos, c.reason.c_str());
    }

    void eagerKernelsMultiplyElementwiseTraffic()
    {
        BuildOptions options;
        options.seq_len = 1024;
        const auto source = std::make_shared<TrafficOnlySource>();
        ParallelConfig fused;
        ParallelConfig eager;
        eager.eager_kernels = true;
        // Llama: RMSNorm 36 bytes per element instead of 4 (9x), rotary 20 instead of 4 (5x), SwiGLU 10 instead of 6.
        {
            const auto graph = std::make_shared<const ModelGraph>(loadModel("llama2-7b", options));
            CostModel model(graph, h100Node(), {}, source);
            const Layer& block = firstBlock(model);
            const auto index = static_cast<std::size_t>(&block - model.layers().data());
            double extra = 0;
            for (const auto id : block.ops) {
                const Op& op = graph->op(id);
                const double moved = op.bytes_read + op.bytes_written;
                if (op.kind == OpKind::Norm)
                    extra += 8 * moved;
                else if (op.module.ends_with(".rotary"))
                    extra += 4 * moved;
                else if (op.module.ends_with(".act"))
                    extra += moved * 4.0 / 6.0;
            }
            QVERIFY(extra > 0);
            const double forward = model.layerCost(index, eager).forward - model.layerCost(index, fused).forward;
            QVERIFY2(relativeError(forward, extra * 1e-12) < 1e-9,
                     qPrintable(QString("%1 vs %2").arg(forward).arg(extra * 1e-12)));
        }
        // GPT-2: LayerNorm and GELU are single ATen kernels in eager mode too.
        {
            const auto graph = std::make_shared<const ModelGraph>(loadModel("gpt2", options));
            CostModel model(graph, h100Node(), {}, source);
            const auto index = static_cast<std::size_t>(&firstBlock(model) - model.layers().data());
            QCOMPARE(model.layerCost(index, eager).forward, model.layerCost(index, fused).forward);
        }
    }

    void fp8LinearsHalveLinearGemmsPlusCasts()
    {
        BuildOptions options;
        options.seq_len = 4096;
        const auto graph = std::make_shared<const ModelGraph>(loadModel("llama2-7b", options));
        const Cluster cluster = h100Node();
        CostModel model(graph, cluster);
        const auto index = static_cast<std::size_t>(&firstBlock(model) - model.layers().data());
        ParallelConfig bf16;
        ParallelConfig fp8 = bf16;
        fp8.fp8_linears = true;
        const LayerCost& a = model.layerCost(index, bf16);
        const LayerCost& b = model.layerCost(index, fp8);
        // The same work (MFU counts FLOPs, not their precision), done faster, but not 2x: attention stays bf16 and the
        // casts stream the inputs, weights and output gradients.
        QCOMPARE(b.flops, a.flops);
        const double ta = a.forward + a.backward_input + a.backward_weight;
        const double tb = b.forward + b.backward_input + b.backward_weight;
        QVERIFY2(tb < ta && tb > ta / 2, qPrintable(QString("%1 vs %2").arg(tb).arg(ta)));
        // The weight-gradient GEMMs only change precision: FP8 has twice the peak but fills its tiles only at twice
        // the dimension (half-efficiency at 512 against bf16's 256), so more than half the time remains.
        QVERIFY(b.backward_weight > a.backward_weight / 2 && b.backward_weight < 0.75 * a.backward_weight);
        const auto source = makeDatasheetCostSource(cluster, {});
        const double d = 4096;
        const double expected
            = cluster.device.peak(DType::BF16) / cluster.device.peak(DType::FP8) * std::pow((d + 512) / (d + 256), 3);
        QVERIFY(
            relativeError(source->matmulTime(d, d, d, DType::FP8) / source->matmulTime(d, d, d, DType::BF16), expected)
            < 1e-9);
    }

    void fp8Bf16FirstAndLastBlocksCostAsBf16()
    {
        // Megatron's --first-last-layers-bf16 (megatron/core/fp8_utils.py is_first_last_bf16_layer): the first a and
        // last b of the model's L blocks run in BF16, the rest in FP8. On one GPU without a pipeline the step is the
        // micro-batches' layer times plus the optimizer, so it moves (a + b) / L of the way from all-FP8 to all-BF16.
        BuildOptions options;
        options.seq_len = 2048;
        const auto graph = std::make_shared<const ModelGraph>(loadModel("llama2-7b", options));
        Cluster cluster = h100Node();
        cluster.gpus_per_node = 1;
        CostModel model(graph, cluster);
        ParallelConfig fp8;
        fp8.num_microbatches = 4;
        fp8.fp8_linears = true;
        fp8.framework = Framework::MegatronCore;
        ParallelConfig bf16 = fp8;
        bf16.fp8_linears = false;
        ParallelConfig edges = fp8;
        edges.fp8_bf16_first_layers = 1;
        edges.fp8_bf16_last_layers = 2;
        Workload w;
        w.global_batch = 4;
        w.seq_len = options.seq_len;
        w.memory_limit_bytes = 1e15;
        const double tFp8 = model.evaluate(fp8, w).step_time;
        const double tBf16 = model.evaluate(bf16, w).step_time;
        const double tEdges = model.evaluate(edges, w).step_time;
        const double blocks = graph->transformer->num_layers;
        QVERIFY(tBf16 > tFp8);
        QVERIFY2(relativeError(tEdges, tFp8 + 3 / blocks * (tBf16 - tFp8)) < 1e-9,
                 qPrintable(QString("%1 vs %2").arg(tEdges).arg(tFp8 + 3 / blocks * (tBf16 - tFp8))));
        // Which blocks: the first and the two last cost as BF16, the second as FP8.
        std::vector<std::size_t> blockLayers;
        for (std::size_t l = 0; l < model.layers().size(); ++l)
            if (model.layers()[l].kind == LayerKind::Block)
                blockLayers.push_back(l);
        const auto time = [&](std::size_t l, const ParallelConfig& c) {
            const LayerCost& lc = model.layerCost(l, c);
            return lc.forward + lc.backward_input + lc.backward_weight;
        };
        QCOMPARE(time(blockLayers.front(), edges), time(blockLayers.front(), bf16));
        QCOMPARE(time(blockLayers[1], edges), time(blockLayers[1], fp8));
        QCOMPARE(time(blockLayers[blockLayers.size() - 2], edges), time(blockLayers.back(), bf16));
        QCOMPARE(time(blockLayers.back(), edges), time(blockLayers.back(), bf16));
        // Megatron and NeMo run it (each count at most num_layers / pp); torchtitan has no such switch.
        QVERIFY(model.structuralProblem(edges, w, false).empty());
        edges.pp = 16;
        edges.fp8_bf16_last_layers = 3;
        edges.num_microbatches = 16;
        w.global_batch = 16;
        const std::string tooMany = model.structuralProblem(edges, w, false);
        QVERIFY2(QString::fromStdString(tooMany).contains("num_layers / pp = 2"), tooMany.c_str());
        edges.pp = 1;
        edges.framework = Framework::Torchtitan;
        edges.zero_stage = 3;
        QVERIFY(QString::fromStdString(frameworkRestriction(frameworkProfile(Framework::Torchtitan), edges))
                    .contains("set the BF16 first and last layers to 0"));
    }

    void gradReduceInBf16HalvesTheGradientBuffers()
    {
        // Megatron's --grad-reduce-in-bf16: the grad buffers take the parameters' dtype (param_and_grad_buffer.py
        // group_params_for_buffers), so under the distributed optimizer each rank's whole-model gradient buffer holds
        // 2 B per parameter instead of 4, and the reduce-scatter moves half the bytes.
        const auto graph = presetGraph("llama2-7b", 2048);
        Cluster cluster = h100Node();
        cluster.nodes = 2;
        const CostModel model(graph, cluster);
        ParallelConfig fp32;
        fp32.framework = Framework::MegatronCore;
        fp32.dp = 16;
        fp32.zero_stage = 1;
        fp32.num_microbatches = 2;
        ParallelConfig bf16 = fp32;
        bf16.grad_reduce_bf16 = true;
        Workload w;
        w.global_batch = 32;
        w.seq_len = 2048;
        const Evaluation a = model.evaluate(fp32, w);
        const Evaluation b = model.evaluate(bf16, w);
        double params = 0;
        for (const auto& layer : model.layers())
            params += layer.params;
        QVERIFY(relativeError(a.stages.front().memory.gradients, 4 * params) < 1e-9);
        QVERIFY(relativeError(b.stages.front().memory.gradients, 2 * params) < 1e-9);
        QCOMPARE(b.stages.front().memory.weights, a.stages.front().memory.weights);
        QCOMPARE(b.stages.front().memory.optimizer, a.stages.front().memory.optimizer);
        // Megatron-FSDP's sharded main grads: 2 B per parameter over the 16 ranks instead of 4.
        ParallelConfig fsdp = bf16;
        fsdp.zero_stage = 3;
        ParallelConfig fsdp32 = fsdp;
        fsdp32.grad_reduce_bf16 = false;
        QVERIFY(relativeError(model.evaluate(fsdp, w).stages.front().memory.gradients, 2 * params / 16) < 1e-9);
        QVERIFY(relativeError(model.evaluate(fsdp32, w).stages.front().memory.gradients, 4 * params / 16) < 1e-9);
        // torchtitan's mixed_precision_reduce takes only "float32" (v0.2 job_config.py); DeepSpeed reduces bf16
        // already.
        bf16.framework = Framework::Torchtitan;
        bf16.zero_stage = 3;
        QVERIFY(QString::fromStdString(frameworkRestriction(frameworkProfile(Framework::Torchtitan), bf16))
                    .contains("reduces gradients in fp32 only"));
        bf16.zero_stage = 1;
        bf16.framework = Framework::DeepSpeed;
        QVERIFY(QString::fromStdString(frameworkRestriction(frameworkProfile(Framework::DeepSpeed), bf16))
                    .contains("reduces bf16 gradients already"));
    }

    void transformerEngineKeepsFp8WeightCopies()
    {
        // Transformer Engine caches each FP8 linear's weight in FP8 across micro-batches and steps
        // (module/base.py get_weight_workspace), with its transpose where FP8 GEMMs are TN only (Hopper): 2 B per
        // element beside the 16-bit weight. As FP8 parameters (--fp8-param-gather) the FP8 copy is the weight.
        // Blackwell takes FP8 GEMMs in any layout: 1 B, which as FP8 parameters is 1 B less than the 16-bit weight.
        const auto graph = presetGraph("llama2-7b", 2048);
        const auto weightsOf = [&](const Cluster& cluster, bool fp8, bool params) {
            const CostModel model(graph, cluster);
            ParallelConfig c;
            c.framework = Framework::MegatronCore;
            c.dp = 8;
            c.zero_stage = 1;
            c.num_microbatches = 2;
            c.fp8_linears = fp8;
            c.fp8_param_gather = params;
            Workload w;
            w.global_batch = 16;
            w.seq_len = 2048;
            return model.evaluate(c, w).stages.front().memory.weights;
        };
        // The blocks' linears: q, k, v, o (h x h each, no GQA) and three h x ffn matrices.
        const auto& t = *graph->transformer;
        const double linears = t.num_layers * (4.0 * t.hidden * t.hidden + 3.0 * t.hidden * t.ffn_hidden);
        const Cluster hopper = h100Node();
        const double bf16 = weightsOf(hopper, false, false);
        QVERIFY(relativeError(weightsOf(hopper, true, false) - bf16, 2 * linears) < 1e-9);
        QCOMPARE(weightsOf(hopper, true, true), bf16);
        Cluster blackwell = hopper;
        blackwell.device = devicePreset("b200");
        QVERIFY(blackwell.device.fp8_gemm_any_layout);
        const double bf16B = weightsOf(blackwell, false, false);
        QVERIFY(relativeError(weightsOf(blackwell, true, false) - bf16B, linears) < 1e-9);
        QVERIFY(relativeError(bf16B - weightsOf(blackwell, true, true), linears) < 1e-9);
        // FP8 parameters need the distributed optimizer; torchtitan has none.
        ParallelConfig c;
        c.framework = Framework::MegatronCore;
        c.fp8_linears = true;
        c.fp8_param_gather = true;
        QVERIFY(QString::fromStdString(frameworkRestriction(frameworkProfile(Framework::MegatronCore), c))
                    .contains("need the distributed optimizer"));
        c.framework = Framework::Torchtitan;
        c.zero_stage = 3;
        QVERIFY(QString::fromStdString(frameworkRestriction(frameworkProfile(Framework::Torchtitan), c))
                    .contains("has no FP8 parameters"));
    }

    void modelFlopsAreThreeForwardPasses()
    {
        BuildOptions options;
        options.seq_len = 4096;
        const auto graph = std::make_shared<const ModelGraph>(loadModel("llama2-70b", options));
        CostModel model(graph, h100Node());
        // 6 N_matmul + 12 L s d per token (forward 2N + 4Lsd, backward twice that).
        const auto& t = *graph->transformer;
        const double embedding = static_cast<double>(t.vocab * t.hidden);
        const double matmulParams = graph->paramCount() - embedding - t.num_layers * 2.0 * t.hidden - t.hidden;
        const double closedForm = 6 * matmulParams + 12.0 * t.num_layers * 4096 * t.num_heads * t.head_dim;
        QVERIFY2(relativeError(model.modelFlopsPerToken(), closedForm) < 0.01,
                 qPrintable(QString::number(model.modelFlopsPerToken() / closedForm)));
    }

    void bubbleIsOneFigure_data()
    {
        QTest::addColumn<int>("schedule");
        QTest::addColumn<int>("vpp");
        QTest::newRow("gpipe") << static_cast<int>(ScheduleKind::GPipe) << 1;
        QTest::newRow("1f1b") << static_cast<int>(ScheduleKind::OneFOneB) << 1;
        QTest::newRow("interleaved") << static_cast<int>(ScheduleKind::Interleaved1F1B) << 2;
    }

    void bubbleIsOneFigure()
    {
        // The bubble every view shows is the time breakdown's pp_bubble over the step, from the simulator and from
        // the planner's closed-form estimate alike, and near (p-1)/(vm+p-1) for near-uniform stages.
        QFETCH(int, schedule);
        QFETCH(int, vpp);
        BuildOptions options;
        options.seq_len = 1024;
        const auto graph = std::make_shared<const ModelGraph>(loadModel("llama2-7b", options));
        const CostModel model(graph, h100Node());
        ParallelConfig config;
        config.pp = 4;
        config.dp = 2;
        config.vpp = vpp;
        config.schedule = static_cast<ScheduleKind>(schedule);
        config.num_microbatches = 8;
        Workload workload;
        workload.memory_limit_bytes = 1e15;
        for (const Evaluation& e : {model.evaluate(config, workload), model.estimate(config, workload)}) {
            QVERIFY2(e.step_time > 0, e.reason.c_str());
            QCOMPARE(e.bubble_ratio, e.time.pp_bubble / e.step_time);
            QVERIFY(e.bubble_ratio > 0 && e.bubble_ratio < 1);
            const double closedForm = 3.0 / (vpp * 8 + 3);
            QVERIFY2(std::fabs(e.bubble_ratio - closedForm) < 0.05,
                     qPrintable(QStringLiteral("%1 vs %2").arg(e.bubble_ratio).arg(closedForm)));
        }
        const Evaluation simulated = model.evaluate(config, workload);
        QCOMPARE(simulated.bubble_ratio, simulated.simulation->bubble_ratio);
    }

    void pipelineKeepsMinOfMAndPMinusRInFlight()
    {
        BuildOptions options;
        options.seq_len = 1024;
        const auto graph = std::make_shared<const ModelGraph>(loadModel("llama2-7b", options));
        CostModel model(graph, h100Node());
        ParallelConfig config;
        config.pp = 4;
        config.dp = 2;
        config.num_microbatches = 8;
        Workload workload;
        workload.memory_limit_bytes = 1e15;
        const Evaluation e = model.evaluate(config, workload);
        QVERIFY2(e.feasible, e.reason.c_str());
        for (int r = 0; r < 4; ++r)
            QCOMPARE(e.stages[static_cast<std::size_t>(r)].peak_inflight, std::min(8, 4 - r));
        QVERIFY(std::fabs(e.bubble_ratio - 3.0 / 11) < 0.1); // (p - 1) / (m + p - 1): stages are near-uniform
        int layers = 0;
        for (const auto& stage : e.stages)
            layers += stage.last_layer - stage.first_layer + 1;
        QCOMPARE(layers, static_cast<int>(model.layers().size()));
    }

    void recomputationTradesTimeForMemory()
    {
        BuildOptions options;
        options.seq_len = 4096;
        const auto graph = std::make_shared<const ModelGraph>(loadModel("llama2-7b", options));
        CostModel model(graph, h100Node());
        Workload workload;
        workload.memory_limit_bytes = 1e15;
        ParallelConfig none;
        none.dp = 8;
        none.zero_stage = 1;
        ParallelConfig full = none;
        full.recompute = RecomputeKind::Full;
        const Evaluation a = model.evaluate(none, workload);
        const Evaluation b = model.evaluate(full, workload);
        QVERIFY(b.step_time > a.step_time);
        QVERIFY(b.stages[0].memory.activations < a.stages[0].memory.activations / 5);
        QVERIFY(b.hfu > b.mfu);
        QVERIFY(std::fabs(a.hfu - a.mfu) < 1e-12);
        // Full recomputation repeats the blocks' forward: HFU/MFU ~ 4/3.
        QVERIFY(std::fabs(b.hfu / b.mfu - 4.0 / 3) < 0.05);
    }

    void infeasibleConfigurationsSayWhy_data()
    {
        QTest::addColumn<QString>("change");
        QTest::addColumn<QString>("reason");
        QTest::newRow("heads") << "tp=3"
                               << "does not divide the 32 attention heads";
        QTest::newRow("stages") << "pp=40"
                                << "pipeline chunks but the model has only";
        QTest::newRow("batch") << "batch=30"
                               << "global batch 30 is not dp x micro-batch x micro-batches";
        QTest::newRow("memory") << "memory=10"
                                << "over the 10.0 GB limit";
        QTest::newRow("world") << "dp=4"
                               << "but the cluster has 8";
        QTest::newRow("interleaved") << "interleaved"
                                     << "divisible by pp";
        QTest::newRow("sp") << "sp"
                            << "sequence parallelism needs tp > 1";
        QTest::newRow("ep") << "ep=2"
                            << "mixture-of-experts";
    }
    void infeasibleConfigurationsSayWhy()
    {
        QFETCH(QString, change);
        QFETCH(QString, reason);
        BuildOptions options;
        options.seq_len = 1024;
        const auto graph = std::make_shared<const ModelGraph>(loadModel("llama2-7b", options));
        CostModel model(graph, h100Node());
        ParallelConfig config;
        config.dp = 8;
        config.num_microbatches = 4;
        Workload workload;
        workload.global_batch = 32;
        if (change == "tp=3") {
            config.tp = 3;
            config.dp = 1;
            workload.global_batch = 4;
        } else if (change == "pp=40") {
            config.pp = 40;
            config.dp = 1;
            workload.global_batch = 4;
        } else if (change == "batch=30") {
            workload.global_batch = 30;
        } else if (change == "memory=10") {
            workload.memory_limit_bytes = 10e9;
        } else if (change == "dp=4") {
            config.dp = 4;
            workload.global_batch = 16;
        } else if (change == "interleaved") {
            config.pp = 8;
            config.dp = 1;
            config.vpp = 2;
            config.num_microbatches = 12;
            config.schedule = ScheduleKind::Interleaved1F1B;
            workload.global_batch = 12;
        } else if (change == "sp") {
            config.sequence_parallel = true;
        } else if (change == "ep=2") {
            config.ep = 2;
        }
        EvaluateOptions evaluateOptions;
        evaluateOptions.require_full_cluster = change == "dp=4";
        const Evaluation e = model.evaluate(config, workload, evaluateOptions);
        QVERIFY(!e.feasible);
        QVERIFY2(e.reason.find(reason.toStdString()) != std::string::npos, e.reason.c_str());
    }

    // --- context parallelism, FP8 recipes and TP-overlap chunking (layer_cost.cpp) ---------------------------------

    void contextParallelRingMatchesItsClosedForms()
    {
        // Only the attention (a seconds per FLOP), P2P (p s/B) and collectives (c s/B) cost time.
        class RingSource final : public CostSource
        {
        public:
            double a = 0, p = 1e-12, c = 2e-12;
            std::string name() const override { return "ring"; }
            double matmulTime(double, double, double, DType) const override { return 0; }
            double attentionTime(double flops, DType) const override { return flops * a; }
            double memoryTime(double) const override { return 0; }
            double collectiveTime(Collective, double bytes, const GroupShape&) const override { return bytes * c; }
            double p2pTime(double bytes, bool) const override { return bytes * p; }
            double minKernelTime() const override { return 0; }
        };
        const PresetBlock block("llama2-7b", 8192);
        LayerLayout layout;
        layout.cp = 4;
        layout.cp_group = {4, 8};
        RingSource instant; // attention takes no time: nothing hides
        // P2P ring, 16-bit dK/dV: forward 3 K/V sends; backward 3 K/V+dK/dV sends and the final dK/dV return.
        const LayerCost p2p = block.cost(layout, instant);
        const double kv = p2p.other_comm / (10 * instant.p); // 3 + 3 x 2 + 1 K/V-sized transfers
        const double kvExpected
            = 2.0 * 8192 / 4 * 4096 * dtypeBytes(block.graph->dtype) / static_cast<double>(block.graph->batch);
        QVERIFY(relativeError(kv, kvExpected) < 1e-12);
        // All-gather of cp x K/V under the first step only, forward and backward; fp32 dK/dV (2 kv) on a ring,
        // cp - 1 transfers of which only the overlapped ones hide.
        layout.cp_comm = CpComm::AllGather;
        layout.cp_dkv_bytes_per_element = 4;
        const LayerCost gathered = block.cost(layout, instant);
        QVERIFY(relativeError(gathered.other_comm, 2 * 4 * kv * instant.c + 3 * 2 * kv * instant.p) < 1e-12);
        // Attention far longer than any transfer: only the final dK/dV return stays exposed (P2P).
        RingSource slow;
        slow.a = 1;
        layout.cp_comm = CpComm::P2PRing;
        layout.cp_dkv_bytes_per_element = 2;
        const LayerCost hidden = block.cost(layout, slow);
        QVERIFY(relativeError(hidden.other_comm, kv * slow.p) < 1e-12);
        // ... and, with recomputation, the forward ring is not repeated when it hides.
        layout.recompute = RecomputeKind::Full;
        const LayerCost recomputed = block.cost(layout, slow);
        QVERIFY(relativeError(recomputed.other_comm, kv * slow.p) < 1e-12);
    }

    void rowwiseFp8CastsEveryOperandTwice()
    {
        // Tensorwise casts input, weight and grad_output once each; rowwise casts each of them for both GEMMs it
        // enters: exactly twice the cast traffic on a traffic-only source.
        const PresetBlock block("llama2-7b", 2048);
        const TrafficOnlySource source;
        LayerLayout layout;
        const auto total = [&](const LayerCost& c) { return c.forward + c.backward_input + c.backward_weight; };
        const double bf16 = total(block.cost(layout, source));
        layout.fp8_linears = true;
        const double tensorwise = total(block.cost(layout, source));
        layout.fp8_recipe = Float8Recipe::Rowwise;
        const double rowwise = total(block.cost(layout, source));
        QVERIFY(tensorwise > bf16);
        QVERIFY(relativeError(rowwise - bf16, 2 * (tensorwise - bf16)) < 1e-9);
    }

    void float8RecipesAgainstTorchaosTable()
    {
        // torchao's e2e training table (docs/source/workflows/training.md): Llama 3 8B on 8x H100, torchtitan, batch 1,
        // sequence 8192, torch.compile, FSDP2, per-op SAC: bf16 6,150 tokens/s, tensorwise 7,689.5 (+25.03%), rowwise
        // 6,768 (+10.05%). The plan set by ParallelConfig::fp8_recipe must give tensorwise's gain and rank rowwise
        // between the two: its GEMMs run at the rate measured on an H100 (tests/data/measured_fp8_gemms_h100.json)
        // and it casts every operand twice. The FP8 GEMMs follow the same measurement: about 1.75x bf16 at these
        // shapes (wq, wk/wv, w13, w2 at 8,192 tokens: 1.45-1.95), not 2x, which leaves the tensorwise gain 4 points
        // under the table's; the table's run (a February 2025 nightly, its H100 variant unstated) is not the probe's.
        BuildOptions options;
        options.seq_len = 8192;
        const auto graph = std::make_shared<const ModelGraph>(loadModel("llama3-8b", options));
        CostModel model(graph, h100Node());
        ParallelConfig config;
        config.dp = 8;
        config.zero_stage = 3;
        config.recompute = RecomputeKind::Selective; // torchtitan's per-op SAC policy
        config.framework = Framework::Torchtitan;
        Workload workload;
        workload.memory_limit_bytes = 1e15;
        const double bf16 = model.evaluate(config, workload).step_time;
        config.fp8_linears = true;
        const double tensorwise = model.evaluate(config, workload).step_time;
        config.fp8_recipe = Float8Recipe::Rowwise;
        const double rowwise = model.evaluate(config, workload).step_time;
        const double tensorwiseGain = bf16 / tensorwise - 1;
        const double rowwiseGain = bf16 / rowwise - 1;
        QVERIFY2(std::abs(tensorwiseGain - 0.2503) < 0.05, std::to_string(tensorwiseGain).c_str());
        QVERIFY2(rowwiseGain > 0 && rowwiseGain < tensorwiseGain, std::to_string(rowwiseGain).c_str());
        // Rowwise is refused where the framework has no such recipe.
        config.framework = Framework::MegatronCore;
        config.zero_stage = 1;
        const Evaluation megatron = model.evaluate(config, workload);
        QVERIFY(!megatron.feasible);
        QVERIFY2(megatron.reason.find("no rowwise FP8 scaling") != std::string::npos, megatron.reason.c_str());
    }

    void serialOverlapChunksAreSmallerGemms()
    {
        // With serial chunks, a column-parallel GEMM beside an overlapped all-gather costs tp GEMMs of m / tp rows.
        const PresetBlock block(korthikantiGraph());
        const auto source = makeDatasheetCostSource(h100Node(), {});
        LayerLayout layout;
        layout.micro_batch = kBatch;
        layout.tp = 8;
        layout.tp_group = {8, 8};
        layout.sequence_parallel = true;
        layout.tp_comm_overlap = true;
        const LayerCost concurrent = block.cost(layout, *source);
        layout.tp_overlap_serial_chunks = true;
        const LayerCost serial = block.cost(layout, *source);
        QVERIFY(serial.forward > concurrent.forward);
        // Weight-gradient GEMMs are not chunked.
        QCOMPARE(serial.backward_weight, concurrent.backward_weight);
        // Closed form for one GEMM: 8 x time(m / 8) against time(m).
        const double m = 4096, n = 3 * 12288 / 8.0, k = 12288;
        const double one = source->matmulTime(m, n, k, DType::BF16);
        const double chunked = 8 * source->matmulTime(m / 8, n, k, DType::BF16);
        QVERIFY(chunked > one);
    }

    void asyncTpFusesOnlyDirectCollectiveMatmulPairs()
    {
        // A Llama 3 block under TP 8 with SP has four collectives each way, all of one tensor size (C seconds here):
        // the gathers of the attention and MLP inputs and the reduce-scatters of the o_proj and down_proj outputs,
        // and in backward the reverse. Vanilla TP exposes all eight: 8 C.
        const PresetBlock block("llama3-8b", 4096);
        const CollectiveOnlySource source;
        const LayerLayout layout = sequenceParallelLayout(8);
        const auto tpComm = [&](const LayerLayout& l) { return block.cost(l, source).tp_comm; };
        const double c = tpComm(layout) / 8;
        QVERIFY(c > 0);

        // Transformer Engine's overlap fuses all eight: one chunk of each stays exposed, 8 C / 8.
        LayerLayout overlap = layout;
        overlap.tp_comm_overlap = true;
        QVERIFY(relativeError(tpComm(overlap), c) < 1e-9);
        // PyTorch's async TP (micro_pipeline_tp.py) fuses the four forward collectives and the two backward gathers;
        // the two input gradients are sums over Q, K, V and over gate, up, so their reduce-scatters stay whole:
        // 6 C / 8 + 2 C.
        overlap.tp_overlap_by_pattern = true;
        QVERIFY(relativeError(tpComm(overlap), 6 * c / 8 + 2 * c) < 1e-9);
        // Rowwise float8 casts each gathered tensor before its GEMM: only the forward reduce-scatters fuse,
        // 2 C / 8 + 6 C.
        overlap.fp8_linears = true;
        overlap.fp8_recipe = Float8Recipe::Rowwise;
        QVERIFY(relativeError(tpComm(overlap), 2 * c / 8 + 6 * c) < 1e-9);

        // Its fused reduce-scatter sums the tp partial products in a kernel of its own: the o_proj and down_proj
        // outputs are read whole and written as the 1/tp shard, (1 + 1/8) C each on a 1 ps per byte stream.
        const TrafficOnlySource traffic;
        LayerLayout te = layout;
        te.tp_comm_overlap = true;
        LayerLayout pattern = te;
        pattern.tp_overlap_by_pattern = true;
        const double extra = block.cost(pattern, traffic).forward - block.cost(te, traffic).forward;
        QVERIFY2(relativeError(extra, 2 * c * (1 + 1.0 / 8)) < 1e-9, std::to_string(extra / c).c_str());

        // Tensorwise float8 TP gathers 1-byte casts (torchao's Float8ColwiseParallel / RowwiseParallel): the four
        // gathers cost half, the reduce-scatters stay 16-bit: 4 C / 2 + 4 C.
        LayerLayout fp8 = layout;
        fp8.fp8_linears = true;
        fp8.tp_gathers_fp8_tensorwise = true;
        QVERIFY(relativeError(tpComm(fp8), 4 * c / 2 + 4 * c) < 1e-9);
        fp8.fp8_recipe = Float8Recipe::Rowwise;
        QVERIFY(relativeError(tpComm(fp8), 8 * c) < 1e-9);

        // The torchtitan profile carries both; Megatron's Transformer Engine overlap neither.
        QVERIFY(frameworkProfile(Framework::Torchtitan).tp_overlap_by_pattern);
        QVERIFY(frameworkProfile(Framework::Torchtitan).tp_gathers_fp8_tensorwise);
        QVERIFY(!frameworkProfile(Framework::MegatronCore).tp_overlap_by_pattern);
    }

    void fsdpGathersTensorwiseFloat8WeightsInOneByte()
    {
        // torchtitan's export turns on enable_fsdp_float8_all_gather for tensorwise float8 under FSDP: every block's
        // linear weights (Llama 3 8B: 2 h^2 + 2 h kv + 3 h ffn = 218.1 M elements, 32 blocks) are gathered in 1 byte
        // instead of 2, once for the forward and once for the backward. With nothing hidden and collectives at
        // 1 ps per byte, that is 2 x 32 x 218.1e6 x 1 byte x 1e-12 s less than rowwise float8, which gathers bf16.
        BuildOptions options;
        options.seq_len = 4096;
        const auto graph = std::make_shared<const ModelGraph>(loadModel("llama3-8b", options));
        CostParams params;
        params.zero3_prefetch_overlap = 0;
        CostModel model(graph, h100Node(), params, std::make_shared<CollectiveOnlySource>());
        ParallelConfig config;
        config.dp = 8;
        config.zero_stage = 3;
        config.framework = Framework::Torchtitan;
        config.fp8_linears = true;
        Workload workload;
        workload.memory_limit_bytes = 1e15;
        const Evaluation tensorwise = model.evaluate(config, workload);
        config.fp8_recipe = Float8Recipe::Rowwise;
        const Evaluation rowwise = model.evaluate(config, workload);
        QVERIFY2(tensorwise.feasible && rowwise.feasible, (tensorwise.reason + rowwise.reason).c_str());
        const double h = 4096, kv = 1024, ffn = 14336;
        const double linear = 2 * h * h + 2 * h * kv + 3 * h * ffn;
        const double saved = rowwise.time.sharded_dp - tensorwise.time.sharded_dp;
        QVERIFY2(relativeError(saved, 2 * 32 * linear * 1e-12) < 1e-6, std::to_string(saved).c_str());
        // Megatron-FSDP has no float8 gather: the same plan there moves bf16.
        QVERIFY(!frameworkProfile(Framework::MegatronCore).fsdp_gathers_fp8_tensorwise);
    }

    void attentionEfficiencyGrowsWithKeysPerBlock()
    {
        // A flash kernel's blocks pay about 256 keys of fixed work: at sequence S (causal: S / 2 keys per block)
        // the attention time per FLOP is (S / 2 + 256) / (S / 2) times the long-sequence one.
        class FlopSource final : public CostSource
        {
        public:
            std::string name() const override { return "flops"; }
            double matmulTime(double, double, double, DType) const override { return 0; }
            double attentionTime(double flops, DType) const override { return flops * 1e-15; }
            double memoryTime(double) const override { return 0; }
            double collectiveTime(Collective, double, const GroupShape&) const override { return 0; }
            double p2pTime(double, bool) const override { return 0; }
            double minKernelTime() const override { return 0; }
        };
        const FlopSource source;
        for (const int seq : {1024, 8192}) {
            const PresetBlock block("llama2-7b", seq);
            double flops = 0;
            for (const auto id : block.block().ops)
                if (block.graph->op(id).kind == OpKind::FlashAttention)
                    flops += block.graph->op(id).flops_fwd;
            QVERIFY(flops > 0);
            const LayerCost cost = block.cost(LayerLayout {}, source);
            const double keys = seq / 2.0;
            const double share = 1.0 / static_cast<double>(block.graph->batch);
            QVERIFY(relativeError(cost.forward, flops * share * 1e-15 * (keys + 256) / keys) < 1e-9);
        }
    }
};

QTEST_APPLESS_MAIN(TestCost)
#include "tst_cost.moc"
