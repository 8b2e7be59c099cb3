// SPDX-License-Identifier: MIT
#include "toml_nesting.h"

#include <algorithm>
#include <vector>

namespace shardscape::importing {

std::optional<TomlNestingExcess> findTomlNestingExcess(std::string_view text, int limit)
{
    int line = 1;
    std::size_t lineStart = 0;
    const auto excess = [&](std::size_t at) { return TomlNestingExcess {line, static_cast<int>(at - lineStart) + 1}; };
    int header = 0; // parts of the current [table] or [[array]] header
    /** An open '[' or '{' of a value, with the key parts in force when it opened (an inline table's keys add). */
    struct Open
    {
        char bracket;
        int keyParts;
    };
    std::vector<Open> open;
    bool atLineStart = true;
    bool inKey = true; // reading a key: at a line's start outside values, or after '{' or ',' in an inline table
    bool inHeader = false;
    int dots = 0; // dots in the key or header being read
    int keyParts = 0; // key parts from the root table's key down to the value being read
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (c == '\n') {
            ++line;
            lineStart = i + 1;
            if (open.empty()) {
                atLineStart = true;
                inKey = true;
                inHeader = false;
                dots = 0;
                keyParts = 0;
            }
            continue;
        }
        if (c == '#') { // a comment runs to the end of the line
            while (i + 1 < text.size() && text[i + 1] != '\n')
                ++i;
            continue;
        }
        if (c == '"' || c == '\'') { // strings, multi-line ones included; their dots and brackets are text
            const bool triple = text.substr(i, 3) == std::string_view(c == '"' ? "\"\"\"" : "'''");
            const std::size_t quote = triple ? 3 : 1;
            std::size_t j = i + quote;
            while (j < text.size()) {
                if (c == '"' && text[j] == '\\') {
                    j += 2;
                    continue;
                }
                if (text[j] == '\n') {
                    if (!triple)
                        break; // unterminated: the parser says so
                    ++line;
                    lineStart = j + 1;
                }
                if (text.substr(j, quote) == text.substr(i, quote))
                    break;
                ++j;
            }
            i = std::min(j + quote, text.size()) - 1;
            atLineStart = false;
            continue;
        }
        if (c == ' ' || c == '\t' || c == '\r')
            continue;
        if (inHeader) {
            if (c == '.')
                ++dots;
            else if (c == ']') {
                header = dots + 1;
                if (header > limit)
                    return excess(i);
                inHeader = false;
                inKey = false; // the rest of the line is "]" or a comment
                while (i + 1 < text.size() && text[i + 1] == ']')
                    ++i;
            }
            continue;
        }
        if (atLineStart && open.empty() && c == '[') {
            inHeader = true;
            atLineStart = false;
            dots = 0;
            if (i + 1 < text.size() && text[i + 1] == '[')
                ++i;
            continue;
        }
        atLineStart = false;
        if (inKey) {
            if (c == '.') {
                ++dots;
            } else if (c == '=') {
                keyParts = (open.empty() ? 0 : open.back().keyParts) + dots + 1;
                if (header + keyParts + static_cast<int>(open.size()) > limit)
                    return excess(i);
                inKey = false;
                dots = 0;
            } else if (c == '}' && !open.empty() && open.back().bracket == '{') { // an empty inline table
                keyParts = open.back().keyParts;
                open.pop_back();
                inKey = false;
            }
            continue;
        }
        if (c == '[' || c == '{') {
            open.push_back({c, keyParts});
            if (header + keyParts + static_cast<int>(open.size()) > limit)
                return excess(i);
            if (c == '{') {
                inKey = true;
                dots = 0;
            }
        } else if ((c == ']' || c == '}') && !open.empty()) {
            keyParts = open.back().keyParts; // back to the key whose value the closed bracket was in
            open.pop_back();
        } else if (c == ',' && !open.empty() && open.back().bracket == '{') {
            inKey = true;
            dots = 0;
        }
    }
    return std::nullopt;
}

} // namespace shardscape::importing
