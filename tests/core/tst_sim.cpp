// SPDX-License-Identifier: MIT
#include "shardscape/sim/chrome_trace.h"
#include "shardscape/sim/schedule.h"
#include "shardscape/sim/simulator.h"
#include "shardscape/support/error.h"

#include <nlohmann/json.hpp>

#include <QtTest>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <tuple>

using namespace shardscape;

Q_DECLARE_METATYPE(shardscape::ScheduleKind)

namespace {

// Expected values come from closed forms or from timelines worked out by hand, never from the simulator.
constexpr double kTolerance = 1e-9;

bool near(double actual, double expected, double tolerance = kTolerance)
{
    return std::abs(actual - expected) <= tolerance * std::max(1.0, std::abs(expected));
}

#define COMPARE_NEAR(actual, expected)                                                                                 \
    do {                                                                                                               \
        const double a_ = (actual);                                                                                    \
        const double e_ = (expected);                                                                                  \
        if (!near(a_, e_))                                                                                             \
            QFAIL(qPrintable(QStringLiteral("%1 = %2, expected %3 (%4)")                                               \
                                 .arg(QString::fromLatin1(#actual))                                                    \
                                 .arg(a_, 0, 'g', 17)                                                                  \
                                 .arg(e_, 0, 'g', 17)                                                                  \
                                 .arg(QString::fromLatin1(#expected))));                                               \
    } while (false)

/** Every virtual stage costs the same; no communication. Seconds. */
PipelineSpec uniformSpec(ScheduleKind kind, int pp, int vpp, int m, double forward, double backwardInput,
                         double backwardWeight)
{
    PipelineSpec spec;
    spec.schedule = kind;
    spec.pp = pp;
    spec.vpp = vpp;
    spec.num_microbatches = m;
    StageCosts costs;
    costs.forward = forward;
    costs.backward_input = backwardInput;
    costs.backward_weight = backwardWeight;
    spec.stages.assign(std::size_t(pp * vpp), costs);
    spec.record_events = false;
    return spec;
}

const TimelineEvent* findEvent(const SimulationResult& result, EventKind kind, int rank, int stage, int microbatch)
{
    for (const auto& e : result.events) {
        if (e.kind == kind && e.rank == rank && e.stage == stage && e.microbatch == microbatch)
            return &e;
    }
    return nullptr;
}

} // namespace

class TestSim : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void scheduleNames();

    void scheduleCoversEveryAction_data();
    void scheduleCoversEveryAction();

    void oneFOneBWarmup_data();
    void oneFOneBWarmup();

    void interleavedOrder();

    void bubbleGPipeAnd1F1B_data();
    void bubbleGPipeAnd1F1B();

    void bubbleInterleaved_data();
    void bubbleInterleaved();

    void bubbleZeroBubbleH1_data();
    void bubbleZeroBubbleH1();

    void inflight_data();
    void inflight();

    void stepTime1F1B_data();
    void stepTime1F1B();

    void nonUniformByHand();
    void sendsDelayTimeline();
    void sendsSerializeOnOneRank();
    void blockingSendsHoldTheCompute();
    void vScheduleBubbleAndMemory_data();
    void vScheduleBubbleAndMemory();
    void vScheduleTurnSendsNothing();
    void dualPipeBubbleAndMemory_data();
    void dualPipeBubbleAndMemory();
    void dualPipeDirectionsStartApart();
    void exposedCommSitsAtTheEndOfItsBlock();

    void gradSyncAndOptimizer_data();
    void gradSyncAndOptimizer();
    void gradSyncSerializesChunks();

    void eventsSortedAndComplete_data();
    void eventsSortedAndComplete();
    void noEventsWhenNotRecording();

    void invalidInputThrows_data();
    void invalidInputThrows();
    void invalidScheduleThrows_data();
    void invalidScheduleThrows();

    void stopReturnsEarly();

    void chromeTrace();
};

void TestSim::scheduleNames()
{
    for (auto kind :
         {ScheduleKind::GPipe, ScheduleKind::OneFOneB, ScheduleKind::Interleaved1F1B, ScheduleKind::ZeroBubbleH1,
          ScheduleKind::ZeroBubbleV, ScheduleKind::DualPipeV, ScheduleKind::DualPipe}) {
        const auto parsed = parseSchedule(scheduleName(kind));
        QVERIFY(parsed.has_value());
        QCOMPARE(*parsed, kind);
    }
    QCOMPARE(scheduleName(ScheduleKind::OneFOneB), std::string_view("1f1b"));
    QCOMPARE(scheduleName(ScheduleKind::ZeroBubbleH1), std::string_view("zb-h1"));
    QCOMPARE(parseSchedule("GPipe"), std::optional<ScheduleKind>(ScheduleKind::GPipe));
    QVERIFY(!parseSchedule("pipedream").has_value());
    QVERIFY(!parseSchedule("").has_value());
    QCOMPARE(eventKindName(EventKind::GradSync), std::string_view("grad_sync"));
}

void TestSim::scheduleCoversEveryAction_data()
{
    QTest::addColumn<ScheduleKind>("kind");
    QTest::addColumn<int>("pp");
    QTest::addColumn<int>("vpp");
    QTest::addColumn<int>("m");
    QTest::newRow("gpipe 4x6") << ScheduleKind::GPipe << 4 << 1 << 6;
    QTest::newRow("1f1b 4x2") << ScheduleKind::OneFOneB << 4 << 1 << 2;
    QTest::newRow("1f1b 8x16") << ScheduleKind::OneFOneB << 8 << 1 << 16;
    QTest::newRow("interleaved 4x2x8") << ScheduleKind::Interleaved1F1B << 4 << 2 << 8;
    QTest::newRow("interleaved 4x3x4") << ScheduleKind::Interleaved1F1B << 4 << 3 << 4;
    QTest::newRow("interleaved 1x2x3") << ScheduleKind::Interleaved1F1B << 1 << 2 << 3;
    QTest::newRow("zb-h1 4x8") << ScheduleKind::ZeroBubbleH1 << 4 << 1 << 8;
    QTest::newRow("zb-h1 4x2") << ScheduleKind::ZeroBubbleH1 << 4 << 1 << 2;
    QTest::newRow("zb-v 4x2x8") << ScheduleKind::ZeroBubbleV << 4 << 2 << 8;
    QTest::newRow("zb-v 3x2x13") << ScheduleKind::ZeroBubbleV << 3 << 2 << 13;
    QTest::newRow("dualpipev 4x2x8") << ScheduleKind::DualPipeV << 4 << 2 << 8;
    QTest::newRow("dualpipev 5x2x17") << ScheduleKind::DualPipeV << 5 << 2 << 17;
    QTest::newRow("dualpipe 4x2x8") << ScheduleKind::DualPipe << 4 << 2 << 8;
    QTest::newRow("dualpipe 6x2x20") << ScheduleKind::DualPipe << 6 << 2 << 20;
}

void TestSim::scheduleCoversEveryAction()
{
    QFETCH(ScheduleKind, kind);
    QFETCH(int, pp);
    QFETCH(int, vpp);
    QFETCH(int, m);
    const auto ranks = buildSchedule(kind, pp, vpp, m);
    QCOMPARE(int(ranks.size()), pp);
    // whole backwards and split ones (the zero-bubble steps of DeepSeek's schedules)
    const bool mixed = kind == ScheduleKind::DualPipeV || kind == ScheduleKind::DualPipe;
    // DualPipe sends half the micro-batches each way: every virtual stage sees m / 2 of them.
    const int perStage = chainMicrobatches(kind, m);
    const bool split = kind == ScheduleKind::ZeroBubbleH1 || kind == ScheduleKind::ZeroBubbleV;
    std::set<std::tuple<int, int, int>> seen; // (kind, stage, microbatch)
    for (int r = 0; r < pp; ++r) {
        if (!mixed)
            QCOMPARE(int(ranks[std::size_t(r)].size()), (split ? 3 : 2) * m * vpp);
        // on each rank, a micro-batch's F precedes its B, which precedes its W
        std::map<std::pair<int, int>, int> progress;
        for (const Action& a : ranks[std::size_t(r)]) {
            QCOMPARE(stageRank(kind, pp, a.stage), r);
            QVERIFY(a.stage >= 0 && a.stage < pp * vpp);
            QVERIFY(a.microbatch >= 0 && a.microbatch < perStage);
            QVERIFY(seen.insert({int(a.kind), a.stage, a.microbatch}).second);
            int& step = progress[{a.stage, a.microbatch}];
            switch (a.kind) {
            case ActionKind::Forward:
                QCOMPARE(step, 0);
                break;
            case ActionKind::Backward:
                QVERIFY(!split);
                QCOMPARE(step, 1);
                ++step; // whole: nothing follows
                break;
            case ActionKind::BackwardInput:
                QVERIFY(split || mixed);
                QCOMPARE(step, 1);
                break;
            case ActionKind::BackwardWeight:
                QVERIFY(split || mixed);
                QCOMPARE(step, 2);
                break;
            }
            ++step;
        }
        // Every chunk-micro-batch of the rank ran forward and all of its backward.
        QCOMPARE(int(progress.size()), perStage * vpp);
        for (const auto& [key, step] : progress)
            QCOMPARE(step, 3);
    }
    if (!mixed)
        QCOMPARE(int(seen.size()), (split ? 3 : 2) * m * pp * vpp);
}

void TestSim::oneFOneBWarmup_data()
{
    QTest::addColumn<int>("pp");
    QTest::addColumn<int>("m");
    QTest::newRow("p4 m8") << 4 << 8;
    QTest::newRow("p4 m2") << 4 << 2;
    QTest::newRow("p8 m1") << 8 << 1;
}

void TestSim::oneFOneBWarmup()
{
    QFETCH(int, pp);
    QFETCH(int, m);
    const auto ranks = buildSchedule(ScheduleKind::OneFOneB, pp, 1, m);
    for (int r = 0; r < pp; ++r) {
        const auto& actions = ranks[std::size_t(r)];
        // min(m, pp - r - 1) warm-up forwards plus the first steady-state forward
        const int leading = int(
            std::find_if(actions.begin(), actions.end(), [](const Action& a) { return a.kind != ActionKind::Forward; })
            - actions.begin());
        QCOMPARE(leading, std::min(m, pp - r));
        // the backwards run in micro-batch order and the steady state alternates F and B
        int expectedBackward = 0;
        for (const Action& a : actions) {
            if (a.kind == ActionKind::Backward)
                QCOMPARE(a.microbatch, expectedBackward++);
        }
    }
}

void TestSim::interleavedOrder()
{
    // Megatron's interleaved order for pp = 2, vpp = 2, m = 4 on rank 0: warm-up (2-0-1)*2 + (2-1)*2 = 4
    // forwards: k = 0..3 -> (chunk 0, mb 0), (0, 1), (1, 0), (1, 1); then F k=4 -> (chunk 0, mb 2) and B k=0
    // -> (chunk 1, mb 0), ...; stage = chunk * pp + rank.
    const auto ranks = buildSchedule(ScheduleKind::Interleaved1F1B, 2, 2, 4);
    const std::vector<std::tuple<ActionKind, int, int>> expected {
        {ActionKind::Forward, 0, 0},  {ActionKind::Forward, 0, 1},  {ActionKind::Forward, 2, 0},
        {ActionKind::Forward, 2, 1},  {ActionKind::Forward, 0, 2},  {ActionKind::Backward, 2, 0},
        {ActionKind::Forward, 0, 3},  {ActionKind::Backward, 2, 1}, {ActionKind::Forward, 2, 2},
        {ActionKind::Backward, 0, 0}, {ActionKind::Forward, 2, 3},  {ActionKind::Backward, 0, 1},
        {ActionKind::Backward, 2, 2}, {ActionKind::Backward, 2, 3}, {ActionKind::Backward, 0, 2},
        {ActionKind::Backward, 0, 3},
    };
    const auto& actions = ranks[0];
    QCOMPARE(actions.size(), expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
        QCOMPARE(actions[i].kind, std::get<0>(expected[i]));
        QCOMPARE(actions[i].stage, std::get<1>(expected[i]));
        QCOMPARE(actions[i].microbatch, std::get<2>(expected[i]));
    }
    // rank 1 warms up with (2-1-1)*2 + (2-1)*2 = 2 forwards
    QCOMPARE(ranks[1][2].kind, ActionKind::Forward);
    QCOMPARE(ranks[1][3].kind, ActionKind::Backward);
    QCOMPARE(ranks[1][3].stage, 3);
}

void TestSim::bubbleGPipeAnd1F1B_data()
{
    QTest::addColumn<ScheduleKind>("kind");
    QTest::addColumn<int>("pp");
    QTest::addColumn<int>("m");
    for (auto kind : {ScheduleKind::GPipe, ScheduleKind::OneFOneB}) {
        for (auto [pp, m] :
             {std::pair {1, 1}, {1, 4}, {2, 1}, {2, 2}, {2, 8}, {4, 4}, {4, 3}, {4, 16}, {8, 8}, {8, 32}, {16, 128}}) {
            QTest::addRow("%s p%d m%d", scheduleName(kind).data(), pp, m) << kind << pp << m;
        }
    }
}

void TestSim::bubbleGPipeAnd1F1B()
{
    QFETCH(ScheduleKind, kind);
    QFETCH(int, pp);
    QFETCH(int, m);
    // F = 1.5 s, B = 1.25 + 0.75 s (fused): the bubble ratio does not depend on F/B for uniform stages
    const auto result = simulatePipeline(uniformSpec(kind, pp, 1, m, 1.5, 1.25, 0.75));
    COMPARE_NEAR(result.bubble_ratio, double(pp - 1) / (m + pp - 1)); // the idle share of the step
    COMPARE_NEAR(result.pipeline_time, (m + pp - 1) * 3.5);
    for (double busy : result.busy)
        COMPARE_NEAR(busy, m * 3.5);
}

void TestSim::bubbleInterleaved_data()
{
    QTest::addColumn<int>("pp");
    QTest::addColumn<int>("vpp");
    QTest::addColumn<int>("m");
    for (auto [pp, vpp, m] : {std::tuple {2, 2, 2},
                              {2, 2, 4},
                              {4, 2, 4},
                              {4, 2, 8},
                              {4, 3, 8},
                              {4, 4, 16},
                              {8, 2, 16},
                              {8, 4, 32},
                              {16, 4, 128},
                              {1, 3, 5}}) {
        QTest::addRow("p%d v%d m%d", pp, vpp, m) << pp << vpp << m;
    }
}

void TestSim::bubbleInterleaved()
{
    QFETCH(int, pp);
    QFETCH(int, vpp);
    QFETCH(int, m);
    const auto result = simulatePipeline(uniformSpec(ScheduleKind::Interleaved1F1B, pp, vpp, m, 1.0, 1.0, 1.0));
    COMPARE_NEAR(result.bubble_ratio, double(pp - 1) / (vpp * m + pp - 1));
    COMPARE_NEAR(result.pipeline_time, (vpp * m + pp - 1) * 3.0);
}

void TestSim::bubbleZeroBubbleH1_data()
{
    QTest::addColumn<int>("pp");
    QTest::addColumn<int>("m");
    for (auto [pp, m] :
         {std::pair {1, 3}, {2, 2}, {2, 4}, {3, 6}, {4, 4}, {4, 8}, {4, 13}, {8, 8}, {8, 24}, {16, 128}}) {
        QTest::addRow("p%d m%d", pp, m) << pp << m;
    }
}

void TestSim::bubbleZeroBubbleH1()
{
    QFETCH(int, pp);
    QFETCH(int, m);
    const double t = 0.5; // F = B = W
    const auto result = simulatePipeline(uniformSpec(ScheduleKind::ZeroBubbleH1, pp, 1, m, t, t, t));
    COMPARE_NEAR(result.bubble_ratio, double(pp - 1) / (3.0 * m + pp - 1));
    COMPARE_NEAR(result.pipeline_time, (3 * m + pp - 1) * t);
    // activations stay until W: every rank peaks at p stashed micro-batches (1F1B: p - r)
    for (int r = 0; r < pp; ++r)
        QCOMPARE(result.peak_inflight[std::size_t(r)], std::min(m, pp));

    // it beats 1F1B with the same fused backward whenever p > 1
    const auto oneFOneB = simulatePipeline(uniformSpec(ScheduleKind::OneFOneB, pp, 1, m, t, t, t));
    QVERIFY(result.pipeline_time <= oneFOneB.pipeline_time);
    if (pp > 1)
        QVERIFY(result.pipeline_time < oneFOneB.pipeline_time);
}

void TestSim::inflight_data()
{
    QTest::addColumn<ScheduleKind>("kind");
    QTest::addColumn<int>("pp");
    QTest::addColumn<int>("m");
    for (auto kind : {ScheduleKind::GPipe, ScheduleKind::OneFOneB}) {
        for (auto [pp, m] : {std::pair {1, 4}, {4, 2}, {4, 4}, {4, 9}, {8, 16}}) {
            QTest::addRow("%s p%d m%d", scheduleName(kind).data(), pp, m) << kind << pp << m;
        }
    }
}

void TestSim::inflight()
{
    QFETCH(ScheduleKind, kind);
    QFETCH(int, pp);
    QFETCH(int, m);
    auto spec = uniformSpec(kind, pp, 1, m, 1.0, 1.0, 1.0);
    const double activation = 3e9; // bytes per stashed micro-batch
    const double weights = 5e9;
    const double transient = 7e8;
    for (auto& stage : spec.stages) {
        stage.activation_bytes = activation;
        stage.static_bytes = weights;
    }
    spec.transient_bytes = transient;
    spec.record_events = true;
    const auto result = simulatePipeline(spec);
    QCOMPARE(int(result.peak_inflight.size()), pp);
    QCOMPARE(int(result.memory.size()), pp);
    for (int r = 0; r < pp; ++r) {
        const int expected = kind == ScheduleKind::GPipe ? m : std::min(m, pp - r);
        QCOMPARE(result.peak_inflight[std::size_t(r)], expected);
        COMPARE_NEAR(result.peak_memory[std::size_t(r)], weights + transient + expected * activation);

        // The memory curve is a step function from time 0 that ends at static + transient and peaks at
        // peak_memory. Rank 0 stashes its first micro-batch at time 0, so its curve starts one activation up.
        const auto& curve = result.memory[std::size_t(r)];
        QVERIFY(curve.size() >= 2);
        COMPARE_NEAR(curve.front().time, 0.0);
        COMPARE_NEAR(curve.front().bytes, weights + transient + (r == 0 ? activation : 0.0));
        COMPARE_NEAR(curve.back().bytes, weights + transient);
        double peak = 0;
        for (std::size_t i = 0; i < curve.size(); ++i) {
            peak = std::max(peak, curve[i].bytes);
            if (i > 0) {
                QVERIFY(curve[i].time > curve[i - 1].time);
                QVERIFY(curve[i].bytes != curve[i - 1].bytes);
            }
        }
        COMPARE_NEAR(peak, result.peak_memory[std::size_t(r)]);
    }
}

void TestSim::stepTime1F1B_data()
{
    QTest::addColumn<int>("pp");
    QTest::addColumn<int>("m");
    QTest::addColumn<double>("forward");
    QTest::addColumn<double>("backward");
    QTest::newRow("p4 m8 F1 B2") << 4 << 8 << 1.0 << 2.0;
    QTest::newRow("p4 m3 F1 B2") << 4 << 3 << 1.0 << 2.0;
    QTest::newRow("p8 m16 F0.3 B0.7") << 8 << 16 << 0.3 << 0.7;
    QTest::newRow("p2 m5 F2 B1") << 2 << 5 << 2.0 << 1.0;
}

void TestSim::stepTime1F1B()
{
    QFETCH(int, pp);
    QFETCH(int, m);
    QFETCH(double, forward);
    QFETCH(double, backward);
    const auto result
        = simulatePipeline(uniformSpec(ScheduleKind::OneFOneB, pp, 1, m, forward, backward * 0.5, backward * 0.5));
    COMPARE_NEAR(result.step_time, (m + pp - 1) * (forward + backward));
    COMPARE_NEAR(result.pipeline_time, result.step_time);
}

void TestSim::nonUniformByHand()
{
    // 1F1B, p = 2, m = 2. Stage 0: F = 1, B = 2; stage 1: F = 3, B = 4 (B split 1 + 3 to check the fusion).
    // Rank 0 runs F0 F1 B0 B1 (one warm-up forward), rank 1 runs F0 B0 F1 B1.
    //   r0: F0 [0, 1]  F1 [1, 2]
    //   r1: F0 [1, 4]  B0 [4, 8]  F1 [8, 11]  B1 [11, 15]
    //   r0: B0 [8, 10] (waits for r1's B0)  B1 [15, 17]
    // pipeline = 17; busy r0 = 6, r1 = 14; bubble = the busiest rank's wait over the step = (17 - 14) / 17.
    // Memory (activations 10 and 100 bytes, static 1000 and 2000, transient 5):
    //   r0 stashes F0 and F1 before B0: peak 1000 + 5 + 20; r1 never holds more than one: 2000 + 5 + 100.
    //   r1's curve: 2005 at 0, 2105 from 1, back to 2005 at 8 but F1 re-stashes at 8, so 2105 runs on to 15.
    PipelineSpec spec;
    spec.schedule = ScheduleKind::OneFOneB;
    spec.pp = 2;
    spec.num_microbatches = 2;
    spec.stages.resize(2);
    spec.stages[0].forward = 1;
    spec.stages[0].backward_input = 2;
    spec.stages[0].activation_bytes = 10;
    spec.stages[0].static_bytes = 1000;
    spec.stages[1].forward = 3;
    spec.stages[1].backward_input = 1;
    spec.stages[1].backward_weight = 3;
    spec.stages[1].activation_bytes = 100;
    spec.stages[1].static_bytes = 2000;
    spec.transient_bytes = 5;
    const auto result = simulatePipeline(spec);

    COMPARE_NEAR(result.pipeline_time, 17.0);
    COMPARE_NEAR(result.step_time, 17.0);
    COMPARE_NEAR(result.busy[0], 6.0);
    COMPARE_NEAR(result.busy[1], 14.0);
    COMPARE_NEAR(result.bubble_ratio, 3.0 / 17.0);
    QCOMPARE(result.peak_inflight, (std::vector<int> {2, 1}));
    COMPARE_NEAR(result.peak_memory[0], 1025.0);
    COMPARE_NEAR(result.peak_memory[1], 2105.0);

    const std::vector<std::tuple<EventKind, int, int, double, double>> expected {
        {EventKind::Forward, 0, 0, 0, 1},   {EventKind::Forward, 0, 1, 1, 1},   {EventKind::Backward, 0, 0, 8, 2},
        {EventKind::Backward, 0, 1, 15, 2}, {EventKind::Forward, 1, 0, 1, 3},   {EventKind::Backward, 1, 0, 4, 4},
        {EventKind::Forward, 1, 1, 8, 3},   {EventKind::Backward, 1, 1, 11, 4},
    };
    QCOMPARE(result.events.size(), expected.size()); // no sends, grad syncs or optimizer: they cost nothing
    for (std::size_t i = 0; i < expected.size(); ++i) {
        const auto& e = result.events[i];
        const auto [kind, stage, microbatch, start, duration] = expected[i];
        QCOMPARE(e.kind, kind);
        QCOMPARE(e.rank, stage);
        QCOMPARE(e.stage, stage);
        QCOMPARE(e.microbatch, microbatch);
        QCOMPARE(int(e.stream), 0);
        COMPARE_NEAR(e.start, start);
        COMPARE_NEAR(e.duration, duration);
    }

    const auto& curve = result.memory[1];
    QCOMPARE(curve.size(), std::size_t(3));
    COMPARE_NEAR(curve[0].time, 0.0);
    COMPARE_NEAR(curve[0].bytes, 2005.0);
    COMPARE_NEAR(curve[1].time, 1.0);
    COMPARE_NEAR(curve[1].bytes, 2105.0);
    COMPARE_NEAR(curve[2].time, 15.0);
    COMPARE_NEAR(curve[2].bytes, 2005.0);
    const auto& curve0 = result.memory[0]; // 1005 @0 -> 1015 @0 (merged), 1025 @1, 1015 @10, 1005 @17
    QCOMPARE(curve0.size(), std::size_t(4));
    COMPARE_NEAR(curve0[0].bytes, 1015.0);
    COMPARE_NEAR(curve0[1].time, 1.0);
    COMPARE_NEAR(curve0[2].time, 10.0);
    COMPARE_NEAR(curve0[3].time, 17.0);
    COMPARE_NEAR(curve0[3].bytes, 1005.0);
}

void TestSim::sendsDelayTimeline()
{
    // 1F1B, p = 2, m = 1, F = 1 and B = 2 on both stages; the activation takes 0.5 s to reach rank 1 and the
    // gradient 0.25 s to come back:
    //   r0 F [0, 1], send [1, 1.5]; r1 F [1.5, 2.5], B [2.5, 4.5], send [4.5, 4.75]; r0 B [4.75, 6.75]
    auto spec = uniformSpec(ScheduleKind::OneFOneB, 2, 1, 1, 1.0, 1.5, 0.5);
    spec.stages[0].send_forward = 0.5;
    spec.stages[1].send_backward = 0.25;
    spec.stages[1].send_forward = 100; // the last stage sends nothing forward
    spec.stages[0].send_backward = 100; // the first stage sends nothing backward
    spec.record_events = true;
    const auto result = simulatePipeline(spec);
    COMPARE_NEAR(result.pipeline_time, 6.75);
    COMPARE_NEAR(result.step_time, 6.75);
    COMPARE_NEAR(result.bubble_ratio, (6.75 - 3.0) / 6.75);

    const auto* sendForward = findEvent(result, EventKind::SendForward, 0, 0, 0);
    QVERIFY(sendForward);
    QCOMPARE(int(sendForward->stream), 1);
    COMPARE_NEAR(sendForward->start, 1.0);
    COMPARE_NEAR(sendForward->duration, 0.5);
    const auto* sendBackward = findEvent(result, EventKind::SendBackward, 1, 1, 0);
    QVERIFY(sendBackward);
    QCOMPARE(int(sendBackward->stream), 1);
    COMPARE_NEAR(sendBackward->start, 4.5);
    COMPARE_NEAR(sendBackward->duration, 0.25);
    const auto* backward0 = findEvent(result, EventKind::Backward, 0, 0, 0);
    QVERIFY(backward0);
    COMPARE_NEAR(backward0->start, 4.75);
    QCOMPARE(result.events.size(), std::size_t(6));

    // with pp = 1 (interleaved, both chunks on rank 0) nothing crosses a link: send costs are ignored
    auto local = uniformSpec(ScheduleKind::Interleaved1F1B, 1, 2, 1, 1.0, 1.0, 1.0);
    for (auto& stage : local.stages)
        stage.send_forward = stage.send_backward = 10;
    COMPARE_NEAR(simulatePipeline(local).step_time, 6.0);
}

void TestSim::sendsSerializeOnOneRank()
{
    // GPipe, p = 2, m = 2, F = 1 and B = 2; shipping an activation takes 3 s, longer than a forward, so rank 0's
    // second send waits for its first: send0 [1, 4], send1 [4, 7]. Rank 1: F0 [4, 5], F1 [7, 8], B0 [8, 10],
    // B1 [10, 12]; rank 0: B0 [10, 12], B1 [12, 14]. (Without serialization F1 would arrive at 5 and the step
    // would end at 12.)
    auto spec = uniformSpec(ScheduleKind::GPipe, 2, 1, 2, 1.0, 2.0, 0.0);
    spec.stages[0].send_forward = 3;
    spec.record_events = true;
    const auto result = simulatePipeline(spec);
    COMPARE_NEAR(result.pipeline_time, 14.0);
    const auto* second = findEvent(result, EventKind::SendForward, 0, 0, 1);
    QVERIFY(second);
    COMPARE_NEAR(second->start, 4.0);
    const auto* forward1 = findEvent(result, EventKind::Forward, 1, 1, 1);
    QVERIFY(forward1);
    COMPARE_NEAR(forward1->start, 7.0);
}

void TestSim::blockingSendsHoldTheCompute()
{
    // 1F1B, p = 2, m = 4, F = 1, B = 2, every send 0.5 s. Synchronous p2p (DeepSpeed's pipeline engine, Megatron's
    // 1F1B): the sender computes nothing until its send has arrived.
    //   r0: F0 [0, 1] send [1, 1.5]; F1 [1.5, 2.5] send [2.5, 3]
    //   r1: F0 [1.5, 2.5] B0 [2.5, 4.5] send [4.5, 5]; F1 [5, 6] B1 [6, 8] send [8, 8.5]
    //   r0: B0 [5, 7]; F2 [7, 8] send [8, 8.5]; B1 [8.5, 10.5]; F3 [10.5, 11.5] send [11.5, 12]
    //   r1: F2 [8.5, 9.5] B2 [9.5, 11.5] send [11.5, 12]; F3 [12, 13] B3 [13, 15] send [15, 15.5]
    //   r0: B2 [12, 14]; B3 [15.5, 17.5]
    // = (m + 1)(F + B + send), Alpa's Eq. 2 with the send in every cycle. With sends beside compute, r0 runs F1 at
    // [1, 2] and r1 F1 at [4.5, 5.5]; the step ends at 17.
    auto spec = uniformSpec(ScheduleKind::OneFOneB, 2, 1, 4, 1.0, 1.5, 0.5);
    for (auto& stage : spec.stages)
        stage.send_forward = stage.send_backward = 0.5;
    spec.record_events = true;
    spec.blocking_p2p = true;
    const auto blocking = simulatePipeline(spec);
    COMPARE_NEAR(blocking.step_time, 17.5);
    const auto* forward1 = findEvent(blocking, EventKind::Forward, 0, 0, 1);
    QVERIFY(forward1);
    COMPARE_NEAR(forward1->start, 1.5);
    const auto* backward3 = findEvent(blocking, EventKind::Backward, 0, 0, 3);
    QVERIFY(backward3);
    COMPARE_NEAR(backward3->start, 15.5);

    spec.blocking_p2p = false;
    const auto beside = simulatePipeline(spec);
    COMPARE_NEAR(beside.step_time, 17.0);
    const auto* forward1Beside = findEvent(beside, EventKind::Forward, 0, 0, 1);
    QVERIFY(forward1Beside);
    COMPARE_NEAR(forward1Beside->start, 1.0);
}

void TestSim::vScheduleBubbleAndMemory_data()
{
    QTest::addColumn<ScheduleKind>("kind");
    QTest::addColumn<int>("pp");
    QTest::addColumn<int>("m");
    QTest::addColumn<double>("forward");
    QTest::addColumn<double>("weight");
    QTest::addColumn<double>("bubble");
    QTest::addColumn<int>("inflight");
    // Per chunk F = I (input gradient) = 1, W as given; no communication. Bubble = step - 2m(F + I + W).
    // ZB-V (PyTorch's ScheduleZBVZeroBubble): with F = I = W the last rank waits p - 1 chunk forwards for its first
    // input and the schedule loses nothing after that, (p - 1) F; it keeps 2p chunk-micro-batches, 1F1B's p whole
    // micro-batches (Qi et al., ICLR'24: ZB-V has 1F1B's activation memory).
    for (const int pp : {2, 4, 8})
        QTest::newRow(qPrintable(QString("zb-v p%1").arg(pp)))
            << ScheduleKind::ZeroBubbleV << pp << 4 * pp << 1.0 << 1.0 << double(pp - 1) << 2 * pp;
    // DualPipeV (DualPipe README): bubble (PP/2 - 1)(F&B + B - 3W) over PP = 2p stages, with F&B = F + B the paired
    // chunk and B = I + W the whole backward: 2(p - 1) at F = I = W = 1, 3(p - 1) with W = 0; activations PP + 1 =
    // 2p + 1 chunk-micro-batches.
    for (const int pp : {2, 4, 8}) {
        QTest::newRow(qPrintable(QString("dualpipev p%1").arg(pp)))
            << ScheduleKind::DualPipeV << pp << 4 * pp << 1.0 << 1.0 << 2.0 * (pp - 1) << 2 * pp + 1;
        QTest::newRow(qPrintable(QString("dualpipev p%1 w0").arg(pp)))
            << ScheduleKind::DualPipeV << pp << 4 * pp << 1.0 << 0.0 << 3.0 * (pp - 1) << 2 * pp + 1;
    }
}

void TestSim::vScheduleBubbleAndMemory()
{
    QFETCH(ScheduleKind, kind);
    QFETCH(int, pp);
    QFETCH(int, m);
    QFETCH(double, forward);
    QFETCH(double, weight);
    QFETCH(double, bubble);
    QFETCH(int, inflight);
    auto spec = uniformSpec(kind, pp, 2, m, forward, 1.0, weight);
    for (auto& stage : spec.stages)
        stage.activation_bytes = 1;
    const auto result = simulatePipeline(spec);
    const double busy = 2.0 * m * (forward + 1.0 + weight);
    COMPARE_NEAR(result.step_time - busy, bubble);
    for (int r = 0; r < pp; ++r) {
        COMPARE_NEAR(result.busy[std::size_t(r)], busy);
        QCOMPARE(result.peak_inflight[std::size_t(r)], inflight);
        COMPARE_NEAR(result.peak_memory[std::size_t(r)], double(inflight));
    }
    // Both beat 1F1B over the same 2p stages of half a rank's layers each (p ranks of two, (p - 1)(F + B) per rank).
    const auto oneF = simulatePipeline(uniformSpec(ScheduleKind::OneFOneB, pp, 1, m, 2 * forward, 2.0, 2 * weight));
    QVERIFY(result.step_time < oneF.step_time);
}

void TestSim::vScheduleTurnSendsNothing()
{
    // The V turns on the last rank (stages p - 1 and p) and ends on rank 0 (stage 2p - 1 next to stage 0): there
    // nothing crosses a link, so a send cost there changes nothing, while one between ranks does.
    auto spec = uniformSpec(ScheduleKind::ZeroBubbleV, 2, 2, 4, 1.0, 1.0, 1.0);
    spec.record_events = true;
    const double base = simulatePipeline(spec).step_time;
    spec.stages[1].send_forward = 5; // stage 1 -> 2, both on rank 1
    spec.stages[2].send_backward = 5; // stage 2 -> 1, both on rank 1
    const auto turn = simulatePipeline(spec);
    COMPARE_NEAR(turn.step_time, base);
    for (const auto& e : turn.events)
        QVERIFY(e.kind != EventKind::SendForward || e.stage != 1);
    spec.stages[0].send_forward = 5; // stage 0 (rank 0) -> stage 1 (rank 1)
    QVERIFY(simulatePipeline(spec).step_time > base + 5);
    // Rank 0 holds the first and the last stage, rank 1 the two in the middle.
    QCOMPARE(stageRank(ScheduleKind::ZeroBubbleV, 2, 3), 0);
    QCOMPARE(stageRank(ScheduleKind::DualPipeV, 2, 2), 1);
    // Rank 1 of four runs stages 1 and 6, in that chunk order, and each stage knows its chunk.
    QCOMPARE(chunkStage(ScheduleKind::DualPipeV, 4, 1, 0), 1);
    QCOMPARE(chunkStage(ScheduleKind::DualPipeV, 4, 1, 1), 6);
    QCOMPARE(stageChunk(ScheduleKind::DualPipeV, 4, 6), 1);
    QCOMPARE(stageChunk(ScheduleKind::Interleaved1F1B, 4, 6), 1);
}

void TestSim::dualPipeBubbleAndMemory_data()
{
    QTest::addColumn<int>("pp");
    QTest::addColumn<int>("m");
    QTest::addColumn<double>("weight");
    QTest::addColumn<double>("bubble");
    // Per stage F = I = 1, W as given, no communication; m micro-batches, m / 2 from each end. DualPipe README:
    // bubble (PP/2 - 1)(F&B + B - 3W) with PP = pp stages, F&B = F + B and B = I + W: pp - 2 at W = 1 and
    // 3(pp/2 - 1) at W = 0; activations PP + 1 stage-micro-batches, parameters 2x (two stages per rank).
    for (const int pp : {2, 4, 8}) {
        QTest::newRow(qPrintable(QString("dualpipe p%1").arg(pp))) << pp << 2 * pp << 1.0 << double(pp - 2);
        QTest::newRow(qPrintable(QString("dualpipe p%1 m4p").arg(pp))) << pp << 4 * pp << 1.0 << double(pp - 2);
        QTest::newRow(qPrintable(QString("dualpipe p%1 w0").arg(pp))) << pp << 4 * pp << 0.0 << 3.0 * (pp / 2 - 1);
    }
}

void TestSim::dualPipeBubbleAndMemory()
{
    QFETCH(int, pp);
    QFETCH(int, m);
    QFETCH(double, weight);
    QFETCH(double, bubble);
    auto spec = uniformSpec(ScheduleKind::DualPipe, pp, 2, m, 1.0, 1.0, weight);
    for (auto& stage : spec.stages) {
        stage.activation_bytes = 1;
        stage.static_bytes = 100;
    }
    const auto result = simulatePipeline(spec);
    const double busy = m * (2.0 + weight); // m / 2 micro-batches through each of the rank's two stages
    COMPARE_NEAR(result.step_time - busy, bubble);
    for (int r = 0; r < pp; ++r) {
        COMPARE_NEAR(result.busy[std::size_t(r)], busy);
        QCOMPARE(result.peak_inflight[std::size_t(r)], pp + 1);
        COMPARE_NEAR(result.peak_memory[std::size_t(r)], 200.0 + (pp + 1)); // two stages' parameters
    }
    // DualPipeV is DualPipe cut in half: on pp / 2 ranks with the same per-stage costs it takes the same time.
    if (pp >= 4) {
        const auto half = simulatePipeline(uniformSpec(ScheduleKind::DualPipeV, pp / 2, 2, m / 2, 1.0, 1.0, weight));
        COMPARE_NEAR(half.step_time, result.step_time);
    }
    // 1F1B over the same pp stages idles (pp - 1)(F + B) per rank.
    const auto oneF = simulatePipeline(uniformSpec(ScheduleKind::OneFOneB, pp, 1, m, 1.0, 1.0, weight));
    QVERIFY(result.step_time < oneF.step_time || pp == 2);
}

void TestSim::dualPipeDirectionsStartApart()
{
    // pp = 4, m = 8: virtual stages 0-3 run the first direction on ranks 0-3, stages 4-7 the second on ranks 3-0.
    // Each direction's first stage starts at once (stage 4 does not wait for stage 3), and each ends in its own loss.
    QVERIFY(startsChain(ScheduleKind::DualPipe, 4, 4));
    QVERIFY(endsChain(ScheduleKind::DualPipe, 4, 2, 3));
    QVERIFY(!startsChain(ScheduleKind::DualPipeV, 4, 4));
    QCOMPARE(stageRank(ScheduleKind::DualPipe, 4, 4), 3);
    QCOMPARE(layerChunkOf(ScheduleKind::DualPipe, 4, 6), 2);
    QCOMPARE(layerChunks(ScheduleKind::DualPipe, 4, 2), 4);
    auto spec = uniformSpec(ScheduleKind::DualPipe, 4, 2, 8, 1.0, 1.0, 1.0);
    spec.record_events = true;
    const auto result = simulatePipeline(spec);
    const auto* first = findEvent(result, EventKind::Forward, 0, 0, 0);
    const auto* reverse = findEvent(result, EventKind::Forward, 3, 4, 0);
    QVERIFY(first && reverse);
    COMPARE_NEAR(first->start, 0.0);
    COMPARE_NEAR(reverse->start, 0.0);
    // The first micro-batch of the second direction reaches rank 0 (stage 7) after three hops of F = 1.
    const auto* arrival = findEvent(result, EventKind::Forward, 0, 7, 0);
    QVERIFY(arrival);
    COMPARE_NEAR(arrival->start, 3.0);
}

void TestSim::exposedCommSitsAtTheEndOfItsBlock()
{
    // 1F1B, p = 2, m = 2, F = 1 (0.25 of it exposed all-to-all), B = 2 (0.5 exposed): one event per forward and
    // backward on the cp/ep lane (stream 3), ending with its block; the step time is unchanged (the time is inside).
    auto spec = uniformSpec(ScheduleKind::OneFOneB, 2, 1, 2, 1.0, 2.0, 0.0);
    const double plain = simulatePipeline(spec).step_time;
    for (auto& stage : spec.stages) {
        stage.exposed_comm_forward = 0.25;
        stage.exposed_comm_backward = 0.5;
    }
    spec.record_events = true;
    const auto result = simulatePipeline(spec);
    COMPARE_NEAR(result.step_time, plain);
    int comm = 0;
    for (const auto& e : result.events) {
        if (e.kind != EventKind::ExposedComm)
            continue;
        ++comm;
        QCOMPARE(int(e.stream), 3);
        const auto* forward = findEvent(result, EventKind::Forward, e.rank, e.stage, e.microbatch);
        const auto* backward = findEvent(result, EventKind::Backward, e.rank, e.stage, e.microbatch);
        QVERIFY(forward && backward);
        const bool ofForward = std::abs(e.start + e.duration - (forward->start + forward->duration)) < 1e-12;
        const bool ofBackward = std::abs(e.start + e.duration - (backward->start + backward->duration)) < 1e-12;
        QVERIFY(ofForward != ofBackward);
        COMPARE_NEAR(e.duration, ofForward ? 0.25 : 0.5);
    }
    QCOMPARE(comm, 8); // 2 ranks x 2 micro-batches x (forward + backward)
    // More exposed time than the block it belongs to is an input error.
    spec.stages[0].exposed_comm_forward = 2;
    QVERIFY_THROWS_EXCEPTION(InputError, simulatePipeline(spec));
}

void TestSim::gradSyncAndOptimizer_data()
{
    // 1F1B, p = 2, m = 2, F = 1, B = 1 + 1: r1 runs F0 [1, 2] B0 [2, 4] F1 [4, 5] B1 [5, 7]; r0 runs F0 [0, 1]
    // F1 [1, 2] B0 [4, 6] B1 [7, 9]. Each chunk's grad sync takes 3 s, the optimizer 0.5 s.
    //   r1 (overlap 0): sync [7, 10], optimizer [10, 10.5].
    //   r0: sync starts at max(9 - overlap, 7), the start of its last backward; optimizer after it.
    QTest::addColumn<double>("overlap");
    QTest::addColumn<double>("syncStart");
    QTest::addColumn<double>("stepTime");
    QTest::newRow("no overlap") << 0.0 << 9.0 << 12.5; // sync [9, 12], optimizer [12, 12.5]
    QTest::newRow("overlap 1.5") << 1.5 << 7.5 << 11.0; // sync [7.5, 10.5], optimizer [10.5, 11]
    QTest::newRow("overlap capped") << 5.0 << 7.0 << 10.5; // sync [7, 10], optimizer [10, 10.5] on both ranks
}

void TestSim::gradSyncAndOptimizer()
{
    QFETCH(double, overlap);
    QFETCH(double, syncStart);
    QFETCH(double, stepTime);
    auto spec = uniformSpec(ScheduleKind::OneFOneB, 2, 1, 2, 1.0, 1.0, 1.0);
    for (auto& stage : spec.stages)
        stage.grad_sync = 3;
    spec.stages[0].grad_sync_overlap = overlap;
    spec.optimizer_step = 0.5;
    spec.record_events = true;
    const auto result = simulatePipeline(spec);
    COMPARE_NEAR(result.pipeline_time, 9.0);
    COMPARE_NEAR(result.step_time, stepTime);
    // 3 s of the pipeline's 9 wait ((p - 1) / (m + p - 1): communication does not count as compute), over the step
    COMPARE_NEAR(result.bubble_ratio, 3.0 / stepTime);

    const auto* sync0 = findEvent(result, EventKind::GradSync, 0, 0, -1);
    QVERIFY(sync0);
    QCOMPARE(int(sync0->stream), 2);
    COMPARE_NEAR(sync0->start, syncStart);
    COMPARE_NEAR(sync0->duration, 3.0);
    const auto* optimizer0 = findEvent(result, EventKind::OptimizerStep, 0, 0, -1);
    QVERIFY(optimizer0);
    QCOMPARE(int(optimizer0->stream), 0);
    COMPARE_NEAR(optimizer0->start, syncStart + 3.0);
    const auto* sync1 = findEvent(result, EventKind::GradSync, 1, 1, -1);
    QVERIFY(sync1);
    COMPARE_NEAR(sync1->start, 7.0);
    const auto* optimizer1 = findEvent(result, EventKind::OptimizerStep, 1, 1, -1);
    QVERIFY(optimizer1);
    COMPARE_NEAR(optimizer1->start, 10.0);

    // the totals do not depend on recording
    spec.record_events = false;
    const auto quiet = simulatePipeline(spec);
    COMPARE_NEAR(quiet.step_time, stepTime);
    QVERIFY(quiet.events.empty());
}

void TestSim::gradSyncSerializesChunks()
{
    // Interleaved, pp = 1, vpp = 2, m = 1: rank 0 runs F s0 [0, 1], F s1 [1, 2], B s1 [2, 4], B s0 [4, 6].
    // Stage 1's sync (3 s) runs [4, 7]; stage 0's is ready at 6 but the one DP stream is busy until 7: [7, 10].
    // The optimizer (1 s) follows: [10, 11].
    auto spec = uniformSpec(ScheduleKind::Interleaved1F1B, 1, 2, 1, 1.0, 1.0, 1.0);
    for (auto& stage : spec.stages)
        stage.grad_sync = 3;
    spec.optimizer_step = 1;
    spec.record_events = true;
    const auto result = simulatePipeline(spec);
    COMPARE_NEAR(result.pipeline_time, 6.0);
    COMPARE_NEAR(result.step_time, 11.0);
    const auto* sync1 = findEvent(result, EventKind::GradSync, 0, 1, -1);
    const auto* sync0 = findEvent(result, EventKind::GradSync, 0, 0, -1);
    QVERIFY(sync0 && sync1);
    COMPARE_NEAR(sync1->start, 4.0);
    COMPARE_NEAR(sync0->start, 7.0);
}

void TestSim::eventsSortedAndComplete_data()
{
    QTest::addColumn<ScheduleKind>("kind");
    QTest::addColumn<int>("pp");
    QTest::addColumn<int>("vpp");
    QTest::addColumn<int>("m");
    QTest::newRow("gpipe") << ScheduleKind::GPipe << 4 << 1 << 6;
    QTest::newRow("1f1b") << ScheduleKind::OneFOneB << 4 << 1 << 8;
    QTest::newRow("interleaved") << ScheduleKind::Interleaved1F1B << 4 << 2 << 8;
    QTest::newRow("zb-h1") << ScheduleKind::ZeroBubbleH1 << 4 << 1 << 8;
}

void TestSim::eventsSortedAndComplete()
{
    QFETCH(ScheduleKind, kind);
    QFETCH(int, pp);
    QFETCH(int, vpp);
    QFETCH(int, m);
    auto spec = uniformSpec(kind, pp, vpp, m, 1.0, 0.75, 0.5);
    for (auto& stage : spec.stages) {
        stage.send_forward = 0.1;
        stage.send_backward = 0.2;
        stage.grad_sync = 2;
    }
    spec.optimizer_step = 0.3;
    spec.record_events = true;
    const auto result = simulatePipeline(spec);

    const int stages = pp * vpp;
    const int backwardPasses = kind == ScheduleKind::ZeroBubbleH1 ? 2 : 1;
    const int compute = stages * m * (1 + backwardPasses);
    const int sends = 2 * (stages - 1) * m; // every stage boundary, once each way per micro-batch
    const int perStep = stages + pp; // a grad sync per chunk, an optimizer step per rank
    QCOMPARE(int(result.events.size()), compute + sends + perStep);

    double lastEnd = 0;
    for (std::size_t i = 0; i < result.events.size(); ++i) {
        const auto& e = result.events[i];
        QVERIFY(e.duration > 0);
        QVERIFY(e.start >= 0);
        QCOMPARE(e.stage % pp, e.rank);
        lastEnd = std::max(lastEnd, e.start + e.duration);
        if (i == 0)
            continue;
        const auto& prev = result.events[i - 1];
        QVERIFY(std::tie(prev.rank, prev.stream, prev.start) <= std::tie(e.rank, e.stream, e.start));
        if (prev.rank == e.rank && prev.stream == e.stream)
            QVERIFY(prev.start + prev.duration <= e.start + 1e-12); // a stream runs one thing at a time
    }
    COMPARE_NEAR(result.step_time, lastEnd);
}

void TestSim::noEventsWhenNotRecording()
{
    const auto result = simulatePipeline(uniformSpec(ScheduleKind::OneFOneB, 4, 1, 8, 1, 1, 1));
    QVERIFY(result.events.empty());
    QVERIFY(result.memory.empty());
    QCOMPARE(result.peak_inflight.size(), std::size_t(4));
}

void TestSim::invalidInputThrows_data()
{
    QTest::addColumn<int>("which");
    const char* names[] = {"pp 0",
                           "vpp 0",
                           "m 0",
                           "too few stages",
                           "too many stages",
                           "negative forward",
                           "NaN backward",
                           "infinite send",
                           "negative bytes",
                           "negative overlap",
                           "negative optimizer",
                           "NaN transient",
                           "interleaved vpp 1",
                           "interleaved m % pp",
                           "1f1b vpp 2",
                           "gpipe vpp 2",
                           "zb-h1 vpp 2",
                           "negative pp"};
    for (int i = 0; i < int(std::size(names)); ++i)
        QTest::newRow(names[i]) << i;
}

void TestSim::invalidInputThrows()
{
    QFETCH(int, which);
    auto spec = uniformSpec(ScheduleKind::OneFOneB, 2, 1, 4, 1, 1, 1);
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double inf = std::numeric_limits<double>::infinity();
    const auto interleaved
        = [&](int vpp, int m) { spec = uniformSpec(ScheduleKind::Interleaved1F1B, 2, vpp, m, 1, 1, 1); };
    switch (which) {
    case 0:
        spec.pp = 0;
        break;
    case 1:
        spec.vpp = 0;
        break;
    case 2:
        spec.num_microbatches = 0;
        break;
    case 3:
        spec.stages.pop_back();
        break;
    case 4:
        spec.stages.push_back({});
        break;
    case 5:
        spec.stages[1].forward = -1;
        break;
    case 6:
        spec.stages[0].backward_input = nan;
        break;
    case 7:
        spec.stages[0].send_forward = inf;
        break;
    case 8:
        spec.stages[1].activation_bytes = -5;
        break;
    case 9:
        spec.stages[1].grad_sync_overlap = -0.1;
        break;
    case 10:
        spec.optimizer_step = -1;
        break;
    case 11:
        spec.transient_bytes = nan;
        break;
    case 12:
        interleaved(1, 4);
        break;
    case 13:
        interleaved(2, 3);
        break;
    case 14:
        spec = uniformSpec(ScheduleKind::OneFOneB, 2, 2, 4, 1, 1, 1);
        break;
    case 15:
        spec = uniformSpec(ScheduleKind::GPipe, 2, 2, 4, 1, 1, 1);
        break;
    case 16:
        spec = uniformSpec(ScheduleKind::ZeroBubbleH1, 2, 2, 4, 1, 1, 1);
        break;
    case 17:
        spec.pp = -3;
        break;
    }
    bool thrown = false;
    try {
        simulatePipeline(spec);
    } catch (const InputError& error) {
        thrown = true;
        QVERIFY(std::string(error.what()).size() > 10);
        QVERIFY(!error.hint().empty()); // a way out
    }
    QVERIFY(thrown);
}

void TestSim::invalidScheduleThrows_data()
{
    QTest::addColumn<ScheduleKind>("kind");
    QTest::addColumn<int>("pp");
    QTest::addColumn<int>("vpp");
    QTest::addColumn<int>("m");
    QTest::newRow("pp 0") << ScheduleKind::OneFOneB << 0 << 1 << 4;
    QTest::newRow("m -1") << ScheduleKind::GPipe << 2 << 1 << -1;
    QTest::newRow("interleaved vpp 1") << ScheduleKind::Interleaved1F1B << 4 << 1 << 8;
    QTest::newRow("interleaved m 6 pp 4") << ScheduleKind::Interleaved1F1B << 4 << 2 << 6;
    QTest::newRow("zb-h1 vpp 3") << ScheduleKind::ZeroBubbleH1 << 4 << 3 << 8;
    QTest::newRow("zb-v vpp 3") << ScheduleKind::ZeroBubbleV << 4 << 3 << 8;
    QTest::newRow("dualpipev pp 1") << ScheduleKind::DualPipeV << 1 << 2 << 8;
    QTest::newRow("dualpipev m < 2pp") << ScheduleKind::DualPipeV << 4 << 2 << 7;
    QTest::newRow("dualpipe odd pp") << ScheduleKind::DualPipe << 3 << 2 << 12;
    QTest::newRow("dualpipe odd m") << ScheduleKind::DualPipe << 4 << 2 << 9;
    QTest::newRow("dualpipe m < 2pp") << ScheduleKind::DualPipe << 4 << 2 << 6;
    QTest::newRow("huge") << ScheduleKind::OneFOneB << 1 << 1 << 2000000000;
}

void TestSim::invalidScheduleThrows()
{
    QFETCH(ScheduleKind, kind);
    QFETCH(int, pp);
    QFETCH(int, vpp);
    QFETCH(int, m);
    QVERIFY_THROWS_EXCEPTION(InputError, buildSchedule(kind, pp, vpp, m));
}

void TestSim::stopReturnsEarly()
{
    std::stop_source source;
    source.request_stop();
    auto spec = uniformSpec(ScheduleKind::OneFOneB, 4, 1, 8, 1, 1, 1);
    const auto stopped = simulatePipeline(spec, source.get_token());
    const auto full = simulatePipeline(spec);
    QVERIFY(stopped.pipeline_time < full.pipeline_time);
    QCOMPARE(stopped.busy.size(), std::size_t(4));
    // a token nobody stops changes nothing
    std::stop_source idle;
    COMPARE_NEAR(simulatePipeline(spec, idle.get_token()).step_time, full.step_time);
}

void TestSim::chromeTrace()
{
    // 1F1B, p = 2, m = 2 with sends, grad syncs and an optimizer step: 8 compute events, 2 sends each way,
    // 2 grad syncs and 2 optimizer steps = 16 complete events; 5 metadata events per rank.
    auto spec = uniformSpec(ScheduleKind::OneFOneB, 2, 1, 2, 1.0, 1.0, 1.0);
    for (auto& stage : spec.stages) {
        stage.send_forward = stage.send_backward = 0.25;
        stage.grad_sync = 1;
    }
    spec.optimizer_step = 0.5;
    spec.record_events = true;
    const auto result = simulatePipeline(spec);
    const auto trace = toChromeTrace(result, "llama 1f1b");
    QCOMPARE(trace.at("displayTimeUnit").get<std::string>(), std::string("ms"));
    QCOMPARE(trace.at("otherData").at("title").get<std::string>(), std::string("llama 1f1b"));
    const auto& events = trace.at("traceEvents");
    QVERIFY(events.is_array());

    int complete = 0;
    std::set<std::string> processNames;
    std::set<std::pair<int, std::string>> threadNames;
    std::map<std::string, int> categories;
    for (const auto& e : events) {
        const auto ph = e.at("ph").get<std::string>();
        const int pid = e.at("pid").get<int>();
        QVERIFY(pid == 0 || pid == 1);
        if (ph == "M") {
            const auto name = e.at("name").get<std::string>();
            if (name == "process_name")
                processNames.insert(e.at("args").at("name").get<std::string>());
            else if (name == "thread_name")
                threadNames.insert({e.at("tid").get<int>(), e.at("args").at("name").get<std::string>()});
            continue;
        }
        QCOMPARE(ph, std::string("X"));
        ++complete;
        QVERIFY(e.at("ts").is_number());
        QVERIFY(e.at("dur").get<double>() > 0);
        QVERIFY(e.at("ts").get<double>() >= 0);
        const int tid = e.at("tid").get<int>();
        QVERIFY(tid >= 0 && tid <= 2);
        QVERIFY(e.at("args").contains("stage"));
        QVERIFY(e.at("args").contains("microbatch"));
        ++categories[e.at("cat").get<std::string>()];
    }
    QCOMPARE(complete, 16);
    QCOMPARE(int(events.size()), 16 + 2 * 6);
    QCOMPARE(processNames, (std::set<std::string> {"PP rank 0", "PP rank 1"}));
    QCOMPARE(threadNames,
             (std::set<std::pair<int, std::string>> {{0, "compute"}, {1, "p2p"}, {2, "dp"}, {3, "cp/ep comm"}}));
    QCOMPARE(categories["forward"], 4);
    QCOMPARE(categories["backward"], 4);
    QCOMPARE(categories["send_forward"], 2);
    QCOMPARE(categories["send_backward"], 2);
    QCOMPARE(categories["grad_sync"], 2);
    QCOMPARE(categories["optimizer_step"], 2);

    // rank 1's first forward: F0 of stage 1 starts after F0 on rank 0 (1 s) and its send (0.25 s), lasts 1 s
    bool found = false;
    for (const auto& e : events) {
        if (e.at("ph") == "X" && e.at("name") == "F0 s1") {
            found = true;
            QCOMPARE(e.at("pid").get<int>(), 1);
            QCOMPARE(e.at("tid").get<int>(), 0);
            QVERIFY(near(e.at("ts").get<double>(), 1.25e6));
            QVERIFY(near(e.at("dur").get<double>(), 1e6));
            QCOMPARE(e.at("args").at("stage").get<int>(), 1);
            QCOMPARE(e.at("args").at("microbatch").get<int>(), 0);
        }
    }
    QVERIFY(found);

    // it survives a round trip through text
    const auto reparsed = nlohmann::json::parse(trace.dump());
    QCOMPARE(reparsed.at("traceEvents").size(), events.size());
}

QTEST_APPLESS_MAIN(TestSim)
#include "tst_sim.moc"
