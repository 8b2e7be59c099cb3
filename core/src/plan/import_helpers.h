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

} // namespace shardscape::importing
