// SPDX-License-Identifier: MIT
#include "bench_collectives.h"

#ifdef SHARDSCAPE_PROFILE_HAVE_NCCL

#include "kernels.h"

#include <algorithm>
#include <cuda_runtime.h>
#include <nccl.h>

namespace shardscape::profiler {

namespace {

void checkNccl(ncclResult_t status, const char* what)
{
    if (status != ncclSuccess)
        throw CudaFailure(std::string(what) + ": " + ncclGetErrorString(status));
}

/** One GPU driven by this process: its place in the communicator and its stream, events and buffers. */
struct LocalRank
{
    int device = 0;
    int rank = 0; ///< in the communicator
    ncclComm_t comm = nullptr;
    cudaStream_t stream = nullptr;
    cudaEvent_t start = nullptr;
    cudaEvent_t stop = nullptr;
    DeviceBuffer send;
    DeviceBuffer recv;
};

class Communicators
{
public:
    Communicators(const MpiWorld& world, int deviceCount)
        : m_world(world)
    {
        if (world.size > 1) {
            // One GPU per MPI rank; the node's ranks take its GPUs in turn.
            m_ranks = world.size;
            m_ranksPerNode = world.localSize;
            if (allReduceMin(world, world.localSize) != allReduceMax(world, world.localSize))
                throw BadInput("the MPI job has different numbers of ranks per node",
                               "start the same number of ranks on every node (e.g. mpirun --map-by ppr:8:node)");
            ncclUniqueId id {};
            if (world.rank == 0)
                checkNccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
            broadcast(world, &id, sizeof id);
            if (world.localSize > deviceCount)
                throw BadInput("the MPI job runs " + std::to_string(world.localSize) + " ranks on a node with "
                                   + std::to_string(deviceCount) + " GPUs",
                               "start one rank per GPU (e.g. mpirun --map-by ppr:<GPUs per node>:node)");
            LocalRank local;
            local.device = world.localRank;
            local.rank = world.rank;
            checkCuda(cudaSetDevice(local.device), "cudaSetDevice");
            checkNccl(ncclCommInitRank(&local.comm, world.size, id, world.rank), "ncclCommInitRank");
            m_locals.push_back(std::move(local));
        } else {
            m_ranks = m_ranksPerNode = deviceCount;
            std::vector<int> devices(static_cast<std::size_t>(deviceCount));
            std::vector<ncclComm_t> comms(static_cast<std::size_t>(deviceCount));
            for (int d = 0; d < deviceCount; ++d)
                devices[static_cast<std::size_t>(d)] = d;
            checkNccl(ncclCommInitAll(comms.data(), deviceCount, devices.data()), "ncclCommInitAll");
            for (int d = 0; d < deviceCount; ++d) {
                LocalRank local;
                local.device = d;
                local.rank = d; // ncclCommInitAll gives rank i to devices[i]
                local.comm = comms[static_cast<std::size_t>(d)];
                m_locals.push_back(std::move(local));
            }
        }
        for (LocalRank& l : m_locals) {
            checkCuda(cudaSetDevice(l.device), "cudaSetDevice");
            checkCuda(cudaStreamCreateWithFlags(&l.stream, cudaStreamNonBlocking), "cudaStreamCreate");
            checkCuda(cudaEventCreate(&l.start), "cudaEventCreate");
            checkCuda(cudaEventCreate(&l.stop), "cudaEventCreate");
        }
    }
    ~Communicators()
    {
        for (LocalRank& l : m_locals) {
            cudaSetDevice(l.device);
            l.send = DeviceBuffer();
            l.recv = DeviceBuffer();
            if (l.comm)
                ncclCommDestroy(l.comm);
            if (l.start)
                cudaEventDestroy(l.start);
            if (l.stop)
                cudaEventDestroy(l.stop);
            if (l.stream)
                cudaStreamDestroy(l.stream);
        }
    }
    Communicators(const Communicators&) = delete;
    Communicators& operator=(const Communicators&) = delete;

    int ranks() const { return m_ranks; }
    int ranksPerNode() const { return m_ranksPerNode; }
    std::vector<LocalRank>& locals() { return m_locals; }
    const MpiWorld& world() const { return m_world; }

