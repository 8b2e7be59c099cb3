// SPDX-License-Identifier: MIT
#include "shardscape/sim/simulator.h"

#include "shardscape/support/error.h"
#include "shardscape/support/strings.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string>

namespace shardscape {

namespace {

constexpr double kNotYet = -1; // every time in a step is >= 0

constexpr std::uint8_t kComputeStream = 0;
constexpr std::uint8_t kP2pStream = 1;
constexpr std::uint8_t kDataParallelStream = 2;
constexpr std::uint8_t kExposedCommStream = 3;
constexpr int kStreamCount = 4;

void checkCost(double value, const char* field, std::size_t stage)
{
    if (!std::isfinite(value) || value < 0)
        throw InputError(cat("stage ", stage, " has an invalid ", field, " (", value, ")"),
                         "costs must be finite and non-negative; check the cost model inputs");
}

void checkSpec(const PipelineSpec& spec)
{
    const std::size_t expected = std::size_t(spec.pp) * std::size_t(spec.vpp);
    if (spec.stages.size() != expected)
        throw InputError(cat("the pipeline has pp x vpp = ", expected, " virtual stages but ", spec.stages.size(),
                             " stage costs were given"),
                         "give one StageCosts per virtual stage");
    for (std::size_t s = 0; s < spec.stages.size(); ++s) {
        const StageCosts& c = spec.stages[s];
        checkCost(c.forward, "forward time", s);
        checkCost(c.backward_input, "backward_input time", s);
        checkCost(c.backward_weight, "backward_weight time", s);
        checkCost(c.send_forward, "send_forward time", s);
        checkCost(c.send_backward, "send_backward time", s);
        checkCost(c.activation_bytes, "activation_bytes", s);
        checkCost(c.static_bytes, "static_bytes", s);
        checkCost(c.exposed_comm_forward, "exposed_comm_forward time", s);
        checkCost(c.exposed_comm_backward, "exposed_comm_backward time", s);
        if (c.exposed_comm_forward > c.forward || c.exposed_comm_backward > c.backward_input)
            throw InputError(cat("stage ", s, " has more exposed communication than the time it is part of"),
                             "exposed_comm_forward / _backward are parts of forward / backward_input");
        checkCost(c.grad_sync, "grad_sync time", s);
        checkCost(c.grad_sync_overlap, "grad_sync_overlap", s);
    }
    if (!std::isfinite(spec.optimizer_step) || spec.optimizer_step < 0)
        throw InputError(cat("invalid optimizer step time (", spec.optimizer_step, ")"),
                         "it must be finite and non-negative seconds");
    if (!std::isfinite(spec.transient_bytes) || spec.transient_bytes < 0)
        throw InputError(cat("invalid transient bytes (", spec.transient_bytes, ")"),
                         "they must be finite and non-negative");
}

EventKind eventKindOf(ActionKind kind)
{
    switch (kind) {
    case ActionKind::Forward:
        return EventKind::Forward;
    case ActionKind::Backward:
        return EventKind::Backward;
    case ActionKind::BackwardInput:
        return EventKind::BackwardInput;
    case ActionKind::BackwardWeight:
        return EventKind::BackwardWeight;
    }
    return EventKind::Forward;
}

/**
 * One simulation run. Every rank executes its action list in order; an action starts at the later of its
 * rank's compute stream becoming free and its inputs arriving. Because the order on each rank is fixed,
 * start times do not depend on the order in which ranks are advanced, so the loop simply advances each
 * rank as far as its dependencies allow, sweeping over the ranks, until every action has run:
 * O(actions + sweeps x pp), with no event queue and no allocation per action.
 */
class Simulation
{
public:
    Simulation(const PipelineSpec& spec, std::vector<std::vector<Action>> schedule)
        : m_spec(spec)
        , m_schedule(std::move(schedule))
        , m_pp(spec.pp)
        , m_stageCount(spec.pp * spec.vpp)
        , m_microbatches(spec.num_microbatches)
        , m_record(spec.record_events)
    {
        const std::size_t slots = std::size_t(m_stageCount) * std::size_t(m_microbatches);
        m_slots.assign(slots, Slot {});
        m_lastBackwardStart.assign(std::size_t(m_stageCount), 0.0);
        m_lastBackwardEnd.assign(std::size_t(m_stageCount), 0.0);

        const auto ranks = std::size_t(m_pp);
        m_cursor.assign(ranks, 0);
        m_computeFree.assign(ranks, 0.0);
        m_p2pFree.assign(ranks, 0.0);
        m_stashBytes.assign(ranks, 0.0);
        m_peakStashBytes.assign(ranks, 0.0);
        m_inflight.assign(ranks, 0);
        m_staticBytes.assign(ranks, spec.transient_bytes);
        m_rankOf.resize(std::size_t(m_stageCount));
        m_startsChain.resize(std::size_t(m_stageCount));
        m_endsChain.resize(std::size_t(m_stageCount));
        for (int s = 0; s < m_stageCount; ++s) {
            m_startsChain[std::size_t(s)] = startsChain(spec.schedule, m_pp, s);
            m_endsChain[std::size_t(s)] = endsChain(spec.schedule, m_pp, spec.vpp, s);
            m_rankOf[std::size_t(s)] = stageRank(spec.schedule, m_pp, s);
            m_staticBytes[std::size_t(m_rankOf[std::size_t(s)])] += spec.stages[std::size_t(s)].static_bytes;
        }

        m_result.busy.assign(ranks, 0.0);
        m_result.peak_inflight.assign(ranks, 0);
        m_result.peak_memory.assign(ranks, 0.0);
        if (m_record) {
            std::size_t actions = 0;
            for (const auto& list : m_schedule)
                actions += list.size();
            // compute actions, at most one send each, then a grad sync per chunk and an optimizer step per rank
            m_events.reserve(2 * actions + std::size_t(m_stageCount) + ranks);
            m_result.memory.resize(ranks);
            for (std::size_t r = 0; r < ranks; ++r) {
                m_result.memory[r].reserve(2 * std::size_t(m_microbatches * spec.vpp) + 1);
                m_result.memory[r].push_back({0.0, m_staticBytes[r]});
            }
        }
    }

