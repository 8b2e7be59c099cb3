// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/model/model_graph.h"

#include <filesystem>
#include <nlohmann/json_fwd.hpp>
#include <string_view>

namespace shardscape {

/** Schema tag of the native graph format; bumped on any incompatible change. */
inline constexpr std::string_view kGraphSchema = "shardscape.graph/1";

/** Converts a graph to the native JSON format (lossless: loadNativeGraph(toNativeJson(g)) == g). */
nlohmann::json toNativeJson(const ModelGraph& graph);

/**
 * Reads a native graph. Throws InputError naming the JSON path of the offending field for a wrong
 * schema, missing or mistyped fields, negative sizes, duplicate names, dangling tensor references, cycles.
 */
ModelGraph loadNativeGraph(const nlohmann::json& doc, std::string_view origin);

/** Writes the native JSON atomically. */
void saveNativeGraph(const ModelGraph& graph, const std::filesystem::path& path);

} // namespace shardscape
