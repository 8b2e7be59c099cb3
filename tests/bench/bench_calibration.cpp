// SPDX-License-Identifier: MIT
// Calibration of the datasheet cost model against published training runs (tests/data/published_configs.json):
// for every row, builds the model, cluster and parallel configuration the row describes, predicts the step
// time and converts it into the row's own throughput metric. Prints one line per row, the rows that cannot be
// simulated with the reason, and median / max |relative error| overall and per series.
//
//   bench_calibration [published_configs.json] [--verbose] [--markdown] [--ops ROW_ID] [--param NAME=VALUE]...
//                     [--write-residuals FILE]
//
// --write-residuals writes the step-time residual bands by calibration regime that the uncertainty ranges use
// (resources/calibration/step_time_residuals.json).
//
// --param overrides one CostParams default for this run (to explore a knob; the committed defaults are what
// tests/bench/calibration_results.md reports).
// --ops prints, for one row, every op of the first transformer block with its forward and backward seconds
// per micro-batch under the row's layout (no communication): where the cost model spends a block's time.
#include "calibration_rows.h"
#include "residual_bands.h"

#include "shardscape/cost/uncertainty.h"

#include "shardscape/cost/layer_cost.h"
#include "shardscape/model/model_source.h"
#include "shardscape/support/strings.h"
#include "shardscape/support/units.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <map>
#include <string>
#include <vector>

using namespace shardscape;
using namespace shardscape::calibration;

