// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace shardscape {

/** Pipeline schedules the simulator runs. */
enum class ScheduleKind : std::uint8_t
{
    GPipe,
    OneFOneB,
    Interleaved1F1B,
    ZeroBubbleH1,
    /** Two chunks per rank in a V (rank r holds virtual stages r and 2pp - 1 - r), F, B and W split as PyTorch's
        ScheduleZBVZeroBubble orders them (torch/distributed/pipelining/schedules.py). */
    ZeroBubbleV,
    /** DeepSeek's DualPipe cut in half (DualPipeV, deepseek-ai/DualPipe dualpipev.py; PyTorch ScheduleDualPipeV): the
        V placement of ZB-V, with forward and backward chunks of two micro-batches paired in the steady state so
        that one's communication runs under the other's compute. */
    DualPipeV
};

/** "gpipe", "1f1b", "interleaved", "zb-h1", "zb-v", "dualpipev" */
std::string_view scheduleName(ScheduleKind kind);
std::optional<ScheduleKind> parseSchedule(std::string_view name);

/** One unit of pipeline work. Non-zero-bubble schedules run B and W fused as one Backward action. */
enum class ActionKind : std::uint8_t
{
    Forward,
    Backward,
    BackwardInput,
    BackwardWeight
};

struct Action
{
    ActionKind kind = ActionKind::Forward;
    std::int32_t stage = 0; ///< virtual stage (model chunk) index in [0, pp * vpp)
    std::int32_t microbatch = 0;
    /** A forward overlapped with the backward that follows it (DualPipe's F&B chunk): it starts only when that
        backward's inputs are there too. */
    bool paired = false;
};

/** Whether the schedule places its two chunks per rank in a V (ZB-V, DualPipeV). */
bool isVShaped(ScheduleKind kind);
/** The rank holding virtual stage `stage`: s % pp (Megatron's looped placement), or the V placement (stage s < pp on
    rank s, stage s >= pp on rank 2pp - 1 - s). */
int stageRank(ScheduleKind kind, int pp, int stage);
/** The virtual stage that chunk `chunk` of rank `rank` runs: chunk x pp + rank, or rank / 2pp - 1 - rank in a V. */
int chunkStage(ScheduleKind kind, int pp, int rank, int chunk);
/** Which chunk of its rank virtual stage `stage` is (chunkStage's inverse, with stageRank). */
int stageChunk(ScheduleKind kind, int pp, int stage);

/**
 * The ordered compute actions of each pipeline rank (index = rank), virtual stages placed by stageRank. Throws
 * InputError when the combination is invalid (e.g. interleaved with vpp < 2 or num_microbatches not a multiple of pp,
 * vpp > 1 with another schedule).
 */
std::vector<std::vector<Action>> buildSchedule(ScheduleKind kind, int pp, int vpp, int numMicrobatches);

} // namespace shardscape
