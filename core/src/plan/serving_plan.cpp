// SPDX-License-Identifier: MIT
#include "shardscape/plan/serving_plan.h"

#include "shardscape/cost/serving_keys.h"
#include "shardscape/support/atomic_file.h"
#include "shardscape/support/error.h"
#include "shardscape/support/json_fields.h"
#include "shardscape/support/strings.h"
#include "shardscape/support/units.h"

#include <nlohmann/json.hpp>

namespace shardscape {

using nlohmann::json;

namespace {

double gb(double bytes)
{
    return bytes / units::kGB;
}

double ms(double seconds)
{
    return seconds * 1e3;
}

} // namespace

json servingRequestJson(const ServingRequest& r)
{
    return json {{"input_len", r.input_len},
                 {"output_len", r.output_len},
                 {"concurrency", r.concurrency == 0 ? json("max") : json(r.concurrency)},
                 {"weight_dtype", weightFormatName(r.weight_format)},
                 {"kv_cache_dtype", dtypeName(r.kv_dtype)},
                 {"max_ttft_ms", r.max_ttft_ms},
                 {"max_tpot_ms", r.max_tpot_ms},
                 {"serving_framework", servingFrameworkName(r.framework)},
                 {"memory_fraction", r.memory_fraction},
                 {"max_batched_tokens", r.max_batched_tokens}};
}

ServingRequest servingRequestFromJson(const json& doc, std::string_view origin)
{
    JsonFields f(doc, std::string(origin));
    ServingRequest r;
    r.input_len = f.integer("input_len", 1, 100'000'000);
    r.output_len = f.integer("output_len", 1, 100'000'000);
    readConcurrency(f, r.concurrency);
    readWeightFormat(f, r.weight_format);
    readKvCacheDtype(f, r.kv_dtype);
    r.max_ttft_ms = f.optNumber("max_ttft_ms", 0, 1e9).value_or(0);
    r.max_tpot_ms = f.optNumber("max_tpot_ms", 0, 1e9).value_or(0);
    readServingFramework(f, r.framework);
    r.memory_fraction = f.optNumber("memory_fraction", 0, 1).value_or(0);
    r.max_batched_tokens = f.optInteger("max_batched_tokens", 0, 100'000'000).value_or(0);
    f.checkNoUnknownKeys();
    return r;
}

json servingJson(const ServingEstimate& e)
{
    json curve = json::array();
    for (const auto& p : e.curve)
        curve.push_back({{"concurrency", p.concurrency},
                         {"ttft_ms", ms(p.ttft_s)},
                         {"tpot_ms", ms(p.tpot_s)},
                         {"output_tokens_per_s", p.output_tokens_per_s}});
    return json {{"tp", e.parallel.tp},
                 {"pp", e.parallel.pp},
                 {"ep", e.parallel.ep},
                 {"dp", e.parallel.dp},
                 {"gpus", e.parallel.gpus()},
                 {"feasible", e.feasible},
                 {"reason", e.reason},
                 {"ttft_ms", ms(e.ttft_s)},
                 {"tpot_ms", ms(e.tpot_s)},
                 {"output_tokens_per_s", e.output_tokens_per_s},
                 {"output_tokens_per_s_per_gpu", e.outputTokensPerSecondPerGpu()},
                 {"total_tokens_per_s", e.total_tokens_per_s},
                 {"concurrency", e.concurrency},
                 {"max_concurrency", e.max_concurrency},
                 {"prefill_ms", ms(e.prefill_s)},
                 {"decode_step_ms", ms(e.decode_step_s)},
                 {"decode_breakdown_ms",
                  {{"weights", ms(e.decode.weights)},
                   {"kv_cache", ms(e.decode.kv)},
                   {"communication", ms(e.decode.communication)},
                   {"overhead", ms(e.decode.overhead)}}},
                 {"kv_bytes_per_token", e.kv_bytes_per_token},
                 {"memory_fraction", e.memory_fraction},
                 {"max_batched_tokens", e.max_batched_tokens},
                 {"memory",
                  {{"weights_gb", gb(e.memory.weights)},
                   {"kv_cache_gb", gb(e.memory.kv_cache)},
                   {"kv_pool_gb", gb(std::max(0.0, e.memory.kv_pool))},
                   {"activations_gb", gb(e.memory.activations)},
                   {"reserve_gb", gb(e.memory.reserve)},
                   {"capacity_gb", gb(e.memory.capacity)}}},
                 {"request", servingRequestJson(e.request)},
                 {"curve", curve},
                 {"cost_source", e.cost_source}};
}

json servingResultJson(const ServingPlanResult& result)
{
    json doc {{"mode", "inference"},
              {"candidates", json::array()},
              {"search",
               {{"candidates_total", result.counts.candidates_total},
                {"candidates_feasible", result.counts.candidates_feasible},
                {"elapsed_s", result.counts.elapsed_s}}}};
    for (const auto* list : {&result.top, &result.infeasible})
        for (const auto& e : *list)
            doc["candidates"].push_back(servingJson(e));
    return doc;
}

json servingPlanJson(const ServingEstimate& e, const Cluster& cluster, const std::string& modelSpec,
                     const std::string& modelName)
{
    return {{"schema", kServingPlanSchema},
            {"model", {{"name", modelName}, {"spec", modelSpec}}},
            {"cluster",
             {{"device", cluster.device.name}, {"nodes", cluster.nodes}, {"gpus_per_node", cluster.gpus_per_node}}},
            {"parallel", {{"tp", e.parallel.tp}, {"pp", e.parallel.pp}, {"ep", e.parallel.ep}, {"dp", e.parallel.dp}}},
            {"request", servingRequestJson(e.request)},
            {"planned", servingJson(e)}};
}

void saveServingPlan(const std::filesystem::path& path, const ServingEstimate& e, const Cluster& cluster,
                     const std::string& modelSpec, const std::string& modelName)
{
    writeFileAtomic(path, servingPlanJson(e, cluster, modelSpec, modelName).dump(2) + "\n");
}

bool isServingPlan(const json& doc)
{
    return doc.is_object() && doc.contains("schema") && doc["schema"].is_string()
        && doc["schema"].get<std::string>() == kServingPlanSchema;
}

LoadedServingPlan servingPlanFromJson(const json& doc, std::string_view originView)
{
    const std::string origin(originView);
    if (!isServingPlan(doc))
        throw InputError(cat(origin, ": not a serving plan (schema ", kServingPlanSchema, ")"),
                         "write one with plan (is_train: false) or simulate --mode inference --save-plan");
    JsonFields f(doc, origin);
    f.ignore({"schema"});
    LoadedServingPlan plan;
    JsonFields model(f.object("model"), origin, "model");
    plan.model_name = model.string("name");
    plan.model_spec = model.optString("spec").value_or("");
    model.checkNoUnknownKeys();
    JsonFields cluster(f.object("cluster"), origin, "cluster");
    plan.device = cluster.string("device");
    plan.nodes = static_cast<int>(cluster.integer("nodes", 1, 100'000));
    plan.gpus_per_node = static_cast<int>(cluster.integer("gpus_per_node", 1, 1024));
    cluster.checkNoUnknownKeys();
    JsonFields parallel(f.object("parallel"), origin, "parallel");
    plan.parallel.tp = static_cast<int>(parallel.integer("tp", 1, 1 << 20));
    plan.parallel.pp = static_cast<int>(parallel.integer("pp", 1, 1 << 20));
    plan.parallel.ep = static_cast<int>(parallel.integer("ep", 1, 1 << 20));
    plan.parallel.dp = static_cast<int>(parallel.integer("dp", 1, 1 << 20));
    parallel.checkNoUnknownKeys();
    plan.request = servingRequestFromJson(f.object("request"), origin + ": request");
    const json& planned = f.object("planned");
    JsonFields p(planned, origin, "planned");
    plan.concurrency = static_cast<int>(p.integer("concurrency", 0, 1'000'000'000));
    plan.memory_fraction = p.number("memory_fraction", 0, 1);
    plan.max_batched_tokens = p.integer("max_batched_tokens", 0, 100'000'000);
    f.checkNoUnknownKeys();
    return plan;
}

} // namespace shardscape
