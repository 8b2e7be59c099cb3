// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/cost/serving.h"
#include "shardscape/search/planner_config.h"

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace shardscape::cli {

/** The inference options of `simulate --mode inference`, as typed. */
struct ServingCliOptions
{
    std::int64_t input_len = 1024;
    std::int64_t output_len = 256;
    std::string concurrency = "max";
    std::string weight_dtype = "bf16";
    std::string kv_dtype = "bf16";
    std::string serving_framework = "vllm";
    double memory_fraction = 0;
    double max_ttft_ms = 0;
    double max_tpot_ms = 0;
    std::int64_t max_batched_tokens = 0;
};

/** Adds the inference options to `cmd`; returns them so training-only use can be rejected. */
std::vector<CLI::Option*> addServingOptions(CLI::App* cmd, ServingCliOptions& o);

/** The request the options describe; InputError naming the option on a bad value. */
ServingRequest servingRequestFromOptions(const ServingCliOptions& o, double memoryGb);

/** What `simulate --mode inference` needs besides the serving options. */
struct ServingSimulateInput
{
    std::string model;
    std::string cluster;
    int nodes = 0;
    int gpus_per_node = 0;
    ServingParallel parallel;
    double memory_gb = 0;
    std::string json;
    std::string save_plan;
    std::string profile_dir;
};

int runServingSimulate(const ServingSimulateInput& input, const ServingCliOptions& options);

/** `plan` with is_train false: searches serving deployments, prints them, writes --json and --save-plan. */
struct ServingPlanInput
{
    std::string model;
    std::string cluster;
    int nodes = 0;
    int gpus_per_node = 0;
    std::string json;
    std::string save_plan;
    bool dump = false;
};
int runServingPlan(const ServingPlanInput& input, const PlannerConfig& config);

/** Prints one serving estimate (memory, latency, throughput, the decode step's split, the batch curve). */
void printServingEstimate(const ServingEstimate& estimate);

} // namespace shardscape::cli
