// SPDX-License-Identifier: MIT
// The planner's fast pass over one candidate (candidate_scoring.cpp): partition when pipelined, prune by the
// closed-form bubble and balance, estimate; and the ranking of what it returns. Private to core/src/search.
#pragma once

#include "shardscape/search/planner.h"

#include <cstddef>
#include <string>
#include <vector>

namespace shardscape::search_detail {

/** A candidate after the fast pass. */
struct Scored
{
    std::size_t index = 0;
    Evaluation estimate;
    bool pruned = false; ///< dropped by a pipeline rule (bubble, balance), not by memory
};

/** The faster step first; ties by enumeration index. */
bool faster(const Scored& a, const Scored& b);

/** The ranking: every plan whose memory fits (its peak range's high end, with the headroom, under the limit) before
    every tight one, then the shorter step; "likely" out-of-memory plans are infeasible and never ranked. */
bool better(const Scored& a, const Scored& b);

/** Per layer: whether a pipeline stage may start there (the config's pivots; every layer when there are none). */
std::vector<bool> pivotsFor(const CostModel& model, const std::vector<std::string>& pivots);

struct Context
{
    const CostModel& model;
    const PlannerConfig& config;
    const Workload& workload;
    std::vector<bool> mayStart;
};

/** Partitions (when pipelined), prunes and estimates one candidate. */
Scored scoreCandidate(const Context& ctx, std::size_t index, ParallelConfig c);

} // namespace shardscape::search_detail
