// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/profile/profile.h"

#include <string>
#include <vector>

namespace shardscape {

/** What a profile measured, per kind, for display (CLI `profile show`, the GUI's profile panel). */
struct ProfileKindSummary
{
    std::string kind; ///< matmul, attention, memory, collectives, p2p (the cost source's kinds)
    std::vector<std::string> lines; ///< one per dtype / op / group; empty = not measured (the datasheet is used)
};

/**
 * Per kind: matmul per dtype (shapes, FLOP range, best TFLOP/s), attention per dtype (causal rows, best TFLOP/s of
 * the unmasked count), memory per op (bytes range, best GB/s), collectives and p2p per op and group (ranks, ranks
 * per node, sizes, best bus bandwidth). Numbers in FLOPs, bytes (GB = 1e9) and seconds as the profile holds them.
 */
std::vector<ProfileKindSummary> summarizeProfile(const Profile& profile);

/** A calibration's fitted terms in one line, for the CLI, the planner's profile note and the GUI: "time x0.91
    matmul, x13.14 attention, x0.96 memory-bound, x1.00 communication[, kernels >= 40.0 us]; peak +13.78 GB". */
std::string describeCalibration(const ProfileCalibration& calibration, int digits = 2);

} // namespace shardscape
