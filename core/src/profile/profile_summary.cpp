// SPDX-License-Identifier: MIT
#include "shardscape/profile/profile_summary.h"

#include "shardscape/support/strings.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace shardscape {

namespace {

/** Rows, smallest and largest work, best rate (work per second) of one group. */
struct Range
{
    int rows = 0;
    double min = 0;
    double max = 0;
    double best = 0;

    void add(double work, double seconds)
    {
        min = rows == 0 ? work : std::min(min, work);
        max = rows == 0 ? work : std::max(max, work);
        best = std::max(best, work / seconds);
        ++rows;
    }
};

std::string plural(int n, const char* what)
{
    return cat(n, " ", what, n == 1 ? "" : "s");
}

} // namespace

std::vector<ProfileKindSummary> summarizeProfile(const Profile& profile)
{
    std::vector<ProfileKindSummary> out {
        {"matmul", {}}, {"attention", {}}, {"memory", {}}, {"collectives", {}}, {"p2p", {}}};

    std::map<DType, Range> matmul;
    for (const auto& r : profile.matmul)
        matmul[r.dtype].add(r.flops(), r.time_s);
    for (const auto& [dtype, range] : matmul)
        out[0].lines.push_back(cat(dtypeName(dtype), ": ", plural(range.rows, "shape"), ", ", scientific(range.min, 2),
                                   " .. ", scientific(range.max, 2), " FLOPs, up to ", fixed(range.best / 1e12, 1),
                                   " TFLOP/s"));

    std::map<std::pair<DType, bool>, Range> attention;
    for (const auto& r : profile.attention)
        attention[{r.dtype, r.causal}].add(r.flops, r.time_s);
    for (const auto& [key, range] : attention)
        out[1].lines.push_back(cat(dtypeName(key.first), key.second ? " causal" : " full (not used)", ": ",
                                   plural(range.rows, "row"), ", ", scientific(range.min, 2), " .. ",
                                   scientific(range.max, 2), " FLOPs (unmasked), up to ", fixed(range.best / 1e12, 1),
                                   " TFLOP/s"));

    std::map<std::string, Range> memory;
    for (const auto& r : profile.memory_ops)
        memory[r.op].add(r.bytes, r.time_s);
    for (const auto& [op, range] : memory)
        out[2].lines.push_back(cat(op, ": ", plural(range.rows, "size"), ", ", humanBytes(range.min), " .. ",
                                   humanBytes(range.max), ", up to ", fixed(range.best / 1e9, 1), " GB/s"));

    std::map<std::tuple<std::string, int, int>, std::pair<Range, double>> groups;
    for (const auto& r : profile.collectives) {
        auto& [range, busbw] = groups[{r.op, r.ranks, r.ranks_per_node}];
        range.add(r.bytes, r.time_s);
        busbw = std::max(busbw, r.busbw_gb_per_s);
    }
    for (const auto& [key, value] : groups) {
        const auto& [op, ranks, perNode] = key;
        const auto& [range, busbw] = value;
        std::string line = cat(op, ", ", ranks, " ranks (", perNode, " per node): ", plural(range.rows, "size"), ", ",
                               humanBytes(range.min), " .. ", humanBytes(range.max));
        if (busbw > 0)
            line += cat(", bus bandwidth up to ", fixed(busbw, 1), " GB/s");
        out[op == "send_recv" ? 4 : 3].lines.push_back(std::move(line));
    }
    return out;
}

std::string describeCalibration(const ProfileCalibration& c, int digits)
{
    return cat("time x", fixed(c.matmul_time_scale, digits), " matmul, x", fixed(c.attention_time_scale, digits),
               " attention, x", fixed(c.memory_time_scale, digits), " memory-bound, x",
               fixed(c.collective_time_scale, digits), " communication",
               c.kernel_floor_s > 0 ? cat(", kernels >= ", fixed(c.kernel_floor_s * 1e6, 1), " us") : std::string(),
               "; peak ", c.memory_offset_bytes >= 0 ? "+" : "", fixed(c.memory_offset_bytes / 1e9, 2), " GB");
}

} // namespace shardscape
