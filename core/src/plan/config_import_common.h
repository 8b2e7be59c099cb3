// SPDX-License-Identifier: MIT
// Shared by config_import.cpp and import_megatron.cpp. Private to core/src/plan.
#pragma once

#include "shardscape/plan/config_import.h"

#include <string>
#include <string_view>
#include <vector>

namespace shardscape::importing {

/** Throws InputError "ORIGIN:LINE: WHAT" (no line when line <= 0). */
[[noreturn]] void fail(std::string_view origin, int line, const std::string& what, const std::string& hint = {});

/** [embedding, blocks..., head] counts per virtual stage from blocks per virtual stage. */
std::vector<int> stageLayersFromBlocks(const std::vector<int>& blocks);

ImportedConfig importMegatron(std::string_view text, std::string_view origin, const ImportOptions& options);

} // namespace shardscape::importing
