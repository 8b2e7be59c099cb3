// SPDX-License-Identifier: MIT
// torchtitan job TOML in the schema of torchtitan v0.2.0 to v0.2.2 (torchtitan/config/job_config.py), plus the same
// settings as --section.option flags. What torchtitan cannot express, and how it is written instead:
// - ZeRO-1/ZeRO-2: torchtitan's data parallelism is DDP (replicate) or FSDP2 (shard, which is ZeRO-3). ZeRO 0 is
//   data_parallel_replicate_degree = dp, ZeRO 3 is data_parallel_shard_degree = dp with fsdp_reshard_after_forward
//   "always"; ZeRO 1/2 become FSDP with "never" (parameters stay gathered from forward to backward: ZeRO-2-like
//   traffic, no more memory than ZeRO-1/2) and a note.
// - DDP is only allowed without TP/PP/CP (torchtitan raises "DDP has not supported > 1D parallelism"): ZeRO 0 with
//   other parallelism is written as FSDP with "never" and a note.
// - TP always shards activations along the sequence (Megatron SP); a plan without SP gets a note.
// - Schedules: gpipe -> GPipe, 1f1b -> 1F1B, interleaved -> Interleaved1F1B (looped placement, stage s on rank
//   s % pp, as simulated). ZB-H1 runs one stage per rank; PyTorch's zero-bubble schedules need two or more stages
//   per rank (InterleavedZeroBubble) or the V placement (ZBVZeroBubble), so it is written as 1F1B with a note.
// - Stage split: module_fqns_per_model_part with the llama3 module names (tok_embeddings, layers.N, norm, output),
//   one list per virtual stage; it has no command-line form (a list of lists).
// - Activation checkpointing: torchtitan's selective mode ("op": per-op SAC) is not Megatron's attention-core
//   recomputation; per-module recomputation has no knob.
#include "export_common.h"

#include "shardscape/support/error.h"
#include "shardscape/support/strings.h"

#include <algorithm>
#include <optional>

