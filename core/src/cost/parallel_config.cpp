// SPDX-License-Identifier: MIT
#include "shardscape/cost/parallel_config.h"

#include "shardscape/support/strings.h"

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
    if (eager_kernels)
        text += " eager";
    text += cat(" recompute=", recomputeName(recompute));
    if (recompute == RecomputeKind::Modules)
        text += cat("(", join(recompute_modules, ","), ")");
    if (pp > 1)
        text += cat(" ", scheduleName(schedule));
    if (framework != Framework::Generic)
        text += cat(" [", frameworkName(framework), "]");
    return text;
}

} // namespace shardscape
