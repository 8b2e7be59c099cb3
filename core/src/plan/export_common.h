// SPDX-License-Identifier: MIT
// Shared by the exporters (exporters.cpp, export_*.cpp): the plan as the targets see it, the header every text
// starts with, comment wrapping and the launch shape. Private to core/src/plan.
#pragma once

#include "shardscape/plan/exporters.h"

#include <string>
#include <string_view>
#include <vector>

namespace shardscape::exporting {

/** The plan, the model and the cluster as every exporter reads them, and the notes it collects. */
struct Context
{
    const LoadedPlan& plan;
    const ModelGraph& model;
    const Cluster& cluster;
    /** Layers per virtual stage (pp x vpp entries, over the plan's layer list), as the plan was evaluated. */
    std::vector<int> chunks;
    /** Transformer blocks per virtual stage when the plan's layers are [embedding, one per block, head] of a
        transformer (then the embedding is in chunk 0 and the head in the last chunk); empty otherwise. */
    std::vector<int> blocks;
    std::vector<std::string> notes;
    /** The release line of the target's framework the text is written for (frameworkVersions). */
    std::string framework_version;

    const ParallelConfig& config() const { return plan.config; }
    void note(std::string text) { notes.push_back(std::move(text)); }
    /** Model name for headers and descriptions. */
    std::string modelName() const;
};

Context makeContext(const LoadedPlan& plan, const ModelGraph& model, const Cluster& cluster);

/** The header lines (no comment prefix): Shardscape, model, cluster, configuration, predictions. */
std::vector<std::string> headerLines(const Context& context, std::string_view what);

/**
 * Appends to `head` the line naming the framework profile of the target (`target`: the framework whose config is
 * written) and, when the plan was made for another named framework, a "WARNING: ..." line saying so. (A plan the
 * target cannot run never gets here: exportPlan refuses it with frameworkRestriction.)
 */
void appendFrameworkLines(const Context& context, Framework target, std::vector<std::string>& head);

/** `text` wrapped to lines of at most `width` characters, the first prefixed by `first` and the rest by `rest`. */
std::vector<std::string> wrap(std::string_view text, std::size_t width, std::string_view first, std::string_view rest);

/** Each line prefixed (e.g. "# "), with a newline after each; blank lines get the prefix without trailing space. */
std::string commentBlock(const std::vector<std::string>& lines, std::string_view prefix);

/** Notes as a commented, bulleted list under a title; empty when there are none. */
std::string notesBlock(const std::vector<std::string>& notes, std::string_view prefix);

/** Nodes and GPUs per node for torchrun: every node must run the same number of processes. */
struct LaunchShape
{
    int nodes = 1;
    int gpus_per_node = 1;
};
LaunchShape launchShape(Context& context);

/** "  torchrun --nnodes N --nproc-per-node G ... \" and "      -m torchtitan.train ARGS": how to start torchtitan on
    every node, for the headers of its configs. */
std::vector<std::string> torchtitanLaunchLines(Context& context, std::string_view trainArgs);

/** A bash word: quoted with '...' when it holds anything but [A-Za-z0-9_./:=,+-]. */
std::string shellWord(std::string_view text);

/** A TOML basic string with quotes, backslashes and control characters escaped. */
std::string tomlString(std::string_view text);

/** torchtitan v0.2.x: the TOML job file. */
std::string exportTorchtitan(Context& context);
/** torchtitan main: the Python config module. */
std::string exportTorchtitanConfig(Context& context);
std::string exportMegatron(Context& context);
std::string exportDeepSpeed(Context& context);
std::string exportTorchrun(Context& context);

} // namespace shardscape::exporting
