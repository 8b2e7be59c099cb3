// SPDX-License-Identifier: MIT
// The planner config read from JSON (AutoDist's keys and Shardscape's own), strictly, with the locks.
#include "planner_config_rules.h"

#include "shardscape/cost/serving_keys.h"
#include "shardscape/sim/schedule.h"
#include "shardscape/support/json_fields.h"
#include "shardscape/support/json_file.h"
#include "shardscape/support/units.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

namespace shardscape {

namespace {

using nlohmann::json;
using namespace planner_config;

/** AutoDist accepts module lists as a JSON list or as one comma-separated string ("attn,mlp"). */
std::vector<std::string> nameList(JsonFields& f, std::string_view key)
{
    const json* value = f.find(key);
    if (!value)
        return {};
    std::vector<std::string> names;
    if (value->is_string()) {
        const std::string text = value->get<std::string>();
        if (trimmed(text).empty())
            return {};
        std::size_t start = 0;
        for (;;) {
            const auto comma = text.find(',', start);
            const std::string item = trimmed(std::string_view(text).substr(start, comma - start));
            if (item.empty())
                f.fail(key, cat("empty name in '", text, "'"), "separate names with single commas");
            names.push_back(item);
            if (comma == std::string::npos)
                break;
            start = comma + 1;
        }
        return names;
    }
    if (!value->is_array())
        f.fail(key, cat("expected a list of names or a comma-separated string, got ", describeJson(*value)));
    for (std::size_t i = 0; i < value->size(); ++i) {
        const json& item = (*value)[i];
        if (!item.is_string())
            f.fail(key, cat("entry ", i, " should be a name, got ", describeJson(item)));
        const std::string name = trimmed(item.get<std::string>());
        if (name.empty())
            f.fail(key, cat("entry ", i, " is an empty name"));
        names.push_back(name);
    }
    return names;
}

/** An integer key that also accepts the string "auto", read as `autoValue`. */
int autoOrInteger(JsonFields& f, std::string_view key, int autoValue, std::int64_t min, std::int64_t max, int fallback)
{
    const json* value = f.find(key);
    if (!value)
        return fallback;
    if (value->is_string()) {
        if (toLower(value->get<std::string>()) != kAuto)
            f.fail(key, cat("expected \"auto\" or an integer in [", min, ", ", max, "], got ", describeJson(*value)));
        return autoValue;
    }
    if (!value->is_number())
        f.fail(key, cat("expected \"auto\" or an integer in [", min, ", ", max, "], got ", describeJson(*value)));
    return static_cast<int>(f.integer(key, min, max));
}

/** A lock: one integer or a list of them, each in [min, max]; absent = no lock. */
std::vector<int> intLock(JsonFields& f, std::string_view key, std::int64_t min, std::int64_t max)
{
    const json* value = f.find(key);
    if (!value || value->is_null())
        return {};
    const auto one = [&](const json& v) {
        if (!v.is_number_integer() || v.get<std::int64_t>() < min || v.get<std::int64_t>() > max)
            f.fail(key, cat("expected an integer in [", min, ", ", max, "] or a list of them, got ", describeJson(v)),
                   cat("e.g. ", min == 0 ? "1" : "8", " or [4, 8]; [] searches every value"));
        return static_cast<int>(v.get<std::int64_t>());
    };
    std::vector<int> out;
    if (value->is_array())
        for (const auto& v : *value)
            out.push_back(one(v));
    else
        out.push_back(one(*value));
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

/** A lock of names (recompute kinds, schedules): one name or a list of them. */
template<typename Parse> auto nameLock(JsonFields& f, std::string_view key, Parse parse, std::string_view hint)
{
    std::vector<std::decay_t<decltype(*parse(std::string_view {}))>> out;
    const json* value = f.find(key);
    if (!value || value->is_null())
        return out;
    const auto one = [&](const json& v) {
        const auto parsed = v.is_string() ? parse(toLower(trimmed(v.get<std::string>()))) : std::nullopt;
        if (!parsed)
            f.fail(key, cat("expected a name or a list of names, got ", describeJson(v)), std::string(hint));
        if (std::find(out.begin(), out.end(), *parsed) == out.end())
            out.push_back(*parsed);
    };
    if (value->is_array())
        for (const auto& v : *value)
            one(v);
    else
        one(*value);
    return out;
}

} // namespace

PlannerConfig plannerConfigFromJson(const nlohmann::json& doc, std::string_view originView)
{
    const std::string origin(originView);
    JsonFields f(doc, origin);
    PlannerConfig c;
    const auto number = [&f](std::string_view key, double min, double max, double fallback) {
        return f.optNumber(key, min, max).value_or(fallback);
    };
    const auto integer = [&f](std::string_view key, std::int64_t min, std::int64_t max, int fallback) {
        return static_cast<int>(f.optInteger(key, min, max).value_or(fallback));
    };

    c.task_name = f.optString("task_name").value_or(c.task_name);
    c.consider_mem = f.boolean("consider_mem", c.consider_mem);
    c.memory_constraint = number("memory_constraint", 0.0, kMaxMemoryGB, c.memory_constraint);
    c.memory_granularity = number("memory_granularity", 1.0, kMaxBytes, c.memory_granularity);
    c.transient_mem_coef = number("transient_mem_coef", 0.0, kMaxCoefficient, c.transient_mem_coef);
    c.opt_resident_coef = number("opt_resident_coef", 0.0, kMaxCoefficient, c.opt_resident_coef);
    c.opt_transient_coef = number("opt_transient_coef", 0.0, kMaxCoefficient, c.opt_transient_coef);
    c.recompute_modules = nameList(f, "recompute_modules");
    if (const json* zero = f.find("zero_stage"); zero && zero->is_array())
        c.locks.zero = intLock(f, "zero_stage", 0, 3);
    else
        c.zero_stage = autoOrInteger(f, "zero_stage", -1, 0, 3, c.zero_stage);
    c.zero_ngroups = integer("zero_ngroups", 1, kMaxDevices, c.zero_ngroups);
    c.pipeline_pivots = nameList(f, "pipeline_pivots");
    c.pipeline_nstages = autoOrInteger(f, "pipeline_nstages", 0, 1, kMaxDevices, c.pipeline_nstages);
    if (const json* schedules = f.find("pipeline_scheduler"); schedules && schedules->is_array())
        c.locks.schedule = nameLock(
            f, "pipeline_scheduler", [](std::string_view n) { return parseSchedule(n); }, kScheduleHint);
    else if (const auto scheduler = f.optString("pipeline_scheduler")) {
        if (toLower(*scheduler) == kAuto) {
            c.pipeline_scheduler = std::string(kAuto);
        } else if (const auto kind = parseSchedule(*scheduler)) {
            c.pipeline_scheduler = std::string(scheduleName(*kind));
        } else {
            f.fail("pipeline_scheduler", cat("unknown schedule '", *scheduler, "'"), kScheduleHint);
        }
    }
    c.max_pipeline_bubble_ratio = number("max_pipeline_bubble_ratio", 0.0, 1.0, c.max_pipeline_bubble_ratio);
    c.max_pipeline_unbalance_ratio = number("max_pipeline_unbalance_ratio", 0.0, 1.0, c.max_pipeline_unbalance_ratio);
    c.mesh_row = integer("mesh_row", 0, kMaxDevices, c.mesh_row);
    c.mesh_col = integer("mesh_col", 0, kMaxDevices, c.mesh_col);
    c.world_size = integer("world_size", 0, kMaxDevices, c.world_size);
    if (const json* mb = f.find("micro_batch_size"); mb && mb->is_array())
        c.locks.micro_batch = intLock(f, "micro_batch_size", 1, kMaxMicroBatch);
    else
        c.micro_batch_size = integer("micro_batch_size", 0, kMaxMicroBatch, c.micro_batch_size);
    c.locks.tp = intLock(f, "tp", 1, kMaxDevices);
    c.locks.pp = intLock(f, "pp", 1, kMaxDevices);
    c.locks.dp = intLock(f, "dp", 1, kMaxDevices);
    c.locks.cp = intLock(f, "cp", 1, kMaxCp);
    c.locks.ep = intLock(f, "ep", 1, kMaxDevices);
    c.locks.vpp = intLock(f, "vpp", 1, kMaxDevices);
    c.locks.recompute = nameLock(
        f, "recompute", [](std::string_view n) { return parseRecompute(n); }, "use none, selective or full");
    c.update_freq = integer("update_freq", 0, kMaxUpdateFreq, c.update_freq);
    c.profile_dir = f.optString("profile_dir").value_or(c.profile_dir);
    c.use_profile = f.boolean("use_profile", c.use_profile);
    c.parallel_profile = f.boolean("parallel_profile", c.parallel_profile);
    c.re_profile = f.boolean("re_profile", c.re_profile);
    c.topk = integer("topk", 1, kMaxTopk, c.topk);
    if (const auto solver = f.optString("solver")) {
        const std::string lower = toLower(*solver);
        if (lower != "dp" && lower != "ilp")
            f.fail("solver", cat("unknown solver '", *solver, "'"), "use dp or ilp");
        c.solver = lower;
    }
    c.nproc = integer("nproc", 0, kMaxThreads, c.nproc);
    c.load_plan_path = f.optString("load_plan_path").value_or(c.load_plan_path);
    c.save_plan_path = f.optString("save_plan_path").value_or(c.save_plan_path);
    c.partition_constraints_path = f.optString("partition_constraints_path").value_or(c.partition_constraints_path);
    c.is_train = f.boolean("is_train", c.is_train);
    c.verbose = f.boolean("verbose", c.verbose);
    c.ignore_small_tensor_threshold
        = number("ignore_small_tensor_threshold", 0.0, kMaxBytes, c.ignore_small_tensor_threshold);
    if (const auto method = f.optString("method")) {
        const auto parsed = parsePlanMethod(*method);
        if (!parsed)
            f.fail("method", cat("unknown method '", *method, "'"), kMethodHint);
        c.method = *parsed;
    }
    if (const json* maxCp = f.find("max_cp")) {
        if (maxCp->is_string() ? toLower(maxCp->get<std::string>()) != kAuto : !maxCp->is_number())
            f.fail("max_cp",
                   cat("expected \"auto\" or a power of two in [1, ", kMaxCp, "], got ", describeJson(*maxCp)),
                   "e.g. \"auto\", 1 (off) or 8");
        c.max_cp = maxCp->is_string() ? -1 : integer("max_cp", 1, kMaxCp, c.max_cp);
    }
    c.tp_comm_overlap = f.boolean("tp_comm_overlap", c.tp_comm_overlap);
    c.overlap_param_gather = f.boolean("overlap_param_gather", c.overlap_param_gather);
    c.moe_a2a_overlap = f.boolean("moe_a2a_overlap", c.moe_a2a_overlap);
    c.moe_shared_expert_overlap = f.boolean("moe_shared_expert_overlap", c.moe_shared_expert_overlap);
    c.moe_capacity_factor = f.optNumber("moe_capacity_factor", 0, 1e3).value_or(c.moe_capacity_factor);
    c.moe_router_imbalance = f.optNumber("moe_router_imbalance", 1, 1e3).value_or(c.moe_router_imbalance);
    c.fp8_linears = f.boolean("fp8_linears", c.fp8_linears);
    if (const auto recipe = f.optString("fp8_recipe")) {
        const auto parsed = parseFloat8Recipe(toLower(trimmed(*recipe)));
        if (!parsed)
            f.fail("fp8_recipe", cat("unknown FP8 recipe '", *recipe, "'"), "use \"tensorwise\" or \"rowwise\"");
        c.fp8_recipe = *parsed;
    }
    c.fp8_bf16_first_layers = integer("fp8_bf16_first_layers", 0, 100000, c.fp8_bf16_first_layers);
    c.fp8_bf16_last_layers = integer("fp8_bf16_last_layers", 0, 100000, c.fp8_bf16_last_layers);
    c.grad_reduce_bf16 = f.boolean("grad_reduce_bf16", c.grad_reduce_bf16);
    c.fp8_param_gather = f.boolean("fp8_param_gather", c.fp8_param_gather);
    c.eager_kernels = f.boolean("eager_kernels", c.eager_kernels);
    c.layer_num = integer("layer_num", 0, 100000, c.layer_num);
    if (const auto framework = f.optString("framework")) {
        const std::string name = toLower(trimmed(*framework));
        const auto parsed = parseFramework(name);
        if (!parsed)
            f.fail("framework", cat("unknown framework '", *framework, "'"), frameworkHint(name));
        c.framework = *parsed;
    }
    if (const auto version = f.optString("framework_version")) {
        // A patch release names its line (core_v0.19.1 -> core_v0.19); validateConfig refuses an unknown one.
        c.framework_version = trimmed(*version);
        if (!c.framework_version.empty())
            c.framework_version
                = resolveFrameworkVersion(c.framework, c.framework_version).value_or(c.framework_version);
    }
    if (const json* headroom = f.find("min_memory_headroom")) {
        if (headroom->is_string() ? toLower(headroom->get<std::string>()) != kAuto : !headroom->is_number())
            f.fail("min_memory_headroom",
                   cat("expected \"auto\" or GB in [0, ", kMaxMemoryGB, "], got ", describeJson(*headroom)));
        if (headroom->is_string()) {
            c.min_memory_headroom = -1;
        } else {
            c.min_memory_headroom = number("min_memory_headroom", 0.0, kMaxMemoryGB, c.min_memory_headroom);
        }
    }
    c.input_len = f.optInteger("input_len", 1, kMaxServingTokens).value_or(c.input_len);
    c.output_len = f.optInteger("output_len", 1, kMaxServingTokens).value_or(c.output_len);
    readConcurrency(f, c.concurrency);
    readWeightFormat(f, c.weight_dtype);
    readKvCacheDtype(f, c.kv_cache_dtype);
    c.max_ttft_ms = number("max_ttft_ms", 0.0, 1e9, c.max_ttft_ms);
    c.max_tpot_ms = number("max_tpot_ms", 0.0, 1e9, c.max_tpot_ms);
    readServingFramework(f, c.serving_framework);
    c.memory_fraction = number("memory_fraction", 0.0, 1.0, c.memory_fraction);
    f.checkNoUnknownKeys();
    validateConfig(c, origin);
    return c;
}

PlannerConfig loadPlannerConfig(const std::filesystem::path& path)
{
    return plannerConfigFromJson(readJsonFile(path), path.string());
}

} // namespace shardscape
