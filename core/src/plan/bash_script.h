// SPDX-License-Identifier: MIT
// A small reader for the bash that launch scripts are written in. Private to core/src/plan (import_megatron.cpp).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace shardscape::importing {

/** A word after expansion, with the line it came from. */
struct ScriptToken
{
    std::string text;
    int line = 0;
};

/**
 * The script's commands, in order, each as its words after expansion: comments, line continuations, quotes,
 * NAME=value and NAME=( ... ) assignments (kept for later commands), $NAME / ${NAME:-default} / "${NAME[@]}"
 * expansion and word splitting of unquoted expansions. Command substitution and arithmetic stay literal text.
 * Throws InputError "ORIGIN:LINE: ..." for an unterminated quote or expansion.
 */
std::vector<std::vector<ScriptToken>> expandedCommands(std::string_view text, std::string_view origin);

} // namespace shardscape::importing
