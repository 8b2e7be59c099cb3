// SPDX-License-Identifier: MIT
// The plan as torchtitan's settings (torchtitan_layout.h). What torchtitan cannot express, and how it is written:
// - ZeRO-1/ZeRO-2: torchtitan's data parallelism is DDP (replicate) or FSDP2 (shard, which is ZeRO-3). ZeRO 0 is
//   data_parallel_replicate_degree = dp, ZeRO 3 is data_parallel_shard_degree = dp with fsdp_reshard_after_forward
//   "always"; ZeRO 1/2 become FSDP with "never" (parameters stay gathered from forward to backward: ZeRO-2-like
//   traffic, no more memory than ZeRO-1/2) and a note.
// - DDP is only allowed without TP/PP/CP/EP (torchtitan raises "DDP has not supported > 1D parallelism"): ZeRO 0 with
//   other parallelism is written as FSDP with "never" and a note.
// - Schedules: gpipe -> GPipe, 1f1b -> 1F1B, interleaved -> Interleaved1F1B (looped placement, stage s on rank
//   s % pp, as simulated), zb-v -> ZBVZeroBubble, dualpipev -> DualPipeV. Plans with another schedule, or another
//   thing torchtitan cannot run (frameworkRestriction), are refused by exportPlan before this runs.
// - Stage split: module_fqns_per_model_part with the llama3 module names (tok_embeddings, layers.N, norm and the
//   output projection), one list per virtual stage.
// - Activation checkpointing: torchtitan's selective mode (per-op SAC) is not Megatron's attention-core
//   recomputation; per-module recomputation has no knob.
#include "torchtitan_layout.h"

#include "import_helpers.h"

#include "shardscape/support/error.h"
#include "shardscape/support/strings.h"

#include <algorithm>

