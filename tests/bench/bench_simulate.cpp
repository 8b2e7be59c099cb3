// SPDX-License-Identifier: MIT
// Times CostModel::evaluate, the work behind one `shardscape-cli simulate` call and one planner candidate, on a
// 128-layer model (Llama 3 405B's shape cut to 128 decoder layers) with pp=16 and 128 micro-batches.
// "cold" is the first evaluate on a fresh CostModel (every layer costed from the op graph); "warm" calls hit the
// layer-cost cache, as the planner's later candidates with the same layout do. Prints milliseconds (median).
// usage: bench_simulate [repetitions]
#include "shardscape/cost/cost_model.h"
#include "shardscape/hardware/cluster.h"
#include "shardscape/model/hf_config.h"
#include "shardscape/model/model_source.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

using namespace shardscape;

namespace {

using Clock = std::chrono::steady_clock;

double millisecondsSince(Clock::time_point begin)
{
    return std::chrono::duration<double, std::milli>(Clock::now() - begin).count();
}

double median(std::vector<double> values)
{
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
}

ParallelConfig config(ScheduleKind schedule, int vpp)
{
    ParallelConfig c;
    c.tp = 8;
    c.pp = 16;
    c.dp = 8;
    c.vpp = vpp;
    c.micro_batch = 1;
    c.num_microbatches = 128;
    c.zero_stage = 1;
    c.sequence_parallel = true;
    c.schedule = schedule;
    return c;
}

void report(const char* label, double ms)
{
    std::printf("%-52s %9.3f ms\n", label, ms);
}

/** Median of `reps` timed calls of `call`, milliseconds; `sink` keeps the result alive. */
double timeCalls(int reps, const std::function<double()>& call, double& sink)
{
    std::vector<double> times;
    for (int i = 0; i < reps; ++i) {
        const auto begin = Clock::now();
        sink += call();
        times.push_back(millisecondsSince(begin));
    }
    return median(times);
}

} // namespace

int main(int argc, char** argv)
{
    const int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 20;
    TransformerShape shape = parseHfConfig(modelPresetConfig("llama3-405b"), "llama3-405b");
    shape.num_layers = 128;
    BuildOptions build;
    build.batch = 1;
    build.seq_len = 4096;
    auto begin = Clock::now();
    const auto graph = std::make_shared<const ModelGraph>(buildTransformerGraph(shape, build, "llama3-405b-128l"));
    report("graph build", millisecondsSince(begin));

    Cluster cluster;
    cluster.device = devicePreset("h100-sxm");
    cluster.gpus_per_node = 8;
    cluster.nodes = 128; // tp8 x pp16 x dp8 = 1024 GPUs
    Workload workload;
    workload.global_batch = 8 * 128;
    workload.seq_len = build.seq_len;

    EvaluateOptions totals;
    EvaluateOptions timeline;
    timeline.record_timeline = true;
    double sink = 0;

    std::vector<double> construct;
    std::vector<double> cold;
    std::vector<double> coldTimeline;
    for (int i = 0; i < reps; ++i) {
        begin = Clock::now();
        const CostModel fresh(graph, cluster);
        construct.push_back(millisecondsSince(begin));
        begin = Clock::now();
        sink += fresh.evaluate(config(ScheduleKind::OneFOneB, 1), workload, totals).step_time;
        cold.push_back(millisecondsSince(begin));
        const CostModel freshToo(graph, cluster);
        begin = Clock::now();
        sink += freshToo.evaluate(config(ScheduleKind::OneFOneB, 1), workload, timeline).step_time;
        coldTimeline.push_back(millisecondsSince(begin));
    }
    report("CostModel construction (layers, signatures)", median(construct));
    report("1f1b pp=16 m=128, cold cache, no timeline", median(cold));
    report("1f1b pp=16 m=128, cold cache, timeline", median(coldTimeline));

    const CostModel model(graph, cluster);
    const auto warm = [&](const char* label, ScheduleKind schedule, int vpp, const EvaluateOptions& options) {
        const ParallelConfig c = config(schedule, vpp);
        sink += model.evaluate(c, workload, options).step_time; // fills the cache for this layout
        const double ms = timeCalls(
            reps, [&] { return model.evaluate(c, workload, options).step_time; }, sink);
        report(label, ms);
    };
    warm("1f1b pp=16 m=128, warm cache, no timeline", ScheduleKind::OneFOneB, 1, totals);
    warm("1f1b pp=16 m=128, warm cache, timeline", ScheduleKind::OneFOneB, 1, timeline);
    warm("interleaved pp=16 vpp=2 m=128, warm, no timeline", ScheduleKind::Interleaved1F1B, 2, totals);
    warm("interleaved pp=16 vpp=2 m=128, warm, timeline", ScheduleKind::Interleaved1F1B, 2, timeline);
    warm("zb-h1 pp=16 m=128, warm, no timeline", ScheduleKind::ZeroBubbleH1, 1, totals);
    warm("zb-h1 pp=16 m=128, warm, timeline", ScheduleKind::ZeroBubbleH1, 1, timeline);

    const Evaluation e = model.evaluate(config(ScheduleKind::OneFOneB, 1), workload, timeline);
    std::printf("(%s: step %.3f s, MFU %.1f %%, %zu timeline events; %d repetitions, checksum %.3f)\n",
                e.config.describe().c_str(), e.step_time, 100 * e.mfu, e.simulation->events.size(), reps, sink);
    return 0;
}
