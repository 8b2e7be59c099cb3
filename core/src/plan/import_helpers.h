// SPDX-License-Identifier: MIT
// What every job-config importer shares (config_import.cpp, import_megatron.cpp): the error form and the stage
// layout arithmetic. Private to core/src/plan; it depends on no importer.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace shardscape::importing {

/** Throws InputError "ORIGIN:LINE: WHAT" (no line when line <= 0). */
[[noreturn]] void fail(std::string_view origin, int line, const std::string& what, const std::string& hint = {});

/** [embedding, blocks..., head] counts per virtual stage from blocks per virtual stage. */
std::vector<int> stageLayersFromBlocks(const std::vector<int>& blocks);

} // namespace shardscape::importing