namespace {

#ifndef SHARDSCAPE_SOURCE_DIR
#define SHARDSCAPE_SOURCE_DIR "."
#endif

double median(std::vector<double> values)
{
    if (values.empty())
        return 0;
    std::sort(values.begin(), values.end());
    const std::size_t n = values.size();
    return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

std::string shortConfig(const ParallelConfig& p)
{
    std::string text = cat("tp", p.tp, " pp", p.pp, " dp", p.dp);
    if (p.cp > 1)
        text += cat(" cp", p.cp);
    if (p.vpp > 1)
        text += cat(" vpp", p.vpp);
    text += cat(" mb", p.micro_batch, " m", p.num_microbatches, " z", p.zero_stage);
    if (p.sequence_parallel)
        text += " sp";
    switch (p.recompute) {
    case RecomputeKind::None:
        break;
    case RecomputeKind::Selective:
        text += " ac=sel";
        break;
    case RecomputeKind::Full:
        text += " ac=full";
        break;
    case RecomputeKind::Modules:
        text += p.recompute_modules.size() > 10 ? " ac=layer" : " ac=op";
        break;
    }
    return text;
}

std::string shortSeries(const std::string& series)
{
    static const std::map<std::string, std::string> names {
        {"megatron_ptdp_sc21_table1", "sc21"},
        {"megatron_korthikanti_2022_table5", "mlsys23"},
        {"megatron_lm_readme_h100_weak_scaling_2024", "mcore24"},
        {"bloom_176b_production", "bloom"},
        {"opt_175b_production", "opt"},
        {"gpt_neox_20b_production", "neox"},
        {"gpt_neox_lambda_2023", "neox-lambda"},
        {"torchtitan_docs_performance_2024_08", "tt-doc"},
        {"torchtitan_benchmark_h100_2024_12", "tt-h100"},
        {"torchtitan_asynctp_h100_2025_06", "tt-atp25"},
        {"torchtitan_trainy_h200_2025_06", "tt-h200"},
        {"mosaicml_llm_foundry_mpt_benchmarks", "mpt"},
    };
    const auto it = names.find(series);
    return it == names.end() ? series : it->second;
}

/** Per-op forward/backward seconds of the first block of a case, each op costed as a one-op layer. */
void printOps(const Case& c, const CostParams& params, const DeviceOverrides& devices)
{
    const auto modelOwner = makeCostModel(c, params, devices);
    const CostModel& model = *modelOwner;
    const auto& layers = model.layers();
    const auto block
        = std::find_if(layers.begin(), layers.end(), [](const Layer& l) { return l.kind == LayerKind::Block; });
    if (block == layers.end())
        return;
    const auto producer = model.graph().producers();
    // The engine's own layout (framework terms included), with the whole block as the recomputed unit off.
    ParallelConfig config = c.config;
    config.recompute = RecomputeKind::None;
    config.recompute_modules.clear();
    const LayerLayout layout = model.layerLayout(config);
    double totalFwd = 0, totalBwd = 0;
    std::map<std::string, std::pair<double, double>> byKind;
    std::printf("%-44s %-16s %12s %12s %12s %10s\n", "op", "kind", "fwd FLOPs", "fwd s", "bwd s", "fwd TFLOP/s");
    for (const auto id : block->ops) {
        Layer single;
        single.name = block->name;
        single.kind = LayerKind::Other;
        single.ops = {id};
        const LayerCost lc = computeLayerCost(model.graph(), producer, single, layout, model.source());
        const Op& op = model.graph().op(id);
        const double share = c.config.micro_batch / static_cast<double>(c.config.cp);
        const double flops = op.flops_fwd * share / c.config.tp;
        const double bwd = lc.backward_input + lc.backward_weight;
        std::printf("%-44s %-16s %12.4g %12.4g %12.4g %10.1f\n", op.name.c_str(),
                    std::string(opKindName(op.kind)).c_str(), flops, lc.forward, bwd,
                    lc.forward > 0 ? flops / lc.forward / 1e12 : 0.0);
        totalFwd += lc.forward;
        totalBwd += bwd;
        auto& k = byKind[std::string(opKindName(op.kind))];
        k.first += lc.forward;
        k.second += bwd;
    }
    std::printf("block: fwd %.4g s, bwd %.4g s\n", totalFwd, totalBwd);
    for (const auto& [kind, t] : byKind)
        std::printf("  %-16s fwd %5.1f%%  bwd %5.1f%%  of fwd+bwd %5.1f%%\n", kind.c_str(), 100 * t.first / totalFwd,
                    100 * t.second / totalBwd, 100 * (t.first + t.second) / (totalFwd + totalBwd));

    // Where the whole step goes, so that a row's error can be traced to a term.
    const Evaluation e = predict(c, params, devices).evaluation;
    const TimeBreakdown& b = e.time;
    std::printf("step %.4g s: compute %.4g, recompute %.4g, tp %.4g, other comm %.4g, pp bubble %.4g, dp exposed %.4g, "
                "sharded dp %.4g, optimizer %.4g\n",
                e.step_time, b.compute, b.recompute, b.tp_comm, b.other_comm, b.pp_bubble, b.dp_exposed, b.sharded_dp,
                b.optimizer);
}

/** Applies "name=value" to the CostParams knob of that name; false when the name is unknown. */
bool setParam(CostParams& params, DeviceOverrides& devices, const std::string& assignment)
{
    const auto eq = assignment.find('=');
    if (eq == std::string::npos)
        return false;
    const std::string name = assignment.substr(0, eq);
    const double value = std::stod(assignment.substr(eq + 1));
    // DEVICE.matmul_efficiency / DEVICE.attention_efficiency replace a device preset's measured efficiency.
    if (const auto dot = name.find('.'); dot != std::string::npos) {
        const std::string device = name.substr(0, dot);
        const std::string knob = name.substr(dot + 1);
        if (knob == "matmul_efficiency")
            devices[device].matmul = value;
        else if (knob == "attention_efficiency")
            devices[device].attention = value;
        else
            return false;
        return true;
    }
    const std::pair<const char*, double*> knobs[] = {
        {"matmul_efficiency", &params.matmul_efficiency},
        {"matmul_half_dim", &params.matmul_half_dim},
        {"attention_efficiency", &params.attention_efficiency},
        {"attention_causal_fraction", &params.attention_causal_fraction},
        {"memory_efficiency", &params.memory_efficiency},
        {"min_kernel_time", &params.min_kernel_time},
        {"intra_node_efficiency", &params.intra_node_efficiency},
        {"inter_node_efficiency", &params.inter_node_efficiency},
        {"dp_overlap", &params.dp_overlap},
        {"zero3_prefetch_overlap", &params.zero3_prefetch_overlap},
        {"grad_bytes", &params.grad_bytes},
    };
    for (const auto& [knob, field] : knobs) {
        if (name == knob) {
            *field = value;
            return true;
        }
    }
    return false;
}

/** Practitioners' reference point: Llama-2-7B on one 8x H100 SXM node with FSDP reaches 40-55% MFU. */
void printSanity(const CostParams& params, const DeviceOverrides& devices)
{
    BuildOptions options;
    options.batch = 1;
    options.seq_len = 4096;
    auto graph
        = std::make_shared<const ModelGraph>(buildFromHfConfig(modelPresetConfig("llama2-7b"), options, "llama2-7b"));
    Cluster cluster;
    cluster.device = devicePreset("h100-sxm");
    if (const auto it = devices.find("h100-sxm"); it != devices.end()) {
        if (it->second.matmul > 0)
            cluster.device.matmul_efficiency = it->second.matmul;
        if (it->second.attention > 0)
            cluster.device.attention_efficiency = it->second.attention;
    }
    cluster.nodes = 1;
    cluster.gpus_per_node = 8;
    const CostModel model(graph, cluster, params);
    std::printf("\nSanity: Llama-2-7B, 8x H100 SXM, FSDP (ZeRO-3), seq 4096:\n");
    for (const int mb : {1, 2, 4}) {
        for (const auto recompute : {RecomputeKind::None, RecomputeKind::Full}) {
            ParallelConfig c;
            c.dp = 8;
            c.zero_stage = 3;
            c.micro_batch = mb;
            c.num_microbatches = 1;
            c.recompute = recompute;
            Workload w;
            w.global_batch = c.globalBatch();
            w.seq_len = options.seq_len;
            const Evaluation e = model.evaluate(c, w);
            std::printf("  micro-batch %d, recompute %-4s: MFU %.1f%%, HFU %.1f%%, %.0f tokens/s/GPU, peak %.1f GB%s\n",
                        mb, std::string(recomputeName(recompute)).c_str(), 100 * e.mfu, 100 * e.hfu, e.tokens_per_s / 8,
                        e.peakMemory() / 1e9, e.feasible ? "" : " (over memory)");
        }
    }
}

struct Result
{
    Case c;
    Prediction p;
};

void printStats(const char* label, const std::vector<double>& errors, bool markdown)
{
    std::vector<double> magnitudes;
    for (const double e : errors)
        magnitudes.push_back(std::abs(e));
    const double med = median(magnitudes);
    const double max = magnitudes.empty() ? 0 : *std::max_element(magnitudes.begin(), magnitudes.end());
    const double signedMedian = median(errors);
    const auto within = std::count_if(magnitudes.begin(), magnitudes.end(), [](double e) { return e <= 0.25; });
    if (markdown)
        std::printf("| %s | %zu | %.1f%% | %.1f%% | %+.1f%% | %ld |\n", label, errors.size(), 100 * med, 100 * max,
                    100 * signedMedian, static_cast<long>(within));
    else
        std::printf("  %-44s rows %3zu  median|err| %5.1f%%  max|err| %5.1f%%  median err %+6.1f%%  within 25%%: %ld\n",
                    label, errors.size(), 100 * med, 100 * max, 100 * signedMedian, static_cast<long>(within));
}

} // namespace

int main(int argc, char** argv)
{
    std::string path = std::string(SHARDSCAPE_SOURCE_DIR) + "/tests/data/published_configs.json";
    bool verbose = false;
    bool markdown = false;
    std::string opsRow;
    std::string residualsPath;
    CostParams params;
    DeviceOverrides devices;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--param") == 0 && i + 1 < argc) {
            if (!setParam(params, devices, argv[++i])) {
                std::fprintf(stderr, "bench_calibration: unknown knob in '%s'\n", argv[i]);
                return 2;
            }
        } else if (std::strcmp(argv[i], "--ops") == 0 && i + 1 < argc)
            opsRow = argv[++i];
        else if (std::strcmp(argv[i], "--verbose") == 0)
            verbose = true;
        else if (std::strcmp(argv[i], "--markdown") == 0)
            markdown = true;
        else if (std::strcmp(argv[i], "--write-residuals") == 0 && i + 1 < argc)
            residualsPath = argv[++i];
        else
            path = argv[i];
    }

    std::vector<nlohmann::json> rows;
    try {
        rows = loadRows(path);
    } catch (const std::exception& error) {
        std::fprintf(stderr, "bench_calibration: %s\n", error.what());
        return 2;
    }

    if (!opsRow.empty()) {
        for (const auto& row : rows) {
            const Case c = makeCase(row);
            if (c.id == opsRow && c.simulable) {
                printOps(c, params, devices);
                return 0;
            }
        }
        std::fprintf(stderr, "bench_calibration: no simulable row '%s'\n", opsRow.c_str());
        return 2;
    }
    const auto begin = std::chrono::steady_clock::now();
    std::vector<Result> results;
    std::vector<Case> skipped;
    for (const auto& row : rows) {
        Case c = makeCase(row);
        if (!c.simulable) {
            skipped.push_back(std::move(c));
            continue;
        }
        try {
            Prediction p = predict(c, params, devices);
            results.push_back({std::move(c), std::move(p)});
        } catch (const std::exception& error) {
            c.simulable = false;
            c.reason = error.what();
            skipped.push_back(std::move(c));
        }
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();

    if (markdown) {
        std::printf("| id | series | GPUs | config | metric | published | predicted | error | model MFU | notes |\n");
        std::printf("|---|---|---:|---|---|---:|---:|---:|---:|---|\n");
    } else {
        std::printf("%-48s %-8s %5s %-44s %10s %10s %8s %6s %s\n", "id", "series", "GPUs", "config", "published",
                    "predicted", "error", "MFU", "caveats");
    }
    for (const auto& [c, p] : results) {
        const Evaluation& e = p.evaluation;
        std::string flags;
        if (!e.feasible)
            flags += "[predicted OOM] ";
        for (const auto& caveat : c.caveats)
            flags += caveat.substr(0, caveat.find(' ')) + "; ";
        if (markdown)
            std::printf("| %s | %s | %d | %s | %s | %.4g | %.4g | %+.1f%% | %.1f%% | %s |\n", c.id.c_str(),
                        shortSeries(c.series).c_str(), c.gpus, shortConfig(c.config).c_str(), metricName(c.metric),
                        c.published, p.value, 100 * p.relative_error, 100 * e.mfu, flags.c_str());
        else
            std::printf("%-48s %-8s %5d %-44s %10.4g %10.4g %+7.1f%% %5.1f%% %s\n", c.id.c_str(),
                        shortSeries(c.series).c_str(), c.gpus, shortConfig(c.config).c_str(), c.published, p.value,
                        100 * p.relative_error, 100 * e.mfu, flags.c_str());
        if (verbose) {
            const TimeBreakdown& t = e.time;
            std::printf("    step %.4g s  compute %.4g  recompute %.4g  tp %.4g  cp/ep %.4g  bubble %.4g  dp-exposed "
                        "%.4g  optimizer %.4g  (bubble ratio %.3f, peak mem %.1f GB)\n",
                        e.step_time, t.compute, t.recompute, t.tp_comm, t.other_comm, t.pp_bubble, t.dp_exposed,
                        t.optimizer, e.bubble_ratio, e.peakMemory() / 1e9);
            for (std::size_t r = 0; r < e.stages.size(); ++r) {
                if (r >= 2 && r + 1 < e.stages.size())
                    continue; // the first two stages and the last one
                const MemoryBreakdown& m = e.stages[r].memory;
                std::printf("    stage %zu layers %d-%d, %.4g s per micro-batch; memory GB: weights %.1f grads %.1f "
                            "optimizer %.1f activations %.1f transient %.1f reserve %.1f = %.1f (%d in flight)\n",
                            r, e.stages[r].first_layer, e.stages[r].last_layer, e.stages[r].compute, m.weights / 1e9,
                            m.gradients / 1e9, m.optimizer / 1e9, m.activations / 1e9, m.transient / 1e9,
                            m.reserve / 1e9, m.total() / 1e9, e.stages[r].peak_inflight);
            }
            for (const auto& a : c.assumptions)
                std::printf("    rule: %s\n", a.c_str());
            for (const auto& caveat : c.caveats)
                std::printf("    caveat: %s\n", caveat.c_str());
        }
    }

    std::printf("\nRows not simulated (%zu):\n", skipped.size());
    for (const auto& c : skipped)
        std::printf("  %-48s %-8s %s\n", c.id.c_str(), shortSeries(c.series).c_str(), c.reason.c_str());

    std::printf("\nErrors (predicted vs published, in each row's own metric):\n");
    if (markdown) {
        std::printf("| rows | n | median abs error | max abs error | median signed error | within 25%% |\n");
        std::printf("|---|---:|---:|---:|---:|---:|\n");
    }
    std::vector<double> all;
    std::map<std::string, std::vector<double>> bySeries;
    std::vector<double> clean; // rows without a known, unmodelled cause of error
    for (const auto& [c, p] : results) {
        all.push_back(p.relative_error);
        bySeries[c.series].push_back(p.relative_error);
        if (c.caveats.empty())
            clean.push_back(p.relative_error);
    }
    // Step-time residuals (measured / predicted time - 1 = predicted / published throughput - 1) by regime.
    std::vector<residuals::Sample> samples;
    std::map<std::string, std::vector<double>> byRegime;
    for (const auto& [c, p] : results) {
        const std::string regime = calibrationRegime(c.config, c.seq_len);
        samples.push_back({regime, p.relative_error});
        byRegime[regime].push_back(p.relative_error);
    }
    printStats("all simulated rows", all, markdown);
    printStats("rows without caveats", clean, markdown);
    for (const auto& [series, errors] : bySeries)
        printStats(series.c_str(), errors, markdown);
    for (const auto& [regime, errors] : byRegime)
        printStats(cat("regime ", regime).c_str(), errors, markdown);
    const auto [inSample, loo] = residuals::coverage(samples);
    std::printf("\n80%% step-time band coverage: in-sample %.0f%%, leave-one-out %.0f%%\n", 100 * inSample, 100 * loo);
    if (!residualsPath.empty())
        residuals::writeBands(residualsPath,
                              residuals::bandsJson(samples,
                                                   "tests/bench/bench_calibration on "
                                                   "tests/data/published_configs.json "
                                                   "(by calibration regime)"));
    std::printf("\nPeak memory where the row states it (not calibrated; for information):\n");
    for (const auto& [c, p] : results) {
        if (c.published_peak_memory_gib <= 0)
            continue;
        const double predicted = p.evaluation.peakMemory() / units::kGiB;
        std::printf("  %-48s measured %6.1f GiB  predicted %6.1f GiB  %+6.1f%%\n", c.id.c_str(),
                    c.published_peak_memory_gib, predicted, 100 * (predicted / c.published_peak_memory_gib - 1));
    }

    // Every published row is a run that ran: a predicted OOM on one is a wrong verdict.
    std::size_t wrongOom = 0;
    for (const auto& [c, p] : results)
        wrongOom += p.evaluation.feasible ? 0 : 1;
    std::printf("\nRuns that ran, predicted OOM: %zu of %zu\n", wrongOom, results.size());

    std::printf("\n%zu rows simulated, %zu not, in %.2f s\n", results.size(), skipped.size(), seconds);
    printSanity(params, devices);
    return 0;
}
