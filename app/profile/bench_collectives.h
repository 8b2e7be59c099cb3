// SPDX-License-Identifier: MIT
// NCCL collectives across all local GPUs of this process (ncclCommInitAll), or across the ranks of an MPI job
// (one GPU per rank; rank 0's ncclUniqueId broadcast with MPI). Compiled only with NCCL.
#pragma once

#include "bench.h"
#include "mpi_world.h"
#include "profile_db.h"

#include <string>
#include <vector>

namespace shardscape::profiler {

/** Whether this binary was built with NCCL. */
bool collectivesCompiledIn();

/** "NCCL 2.28.9" or "without NCCL" (for --version). */
std::string collectivesLibrary();

/** The ranks the collectives run over: the MPI world, or the local GPUs when there is no MPI job. */
int collectiveRanks(const MpiWorld& world, int deviceCount);

int collectiveSteps(bool quick, int ranks);

/**
 * Checks every collective on fresh random integers (fp32, exact sums) against the CPU on every rank
 * (CheckFailure when wrong), then times each over the message sizes in bf16 (the nccl-tests `size` column,
 * busbw with nccl-tests' factors): per repetition the slowest rank's time; the median is kept. Every rank
 * must call it; the rows are complete on every rank.
 */
std::vector<CollectiveResult> runCollectivesPhase(bool quick, const MpiWorld& world, int deviceCount,
                                                  const TimingConfig& timing, Progress& progress);

} // namespace shardscape::profiler
