// SPDX-License-Identifier: MIT
#include "models/profile_curves.h"

#include "shardscape/profile/nccl_tests_import.h"
#include "shardscape/support/strings.h"

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>

namespace shardscape::ui {

namespace {

void sortByWork(std::vector<CurvePoint>& points)
{
    std::stable_sort(points.begin(), points.end(),
                     [](const CurvePoint& a, const CurvePoint& b) { return a.work < b.work; });
}

/** The cost source's collective for a profile op; nullopt for send_recv (a point-to-point message). */
std::optional<Collective> collectiveOf(const std::string& op)
{
    if (op == "all_reduce")
        return Collective::AllReduce;
    if (op == "all_gather")
        return Collective::AllGather;
    if (op == "reduce_scatter")
        return Collective::ReduceScatter;
    if (op == "all_to_all")
        return Collective::AllToAll;
    return std::nullopt;
}

} // namespace

std::vector<ProfileCurve> matmulCurves(const Profile& profile, const CostSource& datasheet)
{
    std::map<DType, ProfileCurve> byDtype;
    for (const MatmulRow& row : profile.matmul) {
        ProfileCurve& curve = byDtype[row.dtype];
        curve.name = std::string(dtypeName(row.dtype));
        const double flops = row.flops();
        const std::string shape = cat(row.m, " x ", row.n, " x ", row.k);
        curve.measured.push_back({flops, flops / row.time_s / 1e12, shape});
        const double predicted = datasheet.matmulTime(static_cast<double>(row.m), static_cast<double>(row.n),
                                                      static_cast<double>(row.k), row.dtype);
        if (predicted > 0)
            curve.datasheet.push_back({flops, flops / predicted / 1e12, shape});
    }
    std::vector<ProfileCurve> curves;
    for (auto& [dtype, curve] : byDtype) {
        sortByWork(curve.measured);
        sortByWork(curve.datasheet);
        curves.push_back(std::move(curve));
    }
    return curves;
}

std::vector<ProfileCurve> collectiveCurves(const Profile& profile, const CostSource& datasheet)
{
    // Keyed like the profile's own order (op in FORMAT.md order, then ranks, ranks per node).
    const auto& ops = profileCollectiveOps();
    std::map<std::tuple<std::ptrdiff_t, int, int>, ProfileCurve> groups;
    for (const CollectiveRow& row : profile.collectives) {
        const auto op = std::find(ops.begin(), ops.end(), row.op) - ops.begin();
        ProfileCurve& curve = groups[{op, row.ranks, row.ranks_per_node}];
        curve.name = cat(row.op, " ", row.ranks, " ranks (", row.ranks_per_node, " per node)");
        const double factor = ncclBusBandwidthFactor(row.op, row.ranks);
        const std::string size = humanBytes(row.bytes);
        curve.measured.push_back({row.bytes, row.bytes / row.time_s / 1e9 * factor, size});
        const auto kind = collectiveOf(row.op);
        const double predicted = kind ? datasheet.collectiveTime(*kind, row.bytes, {row.ranks, row.ranks_per_node})
                                      : datasheet.p2pTime(row.bytes, row.ranks_per_node < row.ranks);
        if (predicted > 0)
            curve.datasheet.push_back({row.bytes, row.bytes / predicted / 1e9 * factor, size});
    }
    std::vector<ProfileCurve> curves;
    for (auto& [key, curve] : groups) {
        sortByWork(curve.measured);
        sortByWork(curve.datasheet);
        curves.push_back(std::move(curve));
    }
    return curves;
}

} // namespace shardscape::ui
