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
    Torchtitan, ///< torchtitan job TOML (v0.2.x schema) plus the equivalent --section.option flags
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
/** A file name suffix that suits the target: ".json", ".toml", ".sh" or ".dump". */
std::string_view exportTargetSuffix(ExportTarget target);

/** An exported text and what the target could not express (one line each, without a "note:" prefix). */
struct ExportResult
{
    std::string text;
    /** Everything the target cannot express exactly, or where the text deviates from the plan; the same notes are
        written into the text as comments wherever the format has comments. */
    std::vector<std::string> notes;
};

/**
 * Writes `plan` for `target`. `model` is the model the plan was made for, built with the plan's sequence length
 * (any micro-batch); its transformer shape supplies the Megatron model flags and the torchtitan module names.
 * `cluster` is where the job will run (normally plan.cluster): the launchers take their node and GPU counts from
 * it. `timeline` is the simulated step for ChromeTrace (with events); when null the plan is re-simulated. Json
 * re-simulates the plan too, with its recorded stage split, so the file is rewritten from the same evaluation.
 * Every text starts with a header naming Shardscape, the model, the cluster and the predicted step time and MFU
 * (comments where the format has them, a "_comment" key in DeepSpeed JSON, "otherData" in the trace, nothing in
 * the plan JSON, whose own fields say it). Throws InputError when the plan cannot be written for the target
 * (e.g. it cannot be re-simulated on this model).
 */
ExportResult exportPlan(ExportTarget target, const LoadedPlan& plan, const ModelGraph& model, const Cluster& cluster,
                        const SimulationResult* timeline = nullptr);

} // namespace shardscape