namespace shardscape::exporting {

namespace {

struct Value
{
    std::string key;
    std::string toml; ///< the value as TOML text
    std::optional<std::string> flag; ///< the value on the command line; nullopt = no flag form
    std::string comment; ///< trailing TOML comment
};

struct Table
{
    std::string name;
    std::vector<Value> values;
};

Value integer(std::string key, long long value, std::string comment = {})
{
    return {std::move(key), cat(value), cat(value), std::move(comment)};
}

Value text(std::string key, const std::string& value, std::string comment = {})
{
    return {std::move(key), tomlString(value), value, std::move(comment)};
}

/** torchtitan's command line spells booleans differently across versions: TOML only. */
Value boolean(std::string key, bool value, std::string comment = {})
{
    return {std::move(key), value ? "true" : "false", std::nullopt, std::move(comment)};
}

/** A built-in llama3 flavor with exactly this shape (torchtitan/models/llama3/__init__.py), or empty. */
std::string llama3Flavor(const TransformerShape& t)
{
    struct Flavor
    {
        const char* name;
        std::int64_t hidden, layers, heads, kvHeads, ffn, vocab;
    };
    static constexpr Flavor kFlavors[] = {{"8B", 4096, 32, 32, 8, 14336, 128256},
                                          {"70B", 8192, 80, 64, 8, 28672, 128256},
                                          {"405B", 16384, 126, 128, 8, 53248, 128256}};
    for (const auto& f : kFlavors)
        if (t.hidden == f.hidden && t.num_layers == f.layers && t.num_heads == f.heads && t.num_kv_heads == f.kvHeads
            && t.ffn_hidden == f.ffn && t.vocab == f.vocab && t.gated_mlp && t.num_experts == 0)
            return f.name;
    return {};
}

Table modelTable(Context& context)
{
    const std::string name = context.modelName();
    if (!context.model.transformer) {
        context.note(cat(name, " is not a recognised transformer: [model] names it as a llama3 flavor '", name,
                         "' that you must register in torchtitan"));
        return {"model", {text("name", "llama3"), text("flavor", name)}};
    }
    const TransformerShape& t = *context.model.transformer;
    const std::string shape
        = cat("dim ", t.hidden, ", n_layers ", t.num_layers, ", n_heads ", t.num_heads, ", n_kv_heads ", t.num_kv_heads,
              ", FFN hidden ", t.ffn_hidden,
              t.num_experts > 0 ? cat(" per expert, ", t.num_experts, " experts, top-", t.top_k) : "", ", vocab_size ",
              t.vocab);
    if (t.family == "llama" || t.family == "mistral") {
        const std::string flavor = llama3Flavor(t);
        if (!flavor.empty())
            return {"model", {text("name", "llama3"), text("flavor", flavor)}};
        context.note(cat("torchtitan's llama3 model has no built-in flavor for ", name, ": register flavor '", name,
                         "' in torchtitan/models/llama3/__init__.py with ", shape));
        return {"model", {text("name", "llama3"), text("flavor", name, "register this flavor (see the notes)")}};
    }
    context.note(cat("torchtitan has no ", t.family, " model: [model] names '", t.family,
                     "', which you must register (", shape, ")",
                     context.config().pp > 1 ? "; the stage split uses llama3's module names" : ""));
    return {"model", {text("name", t.family), text("flavor", name)}};
}

/** data_parallel_replicate_degree, data_parallel_shard_degree and fsdp_reshard_after_forward. */
std::vector<Value> dataParallel(Context& context)
{
    const ParallelConfig& c = context.config();
    const bool otherParallelism = c.tp > 1 || c.pp > 1 || c.cp > 1 || c.ep > 1;
    int replicate = 1;
    int shard = c.dp;
    std::string reshard;
    if (c.dp == 1 && c.cp == 1) {
        shard = 1; // nothing to replicate or shard over
    } else if (c.zero_stage == 0 && !otherParallelism) {
        replicate = c.dp;
        shard = 1;
    } else {
        if (c.zero_ngroups > 1 && c.zero_stage > 0) {
            if (c.dp % c.zero_ngroups == 0) {
                replicate = c.zero_ngroups; // HSDP: shard within dp / ngroups ranks, replicate across the groups
                shard = c.dp / c.zero_ngroups;
            } else {
                context.note(cat("zero_ngroups ", c.zero_ngroups, " does not divide dp ", c.dp,
                                 ": torchtitan's HSDP cannot group the cp ranks; written as plain FSDP over dp"));
            }
        }
        reshard = c.zero_stage == 3 ? "always" : "never";
        if (c.zero_stage == 0)
            context.note("torchtitan's DDP runs only without TP/PP/CP/EP ('DDP has not supported > 1D parallelism'):"
                         " the plan's unsharded data parallelism (ZeRO-0) is written as FSDP2 with "
                         "fsdp_reshard_after_forward = \"never\" (ZeRO-2-like: same gradient traffic, less memory)");
        else if (c.zero_stage < 3)
            context.note(cat("torchtitan has no ZeRO-", c.zero_stage,
                             ": its FSDP2 shards parameters too (ZeRO-3); written with fsdp_reshard_after_forward = "
                             "\"never\", which keeps them gathered from forward to backward (ZeRO-2-like traffic, "
                             "no more memory than ZeRO-",
                             c.zero_stage, ")"));
        if (c.cp > 1 && c.zero_stage < 3)
            context.note("torchtitan shards parameters over the cp ranks (FSDP) whenever context_parallel_degree > 1");
    }
    std::vector<Value> values {integer("data_parallel_replicate_degree", replicate),
                               integer("data_parallel_shard_degree", shard)};
    if (!reshard.empty())
        values.push_back(text("fsdp_reshard_after_forward", reshard,
                              reshard == "always" ? "ZeRO-3" : "closest to the plan's ZeRO stage: see the notes"));
    return values;
}

std::string scheduleFor(Context& context)
{
    const ParallelConfig& c = context.config();
    switch (c.schedule) {
    case ScheduleKind::GPipe:
        return "GPipe";
    case ScheduleKind::OneFOneB:
        return "1F1B";
    case ScheduleKind::Interleaved1F1B:
        return "Interleaved1F1B";
    case ScheduleKind::ZeroBubbleV:
        return "ZBVZeroBubble";
    case ScheduleKind::DualPipeV:
        return "DualPipeV";
    case ScheduleKind::DualPipe:
        // frameworkRestriction refuses it first; this guards a caller that skipped the check.
        throw InputError("torchtitan has no bidirectional DualPipe schedule (torch.distributed.pipelining runs only "
                         "its V-shaped half, DualPipeV)",
                         "plan with pipeline_scheduler dualpipev, or export for another framework");
    case ScheduleKind::ZeroBubbleH1:
        break;
    }
    if (c.vpp >= 2)
        return "InterleavedZeroBubble";
    context.note("ZB-H1 runs one stage per rank; PyTorch's zero-bubble schedules need two or more stages per rank "
                 "(InterleavedZeroBubble) or two in a V (ZBVZeroBubble): written as 1F1B, which has the same "
                 "placement and memory but a larger bubble than predicted");
    return "1F1B";
}

/** module_fqns_per_model_part: one list of llama3 module names per virtual stage. */
std::optional<Value> stageSplit(Context& context)
{
    if (context.blocks.empty()) {
        context.note("the plan's layers are not [embedding, one per block, head] of a transformer, so its stage split "
                     "cannot be named with torchtitan's module names: torchtitan splits the layers itself");
        return std::nullopt;
    }
    std::string toml = "[\n";
    int next = 0;
    const std::size_t chunks = context.blocks.size();
    for (std::size_t v = 0; v < chunks; ++v) {
        std::vector<std::string> names;
        if (v == 0)
            names.push_back(tomlString("tok_embeddings"));
        for (int i = 0; i < context.blocks[v]; ++i)
            names.push_back(tomlString(cat("layers.", next++)));
        if (v + 1 == chunks) {
            names.push_back(tomlString("norm"));
            names.push_back(tomlString("output"));
        }
        // One list per stage, wrapped at 120 columns (TOML allows newlines inside arrays).
        std::string line = "    [";
        for (std::size_t i = 0; i < names.size(); ++i) {
            const std::string item = names[i] + (i + 1 < names.size() ? "," : "],");
            if (line.size() > 5 && line.size() + 1 + item.size() > 120) {
                toml += line + "\n";
                line = "     ";
            }
            line += (line.size() > 5 ? " " : "") + item;
        }
        toml += line + "\n";
    }
    toml += "]";
    return Value {"module_fqns_per_model_part", toml, std::nullopt, {}};
}

Table parallelismTable(Context& context)
{
    const ParallelConfig& c = context.config();
    Table table {"parallelism", dataParallel(context)};
    table.values.push_back(integer("tensor_parallel_degree", c.tp));
    if (c.tp > 1 && !c.sequence_parallel)
        context.note("torchtitan's tensor parallelism always shards the activations along the sequence (Megatron SP); "
                     "the plan has SP off, so torchtitan will use less activation memory than predicted");
    table.values.push_back(integer("pipeline_parallel_degree", c.pp));
    table.values.push_back(integer("context_parallel_degree", c.cp));
    const TransformerShape* t = context.model.transformer ? &*context.model.transformer : nullptr;
    if (t && t->num_experts > 0) {
        table.values.push_back(integer("expert_parallel_degree", c.ep));
        if (c.ep > 1)
            table.values.push_back(integer("expert_tensor_parallel_degree", c.expertTp(),
                                           c.expertTp() == c.tp
                                               ? "experts split by TP too, as planned"
                                               : "experts split over fewer ranks than TP, as planned"));
    }
    if (c.tp_comm_overlap)
        table.values.push_back(boolean("enable_async_tensor_parallel", true, "needs [compile] enable"));
    if (c.pp > 1) {
        table.values.push_back(text("pipeline_parallel_schedule", scheduleFor(context)));
        table.values.push_back(integer("pipeline_parallel_microbatch_size", c.micro_batch));
        if (auto split = stageSplit(context))
            table.values.push_back(std::move(*split));
    }
    if (c.rank_order != "tp-cp-dp-pp")
        context.note(cat("torchtitan's device mesh orders ranks tp fastest, then cp, dp, pp; the plan's rank order ",
                         c.rank_order, " cannot be set"));
    return table;
}

Table trainingTable(Context& context)
{
    const ParallelConfig& c = context.config();
    const LoadedPlan& plan = context.plan;
    // With pipelining, one schedule of num_microbatches micro-batches per step: local_batch_size is the whole
    // per-rank batch and torchtitan splits it into local / pipeline_parallel_microbatch_size micro-batches.
    // Without, torchtitan accumulates global / (local x dp) micro-batches of local_batch_size.
    const long long local = c.pp > 1 ? static_cast<long long>(c.micro_batch) * c.num_microbatches : c.micro_batch;
    Table table {"training",
                 {integer("local_batch_size", local, c.pp > 1 ? "micro-batch x micro-batches per step" : ""),
                  integer("global_batch_size", plan.global_batch), integer("seq_len", plan.seq_len)}};
    const DType dtype = context.model.dtype;
    if (dtype == DType::F32) {
        table.values.push_back(text("mixed_precision_param", "float32"));
    } else {
        if (dtype != DType::BF16)
            context.note(cat("torchtitan trains in bfloat16 or float32; the plan's ", dtypeName(dtype),
                             " is written as bfloat16"));
        table.values.push_back(text("mixed_precision_param", "bfloat16"));
    }
    return table;
}

Table checkpointTable(Context& context)
{
    const ParallelConfig& c = context.config();
    const auto selective = [](std::string comment) {
        return Table {"activation_checkpoint",
                      {text("mode", "selective"), text("selective_ac_option", "op", std::move(comment))}};
    };
    switch (c.recompute) {
    case RecomputeKind::None:
        return {"activation_checkpoint", {text("mode", "none")}};
    case RecomputeKind::Full:
        return {"activation_checkpoint", {text("mode", "full")}};
    case RecomputeKind::Selective:
        if (c.framework == Framework::Torchtitan)
            return selective("per-op SAC, as simulated");
        context.note("torchtitan's selective activation checkpointing (\"op\": saves matmul and attention outputs, "
                     "recomputes every second matmul) is not the attention-core recomputation the plan simulated: "
                     "expect less activation memory and more recomputation than predicted (plan for torchtitan to "
                     "simulate its policy)");
        return selective("per-op SAC: see the notes");
    case RecomputeKind::Modules:
        break;
    }
    if (std::find(c.recompute_modules.begin(), c.recompute_modules.end(), "ROOT") != c.recompute_modules.end())
        return {"activation_checkpoint", {text("mode", "full")}};
    context.note(cat("torchtitan cannot recompute chosen modules (", join(c.recompute_modules, ", "),
                     "): written as selective per-op checkpointing"));
    return selective("the plan recomputes modules: see the notes");
}

std::string renderToml(const std::vector<Table>& tables)
{
    std::string out;
    for (const auto& table : tables) {
        out += cat("\n[", table.name, "]\n");
        for (const auto& v : table.values)
            out += cat(v.key, " = ", v.toml, v.comment.empty() ? "" : "  # " + v.comment, "\n");
    }
    return out;
}

std::vector<std::string> renderFlags(const std::vector<Table>& tables)
{
    std::vector<std::string> flags;
    std::vector<std::string> without;
    for (const auto& table : tables)
        for (const auto& v : table.values) {
            if (v.flag)
                flags.push_back(cat("--", table.name, ".", v.key, " ", shellWord(*v.flag)));
            else
                without.push_back(cat(table.name, ".", v.key));
        }
    std::vector<std::string> lines;
    for (std::size_t i = 0; i < flags.size(); ++i)
        lines.push_back(cat("  ", flags[i], i + 1 < flags.size() ? " \\" : ""));
    if (!without.empty())
        lines.push_back(cat("(no command-line form for ", join(without, ", "),
                            ": keep the TOML for them, or torchtitan picks its defaults)"));
    return lines;
}

} // namespace

std::string exportTorchtitan(Context& context)
{
    const ParallelConfig& c = context.config();
    std::vector<Table> tables;
    tables.push_back({"job",
                      {text("description", cat("Shardscape plan for ", context.modelName(), ": ", c.describe())),
                       text("dump_folder", "./outputs")}});
    Table model = modelTable(context);
    if (c.fp8_linears)
        model.values.push_back(
            {"converters", "[\"quantize.linear.float8\"]", std::string("quantize.linear.float8"),
             cat("torchao ", float8RecipeName(c.fp8_recipe), " Float8 linears (the output projection stays bf16)")});
    tables.push_back(std::move(model));
    tables.push_back(trainingTable(context));
    tables.push_back(parallelismTable(context));
    tables.push_back(checkpointTable(context));
    if (!c.eager_kernels) {
        // The plan costs fused elementwise kernels, which torchtitan gets from torch.compile (async TP needs it too).
        tables.push_back(
            {"compile", {boolean("enable", true), {"components", "[\"model\", \"loss\"]", std::nullopt, {}}}});
    } else if (c.tp_comm_overlap || c.fp8_linears) {
        context.note("the plan runs eager (no torch.compile), but async TP needs compile and Float8 linears are slow "
                     "without it: [compile] is left off as planned");
    }
    if (c.fp8_linears && c.fp8_recipe == Float8Recipe::Rowwise) {
        // torchtitan/components/quantization/float8.py (v0.2.x): a recipe_name goes through
        // Float8LinearConfig.from_recipe_name and asserts enable_fsdp_float8_all_gather is off; FSDP gathers bf16.
        tables.push_back({"quantize.linear.float8",
                          {text("recipe_name", "rowwise"),
                           boolean("enable_fsdp_float8_all_gather", false),
                           {"filter_fqns", "[\"output\"]", std::nullopt, {}}}});
    } else if (c.fp8_linears) {
        // No recipe_name: torchtitan's tensorwise Float8LinearConfig, which can all-gather FSDP weights in FP8.
        const bool fsdp = c.zero_stage == 3 && c.dp * c.cp > 1; // weights are all-gathered: gather them in FP8
        tables.push_back({"quantize.linear.float8",
                          {boolean("enable_fsdp_float8_all_gather", fsdp),
                           boolean("precompute_float8_dynamic_scale_for_fsdp", fsdp),
                           {"filter_fqns", "[\"output\"]", std::nullopt, {}}}});
    }
    if (c.overlap_param_gather)
        context.note("FSDP2 prefetches the parameter all-gathers itself; the plan's parameter-gather overlap "
                     "(Megatron's --overlap-param-gather) has no torchtitan setting");

    const LaunchShape shape = launchShape(context);
    std::vector<std::string> head = headerLines(context, "torchtitan job config");
    appendFrameworkLines(context, Framework::Torchtitan, head);
    head.emplace_back();
    head.emplace_back("torchtitan job config in the TOML schema of torchtitan v0.2.0 to v0.2.2. Run on every node:");
    head.push_back(cat("  torchrun --nnodes ", shape.nodes, " --nproc-per-node ", shape.gpus_per_node,
                       " --rdzv-backend c10d --rdzv-endpoint HOST:29400 --rdzv-id JOB \\"));
    head.emplace_back("      -m torchtitan.train --job.config_file THIS_FILE");
    head.emplace_back("(shardscape-cli export --format torchrun writes a launcher that does this).");
    std::string out = commentBlock(head, "# ");
    if (!context.notes.empty())
        out += "#\n" + notesBlock(context.notes, "# ");
    std::vector<std::string> flags {
        "", "The same settings as command-line flags (torchtitan v0.2.x and later accept --section.option):"};
    for (auto& line : renderFlags(tables))
        flags.push_back(std::move(line));
    out += commentBlock(flags, "# ");
    out += renderToml(tables);
    return out;
}

} // namespace shardscape::exporting
