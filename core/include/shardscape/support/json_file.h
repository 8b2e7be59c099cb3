// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

namespace shardscape {

/** Largest file any loader reads; checked before reading so a multi-GB file is refused at once. */
inline constexpr std::uintmax_t kMaxInputFileBytes = 512ull * 1024 * 1024;

/**
 * Reads a whole text file. Throws InputError naming the path when it is missing, a directory,
 * unreadable, or larger than `maxBytes`.
 */
std::string readTextFile(const std::filesystem::path& path, std::uintmax_t maxBytes = kMaxInputFileBytes);

/**
 * Parses JSON text: the one reader of every JSON input. On a syntax error, or nesting deeper than kMaxJsonNesting
 * (json_nesting.h), throws InputError "ORIGIN:LINE:COLUMN: ..." so the user can jump to the spot. `origin` is a path
 * or a preset name used only in messages.
 */
nlohmann::json parseJson(std::string_view text, std::string_view origin);

/** readTextFile + parseJson. */
nlohmann::json readJsonFile(const std::filesystem::path& path);

} // namespace shardscape