namespace shardscape::exporting {

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

std::string partsLiteral(const std::vector<std::vector<std::string>>& parts, std::size_t indent)
{
    const std::string open(indent + 4, ' ');
    std::string out = "[\n";
    for (const auto& part : parts) {
        std::string line = open + "[";
        for (std::size_t i = 0; i < part.size(); ++i) {
            const std::string item = tomlString(part[i]) + (i + 1 < part.size() ? "," : "],");
            if (line.size() > open.size() + 1 && line.size() + 1 + item.size() > 120) {
                out += line + "\n";
                line = open + " ";
            }
            line += (line.size() > open.size() + 1 ? " " : "") + item;
        }
        out += line + "\n";
    }
    return out + std::string(indent, ' ') + "]";
}

std::string torchtitanParamDtype(Context& context)
{
    const DType dtype = context.model.dtype;
    if (dtype == DType::F32)
        return "float32";
    if (dtype != DType::BF16)
        context.note(
            cat("torchtitan trains in bfloat16 or float32; the plan's ", dtypeName(dtype), " is written as bfloat16"));
    return "bfloat16";
}

namespace {

void modelOf(Context& context, TorchtitanLayout& layout)
{
    const std::string name = context.modelName();
    layout.model = "llama3";
    layout.flavor = name;
    if (!context.model.transformer) {
        context.note(cat(name, " is not a recognised transformer: the config names it as a llama3 flavor '", name,
                         "' that you must register in torchtitan"));
        return;
    }
    const TransformerShape& t = *context.model.transformer;
    layout.shape = cat("dim ", t.hidden, ", n_layers ", t.num_layers, ", n_heads ", t.num_heads, ", n_kv_heads ",
                       t.num_kv_heads, ", FFN hidden ", t.ffn_hidden,
                       t.num_experts > 0 ? cat(" per expert, ", t.num_experts, " experts, top-", t.top_k) : "",
                       ", vocab_size ", t.vocab);
    if (t.family == "llama" || t.family == "mistral") {
        const std::string flavor = llama3Flavor(t);
        layout.builtin_flavor = !flavor.empty();
        if (layout.builtin_flavor) {
            layout.flavor = flavor;
            return;
        }
        context.note(cat("torchtitan's llama3 model has no built-in flavor for ", name, ": register flavor '", name,
                         "' in torchtitan/models/llama3/__init__.py with ", layout.shape));
        return;
    }
    // Qwen3 and DeepSeek-V3 flavors by their depth and width (torchtitan/models/qwen3/__init__.py,
    // deepseek_v3/__init__.py, the same at v0.2.2 and main).
    struct Known
    {
        const char* model;
        const char* flavor;
        std::int64_t layers, hidden;
    };
    static constexpr Known kKnown[]
        = {{"qwen3", "8B", 36, 4096},        {"qwen3", "14B", 40, 5120},       {"qwen3", "32B", 64, 5120},
           {"qwen3", "30B-A3B", 48, 2048},   {"qwen3", "235B-A22B", 94, 4096}, {"deepseek_v3", "16B", 27, 2048},
           {"deepseek_v3", "671B", 61, 7168}};
    layout.model = t.family == "qwen3_moe" ? "qwen3" : t.family;
    for (const auto& k : kKnown)
        if (layout.model == k.model && t.num_layers == k.layers && t.hidden == k.hidden) {
            layout.flavor = k.flavor;
            layout.builtin_flavor = true;
            return;
        }
    context.note(cat("torchtitan has no built-in ", layout.model, " flavor named '", name, "': register it (",
                     layout.shape, ")", context.config().pp > 1 ? "; the stage split uses llama3's module names" : ""));
}

void dataParallelOf(Context& context, TorchtitanLayout& layout)
{
    const ParallelConfig& c = context.config();
    const bool otherParallelism = c.tp > 1 || c.pp > 1 || c.cp > 1 || c.ep > 1;
    layout.replicate = 1;
    layout.shard = c.dp;
    if (c.dp == 1 && c.cp == 1) {
        layout.shard = 1; // nothing to replicate or shard over
        return;
    }
    if (c.zero_stage == 0 && !otherParallelism) {
        layout.replicate = c.dp;
        layout.shard = 1;
        return;
    }
    if (c.zero_ngroups > 1 && c.zero_stage > 0) {
        if (c.dp % c.zero_ngroups == 0) {
            layout.replicate = c.zero_ngroups; // HSDP: shard within dp / ngroups ranks, replicate across the groups
            layout.shard = c.dp / c.zero_ngroups;
        } else {
            context.note(cat("zero_ngroups ", c.zero_ngroups, " does not divide dp ", c.dp,
                             ": torchtitan's HSDP cannot group the cp ranks; written as plain FSDP over dp"));
        }
    }
    layout.reshard = c.zero_stage == 3 ? "always" : "never";
    if (c.zero_stage == 0)
        context.note("torchtitan's DDP runs only without TP/PP/CP/EP ('DDP has not supported > 1D parallelism'): "
                     "the plan's unsharded data parallelism (ZeRO-0) is written as FSDP2 with "
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

std::string scheduleOf(const ParallelConfig& c)
{
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
    case ScheduleKind::ZeroBubbleH1:
        break;
    }
    // exportPlan refuses schedules torchtitan lacks (frameworkRestriction) before an exporter runs.
    throw InputError(cat("torchtitan has no ", scheduleName(c.schedule), " pipeline schedule"),
                     "plan with --framework torchtitan");
}

std::vector<std::vector<std::string>> partsOf(Context& context, const std::string& head)
{
    if (context.blocks.empty()) {
        context.note("the plan's layers are not [embedding, one per block, head] of a transformer, so its stage split "
                     "cannot be named with torchtitan's module names: torchtitan splits the layers itself");
        return {};
    }
    std::vector<std::vector<std::string>> parts;
    int next = 0;
    for (std::size_t v = 0; v < context.blocks.size(); ++v) {
        std::vector<std::string> names;
        if (v == 0)
            names.emplace_back("tok_embeddings");
        for (int i = 0; i < context.blocks[v]; ++i)
            names.push_back(cat("layers.", next++));
        if (v + 1 == context.blocks.size()) {
            names.emplace_back("norm");
            names.push_back(head);
        }
        parts.push_back(std::move(names));
    }
    return parts;
}

/** The k with which torchtitan's layer SAC checkpoints exactly the plan's blocks, or 0 (importing::torchtitanLayerSac).
 */
int layerSacEvery(Context& context)
{
    const ParallelConfig& c = context.config();
    std::vector<int> stageBlocks = context.blocks;
    if (stageBlocks.empty() && c.pp == 1 && context.model.transformer)
        stageBlocks = {static_cast<int>(context.model.transformer->num_layers)};
    if (stageBlocks.empty())
        return 0;
    const std::vector<long long> wanted = recomputedBlocks(c);
    const int most = *std::max_element(stageBlocks.begin(), stageBlocks.end()) * (isVShaped(c.schedule) ? 2 : c.vpp);
    for (int k = 2; k <= most; ++k) {
        ParallelConfig every = c;
        every.recompute_modules = importing::torchtitanLayerSac(stageBlocks, c.pp, isVShaped(c.schedule), k);
        if (recomputedBlocks(every) == wanted)
            return k;
    }
    return 0;
}

std::string checkpointOf(Context& context, TorchtitanLayout& layout)
{
    const ParallelConfig& c = context.config();
    switch (c.recompute) {
    case RecomputeKind::None:
        return "none";
    case RecomputeKind::Full:
        return "full";
    case RecomputeKind::Selective:
        if (c.framework != Framework::Torchtitan)
            context.note("torchtitan's selective activation checkpointing (per-op SAC: saves matmul and attention "
                         "outputs, recomputes every second matmul) is not the attention-core recomputation the plan "
                         "simulated: expect less activation memory and more recomputation than predicted (plan for "
                         "torchtitan to simulate its policy)");
        return "selective";
    case RecomputeKind::Modules:
        break;
    }
    if (std::find(c.recompute_modules.begin(), c.recompute_modules.end(), "ROOT") != c.recompute_modules.end())
        return "full";
    if (recomputesBlockIndices(c)) {
        // Layer SAC is v0.2's; main's activation_checkpoint.py has FullAC, the per-op SelectiveAC and MemoryBudgetAC.
        if (context.framework_version != "v0.2") {
            context.note(cat("torchtitan main has no per-block checkpointing (its SelectiveAC is per-op only); the "
                             "plan's blocks (",
                             recomputeLabel(c),
                             ") are written as full checkpointing, which uses less memory and more time than "
                             "predicted"));
            return "full";
        }
        if ((layout.layer_sac_every = layerSacEvery(context)) > 0)
            return "selective";
        context.note(
            cat("torchtitan's layer SAC checkpoints every k-th block of each pipeline rank; the plan's blocks (",
                recomputeLabel(c),
                ") are no such set: written as full checkpointing, which uses less memory and more time "
                "than predicted"));
        return "full";
    }
    context.note(cat("torchtitan cannot recompute chosen modules (", join(c.recompute_modules, ", "),
                     "): written as selective per-op checkpointing"));
    return "selective";
}

} // namespace

TorchtitanLayout torchtitanLayout(Context& context, const std::string& head)
{
    const ParallelConfig& c = context.config();
    TorchtitanLayout layout;
    modelOf(context, layout);
    dataParallelOf(context, layout);
    if (c.tp > 1 && !c.sequence_parallel && context.framework_version == "v0.2")
        context.note("torchtitan v0.2's tensor parallelism always shards the activations along the sequence (Megatron "
                     "SP); the plan has SP off, so torchtitan will use less activation memory than predicted");
    if (c.pp > 1) {
        layout.schedule = scheduleOf(c);
        layout.parts = partsOf(context, head);
    }
    if (c.rank_order != "tp-cp-dp-pp")
        context.note(cat("torchtitan's device mesh orders ranks tp fastest, then cp, dp, pp; the plan's rank order ",
                         c.rank_order, " cannot be set"));
    layout.checkpoint = checkpointOf(context, layout);
    if (c.overlap_param_gather)
        context.note("FSDP2 prefetches the parameter all-gathers itself; the plan's parameter-gather overlap "
                     "(Megatron's --overlap-param-gather) has no torchtitan setting");
    return layout;
}

} // namespace shardscape::exporting
