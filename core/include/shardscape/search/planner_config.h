// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/cost/framework_profile.h"
#include "shardscape/cost/parallel_config.h"
#include "shardscape/cost/serving.h"

#include <filesystem>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shardscape {

/** Alpa-style restriction of the search space (--method). */
enum class PlanMethod : std::uint8_t
{
    Auto, ///< everything
    Data, ///< data parallel only (DDP)
    Zero2, ///< data parallel with ZeRO-2
    Zero3, ///< data parallel with ZeRO-3 (FSDP)
    Shard, ///< intra-op only: tp x dp (x cp), no pipeline
    PipeShard ///< pipeline x intra-op (pp > 1)
};
std::string_view planMethodName(PlanMethod method);
std::optional<PlanMethod> parsePlanMethod(std::string_view name);

/**
 * Dimensions the user fixes; the planner searches only these values of them (empty = the whole range). JSON keys
 * "tp", "pp", "dp", "cp", "ep", "vpp" and "recompute" take a value or a list; "micro_batch_size", "zero_stage" and
 * "pipeline_scheduler" take a list as well as their single value. `plan --tp 4,8 ...` sets them.
 */
struct DimensionLocks
{
    std::vector<int> tp, pp, dp, cp, ep, vpp, micro_batch, zero;
    std::vector<RecomputeKind> recompute;
    std::vector<ScheduleKind> schedule;

    bool any() const;
    /** "tp 4,8; zero 1" for messages. */
    std::string describe() const;
    /** The locks, each named once ("tp", "pp", ...), for releasing one at a time. */
    std::vector<std::string> names() const;
    /** A copy with the lock `name` released. */
    DimensionLocks without(const std::string& name) const;
};

/**
 * Every planner option, with nnScaler AutoDist's names and meanings (shared/research/planners.md).
 * Loaded from JSON with exactly these keys; an unknown key, a wrong type or an out-of-range value is an
 * InputError naming the key. Zero/empty means "search it" or "take it from the cluster" as noted.
 */
