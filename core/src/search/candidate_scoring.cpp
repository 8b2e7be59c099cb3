// SPDX-License-Identifier: MIT
// The planner's fast pass over one candidate, and the ranking (candidate_scoring.h).
#include "candidate_scoring.h"

#include "shardscape/search/stage_partition.h"
#include "shardscape/support/strings.h"

#include <algorithm>
#include <cmath>

namespace shardscape::search_detail {

namespace {

int inflightOf(ScheduleKind schedule, int stage, int stages, int microbatches)
{
    switch (schedule) {
    case ScheduleKind::GPipe:
        return microbatches;
    case ScheduleKind::ZeroBubbleH1:
        return std::min(microbatches, stages);
    case ScheduleKind::ZeroBubbleV: // two chunks per rank: the partitioner does not split V pipelines
    case ScheduleKind::DualPipeV:
    case ScheduleKind::DualPipe:
    case ScheduleKind::OneFOneB:
    case ScheduleKind::Interleaved1F1B:
        break;
    }
    return std::min(microbatches, stages - stage);
}

/** The bubble (Evaluation::bubble_ratio: the pipeline's idle share of the step) of uniform stages, from the idle /
    busy ratio r of the schedule: r / (1 + r); (p-1)/(m+p-1) for 1F1B and GPipe, as AutoDist bounds it. */
double closedFormBubble(const ParallelConfig& c)
{
    const double idleOverBusy = static_cast<double>(c.pp - 1) / (static_cast<double>(c.vpp) * c.num_microbatches);
    double r = idleOverBusy;
    // With F = B = W: ZB-H1 and ZB-V idle for one F per stage, DualPipeV for two (tst_sim's closed forms).
    switch (c.schedule) {
    case ScheduleKind::ZeroBubbleH1:
    case ScheduleKind::ZeroBubbleV:
        r = idleOverBusy / 3;
        break;
    case ScheduleKind::DualPipeV:
        r = idleOverBusy * 2 / 3;
        break;
    case ScheduleKind::DualPipe:
        // (p / 2 - 1) x 2F idle over a busy time of 3F per micro-batch (tst_sim's closed form).
        r = static_cast<double>(c.pp - 2) / (3.0 * c.num_microbatches);
        break;
    default:
        break;
    }
    return r / (1 + r);
}

} // namespace

bool faster(const Scored& a, const Scored& b)
{
    if (a.estimate.step_time != b.estimate.step_time)
        return a.estimate.step_time < b.estimate.step_time;
    return a.index < b.index;
}

bool better(const Scored& a, const Scored& b)
{
    const bool aTight = a.estimate.oom_risk != OomRisk::Fits;
    const bool bTight = b.estimate.oom_risk != OomRisk::Fits;
    if (aTight != bTight)
        return bTight;
    return faster(a, b);
}

std::vector<bool> pivotsFor(const CostModel& model, const std::vector<std::string>& pivots)
{
    const auto& layers = model.layers();
    std::vector<bool> mayStart(layers.size(), pivots.empty());
    mayStart[0] = true;
    for (std::size_t i = 0; i < layers.size(); ++i)
        for (const auto& pivot : pivots)
            if (layers[i].name == pivot || endsWith(layers[i].name, "." + pivot)
                || startsWith(layers[i].name, pivot + "."))
                mayStart[i] = true;
    return mayStart;
}

Scored scoreCandidate(const Context& ctx, std::size_t index, ParallelConfig c)
{
    Scored s;
    s.index = index;
    if (c.pp > 1 && closedFormBubble(c) > ctx.config.max_pipeline_bubble_ratio) {
        s.pruned = true;
        s.estimate.config = c;
        s.estimate.reason = cat("pipeline bubble ", fixed(closedFormBubble(c), 2), " over max_pipeline_bubble_ratio ",
                                fixed(ctx.config.max_pipeline_bubble_ratio, 2));
        return s;
    }
    const bool pivoted = std::find(ctx.mayStart.begin(), ctx.mayStart.end(), false) != ctx.mayStart.end();
    // The layers' times and bytes under this configuration, where stages may start.
    const auto layersOf = [&] {
        const auto profile = ctx.model.layerProfile(c);
        PartitionInput in;
        in.time = profile.time;
        in.static_bytes = profile.static_bytes;
        in.stash_bytes = profile.stash_bytes;
        in.transient_bytes = profile.transient_bytes;
        in.may_start = ctx.mayStart;
        return in;
    };
    if (c.pp > 1 && c.vpp == 1) {
        PartitionInput in = layersOf();
        // The partitioner sums allocated bytes: the runtime sits beside them, the allocator's slack scales them.
        const double slack = ctx.model.fragmentationFactor(c);
        in.fixed_bytes = ctx.model.runtimeBytes(c) / slack;
        in.memory_limit = ctx.workload.memory_limit_bytes / slack;
        in.stages = c.pp;
        for (int stage = 0; stage < c.pp; ++stage)
            in.inflight.push_back(inflightOf(c.schedule, stage, c.pp, c.num_microbatches));
        PartitionResult part = partitionStages(in);
        if (!part.feasible && in.memory_limit > 0) {
            // Nothing fits: split for time alone, so the estimate can still report the memory it needs.
            in.memory_limit = 0;
            part = partitionStages(in);
        }
        if (part.feasible) {
            c.stage_layers = part.counts;
            if (part.max_stage_time > 0
                && part.min_stage_time / part.max_stage_time < ctx.config.max_pipeline_unbalance_ratio) {
                s.pruned = true;
                s.estimate.config = c;
                s.estimate.reason
                    = cat("stages unbalanced: fastest/slowest = ", fixed(part.min_stage_time / part.max_stage_time, 2),
                          " under max_pipeline_unbalance_ratio ", fixed(ctx.config.max_pipeline_unbalance_ratio, 2));
                return s;
            }
        } else if (pivoted) {
            s.estimate.config = c;
            s.estimate.reason = part.reason;
            return s;
        }
    } else if (c.pp > 1 && pivoted) {
        // Several chunks per rank (interleaved, V schedules, DualPipe): the chunks in virtual-stage order may start
        // only at pivots too. Split them for time at the pivots and pin that split; the estimate checks memory.
        PartitionInput in = layersOf();
        in.stages = c.schedule == ScheduleKind::DualPipe ? c.pp : c.pp * c.vpp;
        in.inflight.assign(static_cast<std::size_t>(in.stages), 1);
        const PartitionResult part = partitionStages(in);
        if (!part.feasible) {
            s.estimate.config = c;
            s.estimate.reason = cat(part.reason, " (", scheduleName(c.schedule), " with ", in.stages,
                                    " model chunks must start each chunk at a pivot)");
            return s;
        }
        c.stage_layers = part.counts;
    }
    s.estimate = ctx.model.estimate(c, ctx.workload);
    return s;
}

} // namespace shardscape::search_detail
