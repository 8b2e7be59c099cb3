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

std::string memoryText(double bytes)
{
    const double gb = bytes / 1e9;
    if (std::fabs(gb) >= 0.95)
        return fixed(gb, 1) + " GB";
    if (std::fabs(gb) >= 0.05)
        return fixed(gb, 2) + " GB";
    if (bytes == 0)
        return "0 GB";
    return fixed(bytes / 1e6, std::fabs(bytes) >= 1e6 ? 0 : 2) + " MB";
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

namespace {

/** Length of the well-formed UTF-8 sequence at the start of `text` (RFC 3629, table 3-7 of Unicode), 0 if none. */
std::size_t utf8SequenceLength(std::string_view text)
{
    const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
    const unsigned char b0 = byte(0);
    if (b0 < 0x80)
        return 1;
    std::size_t length = 0;
    unsigned char low = 0x80;
    unsigned char high = 0xBF;
    if (b0 >= 0xC2 && b0 <= 0xDF) {
        length = 2;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
        length = 3;
        low = b0 == 0xE0 ? 0xA0 : 0x80; // no overlong forms
        high = b0 == 0xED ? 0x9F : 0xBF; // no surrogates
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
        length = 4;
        low = b0 == 0xF0 ? 0x90 : 0x80;
        high = b0 == 0xF4 ? 0x8F : 0xBF; // nothing past U+10FFFF
    } else {
        return 0;
    }
    if (text.size() < length || byte(1) < low || byte(1) > high)
        return 0;
    for (std::size_t i = 2; i < length; ++i)
        if (byte(i) < 0x80 || byte(i) > 0xBF)
            return 0;
    return length;
}

} // namespace

bool isValidUtf8(std::string_view text)
{
    while (!text.empty()) {
        const std::size_t length = utf8SequenceLength(text);
        if (length == 0)
            return false;
        text.remove_prefix(length);
    }
    return true;
}

std::string escapeInvalidUtf8(std::string_view text)
{
    static constexpr char kHex[] = "0123456789ABCDEF";
    std::string out;
    out.reserve(text.size());
    while (!text.empty()) {
        const std::size_t length = utf8SequenceLength(text);
        const auto b0 = static_cast<unsigned char>(text[0]);
        if (length == 0 || b0 < 0x20 || b0 == 0x7f) {
            out += "\\x";
            out += kHex[b0 >> 4];
            out += kHex[b0 & 0xf];
            text.remove_prefix(1);
        } else {
            out.append(text.substr(0, length));
            text.remove_prefix(length);
        }
    }
    return out;
}

} // namespace shardscape
