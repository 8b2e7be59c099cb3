// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/profile/profile.h"

#include <cstdint>
#include <filesystem>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace shardscape {

/** One line of an nccl-tests table: the out-of-place group, or the in-place one when out-of-place is blank. */
struct NcclTestsResult
{
    double bytes = 0; ///< the `size` column (B): the whole buffer
    std::int64_t count = 0; ///< the `count` column (elements)
    std::string type; ///< nccl-tests' name: float, bfloat16, half, int8, ...
    double time_us = 0; ///< microseconds, as logged
    double algbw_gb_s = 0; ///< GB/s (1e9 bytes), as logged (2 decimals: 0.00 for small sizes)
    double busbw_gb_s = 0; ///< GB/s, as logged
    bool in_place = false; ///< the values come from the in-place group
};

/** One run of an nccl-tests binary (one "Collective test starting" section, or one -J JSON file). */
struct NcclTestsRun
{
    std::string program; ///< "all_reduce_perf", from the log, the JSON's args or the file name
    std::string op; ///< the profile's op: all_reduce, all_gather, reduce_scatter, all_to_all, send_recv
    int ranks = 0;
    int ranks_per_node = 0;
    std::string device_name; ///< from the "#  Rank" lines / "device_info"; empty when not stated
    std::vector<NcclTestsResult> results;
    std::vector<std::string> notes; ///< rows skipped and why, how ranks per node was inferred
};

/**
 * Parses the text output of all_reduce_perf, all_gather_perf, reduce_scatter_perf, alltoall_perf or sendrecv_perf
 * (several runs may follow each other; mpirun --tag-output prefixes are removed). Columns are located by the table
 * header, so the -S timestamp and other extra columns, the older layouts without `redop`/`root` and `error` instead
 * of `#wrong` all read; `N/A` in #wrong (-c 0) is accepted, a row with wrong elements is skipped with a note. The op
 * comes from "# Collective test starting: <name>_perf", else from `fileName`. Ranks: the "#  Rank" lines (the highest
 * rank + 1 when lines are elided), else nThread x nGpus; ranks per node: the most ranks on one host (`on <host>`),
 * or the highest device index + 1 when lines are elided. Throws InputError naming the file and line when the log
 * cannot be read (no table, an op the cost model does not use, one rank, rank 0 listed twice: tests built without
 * MPI=1 running alone).
 */
std::vector<NcclTestsRun> parseNcclTestsText(std::string_view text, std::string_view fileName);

/** The same from the `-J file.json` output (nccl-tests' util.cu layout: config, devices, results). */
NcclTestsRun parseNcclTestsJson(const nlohmann::json& doc, std::string_view fileName);

/** Reads a log file (JSON when it starts with '{', text otherwise; at most kMaxProfileBytes). */
std::vector<NcclTestsRun> readNcclTestsFile(const std::filesystem::path& file);

/** nccl-tests' type names as DType: float f32, half f16, bfloat16 bf16, double f64, int8 i8, uint8 u8, (u)int32 i32,
    (u)int64 i64 (same width), f8e4m3/f8e5m2 fp8. InputError for others. */
DType ncclTestsDType(std::string_view type);

/**
 * The profile rows of a run: time_s = time_us / 1e6 and busbw = bytes / time_s / 1e9 * factor (2(n-1)/n for
 * all_reduce, (n-1)/n for all_gather, reduce_scatter and all_to_all, 1 for send_recv), so busbw is exact rather than
 * the logged 2-decimal figure. `source` is "nccl-tests:<file name>".
 */
std::vector<CollectiveRow> collectiveRows(const NcclTestsRun& run, std::string_view fileName);

/** nccl-tests' bus-bandwidth factor (doc/PERFORMANCE.md): busbw = algbw * factor, 2(n-1)/n for all_reduce, 1 for
    send_recv, (n-1)/n for the others; `op` is a profile op name, `ranks` >= 1. */
double ncclBusBandwidthFactor(std::string_view op, int ranks);

struct MergeCounts
{
    int added = 0;
    int replaced = 0;
};

/** Adds `rows` to the profile, replacing rows with the same op, bytes, ranks and ranks_per_node; keeps the
    collectives sorted by op, ranks, ranks_per_node and bytes. */
MergeCounts mergeCollectives(Profile& profile, const std::vector<CollectiveRow>& rows);

} // namespace shardscape
