// SPDX-License-Identifier: MIT
// One Llama decoder layer measured on a GPU against the engine's layer cost (issue 14, item 7).
//
//   bench_layer_probe [measured_layers.json] [--profile profile.json] [--markdown]
//
// The rows come from tests/gpu/layer_probe.py (torchtitan's Llama 3 layer in eager bf16 PyTorch, one device,
// weights and gradients allocated): stash = memory allocated after the forward minus before it, backward peak =
// max allocated during the backward minus the same base, forward and backward seconds. The prediction is the
// engine's cost of the same layer (the preset's first block at that sequence length, micro-batch and recompute,
// eager kernels): stash = LayerCost::activation_bytes, backward peak = stash + the transient the memory model adds
// (transient_mem_coef x the largest activation + the recompute working set), times from the datasheet, or from a
// measured profile (--profile, shardscape-profile's profile.json of the same device) with the datasheet behind it.
#include "residual_bands.h"
#include "shardscape/cost/cost_model.h"
#include "shardscape/hardware/cluster.h"
#include "shardscape/model/model_source.h"
#include "shardscape/profile/profile_cost_source.h"
#include "shardscape/support/units.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

using namespace shardscape;

#ifndef SHARDSCAPE_SOURCE_DIR
#define SHARDSCAPE_SOURCE_DIR "."
#endif

namespace {

struct Errors
{
    std::vector<double> stash, peak, forward, backward;
};

/** The median, as the residual bands compute percentiles. */
double median(std::vector<double> v)
{
    return residuals::percentile(std::move(v), 0.5);
}

double signedError(double predicted, double measured)
{
    return (predicted - measured) / measured;
}

std::vector<double> absolute(std::vector<double> v)
{
    for (double& x : v)
        x = std::fabs(x);
    return v;
}

/**
 * The engine's reading of a probe mode: torchtitan's layer code with its recompute options (none, full, "op"
 * per-op SAC = Selective under the torchtitan profile), Megatron's attention-core recomputation (selective) and
 * SDPA's own GQA (enable_gqa: K and V not repeated) under the Megatron profile. full-early-stop has no framework
 * profile (no framework checkpoints that way by default): left out of the comparison.
 */
bool modeOf(const std::string& mode, bool gqa, ParallelConfig& c)
{
    c.framework = gqa ? Framework::MegatronCore : Framework::Torchtitan;
    if (mode == "none")
        c.recompute = RecomputeKind::None;
    else if (mode == "full")
        c.recompute = RecomputeKind::Full;
    else if (mode == "op-sac")
        c.recompute = RecomputeKind::Selective;
    else if (mode == "selective") {
        c.framework = Framework::MegatronCore;
        c.recompute = RecomputeKind::Selective;
    } else
        return false;
    return true;
}

} // namespace