struct PlannerConfig
{
    std::string task_name = "shardscape";
    bool consider_mem = true; ///< false: ignore the memory limit (what-if exploration)
    double memory_constraint = 0; ///< GB (1e9 bytes) per device; 0 = the device's capacity
    double memory_granularity = 1e6; ///< bytes; the intra-op DP's memory resolution
    double transient_mem_coef = 2;
    double opt_resident_coef = 6;
    double opt_transient_coef = 0;
    /** Module-path suffixes to recompute ("ROOT" = all); empty = search none / selective / full. */
    std::vector<std::string> recompute_modules;
    int zero_stage = -1; ///< -1 = search 0..3
    int zero_ngroups = 1;
    /** Layer names (or module prefixes) where a pipeline stage may start; empty = anywhere. */
    std::vector<std::string> pipeline_pivots;
    int pipeline_nstages = 0; ///< 0 = "auto"; 1 = no pipeline
    std::string pipeline_scheduler = "auto"; ///< "auto" or gpipe, 1f1b, interleaved, zb-h1
    /** Prune pipelines whose closed-form bubble, the pipeline's idle share of the step ((p-1)/(vm+p-1) for 1F1B and
        interleaved, as Evaluation::bubble_ratio and AutoDist define it), exceeds it. 1/3 is an idle time of half the
        busy time. */
    double max_pipeline_bubble_ratio = 1.0 / 3.0;
    double max_pipeline_unbalance_ratio = 0.5; ///< prune when min stage time / max stage time is below it
    int mesh_row = 0; ///< nodes; 0 = the cluster's
    int mesh_col = 0; ///< GPUs per node; 0 = the cluster's
    int world_size = 0; ///< 0 = mesh_row x mesh_col
    int micro_batch_size = 0; ///< 0 = search
    int update_freq = 0; ///< micro-batches per step; 0 = global batch / (dp x micro-batch)
    std::string profile_dir; ///< measured profiles (empty = ~/.cache/shardscape/<device>)
    bool use_profile = true; ///< false: datasheet costs only (not an AutoDist key)
    bool parallel_profile = true; ///< AutoDist's; the profiler measures one GPU for all of its kind
    bool re_profile = false;
    int topk = 20;
    std::string solver = "dp"; ///< intra-op sharding solver: "dp" or "ilp"
    int nproc = 0; ///< search threads; 0 = all cores
    std::string load_plan_path;
    std::string save_plan_path;
    std::string partition_constraints_path;
    bool is_train = true;
    bool verbose = false;
    double ignore_small_tensor_threshold = 0; ///< bytes; smaller tensors are replicated by the intra-op solver
    /** Not an AutoDist key: the --method restriction (set by the CLI, "method" in JSON). */
    PlanMethod method = PlanMethod::Auto;
    /** Not AutoDist keys: framework features the target job turns on, applied to every candidate where they are
        valid (TP overlap with SP, parameter-gather overlap with ZeRO-1/2). See ParallelConfig. */
    bool tp_comm_overlap = false;
    bool overlap_param_gather = false;
    bool moe_a2a_overlap = false; ///< applied where ep > 1 and there are two or more micro-batches
    bool moe_shared_expert_overlap = false; ///< applied where ep > 1, the model has a shared expert, no a2a overlap
    /** The experts' capacity factor (0 = dropless) and the router's load imbalance, as the job runs them
        (ParallelConfig::moe_capacity_factor, moe_router_imbalance); applied to every candidate. */
    double moe_capacity_factor = 0;
    double moe_router_imbalance = 1;
    bool fp8_linears = false;
    Float8Recipe fp8_recipe = Float8Recipe::Tensorwise; ///< "fp8_recipe": tensorwise | rowwise
    /** "fp8_bf16_first_layers" / "fp8_bf16_last_layers": blocks kept in BF16 under FP8 (ParallelConfig). */
    int fp8_bf16_first_layers = 0;
    int fp8_bf16_last_layers = 0;
    bool grad_reduce_bf16 = false; ///< "grad_reduce_bf16": gradients reduced in 16 bits (ParallelConfig)
    /** "fp8_param_gather": FP8 plans with ZeRO 1 or more make their FP8 linears' weights FP8 parameters where the
        framework can (Megatron's --fp8-param-gather, what NVIDIA's FP8 recipes do); false keeps 16-bit weights
        beside Transformer Engine's FP8 copies. */
    bool fp8_param_gather = true;
    bool eager_kernels = false;
    /** Not an AutoDist key: the training framework the plan is for ("framework" in JSON: generic, megatron-core,
        nemo, torchtitan, deepspeed, composer). It sets the memory terms of every candidate and bounds the search to
        what the framework runs (its ZeRO stages, schedules, cp / ep / tp support; framework_profile.h). */
    Framework framework = Framework::Generic;
    /** Not AutoDist keys: the dimensions the user fixes (DimensionLocks). */
    DimensionLocks locks;
    /** Not an AutoDist key: the framework's release line the plan is for ("framework_version": frameworkVersions,
        e.g. "core_v0.19", "main", "v0.2"; "" = the framework as profiled, any release). A named release also bounds
        the search to what that release runs, and is recorded in plan files and used by the exports. */
    std::string framework_version;
    /** Not an AutoDist key: headroom under the memory limit a plan must leave to count as "fits" rather than
        "tight", GB (1e9 bytes); < 0 = "auto" (the high end of the peak-memory range of the candidate's calibration
        regime). The planner ranks every plan that fits before the tight ones ("min_memory_headroom" in JSON). */
    double min_memory_headroom = -1;
    /** Not an AutoDist key: the largest context-parallel degree searched ("max_cp" in JSON, 1 = off); < 0 = "auto":
        8, or sequence / 32k tokens for longer sequences, at most 64 (candidate_space.cpp). */
    int max_cp = -1;
    /** Not an AutoDist key: Alpa's automatic layer construction ("layer_num" in JSON): cluster the ops into this
        many layers before stage partitioning; 0 = group by module path (graphs without repeated blocks then get
        min(ops, 32) automatic layers). */
    int layer_num = 0;
    /** Inference planning (is_train false): the requests the deployment serves, their numerics and latency bounds
        (DESIGN.md wave 2; ServingRequest). concurrency 0 = "max". memory_fraction 0 = the serving framework's. */
    std::int64_t input_len = 1024;
    std::int64_t output_len = 256;
    int concurrency = 0;
    WeightFormat weight_dtype = WeightFormat::BF16;
    DType kv_cache_dtype = DType::BF16;
    double max_ttft_ms = 0;
    double max_tpot_ms = 0;
    ServingFramework serving_framework = ServingFramework::Vllm;
    double memory_fraction = 0;

    /** The serving request these keys describe (memory_constraint becomes its per-GPU limit). */
    ServingRequest servingRequest() const;

    /** Throws InputError naming the key when a value is out of range or inconsistent. */
    void validate() const;
};

/** Reads a planner config JSON object (keys as above). */
PlannerConfig plannerConfigFromJson(const nlohmann::json& doc, std::string_view origin);
PlannerConfig loadPlannerConfig(const std::filesystem::path& path);
nlohmann::json toJson(const PlannerConfig& config);

} // namespace shardscape
