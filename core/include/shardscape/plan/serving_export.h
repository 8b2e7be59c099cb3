// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/plan/serving_plan.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shardscape {

/** Serving engines a serving plan exports to, as a launch script. */
enum class ServingExportTarget : std::uint8_t
{
    Vllm, ///< `vllm serve MODEL ...`
    Sglang ///< `python -m sglang.launch_server --model-path MODEL ...`
};
std::string_view servingExportTargetName(ServingExportTarget target);
std::optional<ServingExportTarget> parseServingExportTarget(std::string_view name);

struct ServingExport
{
    std::string text; ///< a bash script: one launch command per node
    std::vector<std::string> notes; ///< what the command cannot carry (also written into the script as comments)
};

/**
 * The engine's launch command for `plan`. `modelPath` is what the engine loads (an HF repo id or a local
 * checkpoint directory); every flag is checked against the engine's own argument parser (the version named in the
 * script's header). InputError when the plan cannot run on that engine.
 */
ServingExport exportServingPlan(ServingExportTarget target, const LoadedServingPlan& plan,
                                const std::string& modelPath);

/** What to pass the engine for a model spec: a preset's `_name_or_path`, a config.json's directory, else the spec. */
std::string servingModelPath(const std::string& modelSpec);

} // namespace shardscape
