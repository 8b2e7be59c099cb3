// SPDX-License-Identifier: MIT
// Measured costs: log-space interpolation over the profile's rows, the datasheet where nothing was measured.
#include "shardscape/profile/profile_cost_source.h"

#include "shardscape/profile/log_curve.h"
#include "shardscape/profile/profile_summary.h"
#include "shardscape/support/strings.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <tuple>
#include <utility>

namespace shardscape {

namespace {

using Points = std::vector<std::pair<double, double>>;
using Aspect = std::array<double, 3>;

/** A GEMM shape with its scale removed: (log m, log n, log k) minus their mean. */
Aspect aspectOf(double m, double n, double k)
{
    const Aspect logs {std::log(m), std::log(n), std::log(k)};
    const double mean = (logs[0] + logs[1] + logs[2]) / 3;
    return {logs[0] - mean, logs[1] - mean, logs[2] - mean};
}

double distance(const Aspect& a, const Aspect& b)
{
    return std::sqrt((a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) + (a[2] - b[2]) * (a[2] - b[2]));
}

/** nccl-tests' bus-bandwidth factor: busbw = algbw * factor (doc/PERFORMANCE.md). */
double busFactor(const std::string& op, int ranks)
{
    const double n = ranks;
    if (op == "all_reduce")
        return 2 * (n - 1) / n;
    if (op == "send_recv")
        return 1;
    return (n - 1) / n;
}

std::string opName(Collective kind)
{
    switch (kind) {
    case Collective::AllReduce:
        return "all_reduce";
    case Collective::AllGather:
        return "all_gather";
    case Collective::ReduceScatter:
        return "reduce_scatter";
    case Collective::AllToAll:
        break;
    }
    return "all_to_all";
}

/** The matmul rows of one dtype: exact shapes, and one curve per measured aspect over the rows near it. */
struct MatmulTable
{
    std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t>, double> exact;
    std::vector<Aspect> aspects;
    std::vector<LogCurve> curves; ///< curves[i]: rows whose aspect is within log(2) of aspects[i]

    explicit MatmulTable(const std::vector<const MatmulRow*>& rows)
    {
        std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t>, std::pair<double, int>> logSums;
        for (const auto* r : rows) {
            auto& [sum, count] = logSums[{r->m, r->n, r->k}];
            sum += std::log(r->time_s);
            ++count;
        }
        for (const auto& [shape, sum] : logSums)
            exact[shape] = std::exp(sum.first / sum.second);
        std::vector<Aspect> rowAspects;
        for (const auto* r : rows) {
            rowAspects.push_back(
                aspectOf(static_cast<double>(r->m), static_cast<double>(r->n), static_cast<double>(r->k)));
            const bool seen = std::any_of(aspects.begin(), aspects.end(),
                                          [&](const Aspect& a) { return distance(a, rowAspects.back()) < 1e-9; });
            if (!seen)
                aspects.push_back(rowAspects.back());
        }
        const double band = std::log(2.0);
        for (const auto& aspect : aspects) {
            Points points;
            for (std::size_t i = 0; i < rows.size(); ++i)
                if (distance(rowAspects[i], aspect) <= band + 1e-9)
                    points.emplace_back(rows[i]->flops(), rows[i]->time_s);
            curves.emplace_back(std::move(points));
        }
    }

