// SPDX-License-Identifier: MIT
// The planner config's checks: every range and cross-field rule, and what the chosen framework can run.
#include "planner_config_rules.h"

#include "shardscape/sim/schedule.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace shardscape {

namespace planner_config {

namespace {

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
    if (c.fp8_linears && (c.fp8_bf16_first_layers > 0 || c.fp8_bf16_last_layers > 0) && !p.fp8_bf16_edge_layers)
        fail(origin, c.fp8_bf16_first_layers > 0 ? "fp8_bf16_first_layers" : "fp8_bf16_last_layers",
             cat(name, " runs every block's linears in FP8"), cat("set it to 0, ", kOtherFramework));
    if (c.grad_reduce_bf16 && !p.grad_reduce_bf16)
        fail(origin, "grad_reduce_bf16",
             cat(name,
                 p.framework == Framework::DeepSpeed ? " reduces bf16 gradients already"
                                                     : " reduces gradients in fp32 only"),
             cat("set it to false, ", kOtherFramework));
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

} // namespace

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

} // namespace planner_config

void PlannerConfig::validate() const
{
    planner_config::validateConfig(*this, "planner config");
}

} // namespace shardscape
