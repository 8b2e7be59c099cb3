// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/cost/cost_model.h"
#include "shardscape/search/planner_config.h"

#include <vector>

namespace shardscape {

/** The values each dimension may take, after the config's and the method's restrictions. */
struct SearchSpace
{
    std::vector<int> tp, cp, pp, micro_batch, zero, vpp_interleaved;
    std::vector<RecomputeKind> recompute;
    std::vector<ScheduleKind> schedules; ///< for pp > 1 with vpp = 1
    std::vector<int> ep; ///< MoE only
    int world = 0;
    int gpus_per_node = 0;
    std::int64_t global_batch = 0;
    std::vector<std::string> recompute_modules;
};

/** Builds the space for a model, cluster and config; InputError when the config leaves nothing to search. */
SearchSpace buildSearchSpace(const CostModel& model, const PlannerConfig& config, int world, int gpusPerNode,
                             std::int64_t globalBatch);

/**
 * Every valid combination, in a fixed order (the tie-break of the search, so results do not depend on the
 * thread count). Stage layers are left empty: the planner partitions later.
 */
std::vector<ParallelConfig> enumerateCandidates(const CostModel& model, const SearchSpace& space,
                                                const PlannerConfig& config);

} // namespace shardscape
