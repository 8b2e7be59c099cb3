// SPDX-License-Identifier: MIT
#pragma once

#include <sstream>
#include <string>
#include <string_view>
#include <vector>

/** Small text helpers: g++ 12 has no std::format. */
namespace shardscape {

/** Concatenates anything that streams, e.g. cat("layer ", i, " has ", n, " ops"). */
template<typename... Args> std::string cat(const Args&... args)
{
    std::ostringstream out;
    (out << ... << args);
    return out.str();
}

/** Fixed-point text with `digits` decimals. */
std::string fixed(double value, int digits);

/** Scientific text with `digits` significant decimals, e.g. 6.74e+09. */
std::string scientific(double value, int digits);

/** A count with an SI suffix: 6.74 B, 70.6 M, 12.3 k. */
std::string siCount(double value, int digits = 2);

/** Bytes as GB (1e9), GiB or MB text: picks a readable unit. */
std::string humanBytes(double bytes);

/** A memory figure for a message, in GB (1e9) with one decimal from 1 GB up, two below, and in MB under 0.05 GB:
    never "0.0 GB" for something that is not nothing. */
std::string memoryText(double bytes);

/** Levenshtein distance between two ASCII strings, case-insensitive. */
std::size_t editDistance(std::string_view a, std::string_view b);

/** Up to `count` of `candidates` nearest to `name`, nearest first; for "did you mean" messages. */
std::vector<std::string> nearestNames(std::string_view name, const std::vector<std::string>& candidates,
                                      std::size_t count = 3);

/** "a, b, c" */
std::string join(const std::vector<std::string>& items, std::string_view separator = ", ");

bool endsWith(std::string_view text, std::string_view suffix);
bool startsWith(std::string_view text, std::string_view prefix);
std::string toLower(std::string_view text);

/** Whether `text` is well-formed UTF-8 (no overlong forms, surrogates or code points past U+10FFFF). JSON output
    needs it: nlohmann's dump() throws on anything else. */
bool isValidUtf8(std::string_view text);

/** `text` with every byte that is not part of well-formed UTF-8, and every control character, written as \xNN: safe
    to print and to store in JSON. */
std::string escapeInvalidUtf8(std::string_view text);

} // namespace shardscape