    double time(double m, double n, double k) const
    {
        const auto mi = static_cast<std::int64_t>(m);
        const auto ni = static_cast<std::int64_t>(n);
        const auto ki = static_cast<std::int64_t>(k);
        if (static_cast<double>(mi) == m && static_cast<double>(ni) == n && static_cast<double>(ki) == k)
            if (const auto it = exact.find({mi, ni, ki}); it != exact.end())
                return it->second;
        const Aspect query = aspectOf(m, n, k);
        std::size_t best = 0;
        for (std::size_t i = 1; i < aspects.size(); ++i)
            if (distance(aspects[i], query) < distance(aspects[best], query))
                best = i;
        return curves[best].at(2 * m * n * k);
    }
};

struct Group
{
    int ranks = 0;
    int per_node = 0;
    LogCurve curve;
    int nodes() const { return (ranks + per_node - 1) / per_node; }
};

class ProfileCostSource final : public CostSource
{
public:
    ProfileCostSource(std::shared_ptr<const Profile> profile, std::shared_ptr<const CostSource> fallback)
        : m_profile(std::move(profile))
        , m_fallback(std::move(fallback))
    {
        std::map<DType, std::vector<const MatmulRow*>> matmulByType;
        for (const auto& r : m_profile->matmul)
            matmulByType[r.dtype].push_back(&r);
        for (const auto& [dtype, rows] : matmulByType)
            m_matmul.emplace(dtype, MatmulTable(rows));

        // The engine's attention op is a fused (flash) kernel, which every framework runs. shardscape-profile's own
        // rows time the unfused way (cuBLAS QK^T, softmax, PV: it builds without cuDNN's fused attention), about a
        // third of the fused kernel's rate on an H100 (tests/data/measured_layers_h100.json: PyTorch's SDPA at
        // 470-650 TFLOP/s forward against 155): they describe no kernel a training job runs, so the datasheet
        // answers instead. Rows of a fused kernel (any other source) are used.
        std::map<DType, Points> attention;
        for (const auto& r : m_profile->attention)
            if (r.causal && r.source != kUnfusedAttentionSource)
                attention[r.dtype].emplace_back(r.flops, r.time_s);
        for (auto& [dtype, points] : attention)
            m_attention.emplace(dtype, LogCurve(std::move(points)));

        m_memoryOp = pickMemoryOp();
        Points memory;
        for (const auto& r : m_profile->memory_ops)
            if (r.op == m_memoryOp)
                memory.emplace_back(r.bytes, r.time_s);
        m_memory = LogCurve(std::move(memory));

        std::map<std::tuple<std::string, int, int>, Points> groups;
        for (const auto& r : m_profile->collectives)
            groups[{r.op, r.ranks, r.ranks_per_node}].emplace_back(r.bytes, r.time_s);
        for (auto& [key, points] : groups) {
            const auto& [op, ranks, perNode] = key;
            m_collectives[op].push_back(Group {ranks, perNode, LogCurve(std::move(points))});
        }
        for (const auto& group : groupsOf("send_recv")) {
            // The fewest ranks first: a ring of two is the plain message the pipeline sends.
            auto& slot = group.nodes() > 1 ? m_p2pInter : m_p2pIntra;
            if (!slot || group.ranks < slot->ranks)
                slot = &group;
        }
        m_name = describe();
    }
    // m_p2pIntra/m_p2pInter point into m_collectives.
    ProfileCostSource(const ProfileCostSource&) = delete;
    ProfileCostSource& operator=(const ProfileCostSource&) = delete;

    std::string name() const override { return m_name; }

    double matmulTime(double m, double n, double k, DType dtype) const override
    {
        const auto it = m_matmul.find(dtype);
        if (it == m_matmul.end() || m <= 0 || n <= 0 || k <= 0)
            return m_fallback->matmulTime(m, n, k, dtype);
        return std::max(it->second.time(m, n, k), m_fallback->minKernelTime());
    }

    double attentionTime(double flops, DType dtype) const override
    {
        const auto it = m_attention.find(dtype);
        if (it == m_attention.end() || flops <= 0)
            return m_fallback->attentionTime(flops, dtype);
        return std::max(it->second.at(flops), m_fallback->minKernelTime());
    }

    double memoryTime(double bytes) const override
    {
        if (m_memory.empty() || bytes <= 0)
            return m_fallback->memoryTime(bytes);
        return std::max(m_memory.at(bytes), m_fallback->minKernelTime());
    }

