// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/sim/schedule.h"

#include <cstdint>
#include <stop_token>
#include <vector>

namespace shardscape {

/** Costs of one virtual stage (model chunk) for one micro-batch. Seconds and bytes. */
struct StageCosts
{
    double forward = 0; ///< seconds, TP communication included
    double backward_input = 0; ///< seconds, input-gradient half of backward (recomputation included)
    double backward_weight = 0; ///< seconds, weight-gradient half
    double send_forward = 0; ///< seconds to ship this stage's output activation to the next stage
    double send_backward = 0; ///< seconds to ship the input gradient back to the previous stage
    double activation_bytes = 0; ///< bytes stashed per in-flight micro-batch until its backward
    double static_bytes = 0; ///< weights, gradients, optimizer states, buffers of this chunk
    /** Seconds of exposed context-parallel and expert all-to-all communication already inside forward /
        backward_input; the timeline shows them on their own lane under the block they belong to. */
    double exposed_comm_forward = 0;
    double exposed_comm_backward = 0;
    double grad_sync = 0; ///< seconds of data-parallel gradient sync for this chunk's weights (whole step)
    /** Seconds before the end of this chunk's last backward at which its gradient sync may start
        (bucketed overlap); 0 = only after the last backward. */
    double grad_sync_overlap = 0;
};

/** What to simulate: the schedule, its shape and per-chunk costs. */
struct PipelineSpec
{
    ScheduleKind schedule = ScheduleKind::OneFOneB;
    int pp = 1;
    int vpp = 1;
    int num_microbatches = 1;
    std::vector<StageCosts> stages; ///< pp * vpp entries, indexed by virtual stage
    double optimizer_step = 0; ///< seconds per rank after its gradient syncs finish
    double transient_bytes = 0; ///< bytes added to every rank's peak (workspace, transient buffers)
    bool record_events = true; ///< false skips the timeline (the planner only needs totals)
    /** The sender's compute waits until its send has arrived (synchronous pipeline p2p); otherwise sends run on
        their own stream beside compute. */
    bool blocking_p2p = false;
};

enum class EventKind : std::uint8_t
{
    Forward,
    Backward,
    BackwardInput,
    BackwardWeight,
    SendForward,
    SendBackward,
    GradSync,
    OptimizerStep,
    /** Exposed CP ring / expert all-to-all time inside a forward or backward, drawn at the end of that block. */
    ExposedComm
};
std::string_view eventKindName(EventKind kind);

/** One box on the timeline. Streams: 0 compute, 1 point-to-point, 2 data-parallel communication. */
struct TimelineEvent
{
    double start = 0; ///< seconds from step start
    double duration = 0; ///< seconds
    std::int32_t rank = 0;
    std::int32_t stage = 0; ///< virtual stage
    std::int32_t microbatch = -1; ///< -1 for per-step events (grad sync, optimizer)
    EventKind kind = EventKind::Forward;
    std::uint8_t stream = 0;
};

/** A point of a rank's memory curve: bytes in use from `time` on. */
struct MemorySample
{
    double time = 0;
    double bytes = 0;
};

struct SimulationResult
{
    double step_time = 0; ///< seconds: last event end over all ranks (optimizer included)
    double pipeline_time = 0; ///< seconds: last compute action end
    /** The pipeline bubble as a share of the step: (pipeline_time - the busiest rank's compute) / step_time, the
        one definition every view shows (Evaluation::bubble_ratio); (p-1)/(m+p-1) for uniform 1F1B or GPipe,
        (p-1)/(vm+p-1) interleaved. */
    double bubble_ratio = 0;
    std::vector<double> busy; ///< per rank: compute seconds
    std::vector<int> peak_inflight; ///< per rank: most micro-batches stashed at once (over its chunks)
    std::vector<double> peak_memory; ///< per rank: bytes (static + stashed activations + transient)
    std::vector<TimelineEvent> events; ///< sorted by (rank, stream, start); empty unless record_events
    std::vector<std::vector<MemorySample>> memory; ///< per rank; empty unless record_events
};

/**
 * Runs the schedule as a discrete-event simulation: each rank executes its actions in order on its
 * compute stream; an action waits for its data dependencies (forward of the previous stage plus the
 * send, backward of the next stage plus the send, its own forward, B before W). Sends use a separate
 * stream per rank. Throws InputError for malformed specs. Returns early (partial result) when stop is requested.
 */
SimulationResult simulatePipeline(const PipelineSpec& spec, std::stop_token stop = {});

} // namespace shardscape
