// SPDX-License-Identifier: MIT
// Times simulatePipeline on the shapes the planner hits most: prints microseconds per call.
#include "shardscape/sim/simulator.h"

#include <chrono>
#include <cstdio>

using namespace shardscape;

namespace {

PipelineSpec makeSpec(ScheduleKind kind, int pp, int vpp, int m, bool record)
{
    PipelineSpec spec;
    spec.schedule = kind;
    spec.pp = pp;
    spec.vpp = vpp;
    spec.num_microbatches = m;
    spec.record_events = record;
    spec.optimizer_step = 0.01;
    spec.stages.resize(std::size_t(pp * vpp));
    for (std::size_t s = 0; s < spec.stages.size(); ++s) {
        auto& c = spec.stages[s];
        // slightly uneven stages so the simulator cannot shortcut anything
        c.forward = 0.010 + 0.0001 * double(s % 3);
        c.backward_input = 0.011;
        c.backward_weight = 0.009;
        c.send_forward = c.send_backward = 0.0005;
        c.activation_bytes = 1e9;
        c.static_bytes = 20e9;
        c.grad_sync = 0.05;
        c.grad_sync_overlap = 0.02;
    }
    return spec;
}

void bench(const char* label, const PipelineSpec& spec)
{
    // Calibrate the repetition count so each case runs for about half a second.
    int reps = 16;
    double seconds = 0;
    double sink = 0; // keeps the calls from being optimized away
    for (;;) {
        sink = 0;
        const auto begin = std::chrono::steady_clock::now();
        for (int i = 0; i < reps; ++i)
            sink += simulatePipeline(spec).step_time;
        seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
        if (seconds > 0.5 || reps > (1 << 24))
            break;
        reps *= 4;
    }
    std::printf("%-48s %10.2f us/call  (%d calls, step %.4f s)\n", label, seconds / reps * 1e6, reps, sink / reps);
}

} // namespace

int main()
{
    bench("1f1b pp=16 m=128, no events", makeSpec(ScheduleKind::OneFOneB, 16, 1, 128, false));
    bench("1f1b pp=16 m=128, events", makeSpec(ScheduleKind::OneFOneB, 16, 1, 128, true));
    bench("interleaved pp=16 vpp=4 m=128, no events", makeSpec(ScheduleKind::Interleaved1F1B, 16, 4, 128, false));
    bench("interleaved pp=16 vpp=4 m=128, events", makeSpec(ScheduleKind::Interleaved1F1B, 16, 4, 128, true));
    bench("zb-h1 pp=16 m=128, no events", makeSpec(ScheduleKind::ZeroBubbleH1, 16, 1, 128, false));
    return 0;
}