    /** Gives every local rank send and receive buffers of `bytes` each (freeing the old ones first). */
    void allocate(std::size_t bytes)
    {
        for (LocalRank& l : m_locals) {
            checkCuda(cudaSetDevice(l.device), "cudaSetDevice");
            l.send = DeviceBuffer();
            l.recv = DeviceBuffer();
            l.send = DeviceBuffer(bytes);
            l.recv = DeviceBuffer(bytes);
        }
    }

    void synchronize()
    {
        for (LocalRank& l : m_locals) {
            checkCuda(cudaSetDevice(l.device), "cudaSetDevice");
            checkCuda(cudaStreamSynchronize(l.stream), "collective");
        }
    }

private:
    MpiWorld m_world;
    int m_ranks = 1;
    int m_ranksPerNode = 1;
    std::vector<LocalRank> m_locals;
};

/** Enqueues one `op` on one local rank (inside the caller's ncclGroupStart/End). */
void enqueue(Collective op, const LocalRank& l, const CollectiveBuffers& b, ncclDataType_t type, int elementBytes,
             int ranks)
{
    const void* send = l.send.get();
    void* recv = l.recv.get();
    const auto count = static_cast<std::size_t>(b.chunk);
    switch (op) {
    case Collective::AllReduce:
        checkNccl(ncclAllReduce(send, recv, count, type, ncclSum, l.comm, l.stream), "ncclAllReduce");
        break;
    case Collective::AllGather:
        checkNccl(ncclAllGather(send, recv, count, type, l.comm, l.stream), "ncclAllGather");
        break;
    case Collective::ReduceScatter:
        checkNccl(ncclReduceScatter(send, recv, count, type, ncclSum, l.comm, l.stream), "ncclReduceScatter");
        break;
    case Collective::AllToAll: // nccl-tests' alltoall: a grouped send and receive of one chunk per peer
        for (int peer = 0; peer < ranks; ++peer) {
            const std::size_t offset = static_cast<std::size_t>(peer) * count * static_cast<std::size_t>(elementBytes);
            checkNccl(ncclSend(static_cast<const char*>(send) + offset, count, type, peer, l.comm, l.stream),
                      "ncclSend");
            checkNccl(ncclRecv(static_cast<char*>(recv) + offset, count, type, peer, l.comm, l.stream), "ncclRecv");
        }
        break;
    case Collective::SendRecv: // a ring: send to the next rank, receive from the previous one
        checkNccl(ncclSend(send, count, type, (l.rank + 1) % ranks, l.comm, l.stream), "ncclSend");
        checkNccl(ncclRecv(recv, count, type, (l.rank + ranks - 1) % ranks, l.comm, l.stream), "ncclRecv");
        break;
    }
}

void runOnce(Communicators& c, Collective op, const CollectiveBuffers& b, ncclDataType_t type, int elementBytes)
{
    checkNccl(ncclGroupStart(), "ncclGroupStart");
    for (const LocalRank& l : c.locals())
        enqueue(op, l, b, type, elementBytes, c.ranks());
    checkNccl(ncclGroupEnd(), "ncclGroupEnd");
}

/** Rank r's input element i: an integer in [-1000, 1000] (fp32 sums of them are exact), from (seed, r, i). */
float inputValue(std::uint64_t seed, int rank, std::int64_t i)
{
    std::uint64_t x = seed ^ (static_cast<std::uint64_t>(rank) << 40) ^ static_cast<std::uint64_t>(i);
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    x ^= x >> 31;
    return static_cast<float>(static_cast<std::int64_t>(x % 2001) - 1000);
}

/** What rank r's receive buffer must hold after `op` (every rank's input is known from the seed). */
float expectedValue(Collective op, std::uint64_t seed, int r, int n, std::int64_t chunk, std::int64_t i)
{
    float sum = 0;
    switch (op) {
    case Collective::AllReduce:
        for (int q = 0; q < n; ++q)
            sum += inputValue(seed, q, i);
        return sum;
    case Collective::AllGather:
        return inputValue(seed, static_cast<int>(i / chunk), i % chunk);
    case Collective::ReduceScatter:
        for (int q = 0; q < n; ++q)
            sum += inputValue(seed, q, r * chunk + i);
        return sum;
    case Collective::AllToAll:
        return inputValue(seed, static_cast<int>(i / chunk), r * chunk + i % chunk);
    case Collective::SendRecv:
        return inputValue(seed, (r + n - 1) % n, i);
    }
    return 0;
}

void checkCollectives(Communicators& c)
{
    const int n = c.ranks();
    std::uint64_t seed = freshSeed();
    broadcast(c.world(), &seed, sizeof seed);
    constexpr std::int64_t kChunk = 1031; // odd, so no op gets away with whole vectors only
    c.allocate(static_cast<std::size_t>(kChunk * n) * 4);
    std::string failure;
    for (const Collective op : allCollectives()) {
        const CollectiveBuffers b = collectiveBuffers(op, kChunk * n * 4, n, 4);
        for (LocalRank& l : c.locals()) {
            checkCuda(cudaSetDevice(l.device), "cudaSetDevice");
            std::vector<float> input(static_cast<std::size_t>(b.sendCount));
            for (std::int64_t i = 0; i < b.sendCount; ++i)
                input[static_cast<std::size_t>(i)] = inputValue(seed, l.rank, i);
            checkCuda(cudaMemcpy(l.send.get(), input.data(), input.size() * 4, cudaMemcpyHostToDevice), "cudaMemcpy");
            checkCuda(cudaMemset(l.recv.get(), 0xff, l.recv.bytes()), "cudaMemset"); // NaN where nothing arrives
            checkCuda(cudaDeviceSynchronize(), "upload");
        }
        runOnce(c, op, b, ncclFloat32, 4);
        c.synchronize();
        for (LocalRank& l : c.locals()) {
            checkCuda(cudaSetDevice(l.device), "cudaSetDevice");
            std::vector<float> got(static_cast<std::size_t>(b.recvCount));
            checkCuda(cudaMemcpy(got.data(), l.recv.get(), got.size() * 4, cudaMemcpyDeviceToHost), "cudaMemcpy");
            for (std::int64_t i = 0; i < b.recvCount && failure.empty(); ++i) {
                const float want = expectedValue(op, seed, l.rank, n, b.chunk, i);
                if (got[static_cast<std::size_t>(i)] != want)
                    failure = std::string(collectiveName(op)) + " on rank " + std::to_string(l.rank) + ": element "
                        + std::to_string(i) + " is " + std::to_string(got[static_cast<std::size_t>(i)]) + ", want "
                        + std::to_string(want);
            }
        }
    }
    const bool allOk = allReduceMin(c.world(), failure.empty() ? 1.0 : 0.0) > 0.5;
    if (!failure.empty())
        throw CheckFailure("NCCL " + failure);
    if (!allOk)
        throw CheckFailure("an NCCL collective gave wrong results on another rank (see its message)");
    if (c.world().rank == 0)
        note("check   NCCL all_reduce, all_gather, reduce_scatter, all_to_all, send_recv agree with the CPU (%d ranks)",
             n);
}

double timeCollective(Communicators& c, Collective op, const CollectiveBuffers& b, const TimingConfig& timing)
{
    const auto iteration = [&] { runOnce(c, op, b, ncclBfloat16, 2); };
    const auto timed = [&](int batch) {
        for (LocalRank& l : c.locals()) {
            checkCuda(cudaSetDevice(l.device), "cudaSetDevice");
            checkCuda(cudaEventRecord(l.start, l.stream), "cudaEventRecord");
        }
        for (int i = 0; i < batch; ++i)
            iteration();
        for (LocalRank& l : c.locals()) {
            checkCuda(cudaSetDevice(l.device), "cudaSetDevice");
            checkCuda(cudaEventRecord(l.stop, l.stream), "cudaEventRecord");
        }
        double slowest = 0;
        for (LocalRank& l : c.locals()) {
            checkCuda(cudaSetDevice(l.device), "cudaSetDevice");
            checkCuda(cudaEventSynchronize(l.stop), "collective");
            float ms = 0;
            checkCuda(cudaEventElapsedTime(&ms, l.start, l.stop), "cudaEventElapsedTime");
            slowest = std::max(slowest, 1e-3 * ms / batch);
        }
        return allReduceMax(c.world(), slowest); // every rank then takes the same decisions
    };
    for (int i = 0; i < timing.warmup; ++i)
        iteration();
    c.synchronize();
    const double single = std::max(timed(1), 1e-7);
    const int batch = static_cast<int>(std::clamp(timing.minBatchSeconds / single, 1.0, 100.0));
    std::vector<double> times;
    for (int rep = 0; rep < timing.reps; ++rep)
        times.push_back(timed(batch));
    return median(std::move(times));
}

} // namespace

bool collectivesCompiledIn()
{
    return true;
}

std::string collectivesLibrary()
{
    return "NCCL " + std::to_string(NCCL_MAJOR) + "." + std::to_string(NCCL_MINOR) + "." + std::to_string(NCCL_PATCH);
}

int collectiveRanks(const MpiWorld& world, int deviceCount)
{
    return world.size > 1 ? world.size : deviceCount;
}

int collectiveSteps(bool quick, int ranks)
{
    if (ranks < 2)
        return 0;
    return 1 + static_cast<int>(allCollectives().size() * collectiveSizes(quick).size());
}

std::vector<CollectiveResult> runCollectivesPhase(bool quick, const MpiWorld& world, int deviceCount,
                                                  const TimingConfig& timing, Progress& progress)
{
    std::vector<CollectiveResult> results;
    if (collectiveRanks(world, deviceCount) < 2) {
        note("skip    collectives: they need at least 2 GPUs (this process sees %d; several nodes: run under mpirun)",
             deviceCount);
        return results;
    }
    Communicators c(world, deviceCount);
    const int n = c.ranks();
    checkCollectives(c);
    progress.step("collectives");

    // The largest message every rank can hold twice (send + receive) in a third of its free memory.
    double freeBytes = 1e300;
    for (LocalRank& l : c.locals()) {
        checkCuda(cudaSetDevice(l.device), "cudaSetDevice");
        freeBytes = std::min(freeBytes, static_cast<double>(freeDeviceMemory()));
    }
    freeBytes = allReduceMin(world, freeBytes);
    std::int64_t largest = 0;
    for (const std::int64_t size : collectiveSizes(quick))
        if (static_cast<double>(size) * 2 <= freeBytes / 3)
            largest = std::max(largest, size);
    c.allocate(static_cast<std::size_t>(largest));
    for (LocalRank& l : c.locals()) {
        checkCuda(cudaSetDevice(l.device), "cudaSetDevice");
        checkCuda(launchFillUniform(l.send.get(), l.send.bytes() / 2, DType::BF16, freshSeed(), l.stream), "fill");
    }
    c.synchronize();

    for (const Collective op : allCollectives()) {
        for (const std::int64_t size : collectiveSizes(quick)) {
            const CollectiveBuffers b = collectiveBuffers(op, size, n, 2);
            if (size > largest || b.sizeBytes == 0) {
                if (world.rank == 0)
                    note("skip    %s of %lld bytes: %s", std::string(collectiveName(op)).c_str(),
                         static_cast<long long>(size), size > largest ? "not enough free memory" : "too small");
                progress.step("collectives");
                continue;
            }
            const double seconds = timeCollective(c, op, b, timing);
            const CollectiveResult row {op, b.sizeBytes, n, c.ranksPerNode(), DType::BF16, seconds};
            if (world.rank == 0)
                note("nccl    %-14s %12lld B %4d ranks %10.4f ms  algbw %8.2f GB/s  busbw %8.2f GB/s",
                     std::string(collectiveName(op)).c_str(), static_cast<long long>(b.sizeBytes), n, seconds * 1e3,
                     static_cast<double>(b.sizeBytes) / seconds / 1e9, busBandwidthGBps(op, b.sizeBytes, seconds, n));
            results.push_back(row);
            progress.step("collectives");
        }
    }
    return results;
}

} // namespace shardscape::profiler

#else // built without NCCL

namespace shardscape::profiler {

bool collectivesCompiledIn()
{
    return false;
}

std::string collectivesLibrary()
{
    return "without NCCL";
}

int collectiveRanks(const MpiWorld& world, int deviceCount)
{
    return world.size > 1 ? world.size : deviceCount;
}

int collectiveSteps(bool, int)
{
    return 0;
}

std::vector<CollectiveResult> runCollectivesPhase(bool, const MpiWorld&, int, const TimingConfig&, Progress&)
{
    note("skip    collectives: this shardscape-profile was built without NCCL");
    return {};
}

} // namespace shardscape::profiler

#endif
