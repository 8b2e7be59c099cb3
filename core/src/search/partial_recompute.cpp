// SPDX-License-Identifier: MIT
#include "partial_recompute.h"

#include "../plan/import_helpers.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace shardscape::search_detail {

namespace {

/** Blocks of each model chunk (LayerKind::Block layers of chunkLayers' spans, in layer order). */
std::vector<int> blocksPerChunk(const CostModel& model, const std::vector<int>& chunkLayers)
{
    std::vector<int> out;
    std::size_t next = 0;
    for (const int count : chunkLayers) {
        int blocks = 0;
        for (int i = 0; i < count && next < model.layers().size(); ++i, ++next)
            blocks += model.layers()[next].kind == LayerKind::Block ? 1 : 0;
        out.push_back(blocks);
    }
    return out;
}

} // namespace

std::optional<Evaluation> sparsestLayerSac(const Context& ctx, const Evaluation& full)
{
    const ParallelConfig& base = full.config;
    if (!full.feasible || base.recompute != RecomputeKind::Full || ctx.model.blockIndices().empty())
        return std::nullopt;
    const std::vector<int> stageBlocks = blocksPerChunk(ctx.model, full.chunkLayers());
    // Block positions in layer order -> their module indices (what recompute_modules names).
    std::vector<long long> indexOf;
    for (const long long index : ctx.model.blockIndices())
        if (index >= 0)
            indexOf.push_back(index);
    const int total = std::accumulate(stageBlocks.begin(), stageBlocks.end(), 0);
    if (total != static_cast<int>(indexOf.size()) || total < 2)
        return std::nullopt;
    // The most blocks one rank counts: a k beyond it checkpoints none.
    const int pp = std::max(1, base.pp);
    std::vector<int> perRank(static_cast<std::size_t>(pp), 0);
    const bool vShaped = isVShaped(base.schedule);
    for (std::size_t s = 0; s < stageBlocks.size(); ++s) {
        const auto stage = static_cast<int>(s);
        const int rank = vShaped && static_cast<int>(stageBlocks.size()) == 2 * pp ? std::min(stage, 2 * pp - 1 - stage)
                                                                                   : stage % pp;
        perRank[static_cast<std::size_t>(rank)] += stageBlocks[s];
    }
    const int most = *std::max_element(perRank.begin(), perRank.end());
    if (most < 2)
        return std::nullopt;
    const auto at = [&](int k) {
        ParallelConfig c = base;
        c.recompute = RecomputeKind::Modules;
        c.recompute_modules.clear();
        for (const auto& position : importing::torchtitanLayerSac(stageBlocks, pp, vShaped, k))
            c.recompute_modules.push_back(std::to_string(indexOf[static_cast<std::size_t>(std::stoi(position))]));
        return ctx.model.estimate(c, ctx.workload);
    };
    const bool wantFits = full.oom_risk == OomRisk::Fits;
    const auto fits = [&](const Evaluation& e) { return e.feasible && (!wantFits || e.oom_risk == OomRisk::Fits); };
    // k = 1 is full recomputation (fits), k = most + 1 checkpoints nothing: the largest k that still fits, by
    // bisection (the checkpointed count, the sum of floor(blocks / k) over a rank's stages, falls with k).
    int lo = 1;
    int hi = most + 1;
    std::optional<Evaluation> best;
    while (hi - lo > 1) {
        const int k = lo + (hi - lo) / 2;
        Evaluation e = at(k);
        if (fits(e)) {
            lo = k;
            best = std::move(e);
        } else {
            hi = k;
        }
    }
    return lo > 1 ? best : std::nullopt;
}

std::optional<Evaluation> fewestRecomputedBlocks(const Context& ctx, const Evaluation& full)
{
    const ParallelConfig& base = full.config;
    if (!full.feasible || base.recompute != RecomputeKind::Full
        || (base.pp > 1 && (isVShaped(base.schedule) || base.schedule == ScheduleKind::DualPipe)))
        return std::nullopt;
    const std::vector<int> chunks = full.chunkLayers();
    const int most = ctx.model.mostBlocksPerChunk(chunks);
    if (most < 2 || ctx.model.blockIndices().empty())
        return std::nullopt;

    const auto at = [&](int n) {
        ParallelConfig c = base;
        c.recompute = RecomputeKind::Modules;
        c.recompute_modules = ctx.model.firstBlocksOfEachChunk(chunks, n);
        return ctx.model.estimate(c, ctx.workload);
    };
    // As well as full recomputation fits: a plan that fits with room must not become tight.
    const bool wantFits = full.oom_risk == OomRisk::Fits;
    const auto fits = [&](const Evaluation& e) { return e.feasible && (!wantFits || e.oom_risk == OomRisk::Fits); };

    const Evaluation one = at(1);
    if (fits(one))
        return one;
    if (one.stages.size() != full.stages.size())
        return std::nullopt;
    // Each stage's peak is a line in n from n = 1 to n = most (one block's stash less per recomputed block and
    // in-flight micro-batch); the first n under the target on every stage. The "fits" target leaves the peak
    // range's high end and the required headroom under the limit, as applyUncertainty does.
    const double limit = full.memory_limit_bytes;
    const double spread = full.peakMemory() > 0 ? std::max(1.0, full.peak_memory_range.high / full.peakMemory()) : 1;
    const double target
        = wantFits ? std::min(limit / spread, limit - std::max(0.0, ctx.workload.min_memory_headroom_bytes)) : limit;
    int guess = 2;
    for (std::size_t s = 0; s < full.stages.size(); ++s) {
        const double high = one.stages[s].memory.total();
        const double low = full.stages[s].memory.total();
        if (high > target && high > low)
            guess = std::max(guess, 1 + static_cast<int>(std::ceil((high - target) * (most - 1) / (high - low))));
    }
    // Bisect around the guess: lo never fits, hi always does (hi = most is full recomputation).
    int lo = 1;
    int hi = most;
    std::optional<Evaluation> best;
    const auto probe = [&](int n) {
        Evaluation e = at(n);
        if (fits(e)) {
            hi = n;
            best = std::move(e);
        } else {
            lo = n;
        }
    };
    if (guess < most) {
        probe(guess);
        if (hi == guess && guess - 1 > lo)
            probe(guess - 1);
        else if (lo == guess && guess + 1 < most)
            probe(guess + 1);
    }
    while (hi - lo > 1)
        probe(lo + (hi - lo) / 2);
    // Every probe that fit lowered hi, so best holds the estimate at hi; hi = most means only full fits.
    return hi < most ? best : std::nullopt;
}

} // namespace shardscape::search_detail
