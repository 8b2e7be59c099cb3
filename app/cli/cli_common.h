// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/cost/framework_profile.h"

#include <filesystem>
#include <nlohmann/json_fwd.hpp>
#include <string>

namespace shardscape::cli {

/** Exit codes of the CLI contract (DESIGN.md). */
inline constexpr int kExitOk = 0;
inline constexpr int kExitInternal = 1;
inline constexpr int kExitBadInput = 2;

/** "generic, megatron-core, nemo, torchtitan, deepspeed or composer" for help texts. */
std::string frameworkChoices();

/** --framework NAME (names and aliases of parseFramework, any case); InputError naming the valid ones (exit 2). */
Framework frameworkFromOption(const std::string& name);

/** Writes a JSON document atomically, pretty-printed; "-" writes to stdout. */
void writeJsonOutput(const nlohmann::json& doc, const std::string& path);

} // namespace shardscape::cli
