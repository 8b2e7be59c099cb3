// SPDX-License-Identifier: MIT
#include "cli_common.h"
#include "commands.h"
#include "serving_cli.h"
#include "text_table.h"

#include "shardscape/hardware/cluster.h"
#include "shardscape/model/model_source.h"
#include "shardscape/plan/plan_file.h"
#include "shardscape/plan/plan_reuse.h"
#include "shardscape/plan/result_json.h"
#include "shardscape/search/planner.h"
#include "shardscape/support/atomic_file.h"
#include "shardscape/support/error.h"
#include "shardscape/support/strings.h"
#include "shardscape/support/units.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

namespace shardscape::cli {

namespace {

struct PlanOptions
{
    std::string model;
    std::string cluster;
    int nodes = 0;
    int gpus_per_node = 0;
    std::int64_t global_batch = 256;
    std::int64_t seq_len = 0;
    double memory_gb = 0;
    std::string config;
    int topk = 0;
    std::string method;
    std::string json;
    std::string save_plan;
    std::string load_plan;
    std::string profile_dir;
    std::string framework;
    std::string framework_version;
    // Locks: a value or a comma list each (DimensionLocks).
    std::string tp, pp, dp, cp, ep, vpp, micro_batch, zero, recompute, schedule;
    bool dump = false;
};

/** The comma-separated items of `text`, each without surrounding blanks. */
std::vector<std::string> commaItems(const std::string& text)
{
    std::vector<std::string> items;
    std::size_t start = 0;
    while (start <= text.size()) {
        const std::size_t end = std::min(text.find(',', start), text.size());
        std::string item = text.substr(start, end - start);
        item.erase(0, item.find_first_not_of(" \t"));
        item.erase(item.find_last_not_of(" \t") + 1);
        items.push_back(item);
        start = end + 1;
    }
    return items;
}

/** A lock option: comma-separated items, each read by `parse` (nullopt = not a valid item). */
template<typename T, typename Parse>
std::vector<T> lockList(const std::string& text, const char* flag, Parse parse, const std::string& hint)
{
    std::vector<T> out;
    for (const auto& item : commaItems(text)) {
        const std::optional<T> value = parse(toLower(item));
        if (!value)
            throw InputError(cat(flag, ": '", item, "' is not a valid value"), hint);
        if (std::find(out.begin(), out.end(), *value) == out.end())
            out.push_back(*value);
    }
    return out;
}

std::optional<int> nonNegativeInt(const std::string& text)
{
    int value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size() || value < 0 || value > (1 << 20))
        return std::nullopt;
    return value;
}

/** --tp 4,8 and the other locks replace the config file's. */
void applyLockOptions(const PlanOptions& o, PlannerConfig& config)
{
    const auto ints = [](const std::string& text, const char* flag, int min) {
        return lockList<int>(
            text, flag,
            [min](const std::string& t) {
                const auto v = nonNegativeInt(t);
                return v && *v >= min ? v : std::nullopt;
            },
            cat("give integers >= ", min, ", e.g. ", flag, " 4,8"));
    };
    DimensionLocks& l = config.locks;
    if (!o.tp.empty())
        l.tp = ints(o.tp, "--tp", 1);
    if (!o.pp.empty()) {
        l.pp = ints(o.pp, "--pp", 1);
        config.pipeline_nstages = 0; // the lock decides
    }
    if (!o.dp.empty())
        l.dp = ints(o.dp, "--dp", 1);
    if (!o.cp.empty())
        l.cp = ints(o.cp, "--cp", 1);
    if (!o.ep.empty())
        l.ep = ints(o.ep, "--ep", 1);
    if (!o.vpp.empty())
        l.vpp = ints(o.vpp, "--vpp", 1);
    if (!o.micro_batch.empty()) {
        l.micro_batch = ints(o.micro_batch, "--micro-batch", 1);
        config.micro_batch_size = 0;
    }
    if (!o.zero.empty()) {
        l.zero = lockList<int>(
            o.zero, "--zero",
            [](const std::string& t) {
                const auto v = nonNegativeInt(t);
                return v && *v <= 3 ? v : std::nullopt;
            },
            "give ZeRO stages 0-3, e.g. --zero 1,3");
        config.zero_stage = -1;
    }
    if (!o.recompute.empty())
        l.recompute = lockList<RecomputeKind>(
            o.recompute, "--recompute",
            [](const std::string& t) { return t == "modules" ? std::nullopt : parseRecompute(t); },
            "give none, selective or full, e.g. --recompute none,full");
    if (!o.schedule.empty()) {
        l.schedule = lockList<ScheduleKind>(
            o.schedule, "--schedule", [](const std::string& t) { return parseSchedule(t); },
            "give 1f1b, interleaved, gpipe, zb-h1, zb-v, dualpipev or dualpipe");
        config.pipeline_scheduler = "auto";
    }
}

/** Prints the planner's log lines as they come (MoAI style); progress stays quiet on a terminal. */
class CliProgress final : public ProgressSink
{
public:
    void progress(const std::string&, std::uint64_t, std::uint64_t) override { }
    void log(const std::string& line) override { std::cout << line << '\n'; }
};

/** The step-time range as a spread around the prediction: "±8%", or "-5/+9%" when lopsided; "-" when unknown. */
std::string stepTimeSpread(const Evaluation& e)
{
    const PredictionRange& r = e.step_time_range;
    if (e.step_time <= 0 || r.high <= 0)
        return "-";
    const double below = std::max(0.0, 100 * (1 - r.low / e.step_time));
    const double above = std::max(0.0, 100 * (r.high / e.step_time - 1));
    if (std::fabs(below - above) < 0.5)
        return cat("±", fixed((below + above) / 2, 0), "%");
    return cat("-", fixed(below, 0), "/+", fixed(above, 0), "%");
}

/** "fits", "tight (≤ 83.1 GB)", "likely"; "-" when the configuration was not costed. */
std::string oomRiskText(const Evaluation& e)
{
    if (e.stages.empty())
        return "-";
    if (e.oom_risk == OomRisk::Tight)
        return cat("tight (<= ", fixed(e.peak_memory_range.high / units::kGB, 1), " GB)");
    return std::string(oomRiskName(e.oom_risk));
}

void printCandidates(const std::vector<Evaluation>& top, const CostModel& model)
{
    TextTable table;
    for (const char* title :
         {"#",         "tp",       "pp",     "dp",    "cp",       "ep",      "vpp", "mb",     "m",       "zero",
          "recompute", "schedule", "step s", "range", "tokens/s", "TFLOP/s", "MFU", "bubble", "peak GB", "OOM risk"})
        table.addColumn(title,
                        std::string(title) == "recompute" || std::string(title) == "schedule"
                                || std::string(title) == "OOM risk"
                            ? TextTable::Align::Left
                            : TextTable::Align::Right);
    for (std::size_t i = 0; i < top.size(); ++i) {
        const auto& e = top[i];
        const auto& c = e.config;
        table.addRow({cat(i + 1),
                      cat(c.tp),
                      cat(c.pp),
                      cat(c.dp),
                      cat(c.cp),
                      c.expertTp() != c.tp ? cat(c.ep, "/", c.expertTp()) : cat(c.ep),
                      cat(c.vpp),
                      cat(c.micro_batch),
                      cat(c.num_microbatches),
                      cat(c.zero_stage),
                      recomputeLabel(c),
                      c.pp > 1 ? std::string(scheduleName(c.schedule)) : "-",
                      fixed(e.step_time, 3),
                      stepTimeSpread(e),
                      siCount(e.tokens_per_s, 1),
                      fixed(e.tflops_per_gpu, 1),
                      fixed(100 * e.mfu, 1) + "%",
                      fixed(100 * e.bubble_ratio, 1) + "%",
                      fixed(e.peakMemory() / units::kGB, 1),
                      oomRiskText(e)});
    }
    table.print(std::cout);
    if (std::any_of(top.begin(), top.end(), [](const Evaluation& e) { return e.config.expertTp() != e.config.tp; }))
        std::cout << "ep/etp: expert parallelism / expert tensor parallelism, where the experts are split over fewer "
                     "ranks than tp (Megatron --expert-tensor-parallel-size)\n";
    if (!top.empty() && top.front().config.pp > 1) {
        std::cout << "stages of #1:";
        for (const auto& stage : top.front().stages)
            for (const auto& [first, last] : stage.chunks)
                std::cout << "  [" << model.layers()[static_cast<std::size_t>(first)].name << " .. "
                          << model.layers()[static_cast<std::size_t>(last)].name << "]";
        std::cout << '\n';
    }
}

int runPlan(const PlanOptions& o)
{
    PlannerConfig config = o.config.empty() ? PlannerConfig {} : loadPlannerConfig(o.config);
    if (o.topk > 0)
        config.topk = o.topk;
    if (o.memory_gb > 0)
        config.memory_constraint = o.memory_gb;
    if (!o.method.empty()) {
        const auto method = parsePlanMethod(o.method);
        if (!method)
            throw InputError(cat("unknown method '", o.method, "'"),
                             "use auto, data, zero2, zero3, shard or pipeshard");
        config.method = *method;
    }
    if (!o.save_plan.empty())
        config.save_plan_path = o.save_plan;
    if (!o.load_plan.empty())
        config.load_plan_path = o.load_plan;
    if (!o.profile_dir.empty())
        config.profile_dir = o.profile_dir;
    if (!o.framework.empty())
        config.framework = frameworkFromOption(o.framework);
    if (!o.framework_version.empty())
        config.framework_version = o.framework_version; // checked with the rest of the config
    applyLockOptions(o, config);

    if (!config.is_train) {
        if (!config.load_plan_path.empty())
            throw InputError("--load-plan re-simulates training plans; is_train false plans serving",
                             "use simulate --mode inference for one serving deployment");
        return runServingPlan({o.model, o.cluster, o.nodes, o.gpus_per_node, o.json, o.save_plan, o.dump}, config);
    }
    BuildOptions build;
    build.seq_len = o.seq_len;
    Problem problem;
    problem.graph = std::make_shared<const ModelGraph>(loadModel(o.model, build));
    problem.cluster = loadCluster(o.cluster, o.nodes, o.gpus_per_node);
    problem.global_batch = o.global_batch;

    std::cout << "Planning " << problem.graph->name << " (seq_len " << problem.graph->seq_len << ", global batch "
              << o.global_batch << ") on " << problem.cluster.nodes << " x " << problem.cluster.gpus_per_node << " "
              << problem.cluster.device.name << "\n";
    if (const std::string measured = measuredLinksNote(problem.cluster); !measured.empty())
        std::cout << "fabric : " << measured << " (the cluster file's link efficiency)\n";
    CliProgress progress;
    const PlanResult result = planOrReuse(problem, config, progress);
    const CostModel& model = *result.model;

    if (!o.json.empty()) {
        std::vector<Evaluation> all = result.top;
        all.insert(all.end(), result.infeasible.begin(), result.infeasible.end());
        writeJsonOutput(resultJson(all, model, result.counts), o.json);
    }
    if (result.top.empty() && !config.load_plan_path.empty()) {
        const std::string reason
            = result.infeasible.empty() ? "it cannot be evaluated" : result.infeasible.front().reason;
        throw InfeasibleError(
            cat("the plan in ", config.load_plan_path, " does not run on this model and cluster: ", reason),
            "plan again without --load-plan");
    }
    if (result.top.empty()) {
        if (!result.infeasible.empty()) {
            std::cout << "\nNo configuration fits. The least memory-hungry ones:\n";
            printCandidates(result.infeasible, model);
        }
        for (std::size_t i = 0; i < result.infeasible.size() && i < 3; ++i)
            std::cout << "  " << result.infeasible[i].config.describe() << ": " << result.infeasible[i].reason << '\n';
        if (!result.nothing_costed.empty())
            throw InfeasibleError(cat(problem.graph->name, " has no plan on ", problem.cluster.nodes, " x ",
                                      problem.cluster.gpus_per_node, " ", problem.cluster.device.name, ": ",
                                      result.nothing_costed));
        const double runtime = runtimeOverLimit(result);
        throw InfeasibleError(
            cat(problem.graph->name, " fits nowhere on ", problem.cluster.nodes, " x ", problem.cluster.gpus_per_node,
                " ", problem.cluster.device.name, ": ", whyNothingFits(result),
                result.framework_limits.empty() ? std::string()
                                                : cat(" (searching only what ", frameworkName(config.framework),
                                                      " runs: ", join(result.framework_limits, "; "), ")")),
            runtime > 0 ? cat("no layout fits under that limit: raise --memory-gb above ", memoryText(runtime),
                              "; the device has ", memoryText(problem.cluster.device.memory_bytes))
                : !result.lock_advice.empty() ? join(result.lock_advice, "; ")
                : config.locks.any()          ? cat("no single lock's release helps (", config.locks.describe(),
                                                    "): release several, or add GPUs (--nodes)")
                : result.framework_limits.empty()
                ? "add GPUs (--nodes), use --method zero3, recompute full (--config), or a shorter --seq-len"
                : "add GPUs (--nodes), use --method zero3, recompute full (--config), a shorter --seq-len, or "
                  "--framework generic");
    }

    std::cout << '\n';
    printCandidates(result.top, model);
    std::cout << "\nWhy this plan:\n";
    for (const auto& line : result.explanation.lines)
        std::cout << "  " << line << '\n';
    std::cout << "\n(" << result.counts.candidates_total << " candidates, " << result.counts.candidates_feasible
              << " feasible, " << result.counts.simulated << " simulated, " << fixed(result.counts.elapsed_s, 3)
              << " s; cost source: " << result.top.front().cost_source << ")\n";

    if (!config.save_plan_path.empty()) {
        PlanFileContext context;
        context.global_batch = problem.global_batch;
        context.seq_len = problem.graph->seq_len;
        context.model_spec = o.model;
        context.created_by = "shardscape-cli plan";
        context.version = "0.1.0";
        savePlanFile(config.save_plan_path, planToJson(result.top.front(), model, context));
        std::cout << "plan saved to " << config.save_plan_path << '\n';
    }
    if (o.dump)
        writeFileAtomic("advanced_parallelization_selected_config.dump", selectedConfigLine(result.top.front()) + "\n");
    return kExitOk;
}

} // namespace

