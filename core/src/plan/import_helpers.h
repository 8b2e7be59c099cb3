// SPDX-License-Identifier: MIT
// What every job-config importer shares (import_torchtitan.cpp, import_deepspeed.cpp, import_megatron.cpp): the error
// form and the stage layout arithmetic. Private to core/src/plan; it depends on no importer.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace shardscape::importing {

// Far beyond any real job: they catch corrupt numbers, not ambitious users.
inline constexpr std::int64_t kMaxDegree = std::int64_t {1} << 20;
inline constexpr std::int64_t kMaxBatch = std::int64_t {1} << 40;
inline constexpr std::int64_t kMaxSeqLen = 100'000'000;

/** Throws InputError "ORIGIN:LINE: WHAT" (no line when line <= 0). */
[[noreturn]] void fail(std::string_view origin, int line, const std::string& what, const std::string& hint = {});

/** [embedding, blocks..., head] counts per virtual stage from blocks per virtual stage. */
std::vector<int> stageLayersFromBlocks(const std::vector<int>& blocks);

/**
 * Megatron's --recompute-method block (megatron/core/recompute.py in core_v0.19, TransformerBlock's
 * _checkpointed_forward before it; one TransformerBlock per model chunk): each model chunk checkpoints its first
 * `layers` decoder layers and keeps the other layers' activations. Returns the recomputed blocks as
 * RecomputeKind::Modules entries, from blocks per model chunk in layer order: each entry is a global block index,
 * which matches the block's module path ("model.layers.7", "transformer.h.7") at its last component. Empty when
 * every layer of every chunk is recomputed (that is full recomputation).
 */
std::vector<std::string> megatronBlockRecompute(const std::vector<int>& chunkBlocks, std::int64_t layers);

/**
 * torchtitan's layer SAC, activation_checkpoint.selective_ac_option = k (torchtitan v0.2.0
 * distributed/activation_checkpoint.py _apply_layer_sac): a module-level counter, one per process, counts every
 * block that apply_ac wraps and checkpoints those whose count is a multiple of k (k = 0: every block). Each pipeline
 * rank builds its own stages in ascending stage order (distributed/pipeline_parallel.py pipeline_module_split,
 * _get_stage_indices: pp_rank + s x pp for loop schedules, the pair (r, stages - 1 - r) for V schedules), so the
 * count restarts per rank. `stageBlocks` holds the blocks per stage in stage (layer) order; returns the checkpointed
 * blocks' global indices in ascending order (all of them is full recomputation, none of them no recomputation).
 */
std::vector<std::string> torchtitanLayerSac(const std::vector<int>& stageBlocks, int pp, bool vShaped, int k);

} // namespace shardscape::importing
