// SPDX-License-Identifier: MIT
// DeepSpeed config JSON (docs/_pages/config-json.md, deepspeed/runtime/config.py, deepspeed/runtime/pipe/). Only plans
// DeepSpeed runs get here (exportPlan refuses the others with frameworkRestriction: its pipeline engine runs 1F1B with
// ZeRO 0/1, it has no ring context parallelism and no FP8 training). What the file carries, and why:
// - The batch: DeepSpeed asserts train_batch_size = micro x gradient_accumulation_steps x its data-parallel size
//   (runtime/config.py _batch_assertion), and without an mpu or a pipeline topology that size is the whole world
//   (runtime/config.py _set_batch_related_parameters). With tp > 1 the plan's dp is world / (tp x pp) only when the
//   model code's mpu or AutoTP gives DeepSpeed the TP groups, so train_batch_size is left out and DeepSpeed computes
//   it from the two it is given (the same global batch then, and never a failed assertion).
// - Tensor parallelism: with pp = 1, tensor_parallel.autotp_size switches DeepSpeed's AutoTP training on (it builds
//   the TP groups and shards a Hugging Face model's linears: deepspeed/__init__.py, runtime/engine.py); under a
//   pipeline the model code (Megatron-DeepSpeed's mpu) does TP, and the key is not written.
// - The pipeline: PipelineModule(num_stages, partition_method) is code; of the config's "pipeline" section only
//   activation_checkpoint_interval is read (runtime/pipe/engine.py), so nothing else is written there.
// JSON has no comments: the header and the notes go into a "_comment" list, a key DeepSpeed does not read.
#include "export_common.h"

#include "shardscape/support/strings.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace shardscape::exporting {

