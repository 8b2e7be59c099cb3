// SPDX-License-Identifier: MIT
// Megatron-LM launch script: torchrun ... pretrain_gpt.py with the arguments of megatron/training/arguments.py
// (core_v0.15; the same names are generated from dataclasses from core_v0.16 on). Megatron derives DP as
// world / (TP x PP x CP) and the micro-batches as global / (micro x DP), so the launch shape fixes them.
// What Megatron cannot express, and how it is written instead:
// - Stage split: even -> no flag (or --num-layers-per-virtual-pipeline-stage with VPP); a different first and/or
//   last pipeline rank -> --decoder-first/last-pipeline-num-layers (+ --num-virtual-stages-per-pipeline-rank with
//   VPP); any other split -> --pipeline-model-parallel-layout, which lists every virtual stage.
// - ZeRO-1 is --use-distributed-optimizer (--num-distributed-optimizer-instances for zero_ngroups); ZeRO-2/3 are
//   Megatron-FSDP (--use-megatron-fsdp --data-parallel-sharding-strategy optim_grads / optim_grads_params, with the
//   other flags its user guide requires), which also wants CUDA_DEVICE_MAX_CONNECTIONS unset.
// - Schedules: Megatron runs 1F1B, or interleaved 1F1B with VPP; exportPlan refuses plans with another schedule.
// - Per-module recomputation maps to --recompute-modules where Megatron has the module (mlp, layernorm, core_attn).
#include "export_common.h"
#include "import_helpers.h"

#include "shardscape/support/error.h"
#include "shardscape/support/strings.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <numeric>

