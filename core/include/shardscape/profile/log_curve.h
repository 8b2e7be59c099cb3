// SPDX-License-Identifier: MIT
#pragma once

#include <utility>
#include <vector>

namespace shardscape {

/**
 * Time as a function of work (FLOPs or bytes) through measured points, piecewise linear in log(work) against
 * log(time): between two points t = t0 * (w / w0)^b with b the slope of that segment, so a power law t = a * w^b is
 * reproduced exactly. Outside the measured range the time scales linearly with work at the throughput of the
 * nearest measured point (t = t_end * w / w_end): no slope is extrapolated, so a few noisy small points cannot send
 * large predictions astray. Points at the same work are merged by their geometric mean. Immutable.
 */
class LogCurve
{
public:
    /** (work, seconds) pairs, each > 0 and finite (the profile reader guarantees it); any order. */
    explicit LogCurve(std::vector<std::pair<double, double>> points);

    bool empty() const { return m_points.empty(); }
    /** Seconds for `work` (> 0); 0 for work <= 0 or an empty curve. */
    double at(double work) const;
    double minWork() const { return m_points.empty() ? 0 : m_points.front().first; }
    double maxWork() const { return m_points.empty() ? 0 : m_points.back().first; }
    /** The merged points, by increasing work. */
    const std::vector<std::pair<double, double>>& points() const { return m_points; }

private:
    std::vector<std::pair<double, double>> m_points;
};

} // namespace shardscape
