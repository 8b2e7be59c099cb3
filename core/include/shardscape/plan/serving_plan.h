// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/cost/serving.h"
#include "shardscape/search/serving_planner.h"

#include <filesystem>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

namespace shardscape {

/** Schema tag of serving plan files (`plan` / `simulate --mode inference --save-plan`, read by `export`). */
inline constexpr std::string_view kServingPlanSchema = "shardscape.serving-plan/1";

/** The fields DESIGN.md names for one serving candidate (ttft_ms, tpot_ms, ..., memory {weights_gb, ...}). */
nlohmann::json servingJson(const ServingEstimate& estimate);

/** `plan --json` for is_train false: {mode: "inference", candidates: [servingJson...] feasible first, search}. */
nlohmann::json servingResultJson(const ServingPlanResult& result);

/** The serving request as the planner config spells it (input_len, output_len, concurrency, ...). */
nlohmann::json servingRequestJson(const ServingRequest& request);
/** Reads servingRequestJson's object back; InputError naming the field on bad input. */
ServingRequest servingRequestFromJson(const nlohmann::json& doc, std::string_view origin);

/** A serving plan read back: what to launch, for which model and GPUs. */
struct LoadedServingPlan
{
    std::string model_spec; ///< what the user passed as --model
    std::string model_name;
    std::string device; ///< device preset name
    int nodes = 1;
    int gpus_per_node = 8;
    ServingParallel parallel;
    ServingRequest request;
    int concurrency = 0; ///< the one planned
    double memory_fraction = 0; ///< the one applied
    std::int64_t max_batched_tokens = 0;
};

/** The plan file's document for `estimate` (schema, model, cluster, parallel, request, planned). */
nlohmann::json servingPlanJson(const ServingEstimate& estimate, const Cluster& cluster, const std::string& modelSpec,
                               const std::string& modelName);

/** The plan file for `estimate` (atomic write; InputError when the file cannot be written). */
void saveServingPlan(const std::filesystem::path& path, const ServingEstimate& estimate, const Cluster& cluster,
                     const std::string& modelSpec, const std::string& modelName);
bool isServingPlan(const nlohmann::json& doc);
LoadedServingPlan servingPlanFromJson(const nlohmann::json& doc, std::string_view origin);

} // namespace shardscape