namespace shardscape::exporting {

namespace {

using Args = std::vector<std::string>;

/** Up to core_v0.17 NullTokenizer counts an end-of-document token beyond --vocab-size. */
bool nullTokenizerAddsEod(std::string_view version)
{
    return version == "core_v0.15" || version == "core_v0.16" || version == "core_v0.17";
}

void add(Args& args, std::string flag, const std::string& value = {})
{
    args.push_back(value.empty() ? std::move(flag) : cat(flag, " ", shellWord(value)));
}

bool allEqual(const std::vector<int>& values)
{
    return std::adjacent_find(values.begin(), values.end(), std::not_equal_to<>()) == values.end();
}

/** Pipeline split flags for the plan's blocks per virtual stage (virtual stage v = chunk k x pp + rank r). */
void splitArgs(Context& context, Args& args)
{
    const ParallelConfig& c = context.config();
    if (c.pp == 1)
        return;
    const std::vector<int>& d = context.blocks;
    if (d.empty()) {
        context.note("the plan's layers are not [embedding, one per block, head] of a transformer: Megatron splits "
                     "the decoder layers evenly, not as planned");
        return;
    }
    const auto at = [&](int rank, int chunk) { return d[static_cast<std::size_t>(chunk * c.pp + rank)]; };
    if (allEqual(d)) {
        if (c.vpp > 1)
            add(args, "--num-layers-per-virtual-pipeline-stage", cat(d.front()));
        return;
    }
    // Megatron's uneven split: the first and last pipeline ranks take given counts, the others share the rest
    // evenly, and each rank spreads its layers evenly over its vpp chunks.
    bool firstLast = true;
    for (int r = 0; r < c.pp && firstLast; ++r)
        for (int k = 1; k < c.vpp; ++k)
            firstLast = firstLast && at(r, k) == at(r, 0);
    for (int r = 2; r + 1 < c.pp && firstLast; ++r)
        firstLast = at(r, 0) == at(1, 0);
    firstLast = firstLast && at(0, 0) > 0 && at(c.pp - 1, 0) > 0;
    if (firstLast) {
        add(args, "--decoder-first-pipeline-num-layers", cat(at(0, 0) * c.vpp));
        add(args, "--decoder-last-pipeline-num-layers", cat(at(c.pp - 1, 0) * c.vpp));
        if (c.vpp > 1)
            add(args, "--num-virtual-stages-per-pipeline-rank", cat(c.vpp));
        return;
    }
    // Anything else: the layout lists every virtual stage (E embedding, t decoder layer, L loss, | between stages).
    std::vector<std::string> stages;
    for (std::size_t v = 0; v < d.size(); ++v)
        stages.push_back(
            cat(v == 0 ? "E" : "", std::string(static_cast<std::size_t>(d[v]), 't'), v + 1 == d.size() ? "L" : ""));
    add(args, "--pipeline-model-parallel-layout", join(stages, "|"));
}

void zeroArgs(Context& context, Args& args)
{
    const ParallelConfig& c = context.config();
    if (c.zero_stage == 0 || c.dp * c.cp == 1)
        return;
    if (c.zero_stage == 1) {
        add(args, "--use-distributed-optimizer");
        if (c.zero_ngroups > 1)
            add(args, "--num-distributed-optimizer-instances", cat(c.zero_ngroups));
        return;
    }
    // The flags the Megatron-FSDP user guide requires, with the strategy for the stage.
    const char* strategy = c.zero_stage == 2 ? "optim_grads" : "optim_grads_params";
    add(args, "--use-megatron-fsdp");
    add(args, "--data-parallel-sharding-strategy", strategy);
    add(args, "--no-gradient-accumulation-fusion");
    add(args, "--use-distributed-optimizer");
    add(args, "--ckpt-format", "fsdp_dtensor");
    // megatron/training/training.py get_model: without it every rank first builds its whole TP/PP-local model on the
    // GPU and shards it afterwards (a 70B tp1 pp1 plan would need ~140 GB at start-up).
    add(args, "--init-model-with-meta-device");
    context.note(cat("ZeRO-", c.zero_stage, " is written as Megatron-FSDP (--use-megatron-fsdp with strategy ",
                     strategy,
                     "), Megatron's ZeRO-2/3 analogue; it wants CUDA_DEVICE_MAX_CONNECTIONS unset, so the script does "
                     "not set it"));
    if (c.zero_ngroups > 1) {
        if (context.framework_version == "core_v0.15") {
            context.note(cat("zero_ngroups ", c.zero_ngroups,
                             " (hierarchical sharding) needs --outer-dp-sharding-strategy, which Megatron-FSDP has "
                             "from core_v0.16: written as FSDP over all dp ranks"));
        } else {
            // Hybrid sharding (megatron/core/distributed/fsdp/mcore_fsdp_adapter.py): shard within dp / n ranks,
            // replicate across the n instances.
            add(args, "--num-distributed-optimizer-instances", cat(c.zero_ngroups));
            add(args, "--outer-dp-sharding-strategy", "no_shard");
        }
    }
}

/**
 * Whole blocks recomputed by index (what importing --recompute-method block gives): Megatron's block method when they
 * are the first n decoder layers of every model chunk (import_helpers.h megatronBlockRecompute). False when the
 * plan's modules are not block indices.
 */
bool blockRecomputeArgs(Context& context, Args& args)
{
    const ParallelConfig& c = context.config();
    if (!recomputesBlockIndices(c))
        return false;
    std::vector<int> chunks = context.blocks;
    if (chunks.empty() && c.pp == 1 && context.model.transformer)
        chunks = {static_cast<int>(context.model.transformer->num_layers)};
    // The block method's n is what the first chunk recomputes; the other chunks must then recompute their first n.
    const std::vector<long long> wanted = recomputedBlocks(c);
    const auto n = chunks.empty() ? 0 : std::lower_bound(wanted.begin(), wanted.end(), chunks.front()) - wanted.begin();
    ParallelConfig method = c;
    method.recompute_modules = importing::megatronBlockRecompute(chunks, n);
    if (n > 0 && recomputedBlocks(method) == wanted) {
        add(args, "--recompute-granularity", "full");
        add(args, "--recompute-method", "block");
        add(args, "--recompute-num-layers", cat(n));
        return true;
    }
    context.note(cat("the plan recomputes blocks ", join(c.recompute_modules, ", "),
                     ", which are not the first n decoder layers of every model chunk (Megatron's --recompute-method "
                     "block): not recomputed"));
    return true;
}

void recomputeArgs(Context& context, Args& args)
{
    const ParallelConfig& c = context.config();
    const auto full = [&args] {
        add(args, "--recompute-granularity", "full");
        add(args, "--recompute-method", "uniform");
        add(args, "--recompute-num-layers", "1");
    };
    switch (c.recompute) {
    case RecomputeKind::None:
        return;
    case RecomputeKind::Selective:
        add(args, "--recompute-granularity", "selective"); // core_attn, Megatron's default module
        return;
    case RecomputeKind::Full:
        full();
        return;
    case RecomputeKind::Modules:
        break;
    }
    if (blockRecomputeArgs(context, args))
        return;
    std::vector<std::string> modules;
    std::vector<std::string> dropped;
    const auto use = [&modules](const std::string& name) {
        if (std::find(modules.begin(), modules.end(), name) == modules.end())
            modules.push_back(name);
    };
    for (const auto& m : c.recompute_modules) {
        const std::string lower = toLower(m);
        if (lower == "root") {
            full();
            return;
        }
        if (endsWith(lower, "mlp") || lower.find("moe") != std::string::npos || endsWith(lower, "experts")) {
            // Megatron's "mlp" recomputes dense MLPs only; an MoE layer's is "moe" (megatron/core/transformer/
            // transformer_layer.py: recompute_mlp applies when the MLP is not an MoELayer). A plan recomputing the
            // MLP block recomputes it in every layer, so an MoE model gets both where it has both kinds.
            const TransformerShape* t = context.model.transformer ? &*context.model.transformer : nullptr;
            const bool moe = t && t->num_experts > 0;
            const bool dense = !moe || t->first_dense_layers > 0 || t->moe_layer_step > 1;
            if (dense)
                use("mlp");
            if (moe)
                use("moe");
        } else if (lower.find("norm") != std::string::npos)
            use("layernorm");
        else if (endsWith(lower, "attn") || endsWith(lower, "attention"))
            use("core_attn");
        else
            dropped.push_back(m);
    }
    if (std::find(modules.begin(), modules.end(), "core_attn") != modules.end())
        context.note("Megatron recomputes only the attention core (core_attn), not the projections of the "
                     "attention modules the plan recomputes");
    if (!dropped.empty())
        context.note(cat("Megatron has no recompute module for ", join(dropped, ", "), ": not recomputed"));
    if (modules.empty())
        return;
    add(args, "--recompute-granularity", "selective");
    args.push_back(cat("--recompute-modules ", join(modules, " "))); // nargs='*': one word per module
}

/** The model's shape; false when the model is not a recognised transformer. */
bool modelArgs(Context& context, Args& args, std::int64_t& vocab)
{
    if (!context.model.transformer) {
        context.note(cat(context.modelName(),
                         " is not a recognised transformer: give its --num-layers, --hidden-size, ... yourself"));
        return false;
    }
    const TransformerShape& t = *context.model.transformer;
    const ParallelConfig& c = context.config();
    add(args, "--num-layers", cat(t.num_layers));
    add(args, "--hidden-size", cat(t.hidden));
    // An MoE model's --ffn-hidden-size is its dense layers' width; the experts' is --moe-ffn-hidden-size.
    add(args, "--ffn-hidden-size",
        cat(t.num_experts > 0 && t.dense_ffn_hidden > 0 ? t.dense_ffn_hidden : t.ffn_hidden));
    add(args, "--num-attention-heads", cat(t.num_heads));
    if (t.num_kv_heads != t.num_heads) {
        add(args, "--group-query-attention");
        add(args, "--num-query-groups", cat(t.num_kv_heads));
    }
    if (t.head_dim * t.num_heads != t.hidden)
        add(args, "--kv-channels", cat(t.head_dim));
    add(args, "--seq-length", cat(context.plan.seq_len));
    add(args, "--max-position-embeddings", cat(std::max(t.max_positions, context.plan.seq_len)));
    if (t.gated_mlp)
        add(args, "--swiglu");
    add(args, "--normalization", t.norm == "layernorm" ? "LayerNorm" : "RMSNorm");
    add(args, "--position-embedding-type", t.learned_positions ? "learned_absolute" : "rope");
    if (!t.learned_positions && t.rope_theta > 0) {
        // --rotary-base is an int (megatron/training/arguments.py) and defaults to 10000.
        if (t.rope_theta == std::floor(t.rope_theta) && t.rope_theta < 1e15)
            add(args, "--rotary-base", cat(static_cast<long long>(t.rope_theta)));
        else
            context.note(cat("the model's rope_theta ", t.rope_theta,
                             " is not a whole number: Megatron's --rotary-base takes an integer, not written"));
    }
    if (!t.tied_embeddings)
        add(args, "--untie-embeddings-and-output-weights");
    if (!t.gptStyleBlocks() && t.family != "gpt_oss")
        add(args, "--disable-bias-linear");
    if (t.family == "bloom")
        context.note(
            "BLOOM's ALiBi has no Megatron-LM position embedding type: the export writes rope (Megatron-DeepSpeed's "
            "--position-embedding-type alibi has it)");
    if (t.family == "gpt_neox")
        context.note(
            "GPT-NeoX's parallel residual has no Megatron-Core GPT option: the job trains the sequential block "
            "(same parameters and FLOPs); add --rotary-percent with the config's rotary_pct (0.25 for "
            "GPT-NeoX-20B and Pythia)");
    if (t.family == "qwen2" || t.family == "qwen2_moe")
        add(args, "--add-qkv-bias");
    if (t.qk_norm)
        add(args, "--qk-layernorm");
    if (t.kv_lora_rank > 0) {
        // megatron/training/arguments.py: MLA's no-rope and rope parts of a query/key head, the value head.
        add(args, "--multi-latent-attention");
        if (t.q_lora_rank > 0)
            add(args, "--q-lora-rank", cat(t.q_lora_rank));
        add(args, "--kv-lora-rank", cat(t.kv_lora_rank));
        add(args, "--qk-head-dim", cat(t.qk_nope_head_dim));
        add(args, "--qk-pos-emb-head-dim", cat(t.qk_rope_head_dim));
        add(args, "--v-head-dim", cat(t.v_head_dim));
    }
    if (t.attention_window > 0)
        context.note(cat("the model attends a ", t.attention_window,
                         "-token window in its local layers; the plan costs "
                         "that, set Megatron's --window-size for it (it is not written here)"));
    if (t.sandwich_norms)
        context.note("Gemma's post-attention and post-MLP norms have no Megatron-LM flag: the export trains "
                     "pre-norm blocks");
    if (t.embedding_norm)
        context.note("the model's norm after the token embedding (BLOOM's word_embeddings_layernorm) has no "
                     "Megatron-LM flag: the export trains without it (Megatron-DeepSpeed's --embed-layernorm has it)");
    add(args, "--attention-dropout", fixed(t.dropout, 2));
    add(args, "--hidden-dropout", fixed(t.dropout, 2));
    // TransformerConfig.transformer_impl defaults to transformer_engine; written out because the prediction is that
    // layer's. Megatron's local layer (gpt_layer_specs.py get_gpt_layer_local_spec) runs attention unfused.
    add(args, "--transformer-impl", "transformer_engine");
    if (t.num_experts > 0) {
        add(args, "--num-experts", cat(t.num_experts));
        add(args, "--moe-router-topk", cat(t.top_k));
        add(args, "--moe-ffn-hidden-size", cat(t.ffn_hidden));
        add(args, "--moe-grouped-gemm");
        add(args, "--moe-token-dispatcher-type", "alltoall");
        // Capacity-limited experts (megatron/core/transformer/transformer_config.py moe_expert_capacity_factor;
        // valid with the default aux_loss load balancing): tokens over capacity are dropped, lowest probability first.
        if (c.moe_capacity_factor > 0)
            add(args, "--moe-expert-capacity-factor", fixed(c.moe_capacity_factor, 2));
        if (c.moe_shared_expert_overlap)
            add(args, "--moe-shared-expert-overlap");
        if (t.shared_expert_ffn > 0)
            add(args, "--moe-shared-expert-intermediate-size", cat(t.shared_expert_ffn));
        if (t.first_dense_layers > 0 || t.moe_layer_step > 1) {
            // One entry per layer, 1 for MoE (megatron/training/arguments.py moe_freq_type).
            std::string pattern = "[";
            for (std::int64_t i = 0; i < t.num_layers; ++i)
                pattern += cat(i ? "," : "", t.isMoeLayer(i) ? 1 : 0);
            add(args, "--moe-layer-freq", pattern + "]");
        }
    }
    // Megatron pads the vocabulary to a multiple of make_vocab_size_divisible_by (128) x TP; pick a divisor that
    // keeps the model's vocabulary when TP divides it.
    if (t.vocab % c.tp == 0) {
        const std::int64_t divisor = std::gcd(std::int64_t {128}, t.vocab / c.tp);
        if (divisor != 128)
            add(args, "--make-vocab-size-divisible-by", cat(divisor));
    } else {
        add(args, "--make-vocab-size-divisible-by", "1");
        const std::int64_t padded = (t.vocab + c.tp - 1) / c.tp * c.tp;
        context.note(cat("Megatron pads the vocabulary to a multiple of TP: ", t.vocab, " -> ", padded,
                         " (the plan costed ", t.vocab, ")"));
    }
    vocab = t.vocab;
    return true;
}

} // namespace

std::string exportMegatron(Context& context)
{
    const ParallelConfig& c = context.config();
    // Start-up checks of Megatron-LM that a plan can fail (tests/data/framework_schemas/README.md lists them).
    const TransformerShape* model = context.model.transformer ? &*context.model.transformer : nullptr;
    if (c.cp > 1 && context.plan.seq_len % (2 * c.cp) != 0)
        throw InputError(cat("Megatron's context parallelism splits each sequence into 2 x cp = ", 2 * c.cp,
                             " chunks; the plan's ", context.plan.seq_len, " tokens do not divide"),
                         "choose a sequence length that divides, or another cp");
    if (model && model->num_experts > 0 && c.tp > 1 && !c.sequence_parallel)
        throw InputError("Megatron's MoE layers need --sequence-parallel with tensor parallelism (moe_layer.py "
                         "raises without it); the plan has SP off",
                         "plan with sequence_parallel on, or export a plan with tp 1");
    Args args;
    add(args, "--tensor-model-parallel-size", cat(c.tp));
    if (c.sequence_parallel && c.tp > 1)
        add(args, "--sequence-parallel");
    if (c.tp_comm_overlap) {
        add(args, "--tp-comm-overlap");
        context.note("--tp-comm-overlap needs Transformer Engine with userbuffers (and MPI or a torch.distributed "
                     "bootstrap for them)");
    }
    add(args, "--pipeline-model-parallel-size", cat(c.pp));
    splitArgs(context, args);
    add(args, "--context-parallel-size", cat(c.cp));
    if (c.ep > 1 || (context.model.transformer && context.model.transformer->num_experts > 0))
        add(args, "--expert-model-parallel-size", cat(c.ep));
    if (c.expertTp() != c.tp)
        add(args, "--expert-tensor-parallel-size", cat(c.expertTp()));
    add(args, "--micro-batch-size", cat(c.micro_batch));
    add(args, "--global-batch-size", cat(context.plan.global_batch));
    zeroArgs(context, args);
    if (c.overlap_param_gather && c.dp * c.cp > 1) {
        add(args, "--overlap-grad-reduce");
        add(args, "--overlap-param-gather");
    }
    if (c.moe_a2a_overlap) {
        // megatron/core/pipeline_parallel/combined_1f1b.py: a forward and a backward micro-batch interleaved layer
        // by layer; Megatron asks for the delayed weight gradients with it.
        add(args, "--overlap-moe-expert-parallel-comm");
        add(args, "--delay-wgrad-compute");
    }
    if (c.grad_reduce_bf16)
        add(args, "--grad-reduce-in-bf16");
    if (c.fp8_linears) {
        add(args, "--fp8-format", "hybrid");
        // --fp8-recipe (Megatron core >= 0.12) defaults to delayed scaling; tensorwise is the current per-tensor
        // scaling the plan costs. Megatron has no rowwise recipe (frameworkRestriction refuses it).
        add(args, "--fp8-recipe", "tensorwise");
        context.note("--fp8-format hybrid runs the linear layers in FP8 through Transformer Engine (E4M3 forward, E5M2 "
                     "gradients); the plan costs FP8 GEMMs with dynamic-scaling casts");
        if (c.fp8_param_gather)
            add(args, "--fp8-param-gather");
        if (c.hasFp8Bf16Layers()) {
            add(args, "--first-last-layers-bf16");
            add(args, "--num-layers-at-start-in-bf16", std::to_string(c.fp8_bf16_first_layers));
            add(args, "--num-layers-at-end-in-bf16", std::to_string(c.fp8_bf16_last_layers));
        }
    }
    recomputeArgs(context, args);
    if (c.rank_order != "tp-cp-dp-pp")
        context.note(cat("Megatron orders ranks tp-cp-ep-dp-pp; the plan's rank order ", c.rank_order,
                         " has no command-line flag"));
    std::int64_t vocab = 0;
    const bool haveModel = modelArgs(context, args, vocab);
    const DType dtype = context.model.dtype;
    if (dtype == DType::BF16)
        add(args, "--bf16");
    else if (dtype == DType::F16)
        add(args, "--fp16");
    else if (dtype != DType::F32)
        context.note(cat("the plan's dtype ", dtypeName(dtype), " has no Megatron flag here: written without one"));
    add(args, "--train-iters", "100");
    // From core_v0.17 eval_interval defaults to None (megatron/training/config/training_config.py) and
    // get_train_valid_test_num_samples (megatron/training/training.py) divides train_iters by it before the first
    // step: without the flag the job stops with a TypeError (seen running this export on an H200,
    // tests/data/training_logs/README.md). 1000 keeps evaluation out of a short run.
    add(args, "--eval-interval", "1000");
    add(args, "--lr", "3.0e-4");
    add(args, "--mock-data");
    add(args, "--tokenizer-type", "NullTokenizer");
    // NullTokenizer's vocabulary: --vocab-size plus an end-of-document token up to core_v0.17; exactly --vocab-size
    // from core_v0.18 (megatron/core/tokenizers/text/libraries/null_tokenizer.py, commit c9dfe34).
    const std::int64_t vocabFlag = vocab - (nullTokenizerAddsEod(context.framework_version) ? 1 : 0);
    if (haveModel)
        add(args, "--vocab-size", cat(vocabFlag));
    const LaunchShape shape = launchShape(context);
    const bool fsdp = c.zero_stage >= 2 && c.dp * c.cp > 1;

    std::vector<std::string> head = headerLines(context, "Megatron-LM launch script");
    appendFrameworkLines(context, Framework::MegatronCore, head);
    head.emplace_back();
    head.push_back(
        cat("Run this on every node. MEGATRON_LM is a Megatron-LM checkout of ", context.framework_version, ","));
    head.emplace_back("MASTER_ADDR the host name of node 0; any arguments are appended to pretrain_gpt.py's.");
    head.emplace_back("The prediction is for Transformer Engine's layer: with --transformer-impl local attention runs");
    head.emplace_back("unfused (slower, s x s probabilities in memory); simulate --from-config predicts that too.");
    std::string out = "#!/usr/bin/env bash\n" + commentBlock(head, "# ");
    if (!context.notes.empty())
        out += "#\n" + notesBlock(context.notes, "# ");
    out += "set -euo pipefail\n\n";
    out += cat("NNODES=${NNODES:-", shape.nodes, "}\n");
    out += cat("GPUS_PER_NODE=${GPUS_PER_NODE:-", shape.gpus_per_node, "}\n");
    out += "MASTER_ADDR=${MASTER_ADDR:-localhost}\n";
    out += "MASTER_PORT=${MASTER_PORT:-29400}\n";
    out += "JOB_ID=${JOB_ID:-shardscape}\n";
    out += "MEGATRON_LM=${MEGATRON_LM:-.}\n";
    if ((c.tp > 1 || c.cp > 1) && !fsdp)
        out += "# Megatron asserts this with tensor or context parallelism (before Blackwell).\n"
               "export CUDA_DEVICE_MAX_CONNECTIONS=1\n";
    out += "\n";
    out += commentBlock(
        wrap(cat("Mock data and a null tokenizer, so that the script runs as it is: replace --mock-data and the "
                 "tokenizer arguments with your --data-path and tokenizer.",
                 haveModel ? cat(" With ", context.framework_version, "'s NullTokenizer --vocab-size ", vocabFlag,
                                 " gives ", vocab, " tokens.")
                           : std::string()),
             116, "", ""),
        "# ");
    out += "torchrun --nnodes \"$NNODES\" --nproc-per-node \"$GPUS_PER_NODE\" --rdzv-backend c10d \\\n"
           "    --rdzv-endpoint \"$MASTER_ADDR:$MASTER_PORT\" --rdzv-id \"$JOB_ID\" \\\n"
           "    \"$MEGATRON_LM/pretrain_gpt.py\" \\\n";
    for (const auto& arg : args)
        out += cat("    ", arg, " \\\n");
    out += "    \"$@\"\n";
    return out;
}

} // namespace shardscape::exporting
