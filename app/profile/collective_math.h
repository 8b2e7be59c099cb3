// SPDX-License-Identifier: MIT
// Collective names, buffer sizes and the nccl-tests bandwidth convention (shared/research/ecosystem.md s.5),
// kept apart from the NCCL calls so they are unit-tested without a GPU.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace shardscape::profiler {

enum class Collective : std::uint8_t
{
    AllReduce,
    AllGather,
    ReduceScatter,
    AllToAll,
    SendRecv,
};

/** In FORMAT.md order. */
const std::vector<Collective>& allCollectives();

/** all_reduce, all_gather, reduce_scatter, all_to_all, send_recv (the profile DB names). */
std::string_view collectiveName(Collective op);

/**
 * nccl-tests' busbw = algbw x factor, n = ranks: all_reduce 2(n-1)/n; all_gather, reduce_scatter, all_to_all
 * (n-1)/n; send_recv 1. Zero for a one-rank all_reduce/all_gather/reduce_scatter/all_to_all (nothing moves).
 */
double busBandwidthFactor(Collective op, int ranks);

/**
 * Element counts of one rank's buffers for a message of about `requestedBytes` (the nccl-tests `size` column),
 * rounded down so that every rank gets whole elements:
 *   all_reduce       send = recv = count,          size = count * elem
 *   all_gather       send = c, recv = c * n,       size = c * n * elem   (the gathered buffer)
 *   reduce_scatter   send = c * n, recv = c,       size = c * n * elem   (the scattered input)
 *   all_to_all       send = recv = c * n (c per peer), size = c * n * elem
 *   send_recv        send = recv = count,          size = count * elem   (one message)
 * `sizeBytes` is 0 when the request is smaller than one element per rank.
 */
struct CollectiveBuffers
{
    std::int64_t sendCount = 0;
    std::int64_t recvCount = 0;
    std::int64_t chunk = 0; ///< elements per rank in all_gather/reduce_scatter/all_to_all; = count otherwise
    std::int64_t sizeBytes = 0;
};
CollectiveBuffers collectiveBuffers(Collective op, std::int64_t requestedBytes, int ranks, int elementBytes);

/** nccl-tests' busbw in GB/s (1e9 bytes): sizeBytes / seconds / 1e9 * factor. */
double busBandwidthGBps(Collective op, std::int64_t sizeBytes, double seconds, int ranks);

/** Message sizes to sweep, bytes: 1 KiB .. 1 GiB by x4 (quick: 64 KiB, 1 MiB, 16 MiB, 256 MiB). */
std::vector<std::int64_t> collectiveSizes(bool quick);

} // namespace shardscape::profiler
