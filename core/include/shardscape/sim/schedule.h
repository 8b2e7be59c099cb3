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
    ZeroBubbleH1
};

/** "gpipe", "1f1b", "interleaved", "zb-h1" */
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
};

/**
 * The ordered compute actions of each pipeline rank (index = rank). Virtual stage s lives on rank
 * s % pp (Megatron's looped placement). Throws InputError when the combination is invalid
 * (e.g. interleaved with vpp < 2 or num_microbatches not a multiple of pp, vpp > 1 with another schedule).
 */
std::vector<std::vector<Action>> buildSchedule(ScheduleKind kind, int pp, int vpp, int numMicrobatches);

} // namespace shardscape
