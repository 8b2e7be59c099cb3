// SPDX-License-Identifier: MIT
// `simulate`: predicts one parallel configuration with the cost model and prints, writes and traces it.
#include "cli_common.h"
#include "commands.h"
#include "serving_cli.h"
#include "text_table.h"

#include "shardscape/cost/cost_model.h"
#include "shardscape/model/model_source.h"
#include "shardscape/plan/config_import.h"
#include "shardscape/plan/plan_file.h"
#include "shardscape/plan/result_json.h"
#include "shardscape/profile/profile_cost_source.h"
#include "shardscape/search/planner.h"
#include "shardscape/sim/chrome_trace.h"
#include "shardscape/support/atomic_file.h"
#include "shardscape/support/error.h"
#include "shardscape/support/strings.h"
#include "shardscape/support/units.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>

namespace shardscape::cli {

namespace {

// Beyond this many GPUs the int arithmetic of ParallelConfig could overflow; no real cluster is near it.
constexpr std::int64_t kMaxWorldSize = std::int64_t {1} << 20;
constexpr int kMaxDegree = 1 << 20;
// The simulator walks every micro-batch on every rank; far beyond any real step and it would only eat memory.
constexpr std::int64_t kMaxMicrobatches = 1 << 16;

struct SimulateOptions
{
    std::string model;
    std::string cluster;
    int tp = 1;
    int pp = 1;
    int dp = 1;
    int vpp = 1;
    int cp = 1;
    int ep = 1;
    int etp = 0;
    int micro_batch = 1;
    std::int64_t global_batch = 0;
    int zero = 0;
    int zero_ngroups = 1;
    std::string recompute = "none";
    std::vector<std::string> recompute_modules;
    bool sequence_parallel = false;
    bool tp_comm_overlap = false;
    bool overlap_param_gather = false;
    bool moe_a2a_overlap = false;
    bool moe_shared_expert_overlap = false;
    double moe_capacity_factor = 0;
    double moe_router_imbalance = 1;
    bool fp8_linears = false;
    std::string fp8_recipe = "tensorwise";
    bool eager_kernels = false;
    std::string schedule = "1f1b";
    std::int64_t seq_len = 0;
    int nodes = 0;
    int gpus_per_node = 0;
    double memory_gb = 0;
    std::vector<int> stage_layers;
    std::string rank_order = "tp-cp-dp-pp";
    std::string json;
    std::string trace;
    std::string from_config;
    std::string save_plan;
    std::string profile_dir;
    std::string framework; ///< empty = generic, or the job config's with --from-config
    std::string framework_version; ///< empty = the framework as profiled
    std::string mode = "train"; ///< train | inference
    ServingCliOptions serving;

