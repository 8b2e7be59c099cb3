// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/model/hf_config.h"
#include "shardscape/model/model_graph.h"

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace shardscape {

/** Names of the built-in model presets (the files in resources/models, without ".json"), sorted. */
std::vector<std::string> modelPresetNames();

/** The HF-style config of a preset; InputError with the nearest names when unknown. */
nlohmann::json modelPresetConfig(const std::string& name);

/**
 * Loads a model from what the user typed: a preset name, an HF config.json, a native graph .json
 * (recognised by its "schema" key) or an .onnx file. Throws InputError with the cause and a way out.
 */
ModelGraph loadModel(const std::string& spec, const BuildOptions& options);

/**
 * The JSON half of loadModel: a parsed document that is a native graph (it has a "schema" key) or an HF config.json.
 * `origin` names it in messages; `name` labels a graph built from an HF config.
 */
ModelGraph loadModelJson(const nlohmann::json& doc, std::string_view origin, const BuildOptions& options,
                         std::string name);

} // namespace shardscape
