// SPDX-License-Identifier: MIT
// DeepSpeed config JSON (docs/_pages/config-json.md, deepspeed/runtime/config.py, deepspeed/runtime/pipe/). The batch
// triple satisfies train_batch_size = train_micro_batch_size_per_gpu x gradient_accumulation_steps x DP, which
// DeepSpeed asserts. What DeepSpeed cannot express, and how it is written instead:
// - Context parallelism: DeepSpeed has none (sequence_parallel_size is Ulysses all-to-all attention, another
//   algorithm); a note.
// - ZeRO-2/3 with pipeline parallelism: the pipeline engine asserts they are incompatible; written as ZeRO-1.
// - Interleaved, GPipe and ZB-H1 schedules: the pipeline engine runs its own 1F1B-like TrainSchedule, one stage per
//   rank; a note.
// - The stage split, the TP/SP/EP degrees and which layers are checkpointed are set in code (PipelineModule's
//   num_stages, partition_method and activation_checkpoint_interval; the model's mpu or AutoTP; MoE(ep_size));
//   the config records pipeline.stages and tensor_parallel.autotp_size and the notes say the rest.
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

    int zero = c.zero_stage;
    if (c.pp > 1 && zero >= 2) {
        zero = 1;
        context.note(cat("DeepSpeed's pipeline engine forbids ZeRO-2/3 with pipeline parallelism: written as ZeRO-1, "
                         "so gradients are not sharded and need more memory than the plan's ZeRO-",
                         c.zero_stage));
    }
    doc["zero_optimization"] = {{"stage", zero}};
    if (c.zero_ngroups > 1 && zero > 0)
        context.note(cat("zero_ngroups ", c.zero_ngroups,
                         " (sharding within groups of the data-parallel ranks) has no DeepSpeed key; ZeRO++'s "
                         "zero_hpz_partition_size is a different scheme"));
    if (c.cp > 1)
        context.note(cat("DeepSpeed has no context parallelism (sequence_parallel_size is Ulysses all-to-all "
                         "attention, another algorithm): the plan's cp ",
                         c.cp, " is not expressed, and train_batch_size counts only the plan's dp = ", c.dp,
                         " data-parallel ranks"));

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
        doc["pipeline"] = {{"stages", c.pp},
                           {"partition", even ? "uniform" : "parameters"},
                           {"activation_checkpoint_interval", interval}};
        context.note(
            cat("DeepSpeed takes the pipeline degree and split from the code: PipelineModule(num_stages=", c.pp,
                ", partition_method=\"", even ? "uniform" : "parameters", "\"); pipeline.stages records the degree"));
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
        if (c.vpp > 1 || c.schedule != ScheduleKind::OneFOneB)
            context.note(cat("DeepSpeed's pipeline engine runs its own 1F1B-like schedule with one stage per rank: the "
                             "plan's ",
                             scheduleName(c.schedule), " schedule",
                             c.vpp > 1 ? cat(" with ", c.vpp, " stages per rank") : std::string(),
                             " is not expressed"));
    }
    if (c.tp > 1) {
        doc["tensor_parallel"] = {{"autotp_size", c.tp}};
        context.note(cat("DeepSpeed takes tensor parallelism from the model code (e.g. Megatron-DeepSpeed's mpu) or "
                         "from AutoTP, whose degree tensor_parallel.autotp_size records (",
                         c.tp, ")", c.sequence_parallel ? "; sequence parallelism is a model-code setting too" : ""));
    }
    if (c.ep > 1)
        context.note(cat("DeepSpeed sets expert parallelism in code: deepspeed.moe.layer.MoE(ep_size=", c.ep, ")"));
    if (c.rank_order != "tp-cp-dp-pp" && c.rank_order != "tp-dp-cp-pp")
        context.note(cat("DeepSpeed's topology orders ranks model (tp) fastest, then data, then pipe; the plan's rank "
                         "order ",
                         c.rank_order, " cannot be set"));

    std::vector<std::string> comment = headerLines(context, "DeepSpeed config");
    appendFrameworkLines(context, Framework::DeepSpeed, comment);
    comment.push_back(cat("train_batch_size ", plan.global_batch, " = micro-batch ", c.micro_batch,
                          " x gradient accumulation ", c.num_microbatches, " x data parallel ", c.dp));
    for (const auto& note : context.notes)
        comment.push_back("note: " + note);
    doc["_comment"] = comment;
    return doc.dump(2) + "\n";
}

} // namespace shardscape::exporting
