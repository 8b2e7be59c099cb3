// SPDX-License-Identifier: MIT
#include "shardscape/cost/cost_source.h"

#include <algorithm>
#include <cmath>

namespace shardscape {

std::string_view collectiveName(Collective kind)
{
    switch (kind) {
    case Collective::AllReduce:
        return "all-reduce";
    case Collective::AllGather:
        return "all-gather";
    case Collective::ReduceScatter:
        return "reduce-scatter";
    case Collective::AllToAll:
        break;
    }
    return "all-to-all";
}

namespace {

class DatasheetCostSource final : public CostSource
{
public:
    DatasheetCostSource(const Cluster& cluster, const CostParams& params)
        : m_device(cluster.device)
        , m_params(params)
    {
    }

    std::string name() const override { return "datasheet"; }

    double matmulTime(double m, double n, double k, DType dtype) const override
    {
        if (m <= 0 || n <= 0 || k <= 0)
            return 0;
        // Small dimensions waste tensor-core tiles and SMs; each dimension scales efficiency by x/(x+x0). 8-bit
        // kernels fill tiles of twice the elements (Hopper's FP8 wgmma reduces K = 32 per instruction against bf16's
        // 16), so they need twice the dimension: measured on H100 (tests/data/measured_fp8_gemms_h100.json, 72
        // GEMMs of Llama 3 8B / 70B linears), the tensorwise / bf16 throughput ratio falls from about 1.9 at dims of
        // 4096 and more to 1.3-1.6 where one dim is 1024; x0 = 512 for FP8 against bf16's 256 reproduces it with a
        // median error of 0.2% (median |error| 5.3%), where a constant ratio misses the small GEMMs by up to 40%.
        const double x0 = m_params.matmul_half_dim * (dtypeBytes(dtype) == 1 ? 2 : 1);
        const double shape = (m / (m + x0)) * (n / (n + x0)) * (k / (k + x0));
        const double rate = peak(dtype) * matmulEfficiency() * shape;
        const double flopsTime = 2 * m * n * k / rate;
        const double bytes = (m * k + k * n + m * n) * dtypeBytes(dtype);
        return std::max({flopsTime, memoryTime(bytes), m_params.min_kernel_time});
    }

    double attentionTime(double flops, DType dtype) const override
    {
        if (flops <= 0)
            return 0;
        const double executed = flops * m_params.attention_causal_fraction;
        return std::max(executed / (peak(dtype) * attentionEfficiency()), m_params.min_kernel_time);
    }

    double memoryTime(double bytes) const override
    {
        if (bytes <= 0)
            return 0;
        return std::max(bytes / (m_device.hbm_bandwidth * m_params.memory_efficiency), m_params.min_kernel_time);
    }

    double collectiveTime(Collective kind, double bytes, const GroupShape& group) const override
    {
        if (group.size <= 1 || bytes <= 0)
            return 0;
        const int local = std::min(group.per_node, group.size);
        const int nodes = group.nodes();
        if (nodes <= 1)
            return flat(kind, bytes, local, intraBandwidth(), m_device.intra_node.latency);
        if (local <= 1)
            return flat(kind, bytes, nodes, interBandwidth(), m_device.inter_node.latency);
        // Hierarchical: inside each node first (NVLink), then across nodes on 1/local of the data with
        // every GPU driving its own NIC, then back inside the node.
        const double intraLat = m_device.intra_node.latency;
        const double interLat = m_device.inter_node.latency;
        switch (kind) {
        case Collective::AllReduce:
            return flat(Collective::ReduceScatter, bytes, local, intraBandwidth(), intraLat)
                + flat(Collective::AllReduce, bytes / local, nodes, interBandwidth(), interLat)
                + flat(Collective::AllGather, bytes, local, intraBandwidth(), intraLat);
        case Collective::AllGather:
        case Collective::ReduceScatter:
            // The local GPUs split the bytes over their NICs, but every one of those rings still takes nodes - 1
            // steps: the latency term is not divided (it was, which hid the per-layer ZeRO-3 gathers' latency at
            // thousands of ranks).
            return flat(kind, bytes / nodes, local, intraBandwidth(), intraLat)
                + flat(kind, bytes / local, nodes, interBandwidth(), interLat);
        case Collective::AllToAll:
            break;
        }
        // All-to-all across nodes: the share leaving the node crosses the NICs.
        const double remote = bytes * (nodes - 1) / nodes;
        return remote / interBandwidth() + (group.size - 1) * interLat
            + flat(Collective::AllToAll, bytes / nodes, local, intraBandwidth(), intraLat);
    }

    double p2pTime(double bytes, bool interNode) const override
    {
        if (bytes <= 0)
            return 0;
        return interNode ? bytes / interBandwidth() + m_device.inter_node.latency
                         : bytes / intraBandwidth() + m_device.intra_node.latency;
    }

    double minKernelTime() const override { return m_params.min_kernel_time; }

private:
    double peak(DType dtype) const
    {
        const double p = m_device.peak(dtype);
        return p > 0 ? p : m_device.peak(DType::BF16);
    }
    /** The device preset's measured efficiency where it states one (a device property: e.g. cuBLAS reaches a
        smaller fraction of the H100's peak than of the A100's), else the CostParams default. */
    double matmulEfficiency() const
    {
        return m_device.matmul_efficiency > 0 ? m_device.matmul_efficiency : m_params.matmul_efficiency;
    }
    double attentionEfficiency() const
    {
        return m_device.attention_efficiency > 0 ? m_device.attention_efficiency : m_params.attention_efficiency;
    }
    /** What a link achieves: its measured efficiency where its cluster states one (Link::efficiency), else the
        default. */
    static double achieved(const Link& link, double defaultEfficiency)
    {
        return link.bandwidth * (link.efficiency > 0 ? link.efficiency : defaultEfficiency);
    }
    double intraBandwidth() const { return achieved(m_device.intra_node, m_params.intra_node_efficiency); }
    double interBandwidth() const { return achieved(m_device.inter_node, m_params.inter_node_efficiency); }

    /** Ring collective over n ranks on one kind of link; all-reduce takes the better of ring and tree. */
    static double flat(Collective kind, double bytes, int n, double bandwidth, double latency)
    {
        if (n <= 1 || bytes <= 0)
            return 0;
        const double share = static_cast<double>(n - 1) / n;
        switch (kind) {
        case Collective::AllReduce: {
            const double ring = 2 * share * bytes / bandwidth + 2 * (n - 1) * latency;
            const double tree = 2 * share * bytes / bandwidth + 2 * std::ceil(std::log2(n)) * latency;
            return std::min(ring, tree);
        }
        case Collective::AllGather:
        case Collective::ReduceScatter:
        case Collective::AllToAll:
            break;
        }
        return share * bytes / bandwidth + (n - 1) * latency;
    }

    DeviceSpec m_device;
    CostParams m_params;
};

} // namespace

std::shared_ptr<const CostSource> makeDatasheetCostSource(const Cluster& cluster, const CostParams& params)
{
    return std::make_shared<DatasheetCostSource>(cluster, params);
}

} // namespace shardscape
