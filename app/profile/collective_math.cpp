// SPDX-License-Identifier: MIT
#include "collective_math.h"

namespace shardscape::profiler {

const std::vector<Collective>& allCollectives()
{
    static const std::vector<Collective> all {Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter,
                                              Collective::AllToAll, Collective::SendRecv};
    return all;
}

std::string_view collectiveName(Collective op)
{
    switch (op) {
    case Collective::AllReduce:
        return "all_reduce";
    case Collective::AllGather:
        return "all_gather";
    case Collective::ReduceScatter:
        return "reduce_scatter";
    case Collective::AllToAll:
        return "all_to_all";
    case Collective::SendRecv:
        return "send_recv";
    }
    return "?";
}

double busBandwidthFactor(Collective op, int ranks)
{
    const double n = ranks;
    switch (op) {
    case Collective::AllReduce:
        return 2.0 * (n - 1) / n;
    case Collective::AllGather:
    case Collective::ReduceScatter:
    case Collective::AllToAll:
        return (n - 1) / n;
    case Collective::SendRecv:
        return 1.0;
    }
    return 0.0;
}

CollectiveBuffers collectiveBuffers(Collective op, std::int64_t requestedBytes, int ranks, int elementBytes)
{
    CollectiveBuffers b;
    const std::int64_t elements = requestedBytes / elementBytes;
    switch (op) {
    case Collective::AllReduce:
    case Collective::SendRecv:
        b.sendCount = b.recvCount = b.chunk = elements;
        b.sizeBytes = elements * elementBytes;
        break;
    case Collective::AllGather:
    case Collective::ReduceScatter:
    case Collective::AllToAll: {
        const std::int64_t chunk = elements / ranks;
        b.chunk = chunk;
        b.sendCount = op == Collective::AllGather ? chunk : chunk * ranks;
        b.recvCount = op == Collective::ReduceScatter ? chunk : chunk * ranks;
        b.sizeBytes = chunk * ranks * elementBytes;
        break;
    }
    }
    if (b.sizeBytes == 0)
        b = {};
    return b;
}

double busBandwidthGBps(Collective op, std::int64_t sizeBytes, double seconds, int ranks)
{
    return static_cast<double>(sizeBytes) / seconds / 1e9 * busBandwidthFactor(op, ranks);
}

std::vector<std::int64_t> collectiveSizes(bool quick)
{
    std::vector<std::int64_t> sizes;
    if (quick) {
        for (const std::int64_t s :
             {std::int64_t(1) << 16, std::int64_t(1) << 20, std::int64_t(1) << 24, std::int64_t(1) << 28})
            sizes.push_back(s);
        return sizes;
    }
    for (std::int64_t s = std::int64_t(1) << 10; s <= (std::int64_t(1) << 30); s *= 4)
        sizes.push_back(s);
    return sizes;
}

} // namespace shardscape::profiler