void addPlanCommand(CLI::App& app, CommandAction& action)
{
    auto o = std::make_shared<PlanOptions>();
    auto* cmd = app.add_subcommand("plan", "Search the best parallel plan for a model on a cluster");
    cmd->add_option("--model,-m", o->model, "preset name, HF config.json, native graph .json")->required();
    cmd->add_option("--cluster,-c", o->cluster, "device preset (one node) or cluster .json")->required();
    cmd->add_option("--nodes", o->nodes, "number of nodes (overrides the cluster)")->check(CLI::Range(1, 100000));
    cmd->add_option("--gpus-per-node", o->gpus_per_node, "GPUs per node (overrides the cluster)")
        ->check(CLI::Range(1, 1024));
    cmd->add_option("--global-batch", o->global_batch, "sequences per step (default 256)")
        ->check(CLI::Range(std::int64_t {1}, std::int64_t {1} << 40));
    cmd->add_option("--seq-len", o->seq_len, "tokens per sequence (default: min(max positions, 4096))")
        ->check(CLI::Range(std::int64_t {1}, std::int64_t {100'000'000}));
    cmd->add_option("--memory-gb", o->memory_gb, "memory limit per GPU in GB (default: the device's)")
        ->check(CLI::Range(0.001, 1e6));
    cmd->add_option("--config", o->config, "planner config JSON (AutoDist keys; see README)");
    cmd->add_option("--topk", o->topk, "how many candidates to keep (default 20)")->check(CLI::Range(1, 10000));
    cmd->add_option("--method", o->method, "auto, data, zero2, zero3, shard or pipeshard");
    cmd->add_option("--json", o->json, "write the result JSON (top-k and search counts) to this file ('-' = stdout)");
    cmd->add_option("--save-plan", o->save_plan, "write the chosen plan (shardscape.plan/1) to this file");
    cmd->add_option("--load-plan", o->load_plan, "re-simulate a saved plan for these inputs instead of searching");
    cmd->add_option("--profile-dir", o->profile_dir,
                    "measured profile directory (profile.json) for the cost model; default: "
                    "~/.cache/shardscape/<device> when one matches the cluster's device");
    cmd->add_option("--framework", o->framework,
                    "training framework the plan is for (sets memory terms, limits the search): " + frameworkChoices()
                        + " (default: the config's, else generic)");
    cmd->add_option("--framework-version", o->framework_version,
                    "the framework's release the plan is for (core_v0.15-core_v0.19, main, v0.2, v0.19): the search "
                    "keeps to what it runs, and plan files and exports name it (default: the config's, else any)");
    const auto lock = [&](const char* flag, std::string& target, const char* what) {
        cmd->add_option(flag, target,
                        cat("fix ", what, " to a value or a comma list (e.g. 4,8); the rest is searched"));
    };
    lock("--tp", o->tp, "the tensor-parallel degree");
    lock("--pp", o->pp, "the pipeline degree");
    lock("--dp", o->dp, "the data-parallel degree");
    lock("--cp", o->cp, "the context-parallel degree");
    lock("--ep", o->ep, "the expert-parallel degree");
    lock("--vpp", o->vpp, "the model chunks per pipeline rank");
    lock("--micro-batch", o->micro_batch, "the micro-batch size");
    lock("--zero", o->zero, "the ZeRO stage");
    lock("--recompute", o->recompute, "recomputation (none, selective, full)");
    lock("--schedule", o->schedule,
         "the pipeline schedule (1f1b, interleaved, gpipe, zb-h1, zb-v, dualpipev, dualpipe)");
    cmd->add_flag("--dump", o->dump, "write advanced_parallelization_selected_config.dump in the working directory");
    cmd->callback([&action, o] { action = [o] { return runPlan(*o); }; });
}

} // namespace shardscape::cli
