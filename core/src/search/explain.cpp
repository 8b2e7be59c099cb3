// SPDX-License-Identifier: MIT
#include "shardscape/search/explain.h"

#include "shardscape/search/planner.h"

#include "shardscape/support/strings.h"
#include "shardscape/support/units.h"

#include <algorithm>
#include <cmath>
#include <functional>

namespace shardscape {

namespace {

std::string seconds(double s)
{
    return s >= 1 ? fixed(s, 2) + " s" : fixed(s * 1e3, 1) + " ms";
}

std::string signedSeconds(double s)
{
    return (s >= 0 ? "+" : "-") + seconds(std::fabs(s));
}

std::string summary(const Evaluation& e)
{
    return cat(e.config.describe(), ": ", seconds(e.step_time), " per step, MFU ", fixed(100 * e.mfu, 1), "%, peak ",
               fixed(e.peakMemory() / units::kGB, 1), " GB",
               e.feasible && e.oom_risk == OomRisk::Tight
                   ? cat(" (memory tight: peak range up to ", fixed(e.peak_memory_range.high / units::kGB, 1),
                         " GB of the ", fixed(e.memory_limit_bytes / units::kGB, 1), " GB limit)")
                   : std::string());
}

struct Family
{
    const char* name;
    std::function<bool(const ParallelConfig&)> member;
    std::function<bool(const ParallelConfig&)> differs; ///< worth mentioning only when the winner is not one
};

} // namespace

std::string timeDifference(const Evaluation& chosen, const Evaluation& other)
{
    const std::pair<const char*, double> parts[] = {
        {"compute", other.time.compute - chosen.time.compute},
        {"recomputation", other.time.recompute - chosen.time.recompute},
        {"TP communication", other.time.tp_comm - chosen.time.tp_comm},
        {"CP/EP communication", other.time.other_comm - chosen.time.other_comm},
        {"pipeline bubble", other.time.pp_bubble - chosen.time.pp_bubble},
        {"exposed data-parallel sync", other.time.dp_exposed - chosen.time.dp_exposed},
        {"optimizer step", other.time.optimizer - chosen.time.optimizer},
    };
    std::vector<std::pair<const char*, double>> sorted(std::begin(parts), std::end(parts));
    std::sort(sorted.begin(), sorted.end(),
              [](const auto& a, const auto& b) { return std::fabs(a.second) > std::fabs(b.second); });
    std::vector<std::string> out;
    const double floor = 0.005 * chosen.step_time;
    for (const auto& [name, delta] : sorted)
        if (std::fabs(delta) > floor && out.size() < 3)
            out.push_back(cat(name, " ", signedSeconds(delta)));
    return out.empty() ? std::string("the same time split") : join(out);
}

namespace {

/** "12.0% slower: compute +1.2 s, ..."; for a faster plan ranked lower because its memory is tight, why. */
std::string comparison(const Evaluation& chosen, const Evaluation& other)
{
    if (other.step_time < chosen.step_time && other.oom_risk == OomRisk::Tight && chosen.oom_risk == OomRisk::Fits)
        return cat(fixed(100 * (1 - other.step_time / chosen.step_time), 1),
                   "% faster, but its memory is tight: every plan that fits ranks first");
    return cat(fixed(100 * (other.step_time / chosen.step_time - 1), 1), "% slower: ", timeDifference(chosen, other));
}

} // namespace

std::vector<std::string> explainChoice(const Evaluation& chosen, const Evaluation* runnerUp,
                                       const std::vector<Evaluation>& alternatives)
{
    std::vector<std::string> lines;
    lines.push_back("chosen: " + summary(chosen));
    if (runnerUp) {
        lines.push_back(cat("runner-up: ", summary(*runnerUp), " (", comparison(chosen, *runnerUp), ")"));
    } else {
        lines.push_back("runner-up: none (no other configuration fits)");
    }
    const Family families[] = {
        {"without pipelining (pp = 1)", [](const ParallelConfig& c) { return c.pp == 1; },
         [](const ParallelConfig& c) { return c.pp > 1; }},
        {"without tensor parallelism (tp = 1)", [](const ParallelConfig& c) { return c.tp == 1; },
         [](const ParallelConfig& c) { return c.tp > 1; }},
        {"pure data parallelism (tp = pp = cp = 1)",
         [](const ParallelConfig& c) { return c.tp == 1 && c.pp == 1 && c.cp == 1; },
         [](const ParallelConfig& c) { return c.tp > 1 || c.pp > 1 || c.cp > 1; }},
        {"without recomputation", [](const ParallelConfig& c) { return c.recompute == RecomputeKind::None; },
         [](const ParallelConfig& c) { return c.recompute != RecomputeKind::None; }},
        {"with full recomputation", [](const ParallelConfig& c) { return c.recompute == RecomputeKind::Full; },
         [](const ParallelConfig& c) { return recomputesBlockIndices(c); }},
        {"without ZeRO", [](const ParallelConfig& c) { return c.zero_stage == 0; },
         [](const ParallelConfig& c) { return c.zero_stage > 0; }},
    };
    for (const auto& family : families) {
        if (!family.differs(chosen.config))
            continue;
        const Evaluation* bestFit = nullptr;
        const Evaluation* leastMemory = nullptr;
        for (const auto& e : alternatives) {
            if (!family.member(e.config) || e.stages.empty())
                continue;
            // The planner's order: plans that fit before tight ones, then the shorter step.
            const auto ranksBefore = [](const Evaluation& a, const Evaluation& b) {
                const bool aFits = a.oom_risk == OomRisk::Fits;
                return aFits != (b.oom_risk == OomRisk::Fits) ? aFits : a.step_time < b.step_time;
            };
            if (e.feasible && (!bestFit || ranksBefore(e, *bestFit)))
                bestFit = &e;
            if (!leastMemory || e.peakMemory() < leastMemory->peakMemory())
                leastMemory = &e;
        }
        if (bestFit && runnerUp && bestFit->config.describe() == runnerUp->config.describe())
            continue; // already said as the runner-up
        if (bestFit) {
            lines.push_back(
                cat("best ", family.name, ": ", summary(*bestFit), " (", comparison(chosen, *bestFit), ")"));
        } else if (leastMemory) {
            const bool overMemory = leastMemory->peakMemory() > leastMemory->memory_limit_bytes;
            lines.push_back(cat("best ", family.name, ": does not fit: ", leastMemory->config.describe(),
                                overMemory
                                    ? cat(" needs ", memoryText(leastMemory->peakMemory()), " per GPU, over the ",
                                          memoryText(leastMemory->memory_limit_bytes), " limit")
                                    : cat(": ", leastMemory->reason)));
        }
    }
    return lines;
}

double runtimeOverLimit(const PlanResult& result)
{
    if (result.infeasible.empty() || !(result.memory_limit_bytes > 0))
        return 0;
    const double runtime = result.infeasible.front().runtimeMemory();
    return runtime >= result.memory_limit_bytes ? runtime : 0;
}

std::string whyNothingFits(const PlanResult& result)
{
    if (!result.top.empty() || result.cancelled)
        return {};
    if (!result.nothing_costed.empty())
        return result.nothing_costed;
    if (result.infeasible.empty())
        return "no layout of this model fits this cluster's shape";
    // The least memory any candidate needs, against the limit the search applied, when that is what stopped it;
    // otherwise the closest candidate's own reason (a peak under the limit was not the problem).
    if (result.memory_limit_bytes > 0 && result.min_memory_needed > result.memory_limit_bytes) {
        std::string why = cat("the best configuration needs ", memoryText(result.min_memory_needed),
                              " per GPU, over the ", memoryText(result.memory_limit_bytes), " limit");
        if (const double runtime = runtimeOverLimit(result); runtime > 0)
            why += cat(", and the CUDA context, NCCL and cuBLAS workspaces alone take ", memoryText(runtime));
        return why;
    }
    const Evaluation& closest = result.infeasible.front();
    return cat("the closest configuration, ", closest.config.describe(), ": ", closest.reason);
}

} // namespace shardscape
