// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/search/planner.h"

namespace shardscape {

/**
 * Reuses the plan saved at config.load_plan_path instead of searching: re-simulates its configuration (with
 * the stage split it was evaluated with) for the current model, cluster and batch, and logs a warning for
 * everything that changed since it was made (nnScaler users were bitten by stale reused plans). The result
 * holds the re-simulated plan in `top` when it fits, else in `infeasible` with the reason.
 */
PlanResult reusePlan(const Problem& problem, const PlannerConfig& config, ProgressSink& progress);

/** plan() or reusePlan(), as config.load_plan_path says: the entry point front ends call. */
PlanResult planOrReuse(const Problem& problem, const PlannerConfig& config, ProgressSink& progress,
                       std::stop_token stop = {});

} // namespace shardscape
