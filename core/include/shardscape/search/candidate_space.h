// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/cost/cost_model.h"
#include "shardscape/search/planner_config.h"

#include <vector>

namespace shardscape {

/** The values each dimension may take, after the config's and the method's restrictions. */
struct SearchSpace
{
    std::vector<int> tp, cp, pp, micro_batch, zero;
    /** Interleaving depths the schedule list admits ({} = no interleaved schedule). For a pp, every depth v >= 2
        whose pp x v chunks split the blocks evenly is searched (80 blocks on 4 stages: 2, 4, 5, 10, 20); this list
        gives the ones shown in the log. */
    std::vector<int> vpp_interleaved;
    std::vector<RecomputeKind> recompute;
    std::vector<ScheduleKind> schedules; ///< for pp > 1 with vpp = 1
    std::vector<int> ep; ///< MoE only
    int world = 0;
    int gpus_per_node = 0;
    std::int64_t global_batch = 0;
    std::vector<std::string> recompute_modules;
    /** What config.framework limits in the dimensions above, one phrase each ("ZeRO stages 2, 3 only", "no zb-h1
        schedule"); empty for the generic framework or when it limits nothing. */
    std::vector<std::string> framework_limits;
};

/** Builds the space for a model, cluster and config; InputError when the config leaves nothing to search. */
SearchSpace buildSearchSpace(const CostModel& model, const PlannerConfig& config, int world, int gpusPerNode,
                             std::int64_t globalBatch);

/**
 * Every valid combination, in a fixed order (the tie-break of the search, so results do not depend on the
 * thread count). Stage layers are left empty: the planner partitions later. Each candidate carries
 * config.framework, and combinations the framework cannot run (frameworkRestriction: DeepSpeed's pipeline with
 * ZeRO-2/3, torchtitan without FSDP or with fewer micro-batches than stages, ...) are skipped; `frameworkSkipped`,
 * when given, receives how many.
 */
std::vector<ParallelConfig> enumerateCandidates(const CostModel& model, const SearchSpace& space,
                                                const PlannerConfig& config, std::uint64_t* frameworkSkipped = nullptr);

} // namespace shardscape
