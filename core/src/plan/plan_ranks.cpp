// SPDX-License-Identifier: MIT
#include "plan_ranks.h"

#include <algorithm>

namespace shardscape::plan_ranks {

std::vector<std::string> splitRankOrder(const std::string& order)
{
    std::vector<std::string> dims;
    std::size_t start = 0;
    for (;;) {
        const auto dash = order.find('-', start);
        dims.push_back(order.substr(start, dash - start));
        if (dash == std::string::npos)
            break;
        start = dash + 1;
    }
    return dims;
}

bool isRankOrder(const std::string& order)
{
    auto dims = splitRankOrder(order);
    std::sort(dims.begin(), dims.end());
    return dims == std::vector<std::string> {"cp", "dp", "pp", "tp"};
}

std::vector<std::int64_t> stageRanks(const ParallelConfig& c, int stage)
{
    const auto sizeOf = [&c](const std::string& dim) -> std::int64_t {
        return dim == "tp" ? c.tp : dim == "cp" ? c.cp : dim == "dp" ? c.dp : c.pp;
    };
    std::vector<std::int64_t> sizes;
    std::vector<std::int64_t> strides;
    std::int64_t ppStride = 0;
    std::int64_t stride = 1;
    for (const auto& dim : splitRankOrder(c.rank_order)) {
        if (dim == "pp") {
            ppStride = stride;
        } else {
            sizes.push_back(sizeOf(dim));
            strides.push_back(stride);
        }
        stride *= sizeOf(dim);
    }
    std::vector<std::int64_t> ranks;
    std::vector<std::int64_t> coord(sizes.size(), 0);
    const std::int64_t base = std::int64_t {stage} * ppStride;
    for (;;) {
        std::int64_t rank = base;
        for (std::size_t d = 0; d < sizes.size(); ++d)
            rank += coord[d] * strides[d];
        ranks.push_back(rank);
        std::size_t d = 0;
        while (d < sizes.size() && ++coord[d] == sizes[d])
            coord[d++] = 0;
        if (d == sizes.size())
            break;
    }
    std::sort(ranks.begin(), ranks.end());
    return ranks;
}

} // namespace shardscape::plan_ranks
