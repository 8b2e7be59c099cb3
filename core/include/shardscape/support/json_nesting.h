// SPDX-License-Identifier: MIT
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace shardscape {

/**
 * How deep any JSON input may nest. The deepest file Shardscape reads (a plan file, a profile) nests about 6 levels;
 * nlohmann parses any depth without recursion, but copying, comparing and printing a value recurse once per level,
 * so a 400 kB file of nested brackets used to overflow the stack (SIGSEGV) in the first error message that quoted it.
 */
inline constexpr int kMaxJsonNesting = 100;

/** Where a JSON text first nests deeper than `limit`: the byte offset of the opening bracket. */
struct JsonNestingExcess
{
    std::size_t offset = 0;
    int limit = 0;
};

/**
 * One pass over the text, without recursion or allocation: counts '[' and '{' outside strings (escapes included)
 * and reports the first that goes past `limit`. Malformed text is left to the parser; this only bounds the depth.
 * Header-only, so that the GPU profiler, which does not link the engine, reads its JSON the same way.
 */
inline std::optional<JsonNestingExcess> findJsonNestingExcess(std::string_view text, int limit = kMaxJsonNesting)
{
    int depth = 0;
    bool inString = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (inString) {
            if (c == '\\')
                ++i; // the escaped character cannot end the string
            else if (c == '"')
                inString = false;
            continue;
        }
        if (c == '"') {
            inString = true;
        } else if (c == '[' || c == '{') {
            if (++depth > limit)
                return JsonNestingExcess {i, limit};
        } else if (c == ']' || c == '}') {
            if (depth > 0)
                --depth;
        }
    }
    return std::nullopt;
}

} // namespace shardscape
