// SPDX-License-Identifier: MIT
// torchtitan config module for torchtitan main (the Python configs that replaced the TOML job files in commit 9810191,
// with token-counted batches since 73aed7f6c; fields as of b5bcd76, tests/data/framework_schemas/torchtitan-main.json).
// The module defines shardscape_plan(), which starts from the model's own config_registry recipe (its data, optimizer
// and tokenizer) and sets what the plan decides: parallel degrees, batch in tokens, pipeline schedule and split,
// activation checkpointing, compile, async TP and float8. torchtitan runs it with
//   torchrun ... -m torchtitan.train --module plan_config --config shardscape_plan
// (torchtitan/config/manager.py: --module names an importable module, --config a function returning a
// Trainer.Config). What the plan becomes in torchtitan's terms is torchtitan_layout.cpp's.
#include "torchtitan_layout.h"

#include "shardscape/support/error.h"
#include "shardscape/support/strings.h"

#include <algorithm>

namespace shardscape::exporting {

namespace {

/** A torchtitan main recipe: its model module, the config_registry function to start from and its flavor. */
struct Recipe
{
    std::string module;
    std::string function;
    std::string flavor;
};

/**
 * The recipe to start from on main: the flavor's own config_registry function where torchtitan has one
 * (torchtitan/models/<model>/config_registry.py), else the family's closest recipe, whose model is then swapped.
 */
Recipe recipeFor(const Context& context, const TorchtitanLayout& layout)
{
    struct Known
    {
        const char* model;
        const char* flavor;
        const char* function;
    };
    static constexpr Known kRecipes[] = {{"llama3", "8B", "llama3_8b"},
                                         {"llama3", "70B", "llama3_70b"},
                                         {"llama3", "405B", "llama3_405b"},
                                         {"qwen3", "14B", "qwen3_14b"},
                                         {"qwen3", "32B", "qwen3_32b"},
                                         {"qwen3", "30B-A3B", "qwen3_30b_a3b"},
                                         {"deepseek_v3", "16B", "deepseek_v3_16b"},
                                         {"deepseek_v3", "671B", "deepseek_v3_671b"}};
    for (const auto& k : kRecipes)
        if (layout.builtin_flavor && layout.model == k.model && layout.flavor == k.flavor)
            return {k.model, k.function, k.flavor};
    const bool moe = context.model.transformer && context.model.transformer->num_experts > 0;
    if (layout.model == "llama3")
        return {"llama3", "llama3_8b", "8B"};
    if (layout.model == "qwen3")
        return {"qwen3", moe ? "qwen3_30b_a3b" : "qwen3_14b", moe ? "30B-A3B" : "14B"};
    if (layout.model == "deepseek_v3")
        return {"deepseek_v3", "deepseek_v3_16b", "16B"};
    return {layout.model, cat(layout.model, "_debugmodel"), "debugmodel"};
}

std::string pyString(const std::string& text)
{
    std::string out = "\"";
    for (const char ch : text)
        out += ch == '"' || ch == '\\' ? cat("\\", ch) : std::string(1, ch);
    return out + "\"";
}

std::string pyList(const std::vector<std::string>& items)
{
    std::vector<std::string> quoted;
    for (const auto& item : items)
        quoted.push_back(pyString(item));
    return "[" + join(quoted, ", ") + "]";
}

} // namespace

std::string exportTorchtitanConfig(Context& context)
{
    const ParallelConfig& c = context.config();
    const LoadedPlan& plan = context.plan;
    // torchtitan/trainer.py (main): a micro-batch's tokens split over the TP ranks under SP and into 2 x cp chunks.
    const long long unit = (c.tp > 1 && c.sequence_parallel ? c.tp : 1) * (c.cp > 1 ? 2LL * c.cp : 1);
    if ((static_cast<long long>(c.micro_batch) * plan.seq_len) % unit != 0)
        throw InputError(cat("torchtitan main needs a micro-batch's ", c.micro_batch * plan.seq_len,
                             " tokens to divide by ", unit, " (tp under sequence parallelism x 2 x cp)"),
                         "choose a sequence length that divides, or another layout");
    const TorchtitanLayout layout = torchtitanLayout(context, "lm_head");
    const Recipe recipe = recipeFor(context, layout);
    const bool swapModel = !layout.builtin_flavor || recipe.flavor != layout.flavor || c.fp8_linears;

    // The assignments, each one field of torchtitan main's Trainer.Config (tests check them against its schema).
    std::vector<std::string> sets;
    const auto set = [&sets](const std::string& field, const std::string& value, const std::string& comment = {}) {
        sets.push_back(cat("    config.", field, " = ", value, comment.empty() ? "" : "  # " + comment));
    };
    set("dump_folder", pyString("./outputs"));
    set("parallelism.data_parallel_replicate_degree", cat(layout.replicate));
    set("parallelism.data_parallel_shard_degree", cat(layout.shard));
    if (!layout.reshard.empty())
        set("parallelism.fsdp_reshard_after_forward", pyString(layout.reshard),
            layout.reshard == "always" ? "ZeRO-3" : "closest to the plan's ZeRO stage: see the notes");
    set("parallelism.tensor_parallel_degree", cat(c.tp));
    if (c.tp > 1)
        set("parallelism.enable_sequence_parallel", c.sequence_parallel ? "True" : "False");
    set("parallelism.context_parallel_degree", cat(c.cp));
    set("parallelism.pipeline_parallel_degree", cat(c.pp));
    const TransformerShape* t = context.model.transformer ? &*context.model.transformer : nullptr;
    if (t && t->num_experts > 0)
        set("parallelism.expert_parallel_degree", cat(c.ep));
    const long long seq = plan.seq_len;
    if (c.pp > 1) {
        set("parallelism.pipeline_parallel_schedule", pyString(layout.schedule));
        set("parallelism.num_pp_microbatches", cat(c.num_microbatches));
        if (!layout.parts.empty())
            set("parallelism.module_fqns_per_model_part", partsLiteral(layout.parts, 4));
        // torchtitan/trainer.py: CUDA graphs (on by default) must be off under pipeline parallelism.
        set("training.disable_cuda_graphs", "True");
    }
    set("training.max_context_length", cat(seq));
    // Batches in tokens (trainer.py): a pipeline micro-batch, or the micro-batch torchtitan accumulates without one.
    set("training.num_tokens_per_microbatch_per_dp_rank", cat(static_cast<long long>(c.micro_batch) * seq),
        cat("micro-batch ", c.micro_batch, " x ", seq, " tokens"));
    set("training.num_tokens_per_train_step", cat(plan.global_batch * seq),
        cat("global batch ", plan.global_batch, " x ", seq, " tokens"));
    set("training.mixed_precision_param", pyString(torchtitanParamDtype(context)));
    std::vector<std::string> imports {"from torchtitan.trainer import Trainer"};
    if (layout.checkpoint == "full") {
        set("activation_checkpoint", "FullAC.Config()");
        imports.emplace_back("from torchtitan.distributed.activation_checkpoint import FullAC");
    } else if (layout.checkpoint == "selective") {
        set("activation_checkpoint", "SelectiveAC.Config()", "per-op SAC");
        imports.emplace_back("from torchtitan.distributed.activation_checkpoint import SelectiveAC");
    } else {
        set("activation_checkpoint", "None");
    }
    // The plan costs fused elementwise kernels, which torchtitan gets from torch.compile (async TP needs it too).
    set("compile.enable", c.eager_kernels ? "False" : "True");
    if (!c.eager_kernels)
        set("compile.components", pyList({"model", "loss"}));
    set("compile.enable_async_tensor_parallel", c.tp_comm_overlap ? "True" : "False");
    if (c.eager_kernels && c.fp8_linears)
        context.note("the plan runs eager (no torch.compile), and Float8 linears are slow without it: compile is "
                     "left off as planned");

    std::string model;
    if (swapModel) {
        imports.push_back(cat("from torchtitan.models.", recipe.module, " import model_registry"));
        std::string converters;
        if (c.fp8_linears) {
            // torchtitan/components/quantization/float8.py (main): rowwise recipes only; lm_head stays bf16.
            imports.emplace_back("from torchtitan.components.quantization import Float8LinearConverter");
            converters = cat(", converters=[Float8LinearConverter.Config(recipe_name=\"rowwise\", "
                             "filter_fqns=[\"lm_head\"], model_compile_enabled=",
                             c.eager_kernels ? "False" : "True", ")]");
        }
        model = cat("    config.model_spec = model_registry(", pyString(layout.flavor), converters, ")",
                    layout.builtin_flavor ? "" : "  # register this flavor (see the notes)", "\n");
        if (layout.flavor != recipe.flavor) {
            imports.emplace_back("from torchtitan.models.common.config_utils import decoder_vocab_size");
            model += "    config.loss.loss_fn.global_vocab_size = decoder_vocab_size(config.model_spec)\n";
        }
    }
    if (recipe.flavor != layout.flavor)
        context.note(cat("the config starts from torchtitan's ", recipe.function, " recipe (", recipe.module,
                         " flavor ", recipe.flavor, ") with the model swapped for '", layout.flavor, "'"));
    imports.push_back(cat("from torchtitan.models.", recipe.module, ".config_registry import ", recipe.function));
    std::sort(imports.begin(), imports.end());

    std::vector<std::string> head = headerLines(context, "torchtitan config");
    appendFrameworkLines(context, Framework::Torchtitan, head);
    head.emplace_back();
    head.emplace_back("A torchtitan config module for torchtitan main (Python configs; fields of commit b5bcd76,");
    head.emplace_back("2026-08-21). Save it as plan_config.py and run on every node, with its folder on PYTHONPATH:");
    for (auto& line : torchtitanLaunchLines(context, "--module plan_config --config shardscape_plan"))
        head.push_back(std::move(line));
    head.emplace_back("(shardscape-cli export --format torchrun writes a launcher that does this).");
    std::string out = commentBlock(head, "# ");
    if (!context.notes.empty())
        out += "#\n" + notesBlock(context.notes, "# ");
    out += "\n" + join(imports, "\n") + "\n\n\n";
    out += cat("def shardscape_plan() -> Trainer.Config:\n", "    config = ", recipe.function, "()\n", model);
    for (const auto& line : sets)
        out += line + "\n";
    out += "    return config\n";
    return out;
}

} // namespace shardscape::exporting
