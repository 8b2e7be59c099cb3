// SPDX-License-Identifier: MIT
// Residual bands for the uncertainty ranges (core/src/cost/uncertainty.cpp): the central 80% of the relative
// residuals (measured / predicted - 1) per group, written as resources/calibration/*.json by the calibration
// benches, and their coverage, in-sample and leave-one-out. Shared by bench_calibration and bench_memory_peaks.
#pragma once

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace shardscape::residuals {

/** Linear-interpolated percentile q in [0, 1] of unsorted values. */
inline double percentile(std::vector<double> values, double q)
{
    if (values.empty())
        return 0;
    std::sort(values.begin(), values.end());
    const double pos = q * static_cast<double>(values.size() - 1);
    const auto lo = static_cast<std::size_t>(pos);
    const std::size_t hi = std::min(lo + 1, values.size() - 1);
    return values[lo] + (pos - static_cast<double>(lo)) * (values[hi] - values[lo]);
}

constexpr double kLow = 0.10;
constexpr double kHigh = 0.90;
constexpr int kMinRows = 5; // uncertainty.h kMinRowsPerBand: smaller groups fall back to "all"

struct Sample
{
    std::string group;
    double residual = 0; ///< measured / predicted - 1
};

/** The JSON table: one band per group with kMinRows or more rows, and "all". */
inline nlohmann::json bandsJson(const std::vector<Sample>& samples, const std::string& source)
{
    std::map<std::string, std::vector<double>> groups;
    for (const auto& s : samples) {
        groups[s.group].push_back(s.residual);
        groups["all"].push_back(s.residual);
    }
    nlohmann::json bands = nlohmann::json::array();
    for (const auto& [key, values] : groups)
        bands.push_back({{"key", key},
                         {"rows", values.size()},
                         {"low", std::round(percentile(values, kLow) * 1e4) / 1e4},
                         {"high", std::round(percentile(values, kHigh) * 1e4) / 1e4}});
    return {{"schema", "shardscape.residuals/1"},
            {"source", source},
            {"interval", "10th to 90th percentile of measured / predicted - 1"},
            {"bands", bands}};
}

/** How often the truth falls inside the band of its group: in-sample, and leave-one-out (the row's own residual
    removed before its band is computed). Returns {in-sample, leave-one-out} fractions. */
inline std::pair<double, double> coverage(const std::vector<Sample>& samples)
{
    if (samples.empty())
        return {0, 0};
    int inside = 0, insideLoo = 0;
    for (std::size_t i = 0; i < samples.size(); ++i) {
        const auto bandOf = [&](bool leaveOut) {
            std::vector<double> group, all;
            for (std::size_t j = 0; j < samples.size(); ++j) {
                if (leaveOut && j == i)
                    continue;
                all.push_back(samples[j].residual);
                if (samples[j].group == samples[i].group)
                    group.push_back(samples[j].residual);
            }
            const auto& use = static_cast<int>(group.size()) >= kMinRows ? group : all;
            return std::pair {std::min(0.0, percentile(use, kLow)), std::max(0.0, percentile(use, kHigh))};
        };
        const double r = samples[i].residual;
        const auto [lo, hi] = bandOf(false);
        inside += r >= lo && r <= hi ? 1 : 0;
        const auto [loL, hiL] = bandOf(true);
        insideLoo += r >= loL && r <= hiL ? 1 : 0;
    }
    const double n = static_cast<double>(samples.size());
    return {inside / n, insideLoo / n};
}

inline void writeBands(const std::string& path, const nlohmann::json& table)
{
    std::ofstream out(path);
    if (!out)
        throw std::runtime_error("cannot write " + path);
    out << table.dump(2) << '\n';
}

} // namespace shardscape::residuals
