// SPDX-License-Identifier: MIT
#include "mpi_world.h"

#include <cstdlib>

#ifdef SHARDSCAPE_PROFILE_HAVE_MPI
#include <mpi.h>
#endif

namespace shardscape::profiler {

#ifdef SHARDSCAPE_PROFILE_HAVE_MPI

bool mpiCompiledIn()
{
    return true;
}

MpiWorld initMpi(int* argc, char*** argv)
{
    MpiWorld world;
    if (!std::getenv("OMPI_COMM_WORLD_SIZE") && !std::getenv("PMI_SIZE") && !std::getenv("PMIX_RANK"))
        return world;
    MPI_Init(argc, argv);
    world.active = true;
    MPI_Comm_rank(MPI_COMM_WORLD, &world.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world.size);
    MPI_Comm local;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, world.rank, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &world.localRank);
    MPI_Comm_size(local, &world.localSize);
    MPI_Comm_free(&local);
    return world;
}

void finalizeMpi(const MpiWorld& world)
{
    if (world.active)
        MPI_Finalize();
}

void abortMpi(const MpiWorld& world, int code)
{
    if (world.active && world.size > 1)
        MPI_Abort(MPI_COMM_WORLD, code);
    finalizeMpi(world);
    std::exit(code);
}

double allReduceMax(const MpiWorld& world, double value)
{
    double result = value;
    if (world.active)
        MPI_Allreduce(&value, &result, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return result;
}

double allReduceMin(const MpiWorld& world, double value)
{
    double result = value;
    if (world.active)
        MPI_Allreduce(&value, &result, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    return result;
}

void broadcast(const MpiWorld& world, void* data, std::size_t bytes)
{
    if (world.active)
        MPI_Bcast(data, static_cast<int>(bytes), MPI_BYTE, 0, MPI_COMM_WORLD);
}

#else // a single process: every "collective" over one rank is the identity

bool mpiCompiledIn()
{
    return false;
}

MpiWorld initMpi(int*, char***)
{
    return {};
}

void finalizeMpi(const MpiWorld&) { }

void abortMpi(const MpiWorld&, int code)
{
    std::exit(code);
}

double allReduceMax(const MpiWorld&, double value)
{
    return value;
}

double allReduceMin(const MpiWorld&, double value)
{
    return value;
}

void broadcast(const MpiWorld&, void*, std::size_t) { }

#endif

} // namespace shardscape::profiler
