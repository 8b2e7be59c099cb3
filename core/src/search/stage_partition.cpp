// SPDX-License-Identifier: MIT
#include "shardscape/search/stage_partition.h"

#include "shardscape/support/strings.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <numeric>

namespace shardscape {

namespace {

/** O(1) interval sums and an O(1)-amortised interval max for the greedy sweep. */
struct Prefix
{
    std::vector<double> time, statics, stash;
    explicit Prefix(const PartitionInput& in)
        : time(in.time.size() + 1, 0.0)
        , statics(in.time.size() + 1, 0.0)
        , stash(in.time.size() + 1, 0.0)
    {
        for (std::size_t i = 0; i < in.time.size(); ++i) {
            time[i + 1] = time[i] + in.time[i];
            statics[i + 1] = statics[i] + in.static_bytes[i];
            stash[i + 1] = stash[i] + in.stash_bytes[i];
        }
    }
};

double stageMemory(const PartitionInput& in, const Prefix& p, int stage, std::size_t first, std::size_t last,
                   double transient)
{
    return in.fixed_bytes + (p.statics[last + 1] - p.statics[first])
        + in.inflight[static_cast<std::size_t>(stage)] * (p.stash[last + 1] - p.stash[first]) + transient;
}

bool fits(const PartitionInput& in, double bytes)
{
    return in.memory_limit <= 0 || bytes <= in.memory_limit;
}

/** Range maximum in O(1) after O(L log L) set-up (the largest transient of a stage). */
class RangeMax
{
public:
    explicit RangeMax(const std::vector<double>& values)
    {
        m_table.push_back(values);
        for (std::size_t width = 1; 2 * width <= values.size(); width *= 2) {
            const auto& prev = m_table.back();
            std::vector<double> next(values.size() - 2 * width + 1);
            for (std::size_t i = 0; i < next.size(); ++i)
                next[i] = std::max(prev[i], prev[i + width]);
            m_table.push_back(std::move(next));
        }
    }
    /** max over [first, end) */
    double operator()(std::size_t first, std::size_t end) const
    {
        std::size_t level = 0;
        while ((std::size_t {2} << level) <= end - first)
            ++level;
        return std::max(m_table[level][first], m_table[level][end - (std::size_t {1} << level)]);
    }

private:
    std::vector<std::vector<double>> m_table;
};

/** Stages a time-only greedy needs under `limit` (each stage as long as possible, ending before a pivot). */
int stagesNeededForTime(const PartitionInput& in, const Prefix& p, double limit)
{
    const std::size_t layers = in.time.size();
    int stages = 0;
    std::size_t first = 0;
    while (first < layers) {
        std::size_t bestEnd = 0;
        for (std::size_t last = first; last < layers && p.time[last + 1] - p.time[first] <= limit; ++last)
            if (last + 1 == layers || in.may_start[last + 1])
                bestEnd = last + 1;
        if (bestEnd == 0)
            return std::numeric_limits<int>::max();
        first = bestEnd;
        ++stages;
    }
    return stages;
}

/**
 * Exact test: can exactly S stages, each within `limit` seconds and its own memory budget (which depends on
 * the stage's index through the micro-batches in flight), cover the layers? Reachability over
 * (stage, boundary); for a fixed stage the furthest valid end only grows with the start, so two pointers make
 * each stage O(L). Returns the stage ends (exclusive), empty when impossible.
 */
std::vector<std::size_t> exactStages(const PartitionInput& in, const Prefix& p, const RangeMax& transient, double limit)
{
    const std::size_t layers = in.time.size();
    const auto stages = static_cast<std::size_t>(in.stages);
    // from[s][j] = start of the stage s-1 that ends at j, or npos when j is unreachable after s stages.
    constexpr std::size_t npos = std::numeric_limits<std::size_t>::max();
    std::vector<std::vector<std::size_t>> from(stages + 1, std::vector<std::size_t>(layers + 1, npos));
    from[0][0] = 0;
    for (std::size_t s = 0; s < stages; ++s) {
        std::size_t furthest = 0; // furthest end valid for the current start
        std::size_t marked = 0; // ends up to here are already marked for stage s + 1
        for (std::size_t i = 0; i < layers; ++i) {
            if (from[s][i] == npos)
                continue;
            furthest = std::max(furthest, i);
            while (furthest < layers) {
                const std::size_t end = furthest + 1;
                if (p.time[end] - p.time[i] > limit
                    || !fits(in, stageMemory(in, p, static_cast<int>(s), i, end - 1, transient(i, end))))
                    break;
                furthest = end;
            }
            for (std::size_t end = std::max(marked, i) + 1; end <= furthest; ++end)
                if ((end == layers || in.may_start[end]) && from[s + 1][end] == npos)
                    from[s + 1][end] = i;
            marked = std::max(marked, furthest);
        }
    }
    if (from[stages][layers] == npos)
        return {};
    std::vector<std::size_t> ends(stages);
    std::size_t end = layers;
    for (std::size_t s = stages; s > 0; --s) {
        ends[s - 1] = end;
        end = from[s][end];
    }
    return ends;
}

PartitionResult resultFrom(const PartitionInput& in, const std::vector<std::size_t>& ends)
{
    PartitionResult r;
    r.feasible = true;
    std::size_t first = 0;
    r.min_stage_time = 1e300;
    for (const auto end : ends) {
        r.counts.push_back(static_cast<int>(end - first));
        double t = 0;
        for (std::size_t i = first; i < end; ++i)
            t += in.time[i];
        r.max_stage_time = std::max(r.max_stage_time, t);
        r.min_stage_time = std::min(r.min_stage_time, t);
        first = end;
    }
    return r;
}

std::string validate(const PartitionInput& in)
{
    const std::size_t n = in.time.size();
    if (in.stages < 1)
        return "at least one stage is needed";
    if (in.static_bytes.size() != n || in.stash_bytes.size() != n || in.transient_bytes.size() != n
        || in.may_start.size() != n || in.inflight.size() != static_cast<std::size_t>(in.stages))
        return "inconsistent partition input sizes";
    const auto starts = std::count(in.may_start.begin() + 1, in.may_start.end(), true) + 1;
    if (static_cast<long>(in.stages) > starts)
        return cat(in.stages, " stages need ", in.stages, " places to start, but the pipeline pivots allow ", starts);
    return {};
}

} // namespace

PartitionResult partitionStages(const PartitionInput& in)
{
    PartitionResult failure;
    failure.reason = validate(in);
    if (!failure.reason.empty())
        return failure;
    const Prefix p(in);
    const RangeMax transient(in.transient_bytes);

    // The bottleneck ignoring memory (a greedy is exact there: no constraint depends on the stage index) is a
    // lower bound; when memory does not bind it is the answer.
    double lo = *std::max_element(in.time.begin(), in.time.end());
    double hi = p.time.back();
    if (stagesNeededForTime(in, p, lo) > in.stages) {
        for (int i = 0; i < 100 && hi - lo > 1e-12 * hi; ++i) {
            const double mid = 0.5 * (lo + hi);
            (stagesNeededForTime(in, p, mid) > in.stages ? lo : hi) = mid;
        }
        lo = hi;
    }
    auto ends = exactStages(in, p, transient, lo);
    if (ends.empty()) {
        hi = p.time.back();
        if (exactStages(in, p, transient, hi).empty()) {
            failure.reason = "no split into stages fits in memory";
            return failure;
        }
        // Memory binds: bisection on the bottleneck with the exact test (Alpa's t_max search).
        for (int i = 0; i < 100 && hi - lo > 1e-12 * hi; ++i) {
            const double mid = 0.5 * (lo + hi);
            (exactStages(in, p, transient, mid).empty() ? lo : hi) = mid;
        }
        ends = exactStages(in, p, transient, hi);
    }
    return resultFrom(in, ends);
}

PartitionResult partitionStagesBruteForce(const PartitionInput& in)
{
    PartitionResult best;
    best.reason = validate(in);
    if (!best.reason.empty())
        return best;
    best.reason = "no split into stages fits in memory";
    const Prefix p(in);
    const std::size_t layers = in.time.size();
    std::vector<std::size_t> ends;
    std::function<void(std::size_t, int)> visit = [&](std::size_t first, int stage) {
        if (stage == in.stages) {
            if (first != layers)
                return;
            const PartitionResult r = resultFrom(in, ends);
            if (!best.feasible || r.max_stage_time < best.max_stage_time)
                best = r;
            return;
        }
        double transient = 0;
        for (std::size_t last = first; last < layers; ++last) {
            transient = std::max(transient, in.transient_bytes[last]);
            const std::size_t end = last + 1;
            if (end < layers && !in.may_start[end])
                continue;
            if (!fits(in, stageMemory(in, p, stage, first, last, transient)))
                continue;
            ends.push_back(end);
            visit(end, stage + 1);
            ends.pop_back();
        }
    };
    visit(0, 0);
    return best;
}

} // namespace shardscape