    SimulationResult run(const std::stop_token& stop)
    {
        std::size_t remaining = 0;
        for (const auto& list : m_schedule)
            remaining += list.size();
        // Forwards flow from rank 0 down and backwards flow back up, so sweeping the ranks alternately in both
        // directions lets each kind travel the whole pipeline in one sweep.
        bool down = true;
        while (remaining > 0) {
            std::size_t progressed = 0;
            for (int i = 0; i < m_pp; ++i) {
                if (stop.stop_requested())
                    return finish(false);
                progressed += advance(down ? i : m_pp - 1 - i);
            }
            down = !down;
            if (progressed == 0)
                throw std::logic_error("pipeline schedule deadlocks: no rank can run its next action");
            remaining -= progressed;
        }
        for (int r = 0; r < m_pp; ++r)
            finishRank(r);
        return finish(true);
    }

private:
    std::size_t slot(int stage, int microbatch) const
    {
        return std::size_t(stage) * std::size_t(m_microbatches) + std::size_t(microbatch);
    }

    /** When the action's inputs are all there, or kNotYet. */
    double readyAt(const Action& action, std::size_t here) const
    {
        switch (action.kind) {
        case ActionKind::Forward:
            return m_startsChain[std::size_t(action.stage)] ? 0.0
                                                            : m_slots[here - std::size_t(m_microbatches)].forwardOut;
        case ActionKind::Backward:
        case ActionKind::BackwardInput: {
            const double forward = m_slots[here].forwardEnd;
            if (forward < 0 || m_endsChain[std::size_t(action.stage)])
                return forward;
            const double gradient = m_slots[here + std::size_t(m_microbatches)].backwardOut;
            return gradient < 0 ? kNotYet : std::max(forward, gradient);
        }
        case ActionKind::BackwardWeight:
            return m_slots[here].backwardEnd;
        }
        return kNotYet;
    }

