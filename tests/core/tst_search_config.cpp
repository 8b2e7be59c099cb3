// SPDX-License-Identifier: MIT
// PlannerConfig: AutoDist's keys and defaults, the "auto" and comma-string forms, strict errors that name the key,
// cross-field checks, and the JSON round trip.
#include "test_helpers.h"

#include "shardscape/search/planner_config.h"
#include "shardscape/support/error.h"

#include <QTemporaryDir>
#include <QTest>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>

using namespace shardscape;
using nlohmann::json;

Q_DECLARE_METATYPE(std::string)

namespace {

/** The InputError message (cause and hint), or "(no error)". */
std::string errorOf(const std::function<void()>& f)
{
    try {
        f();
    } catch (const InputError& e) {
        return e.message();
    }
    return "(no error)";
}

/** Field-by-field equality (PlannerConfig has no operator==; a missed field here would hide a round-trip bug). */
bool sameConfig(const PlannerConfig& a, const PlannerConfig& b)
{
    return a.locks.describe() == b.locks.describe() && a.framework_version == b.framework_version
        && a.task_name == b.task_name && a.consider_mem == b.consider_mem && a.memory_constraint == b.memory_constraint
        && a.memory_granularity == b.memory_granularity && a.transient_mem_coef == b.transient_mem_coef
        && a.opt_resident_coef == b.opt_resident_coef && a.opt_transient_coef == b.opt_transient_coef
        && a.recompute_modules == b.recompute_modules && a.zero_stage == b.zero_stage
        && a.zero_ngroups == b.zero_ngroups && a.pipeline_pivots == b.pipeline_pivots
        && a.pipeline_nstages == b.pipeline_nstages && a.pipeline_scheduler == b.pipeline_scheduler
        && a.max_pipeline_bubble_ratio == b.max_pipeline_bubble_ratio
        && a.max_pipeline_unbalance_ratio == b.max_pipeline_unbalance_ratio && a.mesh_row == b.mesh_row
        && a.mesh_col == b.mesh_col && a.world_size == b.world_size && a.micro_batch_size == b.micro_batch_size
        && a.update_freq == b.update_freq && a.profile_dir == b.profile_dir && a.use_profile == b.use_profile
        && a.parallel_profile == b.parallel_profile && a.re_profile == b.re_profile && a.topk == b.topk
        && a.solver == b.solver && a.nproc == b.nproc && a.load_plan_path == b.load_plan_path
        && a.save_plan_path == b.save_plan_path && a.partition_constraints_path == b.partition_constraints_path
        && a.is_train == b.is_train && a.verbose == b.verbose
        && a.ignore_small_tensor_threshold == b.ignore_small_tensor_threshold && a.method == b.method
        && a.max_cp == b.max_cp && a.layer_num == b.layer_num && a.tp_comm_overlap == b.tp_comm_overlap
        && a.overlap_param_gather == b.overlap_param_gather && a.moe_a2a_overlap == b.moe_a2a_overlap
        && a.moe_shared_expert_overlap == b.moe_shared_expert_overlap && a.moe_capacity_factor == b.moe_capacity_factor
        && a.moe_router_imbalance == b.moe_router_imbalance && a.fp8_linears == b.fp8_linears
        && a.fp8_recipe == b.fp8_recipe && a.fp8_bf16_first_layers == b.fp8_bf16_first_layers
        && a.fp8_bf16_last_layers == b.fp8_bf16_last_layers && a.grad_reduce_bf16 == b.grad_reduce_bf16
        && a.fp8_param_gather == b.fp8_param_gather && a.eager_kernels == b.eager_kernels && a.framework == b.framework
        && a.min_memory_headroom == b.min_memory_headroom && a.input_len == b.input_len && a.output_len == b.output_len
        && a.concurrency == b.concurrency && a.weight_dtype == b.weight_dtype && a.kv_cache_dtype == b.kv_cache_dtype
        && a.max_ttft_ms == b.max_ttft_ms && a.max_tpot_ms == b.max_tpot_ms
        && a.serving_framework == b.serving_framework && a.memory_fraction == b.memory_fraction;
}

/** Every field away from its default (and values that are not round in binary). */
PlannerConfig unusualConfig()
{
    PlannerConfig c;
    c.task_name = "llama-70b on 64";
    c.consider_mem = false;
    c.memory_constraint = 71.3;
    c.memory_granularity = 2.5e6;
    c.transient_mem_coef = 1.1;
    c.opt_resident_coef = 4;
    c.opt_transient_coef = 2;
    c.recompute_modules = {"self_attn", "mlp"};
    c.zero_stage = 1;
    c.zero_ngroups = 2;
    c.pipeline_pivots = {"model.layers.0", "model.layers.40"};
    c.pipeline_nstages = 4;
    c.pipeline_scheduler = "1f1b"; // what DeepSpeed's pipeline engine runs
    c.max_pipeline_bubble_ratio = 0.2;
    c.max_pipeline_unbalance_ratio = 0.3;
    c.mesh_row = 8;
    c.mesh_col = 8;
    c.world_size = 64;
    c.micro_batch_size = 2;
    c.update_freq = 16;
    c.profile_dir = "/tmp/profiles";
    c.use_profile = false;
    c.parallel_profile = false;
    c.re_profile = true;
    c.topk = 7;
    c.solver = "ilp";
    c.nproc = 3;
    c.load_plan_path = "in.plan.json";
    c.save_plan_path = "out.plan.json";
    c.partition_constraints_path = "constraints.yaml";
    c.is_train = false;
    c.verbose = true;
    c.ignore_small_tensor_threshold = 4096;
    c.method = PlanMethod::PipeShard;
    c.max_cp = 4;
    c.layer_num = 12;
    c.framework = Framework::MegatronCore; // it runs grad_reduce_bf16
    c.fp8_recipe = Float8Recipe::Rowwise; // read only with fp8_linears, which is off
    c.fp8_bf16_first_layers = 2; // the same
    c.fp8_bf16_last_layers = 3;
    c.grad_reduce_bf16 = true;
    c.fp8_param_gather = false;
    c.min_memory_headroom = 2.7;
    c.input_len = 3000;
    c.output_len = 77;
    c.concurrency = 48;
    c.weight_dtype = WeightFormat::INT4;
    c.kv_cache_dtype = DType::FP8;
    c.max_ttft_ms = 250.5;
    c.max_tpot_ms = 33.3;
    c.serving_framework = ServingFramework::Sglang;
    c.memory_fraction = 0.85;
    return c;
}

} // namespace

