// SPDX-License-Identifier: MIT
// What a plan tells torchtitan, decided once for both of its config formats: the v0.2.x TOML job file
// (export_torchtitan.cpp) and main's Python config module (export_torchtitan_config.cpp). Private to core/src/plan.
#pragma once

#include "export_common.h"

#include <string>
#include <vector>

namespace shardscape::exporting {

/** The plan as torchtitan's settings, with notes for what they cannot say added to the context. */
struct TorchtitanLayout
{
    std::string model; ///< torchtitan's model name (the module under torchtitan/models): "llama3", or the family
    std::string flavor; ///< the flavor to build: a built-in one, or the plan's model name to register
    bool builtin_flavor = false;
    std::string shape; ///< "dim 8192, n_layers 80, ..." for the note that asks to register a flavor
    int replicate = 1; ///< data_parallel_replicate_degree
    int shard = 1; ///< data_parallel_shard_degree
    std::string reshard; ///< fsdp_reshard_after_forward, or empty for torchtitan's default
    std::string schedule; ///< pipeline_parallel_schedule; empty without pipelining
    /** module_fqns_per_model_part, one list per virtual stage; empty = torchtitan splits the layers itself. */
    std::vector<std::vector<std::string>> parts;
    std::string checkpoint; ///< activation checkpointing: "none", "full" or "selective"
    /** With "selective": layer SAC, every k-th block of each rank (selective_ac_option = k); 0 = per-op SAC. */
    int layer_sac_every = 0;
};

/** `head` is the output projection's module name: "output" up to v0.2.x, "lm_head" on main. */
TorchtitanLayout torchtitanLayout(Context& context, const std::string& head);

/** module_fqns_per_model_part as a list of lists that TOML and Python both read (the names are plain, so TOML's basic
    strings are Python's too): one part per line, wrapped at 120 columns, the closing bracket at `indent`. */
std::string partsLiteral(const std::vector<std::vector<std::string>>& parts, std::size_t indent);

/** training.mixed_precision_param for the plan's dtype ("bfloat16" or "float32"; fp16 is noted and written as bf16). */
std::string torchtitanParamDtype(Context& context);

/** A built-in llama3 flavor with exactly this shape (torchtitan/models/llama3/__init__.py), or empty. */
std::string llama3Flavor(const TransformerShape& shape);

} // namespace shardscape::exporting
