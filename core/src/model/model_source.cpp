// SPDX-License-Identifier: MIT
#include "shardscape/model/model_source.h"

#include "shardscape/model/native_json.h"
#include "shardscape/model/onnx_import.h"
#include "shardscape/support/embedded.h"
#include "shardscape/support/error.h"
#include "shardscape/support/json_file.h"
#include "shardscape/support/strings.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

namespace shardscape {

namespace {

std::string presetName(std::string_view fileName)
{
    return std::string(endsWith(fileName, ".json") ? fileName.substr(0, fileName.size() - 5) : fileName);
}

bool looksLikePath(const std::string& spec)
{
    return spec.find('/') != std::string::npos || endsWith(toLower(spec), ".json") || endsWith(toLower(spec), ".onnx")
        || std::filesystem::exists(spec);
}

} // namespace

std::vector<std::string> modelPresetNames()
{
    std::vector<std::string> names;
    for (const auto& file : embeddedModelPresets())
        names.push_back(presetName(file.name));
    std::sort(names.begin(), names.end());
    return names;
}

nlohmann::json modelPresetConfig(const std::string& name)
{
    const std::string wanted = toLower(name);
    for (const auto& file : embeddedModelPresets())
        if (presetName(file.name) == wanted)
            return parseJson(file.text, cat("preset ", wanted));
    throw InputError(
        cat("unknown model preset '", name, "' (nearest: ", join(nearestNames(name, modelPresetNames())), ")"),
        "run `shardscape-cli models` for the list, or pass a config.json, graph .json or .onnx path");
}

ModelGraph loadModel(const std::string& spec, const BuildOptions& options)
{
    if (spec.empty())
        throw InputError("no model given", "name a preset (see `shardscape-cli models`) or a model file");
    if (!looksLikePath(spec))
        return buildFromHfConfig(modelPresetConfig(spec), options, toLower(spec));

    const std::filesystem::path path(spec);
    if (endsWith(toLower(spec), ".onnx")) {
#ifdef SHARDSCAPE_HAVE_ONNX
        return loadOnnxModel(path, options);
#else
        throw InputError(cat(spec, ": ONNX import is not available in this build yet"),
                         "export the model's HF config.json, or a native graph .json, and load that");
#endif
    }
    std::string name = path.stem().string();
    if (name == "config" && path.has_parent_path())
        name = path.parent_path().filename().string();
    // The label ends up in JSON (plan files, traces): a file name that is not UTF-8 is escaped, not refused.
    return loadModelJson(readJsonFile(path), spec, options, escapeInvalidUtf8(name));
}

ModelGraph loadModelJson(const nlohmann::json& doc, std::string_view origin, const BuildOptions& options,
                         std::string name)
{
    if (!doc.is_object())
        throw InputError(cat(origin, ": expected a JSON object (an HF config.json or a native graph)"));
    if (doc.contains("schema"))
        return loadNativeGraph(doc, origin);
    return buildFromHfConfig(doc, options, std::move(name));
}

} // namespace shardscape
