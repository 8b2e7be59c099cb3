// SPDX-License-Identifier: MIT
// A cost source scaled by the factors `profile import-log` fitted on the user's own training runs.
#include "shardscape/profile/profile_cost_source.h"
#include "shardscape/support/strings.h"

#include <algorithm>

namespace shardscape {

namespace {

class CalibratedCostSource final : public CostSource
{
public:
    CalibratedCostSource(const ProfileCalibration& calibration, std::shared_ptr<const CostSource> inner)
        : m_calibration(calibration)
        , m_inner(std::move(inner))
        , m_name(cat(m_inner->name(), ", calibrated on ", calibration.runs.size(),
                     calibration.runs.size() == 1 ? " run" : " runs"))
    {
    }

    std::string name() const override { return m_name; }
    double matmulTime(double m, double n, double k, DType dtype) const override
    {
        return floored(m_inner->matmulTime(m, n, k, dtype) * m_calibration.matmul_time_scale);
    }
    double attentionTime(double flops, DType dtype) const override
    {
        return floored(m_inner->attentionTime(flops, dtype) * m_calibration.attention_time_scale);
    }
    double memoryTime(double bytes) const override
    {
        return floored(m_inner->memoryTime(bytes) * m_calibration.memory_time_scale);
    }
    double collectiveTime(Collective kind, double bytes, const GroupShape& group) const override
    {
        return m_inner->collectiveTime(kind, bytes, group) * m_calibration.collective_time_scale;
    }
    double p2pTime(double bytes, bool interNode) const override
    {
        return m_inner->p2pTime(bytes, interNode) * m_calibration.collective_time_scale;
    }
    double minKernelTime() const override { return std::max(m_inner->minKernelTime(), m_calibration.kernel_floor_s); }

private:
    double floored(double seconds) const { return std::max(seconds, m_calibration.kernel_floor_s); }

    ProfileCalibration m_calibration;
    std::shared_ptr<const CostSource> m_inner;
    std::string m_name;
};

} // namespace

std::shared_ptr<const CostSource> makeCalibratedCostSource(const ProfileCalibration& calibration,
                                                           std::shared_ptr<const CostSource> inner)
{
    return std::make_shared<CalibratedCostSource>(calibration, std::move(inner));
}

} // namespace shardscape
