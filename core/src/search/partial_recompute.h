// SPDX-License-Identifier: MIT
// Partial block recomputation between none and full (partial_recompute.cpp). Private to core/src/search.
#pragma once

#include "candidate_scoring.h"

#include <optional>

namespace shardscape::search_detail {

/**
 * Megatron's --recompute-method block --recompute-num-layers n (megatron/core/recompute.py checkpointed_forward in
 * core_v0.19: a chunk recomputes its layers with index < n whole and keeps the others' activations),
 * searched from a configuration that fits with full recomputation: the fewest blocks per chunk with which it still
 * fits as well (the same OOM risk, fits or tight). Memory falls linearly in n, so two estimates place n (one at
 * n = 1, one between the stages' lines), and one or two more confirm it. nullopt when only full recomputation fits,
 * the chunks hold a single block, or the schedule puts two chunks in a V on one rank.
 */
std::optional<Evaluation> fewestRecomputedBlocks(const Context& ctx, const Evaluation& full);

/**
 * torchtitan v0.2's layer-wise selective AC (activation_checkpoint.selective_ac_option = "k":
 * torchtitan/distributed/activation_checkpoint.py _apply_layer_sac checkpoints a block when the rank's running
 * block count is a multiple of k), searched from a configuration that fits with full recomputation: the largest k
 * (the fewest checkpointed blocks) with which it still fits as well. nullopt when only full recomputation fits.
 */
std::optional<Evaluation> sparsestLayerSac(const Context& ctx, const Evaluation& full);

} // namespace shardscape::search_detail
