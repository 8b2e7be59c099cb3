// SPDX-License-Identifier: MIT
// `simulate`'s options, shared by the command (simulate_command.cpp) and its report (simulate_report.cpp).
#pragma once

#include "serving_cli.h"

#include "shardscape/cost/cost_model.h"
#include "shardscape/model/hf_config.h"

#include <cstdint>
#include <string>
#include <vector>

namespace shardscape::cli {

struct SimulateOptions
{
    std::string model;
    std::string cluster;
    int tp = 1;
    int pp = 1;
    int dp = 1;
    int vpp = 1;
    int cp = 1;
    int ep = 1;
    int etp = 0;
    int micro_batch = 1;
    std::int64_t global_batch = 0;
    int zero = 0;
    int zero_ngroups = 1;
    std::string recompute = "none";
    std::vector<std::string> recompute_modules;
    int recompute_num_layers = 0; ///< with recompute full: the first n blocks of each chunk (Megatron's block method)
    bool sequence_parallel = false;
    bool tp_comm_overlap = false;
    bool overlap_param_gather = false;
    bool moe_a2a_overlap = false;
    bool moe_shared_expert_overlap = false;
    double moe_capacity_factor = 0;
    double moe_router_imbalance = 1;
    bool fp8_linears = false;
    std::string fp8_recipe = "tensorwise";
    int fp8_bf16_first_layers = 0;
    int fp8_bf16_last_layers = 0;
    bool grad_reduce_bf16 = false;
    bool fp8_param_gather = false;
    bool eager_kernels = false;
    std::string schedule = "1f1b";
    std::int64_t seq_len = 0;
    int nodes = 0;
    int gpus_per_node = 0;
    double memory_gb = 0;
    std::vector<int> stage_layers;
    std::string rank_order = "tp-cp-dp-pp";
    std::string json;
    std::string trace;
    std::string from_config;
    /** How --from-config's job built the model (applyJobAttention: Megatron's --transformer-impl local). */
    BuildOptions job_build;
    std::string save_plan;
    std::string profile_dir;
    std::string framework; ///< empty = generic, or the job config's with --from-config
    std::string framework_version; ///< empty = the framework as profiled
    std::string mode = "train"; ///< train | inference
    ServingCliOptions serving;

    // Set from the parser after parsing: whether the user chose these explicitly.
    bool nodes_given = false;
    bool schedule_given = false;
    bool gpus_per_node_given = false;
};

/** A way out of an infeasible configuration; checks mirror CostModel::structuralProblem's order. */
std::string wayOut(const Evaluation& e, const CostModel& model, const SimulateOptions& o);

/** The evaluation as tables: configuration, metrics, stages with their memory, and the step's time. */
void printEvaluation(const Evaluation& e, const CostModel& model, const SimulateOptions& o);

/** The simulated timeline as a Chrome trace (Perfetto), to `path` (written whole) or stdout for "-". */
void writeTrace(const Evaluation& e, const CostModel& model, const std::string& path);

} // namespace shardscape::cli
