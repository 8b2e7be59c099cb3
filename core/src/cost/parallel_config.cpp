// SPDX-License-Identifier: MIT
#include "shardscape/cost/parallel_config.h"

#include "shardscape/support/strings.h"

#include <cctype>

namespace shardscape {

std::string_view recomputeName(RecomputeKind kind)
{
    switch (kind) {
    case RecomputeKind::None:
        return "none";
    case RecomputeKind::Selective:
        return "selective";
    case RecomputeKind::Full:
        return "full";
    case RecomputeKind::Modules:
        break;
    }
    return "modules";
}

namespace {

/** The runs of consecutive recomputed block indices, as [first, last] pairs in ascending order. */
std::vector<std::pair<long long, long long>> indexRuns(const ParallelConfig& c)
{
    std::vector<std::pair<long long, long long>> runs;
    for (const long long i : recomputedBlocks(c)) {
        if (!runs.empty() && runs.back().second + 1 == i)
            runs.back().second = i;
        else
            runs.emplace_back(i, i);
    }
    return runs;
}

/** "0-4", "10-14", "20" */
std::vector<std::string> blockRuns(const ParallelConfig& c)
{
    std::vector<std::string> text;
    for (const auto& [first, last] : indexRuns(c))
        text.push_back(first == last ? cat(first) : cat(first, "-", last));
    return text;
}

} // namespace

bool recomputesBlockIndices(const ParallelConfig& c)
{
    const auto index = [](const std::string& m) {
        return !m.empty() && m.size() <= 9
            && std::all_of(m.begin(), m.end(), [](unsigned char ch) { return std::isdigit(ch) != 0; });
    };
    return c.recompute == RecomputeKind::Modules && !c.recompute_modules.empty()
        && std::all_of(c.recompute_modules.begin(), c.recompute_modules.end(), index);
}

std::vector<long long> recomputedBlocks(const ParallelConfig& c)
{
    std::vector<long long> indices;
    if (!recomputesBlockIndices(c))
        return indices;
    for (const auto& m : c.recompute_modules)
        indices.push_back(std::stoll(m));
    std::sort(indices.begin(), indices.end());
    indices.erase(std::unique(indices.begin(), indices.end()), indices.end());
    return indices;
}

int recomputedBlocksPerChunk(const ParallelConfig& c)
{
    if (!recomputesBlockIndices(c))
        return 0;
    const auto runs = indexRuns(c);
    const long long n = runs.front().second - runs.front().first + 1;
    const bool prefixes = runs.front().first == 0
        && std::all_of(runs.begin(), runs.end(), [n](const auto& r) { return r.second - r.first + 1 == n; });
    return prefixes ? static_cast<int>(n) : 0;
}

std::string recomputeLabel(const ParallelConfig& c)
{
    if (!recomputesBlockIndices(c))
        return std::string(recomputeName(c.recompute));
    if (const int n = recomputedBlocksPerChunk(c); n > 0)
        return cat("block ", n);
    // Every k-th block from the k-th on (torchtitan's layer SAC on one stage).
    const std::vector<long long> indices = recomputedBlocks(c);
    const long long k = indices.front() + 1;
    bool everyK = k >= 2 && indices.size() >= 2;
    for (std::size_t i = 1; i < indices.size() && everyK; ++i)
        everyK = indices[i] - indices[i - 1] == k;
    if (everyK)
        return cat("1 in ", k, " blocks");
    return cat(c.recompute_modules.size(), " blocks");
}

std::optional<RecomputeKind> parseRecompute(std::string_view name)
{
    for (const auto kind : {RecomputeKind::None, RecomputeKind::Selective, RecomputeKind::Full, RecomputeKind::Modules})
        if (recomputeName(kind) == name)
            return kind;
    return std::nullopt;
}

std::string_view float8RecipeName(Float8Recipe recipe)
{
    return recipe == Float8Recipe::Rowwise ? "rowwise" : "tensorwise";
}

std::optional<Float8Recipe> parseFloat8Recipe(std::string_view name)
{
    for (const auto recipe : {Float8Recipe::Tensorwise, Float8Recipe::Rowwise})
        if (float8RecipeName(recipe) == name)
            return recipe;
    return std::nullopt;
}

std::string ParallelConfig::describe() const
{
    std::string text = cat("tp", tp, " pp", pp, " dp", dp);
    if (cp > 1)
        text += cat(" cp", cp);
    if (ep > 1)
        text += cat(" ep", ep);
    if (etp > 0 && etp != tp)
        text += cat(" etp", etp);
    if (vpp > 1)
        text += cat(" vpp", vpp);
    text += cat(" mb", micro_batch, " m", num_microbatches, " zero", zero_stage);
    if (sequence_parallel)
        text += " sp";
    if (tp_comm_overlap)
        text += " tp-overlap";
    if (overlap_param_gather)
        text += " param-gather-overlap";
    if (moe_a2a_overlap)
        text += " a2a-overlap";
    if (moe_shared_expert_overlap)
        text += " shared-expert-overlap";
    if (moe_capacity_factor > 0)
        text += cat(" capacity", fixed(moe_capacity_factor, 2));
    if (moe_router_imbalance > 1)
        text += cat(" imbalance", fixed(moe_router_imbalance, 2));
    if (fp8_linears)
        text += fp8_recipe == Float8Recipe::Rowwise ? " fp8-linears-rowwise" : " fp8-linears";
    if (fp8_linears && fp8_param_gather)
        text += " fp8-params";
    if (hasFp8Bf16Layers())
        text += cat("(bf16 first ", fp8_bf16_first_layers, " last ", fp8_bf16_last_layers, ")");
    if (grad_reduce_bf16)
        text += " grad-reduce-bf16";
    if (eager_kernels)
        text += " eager";
    text += cat(" recompute=", recomputeName(recompute));
    if (recompute == RecomputeKind::Modules && recomputesBlockIndices(*this)) {
        // The runs name the blocks while they are few; past four chunks, how many runs there are.
        const auto runs = blockRuns(*this);
        text += cat("(", recomputeLabel(*this), ": ", runs.size() <= 4 ? join(runs, ",") : cat(runs.size(), " runs"),
                    ")");
    } else if (recompute == RecomputeKind::Modules)
        text += cat("(", join(recompute_modules, ","), ")");
    if (pp > 1)
        text += cat(" ", scheduleName(schedule));
    if (framework != Framework::Generic)
        text += cat(" [", frameworkName(framework), "]");
    return text;
}

} // namespace shardscape
