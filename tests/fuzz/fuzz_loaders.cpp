// SPDX-License-Identifier: MIT
#include "fuzz_loaders.h"

#include "shardscape/hardware/cluster.h"
#include "shardscape/model/model_source.h"
#include "shardscape/model/model_summary.h"
#include "shardscape/model/native_json.h"
#include "shardscape/plan/config_import.h"
#include "shardscape/plan/plan_file.h"
#include "shardscape/profile/nccl_tests_import.h"
#include "shardscape/profile/profile.h"
#include "shardscape/profile/training_log.h"
#include "shardscape/search/planner.h"
#include "shardscape/search/planner_config.h"
#include "shardscape/search/sharding_solver.h"
#include "shardscape/support/error.h"
#include "shardscape/support/json_file.h"
#include "shardscape/support/progress.h"

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#ifdef SHARDSCAPE_HAVE_ONNX
#include "shardscape/model/onnx_import.h"
#endif

namespace shardscape::fuzz {

namespace {

// A small micro-batch and sequence keep each graph build fast; the sizes in the file are what is being fuzzed.
const BuildOptions kOptions {1, 128, DType::BF16};

} // namespace

void planAndSimulate(const ModelGraph& graph)
{
    Problem problem;
    problem.graph = std::make_shared<const ModelGraph>(graph);
    problem.cluster = loadCluster("h100-sxm", 1, 2);
    problem.global_batch = 4;
    PlannerConfig config;
    config.topk = 2;
    NullProgress progress;
    const PlanResult result = plan(problem, config, progress);
    if (result.top.empty())
        return;
    Workload workload;
    workload.global_batch = result.top.front().config.globalBatch();
    workload.seq_len = graph.seq_len;
    EvaluateOptions options;
    options.record_timeline = true;
    (void)result.model->evaluate(result.top.front().config, workload, options);
}

namespace {

/** planAndSimulate for the graphs the fuzzers can afford: costing every layer of a 700-layer mutation under ASan took
    over the fuzzers' 10 s per input. Real-size models are planned by tst_fuzz_regressions, from every seed. */
void planIfSmall(const ModelGraph& graph)
{
    if (graph.ops().size() <= kMaxOpsToPlan)
        planAndSimulate(graph);
}

/** Native graph JSON: load, check that an accepted graph round-trips losslessly, summarize it as `inspect` does,
    then plan and simulate it. */
void nativeGraph(std::string_view bytes)
{
    const ModelGraph graph = loadNativeGraph(parseJson(bytes, "fuzz.json"), "fuzz.json");
    const nlohmann::json written = toNativeJson(graph);
    if (toNativeJson(loadNativeGraph(written, "round-trip")) != written)
        throw std::logic_error("native graph does not round-trip");
    summarizeModel(graph);
    planIfSmall(graph);
}

/** HF config.json through the model-source entry point (hf_config.cpp, the transformer builder), then the summary,
    a plan and a simulation. */
void hfConfig(std::string_view bytes)
{
    const ModelGraph graph = loadModelJson(parseJson(bytes, "config.json"), "config.json", kOptions, "fuzz");
    summarizeModel(graph);
    planIfSmall(graph);
}

#ifdef SHARDSCAPE_HAVE_ONNX
/** An .onnx file's bytes: protobuf, external-data checks, shape inference, pattern matching, op emission; then the
    summary and the native JSON of the graph. */
void onnx(std::string_view bytes)
{
    const ModelGraph graph = loadOnnxModelFromBytes(bytes, "fuzz.onnx", kOptions).graph;
    summarizeModel(graph);
    (void)toNativeJson(graph).dump(); // every name must be storable as JSON (plan files, traces, fingerprints)
    planIfSmall(graph);
}
#endif

/** Planner config JSON: an accepted config must validate and read back from the JSON we write for it. */
void plannerConfig(std::string_view bytes)
{
    const PlannerConfig config = plannerConfigFromJson(parseJson(bytes, "planner.json"), "planner.json");
    config.validate();
    try {
        plannerConfigFromJson(toJson(config), "round-trip").validate();
    } catch (const InputError& error) {
        throw std::logic_error(std::string("planner config does not round-trip: ") + error.what());
    }
}

void planFile(std::string_view bytes)
{
    planFromJson(parseJson(bytes, "plan.json"), "plan.json");
}

/** Job configs: the origin's extension picks the format. Both options are given so that the paths needing them
    (data_parallel_shard_degree = -1, the automatic stage split, a script without a torchrun line) are reached. */
void jobConfig(std::string_view bytes, std::string_view origin)
{
    ImportOptions options;
    options.world_size = 64;
    options.num_layers = 32;
    importJobConfigText(bytes, origin, options);
}

/** Cluster or device JSON as --cluster FILE reads it; "device": "x.json" is looked up in a folder that does not
    exist (a clean "no such file"). Then the fingerprint plan files record and the JSON we write. */
void cluster(std::string_view bytes)
{
    const Cluster c = clusterFromJson(parseJson(bytes, "cluster.json"), "cluster.json", "/nonexistent-fuzz-dir");
    (void)c.fingerprint();
    (void)toJson(c).dump();
}

/** A measured profile (shardscape.profile/1). Its checksum stops most mutations early; the fields behind it are
    reached from the seeds and from mutations the checksum covers loosely. */
void profile(std::string_view bytes)
{
    profileFromJson(parseJson(bytes, "profile.json"), "profile.json");
}

/** An nccl-tests log as `profile import-nccl` reads it (JSON when it starts with '{', text otherwise), then the
    profile rows made from each run. */
void ncclTests(std::string_view bytes)
{
    std::vector<NcclTestsRun> runs;
    const auto first = bytes.find_first_not_of(" \t\r\n");
    if (first != std::string_view::npos && bytes[first] == '{')
        runs.push_back(parseNcclTestsJson(parseJson(bytes, "nccl.json"), "nccl.json"));
    else
        runs = parseNcclTestsText(bytes, "all_reduce_perf.log");
    for (const auto& run : runs)
        collectiveRows(run, "nccl.log");
}

/** Partition constraints (--partition-constraints F, the sharding solver's pins). */
void partitionConstraints(std::string_view bytes)
{
    (void)partitionConstraintsFromJson(parseJson(bytes, "constraints.json"), "constraints.json");
}

/** A training log as `profile import-log` reads it (Megatron, torchtitan or DeepSpeed, told apart by its lines), and
    the Megatron launch script rebuilt from an argument dump. */
void trainingLog(std::string_view bytes)
{
    const TrainingLog log = parseTrainingLog(bytes, "train.log");
    if (log.format == TrainingLogFormat::Megatron && !log.arguments.empty())
        (void)importJobConfigText(megatronScriptFromArguments(log), "arguments.sh", {});
}

} // namespace

const std::vector<Loader>& loaders()
{
    static const std::vector<Loader> all {
        {"native_graph", nativeGraph},
        {"hf_config", hfConfig},
#ifdef SHARDSCAPE_HAVE_ONNX
        {"onnx", onnx},
#endif
        {"planner_config", plannerConfig},
        {"plan_file", planFile},
        {"job_torchtitan", [](std::string_view bytes) { jobConfig(bytes, "job.toml"); }},
        {"job_megatron", [](std::string_view bytes) { jobConfig(bytes, "pretrain.sh"); }},
        {"job_deepspeed", [](std::string_view bytes) { jobConfig(bytes, "ds_config.json"); }},
        {"cluster", cluster},
        {"profile", profile},
        {"nccl_tests", ncclTests},
        {"partition_constraints", partitionConstraints},
        {"training_log", trainingLog},
    };
    return all;
}

const Loader* findLoader(std::string_view target)
{
    for (const auto& loader : loaders())
        if (loader.target == target)
            return &loader;
    return nullptr;
}

} // namespace shardscape::fuzz
