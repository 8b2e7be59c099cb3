// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/cost/cost_model.h"

#include <cstdint>
#include <filesystem>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shardscape {

/** Schema tag of plan files; bumped on any incompatible change. */
inline constexpr std::string_view kPlanSchema = "shardscape.plan/1";

/**
 * What a plan file records besides the evaluation and its cost model: the request it answered and who wrote it.
 * (The cluster is taken from the CostModel, so the recorded cluster and its fingerprint always agree.)
 */
struct PlanFileContext
{
    std::int64_t global_batch = 0; ///< sequences per step
    std::int64_t seq_len = 0; ///< tokens per sequence
    std::string model_name; ///< empty = the graph's name
    std::string model_spec; ///< what the user passed as --model (preset, config.json, graph, .onnx)
    std::string created_by = "shardscape"; ///< e.g. "shardscape-cli plan"
    std::string version; ///< the program's version text
};

/** The predictions recorded with a plan (GB = 1e9 bytes). */
struct PlanMetrics
{
    bool feasible = false;
    std::string reason; ///< why infeasible; empty when feasible
    std::string cost_source; ///< "datasheet" or "profile:..."
    double step_time_s = 0;
    double tokens_per_s = 0;
    double tflops_per_gpu = 0;
    double mfu = 0;
    double hfu = 0;
    double bubble_ratio = 0;
    double memory_limit_gb = 0; ///< per device
    std::vector<double> peak_memory_gb; ///< per-device peak, one per pipeline rank
    std::vector<double> stage_compute_s; ///< forward + backward of one micro-batch per pipeline rank, seconds
    TimeBreakdown time; ///< the step of the busiest pipeline rank, seconds
    /** The prediction's ranges and OOM risk (CostModel's Evaluation); absent in plan files written before them. */
    std::optional<PredictionRange> step_time_range_s; ///< seconds
    std::optional<PredictionRange> peak_memory_range_gb; ///< the per-device peak over stages, GB
    std::optional<OomRisk> oom_risk;
    std::string regime; ///< the calibration regime the ranges come from; empty when absent
};

/** A plan file read back. */
struct LoadedPlan
{
    ParallelConfig config;
    /** Layers per model chunk (pp x vpp entries, virtual-stage order) as evaluated, even when config.stage_layers
        is empty (automatic): pin it to reproduce the exact partition. */
    std::vector<int> resolved_stage_layers;
    std::int64_t global_batch = 0;
    std::int64_t seq_len = 0;
    std::string model_name;
    std::string model_spec;
    int num_layers = 0; ///< layers of the model the plan was made for
    std::string model_fingerprint;
    std::string cluster_fingerprint;
    Cluster cluster; ///< the cluster the plan was made for
    PlanMetrics metrics;
    std::string created_by;
    std::string version;
};

/**
 * "model:" + 16 hex digits of FNV-1a 64 over the graph's native JSON (toNativeJson), normalised so that it does not
 * depend on the label or the micro-batch the graph was built for: "name" and "batch" are dropped, activations keep
 * their shape without the leading (batch) dimension, per-op FLOPs are divided by the batch (12 significant digits),
 * and the HBM traffic fields (which mix batch-independent weight and table reads with per-sequence activations) are
 * left out. Any change of architecture, sequence length, dtype, op structure or per-sequence FLOPs changes it.
 */
std::string modelFingerprint(const ModelGraph& graph);

/**
 * The plan file document ("schema": kPlanSchema): the full ParallelConfig, the stages (per pipeline rank: chunks
 * with layer ranges and names, the global GPU ranks, predicted compute and memory), a per-layer strategy list,
 * every predicted metric and the model and cluster fingerprints. See README "Plan files".
 * Throws InputError when `chosen` was rejected before costing (nothing was predicted to save).
 */
nlohmann::json planToJson(const Evaluation& chosen, const CostModel& model, const PlanFileContext& context);

/** Writes a plan document atomically (pretty-printed). InputError naming the path when it cannot. */
void savePlanFile(const std::filesystem::path& path, const nlohmann::json& plan);

/**
 * Reads and validates a plan file strictly: schema, every field's type and range, the internal consistency of
 * config, stages, layers and cluster fingerprint. InputError "PATH: KEY: ..." for anything wrong.
 */
LoadedPlan loadPlanFile(const std::filesystem::path& path);

/** loadPlanFile on an already parsed document; `origin` names it in messages. */
LoadedPlan planFromJson(const nlohmann::json& doc, std::string_view origin);

/**
 * Human-readable warnings when a loaded plan no longer matches the current inputs: a different model
 * (fingerprint), cluster (fingerprint), global batch or sequence length. Empty when nothing changed.
 * A different sequence length also changes the model fingerprint; that case gets one seq_len warning.
 */
std::vector<std::string> planStalenessWarnings(const LoadedPlan& plan, const CostModel& current,
                                               std::int64_t globalBatch, std::int64_t seqLen);

} // namespace shardscape