std::string exportDeepSpeed(Context& context)
{
    using nlohmann::ordered_json;
    const ParallelConfig& c = context.config();
    const LoadedPlan& plan = context.plan;

    ordered_json doc;
    doc["_comment"] = ordered_json::array();
    if (c.tp == 1)
        doc["train_batch_size"] = plan.global_batch;
    doc["train_micro_batch_size_per_gpu"] = c.micro_batch;
    doc["gradient_accumulation_steps"] = c.num_microbatches;
    const DType dtype = context.model.dtype;
    if (dtype == DType::BF16)
        doc["bf16"] = {{"enabled", true}};
    else if (dtype == DType::F16)
        doc["fp16"] = {{"enabled", true}};
    else if (dtype != DType::F32)
        context.note(cat("the plan's dtype ", dtypeName(dtype), " has no DeepSpeed precision section here"));

    doc["zero_optimization"] = {{"stage", c.zero_stage}};
    if (dtype == DType::BF16 && c.pp > 1 && c.zero_stage == 0 && c.dp * c.cp > 1)
        context.note("bf16 under a pipeline at ZeRO stage 0 runs DeepSpeed's BF16_Optimizer (runtime/engine.py "
                     "_do_optimizer_sanity_check): fp32 gradient buffers, all-reduced after the flush, and the fp32 "
                     "master weights and Adam states sharded over the data-parallel ranks, as the plan costs them");
    if (c.zero_ngroups > 1 && c.zero_stage > 0)
        context.note(cat("zero_ngroups ", c.zero_ngroups,
                         " (sharding within groups of the data-parallel ranks) has no DeepSpeed key; ZeRO++'s "
                         "zero_hpz_partition_size is a different scheme"));

    doc["activation_checkpointing"] = {{"partition_activations", false},
                                       {"cpu_checkpointing", false},
                                       {"contiguous_memory_optimization", false},
                                       {"synchronize_checkpoint_boundary", false},
                                       {"profile", false}};
    int interval = 0;
    switch (c.recompute) {
    case RecomputeKind::None:
        break;
    case RecomputeKind::Full:
        if (c.pp > 1)
            interval = 1;
        else
            context.note("DeepSpeed checkpoints what the model code wraps with deepspeed.checkpointing.checkpoint: "
                         "wrap every block for the plan's full recomputation");
        break;
    case RecomputeKind::Selective:
    case RecomputeKind::Modules:
        context.note(cat("DeepSpeed checkpoints whole layers (activation_checkpoint_interval) or what the model code "
                         "wraps with deepspeed.checkpointing.checkpoint: the plan's ",
                         c.recompute == RecomputeKind::Selective
                             ? std::string("selective (attention-core)")
                             : cat("per-module (", join(c.recompute_modules, ", "), ")"),
                         " recomputation must be coded in the model"));
        break;
    }

    if (c.pp > 1) {
        const bool even = !context.blocks.empty()
            && std::adjacent_find(context.blocks.begin(), context.blocks.end(), std::not_equal_to<>())
                == context.blocks.end();
        doc["pipeline"] = {{"activation_checkpoint_interval", interval}};
        // DeepSpeed's defaults, written out because the simulated pipeline sends assume them: each TP rank sends its
        // 1/tp slice (pipe/engine.py is_pipe_partitioned / is_grad_partitioned).
        if (c.tp > 1) {
            doc["pipeline"]["pipe_partitioned"] = true;
            doc["pipeline"]["grad_partitioned"] = true;
        }
        context.note(cat("DeepSpeed takes the pipeline from the code: PipelineModule(layers, num_stages=", c.pp,
                         ", partition_method=\"", even ? "uniform" : "parameters", "\")"));
        if (!even)
            context.note(cat("DeepSpeed cannot take per-stage layer counts: the plan's split (",
                             join(
                                 [&] {
                                     std::vector<std::string> counts;
                                     for (const int n : context.chunks)
                                         counts.push_back(cat(n));
                                     return counts;
                                 }(),
                                 ", "),
                             " layers per stage) is approximated by partition_method=\"parameters\""));
    }
    if (c.tp > 1 && c.pp == 1) {
        doc["tensor_parallel"] = {{"autotp_size", c.tp}};
        context.note(cat("tensor_parallel.autotp_size ", c.tp,
                         " turns on DeepSpeed's AutoTP training, which shards a Hugging Face model's linear layers "
                         "itself; leave it out if your model code does tensor parallelism (then pass its mpu to "
                         "deepspeed.initialize)",
                         c.sequence_parallel ? "; AutoTP has no sequence parallelism: activations take more memory "
                                               "than the plan's SP"
                                             : ""));
    } else if (c.tp > 1) {
        context.note(cat("tensor parallelism ", c.tp,
                         " under a pipeline comes from the model code (Megatron-DeepSpeed's mpu, passed to "
                         "deepspeed.initialize); AutoTP does not run under PipelineModule"));
    }
    if (c.tp > 1)
        context.note(cat("train_batch_size is left to DeepSpeed: micro-batch ", c.micro_batch,
                         " x gradient accumulation ", c.num_microbatches, " x its data-parallel size (", c.dp,
                         " when it gets the TP groups) = ", plan.global_batch,
                         "; without them DeepSpeed counts every rank as data parallel"));
    if (c.tp > 1 || c.pp > 1)
        // Like "_comment", a key DeepSpeed does not read: the layout the model code must build, for the reader and
        // for Shardscape's importer (DeepSpeed itself takes tp and pp from the code).
        doc["_shardscape_layout"] = {{"tensor_parallel", c.tp},
                                     {"pipeline_stages", c.pp},
                                     {"data_parallel", c.dp},
                                     {"stage_layers", context.chunks}};
    if (c.ep > 1)
        context.note(cat("DeepSpeed sets expert parallelism in code: deepspeed.moe.layer.MoE(ep_size=", c.ep, ")"));
    if (c.rank_order != "tp-cp-dp-pp" && c.rank_order != "tp-dp-cp-pp")
        context.note(cat("DeepSpeed's topology orders ranks model (tp) fastest, then data, then pipe; the plan's rank "
                         "order ",
                         c.rank_order, " cannot be set"));

    std::vector<std::string> comment = headerLines(context, "DeepSpeed config");
    appendFrameworkLines(context, Framework::DeepSpeed, comment);
    if (c.tp == 1)
        comment.push_back(cat("train_batch_size ", plan.global_batch, " = micro-batch ", c.micro_batch,
                              " x gradient accumulation ", c.num_microbatches, " x data parallel ", c.dp));
    for (const auto& note : context.notes)
        comment.push_back("note: " + note);
    doc["_comment"] = comment;
    return doc.dump(2) + "\n";
}

} // namespace shardscape::exporting
