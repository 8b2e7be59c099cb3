// SPDX-License-Identifier: MIT
// `simulate`'s report: the evaluation printed as tables, the way out of an infeasible configuration, the trace.
#include "simulate_options.h"
#include "text_table.h"

#include "shardscape/sim/chrome_trace.h"
#include "shardscape/support/atomic_file.h"
#include "shardscape/support/strings.h"
#include "shardscape/support/units.h"

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace shardscape::cli {

namespace {

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

std::vector<std::int64_t> divisors(std::int64_t n, std::int64_t limit)
{
    std::vector<std::int64_t> out;
    for (std::int64_t d = 1; d <= std::min(n, limit); ++d)
        if (n % d == 0)
            out.push_back(d);
    return out;
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

} // namespace

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
    if (!frameworkModelRestriction(c.framework, c.framework_version, graph).empty())
        return cat("inspect --model ", o.model, " names the architecture");
    if (!c.stage_layers.empty())
        return cat("give ", layerChunksName(c.schedule), " = ", layerChunks(c.schedule, c.pp, c.vpp),
                   " counts of at least 1 that sum to the model's ", layers,
                   " layers (list them with: shardscape-cli inspect --model ", o.model, ")");
    if (e.simulation) {
        // Out of memory. Under a limit the runtime memory alone exceeds, no layout lever helps.
        const double runtime = e.runtimeMemory();
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
    std::cout << ", " << cluster.device.display_name << "\n";
    if (const std::string measured = measuredLinksNote(cluster); !measured.empty())
        std::cout << "Fabric: " << measured << " (the cluster file's link efficiency)\n";
    std::cout << "\n";
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

} // namespace shardscape::cli
