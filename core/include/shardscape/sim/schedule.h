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
    DualPipeV,
    /** DeepSeek's bidirectional DualPipe (deepseek-ai/DualPipe dualpipe.py; DeepSeek-V3 report, Sec. 3.2.1): pp
        stages fed from both ends. Half the micro-batches run stages 0..pp-1 on ranks 0..pp-1, the other half the
        same stages on ranks pp-1..0, so each rank holds two model stages (two copies of the parameters). Virtual
        stages 0..pp-1 are the first direction and pp..2pp-1 the second (stage pp + j is model stage j on rank
        pp - 1 - j, the V placement); each direction is its own chain of pp stages with m / 2 micro-batches. */
    DualPipe
};

/** "gpipe", "1f1b", "interleaved", "zb-h1", "zb-v", "dualpipev", "dualpipe" */
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

/** Whether the schedule places its two chunks per rank in a V (ZB-V, DualPipeV, and DualPipe's two directions). */
bool isVShaped(ScheduleKind kind);
/** Whether the schedule runs one micro-batch's forward beside another's backward, so that each one's expert
    all-to-alls can hide under the other's compute: Megatron's combined 1F1B inside the interleaved schedule, and
    DualPipe(V)'s overlapped F&B chunks. */
bool overlapsMicrobatchPairs(ScheduleKind kind);
/** DualPipe: two pipelines over the same ranks in opposite directions, each through the whole model. */
bool isBidirectional(ScheduleKind kind);
/** Whether virtual stage `stage` receives nothing from a previous stage (the first stage of its direction). */
bool startsChain(ScheduleKind kind, int pp, int stage);
/** Whether virtual stage `stage` is the last of its direction (its forward ends in the loss). */
bool endsChain(ScheduleKind kind, int pp, int vpp, int stage);
/** How the layer split's length is named in messages: "pp" under DualPipe, "pp x vpp" otherwise (layerChunks). */
std::string_view layerChunksName(ScheduleKind kind);
/** Micro-batches that pass through each virtual stage: all of them, or half under DualPipe (one direction each). */
int chainMicrobatches(ScheduleKind kind, int numMicrobatches);
/** Model stages the layers are split into: pp x vpp chunks, or pp under DualPipe (both directions run the same
    pp stages, so virtual stage pp + j holds the layers of stage j). */
int layerChunks(ScheduleKind kind, int pp, int vpp);
/** The model stage (index into the layer split) that virtual stage `stage` runs. */
int layerChunkOf(ScheduleKind kind, int pp, int stage);
/** The rank holding virtual stage `stage`: s % pp (Megatron's looped placement), or the V placement (stage s < pp on
    rank s, stage s >= pp on rank 2pp - 1 - s; also DualPipe's second direction). */
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