int main(int argc, char** argv)
{
    std::string path = std::string(SHARDSCAPE_SOURCE_DIR) + "/tests/data/measured_layers_h100.json";
    std::string profilePath;
    bool markdown = false;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--markdown"))
            markdown = true;
        else if (!std::strcmp(argv[i], "--profile") && i + 1 < argc)
            profilePath = argv[++i];
        else if (argv[i][0] != '-')
            path = argv[i];
        else {
            std::fprintf(stderr,
                         "usage: bench_layer_probe [measured_layers.json] [--profile profile.json] "
                         "[--markdown]\n");
            return 2;
        }
    }
    try {
        std::ifstream in(path);
        if (!in)
            throw std::runtime_error("cannot read " + path);
        const nlohmann::json doc = nlohmann::json::parse(in);
        const Cluster cluster = loadCluster("h100-sxm", 1, 8);
        const CostParams params;
        std::shared_ptr<const CostSource> source = makeDatasheetCostSource(cluster, params);
        if (!profilePath.empty())
            source = makeProfileCostSource(std::make_shared<const Profile>(loadProfile(profilePath)), source);
        std::printf("%s, torch %s, CUDA %s, measured %s; cost source: %s\n",
                    doc.at("device").get<std::string>().c_str(), doc.at("torch").get<std::string>().c_str(),
                    doc.at("cuda").get<std::string>().c_str(), doc.at("date").get<std::string>().c_str(),
                    source->name().c_str());
        if (markdown)
            std::printf("| layer | mb | seq | recompute | stash GiB meas / pred | bwd peak GiB meas / pred | "
                        "fwd ms meas / pred | bwd ms meas / pred |\n|---|---:|---:|---|---:|---:|---:|---:|\n");
        else
            std::printf("%-10s %2s %5s %-9s %15s %15s %17s %17s\n", "layer", "mb", "seq", "recompute", "stash GiB m/p",
                        "bwd peak m/p", "fwd ms m/p", "bwd ms m/p");
        std::map<std::string, std::shared_ptr<const CostModel>> models;
        std::map<std::string, Errors> byMode;
        Errors all;
        const double gib = units::kGiB;
        for (const auto& row : doc.at("rows")) {
            if (row.value("oom", false))
                continue;
            const std::string width = row.at("width");
            const int seq = row.at("seq_len");
            const std::string key = width + "@" + std::to_string(seq);
            auto& model = models[key];
            if (!model) {
                BuildOptions options;
                options.seq_len = seq;
                options.batch = 1;
                model = std::make_shared<const CostModel>(std::make_shared<const ModelGraph>(loadModel(width, options)),
                                                          cluster, params, source);
            }
            std::size_t block = 0;
            while (model->layers()[block].kind != LayerKind::Block)
                ++block;
            ParallelConfig c;
            c.eager_kernels = !row.value("compiled", false);
            c.micro_batch = row.at("micro_batch");
            std::string recompute = row.at("recompute");
            if (row.value("gqa", false))
                recompute += " (enable_gqa)";
            if (row.value("compiled", false))
                recompute += " (compiled)";
            if (!modeOf(row.at("recompute"), row.value("gqa", false), c))
                continue;
            const LayerCost& lc = model->layerCost(block, c);
            const double stash = lc.activation_bytes;
            const double peak = stash + params.transient_mem_coef * lc.largest_activation_bytes + lc.working_bytes;
            const double backward = lc.backward_input + lc.backward_weight;
            const double mStash = row.at("stash_bytes"), mPeak = row.at("backward_peak_bytes");
            const double mFwd = row.at("forward_s"), mBwd = row.at("backward_s");
            for (Errors* e : {&all, &byMode[recompute]}) {
                e->stash.push_back(signedError(stash, mStash));
                e->peak.push_back(signedError(peak, mPeak));
                e->forward.push_back(signedError(lc.forward, mFwd));
                e->backward.push_back(signedError(backward, mBwd));
            }
            if (markdown)
                std::printf("| %s | %d | %d | %s | %.3f / %.3f | %.3f / %.3f | %.2f / %.2f | %.2f / %.2f |\n",
                            width.c_str(), c.micro_batch, seq, recompute.c_str(), mStash / gib, stash / gib,
                            mPeak / gib, peak / gib, mFwd * 1e3, lc.forward * 1e3, mBwd * 1e3, backward * 1e3);
            else
                std::printf("%-10s %2d %5d %-9s %7.3f/%7.3f %7.3f/%7.3f %8.2f/%8.2f %8.2f/%8.2f\n", width.c_str(),
                            c.micro_batch, seq, recompute.c_str(), mStash / gib, stash / gib, mPeak / gib, peak / gib,
                            mFwd * 1e3, lc.forward * 1e3, mBwd * 1e3, backward * 1e3);
        }
        const auto summary = [](const char* name, const Errors& e) {
            std::printf("%-10s %3zu rows  median |error| (signed): stash %5.1f%% (%+5.1f%%), backward peak %5.1f%% "
                        "(%+5.1f%%), forward %5.1f%% (%+5.1f%%), backward %5.1f%% (%+5.1f%%)\n",
                        name, e.stash.size(), 100 * median(absolute(e.stash)), 100 * median(e.stash),
                        100 * median(absolute(e.peak)), 100 * median(e.peak), 100 * median(absolute(e.forward)),
                        100 * median(e.forward), 100 * median(absolute(e.backward)), 100 * median(e.backward));
        };
        std::printf("\n");
        for (const auto& [mode, e] : byMode)
            summary(mode.c_str(), e);
        summary("all", all);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench_layer_probe: %s\n", e.what());
        return 1;
    }
    return 0;
}
