// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/profile/profile.h"

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace shardscape {

/** What importNcclTestsLogs wrote. */
struct NcclImportResult
{
    std::filesystem::path file; ///< the profile written
    Profile profile; ///< as saved
    /** Per run: "<log>: all_reduce_perf, 16 ranks (8 per node), 31 sizes 8 B .. 8.59 GB: 31 added, 0 replaced",
        followed by the run's notes as "  note: ..." (the CLI prints them as they are). */
    std::vector<std::string> lines;
    int added = 0;
    int replaced = 0;
};

/**
 * Adds the results of nccl-tests logs (text or -J JSON) to the profile in `profileDir` (profile.json, created when
 * missing; empty = defaultProfileDir() of the GPU the logs name) and saves it atomically. Every log is read before
 * anything is written, so a bad one leaves the profile untouched; logs of different GPUs, a profile of another GPU,
 * and a corrupt or other-version profile (never overwritten) are InputErrors naming the cause and a way out.
 * `deviceName` (may be empty) names the GPU when the logs do not; `tool` is recorded in a new profile.
 */
NcclImportResult importNcclTestsLogs(const std::vector<std::filesystem::path>& logs,
                                     const std::filesystem::path& profileDir, std::string_view deviceName,
                                     std::string_view tool);

} // namespace shardscape
