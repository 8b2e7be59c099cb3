// SPDX-License-Identifier: MIT
#include "partial_recompute.h"

#include <algorithm>
#include <cmath>

namespace shardscape::search_detail {

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
