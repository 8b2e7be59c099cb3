// SPDX-License-Identifier: MIT
#pragma once

#include <filesystem>
#include <nlohmann/json_fwd.hpp>
#include <string>

namespace shardscape::cli {

/** Exit codes of the CLI contract (DESIGN.md). */
inline constexpr int kExitOk = 0;
inline constexpr int kExitInternal = 1;
inline constexpr int kExitBadInput = 2;

/** Writes a JSON document atomically, pretty-printed; "-" writes to stdout. */
void writeJsonOutput(const nlohmann::json& doc, const std::string& path);

} // namespace shardscape::cli