    // Set from the parser after parsing: whether the user chose these explicitly.
    bool nodes_given = false;
    bool schedule_given = false;
    bool gpus_per_node_given = false;
};

std::string percent(double fraction)
{
    return fixed(100 * fraction, 1) + " %";
}

std::string gb(double bytes)
{
    return fixed(bytes / units::kGB, 1);
}

/** "a", "a or b", "a, b or c" */
std::string either(const std::vector<std::string>& items)
{
    if (items.size() <= 1)
        return items.empty() ? std::string() : items.front();
    std::vector<std::string> head(items.begin(), items.end() - 1);
    return join(head, ", ") + " or " + items.back();
}

ScheduleKind scheduleFromName(const std::string& name)
{
    if (const auto kind = parseSchedule(name))
        return *kind;
    throw InputError(cat("unknown schedule '", name, "'"),
                     "choose gpipe, 1f1b, interleaved, zb-h1, zb-v, dualpipev or dualpipe");
}

RecomputeKind recomputeFromName(const std::string& name)
{
    const auto kind = parseRecompute(name);
    if (!kind || *kind == RecomputeKind::Modules)
        throw InputError(cat("unknown recomputation '", name, "'"),
                         "choose none, selective or full; name modules with --recompute-modules");
    return *kind;
}

void checkRankOrder(const std::string& order)
{
    // groupShape() reads the order as given; a missing or repeated dimension would silently misplace groups.
    std::vector<std::string> dims;
    std::stringstream in(order);
    for (std::string d; std::getline(in, d, '-');)
        dims.push_back(d);
    std::vector<std::string> sorted = dims;
    std::sort(sorted.begin(), sorted.end());
    if (sorted != std::vector<std::string> {"cp", "dp", "pp", "tp"})
        throw InputError(cat("rank order '", order, "' is not an order of tp, cp, dp and pp"),
                         "write the four dimensions fastest-varying first, e.g. tp-cp-dp-pp");
}

std::vector<std::int64_t> divisors(std::int64_t n, std::int64_t limit)
{
    std::vector<std::int64_t> out;
    for (std::int64_t d = 1; d <= std::min(n, limit); ++d)
        if (n % d == 0)
            out.push_back(d);
    return out;
}

/** A way out of an infeasible configuration; checks mirror CostModel::structuralProblem's order. */
std::string wayOut(const Evaluation& e, const CostModel& model, const SimulateOptions& o)
{
    const ParallelConfig& c = e.config;
    const ModelGraph& graph = model.graph();
    const int layers = static_cast<int>(model.layers().size());
    const std::int64_t perStep = static_cast<std::int64_t>(c.dp) * c.micro_batch;

    if (o.global_batch % perStep) {
        const std::int64_t lower = o.global_batch / perStep * perStep;
        const std::int64_t upper = lower + perStep;
        return cat("use a multiple of dp x micro-batch = ", perStep, ", e.g. --global-batch ",
                   lower > 0 ? cat(lower, " or ", upper) : cat(upper));
    }
    if (o.nodes_given && c.worldSize() != model.cluster().worldSize()) {
        const int gpn = model.cluster().gpus_per_node;
        return c.worldSize() % gpn == 0
            ? cat("pass --nodes ", c.worldSize() / gpn,
                  " or leave --nodes out to size the cluster to the configuration")
            : cat("leave --nodes out to size the cluster to the configuration, or change tp, pp, dp or cp");
    }
    if (graph.transformer) {
        const auto& t = *graph.transformer;
        if (t.num_heads % c.tp || t.num_kv_heads % c.tp || t.ffn_hidden % c.tp) {
            std::vector<std::string> valid;
            for (const auto d : divisors(std::gcd(std::gcd(t.num_heads, t.num_kv_heads), t.ffn_hidden), 64))
                valid.push_back(cat(d));
            return cat("tp must divide the heads, key/value heads and FFN size; valid tp: ", join(valid, ", "));
        }
        if (c.ep > 1 && (t.num_experts == 0 || t.num_experts % c.ep || (c.tp * c.cp * c.dp) % (c.ep * c.expertTp())))
            return t.num_experts == 0 ? std::string("leave --ep out for a dense model")
                                      : cat("pick an ep that divides the ", t.num_experts,
                                            " experts and tp x cp x dp / etp = ", c.tp * c.cp * c.dp / c.expertTp());
        if (c.etp > 0 && (c.tp % c.etp || t.ffn_hidden % c.etp))
            return cat("pick an --etp that divides tp ", c.tp, " and the experts' FFN size ", t.ffn_hidden);
    } else if (c.ep > 1) {
        return "leave --ep out for a dense model";
    }
    if (c.cp > 1 && graph.seq_len % (2 * c.cp))
        return cat("pick cp so that 2 x cp divides the sequence length ", graph.seq_len, ", or change --seq-len");
    if (c.sequence_parallel && c.tp == 1)
        return "drop --sequence-parallel or use --tp 2 or more";
    if (c.tp_comm_overlap && !c.sequence_parallel)
        return "add --sequence-parallel (with --tp 2 or more) or drop --tp-comm-overlap";
    if (c.overlap_param_gather && c.zero_stage != 1 && c.zero_stage != 2)
        return "use --zero 1 or --zero 2, or drop --overlap-param-gather";
    if (c.moe_a2a_overlap && (c.ep < 2 || c.num_microbatches < 2))
        return "use --ep 2 or more and two or more micro-batches, or drop --moe-a2a-overlap";
    if (c.moe_a2a_overlap && c.pp > 1 && !overlapsMicrobatchPairs(c.schedule))
        return "use --vpp 2 or more (the interleaved schedule), --schedule dualpipev or dualpipe, or --pp 1, or drop "
               "--moe-a2a-overlap";
    if ((c.dp * c.cp) % c.zero_ngroups)
        return cat("pick a --zero-ngroups that divides dp x cp = ", c.dp * c.cp);
    if (layerChunks(c.schedule, c.pp, c.vpp) > layers)
        return cat("use fewer pipeline chunks (pp x vpp at most ", layers, ")");
    if (isVShaped(c.schedule) && (c.pp < 2 || c.vpp != 2))
        return cat("the ", scheduleName(c.schedule), " schedule needs --pp 2 or more and --vpp 2");
    if (isVShaped(c.schedule) && c.num_microbatches < 2 * c.pp)
        return cat("raise the global batch to at least ", 2 * c.pp * perStep, " (2 x pp micro-batches), or lower --pp");
    if (isBidirectional(c.schedule) && (c.pp % 2 || c.num_microbatches % 2))
        return "use an even --pp and a global batch giving an even number of micro-batches, or --schedule dualpipev";
    if (c.vpp > 1 && c.schedule != ScheduleKind::Interleaved1F1B && !isVShaped(c.schedule))
        return "add --schedule interleaved, or leave --vpp out";
    if (c.schedule == ScheduleKind::Interleaved1F1B) {
        if (c.pp < 2 || c.vpp < 2)
            return "use --pp 2 or more and --vpp 2 or more, or another --schedule";
        if (c.num_microbatches % c.pp) {
            const std::int64_t step = perStep * c.pp;
            const std::int64_t lower = o.global_batch / step * step;
            return cat("choose a global batch giving a multiple of ", c.pp, " micro-batches, e.g. --global-batch ",
                       lower > 0 ? cat(lower, " or ", lower + step) : cat(step), ", or another --schedule");
        }
    }
    if (c.framework != Framework::Generic && !frameworkRestriction(frameworkProfile(c.framework), c).empty())
        return cat("--framework generic lifts ", frameworkName(c.framework), "'s limits");
    if (!c.stage_layers.empty())
        return cat("give ", layerChunksName(c.schedule), " = ", layerChunks(c.schedule, c.pp, c.vpp),
                   " counts of at least 1 that sum to the model's ", layers,
                   " layers (list them with: shardscape-cli inspect --model ", o.model, ")");
    if (e.simulation) {
        // Out of memory. Under a limit the runtime memory alone exceeds, no layout lever helps.
        double runtime = 0;
        for (const auto& stage : e.stages)
            runtime = std::max(runtime, stage.memory.runtime);
        if (e.memory_limit_bytes > 0 && runtime >= e.memory_limit_bytes)
            return cat("the CUDA context, NCCL and cuBLAS workspaces alone take ", memoryText(runtime),
                       ": raise --memory-gb above that");
        // The usual levers, cheapest first.
        std::vector<std::string> levers;
        if (c.zero_stage < 3 && c.dp * c.cp > 1)
            levers.push_back(cat("--zero ", c.zero_stage + 1));
        if (c.recompute != RecomputeKind::Full)
            levers.emplace_back("--recompute full");
        if (c.micro_batch > 1)
            levers.emplace_back("a smaller --micro-batch");
        if (c.pp * 2 * c.vpp <= layers)
            levers.emplace_back("more pipeline stages");
        levers.emplace_back("more tensor parallelism");
        return "try " + either(levers);
    }
    return "see shardscape-cli simulate --help";
}

std::string layerSpan(const CostModel& model, const StageReport& stage)
{
    std::vector<std::string> ranges;
    for (const auto& [first, last] : stage.chunks)
        ranges.push_back(cat(first, "-", last));
    const auto& layers = model.layers();
    return cat(join(ranges, ","), " ", layers[static_cast<std::size_t>(stage.first_layer)].name, " .. ",
               layers[static_cast<std::size_t>(stage.last_layer)].name);
}

void printEvaluation(const Evaluation& e, const CostModel& model, const SimulateOptions& o)
{
    const ParallelConfig& c = e.config;
    const Cluster& cluster = model.cluster();
    const ModelGraph& graph = model.graph();
    std::cout << "Simulate " << graph.name << " on " << cluster.nodes << " x " << cluster.gpus_per_node << " "
              << cluster.device.name << ": " << c.describe() << " (cost source: " << e.cost_source << ")\n";
    const double tokens = static_cast<double>(o.global_batch) * static_cast<double>(graph.seq_len);
    std::cout << "Global batch " << o.global_batch << " x " << graph.seq_len << " tokens = " << fixed(tokens, 0)
              << " tokens per step on " << c.worldSize() << " GPUs";
    if (c.worldSize() < cluster.worldSize())
        std::cout << " (of " << cluster.worldSize() << ")";
    std::cout << ", " << cluster.device.display_name << "\n\n";
    if (!e.simulation) {
        std::cout << "Infeasible: " << e.reason << "\n";
        return;
    }

    const auto peak = std::max_element(e.stages.begin(), e.stages.end(), [](const auto& a, const auto& b) {
        return a.memory.total() < b.memory.total();
    });
    TextTable metrics;
    metrics.addColumn("metric", TextTable::Align::Left);
    metrics.addColumn("value", TextTable::Align::Left);
    metrics.addRow({"step time", cat(fixed(e.step_time, 4), " s")});
    metrics.addRow(
        {"throughput",
         cat(fixed(e.tokens_per_s, 0), " tokens/s (", fixed(e.tokens_per_s / c.worldSize(), 0), " per GPU)")});
    metrics.addRow({"TFLOP/s per GPU", cat(fixed(e.tflops_per_gpu, 1), " (model FLOPs, no recomputation)")});
    metrics.addRow({"MFU", percent(e.mfu)});
    metrics.addRow({"HFU", percent(e.hfu)});
    metrics.addRow({"bubble ratio", percent(e.bubble_ratio)});
    metrics.addRow({"peak memory",
                    cat(gb(peak->memory.total()), " GB of ", gb(e.memory_limit_bytes), " GB per GPU (stage ",
                        peak - e.stages.begin(), ")")});
    // The calibration ranges, when the cost model gave them.
    if (e.step_time_range.high > 0) {
        const double below = 100 * (1 - e.step_time_range.low / e.step_time);
        const double above = 100 * (e.step_time_range.high / e.step_time - 1);
        metrics.addRow(
            {"step time range",
             cat(fixed(e.step_time_range.low, 4), " .. ", fixed(e.step_time_range.high, 4), " s (-", fixed(below, 0),
                 "/+", fixed(above, 0), " %", e.regime.empty() ? std::string() : ", regime " + e.regime, ")")});
    }
    if (e.peak_memory_range.high > 0) {
        metrics.addRow({"peak memory range",
                        cat(gb(e.peak_memory_range.low), " .. ", gb(e.peak_memory_range.high), " GB per GPU")});
        metrics.addRow({"OOM risk", std::string(oomRiskName(e.oom_risk))});
    }
    if (peak->memory.runtime + peak->memory.fragmentation > 0)
        metrics.addRow({"PyTorch peak",
                        cat(gb(peak->memory.allocated()), " GB allocated, ", gb(peak->memory.allocatorReserved()),
                            " GB reserved (+ ", gb(peak->memory.runtime), " GB CUDA context, NCCL, cuBLAS)")});
    metrics.print(std::cout);

    std::cout << "\nPipeline stages (memory in GB per GPU at the stage's peak"
              << (c.vpp > 1 ? "; in-flight counts micro-batches per model chunk" : "") << ")\n";
    TextTable stages;
    stages.addColumn("stage", TextTable::Align::Right);
    stages.addColumn("layers", TextTable::Align::Left);
    stages.addColumn("devices", TextTable::Align::Right);
    stages.addColumn("compute/mb ms", TextTable::Align::Right);
    stages.addColumn("in-flight", TextTable::Align::Right);
    bool calibrated = false;
    for (const StageReport& s : e.stages)
        calibrated = calibrated || s.memory.calibrated != 0;
    for (const char* title : {"weights", "grads", "optimizer", "activations", "transient", "reserve"})
        stages.addColumn(title, TextTable::Align::Right);
    if (calibrated)
        stages.addColumn("calibration", TextTable::Align::Right);
    stages.addColumn("total", TextTable::Align::Right);
    for (std::size_t r = 0; r < e.stages.size(); ++r) {
        const StageReport& s = e.stages[r];
        const MemoryBreakdown& m = s.memory;
        std::vector<std::string> row {
            cat(r),        layerSpan(model, s), cat(s.devices),  fixed(s.compute * 1e3, 2), cat(s.peak_inflight),
            gb(m.weights), gb(m.gradients),     gb(m.optimizer), gb(m.activations),         gb(m.transient),
            gb(m.reserve)};
        if (calibrated)
            row.push_back(gb(m.calibrated));
        row.push_back(gb(m.total()));
        stages.addRow(row);
    }
    stages.print(std::cout);

    std::cout << "\nTime of one step on the busiest pipeline rank\n";
    const TimeBreakdown& t = e.time;
    TextTable time;
    time.addColumn("part", TextTable::Align::Left);
    time.addColumn("seconds", TextTable::Align::Right);
    time.addColumn("of step", TextTable::Align::Right);
    const auto row = [&](const char* part, double seconds) {
        time.addRow({part, fixed(seconds, 4), percent(e.step_time > 0 ? seconds / e.step_time : 0)});
    };
    row("compute", t.compute);
    row("recompute", t.recompute);
    row("TP communication (exposed)", t.tp_comm);
    row("CP/EP communication (exposed)", t.other_comm);
    row("pipeline bubble", t.pp_bubble);
    row("DP gradient sync (exposed)", t.dp_exposed);
    row("optimizer step", t.optimizer);
    time.print(std::cout);
    if (!e.feasible)
        std::cout << "\nInfeasible: " << e.reason << "\n";
}

void writeTrace(const Evaluation& e, const CostModel& model, const std::string& path)
{
    const std::string title = cat(model.graph().name, " on ", model.cluster().worldSize(), " x ",
                                  model.cluster().device.name, ": ", e.config.describe());
    // Compact: a trace of thousands of events is read by tools, not people.
    const std::string text = toChromeTrace(*e.simulation, title).dump() + "\n";
    if (path == "-")
        std::cout << text;
    else
        writeFileAtomic(path, text);
}

/** The transformer shapes of the job config and of --model, where they differ ("" when they agree). */
std::string shapeDifferences(const TransformerShape& file, const TransformerShape& model)
{
    std::vector<std::string> diffs;
    const auto check = [&](const char* what, std::int64_t a, std::int64_t b) {
        if (a > 0 && a != b)
            diffs.push_back(cat(what, " ", a, " vs ", b));
    };
    check("layers", file.num_layers, model.num_layers);
    check("hidden", file.hidden, model.hidden);
    check("heads", file.num_heads, model.num_heads);
    check("kv heads", file.num_kv_heads, model.num_kv_heads);
    check("FFN", file.ffn_hidden, model.ffn_hidden);
    check("vocab", file.vocab, model.vocab);
    check("experts", file.num_experts, model.num_experts);
    return join(diffs, ", ");
}

/**
 * --from-config: the job config's parallel configuration replaces the degree options; its global batch and
 * sequence length apply unless given. Warnings go to stderr.
 */
SimulateOptions withImportedConfig(const SimulateOptions& given)
{
    SimulateOptions o = given;
    // What the file may leave open: the world size (only when --nodes fixes it) and the model's block count.
    BuildOptions probe;
    probe.seq_len = o.seq_len;
    const ModelGraph shape = loadModel(o.model, probe);
    ImportOptions options;
    if (o.nodes_given)
        options.world_size = loadCluster(o.cluster, o.nodes, o.gpus_per_node).worldSize();
    if (shape.transformer)
        options.num_layers = static_cast<int>(shape.transformer->num_layers);
    const ImportedConfig imported = importJobConfig(o.from_config, options);
    const ParallelConfig& c = imported.config;
    if (imported.model && shape.transformer) {
        const std::string diffs = shapeDifferences(*imported.model, *shape.transformer);
        if (!diffs.empty())
            std::cerr << "warning: " << o.from_config << " describes another model than " << o.model << " (" << diffs
                      << "): simulating " << o.model << '\n';
    }
    for (const auto& warning : imported.warnings)
        std::cerr << "warning: " << o.from_config << ": " << warning << '\n';

    o.tp = c.tp;
    o.pp = c.pp;
    o.dp = c.dp;
    o.cp = c.cp;
    o.ep = c.ep;
    o.etp = c.etp;
    o.vpp = c.vpp;
    o.micro_batch = c.micro_batch;
    o.zero = c.zero_stage;
    o.zero_ngroups = c.zero_ngroups;
    o.sequence_parallel = c.sequence_parallel;
    o.tp_comm_overlap = c.tp_comm_overlap;
    o.overlap_param_gather = c.overlap_param_gather;
    o.moe_a2a_overlap = c.moe_a2a_overlap;
    o.moe_shared_expert_overlap = c.moe_shared_expert_overlap;
    o.moe_capacity_factor = c.moe_capacity_factor;
    o.moe_router_imbalance = c.moe_router_imbalance;
    o.fp8_linears = c.fp8_linears;
    o.fp8_recipe = std::string(float8RecipeName(c.fp8_recipe));
    o.eager_kernels = c.eager_kernels;
    if (o.framework.empty()) // --framework overrides the file's
        o.framework = std::string(frameworkName(c.framework));
    o.recompute = c.recompute == RecomputeKind::Modules ? "none" : std::string(recomputeName(c.recompute));
    o.recompute_modules = c.recompute == RecomputeKind::Modules ? c.recompute_modules : std::vector<std::string> {};
    o.schedule = std::string(scheduleName(c.schedule));
    o.schedule_given = true;
    o.stage_layers = c.stage_layers;
    o.rank_order = c.rank_order;
    if (o.global_batch == 0)
        o.global_batch = imported.global_batch;
    if (o.seq_len == 0)
        o.seq_len = imported.seq_len;
    if (!o.gpus_per_node_given && imported.gpus_per_node > 0)
        o.gpus_per_node = imported.gpus_per_node;
    if (o.json != "-" && o.trace != "-")
        std::cout << "Job config " << o.from_config << " (" << imported.format << "): " << c.describe()
                  << ", global batch " << imported.global_batch
                  << (imported.seq_len > 0 ? cat(", seq_len ", imported.seq_len) : std::string()) << "\n";
    return o;
}

int runSimulate(const SimulateOptions& given)
{
    if (!given.framework.empty())
        frameworkFromOption(given.framework); // a bad name fails before the job config or the model is read
    const SimulateOptions o = given.from_config.empty() ? given : withImportedConfig(given);
    const ScheduleKind requested = scheduleFromName(o.schedule);
    if (!o.recompute_modules.empty() && o.recompute != "none")
        throw InputError("--recompute and --recompute-modules exclude each other",
                         "--recompute-modules alone recomputes the named modules");
    const RecomputeKind recompute
        = o.recompute_modules.empty() ? recomputeFromName(o.recompute) : RecomputeKind::Modules;
    for (const auto& name : o.recompute_modules)
        if (name.empty())
            throw InputError("--recompute-modules has an empty module name",
                             "give module path suffixes such as self_attn,mlp (ROOT = every block)");
    checkRankOrder(o.rank_order);
    if (o.json == "-" && o.trace == "-")
        throw InputError("--json and --trace cannot both write to stdout", "give one of them a file name");
    const std::int64_t world = std::int64_t {o.tp} * o.pp * o.dp * o.cp;
    if (world > kMaxWorldSize)
        throw InputError(cat("tp x pp x dp x cp = ", world, " GPUs is more than ", kMaxWorldSize),
                         "use smaller parallel degrees");

    // Without --nodes, the cluster is as many nodes as the configuration needs (the last one may be partial).
    Cluster cluster = loadCluster(o.cluster, o.nodes_given ? o.nodes : 0, o.gpus_per_node);
    if (!o.nodes_given) {
        const std::int64_t nodes = (world + cluster.gpus_per_node - 1) / cluster.gpus_per_node;
        cluster = loadCluster(o.cluster, static_cast<int>(nodes), cluster.gpus_per_node);
    }

    BuildOptions build;
    build.batch = o.micro_batch;
    build.seq_len = o.seq_len;
    auto graph = std::make_shared<const ModelGraph>(loadModel(o.model, build));
    ProfileRequest profileRequest;
    profileRequest.profile_dir = o.profile_dir;
    const CostSourceChoice costs = chooseCostSource(cluster, CostParams {}, profileRequest);
    CostParams params;
    params.calibrated_memory_bytes = costs.calibrated_memory_bytes;
    // Human output goes to stdout; when stdout carries JSON or a trace, the notes go to stderr.
    std::ostream& notes = o.json == "-" || o.trace == "-" ? std::cerr : std::cout;
    for (const auto& note : costs.profile.notes)
        notes << "profile: " << note << '\n';
    // The same layers and tensor-parallel roles as `plan` gives the model, so a plan's winner simulates as it was
    // ranked (ONNX graphs without repeated module paths, or without TP roles, included).
    const PlannerConfig planning;
    std::string layerNote, rolesNote;
    std::vector<Layer> layers = planningLayers(*graph, planning, &layerNote);
    const auto shared = withShardingRoles(graph, layers, cluster, CostParams {}, planning, &rolesNote);
    for (const auto* note : {&layerNote, &rolesNote})
        if (!note->empty())
            notes << *note << '\n';
    const CostModel model(shared, cluster, params, costs.source, std::move(layers));

    ParallelConfig config;
    config.tp = o.tp;
    config.pp = o.pp;
    config.dp = o.dp;
    config.cp = o.cp;
    config.ep = o.ep;
    config.etp = o.etp;
    config.vpp = o.vpp;
    config.micro_batch = o.micro_batch;
    config.zero_stage = o.zero;
    config.zero_ngroups = o.zero_ngroups;
    config.sequence_parallel = o.sequence_parallel;
    config.tp_comm_overlap = o.tp_comm_overlap;
    config.overlap_param_gather = o.overlap_param_gather;
    config.moe_a2a_overlap = o.moe_a2a_overlap;
    config.moe_shared_expert_overlap = o.moe_shared_expert_overlap;
    config.moe_capacity_factor = o.moe_capacity_factor;
    config.moe_router_imbalance = o.moe_router_imbalance;
    config.fp8_linears = o.fp8_linears;
    config.fp8_recipe = parseFloat8Recipe(o.fp8_recipe).value_or(Float8Recipe::Tensorwise); // checked by the parser
    config.eager_kernels = o.eager_kernels;
    config.framework = o.framework.empty() ? Framework::Generic : frameworkFromOption(o.framework);
    if (!o.framework_version.empty()) {
        const auto version = resolveFrameworkVersion(config.framework, o.framework_version);
        if (!version) {
            const auto [cause, hint] = unknownFrameworkVersion(config.framework, o.framework_version);
            throw InputError("--framework-version " + cause, hint);
        }
        config.framework_version = *version;
    }
    config.recompute = recompute;
    config.recompute_modules = o.recompute_modules;
    // --vpp alone means the interleaved schedule, the only one that runs several chunks per rank.
    config.schedule = o.vpp > 1 && !o.schedule_given ? ScheduleKind::Interleaved1F1B : requested;
    config.stage_layers = o.stage_layers;
    config.rank_order = o.rank_order;

    Workload workload;
    workload.global_batch = o.global_batch;
    workload.seq_len = graph->seq_len;
    workload.memory_limit_bytes = o.memory_gb * units::kGB;

    const auto begin = std::chrono::steady_clock::now();
    Evaluation e;
    const std::int64_t perStep = std::int64_t {o.dp} * o.micro_batch;
    if (o.global_batch % perStep) {
        // Not adjusted: the user asked for this global batch, so say why it cannot be split.
        e.config = config;
        e.config.num_microbatches = static_cast<int>(std::max<std::int64_t>(1, o.global_batch / perStep));
        e.cost_source = model.source().name();
        e.memory_limit_bytes = o.memory_gb > 0 ? workload.memory_limit_bytes : cluster.device.memory_bytes;
        e.reason = cat("global batch ", o.global_batch, " is not divisible by dp x micro-batch = ", o.dp, " x ",
                       o.micro_batch);
    } else {
        if (o.global_batch / perStep > kMaxMicrobatches)
            throw InputError(cat("global batch ", o.global_batch, " gives ", o.global_batch / perStep,
                                 " micro-batches per step; at most ", kMaxMicrobatches, " are simulated"),
                             "use a larger --micro-batch or --dp, or a smaller --global-batch");
        config.num_microbatches = static_cast<int>(o.global_batch / perStep);
        EvaluateOptions options;
        options.record_timeline = !o.trace.empty();
        options.require_full_cluster = o.nodes_given;
        e = model.evaluate(config, workload, options);
    }
    SearchCounts counts;
    counts.candidates_total = 1;
    counts.candidates_feasible = e.feasible ? 1 : 0;
    counts.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();

    if (o.json != "-" && o.trace != "-")
        printEvaluation(e, model, o);
    if (!o.json.empty())
        writeJsonOutput(resultJson({e}, model, counts), o.json);
    if (!o.trace.empty() && e.simulation)
        writeTrace(e, model, o.trace);
    if (!o.save_plan.empty() && !e.stages.empty()) {
        PlanFileContext context;
        context.global_batch = o.global_batch;
        context.seq_len = graph->seq_len;
        context.model_spec = o.model;
        context.created_by = "shardscape-cli simulate";
        context.version = "0.1.0";
        savePlanFile(o.save_plan, planToJson(e, model, context));
        if (o.json != "-" && o.trace != "-")
            std::cout << "plan saved to " << o.save_plan << '\n';
    }
    if (!e.feasible) {
        std::cerr << "error: " << e.reason << "; " << wayOut(e, model, o) << '\n';
        return kExitBadInput;
    }
    return kExitOk;
}

} // namespace

void addSimulateCommand(CLI::App& app, CommandAction& action)
{
    auto o = std::make_shared<SimulateOptions>();
    auto* cmd = app.add_subcommand("simulate",
                                   "Predict step time, throughput, MFU and memory of one parallel "
                                   "configuration");
    const auto degree = CLI::Range(1, kMaxDegree);
    cmd->add_option("--model,-m", o->model, "preset name, HF config.json, native graph .json or .onnx")->required();
    cmd->add_option("--cluster,-c", o->cluster, "device preset (e.g. h100-sxm) or cluster .json file")->required();
    // Required unless --from-config gives them (checked after parsing); the configuration options exclude it.
    std::vector<CLI::Option*> required;
    std::vector<CLI::Option*> configuration;
    required.push_back(cmd->add_option("--tp", o->tp, "tensor-parallel degree")->check(degree));
    auto* tpOption = required.back();
    required.push_back(cmd->add_option("--pp", o->pp, "pipeline-parallel degree (pipeline ranks)")->check(degree));
    required.push_back(cmd->add_option("--dp", o->dp, "data-parallel degree (inference: replicas)")->check(degree));
    configuration.push_back(
        cmd->add_option("--vpp", o->vpp, "model chunks per pipeline rank (implies --schedule interleaved)")
            ->check(degree)
            ->capture_default_str());
    configuration.push_back(
        cmd->add_option("--cp", o->cp, "context-parallel degree")->check(degree)->capture_default_str());
    required.push_back(
        cmd->add_option("--micro-batch", o->micro_batch, "sequences per micro-batch per data-parallel rank")
            ->check(CLI::Range(1, 1'000'000)));
    auto* globalBatch
        = cmd->add_option("--global-batch", o->global_batch,
                          "sequences per step; must be a multiple of dp x micro-batch (micro-batches = B / (dp x b)); "
                          "with --from-config, overrides the file's")
              ->check(CLI::Range(std::int64_t {1}, std::int64_t {1'000'000'000}));
    configuration.push_back(
        cmd->add_option("--zero", o->zero, "ZeRO stage: 0 none, 1 optimizer states, 2 + gradients, 3 + parameters")
            ->check(CLI::Range(0, 3))
            ->capture_default_str());
    configuration.push_back(
        cmd->add_option("--zero-ngroups", o->zero_ngroups, "shard ZeRO states within dp x cp / N ranks (hierarchical)")
            ->check(degree)
            ->capture_default_str());
    configuration.push_back(
        cmd->add_option("--recompute", o->recompute, "activation recomputation: none, selective or full")
            ->capture_default_str());
    configuration.push_back(
        cmd->add_option("--recompute-modules", o->recompute_modules,
                        "recompute the modules whose paths end with these suffixes, comma-separated ('ROOT' = every "
                        "block); implies recompute=modules")
            ->delimiter(','));
    auto* epOption = cmd->add_option("--ep", o->ep,
                                     "expert-parallel degree (MoE; ep x etp must divide tp x cp x dp; inference: 1 or "
                                     "tp x dp)")
                         ->check(degree)
                         ->capture_default_str();
    configuration.push_back(epOption);
    configuration.push_back(
        cmd->add_option("--etp", o->etp,
                        "expert tensor-parallel degree (MoE; Megatron --expert-tensor-parallel-size; "
                        "default tp, must divide tp; below tp needs --sequence-parallel)")
            ->check(CLI::Range(1, 1048576)));
    configuration.push_back(
        cmd->add_flag("--sequence-parallel", o->sequence_parallel, "Megatron sequence parallelism (needs tp > 1)"));
    configuration.push_back(cmd->add_flag("--tp-comm-overlap", o->tp_comm_overlap,
                                          "overlap the SP all-gathers/reduce-scatters with GEMMs (Megatron "
                                          "--tp-comm-overlap, torchtitan async TP; needs --sequence-parallel)"));
    configuration.push_back(cmd->add_flag("--overlap-param-gather", o->overlap_param_gather,
                                          "overlap the ZeRO-1/2 parameter all-gather with the next forward (Megatron "
                                          "--overlap-param-gather)"));
    configuration.push_back(cmd->add_flag("--moe-a2a-overlap", o->moe_a2a_overlap,
                                          "overlap the expert-parallel all-to-alls with another micro-batch's "
                                          "compute (Megatron --overlap-moe-expert-parallel-comm; needs --ep 2+)"));
    configuration.push_back(cmd->add_flag("--moe-shared-expert-overlap", o->moe_shared_expert_overlap,
                                          "run the shared expert under the expert all-to-alls (Megatron "
                                          "--moe-shared-expert-overlap; needs --ep 2+ and a shared expert)"));
    configuration.push_back(cmd->add_option("--moe-capacity-factor", o->moe_capacity_factor,
                                            "experts compute at most this times their even share of the routed "
                                            "tokens and drop the rest (Megatron --moe-expert-capacity-factor); 0 = "
                                            "dropless (default)")
                                ->check(CLI::Range(0.0, 1000.0)));
    configuration.push_back(cmd->add_option("--moe-router-imbalance", o->moe_router_imbalance,
                                            "routed tokens on the busiest expert-parallel rank over the mean, as "
                                            "your router runs (default 1: even; the sampling spread is added)")
                                ->check(CLI::Range(1.0, 1000.0)));
    configuration.push_back(cmd->add_flag("--fp8", o->fp8_linears,
                                          "run the linear layers' GEMMs in FP8 with dynamic scaling (torchtitan "
                                          "float8, Transformer Engine)"));
    configuration.push_back(cmd->add_option("--fp8-recipe", o->fp8_recipe,
                                            "FP8 scaling with --fp8: tensorwise (one scale per tensor) or rowwise "
                                            "(torchao's per-row scales, torchtitan only)")
                                ->check(CLI::IsMember({"tensorwise", "rowwise"}))
                                ->capture_default_str());
    configuration.push_back(cmd->add_flag("--eager", o->eager_kernels,
                                          "eager PyTorch without torch.compile: unfused RMSNorm, rotary and SwiGLU "
                                          "kernels"));
    cmd->add_option("--framework", o->framework,
                    "training framework the configuration is for (its memory terms and what it can run): "
                        + frameworkChoices() + "; default generic, or the job config's with --from-config");
    cmd->add_option("--framework-version", o->framework_version,
                    "the framework's release the configuration is for (core_v0.15-core_v0.19, main, v0.2, v0.19): "
                    "what that release runs, recorded by --save-plan for the exports; default: any release");
    auto* schedule = cmd->add_option("--schedule", o->schedule,
                                     "pipeline schedule: gpipe, 1f1b, interleaved, zb-h1, zb-v, dualpipev or dualpipe "
                                     "(the last three: --vpp 2)")
                         ->capture_default_str();
    configuration.push_back(schedule);
    cmd->add_option("--seq-len", o->seq_len, "tokens per sequence (default: min(max positions, 4096))")
        ->check(CLI::Range(std::int64_t {1}, std::int64_t {100'000'000}));
    auto* nodes = cmd->add_option("--nodes", o->nodes,
                                  "nodes in the cluster; tp x pp x dp x cp must then equal nodes x GPUs per node. "
                                  "Default: ceil(tp x pp x dp x cp / GPUs per node), replacing a cluster file's count; "
                                  "the last node may be "
                                  "partial")
                      ->check(CLI::Range(1, 100'000));
    auto* gpusPerNode = cmd->add_option("--gpus-per-node", o->gpus_per_node,
                                        "GPUs per node (default: the device's or cluster file's)")
                            ->check(CLI::Range(1, 1024));
    cmd->add_option("--memory-gb", o->memory_gb, "per-GPU memory limit in GB (1e9 bytes); default: device capacity")
        ->check(CLI::Range(1e-3, 1e6));
    configuration.push_back(
        cmd->add_option(
               "--stage-layers", o->stage_layers,
               "layers per pipeline chunk, comma-separated (pp x vpp counts, uneven allowed), over the model's "
               "layer list including embedding and head (see inspect); default: blocks split evenly")
            ->delimiter(','));
    configuration.push_back(
        cmd->add_option("--rank-order", o->rank_order, "rank order, fastest-varying first (places tp/cp/dp/pp groups)")
            ->capture_default_str());
    cmd->add_option("--json", o->json, "write the result JSON to this file ('-' for stdout), also when infeasible");
    cmd->add_option("--trace", o->trace,
                    "write the simulated timeline as a Chrome trace (Perfetto) to this file; skipped when the "
                    "configuration is rejected before simulation");
    cmd->add_option("--profile-dir", o->profile_dir,
                    "measured profile directory (profile.json) for the cost model; default: "
                    "~/.cache/shardscape/<device> when one matches the cluster's device");
    cmd->add_option("--save-plan", o->save_plan,
                    "write the configuration as a plan file (shardscape.plan/1) for export; also when it does not fit");
    auto* fromConfig = cmd->add_option(
        "--from-config", o->from_config,
        "take the parallel configuration from a job config: torchtitan .toml, Megatron-LM launch script, DeepSpeed "
        ".json or a plan file (replaces --tp, --pp, --dp, --micro-batch and the other configuration options; the "
        "file's global batch and sequence length apply unless given)");
    for (auto* option : required)
        option->excludes(fromConfig);
    for (auto* option : configuration)
        option->excludes(fromConfig);
    required.push_back(globalBatch);
    cmd->add_option("--mode", o->mode,
                    "train (a training step) or inference (a serving deployment: TTFT, TPOT, tokens/s, KV cache)")
        ->check(CLI::IsMember({"train", "inference"}))
        ->capture_default_str();
    const std::vector<CLI::Option*> servingOptions = addServingOptions(cmd, o->serving);
    std::vector<CLI::Option*> trainingOnly;
    for (auto* option : required)
        if (option->get_name() != "--pp" && option->get_name() != "--dp" && option != tpOption)
            trainingOnly.push_back(option);
    for (auto* option : configuration)
        if (option != epOption)
            trainingOnly.push_back(option);
    cmd->footer("--tp, --pp, --dp, --micro-batch and --global-batch are required unless --from-config gives them; "
                "--mode inference needs --tp only and takes --input-len, --output-len, --concurrency instead. "
                "Exit code 2 with a one-line reason on stderr when the configuration is invalid or does not fit; "
                "--json is still written.");
    cmd->callback([&action, cmd, o, nodes, schedule, gpusPerNode, fromConfig, required, trainingOnly, servingOptions] {
        // The callback runs inside the parser: misuse is reported by the action, where InputError maps to exit 2.
        std::string misuse;
        if (o->mode == "inference") {
            std::vector<std::string> names;
            for (auto* option : trainingOnly)
                if (option->count() > 0)
                    names.push_back(option->get_name());
            for (const char* name : {"--from-config", "--trace", "--seq-len", "--framework", "--framework-version"})
                if (cmd->count(name) > 0)
                    names.push_back(name);
            if (!names.empty())
                misuse = cat(names.front(), " is a training option; --mode inference does not take it");
            ServingSimulateInput in;
            in.model = o->model;
            in.cluster = o->cluster;
            in.nodes = nodes->count() > 0 ? o->nodes : 0;
            in.gpus_per_node = o->gpus_per_node;
            in.parallel = {o->tp, o->pp, o->ep, o->dp};
            in.memory_gb = o->memory_gb;
            in.json = o->json;
            in.save_plan = o->save_plan;
            in.profile_dir = o->profile_dir;
            action = [in, o, misuse] {
                if (!misuse.empty())
                    throw InputError(misuse, "drop it, or simulate training without --mode inference");
                return runServingSimulate(in, o->serving);
            };
            return;
        }
        for (auto* option : servingOptions)
            if (option->count() > 0 && misuse.empty())
                misuse = cat(option->get_name(), " is an inference option");
        if (!misuse.empty()) {
            action = [misuse]() -> int { throw InputError(misuse, "add --mode inference"); };
            return;
        }
        if (fromConfig->count() == 0)
            for (auto* option : required)
                if (option->count() == 0)
                    throw CLI::RequiredError(option->get_name());
        o->nodes_given = nodes->count() > 0;
        o->schedule_given = schedule->count() > 0;
        o->gpus_per_node_given = gpusPerNode->count() > 0;
        action = [o] { return runSimulate(*o); };
    });
}

} // namespace shardscape::cli
