// SPDX-License-Identifier: MIT
// `simulate`: predicts one parallel configuration with the cost model and prints, writes and traces it.
#include "cli_common.h"
#include "commands.h"
#include "simulate_options.h"

#include "shardscape/model/model_source.h"
#include "shardscape/plan/config_import.h"
#include "shardscape/plan/plan_file.h"
#include "shardscape/plan/result_json.h"
#include "shardscape/profile/profile_cost_source.h"
#include "shardscape/search/planner.h"
#include "shardscape/support/error.h"
#include "shardscape/support/strings.h"
#include "shardscape/support/units.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>

namespace shardscape::cli {

namespace {

// Beyond this many GPUs the int arithmetic of ParallelConfig could overflow; no real cluster is near it.
constexpr std::int64_t kMaxWorldSize = std::int64_t {1} << 20;
constexpr int kMaxDegree = 1 << 20;
// The simulator walks every micro-batch on every rank; far beyond any real step and it would only eat memory.
constexpr std::int64_t kMaxMicrobatches = 1 << 16;

ScheduleKind scheduleFromName(const std::string& name)
{
    if (const auto kind = parseSchedule(name))
        return *kind;
    throw InputError(cat("unknown schedule '", name, "'"),
                     "choose gpipe, 1f1b, interleaved, zb-h1, zb-v, dualpipev or dualpipe");
}

RecomputeKind recomputeFromName(const std::string& name)
{
    const auto kind = parseRecompute(name);
    if (!kind || *kind == RecomputeKind::Modules)
        throw InputError(cat("unknown recomputation '", name, "'"),
                         "choose none, selective or full; name modules with --recompute-modules");
    return *kind;
}

void checkRankOrder(const std::string& order)
{
    // groupShape() reads the order as given; a missing or repeated dimension would silently misplace groups.
    std::vector<std::string> dims;
    std::stringstream in(order);
    for (std::string d; std::getline(in, d, '-');)
        dims.push_back(d);
    std::vector<std::string> sorted = dims;
    std::sort(sorted.begin(), sorted.end());
    if (sorted != std::vector<std::string> {"cp", "dp", "pp", "tp"})
        throw InputError(cat("rank order '", order, "' is not an order of tp, cp, dp and pp"),
                         "write the four dimensions fastest-varying first, e.g. tp-cp-dp-pp");
}

/** The transformer shapes of the job config and of --model, where they differ ("" when they agree). */
std::string shapeDifferences(const TransformerShape& file, const TransformerShape& model)
{
    std::vector<std::string> diffs;
    const auto check = [&](const char* what, std::int64_t a, std::int64_t b) {
        if (a > 0 && a != b)
            diffs.push_back(cat(what, " ", a, " vs ", b));
    };
    check("layers", file.num_layers, model.num_layers);
    check("hidden", file.hidden, model.hidden);
    check("heads", file.num_heads, model.num_heads);
    check("kv heads", file.num_kv_heads, model.num_kv_heads);
    check("FFN", file.ffn_hidden, model.ffn_hidden);
    check("vocab", file.vocab, model.vocab);
    check("experts", file.num_experts, model.num_experts);
    return join(diffs, ", ");
}

/**
 * --from-config: the job config's parallel configuration replaces the degree options; its global batch and
 * sequence length apply unless given. Warnings go to stderr.
 */
SimulateOptions withImportedConfig(const SimulateOptions& given)
{
    SimulateOptions o = given;
    // What the file may leave open: the world size (only when --nodes fixes it) and the model's block count.
    BuildOptions probe;
    probe.seq_len = o.seq_len;
    const ModelGraph shape = loadModel(o.model, probe);
    ImportOptions options;
    if (o.nodes_given)
        options.world_size = loadCluster(o.cluster, o.nodes, o.gpus_per_node).worldSize();
    if (shape.transformer)
        options.num_layers = static_cast<int>(shape.transformer->num_layers);
    const ImportedConfig imported = importJobConfig(o.from_config, options);
    const ParallelConfig& c = imported.config;
    if (imported.model && shape.transformer) {
        const std::string diffs = shapeDifferences(*imported.model, *shape.transformer);
        if (!diffs.empty())
            std::cerr << "warning: " << o.from_config << " describes another model than " << o.model << " (" << diffs
                      << "): simulating " << o.model << '\n';
    }
    for (const auto& warning : imported.warnings)
        std::cerr << "warning: " << o.from_config << ": " << warning << '\n';
    if (applyJobAttention(o.job_build, imported))
        std::cerr << "note: " << o.from_config
                  << " runs Megatron-Core's local layer (--transformer-impl local): " << o.model
                  << "'s attention is simulated unfused\n";

    o.tp = c.tp;
    o.pp = c.pp;
    o.dp = c.dp;
    o.cp = c.cp;
    o.ep = c.ep;
    o.etp = c.etp;
    o.vpp = c.vpp;
    o.micro_batch = c.micro_batch;
    o.zero = c.zero_stage;
    o.zero_ngroups = c.zero_ngroups;
    o.sequence_parallel = c.sequence_parallel;
    o.tp_comm_overlap = c.tp_comm_overlap;
    o.overlap_param_gather = c.overlap_param_gather;
    o.moe_a2a_overlap = c.moe_a2a_overlap;
    o.moe_shared_expert_overlap = c.moe_shared_expert_overlap;
    o.moe_capacity_factor = c.moe_capacity_factor;
    o.moe_router_imbalance = c.moe_router_imbalance;
    o.fp8_linears = c.fp8_linears;
    o.fp8_recipe = std::string(float8RecipeName(c.fp8_recipe));
    o.fp8_bf16_first_layers = c.fp8_bf16_first_layers;
    o.fp8_bf16_last_layers = c.fp8_bf16_last_layers;
    o.grad_reduce_bf16 = c.grad_reduce_bf16;
    o.fp8_param_gather = c.fp8_param_gather;
    o.eager_kernels = c.eager_kernels;
    if (o.framework.empty()) // --framework overrides the file's
        o.framework = std::string(frameworkName(c.framework));
    o.recompute = c.recompute == RecomputeKind::Modules ? "none" : std::string(recomputeName(c.recompute));
    o.recompute_modules = c.recompute == RecomputeKind::Modules ? c.recompute_modules : std::vector<std::string> {};
    o.schedule = std::string(scheduleName(c.schedule));
    o.schedule_given = true;
    o.stage_layers = c.stage_layers;
    o.rank_order = c.rank_order;
    if (o.global_batch == 0)
        o.global_batch = imported.global_batch;
    if (o.seq_len == 0)
        o.seq_len = imported.seq_len;
    if (!o.gpus_per_node_given && imported.gpus_per_node > 0)
        o.gpus_per_node = imported.gpus_per_node;
    if (o.json != "-" && o.trace != "-")
        std::cout << "Job config " << o.from_config << " (" << imported.format << "): " << c.describe()
                  << ", global batch " << imported.global_batch
                  << (imported.seq_len > 0 ? cat(", seq_len ", imported.seq_len) : std::string()) << "\n";
    return o;
}

/**
 * --recompute full --recompute-num-layers n: Megatron's block method, the first n blocks of each model chunk
 * recomputed whole (megatron/core/recompute.py checkpointed_forward), as the blocks' indices over the chunks the
 * configuration splits the model into. n at or above a chunk's blocks recomputes them all, as full does.
 */
void recomputeFirstBlocks(ParallelConfig& config, const CostModel& model, int n)
{
    if (config.recompute != RecomputeKind::Full)
        throw InputError("--recompute-num-layers needs --recompute full",
                         "Megatron's block method recomputes the first n whole blocks of each model chunk: add "
                         "--recompute full");
    if (config.pp > 1 && (isVShaped(config.schedule) || config.schedule == ScheduleKind::DualPipe))
        throw InputError(cat("--recompute-num-layers is Megatron's block method, which runs 1f1b and interleaved "
                             "pipelines, not ",
                             scheduleName(config.schedule)),
                         "use --schedule 1f1b or interleaved, or --recompute full alone");
    if (model.blockIndices().empty())
        throw InputError("this model's block module paths hold other numbers (such as an nn.Sequential child "
                         "'mlp.0'), so its blocks cannot be recomputed by index",
                         "use --recompute full, or --recompute-modules with module names");
    config = model.withFirstBlocksRecomputed(config, n);
}

int runSimulate(const SimulateOptions& given)
{
    if (!given.framework.empty())
        frameworkFromOption(given.framework); // a bad name fails before the job config or the model is read
    const SimulateOptions o = given.from_config.empty() ? given : withImportedConfig(given);
    const ScheduleKind requested = scheduleFromName(o.schedule);
    if (!o.recompute_modules.empty() && o.recompute != "none")
        throw InputError("--recompute and --recompute-modules exclude each other",
                         "--recompute-modules alone recomputes the named modules");
    const RecomputeKind recompute
        = o.recompute_modules.empty() ? recomputeFromName(o.recompute) : RecomputeKind::Modules;
    for (const auto& name : o.recompute_modules)
        if (name.empty())
            throw InputError("--recompute-modules has an empty module name",
                             "give module path suffixes such as self_attn,mlp (ROOT = every block)");
    checkRankOrder(o.rank_order);
    if (o.json == "-" && o.trace == "-")
        throw InputError("--json and --trace cannot both write to stdout", "give one of them a file name");
    const std::int64_t world = std::int64_t {o.tp} * o.pp * o.dp * o.cp;
    if (world > kMaxWorldSize)
        throw InputError(cat("tp x pp x dp x cp = ", world, " GPUs is more than ", kMaxWorldSize),
                         "use smaller parallel degrees");

    // Without --nodes, the cluster is as many nodes as the configuration needs (the last one may be partial).
    Cluster cluster = loadCluster(o.cluster, o.nodes_given ? o.nodes : 0, o.gpus_per_node);
    if (!o.nodes_given) {
        const std::int64_t nodes = (world + cluster.gpus_per_node - 1) / cluster.gpus_per_node;
        cluster = loadCluster(o.cluster, static_cast<int>(nodes), cluster.gpus_per_node);
    }

    BuildOptions build = o.job_build;
    build.batch = o.micro_batch;
    build.seq_len = o.seq_len;
    auto graph = std::make_shared<const ModelGraph>(loadModel(o.model, build));
    ProfileRequest profileRequest;
    profileRequest.profile_dir = o.profile_dir;
    const CostSourceChoice costs = chooseCostSource(cluster, CostParams {}, profileRequest);
    CostParams params;
    params.calibrated_memory_bytes = costs.calibrated_memory_bytes;
    // Human output goes to stdout; when stdout carries JSON or a trace, the notes go to stderr.
    std::ostream& notes = o.json == "-" || o.trace == "-" ? std::cerr : std::cout;
    for (const auto& note : costs.profile.notes)
        notes << "profile: " << note << '\n';
    // The same layers and tensor-parallel roles as `plan` gives the model, so a plan's winner simulates as it was
    // ranked (ONNX graphs without repeated module paths, or without TP roles, included).
    const PlannerConfig planning;
    std::string layerNote, rolesNote;
    std::vector<Layer> layers = planningLayers(*graph, planning, &layerNote);
    const auto shared = withShardingRoles(graph, layers, cluster, CostParams {}, planning, &rolesNote);
    for (const auto* note : {&layerNote, &rolesNote})
        if (!note->empty())
            notes << *note << '\n';
    const CostModel model(shared, cluster, params, costs.source, std::move(layers));

    ParallelConfig config;
    config.tp = o.tp;
    config.pp = o.pp;
    config.dp = o.dp;
    config.cp = o.cp;
    config.ep = o.ep;
    config.etp = o.etp;
    config.vpp = o.vpp;
    config.micro_batch = o.micro_batch;
    config.zero_stage = o.zero;
    config.zero_ngroups = o.zero_ngroups;
    config.sequence_parallel = o.sequence_parallel;
    config.tp_comm_overlap = o.tp_comm_overlap;
    config.overlap_param_gather = o.overlap_param_gather;
    config.moe_a2a_overlap = o.moe_a2a_overlap;
    config.moe_shared_expert_overlap = o.moe_shared_expert_overlap;
    config.moe_capacity_factor = o.moe_capacity_factor;
    config.moe_router_imbalance = o.moe_router_imbalance;
    config.fp8_linears = o.fp8_linears;
    config.fp8_recipe = parseFloat8Recipe(o.fp8_recipe).value_or(Float8Recipe::Tensorwise); // checked by the parser
    if ((o.fp8_bf16_first_layers > 0 || o.fp8_bf16_last_layers > 0) && !o.fp8_linears)
        throw InputError("--fp8-bf16-first-layers and --fp8-bf16-last-layers keep blocks out of FP8, and --fp8 is off",
                         "add --fp8, or leave them out");
    config.fp8_bf16_first_layers = o.fp8_bf16_first_layers;
    config.fp8_bf16_last_layers = o.fp8_bf16_last_layers;
    config.grad_reduce_bf16 = o.grad_reduce_bf16;
    if (o.fp8_param_gather && !o.fp8_linears)
        throw InputError("--fp8-param-gather makes the FP8 linears' weights FP8 parameters, and --fp8 is off",
                         "add --fp8, or leave it out");
    config.fp8_param_gather = o.fp8_param_gather;
    config.eager_kernels = o.eager_kernels;
    config.framework = o.framework.empty() ? Framework::Generic : frameworkFromOption(o.framework);
    if (!o.framework_version.empty()) {
        const auto version = resolveFrameworkVersion(config.framework, o.framework_version);
        if (!version) {
            const auto [cause, hint] = unknownFrameworkVersion(config.framework, o.framework_version);
            throw InputError("--framework-version " + cause, hint);
        }
        config.framework_version = *version;
    }
    config.recompute = recompute;
    config.recompute_modules = o.recompute_modules;
    // --vpp alone means the interleaved schedule, the only one that runs several chunks per rank.
    config.schedule = o.vpp > 1 && !o.schedule_given ? ScheduleKind::Interleaved1F1B : requested;
    config.stage_layers = o.stage_layers;
    config.rank_order = o.rank_order;
    if (o.recompute_num_layers > 0)
        recomputeFirstBlocks(config, model, o.recompute_num_layers);

    Workload workload;
    workload.global_batch = o.global_batch;
    workload.seq_len = graph->seq_len;
    workload.memory_limit_bytes = o.memory_gb * units::kGB;

    const auto begin = std::chrono::steady_clock::now();
    Evaluation e;
    const std::int64_t perStep = std::int64_t {o.dp} * o.micro_batch;
    if (o.global_batch % perStep) {
        // Not adjusted: the user asked for this global batch, so say why it cannot be split.
        e.config = config;
        e.config.num_microbatches = static_cast<int>(std::max<std::int64_t>(1, o.global_batch / perStep));
        e.cost_source = model.source().name();
        e.memory_limit_bytes = o.memory_gb > 0 ? workload.memory_limit_bytes : cluster.device.memory_bytes;
        e.reason = cat("global batch ", o.global_batch, " is not divisible by dp x micro-batch = ", o.dp, " x ",
                       o.micro_batch);
    } else {
        if (o.global_batch / perStep > kMaxMicrobatches)
            throw InputError(cat("global batch ", o.global_batch, " gives ", o.global_batch / perStep,
                                 " micro-batches per step; at most ", kMaxMicrobatches, " are simulated"),
                             "use a larger --micro-batch or --dp, or a smaller --global-batch");
        config.num_microbatches = static_cast<int>(o.global_batch / perStep);
        EvaluateOptions options;
        options.record_timeline = !o.trace.empty();
        options.require_full_cluster = o.nodes_given;
        e = model.evaluate(config, workload, options);
    }
    SearchCounts counts;
    counts.candidates_total = 1;
    counts.candidates_feasible = e.feasible ? 1 : 0;
    counts.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();

    if (o.json != "-" && o.trace != "-")
        printEvaluation(e, model, o);
    if (!o.json.empty())
        writeJsonOutput(resultJson({e}, model, counts), o.json);
    if (!o.trace.empty() && e.simulation)
        writeTrace(e, model, o.trace);
    if (!o.save_plan.empty() && !e.stages.empty()) {
        PlanFileContext context;
        context.global_batch = o.global_batch;
        context.seq_len = graph->seq_len;
        context.model_spec = o.model;
        context.created_by = "shardscape-cli simulate";
        context.version = "0.1.0";
        savePlanFile(o.save_plan, planToJson(e, model, context));
        if (o.json != "-" && o.trace != "-")
            std::cout << "plan saved to " << o.save_plan << '\n';
    }
    if (!e.feasible) {
        std::cerr << "error: " << e.reason << "; " << wayOut(e, model, o) << '\n';
        return kExitBadInput;
    }
    return kExitOk;
}

} // namespace

void addSimulateCommand(CLI::App& app, CommandAction& action)
{
    auto o = std::make_shared<SimulateOptions>();
    auto* cmd = app.add_subcommand("simulate",
                                   "Predict step time, throughput, MFU and memory of one parallel "
                                   "configuration");
    const auto degree = CLI::Range(1, kMaxDegree);
    cmd->add_option("--model,-m", o->model, "preset name, HF config.json, native graph .json or .onnx")->required();
    cmd->add_option("--cluster,-c", o->cluster, "device preset (e.g. h100-sxm) or cluster .json file")->required();
    // Required unless --from-config gives them (checked after parsing); the configuration options exclude it.
    std::vector<CLI::Option*> required;
    std::vector<CLI::Option*> configuration;
    required.push_back(cmd->add_option("--tp", o->tp, "tensor-parallel degree")->check(degree));
    auto* tpOption = required.back();
    required.push_back(cmd->add_option("--pp", o->pp, "pipeline-parallel degree (pipeline ranks)")->check(degree));
    required.push_back(cmd->add_option("--dp", o->dp, "data-parallel degree (inference: replicas)")->check(degree));
    configuration.push_back(
        cmd->add_option("--vpp", o->vpp, "model chunks per pipeline rank (implies --schedule interleaved)")
            ->check(degree)
            ->capture_default_str());
    configuration.push_back(
        cmd->add_option("--cp", o->cp, "context-parallel degree")->check(degree)->capture_default_str());
    required.push_back(
        cmd->add_option("--micro-batch", o->micro_batch, "sequences per micro-batch per data-parallel rank")
            ->check(CLI::Range(1, 1'000'000)));
    auto* globalBatch
        = cmd->add_option("--global-batch", o->global_batch,
                          "sequences per step; must be a multiple of dp x micro-batch (micro-batches = B / (dp x b)); "
                          "with --from-config, overrides the file's")
              ->check(CLI::Range(std::int64_t {1}, std::int64_t {1'000'000'000}));
    configuration.push_back(
        cmd->add_option("--zero", o->zero, "ZeRO stage: 0 none, 1 optimizer states, 2 + gradients, 3 + parameters")
            ->check(CLI::Range(0, 3))
            ->capture_default_str());
    configuration.push_back(
        cmd->add_option("--zero-ngroups", o->zero_ngroups, "shard ZeRO states within dp x cp / N ranks (hierarchical)")
            ->check(degree)
            ->capture_default_str());
    configuration.push_back(
        cmd->add_option("--recompute", o->recompute, "activation recomputation: none, selective or full")
            ->capture_default_str());
    configuration.push_back(
        cmd->add_option("--recompute-num-layers", o->recompute_num_layers,
                        "with --recompute full: recompute only the first N decoder blocks of each model chunk and keep "
                        "the others' activations (Megatron --recompute-method block --recompute-num-layers N)")
            ->check(CLI::Range(1, 1'000'000)));
    configuration.push_back(
        cmd->add_option("--recompute-modules", o->recompute_modules,
                        "recompute the modules whose paths end with these suffixes, comma-separated ('ROOT' = every "
                        "block); implies recompute=modules")
            ->delimiter(','));
    auto* epOption = cmd->add_option("--ep", o->ep,
                                     "expert-parallel degree (MoE; ep x etp must divide tp x cp x dp; inference: 1 or "
                                     "tp x dp)")
                         ->check(degree)
                         ->capture_default_str();
    configuration.push_back(epOption);
    configuration.push_back(
        cmd->add_option("--etp", o->etp,
                        "expert tensor-parallel degree (MoE; Megatron --expert-tensor-parallel-size; "
                        "default tp, must divide tp; below tp needs --sequence-parallel)")
            ->check(CLI::Range(1, 1048576)));
    configuration.push_back(
        cmd->add_flag("--sequence-parallel", o->sequence_parallel, "Megatron sequence parallelism (needs tp > 1)"));
    configuration.push_back(cmd->add_flag("--tp-comm-overlap", o->tp_comm_overlap,
                                          "overlap the SP all-gathers/reduce-scatters with GEMMs (Megatron "
                                          "--tp-comm-overlap, torchtitan async TP; needs --sequence-parallel)"));
    configuration.push_back(cmd->add_flag("--overlap-param-gather", o->overlap_param_gather,
                                          "overlap the ZeRO-1/2 parameter all-gather with the next forward (Megatron "
                                          "--overlap-param-gather)"));
    configuration.push_back(cmd->add_flag("--moe-a2a-overlap", o->moe_a2a_overlap,
                                          "overlap the expert-parallel all-to-alls with another micro-batch's "
                                          "compute (Megatron --overlap-moe-expert-parallel-comm; needs --ep 2+)"));
    configuration.push_back(cmd->add_flag("--moe-shared-expert-overlap", o->moe_shared_expert_overlap,
                                          "run the shared expert under the expert all-to-alls (Megatron "
                                          "--moe-shared-expert-overlap; needs --ep 2+ and a shared expert)"));
    configuration.push_back(cmd->add_option("--moe-capacity-factor", o->moe_capacity_factor,
                                            "experts compute at most this times their even share of the routed "
                                            "tokens and drop the rest (Megatron --moe-expert-capacity-factor); 0 = "
                                            "dropless (default)")
                                ->check(CLI::Range(0.0, 1000.0)));
    configuration.push_back(cmd->add_option("--moe-router-imbalance", o->moe_router_imbalance,
                                            "routed tokens on the busiest expert-parallel rank over the mean, as "
                                            "your router runs (default 1: even; the sampling spread is added)")
                                ->check(CLI::Range(1.0, 1000.0)));
    configuration.push_back(cmd->add_flag("--fp8", o->fp8_linears,
                                          "run the linear layers' GEMMs in FP8 with dynamic scaling (torchtitan "
                                          "float8, Transformer Engine)"));
    configuration.push_back(cmd->add_option("--fp8-recipe", o->fp8_recipe,
                                            "FP8 scaling with --fp8: tensorwise (one scale per tensor) or rowwise "
                                            "(torchao's per-row scales, torchtitan only)")
                                ->check(CLI::IsMember({"tensorwise", "rowwise"}))
                                ->capture_default_str());
    configuration.push_back(cmd->add_option("--fp8-bf16-first-layers", o->fp8_bf16_first_layers,
                                            "with --fp8: the first N decoder blocks keep their linears in BF16 "
                                            "(Megatron --first-last-layers-bf16 --num-layers-at-start-in-bf16 N)")
                                ->check(CLI::Range(0, 1000000)));
    configuration.push_back(cmd->add_option("--fp8-bf16-last-layers", o->fp8_bf16_last_layers,
                                            "with --fp8: the last N decoder blocks keep their linears in BF16 "
                                            "(Megatron --num-layers-at-end-in-bf16 N)")
                                ->check(CLI::Range(0, 1000000)));
    configuration.push_back(cmd->add_flag("--grad-reduce-bf16", o->grad_reduce_bf16,
                                          "accumulate and reduce gradients in the model's 16-bit dtype instead of "
                                          "fp32 (Megatron --grad-reduce-in-bf16): half the gradient buffers and "
                                          "traffic"));
    configuration.push_back(cmd->add_flag("--fp8-param-gather", o->fp8_param_gather,
                                          "with --fp8 and ZeRO 1+: the FP8 linears' weights are FP8 parameters, "
                                          "all-gathered in FP8 (Megatron --fp8-param-gather); without it Transformer "
                                          "Engine keeps an FP8 copy beside each 16-bit weight"));
    configuration.push_back(cmd->add_flag("--eager", o->eager_kernels,
                                          "eager PyTorch without torch.compile: unfused RMSNorm, rotary and SwiGLU "
                                          "kernels"));
    cmd->add_option("--framework", o->framework,
                    "training framework the configuration is for (its memory terms and what it can run): "
                        + frameworkChoices() + "; default generic, or the job config's with --from-config");
    cmd->add_option("--framework-version", o->framework_version,
                    "the framework's release the configuration is for (core_v0.15-core_v0.19, main, v0.2, v0.19): "
                    "what that release runs, recorded by --save-plan for the exports; default: any release");
    auto* schedule = cmd->add_option("--schedule", o->schedule,
                                     "pipeline schedule: gpipe, 1f1b, interleaved, zb-h1, zb-v, dualpipev or dualpipe "
                                     "(the last three: --vpp 2)")
                         ->capture_default_str();
    configuration.push_back(schedule);
    cmd->add_option("--seq-len", o->seq_len, "tokens per sequence (default: min(max positions, 4096))")
        ->check(CLI::Range(std::int64_t {1}, std::int64_t {100'000'000}));
    auto* nodes = cmd->add_option("--nodes", o->nodes,
                                  "nodes in the cluster; tp x pp x dp x cp must then equal nodes x GPUs per node. "
                                  "Default: ceil(tp x pp x dp x cp / GPUs per node), replacing a cluster file's count; "
                                  "the last node may be "
                                  "partial")
                      ->check(CLI::Range(1, 100'000));
    auto* gpusPerNode = cmd->add_option("--gpus-per-node", o->gpus_per_node,
                                        "GPUs per node (default: the device's or cluster file's)")
                            ->check(CLI::Range(1, 1024));
    cmd->add_option("--memory-gb", o->memory_gb, "per-GPU memory limit in GB (1e9 bytes); default: device capacity")
        ->check(CLI::Range(1e-3, 1e6));
    configuration.push_back(
        cmd->add_option(
               "--stage-layers", o->stage_layers,
               "layers per pipeline chunk, comma-separated (pp x vpp counts, uneven allowed), over the model's "
               "layer list including embedding and head (see inspect); default: blocks split evenly")
            ->delimiter(','));
    configuration.push_back(
        cmd->add_option("--rank-order", o->rank_order, "rank order, fastest-varying first (places tp/cp/dp/pp groups)")
            ->capture_default_str());
    cmd->add_option("--json", o->json, "write the result JSON to this file ('-' for stdout), also when infeasible");
    cmd->add_option("--trace", o->trace,
                    "write the simulated timeline as a Chrome trace (Perfetto) to this file; skipped when the "
                    "configuration is rejected before simulation");
    cmd->add_option("--profile-dir", o->profile_dir,
                    "measured profile directory (profile.json) for the cost model; default: "
                    "~/.cache/shardscape/<device> when one matches the cluster's device");
    cmd->add_option("--save-plan", o->save_plan,
                    "write the configuration as a plan file (shardscape.plan/1) for export; also when it does not fit");
    auto* fromConfig = cmd->add_option(
        "--from-config", o->from_config,
        "take the parallel configuration from a job config: torchtitan .toml, Megatron-LM launch script, DeepSpeed "
        ".json or a plan file (replaces --tp, --pp, --dp, --micro-batch and the other configuration options; the "
        "file's global batch and sequence length apply unless given)");
    for (auto* option : required)
        option->excludes(fromConfig);
    for (auto* option : configuration)
        option->excludes(fromConfig);
    required.push_back(globalBatch);
    cmd->add_option("--mode", o->mode,
                    "train (a training step) or inference (a serving deployment: TTFT, TPOT, tokens/s, KV cache)")
        ->check(CLI::IsMember({"train", "inference"}))
        ->capture_default_str();
    const std::vector<CLI::Option*> servingOptions = addServingOptions(cmd, o->serving);
    std::vector<CLI::Option*> trainingOnly;
    for (auto* option : required)
        if (option->get_name() != "--pp" && option->get_name() != "--dp" && option != tpOption)
            trainingOnly.push_back(option);
    for (auto* option : configuration)
        if (option != epOption)
            trainingOnly.push_back(option);
    cmd->footer("--tp, --pp, --dp, --micro-batch and --global-batch are required unless --from-config gives them; "
                "--mode inference needs --tp only and takes --input-len, --output-len, --concurrency instead. "
                "Exit code 2 with a one-line reason on stderr when the configuration is invalid or does not fit; "
                "--json is still written.");
    cmd->callback([&action, cmd, o, nodes, schedule, gpusPerNode, fromConfig, required, trainingOnly, servingOptions] {
        // The callback runs inside the parser: misuse is reported by the action, where InputError maps to exit 2.
        std::string misuse;
        if (o->mode == "inference") {
            std::vector<std::string> names;
            for (auto* option : trainingOnly)
                if (option->count() > 0)
                    names.push_back(option->get_name());
            for (const char* name : {"--from-config", "--trace", "--seq-len", "--framework", "--framework-version"})
                if (cmd->count(name) > 0)
                    names.push_back(name);
            if (!names.empty())
                misuse = cat(names.front(), " is a training option; --mode inference does not take it");
            ServingSimulateInput in;
            in.model = o->model;
            in.cluster = o->cluster;
            in.nodes = nodes->count() > 0 ? o->nodes : 0;
            in.gpus_per_node = o->gpus_per_node;
            in.parallel = {o->tp, o->pp, o->ep, o->dp};
            in.memory_gb = o->memory_gb;
            in.json = o->json;
            in.save_plan = o->save_plan;
            in.profile_dir = o->profile_dir;
            action = [in, o, misuse] {
                if (!misuse.empty())
                    throw InputError(misuse, "drop it, or simulate training without --mode inference");
                return runServingSimulate(in, o->serving);
            };
            return;
        }
        for (auto* option : servingOptions)
            if (option->count() > 0 && misuse.empty())
                misuse = cat(option->get_name(), " is an inference option");
        if (!misuse.empty()) {
            action = [misuse]() -> int { throw InputError(misuse, "add --mode inference"); };
            return;
        }
        if (fromConfig->count() == 0)
            for (auto* option : required)
                if (option->count() == 0)
                    throw CLI::RequiredError(option->get_name());
        o->nodes_given = nodes->count() > 0;
        o->schedule_given = schedule->count() > 0;
        o->gpus_per_node_given = gpusPerNode->count() > 0;
        action = [o] { return runSimulate(*o); };
    });
}

} // namespace shardscape::cli