    /** Runs rank r's next actions while their inputs are available; returns how many ran. */
    std::size_t advance(int r)
    {
        const auto rank = std::size_t(r);
        const auto& actions = m_schedule[rank];
        std::size_t& cursor = m_cursor[rank];
        const std::size_t first = cursor;
        while (cursor < actions.size()) {
            const Action& action = actions[cursor];
            const std::size_t here = slot(action.stage, action.microbatch);
            double ready = readyAt(action, here);
            // A paired forward starts with the backward after it, once both have their inputs (DualPipe's
            // overlapped chunk waits for both receives before computing either).
            if (ready >= 0 && action.paired && cursor + 1 < actions.size()) {
                const Action& partner = actions[cursor + 1];
                const double partnerReady = readyAt(partner, slot(partner.stage, partner.microbatch));
                ready = partnerReady < 0 ? kNotYet : std::max(ready, partnerReady);
            }
            if (ready < 0)
                return cursor - first;
            execute(r, action, here, ready);
            ++cursor;
        }
        return cursor - first;
    }

    void execute(int r, const Action& action, std::size_t here, double ready)
    {
        const auto rank = std::size_t(r);
        const StageCosts& costs = m_spec.stages[std::size_t(action.stage)];
        const double start = std::max(m_computeFree[rank], ready);
        double duration = 0;
        switch (action.kind) {
        case ActionKind::Forward:
            duration = costs.forward;
            stash(r, start, costs.activation_bytes);
            break;
        case ActionKind::Backward:
            duration = costs.backward_input + costs.backward_weight;
            break;
        case ActionKind::BackwardInput:
            duration = costs.backward_input;
            break;
        case ActionKind::BackwardWeight:
            duration = costs.backward_weight;
            break;
        }
        const double end = start + duration;
        m_computeFree[rank] = end;
        m_result.busy[rank] += duration;
        if (m_record) {
            m_events.push_back(
                {start, duration, r, action.stage, action.microbatch, eventKindOf(action.kind), kComputeStream});
            const double comm = action.kind == ActionKind::Forward ? costs.exposed_comm_forward
                : action.kind == ActionKind::BackwardWeight        ? 0.0
                                                                   : costs.exposed_comm_backward;
            if (comm > 0)
                m_events.push_back(
                    {end - comm, comm, r, action.stage, action.microbatch, EventKind::ExposedComm, kExposedCommStream});
        }

        switch (action.kind) {
        case ActionKind::Forward:
            m_slots[here].forwardEnd = end;
            if (!m_endsChain[std::size_t(action.stage)])
                m_slots[here].forwardOut = onSameRank(action.stage + 1, r)
                    ? end
                    : send(r, action, end, costs.send_forward, EventKind::SendForward);
            break;
        case ActionKind::Backward:
        case ActionKind::BackwardInput:
            m_slots[here].backwardEnd = end;
            if (!m_startsChain[std::size_t(action.stage)])
                m_slots[here].backwardOut = onSameRank(action.stage - 1, r)
                    ? end
                    : send(r, action, end, costs.send_backward, EventKind::SendBackward);
            if (action.kind == ActionKind::Backward)
                lastBackward(r, action, start, end, costs.activation_bytes);
            break;
        case ActionKind::BackwardWeight:
            lastBackward(r, action, start, end, costs.activation_bytes);
            break;
        }
    }

    /** Whether virtual stage `stage` runs on rank r (the turn of a V: nothing crosses a link). */
    bool onSameRank(int stage, int r) const { return m_rankOf[std::size_t(stage)] == r; }

    /** Ships a result to the neighbouring stage on rank r's p2p stream; returns when it arrives. */
    double send(int r, const Action& action, double ready, double duration, EventKind kind)
    {
        double& free = m_p2pFree[std::size_t(r)];
        const double start = std::max(free, ready);
        free = start + duration;
        if (m_spec.blocking_p2p)
            m_computeFree[std::size_t(r)] = std::max(m_computeFree[std::size_t(r)], free);
        if (m_record && duration > 0)
            m_events.push_back({start, duration, r, action.stage, action.microbatch, kind, kP2pStream});
        return free;
    }

