// SPDX-License-Identifier: MIT
// The MPI job shardscape-profile may run in (mpirun -np N, one rank per GPU). Without MPI support compiled in,
// or when not started by an MPI launcher, the world is this one process and the collectives below are identities.
#pragma once

#include <cstddef>

namespace shardscape::profiler {

struct MpiWorld
{
    bool active = false; ///< MPI_Init was called
    int rank = 0;
    int size = 1;
    int localRank = 0; ///< rank among the ranks on this node
    int localSize = 1;
};

/** Whether this binary can join an MPI job. */
bool mpiCompiledIn();

/**
 * Calls MPI_Init when compiled with MPI and started by a launcher (OMPI_COMM_WORLD_SIZE, PMI_SIZE or PMIX_RANK in
 * the environment), so a plain run never pays for or depends on an MPI runtime.
 */
MpiWorld initMpi(int* argc, char*** argv);

void finalizeMpi(const MpiWorld& world);

/** Ends every rank with `code` (a failing rank must not leave the others waiting in a collective). */
[[noreturn]] void abortMpi(const MpiWorld& world, int code);

double allReduceMax(const MpiWorld& world, double value);
double allReduceMin(const MpiWorld& world, double value);
/** Rank 0's bytes to every rank. */
void broadcast(const MpiWorld& world, void* data, std::size_t bytes);

} // namespace shardscape::profiler
