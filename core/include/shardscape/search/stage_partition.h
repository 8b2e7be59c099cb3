// SPDX-License-Identifier: MIT
#pragma once

#include <string>
#include <vector>

namespace shardscape {

/**
 * Splitting L layers into S contiguous pipeline stages. For GPipe and 1F1B, Alpa's pipeline latency
 * sum(t_i) + (m - 1) max(t_i) has a constant sum (every layer runs once whatever the split), so minimising it
 * is minimising the slowest stage: a min-max partition under each stage's memory limit.
 */
struct PartitionInput
{
    std::vector<double> time; ///< per layer: seconds of forward + backward per micro-batch
    std::vector<double> static_bytes; ///< per layer: weights, gradients, optimizer states on one device
    std::vector<double> stash_bytes; ///< per layer: activations kept per in-flight micro-batch
    std::vector<double> transient_bytes; ///< per layer: the largest transient it needs (max over a stage counts)
    std::vector<int> inflight; ///< per stage: micro-batches in flight at its peak (non-increasing for 1F1B)
    std::vector<bool> may_start; ///< per layer: may a stage start here (pipeline pivots); layer 0 always may
    double fixed_bytes = 0; ///< per device regardless of layers (runtime reserve)
    double memory_limit = 0; ///< bytes per device; <= 0 = unlimited
    int stages = 1;
};

struct PartitionResult
{
    bool feasible = false;
    std::vector<int> counts; ///< layers per stage
    double max_stage_time = 0; ///< seconds
    double min_stage_time = 0;
    std::string reason; ///< why infeasible
};

/**
 * Exact min-max partition. The time-only bottleneck (a greedy bisection) is a lower bound and usually the answer;
 * when memory binds, a bisection on the bottleneck with an exact reachability test over (stage, boundary) that
 * respects each stage's own memory budget and the pivots. O(S L) per test.
 */
PartitionResult partitionStages(const PartitionInput& input);

/** Every partition tried; for tests on small problems. */
PartitionResult partitionStagesBruteForce(const PartitionInput& input);

} // namespace shardscape
