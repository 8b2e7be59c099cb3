// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/plan/plan_file.h"
#include "shardscape/sim/simulator.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shardscape {

/** What a plan can be exported as (README "Exporting a plan"). */
enum class ExportTarget : std::uint8_t
{
    Json, ///< the plan file itself (shardscape.plan/1), re-simulated and written again: a lossless round trip
    Torchtitan, ///< torchtitan main's Python config module, or the v0.2.x job TOML (framework_version "v0.2")
    Megatron, ///< bash script: torchrun ... pretrain_gpt.py with Megatron-LM arguments
    DeepSpeed, ///< DeepSpeed config JSON
    Torchrun, ///< bash launcher for N nodes x G GPUs (c10d rendezvous), running torchtitan with the TOML by default
    ChromeTrace, ///< the simulated timeline as Chrome Trace Event JSON (Perfetto)
    Dump ///< MoAI-style one-line dump of the selected configuration
};

/** Every target, in the order the CLI lists them. */
const std::vector<ExportTarget>& exportTargets();
/** "json", "torchtitan", "megatron", "deepspeed", "torchrun", "chrome-trace", "dump" */
std::string_view exportTargetName(ExportTarget target);
std::optional<ExportTarget> parseExportTarget(std::string_view name);
/** A file name suffix that suits the target for a framework release (exportFrameworkVersion; empty = the current
    one): ".json", ".py" (torchtitan main) or ".toml" (torchtitan v0.2), ".sh" or ".dump". */
std::string_view exportTargetSuffix(ExportTarget target, std::string_view frameworkVersion = {});

/** An exported text and what the target could not express (one line each, without a "note:" prefix). */
struct ExportResult
{
    std::string text;
    /** Everything the target cannot express exactly, or where the text deviates from the plan; the same notes are
        written into the text as comments wherever the format has comments. */
    std::vector<std::string> notes;
};

/** How to write an export. */
struct ExportOptions
{
    /** The release line of the target's framework to write for (frameworkVersions: "core_v0.19", "main", "v0.2",
        ...); empty = the plan's own when it was made for that framework, else the framework's current line. */
    std::string framework_version;
};

/** The release line `exportPlan` writes `target` for under `options` (empty for targets without a framework);
    throws InputError naming the releases when the requested one is not among them. */
std::string exportFrameworkVersion(ExportTarget target, const LoadedPlan& plan, const ExportOptions& options = {});

/**
 * Writes `plan` for `target`. `model` is the model the plan was made for, built with the plan's sequence length
 * (any micro-batch); its transformer shape supplies the Megatron model flags and the torchtitan module names.
 * `cluster` is where the job will run (normally plan.cluster): the launchers take their node and GPU counts from
 * it. `timeline` is the simulated step for ChromeTrace (with events); when null the plan is re-simulated. Json
 * re-simulates the plan too, with its recorded stage split, so the file is rewritten from the same evaluation.
 * Every text starts with a header naming Shardscape, the model, the cluster and the predicted step time and MFU
 * (comments where the format has them, a "_comment" key in DeepSpeed JSON, "otherData" in the trace, nothing in
 * the plan JSON, whose own fields say it). Throws InputError when the plan cannot be written for the target:
 * the target's framework cannot run it (frameworkRestriction: the framework would refuse it at start-up or run
 * another plan than the one predicted), or it cannot be re-simulated on this model.
 */
ExportResult exportPlan(ExportTarget target, const LoadedPlan& plan, const ModelGraph& model, const Cluster& cluster,
                        const SimulationResult* timeline = nullptr, const ExportOptions& options = {});

/** A file name for `target` that its companions expect: the torchrun launcher runs plan.toml (or plan_config.py)
    next to it, so the torchtitan export is named that way; "launch.sh", "megatron.sh", "ds_config.json", ... */
std::string exportDefaultFileName(ExportTarget target, std::string_view frameworkVersion = {});

} // namespace shardscape