class TestSearchConfig : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void methodNamesRoundTrip()
    {
        for (const auto method : {PlanMethod::Auto, PlanMethod::Data, PlanMethod::Zero2, PlanMethod::Zero3,
                                  PlanMethod::Shard, PlanMethod::PipeShard}) {
            const auto name = planMethodName(method);
            QVERIFY(!name.empty());
            QVERIFY(parsePlanMethod(name) == method);
        }
        QVERIFY(parsePlanMethod("PipeShard") == PlanMethod::PipeShard);
        QVERIFY(!parsePlanMethod("tensor"));
        QVERIFY(!parsePlanMethod(""));
    }

    void emptyObjectGivesDefaults()
    {
        const PlannerConfig c = plannerConfigFromJson(json::object(), "empty.json");
        QVERIFY(sameConfig(c, PlannerConfig {}));
        PlannerConfig {}.validate();
    }

    void exampleFileHasEveryKeyWithItsDefault()
    {
        const std::filesystem::path path = SHARDSCAPE_SOURCE_DIR "/resources/configs/planner-example.json";
        const PlannerConfig c = loadPlannerConfig(path);
        QVERIFY(sameConfig(c, PlannerConfig {}));
        std::ifstream in(path);
        const json doc = json::parse(in);
        std::vector<std::string> fileKeys;
        for (const auto& item : doc.items())
            fileKeys.push_back(item.key());
        std::vector<std::string> allKeys;
        const json defaults = toJson(PlannerConfig {});
        for (const auto& item : defaults.items())
            allKeys.push_back(item.key());
        std::sort(fileKeys.begin(), fileKeys.end());
        QCOMPARE(fileKeys, allKeys); // json keeps object keys sorted
        // 32 AutoDist keys + method, max_cp, layer_num, the five framework features, use_profile, framework,
        // framework_version, min_memory_headroom, the seven dimension locks (tp pp dp cp ep vpp recompute) and the
        // two counts of BF16 blocks under FP8, grad_reduce_bf16 and fp8_param_gather
        QCOMPARE(allKeys.size(), std::size_t {68});
    }

    void locksReadAndRoundTrip()
    {
        const PlannerConfig c
            = plannerConfigFromJson(json::parse(R"({"tp": [8, 4, 8], "pp": 2, "recompute": "full", "zero_stage": [1, 3],
                            "micro_batch_size": [1, 2], "pipeline_scheduler": ["1f1b", "interleaved"]})"),
                                    "locks");
        QCOMPARE(c.locks.tp, (std::vector<int> {4, 8}));
        QCOMPARE(c.locks.pp, (std::vector<int> {2}));
        QCOMPARE(c.locks.zero, (std::vector<int> {1, 3}));
        QCOMPARE(c.locks.micro_batch, (std::vector<int> {1, 2}));
        QCOMPARE(c.locks.recompute.size(), std::size_t {1});
        QCOMPARE(c.locks.schedule.size(), std::size_t {2});
        QCOMPARE(c.locks.describe(),
                 std::string("tp 4,8; pp 2; micro-batch 1,2; zero 1,3; recompute full; schedule 1f1b,interleaved"));
        QVERIFY(sameConfig(plannerConfigFromJson(toJson(c), "again"), c));
        const std::string bad
            = test::inputErrorOf([] { plannerConfigFromJson(json::parse(R"({"tp": [4, 0]})"), "x"); });
        QVERIFY2(bad.find("x: tp: expected an integer in [1,") != std::string::npos, bad.c_str());
        const std::string name
            = test::inputErrorOf([] { plannerConfigFromJson(json::parse(R"({"recompute": ["fast"]})"), "x"); });
        QVERIFY2(name.find("use none, selective or full") != std::string::npos, name.c_str());
    }

    void roundTrip()
    {
        const PlannerConfig c = unusualConfig();
        c.validate();
        QVERIFY(sameConfig(plannerConfigFromJson(toJson(c), "memory"), c));
        // Through text as well: doubles must survive dump and parse bit for bit.
        QVERIFY(sameConfig(plannerConfigFromJson(json::parse(toJson(c).dump()), "text"), c));
        QVERIFY(sameConfig(plannerConfigFromJson(toJson(PlannerConfig {}), "defaults"), PlannerConfig {}));

        PlannerConfig autos;
        autos.zero_stage = -1;
        autos.pipeline_nstages = 0;
        const json doc = toJson(autos);
        QCOMPARE(doc["zero_stage"].get<std::string>(), std::string("auto"));
        QCOMPARE(doc["pipeline_nstages"].get<std::string>(), std::string("auto"));
        QVERIFY(sameConfig(plannerConfigFromJson(doc, "autos"), autos));
        QCOMPARE(doc["min_memory_headroom"].get<std::string>(), std::string("auto"));
        QCOMPARE(doc["framework"].get<std::string>(), std::string("generic"));
    }

    void frameworkNamesAndAliases_data()
    {
        QTest::addColumn<std::string>("name");
        QTest::addColumn<int>("framework");
        for (const auto f : allFrameworks())
            QTest::newRow(std::string(frameworkName(f)).c_str()) << std::string(frameworkName(f)) << int(f);
        QTest::newRow("Megatron any case") << std::string("Megatron") << int(Framework::MegatronCore);
        QTest::newRow("megatron-lm") << std::string("megatron-lm") << int(Framework::MegatronCore);
        QTest::newRow("mcore") << std::string("mcore") << int(Framework::MegatronCore);
        QTest::newRow("titan") << std::string(" titan ") << int(Framework::Torchtitan);
        QTest::newRow("llm-foundry") << std::string("llm-foundry") << int(Framework::Composer);
    }
    void frameworkNamesAndAliases()
    {
        QFETCH(std::string, name);
        QFETCH(int, framework);
        const PlannerConfig c = plannerConfigFromJson(json {{"framework", name}}, "f.json");
        QCOMPARE(int(c.framework), framework);
        // Written back under its canonical name.
        QCOMPARE(toJson(c)["framework"].get<std::string>(), std::string(frameworkName(c.framework)));
    }

    void minMemoryHeadroomForms()
    {
        QCOMPARE(plannerConfigFromJson(json::parse(R"({"min_memory_headroom": "auto"})"), "h").min_memory_headroom,
                 -1.0);
        QCOMPARE(plannerConfigFromJson(json::parse(R"({"min_memory_headroom": "AUTO"})"), "h").min_memory_headroom,
                 -1.0);
        QCOMPARE(plannerConfigFromJson(json::parse(R"({"min_memory_headroom": 0})"), "h").min_memory_headroom, 0.0);
        QCOMPARE(plannerConfigFromJson(json::parse(R"({"min_memory_headroom": 4.5})"), "h").min_memory_headroom, 4.5);
        QCOMPARE(
            toJson(plannerConfigFromJson(json::parse(R"({"min_memory_headroom": 4.5})"), "h"))["min_memory_headroom"]
                .get<double>(),
            4.5);
    }

    void loadsFromFile()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const std::filesystem::path path = dir.filePath("planner.json").toStdString();
        std::ofstream(path) << toJson(unusualConfig()).dump(2);
        QVERIFY(sameConfig(loadPlannerConfig(path), unusualConfig()));

        std::ofstream(path) << "{\n  \"topk\": 4,\n  \"solver\": \n}\n";
        const std::string error = errorOf([&] { loadPlannerConfig(path); });
        QVERIFY2(error.find(path.string() + ":4:1:") != std::string::npos, error.c_str());
        const std::string missing = errorOf([&] { loadPlannerConfig(dir.filePath("nope.json").toStdString()); });
        QVERIFY2(missing.find("no such file") != std::string::npos, missing.c_str());
    }

    void autoAndCommaForms_data()
    {
        QTest::addColumn<std::string>("text");
        QTest::addColumn<int>("nstages");
        QTest::addColumn<int>("zero");
        QTest::addColumn<std::vector<std::string>>("recompute");
        QTest::addColumn<std::vector<std::string>>("pivots");
        using Names = std::vector<std::string>;
        QTest::newRow("auto strings") << std::string(R"({"pipeline_nstages": "auto", "zero_stage": "auto"})") << 0 << -1
                                      << Names {} << Names {};
        QTest::newRow("AUTO any case") << std::string(R"({"pipeline_nstages": "Auto", "zero_stage": "AUTO"})") << 0
                                       << -1 << Names {} << Names {};
        QTest::newRow("integers") << std::string(R"({"pipeline_nstages": 4, "zero_stage": 3})") << 4 << 3 << Names {}
                                  << Names {};
        QTest::newRow("integral float") << std::string(R"({"pipeline_nstages": 2.0, "zero_stage": 0})") << 2 << 0
                                        << Names {} << Names {};
        QTest::newRow("comma strings") << std::string(
            R"({"recompute_modules": "self_attn, mlp", "pipeline_pivots": "model.layers.0,model.layers.16"})")
                                       << 0 << -1 << Names {"self_attn", "mlp"}
                                       << Names {"model.layers.0", "model.layers.16"};
        QTest::newRow("single name") << std::string(R"({"recompute_modules": "ROOT"})") << 0 << -1 << Names {"ROOT"}
                                     << Names {};
        QTest::newRow("empty string") << std::string(R"({"recompute_modules": " ", "pipeline_pivots": ""})") << 0 << -1
                                      << Names {} << Names {};
        QTest::newRow("lists") << std::string(R"({"recompute_modules": ["a.b", "c"], "pipeline_pivots": []})") << 0
                               << -1 << Names {"a.b", "c"} << Names {};
    }
    void autoAndCommaForms()
    {
        QFETCH(std::string, text);
        QFETCH(int, nstages);
        QFETCH(int, zero);
        QFETCH(std::vector<std::string>, recompute);
        QFETCH(std::vector<std::string>, pivots);
        const PlannerConfig c = plannerConfigFromJson(json::parse(text), "forms.json");
        QCOMPARE(c.pipeline_nstages, nstages);
        QCOMPARE(c.zero_stage, zero);
        QCOMPARE(c.recompute_modules, recompute);
        QCOMPARE(c.pipeline_pivots, pivots);
    }

    void canonicalNames()
    {
        const PlannerConfig c = plannerConfigFromJson(
            json::parse(R"({"pipeline_scheduler": "1F1B", "solver": "ILP", "method": "Zero3"})"), "case.json");
        QCOMPARE(c.pipeline_scheduler, std::string("1f1b"));
        QCOMPARE(c.solver, std::string("ilp"));
        QVERIFY(c.method == PlanMethod::Zero3);
        for (const char* name : {"gpipe", "1f1b", "interleaved", "zb-h1", "auto"})
            QCOMPARE(plannerConfigFromJson(json {{"pipeline_scheduler", name}}, "s").pipeline_scheduler,
                     std::string(name));
    }

    void badInputNamesTheKey_data()
    {
        QTest::addColumn<std::string>("text");
        QTest::addColumn<std::string>("key");
        QTest::addColumn<std::string>("detail");
        const auto row = [](const char* name, const char* text, const char* key, const char* detail) {
            QTest::newRow(name) << std::string(text) << std::string(key) << std::string(detail);
        };
        // Unknown keys, with the nearest valid key suggested.
        row("typo topK", R"({"topK": 3})", "topK", "did you mean 'topk'?");
        row("typo nstage", R"({"pipeline_nstage": 2})", "pipeline_nstage", "did you mean 'pipeline_nstages'?");
        row("typo memory", R"({"memory_constrain": 40})", "memory_constrain", "did you mean 'memory_constraint'?");
        row("far off", R"({"banana": 1})", "banana", "allowed keys:");
        // Wrong types.
        row("bool as string", R"({"consider_mem": "yes"})", "consider_mem", "expected true or false");
        row("int as string", R"({"topk": "20"})", "topk", "expected an integer");
        row("number as string", R"({"memory_constraint": "32"})", "memory_constraint", "expected a number");
        row("fraction", R"({"nproc": 2.5})", "nproc", "expected an integer");
        row("string as list", R"({"recompute_modules": 5})", "recompute_modules", "comma-separated string");
        row("list of numbers", R"({"pipeline_pivots": [1]})", "pipeline_pivots", "entry 0 should be a name");
        row("empty list entry", R"({"recompute_modules": ["a", " "]})", "recompute_modules", "entry 1 is an empty");
        row("empty comma item", R"({"recompute_modules": "a,,b"})", "recompute_modules", "empty name");
        row("trailing comma", R"({"pipeline_pivots": "a,"})", "pipeline_pivots", "empty name");
        row("task name type", R"({"task_name": 3})", "task_name", "expected a string");
        row("empty task name", R"({"task_name": ""})", "task_name", "must not be empty");
        row("method type", R"({"method": 1})", "method", "expected a string");
        // Out of range.
        row("topk 0", R"({"topk": 0})", "topk", "out of range [1, 10000]");
        row("topk big", R"({"topk": 10001})", "topk", "out of range");
        row("nproc negative", R"({"nproc": -1})", "nproc", "out of range [0, 4096]");
        row("nproc big", R"({"nproc": 5000})", "nproc", "out of range");
        row("memory negative", R"({"memory_constraint": -1})", "memory_constraint", "out of range");
        row("memory huge", R"({"memory_constraint": 2e6})", "memory_constraint", "out of range");
        row("coef negative", R"({"transient_mem_coef": -0.5})", "transient_mem_coef", "out of range");
        row("opt coef negative", R"({"opt_resident_coef": -6})", "opt_resident_coef", "out of range");
        row("granularity zero", R"({"memory_granularity": 0})", "memory_granularity", "out of range");
        row("bubble > 1", R"({"max_pipeline_bubble_ratio": 1.5})", "max_pipeline_bubble_ratio", "out of range");
        row("unbalance < 0", R"({"max_pipeline_unbalance_ratio": -0.1})", "max_pipeline_unbalance_ratio",
            "out of range");
        row("mesh negative", R"({"mesh_row": -1})", "mesh_row", "out of range");
        row("micro-batch negative", R"({"micro_batch_size": -2})", "micro_batch_size", "out of range");
        row("update_freq negative", R"({"update_freq": -1})", "update_freq", "out of range");
        row("threshold negative", R"({"ignore_small_tensor_threshold": -1})", "ignore_small_tensor_threshold",
            "out of range");
        row("zero 4", R"({"zero_stage": 4})", "zero_stage", "out of range [0, 3]");
        row("zero -1 number", R"({"zero_stage": -1})", "zero_stage", "out of range [0, 3]");
        row("zero word", R"({"zero_stage": "max"})", "zero_stage", "expected \"auto\"");
        row("zero_ngroups 0", R"({"zero_ngroups": 0})", "zero_ngroups", "out of range");
        row("nstages 0", R"({"pipeline_nstages": 0})", "pipeline_nstages", "out of range");
        row("nstages word", R"({"pipeline_nstages": "many"})", "pipeline_nstages", "expected \"auto\"");
        row("nstages fraction", R"({"pipeline_nstages": 2.5})", "pipeline_nstages", "expected an integer");
        row("nstages bool", R"({"pipeline_nstages": true})", "pipeline_nstages", "expected \"auto\"");
        row("max_cp 3", R"({"max_cp": 3})", "max_cp", "not a power of two");
        row("max_cp 128", R"({"max_cp": 128})", "max_cp", "out of range [1, 64]");
        row("max_cp 0", R"({"max_cp": 0})", "max_cp", "out of range");
        // Names.
        row("solver", R"({"solver": "greedy"})", "solver", "use dp or ilp");
        row("scheduler", R"({"pipeline_scheduler": "2f2b"})", "pipeline_scheduler", "unknown schedule '2f2b'");
        row("method", R"({"method": "tensor"})", "method", "unknown method 'tensor'");
        // Cross-field consistency.
        row("mesh vs world", R"({"mesh_row": 2, "mesh_col": 8, "world_size": 8})", "world_size",
            "not mesh_row x mesh_col = 2 x 8 = 16");
        row("stages vs world", R"({"world_size": 16, "pipeline_nstages": 32})", "pipeline_nstages",
            "more stages than the 16 GPUs");
        row("stages vs mesh", R"({"mesh_row": 1, "mesh_col": 4, "pipeline_nstages": 8})", "pipeline_nstages",
            "more stages than the 4 GPUs");
        row("ngroups without zero", R"({"zero_stage": 0, "zero_ngroups": 2})", "zero_ngroups", "needs ZeRO");
        row("data with pipeline", R"({"method": "data", "pipeline_nstages": 4})", "pipeline_nstages",
            "contradicts method 'data'");
        row("shard with pipeline", R"({"method": "shard", "pipeline_nstages": 2})", "pipeline_nstages",
            "contradicts method 'shard'");
        row("pipeshard without", R"({"method": "pipeshard", "pipeline_nstages": 1})", "pipeline_nstages",
            "needs a pipeline");
        row("zero3 vs zero 1", R"({"method": "zero3", "zero_stage": 1})", "zero_stage", "contradicts method 'zero3'");
        row("data vs zero 2", R"({"method": "data", "zero_stage": 2})", "zero_stage", "contradicts method 'data'");
        // The framework: its name, and what the config pins must be something it runs.
        row("framework typo", R"({"framework": "torchtitn"})", "framework", "did you mean 'torchtitan'?");
        row("framework unknown", R"({"framework": "jax"})", "framework",
            "use generic, megatron-core, nemo, torchtitan, deepspeed, composer");
        row("framework type", R"({"framework": 3})", "framework", "expected a string");
        row("framework key typo", R"({"framwork": "nemo"})", "framwork", "did you mean 'framework'?");
        row("torchtitan zero 1", R"({"framework": "torchtitan", "zero_stage": 1})", "zero_stage",
            "not a ZeRO stage torchtitan runs (2, 3)");
        row("torchtitan data", R"({"framework": "torchtitan", "method": "data"})", "method",
            "torchtitan does not run (2, 3)");
        row("megatron zb-h1", R"({"framework": "megatron-core", "pipeline_scheduler": "zb-h1"})", "pipeline_scheduler",
            "megatron-core has no zb-h1 schedule (it runs 1f1b, interleaved)");
        row("deepspeed interleaved", R"({"framework": "deepspeed", "pipeline_scheduler": "interleaved"})",
            "pipeline_scheduler", "deepspeed has no interleaved schedule");
        row("composer stages", R"({"framework": "composer", "pipeline_nstages": 2})", "pipeline_nstages",
            "composer does not have");
        row("composer pipeshard", R"({"framework": "composer", "method": "pipeshard"})", "method",
            "needs pipeline parallelism");
        row("deepspeed fp8", R"({"framework": "deepspeed", "fp8_linears": true})", "fp8_linears", "no FP8 training");
        row("megatron rowwise", R"({"framework": "megatron-core", "fp8_linears": true, "fp8_recipe": "rowwise"})",
            "fp8_recipe", "megatron-core has no rowwise FP8 scaling");
        row("titan bf16 edge layers",
            R"({"framework": "torchtitan", "fp8_linears": true, "fp8_recipe": "rowwise", "fp8_bf16_last_layers": 1})",
            "fp8_bf16_last_layers", "runs every block's linears in FP8");
        row("titan bf16 reduce", R"({"framework": "torchtitan", "grad_reduce_bf16": true})", "grad_reduce_bf16",
            "reduces gradients in fp32 only");
        row("bf16 layers negative", R"({"fp8_bf16_first_layers": -1})", "fp8_bf16_first_layers", "out of range");
        row("recipe typo", R"({"fp8_recipe": "row-wise"})", "fp8_recipe", "use \"tensorwise\" or \"rowwise\"");
        row("recipe type", R"({"fp8_recipe": 1})", "fp8_recipe", "expected a string");
        row("titan async TP eager", R"({"framework": "titan", "tp_comm_overlap": true, "eager_kernels": true})",
            "tp_comm_overlap", "needs torch.compile");
        // The headroom.
        row("headroom negative", R"({"min_memory_headroom": -2})", "min_memory_headroom", "out of range");
        row("headroom word", R"({"min_memory_headroom": "some"})", "min_memory_headroom", "expected \"auto\" or GB");
        row("headroom bool", R"({"min_memory_headroom": true})", "min_memory_headroom", "expected \"auto\" or GB");
    }
    void badInputNamesTheKey()
    {
        QFETCH(std::string, text);
        QFETCH(std::string, key);
        QFETCH(std::string, detail);
        const std::string error = errorOf([&] { plannerConfigFromJson(json::parse(text), "bad.json"); });
        QVERIFY2(error.find("bad.json: " + key + ":") != std::string::npos, error.c_str());
        QVERIFY2(error.find(detail) != std::string::npos, error.c_str());
    }

    void consistentInputsAccepted()
    {
        // All three mesh keys when they agree; "auto" with any method; a method's own ZeRO stage.
        for (const char* text : {R"({"mesh_row": 2, "mesh_col": 8, "world_size": 16})",
                                 R"({"method": "zero2", "zero_stage": 2, "pipeline_nstages": 1})",
                                 R"({"method": "pipeshard", "pipeline_nstages": "auto"})",
                                 R"({"zero_stage": "auto", "zero_ngroups": 4, "world_size": 16})",
                                 R"({"memory_constraint": 0.5, "max_cp": 1})",
                                 // What the framework runs, and a schedule that does not apply without a pipeline.
                                 R"({"framework": "torchtitan", "zero_stage": 3, "pipeline_scheduler": "gpipe"})",
                                 R"({"framework": "composer", "pipeline_nstages": 1, "pipeline_scheduler": "1f1b"})",
                                 R"({"framework": "deepspeed", "method": "zero2"})",
                                 R"({"framework": "torchtitan", "fp8_linears": true, "fp8_recipe": "rowwise"})",
                                 R"({"framework": "megatron-core", "method": "pipeshard", "min_memory_headroom": 2})"})
            plannerConfigFromJson(json::parse(text), "ok.json").validate();
    }

    void notAnObject()
    {
        const std::string error = errorOf([] { plannerConfigFromJson(json::array({1, 2}), "list.json"); });
        QVERIFY2(error.find("list.json") != std::string::npos, error.c_str());
        QVERIFY2(error.find("expected a JSON object") != std::string::npos, error.c_str());
    }

    void validateChecksConfigsBuiltInCode_data()
    {
        QTest::addColumn<int>("field");
        QTest::addColumn<std::string>("key");
        for (const auto& [field, key] : std::vector<std::pair<int, std::string>> {{0, "topk"},
                                                                                  {1, "pipeline_scheduler"},
                                                                                  {2, "world_size"},
                                                                                  {3, "solver"},
                                                                                  {4, "max_cp"},
                                                                                  {5, "memory_constraint"},
                                                                                  {6, "method"},
                                                                                  {7, "recompute_modules"},
                                                                                  {8, "zero_stage"},
                                                                                  {9, "framework"},
                                                                                  {10, "min_memory_headroom"},
                                                                                  {11, "pipeline_scheduler"}})
            QTest::newRow(key.c_str()) << field << key;
    }
    void validateChecksConfigsBuiltInCode()
    {
        QFETCH(int, field);
        QFETCH(std::string, key);
        PlannerConfig c;
        switch (field) {
        case 0:
            c.topk = 0;
            break;
        case 1:
            c.pipeline_scheduler = "fast";
            break;
        case 2:
            c.mesh_row = 2;
            c.mesh_col = 4;
            c.world_size = 6;
            break;
        case 3:
            c.solver = "simplex";
            break;
        case 4:
            c.max_cp = 6;
            break;
        case 5:
            c.memory_constraint = std::numeric_limits<double>::quiet_NaN();
            break;
        case 6:
            c.method = static_cast<PlanMethod>(42);
            break;
        case 7:
            c.recompute_modules = {"a,b"};
            break;
        case 9:
            c.framework = static_cast<Framework>(42);
            break;
        case 10:
            c.min_memory_headroom = std::numeric_limits<double>::infinity();
            break;
        case 11:
            c.framework = Framework::Torchtitan;
            c.pipeline_scheduler = "zb-h1";
            break;
        default:
            c.zero_stage = -2;
            break;
        }
        const std::string error = errorOf([&] { c.validate(); });
        QVERIFY2(error.find("planner config: " + key + ":") != std::string::npos, error.c_str());
    }
};

QTEST_APPLESS_MAIN(TestSearchConfig)
#include "tst_search_config.moc"