    void stash(int r, double time, double bytes)
    {
        const auto rank = std::size_t(r);
        m_stashBytes[rank] += bytes;
        m_peakStashBytes[rank] = std::max(m_peakStashBytes[rank], m_stashBytes[rank]);
        m_result.peak_inflight[rank] = std::max(m_result.peak_inflight[rank], ++m_inflight[rank]);
        if (m_record)
            sample(rank, time);
    }

    /** The micro-batch's last backward pass on this chunk: frees its activations, may start grad sync. */
    void lastBackward(int r, const Action& action, double start, double end, double bytes)
    {
        const auto rank = std::size_t(r);
        m_stashBytes[rank] -= bytes;
        if (--m_inflight[rank] == 0)
            m_stashBytes[rank] = 0; // no rounding drift once nothing is stashed
        // The rank's actions on a chunk run in order, so the last one seen is the chunk's last backward.
        m_lastBackwardStart[std::size_t(action.stage)] = start;
        m_lastBackwardEnd[std::size_t(action.stage)] = end;
        if (m_record)
            sample(rank, end);
    }

    /** Appends a point to the rank's memory step function, merging points at the same time. */
    void sample(std::size_t rank, double time)
    {
        auto& curve = m_result.memory[rank];
        const double bytes = m_staticBytes[rank] + m_stashBytes[rank];
        if (curve.back().time == time) {
            curve.back().bytes = bytes;
            if (curve.size() >= 2 && curve[curve.size() - 2].bytes == bytes)
                curve.pop_back();
        } else if (curve.back().bytes != bytes) {
            curve.push_back({time, bytes});
        }
    }

    /** Gradient syncs on the rank's data-parallel stream, in the order they become ready, then the optimizer. */
    void finishRank(int r)
    {
        const auto rank = std::size_t(r);
        struct Pending
        {
            double ready;
            int stage;
        };
        // vpp is small (a handful of chunks), so a fixed-size insertion sort beats any allocation.
        constexpr int kInline = 16;
        Pending inlineBuffer[kInline];
        std::vector<Pending> heapBuffer;
        Pending* pending = inlineBuffer;
        const int chunks = m_spec.vpp;
        if (chunks > kInline) {
            heapBuffer.resize(std::size_t(chunks));
            pending = heapBuffer.data();
        }
        int count = 0;
        for (int c = 0; c < chunks; ++c) {
            const int s = chunkStage(m_spec.schedule, m_pp, r, c);
            const StageCosts& costs = m_spec.stages[std::size_t(s)];
            if (costs.grad_sync <= 0)
                continue;
            const double ready = std::max(m_lastBackwardEnd[std::size_t(s)] - costs.grad_sync_overlap,
                                          m_lastBackwardStart[std::size_t(s)]);
            int i = count++;
            while (i > 0 && pending[i - 1].ready > ready) {
                pending[i] = pending[i - 1];
                --i;
            }
            pending[i] = {ready, s};
        }
        double dpFree = 0;
        for (int i = 0; i < count; ++i) {
            const double duration = m_spec.stages[std::size_t(pending[i].stage)].grad_sync;
            const double start = std::max(dpFree, pending[i].ready);
            dpFree = start + duration;
            if (m_record)
                m_events.push_back(
                    {start, duration, r, pending[i].stage, -1, EventKind::GradSync, kDataParallelStream});
        }
        const double computeEnd = m_computeFree[rank];
        const double optimizerStart = std::max(computeEnd, dpFree);
        const double optimizerEnd = optimizerStart + m_spec.optimizer_step;
        if (m_record && m_spec.optimizer_step > 0)
            m_events.push_back(
                {optimizerStart, m_spec.optimizer_step, r, r, -1, EventKind::OptimizerStep, kComputeStream});
        m_result.step_time = std::max({m_result.step_time, optimizerEnd, m_p2pFree[rank], dpFree});
    }

