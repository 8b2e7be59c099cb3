// SPDX-License-Identifier: MIT
// Plan files: save -> load reproduces the configuration and every prediction bit for bit, fingerprints ignore the
// micro-batch but see the model, sequence length and cluster, staleness warnings fire exactly when an input
// changed, and corrupt files are rejected with the offending key named.
#include "test_helpers.h"

#include "shardscape/cost/cost_model.h"
#include "shardscape/model/model_source.h"
#include "shardscape/plan/plan_file.h"
#include "shardscape/plan/result_json.h"
#include "shardscape/support/error.h"

#include <QTemporaryDir>
#include <QTest>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>

using namespace shardscape;
using nlohmann::json;

using shardscape::test::inputErrorOf;

namespace {

constexpr std::int64_t kSeqLen = 2048;
constexpr std::int64_t kGlobalBatch = 32;

std::shared_ptr<const ModelGraph> graphOf(const std::string& name, std::int64_t batch = 1,
                                          std::int64_t seqLen = kSeqLen)
{
    BuildOptions options;
    options.batch = batch;
    options.seq_len = seqLen;
    return std::make_shared<const ModelGraph>(loadModel(name, options));
}

/** llama2-7b on nodes x 8 H100, shared by the tests (building the graph is the slow part). */
const CostModel& llamaModel(int nodes = 1)
{
    static std::map<int, std::unique_ptr<CostModel>> models;
    auto& slot = models[nodes];
    if (!slot)
        slot = std::make_unique<CostModel>(graphOf("llama2-7b"), loadCluster("h100-sxm", nodes, 8));
    return *slot;
}

Evaluation evaluate(const CostModel& model, const ParallelConfig& config, double memoryLimitBytes = 0)
{
    Workload workload;
    workload.global_batch = config.globalBatch();
    workload.seq_len = kSeqLen;
    workload.memory_limit_bytes = memoryLimitBytes;
    return model.evaluate(config, workload);
}

PlanFileContext contextFor(const ParallelConfig& config)
{
    PlanFileContext context;
    context.global_batch = config.globalBatch();
    context.seq_len = kSeqLen;
    context.model_name = "llama2-7b";
    context.model_spec = "llama2-7b";
    context.created_by = "tst_plan";
    context.version = "test";
    return context;
}

bool sameConfig(const ParallelConfig& a, const ParallelConfig& b)
{
    return a.tp == b.tp && a.pp == b.pp && a.dp == b.dp && a.cp == b.cp && a.ep == b.ep && a.vpp == b.vpp
        && a.micro_batch == b.micro_batch && a.num_microbatches == b.num_microbatches && a.zero_stage == b.zero_stage
        && a.zero_ngroups == b.zero_ngroups && a.sequence_parallel == b.sequence_parallel && a.recompute == b.recompute
        && a.recompute_modules == b.recompute_modules && a.schedule == b.schedule && a.stage_layers == b.stage_layers
        && a.rank_order == b.rank_order && a.framework == b.framework && a.fp8_linears == b.fp8_linears
        && a.fp8_bf16_first_layers == b.fp8_bf16_first_layers && a.fp8_bf16_last_layers == b.fp8_bf16_last_layers
        && a.grad_reduce_bf16 == b.grad_reduce_bf16 && a.fp8_param_gather == b.fp8_param_gather;
}

/** The configurations the round trip covers: every field of ParallelConfig away from its default somewhere. */
std::map<std::string, ParallelConfig> sampleConfigs()
{
    std::map<std::string, ParallelConfig> out;
    ParallelConfig dp;
    dp.dp = 8;
    dp.num_microbatches = 4;
    out["dp8"] = dp;

    ParallelConfig hybrid;
    hybrid.tp = 2;
    hybrid.pp = 2;
    hybrid.dp = 2;
    hybrid.num_microbatches = 16;
    hybrid.zero_stage = 1;
    out["tp2 pp2 dp2 1f1b"] = hybrid;

    ParallelConfig interleaved = hybrid;
    interleaved.vpp = 2;
    interleaved.schedule = ScheduleKind::Interleaved1F1B;
    interleaved.sequence_parallel = true;
    interleaved.recompute = RecomputeKind::Selective;
    interleaved.micro_batch = 2;
    interleaved.num_microbatches = 8;
    out["interleaved sp selective"] = interleaved;

    ParallelConfig zb;
    zb.pp = 4;
    zb.dp = 2;
    zb.num_microbatches = 16;
    zb.schedule = ScheduleKind::ZeroBubbleH1;
    zb.stage_layers = {9, 8, 8, 9};
    zb.zero_stage = 2;
    zb.zero_ngroups = 2;
    out["pp4 zb-h1 stage_layers"] = zb;

    ParallelConfig cp;
    cp.tp = 2;
    cp.cp = 2;
    cp.dp = 2;
    cp.num_microbatches = 16;
    cp.zero_stage = 3;
    cp.recompute = RecomputeKind::Full;
    cp.rank_order = "cp-tp-dp-pp";
    out["tp2 cp2 zero3 full"] = cp;

    ParallelConfig modules;
    modules.tp = 4;
    modules.pp = 2;
    modules.num_microbatches = 32;
    modules.schedule = ScheduleKind::GPipe;
    modules.recompute = RecomputeKind::Modules;
    modules.recompute_modules = {"mlp"};
    modules.rank_order = "pp-tp-cp-dp";
    out["gpipe modules pp-first"] = modules;

    ParallelConfig megatron = hybrid;
    megatron.framework = Framework::MegatronCore;
    out["megatron-core tp2 pp2 dp2"] = megatron;

    ParallelConfig edges = megatron;
    edges.fp8_linears = true;
    edges.fp8_bf16_first_layers = 1;
    edges.fp8_bf16_last_layers = 2;
    edges.grad_reduce_bf16 = true;
    edges.fp8_param_gather = true;
    out["megatron-core fp8 bf16 first and last, bf16 reduce"] = edges;

    ParallelConfig titan = cp;
    titan.framework = Framework::Torchtitan;
    out["torchtitan tp2 cp2 fsdp"] = titan;
    return out;
}

json planFor(const std::string& name)
{
    const ParallelConfig config = sampleConfigs().at(name);
    return planToJson(evaluate(llamaModel(), config), llamaModel(), contextFor(config));
}

} // namespace

