// SPDX-License-Identifier: MIT
// Planner config names and locks, its JSON form, and the serving request it describes.
#include "shardscape/search/planner_config.h"

#include "planner_config_rules.h"

#include "shardscape/cost/serving_keys.h"
#include "shardscape/sim/schedule.h"
#include "shardscape/support/strings.h"
#include "shardscape/support/units.h"

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>

namespace shardscape {

namespace {

using nlohmann::json;
using planner_config::kAuto;
using planner_config::kMax;

struct NamedMethod
{
    PlanMethod method;
    std::string_view name;
};

constexpr std::array<NamedMethod, 6> kMethodNames {{
    {PlanMethod::Auto, "auto"},
    {PlanMethod::Data, "data"},
    {PlanMethod::Zero2, "zero2"},
    {PlanMethod::Zero3, "zero3"},
    {PlanMethod::Shard, "shard"},
    {PlanMethod::PipeShard, "pipeshard"},
}};

json lockJson(const std::vector<int>& values)
{
    return json(values);
}

} // namespace

std::string_view planMethodName(PlanMethod method)
{
    for (const auto& entry : kMethodNames)
        if (entry.method == method)
            return entry.name;
    return {};
}

std::optional<PlanMethod> parsePlanMethod(std::string_view name)
{
    const std::string lower = toLower(name);
    for (const auto& entry : kMethodNames)
        if (entry.name == lower)
            return entry.method;
    return std::nullopt;
}

bool DimensionLocks::any() const
{
    return !names().empty();
}

std::vector<std::string> DimensionLocks::names() const
{
    std::vector<std::string> out;
    const auto add = [&out](const char* name, bool locked) {
        if (locked)
            out.emplace_back(name);
    };
    add("tp", !tp.empty());
    add("pp", !pp.empty());
    add("dp", !dp.empty());
    add("cp", !cp.empty());
    add("ep", !ep.empty());
    add("vpp", !vpp.empty());
    add("micro-batch", !micro_batch.empty());
    add("zero", !zero.empty());
    add("recompute", !recompute.empty());
    add("schedule", !schedule.empty());
    return out;
}

std::string DimensionLocks::describe() const
{
    const auto ints = [](const std::vector<int>& v) {
        std::vector<std::string> s;
        for (const int x : v)
            s.push_back(cat(x));
        return join(s, ",");
    };
    std::vector<std::string> parts;
    const auto add = [&parts](const char* name, const std::string& values) {
        if (!values.empty())
            parts.push_back(cat(name, " ", values));
    };
    add("tp", ints(tp));
    add("pp", ints(pp));
    add("dp", ints(dp));
    add("cp", ints(cp));
    add("ep", ints(ep));
    add("vpp", ints(vpp));
    add("micro-batch", ints(micro_batch));
    add("zero", ints(zero));
    std::vector<std::string> names;
    for (const auto r : recompute)
        names.emplace_back(recomputeName(r));
    add("recompute", join(names, ","));
    names.clear();
    for (const auto s : schedule)
        names.emplace_back(scheduleName(s));
    add("schedule", join(names, ","));
    return join(parts, "; ");
}

DimensionLocks DimensionLocks::without(const std::string& name) const
{
    DimensionLocks out = *this;
    if (name == "tp")
        out.tp.clear();
    else if (name == "pp")
        out.pp.clear();
    else if (name == "dp")
        out.dp.clear();
    else if (name == "cp")
        out.cp.clear();
    else if (name == "ep")
        out.ep.clear();
    else if (name == "vpp")
        out.vpp.clear();
    else if (name == "micro-batch")
        out.micro_batch.clear();
    else if (name == "zero")
        out.zero.clear();
    else if (name == "recompute")
        out.recompute.clear();
    else if (name == "schedule")
        out.schedule.clear();
    return out;
}

nlohmann::json toJson(const PlannerConfig& c)
{
    return json {{"task_name", c.task_name},
                 {"consider_mem", c.consider_mem},
                 {"memory_constraint", c.memory_constraint},
                 {"memory_granularity", c.memory_granularity},
                 {"transient_mem_coef", c.transient_mem_coef},
                 {"opt_resident_coef", c.opt_resident_coef},
                 {"opt_transient_coef", c.opt_transient_coef},
                 {"recompute_modules", c.recompute_modules},
                 {"zero_stage", !c.locks.zero.empty() ? lockJson(c.locks.zero) : c.zero_stage < 0 ? json(kAuto) : json(c.zero_stage)},
                 {"zero_ngroups", c.zero_ngroups},
                 {"pipeline_pivots", c.pipeline_pivots},
                 {"pipeline_nstages", c.pipeline_nstages == 0 ? json(kAuto) : json(c.pipeline_nstages)},
                 {"pipeline_scheduler", c.locks.schedule.empty() ? json(c.pipeline_scheduler) : [&] {
                      json names = json::array();
                      for (const auto s : c.locks.schedule)
                          names.push_back(scheduleName(s));
                      return names;
                  }()},
                 {"max_pipeline_bubble_ratio", c.max_pipeline_bubble_ratio},
                 {"max_pipeline_unbalance_ratio", c.max_pipeline_unbalance_ratio},
                 {"mesh_row", c.mesh_row},
                 {"mesh_col", c.mesh_col},
                 {"world_size", c.world_size},
                 {"micro_batch_size", c.locks.micro_batch.empty() ? json(c.micro_batch_size) : lockJson(c.locks.micro_batch)},
                 {"tp", lockJson(c.locks.tp)},
                 {"pp", lockJson(c.locks.pp)},
                 {"dp", lockJson(c.locks.dp)},
                 {"cp", lockJson(c.locks.cp)},
                 {"ep", lockJson(c.locks.ep)},
                 {"vpp", lockJson(c.locks.vpp)},
                 {"recompute", [&] {
                      json names = json::array();
                      for (const auto r : c.locks.recompute)
                          names.push_back(recomputeName(r));
                      return names;
                  }()},
                 {"update_freq", c.update_freq},
                 {"profile_dir", c.profile_dir},
                 {"use_profile", c.use_profile},
                 {"parallel_profile", c.parallel_profile},
                 {"re_profile", c.re_profile},
                 {"topk", c.topk},
                 {"solver", c.solver},
                 {"nproc", c.nproc},
                 {"load_plan_path", c.load_plan_path},
                 {"save_plan_path", c.save_plan_path},
                 {"partition_constraints_path", c.partition_constraints_path},
                 {"is_train", c.is_train},
                 {"verbose", c.verbose},
                 {"ignore_small_tensor_threshold", c.ignore_small_tensor_threshold},
                 {"method", planMethodName(c.method)},
                 {"max_cp", c.max_cp < 0 ? json(kAuto) : json(c.max_cp)},
                 {"tp_comm_overlap", c.tp_comm_overlap},
                 {"overlap_param_gather", c.overlap_param_gather},
                 {"moe_a2a_overlap", c.moe_a2a_overlap},
                 {"moe_shared_expert_overlap", c.moe_shared_expert_overlap},
                 {"moe_capacity_factor", c.moe_capacity_factor},
                 {"moe_router_imbalance", c.moe_router_imbalance},
                 {"fp8_linears", c.fp8_linears},
                 {"fp8_recipe", float8RecipeName(c.fp8_recipe)},
                 {"fp8_bf16_first_layers", c.fp8_bf16_first_layers},
                 {"fp8_bf16_last_layers", c.fp8_bf16_last_layers},
                 {"grad_reduce_bf16", c.grad_reduce_bf16},
                 {"fp8_param_gather", c.fp8_param_gather},
                 {"eager_kernels", c.eager_kernels},
                 {"layer_num", c.layer_num},
                 {"framework", frameworkName(c.framework)},
                 {"framework_version", c.framework_version},
                 {"min_memory_headroom", c.min_memory_headroom < 0 ? json(kAuto) : json(c.min_memory_headroom)},
                 {"input_len", c.input_len},
                 {"output_len", c.output_len},
                 {"concurrency", c.concurrency == 0 ? json(kMax) : json(c.concurrency)},
                 {"weight_dtype", weightFormatName(c.weight_dtype)},
                 {"kv_cache_dtype", dtypeName(c.kv_cache_dtype)},
                 {"max_ttft_ms", c.max_ttft_ms},
                 {"max_tpot_ms", c.max_tpot_ms},
                 {"serving_framework", servingFrameworkName(c.serving_framework)},
                 {"memory_fraction", c.memory_fraction}};
}

ServingRequest PlannerConfig::servingRequest() const
{
    ServingRequest r;
    r.input_len = input_len;
    r.output_len = output_len;
    r.concurrency = concurrency;
    r.weight_format = weight_dtype;
    r.kv_dtype = kv_cache_dtype;
    r.max_ttft_ms = max_ttft_ms;
    r.max_tpot_ms = max_tpot_ms;
    r.framework = serving_framework;
    r.memory_fraction = memory_fraction;
    r.memory_limit_bytes = memory_constraint * units::kGB;
    return r;
}

} // namespace shardscape