    SimulationResult finish(bool complete)
    {
        double pipelineTime = 0;
        for (double free : m_computeFree)
            pipelineTime = std::max(pipelineTime, free);
        m_result.pipeline_time = pipelineTime;
        if (!complete)
            m_result.step_time = std::max(m_result.step_time, pipelineTime);

        double busiest = 0;
        for (std::size_t r = 0; r < m_result.busy.size(); ++r) {
            busiest = std::max(busiest, m_result.busy[r]);
            m_result.peak_memory[r] = m_staticBytes[r] + m_peakStashBytes[r];
        }
        // The busiest rank's wait inside the pipeline, as a share of the step (the time breakdown's pp_bubble).
        m_result.bubble_ratio = m_result.step_time > 0 ? std::max(0.0, pipelineTime - busiest) / m_result.step_time : 0;

        if (m_record)
            m_result.events = sortedEvents();
        return std::move(m_result);
    }

    /** Events of one (rank, stream) were appended in start order, so a stable counting sort by (rank, stream) is
        enough to order them by (rank, stream, start). */
    std::vector<TimelineEvent> sortedEvents() const
    {
        std::vector<std::size_t> offsets(std::size_t(m_pp) * kStreamCount + 1, 0);
        const auto key = [](const TimelineEvent& e) { return std::size_t(e.rank) * kStreamCount + e.stream; };
        for (const auto& e : m_events)
            ++offsets[key(e) + 1];
        for (std::size_t i = 1; i < offsets.size(); ++i)
            offsets[i] += offsets[i - 1];
        std::vector<TimelineEvent> sorted(m_events.size());
        for (const auto& e : m_events)
            sorted[offsets[key(e)]++] = e;
        return sorted;
    }

    const PipelineSpec& m_spec;
    const std::vector<std::vector<Action>> m_schedule;
    const int m_pp;
    const int m_stageCount;
    const int m_microbatches;
    const bool m_record;

    /** When F and B (or the fused backward) of one (stage, microbatch) ended, and when their result reached
        the neighbouring stage (after the send); kNotYet until then. Kept together: one cache line per lookup. */
    struct Slot
    {
        double forwardEnd = kNotYet;
        double forwardOut = kNotYet;
        double backwardEnd = kNotYet;
        double backwardOut = kNotYet;
    };
    std::vector<Slot> m_slots; ///< index stage * microbatches + microbatch
    // per stage: start and end of the chunk's latest weight-gradient pass (W or fused backward)
    std::vector<double> m_lastBackwardStart;
    std::vector<double> m_lastBackwardEnd;

    // per rank
    std::vector<std::size_t> m_cursor;
    std::vector<double> m_computeFree;
    std::vector<double> m_p2pFree;
    std::vector<double> m_stashBytes;
    std::vector<double> m_peakStashBytes;
    std::vector<int> m_inflight;
    std::vector<double> m_staticBytes; ///< static bytes of the rank's chunks plus transient bytes
    std::vector<int> m_rankOf; ///< per virtual stage: the rank that runs it
    // per virtual stage: first / last of its direction (every stage but the ends has both neighbours; DualPipe has
    // two directions, so two of each)
    std::vector<bool> m_startsChain;
    std::vector<bool> m_endsChain;

    std::vector<TimelineEvent> m_events;
    SimulationResult m_result;
};

} // namespace

std::string_view eventKindName(EventKind kind)
{
    switch (kind) {
    case EventKind::Forward:
        return "forward";
    case EventKind::Backward:
        return "backward";
    case EventKind::BackwardInput:
        return "backward_input";
    case EventKind::BackwardWeight:
        return "backward_weight";
    case EventKind::SendForward:
        return "send_forward";
    case EventKind::SendBackward:
        return "send_backward";
    case EventKind::GradSync:
        return "grad_sync";
    case EventKind::OptimizerStep:
        return "optimizer_step";
    case EventKind::ExposedComm:
        return "exposed_comm";
    }
    return "unknown";
}

SimulationResult simulatePipeline(const PipelineSpec& spec, std::stop_token stop)
{
    // buildSchedule checks pp, vpp and the micro-batch count before the stage list is sized against them.
    auto schedule = buildSchedule(spec.schedule, spec.pp, spec.vpp, spec.num_microbatches);
    checkSpec(spec);
    return Simulation(spec, std::move(schedule)).run(stop);
}

} // namespace shardscape