class TestPlan : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void roundTripIsExact_data()
    {
        QTest::addColumn<QString>("name");
        for (const auto& [name, config] : sampleConfigs())
            QTest::newRow(name.c_str()) << QString::fromStdString(name);
    }
    void roundTripIsExact()
    {
        QFETCH(QString, name);
        const CostModel& model = llamaModel();
        const ParallelConfig config = sampleConfigs().at(name.toStdString());
        const Evaluation e = evaluate(model, config);
        QVERIFY2(e.reason.empty() || !e.stages.empty(), e.reason.c_str());

        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const std::filesystem::path path = dir.filePath("plan.json").toStdString();
        savePlanFile(path, planToJson(e, model, contextFor(config)));
        const LoadedPlan plan = loadPlanFile(path);

        QVERIFY(sameConfig(plan.config, e.config));
        QCOMPARE(plan.global_batch, kGlobalBatch);
        QCOMPARE(plan.seq_len, kSeqLen);
        QCOMPARE(plan.model_name, std::string("llama2-7b"));
        QCOMPARE(plan.model_spec, std::string("llama2-7b"));
        QCOMPARE(plan.created_by, std::string("tst_plan"));
        QCOMPARE(plan.version, std::string("test"));
        QCOMPARE(plan.num_layers, static_cast<int>(model.layers().size()));
        QCOMPARE(plan.model_fingerprint, modelFingerprint(model.graph()));
        QCOMPARE(plan.cluster_fingerprint, model.cluster().fingerprint());
        // The recorded cluster reads back as the same cluster (its fingerprint is recomputed from the fields).
        QCOMPARE(plan.cluster.fingerprint(), model.cluster().fingerprint());

        // Metrics to the bit: QCOMPARE on doubles is fuzzy, so compare with ==.
        const PlanMetrics& m = plan.metrics;
        QCOMPARE(m.feasible, e.feasible);
        QCOMPARE(m.reason, e.reason);
        QCOMPARE(m.cost_source, e.cost_source);
        QVERIFY(m.step_time_s == e.step_time);
        QVERIFY(m.tokens_per_s == e.tokens_per_s);
        QVERIFY(m.tflops_per_gpu == e.tflops_per_gpu);
        QVERIFY(m.mfu == e.mfu);
        QVERIFY(m.hfu == e.hfu);
        QVERIFY(m.bubble_ratio == e.bubble_ratio);
        QVERIFY(m.memory_limit_gb == e.memory_limit_bytes / 1e9);
        QCOMPARE(m.peak_memory_gb.size(), e.stages.size());
        QCOMPARE(m.stage_compute_s.size(), e.stages.size());
        for (std::size_t r = 0; r < e.stages.size(); ++r) {
            QVERIFY(m.peak_memory_gb[r] == e.stages[r].memory.total() / 1e9);
            QVERIFY(m.stage_compute_s[r] == e.stages[r].compute);
        }
        QVERIFY(m.time.compute == e.time.compute);
        QVERIFY(m.time.recompute == e.time.recompute);
        QVERIFY(m.time.tp_comm == e.time.tp_comm);
        QVERIFY(m.time.other_comm == e.time.other_comm);
        QVERIFY(m.time.pp_bubble == e.time.pp_bubble);
        QVERIFY(m.time.dp_exposed == e.time.dp_exposed);
        QVERIFY(m.time.optimizer == e.time.optimizer);
        // The ranges and the OOM risk.
        QVERIFY(m.step_time_range_s && m.peak_memory_range_gb && m.oom_risk);
        QVERIFY(m.step_time_range_s->low == e.step_time_range.low);
        QVERIFY(m.step_time_range_s->high == e.step_time_range.high);
        QVERIFY(m.peak_memory_range_gb->low == e.peak_memory_range.low / 1e9);
        QVERIFY(m.peak_memory_range_gb->high == e.peak_memory_range.high / 1e9);
        QCOMPARE(int(*m.oom_risk), int(e.oom_risk));
        QCOMPARE(m.regime, e.regime);

        // The resolved partition is the one evaluated, in virtual-stage order.
        std::vector<int> expected(static_cast<std::size_t>(config.pp * config.vpp));
        for (int r = 0; r < config.pp; ++r)
            for (std::size_t k = 0; k < e.stages[static_cast<std::size_t>(r)].chunks.size(); ++k) {
                const auto [first, last] = e.stages[static_cast<std::size_t>(r)].chunks[k];
                expected[k * static_cast<std::size_t>(config.pp) + static_cast<std::size_t>(r)] = last - first + 1;
            }
        QCOMPARE(plan.resolved_stage_layers, expected);

        // Reusing the plan: the loaded config (with its partition pinned) predicts the same step.
        ParallelConfig pinned = plan.config;
        pinned.stage_layers = plan.resolved_stage_layers;
        QVERIFY(evaluate(model, pinned).step_time == e.step_time);
    }

    void documentContent()
    {
        const CostModel& model = llamaModel();
        const json hybrid = planFor("tp2 pp2 dp2 1f1b");
        QCOMPARE(hybrid["schema"].get<std::string>(), std::string(kPlanSchema));
        QCOMPARE(hybrid["world_size"].get<int>(), 8);
        QCOMPARE(hybrid["stages"].size(), std::size_t {2});
        // tp-cp-dp-pp, tp fastest: pipeline rank 0 holds GPUs 0-3, rank 1 GPUs 4-7.
        QVERIFY(hybrid["stages"][0]["ranks"] == json({0, 1, 2, 3}));
        QVERIFY(hybrid["stages"][1]["ranks"] == json({4, 5, 6, 7}));
        QCOMPARE(hybrid["stages"][0]["devices"].get<int>(), 4);
        const json& chunk = hybrid["stages"][0]["chunks"][0];
        QCOMPARE(chunk["layers"][0].get<int>(), 0);
        QCOMPARE(chunk["layer_names"][0].get<std::string>(), model.layers().front().name);
        QCOMPARE(hybrid["stages"][1]["chunks"][0]["layer_names"][1].get<std::string>(), model.layers().back().name);
        QVERIFY(hybrid["stages"][0]["memory"].contains("optimizer_gb"));
        QCOMPARE(hybrid["layers"].size(), model.layers().size());
        QCOMPARE(hybrid["layers"][0]["kind"].get<std::string>(), std::string("embedding"));
        QCOMPARE(hybrid["layers"].back()["stage"].get<int>(), 1);
        QCOMPARE(hybrid["layers"][5]["tp"].get<int>(), 2);
        QCOMPARE(hybrid["metrics"]["peak_memory_gb"].size(), std::size_t {2});
        for (const char* key : {"step_time_s", "tokens_per_s", "tflops_per_gpu", "mfu", "hfu", "bubble_ratio"})
            QVERIFY2(hybrid["metrics"][key].get<double>() >= 0, key);
        QVERIFY(hybrid["metrics"]["bubble_ratio"].get<double>() > 0);
        QVERIFY(!hybrid["layers"][5]["recomputed"].get<bool>());
        for (const char* key :
             {"tp", "pp", "dp", "cp", "ep", "vpp", "micro_batch", "num_microbatches", "zero_stage", "zero_ngroups",
              "sequence_parallel", "recompute", "recompute_modules", "schedule", "stage_layers", "rank_order"})
            QVERIFY2(hybrid["config"].contains(key), key);

        // pp fastest: each pipeline rank takes every second GPU.
        const json ppFirst = planFor("gpipe modules pp-first");
        QVERIFY(ppFirst["stages"][0]["ranks"] == json({0, 2, 4, 6}));
        QVERIFY(ppFirst["stages"][1]["ranks"] == json({1, 3, 5, 7}));

        // Recomputation per layer: full recomputation covers the blocks, not the embedding or the head.
        const json full = planFor("tp2 cp2 zero3 full");
        QVERIFY(!full["layers"][0]["recomputed"].get<bool>());
        QVERIFY(full["layers"][1]["recomputed"].get<bool>());
        QVERIFY(!full["layers"].back()["recomputed"].get<bool>());
        QVERIFY(ppFirst["layers"][3]["recomputed"].get<bool>()); // "mlp" modules
        QVERIFY(planFor("interleaved sp selective")["layers"][3]["recomputed"].get<bool>());
        QVERIFY(planFor("interleaved sp selective")["layers"][3]["sequence_parallel"].get<bool>());

        // Interleaved: two chunks per rank, virtual stage k x pp + r.
        const json inter = planFor("interleaved sp selective");
        QCOMPARE(inter["stages"][1]["chunks"].size(), std::size_t {2});
        QCOMPARE(inter["stages"][1]["chunks"][1]["virtual_stage"].get<int>(), 3);
        QCOMPARE(inter["layers"].back()["chunk"].get<int>(), 1);

        // Deterministic: the same evaluation gives the same text.
        QCOMPARE(planFor("dp8").dump(), planFor("dp8").dump());
    }

    void bigClustersListRanksCompactly()
    {
        // 256 GPUs: a pipeline rank of 128 evenly spaced GPUs is written as {count, first, stride}.
        const CostModel& model = llamaModel(32);
        ParallelConfig config;
        config.pp = 2;
        config.dp = 128;
        config.rank_order = "pp-tp-cp-dp";
        const Evaluation e = evaluate(model, config);
        QVERIFY2(!e.stages.empty(), e.reason.c_str());
        PlanFileContext context = contextFor(config);
        const json doc = planToJson(e, model, context);
        QVERIFY(doc["stages"][1]["ranks"] == json({{"count", 128}, {"first", 1}, {"stride", 2}}));

        QTemporaryDir dir;
        const std::filesystem::path path = dir.filePath("big.json").toStdString();
        savePlanFile(path, doc);
        const LoadedPlan plan = loadPlanFile(path);
        QVERIFY(sameConfig(plan.config, config));
        QCOMPARE(plan.cluster.nodes, 32);

        // A wrong stride is caught.
        json bad = doc;
        bad["stages"][1]["ranks"]["stride"] = 1;
        const std::string error = inputErrorOf([&] { planFromJson(bad, "big.json"); });
        QVERIFY2(error.find("big.json: stages[1].ranks:") != std::string::npos, error.c_str());
    }

    void fingerprints()
    {
        const std::string base = modelFingerprint(*graphOf("llama2-7b"));
        QCOMPARE(base.size(), std::string("model:").size() + 16);
        QVERIFY(base.rfind("model:", 0) == 0);
        // The micro-batch a graph was built for does not matter...
        for (const std::int64_t batch : {2, 3, 8})
            QCOMPARE(modelFingerprint(*graphOf("llama2-7b", batch)), base);
        QCOMPARE(modelFingerprint(*graphOf("gpt2", 4, 512)), modelFingerprint(*graphOf("gpt2", 1, 512)));
        // ... the architecture and the sequence length do.
        QVERIFY(modelFingerprint(*graphOf("llama2-13b")) != base);
        QVERIFY(modelFingerprint(*graphOf("mistral-7b")) != base);
        QVERIFY(modelFingerprint(*graphOf("llama2-7b", 1, 1024)) != base);
        BuildOptions fp16;
        fp16.seq_len = kSeqLen;
        fp16.dtype = DType::F16;
        QVERIFY(modelFingerprint(loadModel("llama2-7b", fp16)) != base);

        const std::string node = loadCluster("h100-sxm", 1, 8).fingerprint();
        QCOMPARE(loadCluster("h100-sxm", 1, 8).fingerprint(), node);
        QVERIFY(loadCluster("h100-sxm", 2, 8).fingerprint() != node);
        QVERIFY(loadCluster("h100-sxm", 1, 4).fingerprint() != node);
        QVERIFY(loadCluster("a100-80g", 1, 8).fingerprint() != node);
    }

    void stalenessWarnings_data()
    {
        QTest::addColumn<QString>("model");
        QTest::addColumn<int>("batch"); // micro-batch the current graph is built for
        QTest::addColumn<int>("seqLen");
        QTest::addColumn<int>("nodes");
        QTest::addColumn<int>("globalBatch");
        QTest::addColumn<QString>("expected"); // substring of the single warning, empty = none
        QTest::newRow("unchanged") << "llama2-7b" << 1 << 2048 << 1 << 32 << "";
        QTest::newRow("other micro-batch") << "llama2-7b" << 4 << 2048 << 1 << 32 << "";
        QTest::newRow("global batch") << "llama2-7b" << 1 << 2048 << 1 << 64 << "global batch 32, now 64";
        QTest::newRow("seq_len") << "llama2-7b" << 1 << 1024 << 1 << 32 << "seq_len 2048, now 1024";
        QTest::newRow("model") << "llama2-13b" << 1 << 2048 << 1 << 32 << "different model";
        QTest::newRow("cluster") << "llama2-7b" << 1 << 2048 << 2 << 32 << "different cluster";
    }
    void stalenessWarnings()
    {
        QFETCH(QString, model);
        QFETCH(int, batch);
        QFETCH(int, seqLen);
        QFETCH(int, nodes);
        QFETCH(int, globalBatch);
        QFETCH(QString, expected);

        const ParallelConfig config = sampleConfigs().at("tp2 pp2 dp2 1f1b");
        const LoadedPlan plan = planFromJson(planFor("tp2 pp2 dp2 1f1b"), "plan.json");
        QCOMPARE(plan.global_batch, std::int64_t {config.globalBatch()});
        const CostModel current(graphOf(model.toStdString(), batch, seqLen), loadCluster("h100-sxm", nodes, 8));
        const auto warnings = planStalenessWarnings(plan, current, globalBatch, seqLen);
        if (expected.isEmpty()) {
            QVERIFY2(warnings.empty(), warnings.empty() ? "" : warnings.front().c_str());
            return;
        }
        QCOMPARE(warnings.size(), std::size_t {1});
        QVERIFY2(warnings.front().find(expected.toStdString()) != std::string::npos, warnings.front().c_str());
        QVERIFY2(warnings.front().find("re-simulating") != std::string::npos, warnings.front().c_str());
    }

    void everythingChanged()
    {
        const LoadedPlan plan = planFromJson(planFor("dp8"), "plan.json");
        const CostModel current(graphOf("llama2-13b"), loadCluster("a100-80g", 2, 8));
        QCOMPARE(planStalenessWarnings(plan, current, 128, kSeqLen).size(), std::size_t {3});
    }

    void notCostedIsRefused()
    {
        ParallelConfig config;
        config.tp = 3; // does not divide the 32 heads: rejected before costing
        config.dp = 1;
        Workload workload;
        workload.seq_len = kSeqLen;
        EvaluateOptions options;
        options.require_full_cluster = false;
        const Evaluation e = llamaModel().evaluate(config, workload, options);
        QVERIFY(!e.reason.empty());
        const std::string error = inputErrorOf([&] { planToJson(e, llamaModel(), contextFor(config)); });
        QVERIFY2(error.find("not costed") != std::string::npos, error.c_str());

        // A context that disagrees with the configuration is refused too.
        const ParallelConfig dp = sampleConfigs().at("dp8");
        PlanFileContext wrong = contextFor(dp);
        wrong.global_batch = 33;
        QVERIFY(inputErrorOf([&] { planToJson(evaluate(llamaModel(), dp), llamaModel(), wrong); }) != "(no error)");
    }

    void frameworkAndRangesInTheDocument()
    {
        const json plan = planFor("torchtitan tp2 cp2 fsdp");
        QCOMPARE(plan["config"]["framework"].get<std::string>(), std::string("torchtitan"));
        QCOMPARE(planFor("dp8")["config"]["framework"].get<std::string>(), std::string("generic"));
        const json& m = plan["metrics"];
        QCOMPARE(m["step_time_range_s"].size(), std::size_t {2});
        QVERIFY(m["step_time_range_s"][0].get<double>() <= m["step_time_s"].get<double>());
        QVERIFY(m["step_time_range_s"][1].get<double>() >= m["step_time_s"].get<double>());
        QCOMPARE(m["peak_memory_range_gb"].size(), std::size_t {2});
        const std::string risk = m["oom_risk"].get<std::string>();
        QVERIFY2(risk == "fits" || risk == "tight" || risk == "likely", risk.c_str());
        QVERIFY(m.contains("regime"));
        const json& memory = plan["stages"][0]["memory"];
        QVERIFY(memory.contains("runtime_gb") && memory.contains("fragmentation_gb"));
    }

    void resultJsonCarriesFrameworkAndRanges()
    {
        const CostModel& model = llamaModel();
        const Evaluation e = evaluate(model, sampleConfigs().at("torchtitan tp2 cp2 fsdp"));
        QVERIFY2(!e.stages.empty(), e.reason.c_str());
        ParallelConfig bad = sampleConfigs().at("dp8");
        bad.tp = 3; // does not divide the heads: rejected before costing
        bad.dp = 1;
        const Evaluation rejected = evaluate(model, bad);
        QVERIFY(rejected.stages.empty());
        const json doc = resultJson({e, rejected}, model, SearchCounts {});
        const json& c = doc["candidates"][0];
        QCOMPARE(c["framework"].get<std::string>(), std::string("torchtitan"));
        QVERIFY(c["step_time_range_s"][0].get<double>() == e.step_time_range.low);
        QVERIFY(c["step_time_range_s"][1].get<double>() == e.step_time_range.high);
        QVERIFY(c["step_time_range_s"][0].get<double>() <= e.step_time);
        QVERIFY(c["step_time_range_s"][1].get<double>() >= e.step_time);
        QVERIFY(c["peak_memory_range_gb"][0].get<double>() == e.peak_memory_range.low / 1e9);
        QVERIFY(c["peak_memory_range_gb"][1].get<double>() == e.peak_memory_range.high / 1e9);
        QCOMPARE(c["oom_risk"].get<std::string>(), std::string(oomRiskName(e.oom_risk)));
        QCOMPARE(c["regime"].get<std::string>(), e.regime);
        QVERIFY(!e.regime.empty());
        for (std::size_t r = 0; r < e.stages.size(); ++r) {
            const json& stage = c["stages"][r];
            QCOMPARE(stage["memory_range_gb"].size(), std::size_t {2});
            QVERIFY(stage["memory_range_gb"][0].get<double>() <= stage["memory_gb"].get<double>() + 1e-12);
            QVERIFY(stage["memory_range_gb"][1].get<double>() >= stage["memory_gb"].get<double>() - 1e-12);
            const MemoryBreakdown& m = e.stages[r].memory;
            QVERIFY(stage["memory"]["runtime_gb"].get<double>() == m.runtime / 1e9);
            QVERIFY(stage["memory"]["fragmentation_gb"].get<double>() == m.fragmentation / 1e9);
            QVERIFY(stage["memory"]["allocated_gb"].get<double>() == m.allocated() / 1e9);
            QVERIFY(stage["memory"]["allocator_reserved_gb"].get<double>() == m.allocatorReserved() / 1e9);
        }
        // The stage with the largest peak carries the evaluation's range.
        const double highest = c["peak_memory_range_gb"][1].get<double>();
        bool found = false;
        for (const auto& stage : c["stages"])
            found = found || std::abs(stage["memory_range_gb"][1].get<double>() - highest) < 1e-9;
        QVERIFY(found);
        // Nothing costed: no ranges and no risk (null, not zero), the framework still named.
        const json& r = doc["candidates"][1];
        QVERIFY(r["step_time_range_s"].is_null());
        QVERIFY(r["peak_memory_range_gb"].is_null());
        QVERIFY(r["oom_risk"].is_null());
        QCOMPARE(r["framework"].get<std::string>(), std::string("generic"));
    }

    void oldPlansWithoutFrameworkOrRangesLoad()
    {
        // Plans written before the framework and the ranges existed: generic, no ranges.
        json doc = planFor("megatron-core tp2 pp2 dp2");
        doc["config"].erase("framework");
        doc["config"].erase("framework_version"); // newer still
        for (const char* key : {"step_time_range_s", "peak_memory_range_gb", "oom_risk", "regime"})
            doc["metrics"].erase(key);
        for (auto& stage : doc["stages"]) {
            stage["memory"].erase("runtime_gb");
            stage["memory"].erase("fragmentation_gb");
        }
        const LoadedPlan plan = planFromJson(doc, "old.json");
        QCOMPARE(int(plan.config.framework), int(Framework::Generic));
        QVERIFY(!plan.metrics.step_time_range_s && !plan.metrics.peak_memory_range_gb && !plan.metrics.oom_risk);
        QVERIFY(plan.metrics.regime.empty());
        // Aliases are read as the framework they name.
        doc["config"]["framework"] = "megatron";
        QCOMPARE(int(planFromJson(doc, "alias.json").config.framework), int(Framework::MegatronCore));
    }

    /** A plan made for a fabric measured below its line rate keeps that measurement, and re-simulates to the same
        step time: the link efficiency travels in the plan's cluster. */
    void planKeepsAMeasuredLinkEfficiency()
    {
        Cluster cluster = loadCluster("h100-sxm", 2, 8);
        cluster.device.inter_node.efficiency = 0.3;
        const CostModel model(graphOf("llama2-7b"), cluster);
        ParallelConfig acrossNodes = sampleConfigs().at("dp8");
        acrossNodes.dp = 16; // both nodes: the gradient sync crosses the measured links
        acrossNodes.zero_stage = 1; // the optimizer states sharded, so that the 7B fits in 80 GB
        const Evaluation e = evaluate(model, acrossNodes);
        QVERIFY2(e.feasible, e.reason.c_str());
        const LoadedPlan plan = planFromJson(planToJson(e, model, contextFor(acrossNodes)), "fabric.json");
        QCOMPARE(plan.cluster.device.inter_node.efficiency, 0.3);
        QCOMPARE(plan.cluster.fingerprint(), cluster.fingerprint());
        const CostModel reloaded(graphOf("llama2-7b"), plan.cluster);
        QVERIFY(evaluate(reloaded, plan.config).step_time == e.step_time);
        // At the default efficiency the same plan is faster: the measurement is what priced it.
        QVERIFY(evaluate(CostModel(graphOf("llama2-7b"), loadCluster("h100-sxm", 2, 8)), acrossNodes).step_time
                < e.step_time);
    }

    void infeasiblePlanRoundTrips()
    {
        const ParallelConfig config = sampleConfigs().at("dp8");
        const Evaluation e = evaluate(llamaModel(), config, 1e9); // 1 GB per GPU: nothing fits
        QVERIFY(!e.feasible);
        const LoadedPlan plan = planFromJson(planToJson(e, llamaModel(), contextFor(config)), "oom.json");
        QVERIFY(!plan.metrics.feasible);
        QCOMPARE(plan.metrics.reason, e.reason);
        QVERIFY(plan.metrics.memory_limit_gb == 1.0);
    }

    void corruptPlansRejected_data()
    {
        QTest::addColumn<QString>("patch"); // JSON Patch applied to a valid plan
        QTest::addColumn<QString>("key"); // expected "plan.json: KEY:" in the message
        QTest::addColumn<QString>("detail");
        const auto row = [](const char* name, const char* patch, const char* key, const char* detail) {
            QTest::newRow(name) << patch << key << detail;
        };
        row("schema", R"([{"op":"replace","path":"/schema","value":"shardscape.plan/2"}])", "schema",
            "unsupported schema");
        row("no schema", R"([{"op":"remove","path":"/schema"}])", "schema", "required field is missing");
        row("unknown key", R"([{"op":"add","path":"/plan_notes","value":1}])", "plan_notes", "unknown key");
        row("config typo", R"([{"op":"add","path":"/config/rank_ordr","value":"tp-cp-dp-pp"}])", "config.rank_ordr",
            "did you mean 'rank_order'?");
        row("missing tp", R"([{"op":"remove","path":"/config/tp"}])", "config.tp", "required field is missing");
        row("tp string", R"([{"op":"replace","path":"/config/tp","value":"2"}])", "config.tp", "expected an integer");
        row("dp negative", R"([{"op":"replace","path":"/config/dp","value":-2}])", "config.dp", "out of range");
        row("micro-batch zero", R"([{"op":"replace","path":"/config/micro_batch","value":0}])", "config.micro_batch",
            "out of range");
        row("zero 5", R"([{"op":"replace","path":"/config/zero_stage","value":5}])", "config.zero_stage",
            "out of range");
        row("schedule", R"([{"op":"replace","path":"/config/schedule","value":"2f2b"}])", "config.schedule",
            "unknown schedule '2f2b'");
        row("recompute", R"([{"op":"replace","path":"/config/recompute","value":"sometimes"}])", "config.recompute",
            "unknown recomputation");
        row("modules without names", R"([{"op":"replace","path":"/config/recompute","value":"modules"}])",
            "config.recompute_modules", "at least one module");
        row("rank order", R"([{"op":"replace","path":"/config/rank_order","value":"tp-dp-pp"}])", "config.rank_order",
            "not an order of tp, cp, dp and pp");
        row("sp without tp", R"([{"op":"replace","path":"/config/tp","value":1},
                                 {"op":"replace","path":"/config/sequence_parallel","value":true}])",
            "config.sequence_parallel", "needs tp > 1");
        row("vpp without interleaved", R"([{"op":"replace","path":"/config/vpp","value":2}])", "config.vpp",
            "needs the interleaved schedule");
        row("stage_layers sum", R"([{"op":"replace","path":"/config/stage_layers","value":[10, 10]}])",
            "config.stage_layers", "sum to 20");
        row("stage_layers mismatch", R"([{"op":"replace","path":"/config/stage_layers","value":[18, 16]}])", "stages",
            "differ from config.stage_layers");
        row("global batch", R"([{"op":"replace","path":"/global_batch","value":64}])", "global_batch",
            "is not dp x micro_batch x num_microbatches");
        row("seq_len negative", R"([{"op":"replace","path":"/seq_len","value":-5}])", "seq_len", "out of range");
        row("world size", R"([{"op":"replace","path":"/world_size","value":16}])", "world_size", "tp x cp x dp x pp");
        row("model fingerprint", R"([{"op":"replace","path":"/model_fingerprint","value":"abc"}])", "model_fingerprint",
            "16 hex digits");
        row("cluster fingerprint", R"([{"op":"replace","path":"/cluster_fingerprint","value":"cluster:XYZ"}])",
            "cluster_fingerprint", "16 hex digits");
        row("num_layers", R"([{"op":"replace","path":"/model/num_layers","value":0}])", "model.num_layers",
            "out of range");
        row("dtype", R"([{"op":"replace","path":"/model/dtype","value":"bf17"}])", "model.dtype", "unknown dtype");
        row("stage missing", R"([{"op":"remove","path":"/stages/1"}])", "stages", "one per pipeline rank");
        row("ranks", R"([{"op":"replace","path":"/stages/0/ranks","value":[0,1,2,4]}])", "stages[0].ranks",
            "do not match rank_order");
        row("rank out of range", R"([{"op":"replace","path":"/stages/0/ranks/0","value":99}])", "stages[0].ranks",
            "GPU rank in [0, 7]");
        row("devices", R"([{"op":"replace","path":"/stages/0/devices","value":8}])", "stages[0].devices",
            "tp x cp x dp");
        row("chunk range", R"([{"op":"replace","path":"/stages/0/chunks/0/layers","value":[5, 2]}])",
            "stages[0].chunks[0].layers", "not within");
        row("chunk gap", R"([{"op":"replace","path":"/stages/1/chunks/0/layers/0","value":20}])", "stages",
            "starts at layer 20");
        row("layer names", R"([{"op":"replace","path":"/stages/0/chunks/0/layer_names","value":["a"]}])",
            "stages[0].chunks[0].layer_names", "expected 2 names");
        row("compute negative", R"([{"op":"replace","path":"/stages/1/compute_s","value":-1}])", "stages[1].compute_s",
            "out of range");
        row("memory negative", R"([{"op":"replace","path":"/stages/0/memory/weights_gb","value":-3}])",
            "stages[0].memory.weights_gb", "out of range");
        row("layer stage", R"([{"op":"replace","path":"/layers/3/stage","value":1}])", "layers[3].stage", "expected 0");
        row("layer name", R"([{"op":"replace","path":"/layers/0/name","value":"model.norm"}])", "layers[0].name",
            "does not match the layer_names");
        row("layer kind", R"([{"op":"replace","path":"/layers/2/kind","value":"mystery"}])", "layers[2].kind",
            "unknown layer kind");
        row("layer tp", R"([{"op":"replace","path":"/layers/2/tp","value":4}])", "layers[2].tp", "config.tp = 2");
        row("layers short", R"([{"op":"remove","path":"/layers/33"}])", "layers", "model.num_layers");
        row("step time type", R"([{"op":"replace","path":"/metrics/step_time_s","value":"fast"}])",
            "metrics.step_time_s", "expected a number");
        row("mfu negative", R"([{"op":"replace","path":"/metrics/mfu","value":-0.1}])", "metrics.mfu", "out of range");
        row("bubble negative", R"([{"op":"replace","path":"/metrics/bubble_ratio","value":-1}])",
            "metrics.bubble_ratio", "out of range");
        row("peak memory", R"([{"op":"replace","path":"/metrics/peak_memory_gb/0","value":1.5}])",
            "metrics.peak_memory_gb", "stages[0].memory_gb");
        row("time missing", R"([{"op":"remove","path":"/metrics/time"}])", "metrics.time", "required field is missing");
        row("feasible reason", R"([{"op":"replace","path":"/metrics/reason","value":"too big"}])", "metrics.reason",
            "a feasible plan has no reason");
        row("cluster nodes", R"([{"op":"replace","path":"/cluster/nodes","value":0}])", "cluster.nodes",
            "out of range");
        row("framework", R"([{"op":"replace","path":"/config/framework","value":"jax"}])", "config.framework",
            "unknown framework 'jax'");
        row("framework type", R"([{"op":"replace","path":"/config/framework","value":2}])", "config.framework",
            "expected a string");
        row("oom risk", R"([{"op":"replace","path":"/metrics/oom_risk","value":"maybe"}])", "metrics.oom_risk",
            "use fits, tight or likely");
        row("step range order", R"([{"op":"replace","path":"/metrics/step_time_range_s","value":[2, 1]}])",
            "metrics.step_time_range_s", "not a range");
        row("memory range shape", R"([{"op":"replace","path":"/metrics/peak_memory_range_gb","value":[1]}])",
            "metrics.peak_memory_range_gb", "expected [low, high]");
        row("runtime negative", R"([{"op":"replace","path":"/stages/0/memory/runtime_gb","value":-1}])",
            "stages[0].memory.runtime_gb", "out of range");
        row("cluster device", R"([{"op":"replace","path":"/cluster/device/memory_gib","value":-1}])", "cluster.device",
            "memory_gib");
    }
    void corruptPlansRejected()
    {
        QFETCH(QString, patch);
        QFETCH(QString, key);
        QFETCH(QString, detail);
        json doc = planFor("tp2 pp2 dp2 1f1b");
        doc["metrics"]["feasible"] = true; // so that "feasible reason" tests the rule, whatever the memory says
        doc["metrics"]["reason"] = "";
        QVERIFY(planFromJson(doc, "plan.json").config.tp == 2);
        doc = doc.patch(json::parse(patch.toStdString()));
        const std::string error = inputErrorOf([&] { planFromJson(doc, "plan.json"); });
        QVERIFY2(error.find("plan.json: " + key.toStdString()) != std::string::npos, error.c_str());
        QVERIFY2(error.find(detail.toStdString()) != std::string::npos, error.c_str());
    }

    void corruptFilesRejected()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const std::filesystem::path path = dir.filePath("plan.json").toStdString();
        const std::string text = planFor("dp8").dump(2);

        std::ofstream(path, std::ios::trunc) << text.substr(0, text.size() / 2);
        std::string error = inputErrorOf([&] { loadPlanFile(path); });
        QVERIFY2(error.find(path.string() + ":") != std::string::npos, error.c_str());
        QVERIFY2(error.find("malformed JSON") != std::string::npos, error.c_str());

        std::ofstream(path, std::ios::trunc) << "";
        error = inputErrorOf([&] { loadPlanFile(path); });
        QVERIFY2(error.find("empty") != std::string::npos, error.c_str());

        std::ofstream(path, std::ios::trunc) << "[1, 2]";
        error = inputErrorOf([&] { loadPlanFile(path); });
        QVERIFY2(error.find("expected a JSON object") != std::string::npos, error.c_str());

        error = inputErrorOf([&] { loadPlanFile(dir.filePath("missing.json").toStdString()); });
        QVERIFY2(error.find("no such file") != std::string::npos, error.c_str());

        // savePlanFile refuses a missing directory with the path named.
        error
            = inputErrorOf([&] { savePlanFile(dir.filePath("no/such/dir/plan.json").toStdString(), json::object()); });
        QVERIFY2(error.find("plan.json") != std::string::npos, error.c_str());
    }
};

QTEST_APPLESS_MAIN(TestPlan)
#include "tst_plan.moc"
