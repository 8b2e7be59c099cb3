// SPDX-License-Identifier: MIT
#pragma once

#include <optional>
#include <string_view>

namespace shardscape::importing {

/**
 * How deep a TOML job config may nest: tables, dotted keys, arrays and inline tables together. torchtitan's configs
 * nest two or three levels. toml++ caps arrays and inline tables at 256 but not dotted keys or table headers, and
 * it walks the finished tree recursively: `a.a.a. ... = 1` with 50,000 parts overflowed the stack (SIGSEGV).
 */
inline constexpr int kMaxTomlNesting = 100;

/** Where a TOML text first nests deeper than the limit (1-based line and column). */
struct TomlNestingExcess
{
    int line = 0;
    int column = 0;
};

/**
 * One pass over the text, without recursion: follows strings (basic, literal, multi-line), comments, table headers,
 * keys and brackets, and reports the first point where the tree would be deeper than `limit`. Malformed text is
 * left to the parser; this only bounds the depth.
 */
std::optional<TomlNestingExcess> findTomlNestingExcess(std::string_view text, int limit = kMaxTomlNesting);

} // namespace shardscape::importing
