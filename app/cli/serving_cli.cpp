// SPDX-License-Identifier: MIT
// `simulate --mode inference`: one serving deployment's memory, latency and throughput.
#include "serving_cli.h"

#include "cli_common.h"
#include "text_table.h"

#include "shardscape/cost/serving_keys.h"
#include "shardscape/model/model_source.h"
#include "shardscape/plan/serving_plan.h"
#include "shardscape/profile/profile_cost_source.h"
#include "shardscape/search/serving_planner.h"
#include "shardscape/support/atomic_file.h"
#include "shardscape/support/error.h"
#include "shardscape/support/strings.h"
#include "shardscape/support/units.h"

#include <iostream>
#include <nlohmann/json.hpp>

namespace shardscape::cli {

namespace {

std::string gb(double bytes)
{
    return fixed(bytes / units::kGB, 1);
}

std::string msText(double seconds)
{
    return fixed(seconds * 1e3, seconds < 0.1 ? 2 : 1);
}

} // namespace

std::vector<CLI::Option*> addServingOptions(CLI::App* cmd, ServingCliOptions& o)
{
    const auto tokens = CLI::Range(std::int64_t {1}, std::int64_t {100'000'000});
    return {
        cmd->add_option("--input-len", o.input_len, "inference: prompt tokens per request")
            ->check(tokens)
            ->capture_default_str(),
        cmd->add_option("--output-len", o.output_len, "inference: generated tokens per request")
            ->check(tokens)
            ->capture_default_str(),
        cmd->add_option("--concurrency", o.concurrency,
                        "inference: requests in flight over the deployment, or 'max' (the most that fit and meet "
                        "the latency bounds)")
            ->capture_default_str(),
        cmd->add_option("--weight-dtype", o.weight_dtype, "inference: linear weights bf16, fp8, int8, int4 or fp4")
            ->capture_default_str(),
        cmd->add_option("--kv-dtype", o.kv_dtype, "inference: KV cache bf16, fp16 or fp8")->capture_default_str(),
        cmd->add_option("--serving-framework", o.serving_framework,
                        "inference: vllm or sglang (memory split, defaults)")
            ->capture_default_str(),
        cmd->add_option("--memory-fraction", o.memory_fraction,
                        "inference: share of GPU memory the engine takes (vLLM --gpu-memory-utilization, SGLang "
                        "--mem-fraction-static); default the framework's")
            ->check(CLI::Range(0.01, 1.0)),
        cmd->add_option("--max-ttft-ms", o.max_ttft_ms, "inference: time-to-first-token bound (with --concurrency max)")
            ->check(CLI::Range(0.0, 1e9)),
        cmd->add_option("--max-tpot-ms", o.max_tpot_ms,
                        "inference: time-per-output-token bound (with --concurrency max)")
            ->check(CLI::Range(0.0, 1e9)),
        cmd->add_option("--max-batched-tokens", o.max_batched_tokens,
                        "inference: tokens per engine step (vLLM --max-num-batched-tokens, SGLang "
                        "--chunked-prefill-size); default the framework's")
            ->check(CLI::Range(std::int64_t {1}, std::int64_t {100'000'000})),
    };
}

ServingRequest servingRequestFromOptions(const ServingCliOptions& o, double memoryGb)
{
    ServingRequest r;
    r.input_len = o.input_len;
    r.output_len = o.output_len;
    if (toLower(o.concurrency) == "max") {
        r.concurrency = 0;
    } else {
        std::size_t used = 0;
        long value = 0;
        try {
            value = std::stol(o.concurrency, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (used != o.concurrency.size() || value < 1 || value > kMaxServingConcurrency)
            throw InputError(cat("--concurrency '", o.concurrency, "' is not a number of requests in [1, ",
                                 kMaxServingConcurrency, "]"),
                             "give a number or 'max'");
        r.concurrency = static_cast<int>(value);
    }
    const auto format = parseWeightFormat(o.weight_dtype);
    if (!format)
        throw InputError(cat("unknown --weight-dtype '", o.weight_dtype, "'"), "use bf16, fp8, int8, int4 or fp4");
    r.weight_format = *format;
    const auto kv = parseKvCacheDtype(o.kv_dtype);
    if (!kv)
        throw InputError(cat("unsupported --kv-dtype '", o.kv_dtype, "'"), "use bf16, fp16 or fp8");
    r.kv_dtype = *kv;
    const auto framework = parseServingFramework(o.serving_framework);
    if (!framework)
        throw InputError(cat("unknown --serving-framework '", o.serving_framework, "'"), "use vllm or sglang");
    r.framework = *framework;
    r.memory_fraction = o.memory_fraction;
    r.max_ttft_ms = o.max_ttft_ms;
    r.max_tpot_ms = o.max_tpot_ms;
    r.max_batched_tokens = o.max_batched_tokens;
    r.memory_limit_bytes = memoryGb * units::kGB;
    r.validate();
    return r;
}

void printServingEstimate(const ServingEstimate& e)
{
    const auto& r = e.request;
    std::cout << e.parallel.describe() << " (" << e.parallel.gpus() << " GPUs), " << servingFrameworkName(r.framework)
              << ", weights " << weightFormatName(r.weight_format) << ", KV cache " << dtypeName(r.kv_dtype) << ", "
              << r.input_len << " in / " << r.output_len << " out\n";
    if (e.max_concurrency > 0) {
        std::cout << "  memory per GPU (busiest stage): weights " << gb(e.memory.weights) << " GB, KV pool "
                  << gb(std::max(0.0, e.memory.kv_pool)) << " GB (" << gb(e.memory.kv_cache)
                  << " GB in use), activations " << gb(e.memory.activations) << " GB, reserve " << gb(e.memory.reserve)
                  << " GB of " << gb(e.memory.capacity) << " GB (memory fraction " << fixed(e.memory_fraction, 2)
                  << ")\n";
        std::cout << "  KV cache: " << fixed(e.kv_bytes_per_token / units::kKB, 1)
                  << " kB per token per GPU; max concurrency " << e.max_concurrency << " at " << r.contextLen()
                  << " tokens\n";
    }
    if (e.concurrency > 0) {
        std::cout << "  concurrency " << e.concurrency << (r.concurrency == 0 ? " (max)" : "") << ": TTFT "
                  << msText(e.ttft_s) << " ms, TPOT " << msText(e.tpot_s) << " ms, "
                  << siCount(e.output_tokens_per_s, 1) << " output tokens/s ("
                  << siCount(e.outputTokensPerSecondPerGpu(), 1) << " per GPU), " << siCount(e.total_tokens_per_s, 1)
                  << " total tokens/s\n";
        std::cout << "  decode step " << msText(e.decode_step_s) << " ms: weights " << msText(e.decode.weights)
                  << ", KV cache " << msText(e.decode.kv) << ", communication " << msText(e.decode.communication)
                  << ", overhead " << msText(e.decode.overhead) << " ms; one prompt alone " << msText(e.prefill_s)
                  << " ms\n";
    }
    if (!e.curve.empty()) {
        TextTable table;
        for (const char* title : {"concurrency", "TTFT ms", "TPOT ms", "output tokens/s", "per GPU"})
            table.addColumn(title, TextTable::Align::Right);
        for (const auto& p : e.curve)
            table.addRow({cat(p.concurrency), msText(p.ttft_s), msText(p.tpot_s), siCount(p.output_tokens_per_s, 1),
                          siCount(p.output_tokens_per_s / e.parallel.gpus(), 1)});
        table.print(std::cout);
    }
}

int runServingSimulate(const ServingSimulateInput& in, const ServingCliOptions& options)
{
    const ServingRequest request = servingRequestFromOptions(options, in.memory_gb);
    Cluster cluster = loadCluster(in.cluster, in.nodes, in.gpus_per_node);
    if (in.nodes == 0 && in.parallel.gpus() > cluster.worldSize()) {
        const int nodes = (in.parallel.gpus() + cluster.gpus_per_node - 1) / cluster.gpus_per_node;
        cluster = loadCluster(in.cluster, nodes, cluster.gpus_per_node);
    }
    const ModelGraph graph = loadModel(in.model, BuildOptions {});
    const ServingModel model = ServingModel::fromGraph(graph);
    ProfileRequest profile;
    profile.profile_dir = in.profile_dir;
    const CostParams params;
    const CostSourceChoice costs = chooseCostSource(cluster, params, profile);
    const ServingEstimate e = estimateServing(model, cluster, *costs.source, params, in.parallel, request);
    if (!in.json.empty())
        writeJsonOutput(servingJson(e), in.json);
    if (in.json != "-")
        printServingEstimate(e);
    if (!in.save_plan.empty()) {
        saveServingPlan(in.save_plan, e, cluster, in.model, graph.name);
        if (in.json != "-")
            std::cout << "plan saved to " << in.save_plan << '\n';
    }
    if (!e.feasible) {
        std::cerr << "error: " << e.reason
                  << "; add GPUs (--tp, --dp), use --weight-dtype fp8 or --kv-dtype fp8, lower --concurrency or the "
                     "context (--input-len, --output-len)\n";
        return kExitBadInput;
    }
    return kExitOk;
}

namespace {

class PrintingProgress final : public ProgressSink
{
public:
    void progress(const std::string&, std::uint64_t, std::uint64_t) override { }
    void log(const std::string& line) override { std::cout << line << '\n'; }
};

void printServingCandidates(const std::vector<ServingEstimate>& rows)
{
    TextTable table;
    for (const char* title : {"#", "tp", "pp", "dp", "ep", "concurrency", "max", "TTFT ms", "TPOT ms", "output tok/s",
                              "per GPU", "weights GB", "KV GB", "reason"})
        table.addColumn(title, std::string(title) == "reason" ? TextTable::Align::Left : TextTable::Align::Right);
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const auto& e = rows[i];
        const bool timed = e.concurrency > 0;
        table.addRow({cat(i + 1), cat(e.parallel.tp), cat(e.parallel.pp), cat(e.parallel.dp), cat(e.parallel.ep),
                      timed ? cat(e.concurrency) : "-", cat(e.max_concurrency), timed ? msText(e.ttft_s) : "-",
                      timed ? msText(e.tpot_s) : "-", timed ? siCount(e.output_tokens_per_s, 1) : "-",
                      timed ? siCount(e.outputTokensPerSecondPerGpu(), 1) : "-", gb(e.memory.weights),
                      gb(e.memory.kv_cache), e.reason});
    }
    table.print(std::cout);
}

} // namespace

int runServingPlan(const ServingPlanInput& in, const PlannerConfig& config)
{
    const Cluster cluster = loadCluster(in.cluster, in.nodes, in.gpus_per_node);
    const ModelGraph graph = loadModel(in.model, BuildOptions {});
    std::cout << "Planning serving of " << graph.name << " on " << cluster.nodes << " x " << cluster.gpus_per_node
              << " " << cluster.device.name << "\n";
    PrintingProgress progress;
    const ServingPlanResult result = planServing(graph, cluster, config, progress);
    if (!in.json.empty())
        writeJsonOutput(servingResultJson(result), in.json);
    if (result.top.empty()) {
        std::cout << "\nNo deployment serves this request. The closest:\n";
        printServingCandidates(result.infeasible);
        throw InfeasibleError(
            cat(graph.name, " cannot be served on ", cluster.worldSize(), " ", cluster.device.name, ": ",
                result.infeasible.empty() ? std::string("no candidate shape") : result.infeasible.front().reason),
            "add GPUs (--nodes), use weight_dtype fp8 or int4, kv_cache_dtype fp8, a shorter input_len/output_len, "
            "a lower concurrency or looser max_ttft_ms/max_tpot_ms");
    }
    std::cout << '\n';
    printServingCandidates(result.top);
    std::cout << "\n#1 in detail:\n";
    printServingEstimate(result.top.front());
    std::cout << "\nWhy this deployment:\n";
    for (const auto& line : result.explanation)
        std::cout << "  " << line << '\n';
    std::cout << "\n(" << result.counts.candidates_total << " candidates, " << result.counts.candidates_feasible
              << " feasible, " << fixed(result.counts.elapsed_s, 3)
              << " s; cost source: " << result.top.front().cost_source << ")\n";
    const std::string savePath = in.save_plan.empty() ? config.save_plan_path : in.save_plan;
    if (!savePath.empty()) {
        saveServingPlan(savePath, result.top.front(), cluster, in.model, graph.name);
        std::cout << "plan saved to " << savePath << '\n';
    }
    if (in.dump)
        writeFileAtomic("advanced_parallelization_selected_config.dump", servingConfigLine(result.top.front()) + "\n");
    return kExitOk;
}

} // namespace shardscape::cli
