// SPDX-License-Identifier: MIT
// Which global GPU ranks a pipeline stage holds under a plan's rank order: shared by the plan file's writer (the
// ranks it records) and reader (the check that they match). Private to core/src/plan.
#pragma once

#include "shardscape/cost/parallel_config.h"

#include <cstdint>
#include <string>
#include <vector>

namespace shardscape::plan_ranks {

/** "tp-cp-dp-pp" as its dimensions, fastest first. */
std::vector<std::string> splitRankOrder(const std::string& order);

/** Whether `order` names tp, cp, dp and pp once each. */
bool isRankOrder(const std::string& order);

/**
 * Global GPU ranks of pipeline rank `stage`, ascending. Ranks number the tp x cp x dp x pp grid with the first
 * dimension of rank_order varying fastest (what CostModel::groupShape assumes).
 */
std::vector<std::int64_t> stageRanks(const ParallelConfig& c, int stage);

} // namespace shardscape::plan_ranks
