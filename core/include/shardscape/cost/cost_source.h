// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/cost/cost_params.h"
#include "shardscape/hardware/cluster.h"
#include "shardscape/model/dtype.h"

#include <memory>
#include <string>
#include <string_view>

namespace shardscape {

enum class Collective : std::uint8_t
{
    AllReduce,
    AllGather,
    ReduceScatter,
    AllToAll
};
std::string_view collectiveName(Collective kind);

/** Where the members of a communication group sit: `size` ranks, `per_node` of them in each node. */
struct GroupShape
{
    int size = 1;
    int per_node = 1;
    int nodes() const { return (size + per_node - 1) / per_node; }
};

/**
 * The swap point for costs (STYLE.md): datasheet curves, or measured GPU profiles when a profile
 * database exists for the device. Times are seconds, sizes bytes, work FLOPs. Implementations are
 * immutable and thread-safe.
 */
class CostSource
{
public:
    virtual ~CostSource() = default;
    /** "datasheet" or "profile:<device>"; every prediction reports it. */
    virtual std::string name() const = 0;
    /** A GEMM [m x k] @ [k x n] (2mnk FLOPs). */
    virtual double matmulTime(double m, double n, double k, DType dtype) const = 0;
    /** A fused causal attention kernel whose unmasked FLOP count is `flops` (the source applies the causal share). */
    virtual double attentionTime(double flops, DType dtype) const = 0;
    /** A streaming kernel moving `bytes` through HBM. */
    virtual double memoryTime(double bytes) const = 0;
    /** A collective over `group` on a buffer of `bytes` (the whole buffer: all-gather output, all-reduce input). */
    virtual double collectiveTime(Collective kind, double bytes, const GroupShape& group) const = 0;
    /** One point-to-point message. */
    virtual double p2pTime(double bytes, bool interNode) const = 0;
    /** Shortest kernel time (launch and tail). */
    virtual double minKernelTime() const = 0;
};

/**
 * The default cost source: roofline on datasheet peaks with a GEMM efficiency curve by shape, and an
 * alpha-beta model of ring/tree collectives, hierarchical (intra-node then inter-node) across nodes.
 */
std::shared_ptr<const CostSource> makeDatasheetCostSource(const Cluster& cluster, const CostParams& params);

} // namespace shardscape
