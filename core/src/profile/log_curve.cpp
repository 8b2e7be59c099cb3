// SPDX-License-Identifier: MIT
#include "shardscape/profile/log_curve.h"

#include <algorithm>
#include <cmath>

namespace shardscape {

LogCurve::LogCurve(std::vector<std::pair<double, double>> points)
{
    std::sort(points.begin(), points.end());
    for (std::size_t i = 0; i < points.size();) {
        // Repeated measurements of one size: the geometric mean, which is what log-space interpolation averages.
        std::size_t j = i;
        double logSum = 0;
        while (j < points.size() && points[j].first == points[i].first)
            logSum += std::log(points[j++].second);
        m_points.emplace_back(points[i].first,
                              j - i == 1 ? points[i].second : std::exp(logSum / static_cast<double>(j - i)));
        i = j;
    }
}

double LogCurve::at(double work) const
{
    if (m_points.empty() || !(work > 0))
        return 0;
    const auto& first = m_points.front();
    const auto& last = m_points.back();
    if (work <= first.first)
        return first.second * work / first.first;
    if (work >= last.first)
        return last.second * work / last.first;
    const auto upper = std::upper_bound(m_points.begin(), m_points.end(), work,
                                        [](double w, const std::pair<double, double>& p) { return w < p.first; });
    const auto& [w1, t1] = *upper;
    const auto& [w0, t0] = *(upper - 1);
    if (work == w0)
        return t0;
    const double u = std::log(work / w0) / std::log(w1 / w0);
    return t0 * std::exp(u * std::log(t1 / t0));
}

} // namespace shardscape
