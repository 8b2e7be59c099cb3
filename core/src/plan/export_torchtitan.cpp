// SPDX-License-Identifier: MIT
// torchtitan job TOML in the schema of torchtitan v0.2.0 to v0.2.2 (torchtitan/config/job_config.py), plus the same
// settings as --section.option flags; what the plan becomes in torchtitan's terms is torchtitan_layout.cpp's.
#include "torchtitan_layout.h"

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

Table modelTable(const TorchtitanLayout& layout)
{
    return {"model",
            {text("name", layout.model),
             text("flavor", layout.flavor, layout.builtin_flavor ? "" : "register this flavor (see the notes)")}};
}

std::vector<Value> dataParallel(const TorchtitanLayout& layout)
{
    std::vector<Value> values {integer("data_parallel_replicate_degree", layout.replicate),
                               integer("data_parallel_shard_degree", layout.shard)};
    if (!layout.reshard.empty())
        values.push_back(
            text("fsdp_reshard_after_forward", layout.reshard,
                 layout.reshard == "always" ? "ZeRO-3" : "closest to the plan's ZeRO stage: see the notes"));
    return values;
}

Table parallelismTable(const Context& context, const TorchtitanLayout& layout)
{
    const ParallelConfig& c = context.config();
    Table table {"parallelism", dataParallel(layout)};
    table.values.push_back(integer("tensor_parallel_degree", c.tp));
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
        table.values.push_back(text("pipeline_parallel_schedule", layout.schedule));
        table.values.push_back(integer("pipeline_parallel_microbatch_size", c.micro_batch));
        if (!layout.parts.empty())
            table.values.push_back({"module_fqns_per_model_part", partsLiteral(layout.parts, 0), std::nullopt, {}});
    }
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
    table.values.push_back(text("mixed_precision_param", torchtitanParamDtype(context)));
    return table;
}

Table checkpointTable(const TorchtitanLayout& layout)
{
    if (layout.checkpoint == "selective" && layout.layer_sac_every > 0)
        return {"activation_checkpoint",
                {text("mode", "selective"),
                 text("selective_ac_option", cat(layout.layer_sac_every),
                      cat("layer SAC: every ", layout.layer_sac_every, "th block of each pipeline rank"))}};
    if (layout.checkpoint == "selective")
        return {"activation_checkpoint", {text("mode", "selective"), text("selective_ac_option", "op", "per-op SAC")}};
    return {"activation_checkpoint", {text("mode", layout.checkpoint)}};
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
    const TorchtitanLayout layout = torchtitanLayout(context, "output");
    std::vector<Table> tables;
    tables.push_back({"job",
                      {text("description", cat("Shardscape plan for ", context.modelName(), ": ", c.describe())),
                       text("dump_folder", "./outputs")}});
    Table model = modelTable(layout);
    if (c.fp8_linears)
        model.values.push_back(
            {"converters", "[\"quantize.linear.float8\"]", std::string("quantize.linear.float8"),
             cat("torchao ", float8RecipeName(c.fp8_recipe), " Float8 linears (the output projection stays bf16)")});
    tables.push_back(std::move(model));
    tables.push_back(trainingTable(context));
    tables.push_back(parallelismTable(context, layout));
    tables.push_back(checkpointTable(layout));
    if (!c.eager_kernels) {
        // The plan costs fused elementwise kernels, which torchtitan gets from torch.compile (async TP needs it too).
        tables.push_back(
            {"compile", {boolean("enable", true), {"components", "[\"model\", \"loss\"]", std::nullopt, {}}}});
    } else if (c.fp8_linears) {
        context.note("the plan runs eager (no torch.compile), and Float8 linears are slow without it: [compile] is "
                     "left off as planned");
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

    std::vector<std::string> head = headerLines(context, "torchtitan job config");
    appendFrameworkLines(context, Framework::Torchtitan, head);
    head.emplace_back();
    head.emplace_back("torchtitan job config in the TOML schema of torchtitan v0.2.0 to v0.2.2 (torchtitan main reads");
    head.emplace_back("Python config modules instead: export --framework-version main). Run on every node:");
    for (auto& line : torchtitanLaunchLines(context, "--job.config_file THIS_FILE"))
        head.push_back(std::move(line));
    head.emplace_back(
        "(shardscape-cli export --format torchrun --framework-version v0.2 writes a launcher that does this).");
    std::string out = commentBlock(head, "# ");
    if (!context.notes.empty())
        out += "#\n" + notesBlock(context.notes, "# ");
    std::vector<std::string> flags {"", "The same settings as command-line flags (torchtitan v0.2.x):"};
    for (auto& line : renderFlags(tables))
        flags.push_back(std::move(line));
    out += commentBlock(flags, "# ");
    out += renderToml(tables);
    return out;
}

} // namespace shardscape::exporting
