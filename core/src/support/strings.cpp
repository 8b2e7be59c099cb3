// SPDX-License-Identifier: MIT
#include "shardscape/support/strings.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <iomanip>
#include <numeric>

namespace shardscape {

std::string fixed(double value, int digits)
{
    std::ostringstream out;
    out << std::fixed << std::setprecision(digits) << value;
    return out.str();
}

std::string scientific(double value, int digits)
{
    std::ostringstream out;
    out << std::scientific << std::setprecision(digits) << value;
    return out.str();
}

std::string siCount(double value, int digits)
{
    const double magnitude = std::fabs(value);
    if (magnitude >= 1e12)
        return fixed(value / 1e12, digits) + " T";
    if (magnitude >= 1e9)
        return fixed(value / 1e9, digits) + " B";
    if (magnitude >= 1e6)
        return fixed(value / 1e6, digits) + " M";
    if (magnitude >= 1e3)
        return fixed(value / 1e3, digits) + " k";
    return fixed(value, magnitude == std::floor(magnitude) ? 0 : digits);
}

std::string humanBytes(double bytes)
{
    const double magnitude = std::fabs(bytes);
    if (magnitude >= 1e9)
        return fixed(bytes / 1e9, 2) + " GB";
    if (magnitude >= 1e6)
        return fixed(bytes / 1e6, 2) + " MB";
    if (magnitude >= 1e3)
        return fixed(bytes / 1e3, 2) + " kB";
    return fixed(bytes, 0) + " B";
}

std::size_t editDistance(std::string_view a, std::string_view b)
{
    std::vector<std::size_t> previous(b.size() + 1);
    std::vector<std::size_t> current(b.size() + 1);
    std::iota(previous.begin(), previous.end(), std::size_t {0});
    for (std::size_t i = 1; i <= a.size(); ++i) {
        current[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const bool same = std::tolower(static_cast<unsigned char>(a[i - 1]))
                == std::tolower(static_cast<unsigned char>(b[j - 1]));
            current[j] = std::min({previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (same ? 0 : 1)});
        }
        std::swap(previous, current);
    }
    return previous[b.size()];
}

std::vector<std::string> nearestNames(std::string_view name, const std::vector<std::string>& candidates,
                                      std::size_t count)
{
    std::vector<std::pair<double, std::string>> scored;
    scored.reserve(candidates.size());
    const std::string lowered = toLower(name);
    for (const auto& candidate : candidates) {
        double distance = static_cast<double>(editDistance(name, candidate));
        // A typed fragment ("llama2") ranks its family first, closest completion first.
        if (!lowered.empty() && toLower(candidate).find(lowered) != std::string::npos)
            distance /= 100;
        scored.emplace_back(distance, candidate);
    }
    std::stable_sort(scored.begin(), scored.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    std::vector<std::string> out;
    for (std::size_t i = 0; i < scored.size() && i < count; ++i)
        out.push_back(scored[i].second);
    return out;
}

std::string join(const std::vector<std::string>& items, std::string_view separator)
{
    std::string out;
    for (std::size_t i = 0; i < items.size(); ++i) {
        if (i)
            out += separator;
        out += items[i];
    }
    return out;
}

bool endsWith(std::string_view text, std::string_view suffix)
{
    return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

bool startsWith(std::string_view text, std::string_view prefix)
{
    return text.substr(0, prefix.size()) == prefix;
}

std::string toLower(std::string_view text)
{
    std::string out(text);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
}

} // namespace shardscape
