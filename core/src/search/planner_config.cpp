// SPDX-License-Identifier: MIT
#include "shardscape/search/planner_config.h"

#include "shardscape/cost/serving_keys.h"
#include "shardscape/sim/schedule.h"
#include "shardscape/support/error.h"
#include "shardscape/support/json_fields.h"
#include "shardscape/support/json_file.h"
#include "shardscape/support/strings.h"
#include "shardscape/support/units.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <nlohmann/json.hpp>

namespace shardscape {

namespace {

using nlohmann::json;

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

// Bounds far beyond any real run; they exist so that a typo (an extra zero or two) is caught, not to limit users.
constexpr std::int64_t kMaxDevices = std::int64_t {1} << 20;
constexpr std::int64_t kMaxMicroBatch = 1'000'000;
constexpr std::int64_t kMaxUpdateFreq = std::int64_t {1} << 24;
constexpr std::int64_t kMaxTopk = 10'000;
constexpr std::int64_t kMaxThreads = 4096;
constexpr std::int64_t kMaxCp = 64;
constexpr double kMaxMemoryGB = 1e6;
constexpr double kMaxCoefficient = 1e6;
constexpr double kMaxBytes = 1e15;

constexpr std::string_view kAuto = "auto";
constexpr std::string_view kMax = "max";
constexpr std::int64_t kMaxServingTokens = 100'000'000;
constexpr const char* kScheduleHint = "use auto, gpipe, 1f1b, interleaved, zb-h1, zb-v, dualpipev or dualpipe";
constexpr const char* kMethodHint = "use auto, data, zero2, zero3, shard or pipeshard";
constexpr std::string_view kOtherFramework = "or choose another framework (\"generic\" runs everything)";

/** Throws InputError "ORIGIN: KEY: COMPLAINT (HINT)", the same shape JsonFields uses. */
[[noreturn]] void fail(std::string_view origin, std::string_view key, const std::string& complaint,
                       const std::string& hint = {})
{
    throw InputError(cat(origin, ": ", key, ": ", complaint), hint);
}

std::string trimmed(std::string_view text)
{
    const auto first = text.find_first_not_of(" \t\r\n");
    if (first == std::string_view::npos)
        return {};
    const auto last = text.find_last_not_of(" \t\r\n");
    return std::string(text.substr(first, last - first + 1));
}

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

bool isPowerOfTwo(std::int64_t n)
{
    return n > 0 && (n & (n - 1)) == 0;
}

void checkNumber(std::string_view origin, std::string_view key, double value, double min, double max)
{
    if (!std::isfinite(value) || value < min || value > max)
        fail(origin, key, cat("value ", value, " is out of range [", min, ", ", max, "]"));
}

void checkInteger(std::string_view origin, std::string_view key, std::int64_t value, std::int64_t min, std::int64_t max)
{
    if (value < min || value > max)
        fail(origin, key, cat("value ", value, " is out of range [", min, ", ", max, "]"));
}

void checkNames(std::string_view origin, std::string_view key, const std::vector<std::string>& names)
{
    for (std::size_t i = 0; i < names.size(); ++i)
        if (trimmed(names[i]).empty() || names[i].find(',') != std::string::npos)
            fail(origin, key, cat("entry ", i, " ('", names[i], "') is not a module name"));
}

std::vector<std::string> frameworkNames()
{
    std::vector<std::string> names;
    for (const auto f : allFrameworks())
        names.emplace_back(frameworkName(f));
    return names;
}

/** "use generic, megatron-core, ..." with "did you mean 'x'? " in front when `given` is close to one. */
std::string frameworkHint(std::string_view given)
{
    const auto names = frameworkNames();
    const auto nearest = nearestNames(given, names, 1);
    const bool close
        = !nearest.empty() && editDistance(given, nearest.front()) <= std::max<std::size_t>(2, given.size() / 3);
    return cat(close ? cat("did you mean '", nearest.front(), "'? ") : std::string(), "use ", join(names),
               " (aliases: megatron, megatron-lm, mcore, titan, llm-foundry)");
}

template<typename T> bool contains(const std::vector<T>& values, T value)
{
    return std::find(values.begin(), values.end(), value) != values.end();
}

/** What the config pins explicitly must be something the framework runs (what it leaves open is pruned instead). */
void validateFramework(const PlannerConfig& c, std::string_view origin)
{
    const FrameworkProfile& p = frameworkProfile(c.framework);
    const std::string_view name = frameworkName(c.framework);
    if (c.zero_stage >= 0 && !contains(p.zero_stages, c.zero_stage))
        fail(origin, "zero_stage",
             cat("value ", c.zero_stage, " is not a ZeRO stage ", name, " runs (", zeroStageList(p), ")"),
             cat("use \"auto\" or one of those, ", kOtherFramework));
    const int methodZero = c.method == PlanMethod::Data ? 0
        : c.method == PlanMethod::Zero2                 ? 2
        : c.method == PlanMethod::Zero3                 ? 3
                                                        : -1;
    if (methodZero >= 0 && !contains(p.zero_stages, methodZero))
        fail(origin, "method",
             cat("'", planMethodName(c.method), "' plans with ZeRO stage ", methodZero, ", which ", name,
                 " does not run (", zeroStageList(p), ")"),
             cat("use another method, ", kOtherFramework));
    if (p.schedules.empty()) {
        if (c.pipeline_nstages > 1)
            fail(origin, "pipeline_nstages",
                 cat("value ", c.pipeline_nstages, " needs pipeline parallelism, which ", name, " does not have"),
                 cat("use \"auto\" or 1, ", kOtherFramework));
        if (c.method == PlanMethod::PipeShard)
            fail(origin, "method", cat("'pipeshard' needs pipeline parallelism, which ", name, " does not have"),
                 cat("use auto or shard, ", kOtherFramework));
    }
    if (c.pipeline_scheduler != kAuto && c.pipeline_nstages != 1) {
        const auto kind = parseSchedule(c.pipeline_scheduler);
        if (kind && !contains(p.schedules, *kind))
            fail(origin, "pipeline_scheduler",
                 p.schedules.empty()
                     ? cat(name, " has no pipeline schedules")
                     : cat(name, " has no ", scheduleName(*kind), " schedule (it runs ", scheduleList(p), ")"),
                 cat("use \"auto\" or one of those, ", kOtherFramework));
    }
    if (c.fp8_linears && !p.fp8)
        fail(origin, "fp8_linears", cat(name, " has no FP8 training"), cat("set it to false, ", kOtherFramework));
    if (c.fp8_linears && std::find(p.fp8_recipes.begin(), p.fp8_recipes.end(), c.fp8_recipe) == p.fp8_recipes.end())
        fail(origin, "fp8_recipe", cat(name, " has no ", float8RecipeName(c.fp8_recipe), " FP8 scaling"),
             cat("use \"tensorwise\", ", kOtherFramework));
    if (c.moe_a2a_overlap && !p.moe_a2a_overlap)
        fail(origin, "moe_a2a_overlap", cat(name, " does not overlap expert all-to-alls with compute"),
             cat("set it to false, ", kOtherFramework));
    if (c.moe_shared_expert_overlap && !p.moe_shared_expert_overlap)
        fail(origin, "moe_shared_expert_overlap", cat(name, " does not run the shared expert under the all-to-alls"),
             cat("set it to false, ", kOtherFramework));
    if (c.moe_capacity_factor > 0 && !p.moe_token_dropping)
        fail(origin, "moe_capacity_factor", cat(name, "'s experts are dropless (no capacity factor)"),
             cat("set it to 0, ", kOtherFramework));
    if (c.framework == Framework::Torchtitan && c.tp_comm_overlap && c.eager_kernels)
        fail(origin, "tp_comm_overlap", "torchtitan's async TP needs torch.compile, but eager_kernels is true",
             "set tp_comm_overlap or eager_kernels to false");
}

/** Every range and cross-field rule; `origin` prefixes the messages (a file name or "planner config"). */
void validateConfig(const PlannerConfig& c, std::string_view origin)
{
    if (trimmed(c.task_name).empty())
        fail(origin, "task_name", "must not be empty", "name the run, e.g. \"shardscape\"");
    checkNumber(origin, "memory_constraint", c.memory_constraint, 0.0, kMaxMemoryGB);
    checkNumber(origin, "memory_granularity", c.memory_granularity, 1.0, kMaxBytes);
    checkNumber(origin, "transient_mem_coef", c.transient_mem_coef, 0.0, kMaxCoefficient);
    checkNumber(origin, "opt_resident_coef", c.opt_resident_coef, 0.0, kMaxCoefficient);
    checkNumber(origin, "opt_transient_coef", c.opt_transient_coef, 0.0, kMaxCoefficient);
    checkNames(origin, "recompute_modules", c.recompute_modules);
    if (c.zero_stage != -1)
        checkInteger(origin, "zero_stage", c.zero_stage, 0, 3);
    checkInteger(origin, "zero_ngroups", c.zero_ngroups, 1, kMaxDevices);
    checkNames(origin, "pipeline_pivots", c.pipeline_pivots);
    checkInteger(origin, "pipeline_nstages", c.pipeline_nstages, 0, kMaxDevices);
    if (c.pipeline_scheduler != kAuto && !parseSchedule(c.pipeline_scheduler))
        fail(origin, "pipeline_scheduler", cat("unknown schedule '", c.pipeline_scheduler, "'"), kScheduleHint);
    checkNumber(origin, "max_pipeline_bubble_ratio", c.max_pipeline_bubble_ratio, 0.0, 1.0);
    checkNumber(origin, "max_pipeline_unbalance_ratio", c.max_pipeline_unbalance_ratio, 0.0, 1.0);
    checkInteger(origin, "mesh_row", c.mesh_row, 0, kMaxDevices);
    checkInteger(origin, "mesh_col", c.mesh_col, 0, kMaxDevices);
    checkInteger(origin, "world_size", c.world_size, 0, kMaxDevices);
    checkInteger(origin, "micro_batch_size", c.micro_batch_size, 0, kMaxMicroBatch);
    checkInteger(origin, "update_freq", c.update_freq, 0, kMaxUpdateFreq);
    checkInteger(origin, "topk", c.topk, 1, kMaxTopk);
    if (c.solver != "dp" && c.solver != "ilp")
        fail(origin, "solver", cat("unknown solver '", c.solver, "'"), "use dp or ilp");
    checkInteger(origin, "nproc", c.nproc, 0, kMaxThreads);
    checkNumber(origin, "ignore_small_tensor_threshold", c.ignore_small_tensor_threshold, 0.0, kMaxBytes);
    if (planMethodName(c.method).empty())
        fail(origin, "method", cat("unknown method #", static_cast<int>(c.method)), kMethodHint);
    if (c.max_cp >= 0)
        checkInteger(origin, "max_cp", c.max_cp, 1, kMaxCp);
    if (c.max_cp >= 0 && !isPowerOfTwo(c.max_cp))
        fail(origin, "max_cp", cat("value ", c.max_cp, " is not a power of two"), "use 1, 2, 4, 8, 16, 32 or 64");
    checkInteger(origin, "layer_num", c.layer_num, 0, 100000);
    if (static_cast<std::size_t>(c.framework) >= allFrameworks().size())
        fail(origin, "framework", cat("unknown framework #", static_cast<int>(c.framework)), frameworkHint("?"));
    if (!c.framework_version.empty() && !resolveFrameworkVersion(c.framework, c.framework_version)) {
        const auto [cause, hint] = unknownFrameworkVersion(c.framework, c.framework_version);
        fail(origin, "framework_version", cause, hint);
    }
    if (!(c.min_memory_headroom < 0))
        checkNumber(origin, "min_memory_headroom", c.min_memory_headroom, 0.0, kMaxMemoryGB);

    // Cross-field consistency.
    if (c.mesh_row > 0 && c.mesh_col > 0 && c.world_size > 0
        && static_cast<std::int64_t>(c.mesh_row) * c.mesh_col != c.world_size)
        fail(origin, "world_size",
             cat("value ", c.world_size, " is not mesh_row x mesh_col = ", c.mesh_row, " x ", c.mesh_col, " = ",
                 static_cast<std::int64_t>(c.mesh_row) * c.mesh_col),
             "drop world_size (it defaults to mesh_row x mesh_col) or fix the mesh");
    const std::int64_t knownWorld = c.world_size > 0 ? c.world_size
        : c.mesh_row > 0 && c.mesh_col > 0           ? static_cast<std::int64_t>(c.mesh_row) * c.mesh_col
                                                     : 0;
    if (knownWorld > 0 && c.pipeline_nstages > knownWorld)
        fail(origin, "pipeline_nstages",
             cat("value ", c.pipeline_nstages, " is more stages than the ", knownWorld, " GPUs of the mesh"),
             "use \"auto\" or at most one stage per GPU");
    if (c.zero_ngroups > 1 && c.zero_stage == 0)
        fail(origin, "zero_ngroups", cat("value ", c.zero_ngroups, " needs ZeRO, but zero_stage is 0"),
             "set zero_stage to \"auto\" or 1..3, or zero_ngroups to 1");
    if (knownWorld > 0 && c.zero_ngroups > knownWorld)
        fail(origin, "zero_ngroups", cat("value ", c.zero_ngroups, " is more groups than the ", knownWorld, " GPUs"));

    const bool noPipeline = c.method == PlanMethod::Data || c.method == PlanMethod::Zero2
        || c.method == PlanMethod::Zero3 || c.method == PlanMethod::Shard;
    if (noPipeline && c.pipeline_nstages > 1)
        fail(origin, "pipeline_nstages",
             cat("value ", c.pipeline_nstages, " contradicts method '", planMethodName(c.method),
                 "', which plans without a pipeline"),
             "use method pipeshard or auto, or pipeline_nstages \"auto\" or 1");
    if (c.method == PlanMethod::PipeShard && c.pipeline_nstages == 1)
        fail(origin, "pipeline_nstages", "value 1 contradicts method 'pipeshard', which needs a pipeline",
             "use pipeline_nstages \"auto\" or 2 or more, or method shard");
    const int methodZero = c.method == PlanMethod::Data ? 0
        : c.method == PlanMethod::Zero2                 ? 2
        : c.method == PlanMethod::Zero3                 ? 3
                                                        : -1;
    if (methodZero >= 0 && c.zero_stage >= 0 && c.zero_stage != methodZero)
        fail(origin, "zero_stage",
             cat("value ", c.zero_stage, " contradicts method '", planMethodName(c.method), "' (ZeRO stage ",
                 methodZero, ")"),
             cat("use zero_stage \"auto\" or ", methodZero, ", or another method"));
    validateFramework(c, origin);
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

void PlannerConfig::validate() const
{
    validateConfig(*this, "planner config");
}

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
