// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/cost/cost_model.h"
#include "shardscape/search/planner.h"

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <vector>

namespace shardscape {

/** Schema tag of the result document written by `simulate --json` and `plan --json`. */
inline constexpr const char* kResultSchema = "shardscape.result/1";

/**
 * One candidate of the result JSON (DESIGN.md "Result JSON"). Keys, in this order:
 *
 * - DESIGN.md: tp, pp, dp, vpp, cp, micro_batch, num_micro_batches, zero, recompute (none|selective|full|modules),
 *   schedule (gpipe|1f1b|interleaved|zb-h1), feasible, reason ("" when feasible), step_time_s, tokens_per_s,
 *   tflops_per_gpu, mfu, hfu, bubble_ratio, peak_memory_gb (one per pipeline rank, GB = 1e9 bytes),
 *   stages[] {layers: [first, last] (indices into the model's layer list, inclusive), devices, compute_s (forward +
 *   backward of one micro-batch, all chunks, seconds), memory_gb (per-device peak)}.
 * - Additive: ep, sequence_parallel, zero_ngroups, recompute_modules (only with recompute=modules), rank_order,
 *   stage_layers (layers per chunk as requested; absent when automatic), global_batch, cost_source, memory_limit_gb;
 *   per stage: layer_names [first, last], peak_inflight (micro-batches stashed at the peak), memory {weights_gb,
 *   gradients_gb, optimizer_gb, activations_gb, transient_gb, reserve_gb, runtime_gb and fragmentation_gb (the two
 *   parts of reserve), allocated_gb (torch.cuda.max_memory_allocated), allocator_reserved_gb
 *   (torch.cuda.max_memory_reserved)}, chunks [[first, last], ...] (only when vpp > 1); time {compute_s, recompute_s,
 *   tp_comm_s, other_comm_s, pp_bubble_s, dp_exposed_s, optimizer_s}: the step of the busiest pipeline rank, seconds.
 * - Wave 2: framework (generic|megatron-core|nemo|torchtitan|deepspeed|composer); step_time_range_s [low, high]
 *   (seconds) and peak_memory_range_gb [low, high] (the per-device peak over stages, GB): the ranges the calibration
 *   residuals of the configuration's regime give; per stage memory_range_gb [low, high] (the stage's peak with the
 *   same relative band); oom_risk (fits|tight|likely) and regime (the calibration regime's name).
 *
 * A configuration rejected before costing (e.g. tp does not divide the heads) has nothing measured: its metrics
 * (step_time_s ... bubble_ratio, step_time_range_s, peak_memory_range_gb, oom_risk) and `time` are null and
 * peak_memory_gb and stages are empty. One that was simulated but does not fit in memory carries every number.
 */
nlohmann::json candidateJson(const Evaluation& evaluation, const CostModel& model);

/**
 * The whole result document: {"schema": kResultSchema, "model": {name, params, active_params, seq_len, dtype,
 * num_layers, layers: [names], flops_per_token (forward + backward, no recomputation)}, "cluster": toJson(Cluster)
 * (reloadable with --cluster), "candidates": [candidateJson...] in the given order (best first), "search":
 * {candidates_total, candidates_feasible, simulated, enumerate_s, cost_s, elapsed_s}}.
 */
nlohmann::json resultJson(const std::vector<Evaluation>& evaluations, const CostModel& model, SearchCounts counts);

} // namespace shardscape