    double collectiveTime(Collective kind, double bytes, const GroupShape& group) const override
    {
        if (group.size <= 1 || bytes <= 0)
            return 0;
        const std::string op = opName(kind);
        const int size = group.size;
        const int perNode = std::max(1, std::min(group.per_node, group.size));
        const bool multiNode = (size + perNode - 1) / perNode > 1;
        const Group* best = nullptr;
        double bestDistance = 0;
        for (const auto& g : groupsOf(op)) {
            if ((g.nodes() > 1) != multiNode)
                continue;
            const double d = std::fabs(std::log(static_cast<double>(g.ranks) / size))
                + std::fabs(std::log(static_cast<double>(g.per_node) / perNode));
            if (!best || d < bestDistance || (d == bestDistance && g.ranks < best->ranks)) {
                best = &g;
                bestDistance = d;
            }
        }
        if (!best)
            return m_fallback->collectiveTime(kind, bytes, group);
        return best->curve.at(bytes) * busFactor(op, size) / busFactor(op, best->ranks);
    }

    double p2pTime(double bytes, bool interNode) const override
    {
        const Group* group = interNode ? m_p2pInter : m_p2pIntra;
        if (!group || bytes <= 0)
            return m_fallback->p2pTime(bytes, interNode);
        return group->curve.at(bytes);
    }

    double minKernelTime() const override { return m_fallback->minKernelTime(); }

private:
    const std::vector<Group>& groupsOf(const std::string& op) const
    {
        static const std::vector<Group> kNone;
        const auto it = m_collectives.find(op);
        return it == m_collectives.end() ? kNone : it->second;
    }

    std::string pickMemoryOp() const
    {
        for (const char* preferred : {"elementwise", "copy"})
            for (const auto& r : m_profile->memory_ops)
                if (r.op == preferred)
                    return preferred;
        return m_profile->memory_ops.empty() ? std::string() : m_profile->memory_ops.front().op;
    }

    std::string describe() const
    {
        bool collectives = false;
        for (const auto& [op, groups] : m_collectives)
            collectives = collectives || op != "send_recv";
        const std::vector<std::pair<std::string, bool>> kinds {{"matmul", !m_matmul.empty()},
                                                               {"attention", !m_attention.empty()},
                                                               {"memory", !m_memory.empty()},
                                                               {"collectives", collectives},
                                                               {"p2p", m_p2pIntra || m_p2pInter}};
        std::vector<std::string> measured;
        std::vector<std::string> datasheet;
        for (const auto& [kind, has] : kinds)
            (has ? measured : datasheet).push_back(kind);
        std::string text = cat("profile:", deviceSlug(m_profile->device.name));
        if (!measured.empty())
            text += cat(" (", join(measured), ")");
        if (!datasheet.empty())
            text += cat(" + ", m_fallback->name(), " (", join(datasheet), ")");
        return text;
    }

    std::shared_ptr<const Profile> m_profile;
    std::shared_ptr<const CostSource> m_fallback;
    std::map<DType, MatmulTable> m_matmul;
    std::map<DType, LogCurve> m_attention;
    std::string m_memoryOp;
    LogCurve m_memory {{}};
    std::map<std::string, std::vector<Group>> m_collectives;
    const Group* m_p2pIntra = nullptr;
    const Group* m_p2pInter = nullptr;
    std::string m_name;
};

} // namespace

std::shared_ptr<const CostSource> makeProfileCostSource(std::shared_ptr<const Profile> profile,
                                                        std::shared_ptr<const CostSource> fallback)
{
    return std::make_shared<ProfileCostSource>(std::move(profile), std::move(fallback));
}

CostSourceChoice chooseCostSource(const Cluster& cluster, const CostParams& params, const ProfileRequest& request)
{
    CostSourceChoice choice;
    choice.profile = findProfile(cluster.device, request);
    choice.source = makeDatasheetCostSource(cluster, params);
    if (choice.profile.profile) {
        choice.source = makeProfileCostSource(choice.profile.profile, choice.source);
        if (const auto& calibration = choice.profile.profile->calibration) {
            choice.source = makeCalibratedCostSource(*calibration, choice.source);
            choice.calibrated_memory_bytes = calibration->memory_offset_bytes;
            choice.profile.notes.push_back(cat("calibrated on ", calibration->runs.size(), " training run",
                                               calibration->runs.size() == 1 ? "" : "s", " (", calibration->created_utc,
                                               "): ", describeCalibration(*calibration)));
        }
    }
    return choice;
}

} // namespace shardscape
