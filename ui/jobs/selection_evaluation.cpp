// SPDX-License-Identifier: MIT
#include "jobs/selection_evaluation.h"

#include "shardscape/support/error.h"

#include <algorithm>
#include <chrono>
#include <set>

namespace shardscape::ui {

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start)
{
    return std::chrono::duration<double>(Clock::now() - start).count();
}

std::set<int> curveMicrobatches(const ParallelConfig& config)
{
    const int current = std::max(1, config.num_microbatches);
    const int limit = std::max({4 * current, 4 * config.pp, 8});
    std::set<int> counts {current};
    for (int m = 1; m <= limit; m *= 2)
        counts.insert(m);
    if (config.schedule == ScheduleKind::Interleaved1F1B)
        std::erase_if(counts, [&](int m) { return m % config.pp != 0; });
    return counts;
}

} // namespace

SelectionEvaluation evaluateSelection(const EvaluationRequest& request, std::stop_token stop)
{
    if (!request.model)
        throw InputError("no plan to evaluate", "plan first, then select a candidate");
    const auto start = Clock::now();
    SelectionEvaluation out;
    out.purpose = request.purpose;
    EvaluateOptions options;
    options.record_timeline = true;
    options.require_full_cluster = request.require_full_cluster;
    out.evaluation
        = std::make_shared<const Evaluation>(request.model->evaluate(request.config, request.workload, options, stop));
    out.evaluate_s = secondsSince(start);

    // The bubble is a property of the schedule's shape, so the curve keeps everything but the micro-batch count
    // (and with it the global batch) and ignores memory.
    const bool simulated = out.evaluation->step_time > 0;
    // Without a pipeline the curve is flat at zero, which is worth seeing too.
    if (request.bubble_curve && simulated) {
        EvaluateOptions quick;
        quick.require_full_cluster = request.require_full_cluster;
        for (const int m : curveMicrobatches(request.config)) {
            if (stop.stop_requested())
                break;
            ParallelConfig config = request.config;
            config.num_microbatches = m;
            Workload workload = request.workload;
            workload.global_batch = config.globalBatch();
            workload.memory_limit_bytes = 1e30;
            if (m == request.config.num_microbatches) {
                out.bubble_curve.emplace_back(m, out.evaluation->bubble_ratio);
                continue;
            }
            try {
                const Evaluation e = request.model->evaluate(config, workload, quick, stop);
                if (e.step_time > 0)
                    out.bubble_curve.emplace_back(m, e.bubble_ratio);
            } catch (const InputError&) {
                // Some schedules cannot run some micro-batch counts: the curve just has no point there.
            }
        }
    }
    out.total_s = secondsSince(start);
    return out;
}

} // namespace shardscape::ui
