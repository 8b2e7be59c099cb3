// SPDX-License-Identifier: MIT
#include "shardscape/search/candidate_space.h"

#include "shardscape/support/error.h"
#include "shardscape/support/strings.h"

#include <algorithm>

namespace shardscape {

namespace {

std::vector<int> powersOfTwoUpTo(int limit)
{
    std::vector<int> out;
    for (int v = 1; v <= limit; v *= 2)
        out.push_back(v);
    return out;
}

std::vector<int> divisorsOf(int n, int limit)
{
    std::vector<int> out;
    for (int d = 1; d <= std::min(n, limit); ++d)
        if (n % d == 0)
            out.push_back(d);
    return out;
}

template<typename T> bool contains(const std::vector<T>& values, T value)
{
    return std::find(values.begin(), values.end(), value) != values.end();
}

/**
 * Removes from `space` what config.framework cannot run, dimension by dimension, so the enumeration never builds
 * those candidates (the search stays bounded); notes each removal in space.framework_limits.
 */
void applyFramework(SearchSpace& space, const PlannerConfig& config)
{
    if (config.framework == Framework::Generic)
        return;
    const FrameworkProfile& p = frameworkProfile(config.framework);
    const auto limit = [&](const std::string& what) { space.framework_limits.push_back(what); };
    const auto onlyOne = [&](std::vector<int>& values, bool allowed, const char* what) {
        if (!allowed && values.size() > 1) {
            values = {1};
            limit(cat("no ", what));
        }
    };
    onlyOne(space.tp, p.tensor_parallel, "tensor parallelism");
    onlyOne(space.cp, p.context_parallel, "context parallelism");
    onlyOne(space.ep, p.expert_parallel, "expert parallelism");

    const std::vector<int> zero = space.zero;
    std::erase_if(space.zero, [&](int z) { return !contains(p.zero_stages, z); });
    if (space.zero.size() != zero.size())
        limit(cat("ZeRO stages ", zeroStageList(p), " only"));

    // Without any schedule the framework has no pipeline: one note below says so.
    for (const auto schedule : space.schedules)
        if (!contains(p.schedules, schedule) && !p.schedules.empty())
            limit(cat("no ", scheduleName(schedule), " schedule"));
    std::erase_if(space.schedules, [&](ScheduleKind s) { return !contains(p.schedules, s); });
    if (!space.vpp_interleaved.empty() && !contains(p.schedules, ScheduleKind::Interleaved1F1B)) {
        space.vpp_interleaved.clear();
        if (!p.schedules.empty())
            limit("no interleaved schedule");
    }
    if (space.schedules.empty() && space.vpp_interleaved.empty()
        && std::any_of(space.pp.begin(), space.pp.end(), [](int pp) { return pp > 1; })) {
        std::erase_if(space.pp, [](int pp) { return pp > 1; });
        limit(p.schedules.empty() ? "no pipeline parallelism" : "none of its pipeline schedules was asked for");
    }
    const bool pipelines = std::any_of(space.pp.begin(), space.pp.end(), [](int pp) { return pp > 1; });
    if (!p.pipeline_with_zero23 && pipelines
        && std::any_of(space.zero.begin(), space.zero.end(), [](int z) { return z >= 2; }))
        limit("no ZeRO-2/3 with pipeline parallelism");
    if (p.microbatches_at_least_stages && pipelines)
        limit("at least as many micro-batches as pipeline stages");
}

/** What the user fixed (DimensionLocks): the locked values replace the searched ones, where they are valid at all. */
void applyLocks(SearchSpace& space, const DimensionLocks& locks, const ModelGraph& graph, int world, int layers)
{
    const auto lockTo = [](std::vector<int>& values, const std::vector<int>& locked, auto valid) {
        if (locked.empty())
            return;
        values.clear();
        for (const int v : locked)
            if (valid(v))
                values.push_back(v);
    };
    const TransformerShape* t = graph.transformer ? &*graph.transformer : nullptr;
    lockTo(space.tp, locks.tp, [&](int tp) {
        return world % tp == 0
            && (!t || (t->num_heads % tp == 0 && t->num_kv_heads % tp == 0 && t->ffn_hidden % tp == 0));
    });
    lockTo(space.cp, locks.cp, [&](int cp) { return cp == 1 || graph.seq_len % (2 * cp) == 0; });
    lockTo(space.pp, locks.pp, [&](int pp) { return world % pp == 0 && pp <= layers; });
    lockTo(space.micro_batch, locks.micro_batch, [](int) { return true; });
    lockTo(space.zero, locks.zero, [](int) { return true; });
    lockTo(space.ep, locks.ep, [](int) { return true; });
    if (!locks.recompute.empty() && space.recompute != std::vector<RecomputeKind> {RecomputeKind::Modules})
        space.recompute = locks.recompute;
    if (!locks.schedule.empty()) {
        space.schedules.clear();
        space.vpp_interleaved.clear();
        for (const auto s : locks.schedule) {
            if (s == ScheduleKind::Interleaved1F1B)
                space.vpp_interleaved = {2, 4};
            else
                space.schedules.push_back(s);
        }
    }
}

int blockCount(const CostModel& model)
{
    int blocks = 0;
    for (const auto& layer : model.layers())
        blocks += layer.kind == LayerKind::Block ? 1 : 0;
    return blocks > 0 ? blocks : static_cast<int>(model.layers().size());
}

} // namespace

SearchSpace buildSearchSpace(const CostModel& model, const PlannerConfig& config, int world, int gpusPerNode,
                             std::int64_t globalBatch)
{
    SearchSpace space;
    space.world = world;
    space.gpus_per_node = gpusPerNode;
    space.global_batch = globalBatch;
    const ModelGraph& graph = model.graph();
    const PlanMethod method = config.method;
    const bool dataOnly = method == PlanMethod::Data || method == PlanMethod::Zero2 || method == PlanMethod::Zero3;

    // Tensor parallelism stays inside a node (its collectives are on the critical path of every layer).
    for (const int tp : powersOfTwoUpTo(dataOnly ? 1 : std::min(gpusPerNode, world))) {
        if (graph.transformer) {
            const auto& t = *graph.transformer;
            if (t.num_heads % tp || t.num_kv_heads % tp || t.ffn_hidden % tp)
                continue;
        }
        space.tp.push_back(tp);
    }
    // Context parallelism pays off only for long sequences: keep chunks of at least 4k tokens. Its bound grows with
    // the sequence ("auto"): a 1M-token sequence needs cp 32 to fit an 8B model's activations on 80 GB.
    int longSequenceCp = 1;
    while (longSequenceCp < 64 && 2 * longSequenceCp <= graph.seq_len / 32768)
        longSequenceCp *= 2;
    const int maxCp = config.max_cp > 0 ? config.max_cp : std::max(8, longSequenceCp);
    for (const int cp : powersOfTwoUpTo(dataOnly ? 1 : maxCp))
        if (cp == 1 || (graph.seq_len % (2 * cp) == 0 && graph.seq_len / cp >= 4096))
            space.cp.push_back(cp);

    const int layers = static_cast<int>(model.layers().size());
    if (config.pipeline_nstages > 0) {
        space.pp = {config.pipeline_nstages};
    } else if (dataOnly || method == PlanMethod::Shard) {
        space.pp = {1};
    } else {
        space.pp = divisorsOf(world, layers);
        if (method == PlanMethod::PipeShard)
            space.pp.erase(std::remove(space.pp.begin(), space.pp.end(), 1), space.pp.end());
    }
    if (config.micro_batch_size > 0)
        space.micro_batch = {config.micro_batch_size};
    else
        space.micro_batch = powersOfTwoUpTo(64);

    if (config.zero_stage >= 0)
        space.zero = {config.zero_stage};
    else if (method == PlanMethod::Data)
        space.zero = {0};
    else if (method == PlanMethod::Zero2)
        space.zero = {2};
    else if (method == PlanMethod::Zero3)
        space.zero = {3};
    else
        space.zero = {0, 1, 2, 3};

    if (!config.recompute_modules.empty()) {
        space.recompute = {RecomputeKind::Modules};
        space.recompute_modules = config.recompute_modules;
    } else {
        // Selective recomputation drops the s^2 attention scores; a flash-attention model stores none, so there
        // it would cost time and save nothing.
        if (graph.transformer && graph.transformer->flash_attention)
            space.recompute = {RecomputeKind::None, RecomputeKind::Full};
        else
            space.recompute = {RecomputeKind::None, RecomputeKind::Selective, RecomputeKind::Full};
    }

    if (config.pipeline_scheduler == "auto") {
        // The V schedules (two chunks per rank) are searched when asked for by name: few jobs run them yet.
        space.schedules = {ScheduleKind::OneFOneB, ScheduleKind::ZeroBubbleH1};
        space.vpp_interleaved = {2, 4};
    } else {
        const ScheduleKind fixedSchedule = *parseSchedule(config.pipeline_scheduler);
        if (fixedSchedule == ScheduleKind::Interleaved1F1B)
            space.vpp_interleaved = {2, 4, 8};
        else
            space.schedules = {fixedSchedule};
    }

    if (graph.transformer && graph.transformer->num_experts > 1)
        space.ep = divisorsOf(static_cast<int>(graph.transformer->num_experts), world);
    else
        space.ep = {1};

    applyLocks(space, config.locks, graph, world, layers);
    applyFramework(space, config);
    if (config.locks.any()
        && (space.tp.empty() || space.pp.empty() || space.cp.empty() || space.zero.empty() || space.micro_batch.empty()
            || space.ep.empty()))
        throw InputError(
            cat("the locks (", config.locks.describe(), ") leave nothing to search for ", graph.name, " on ", world,
                " GPUs: a locked value does not divide the model or the cluster"),
            "release or change a lock (tp must divide the heads and the world, cp the sequence into 2 x cp "
            "chunks, pp the world and the layers)");
    if (space.tp.empty() || space.pp.empty() || space.zero.empty())
        throw InputError(
            cat("the planner has nothing to search for ", graph.name, " on ", world, " GPUs",
                space.framework_limits.empty()
                    ? std::string()
                    : cat(" (", frameworkName(config.framework), ": ", join(space.framework_limits, "; "), ")")),
            space.framework_limits.empty() ? "relax pipeline_nstages, --method or the mesh size"
                                           : "relax pipeline_nstages, --method or the mesh size, or choose another "
                                             "framework (--framework generic runs everything)");
    return space;
}

std::vector<ParallelConfig> enumerateCandidates(const CostModel& model, const SearchSpace& space,
                                                const PlannerConfig& config, std::uint64_t* frameworkSkipped)
{
    std::vector<ParallelConfig> out;
    std::uint64_t skipped = 0;
    const bool restricted = config.framework != Framework::Generic;
    const FrameworkProfile& profile = frameworkProfile(config.framework);
    const int blocks = blockCount(model);
    const int layers = static_cast<int>(model.layers().size());
    const bool sharedExpert = model.graph().transformer && model.graph().transformer->shared_expert_ffn > 0;
    for (const int tp : space.tp) {
        for (const int cp : space.cp) {
            for (const int pp : space.pp) {
                if (space.world % (tp * cp * pp))
                    continue;
                const int dp = space.world / (tp * cp * pp);
                // MoE: the experts split by tp, or whole on each rank (etp 1, Megatron's advice for fine-grained
                // experts), when tp > 1 with sequence parallelism; ep x etp folds over tp x cp x dp.
                std::vector<std::pair<int, int>> expertGrids;
                std::vector<int> expertTps {tp};
                if (tp > 1 && space.ep.size() > 1)
                    expertTps.push_back(1);
                if (!config.locks.dp.empty() && !contains(config.locks.dp, dp))
                    continue;
                for (const int ep : space.ep)
                    for (const int etp : expertTps)
                        if ((tp * cp * dp) % (ep * etp) == 0)
                            expertGrids.emplace_back(ep, etp);
                for (const auto& [ep, etp] : expertGrids) {
                    // Any divisor of the per-replica batch is a valid micro-batch (not only powers of two).
                    std::vector<int> microBatches = space.micro_batch;
                    if (microBatches.size() > 1 && config.locks.micro_batch.empty() && space.global_batch % dp == 0) {
                        const std::int64_t perReplica = space.global_batch / dp;
                        microBatches.clear();
                        for (int mb = 1; mb <= 64 && mb <= perReplica; ++mb)
                            if (perReplica % mb == 0)
                                microBatches.push_back(mb);
                    }
                    for (const int mb : microBatches) {
                        if (space.global_batch % (static_cast<std::int64_t>(dp) * mb))
                            continue;
                        const auto m = static_cast<int>(space.global_batch / (static_cast<std::int64_t>(dp) * mb));
                        if (config.update_freq > 0 && m != config.update_freq)
                            continue;
                        // Pipelines: plain chunks with each allowed schedule, and interleaved chunks.
                        std::vector<std::pair<ScheduleKind, int>> pipelines;
                        if (pp == 1) {
                            pipelines.emplace_back(ScheduleKind::OneFOneB, 1);
                        } else {
                            for (const auto schedule : space.schedules) {
                                if (!isVShaped(schedule))
                                    pipelines.emplace_back(schedule, 1);
                                else if (m >= 2 * pp && 2 * pp <= layers) // two chunks per rank in a V
                                    pipelines.emplace_back(schedule, 2);
                            }
                            // Every interleaving depth that splits the blocks of a stage evenly, as the published
                            // configurations choose them (vpp 5 for 80 layers on 4 stages).
                            if (!space.vpp_interleaved.empty() && m % pp == 0 && blocks % pp == 0)
                                for (int v = 2; v <= blocks / pp; ++v)
                                    if ((blocks / pp) % v == 0 && pp * v <= layers)
                                        pipelines.emplace_back(ScheduleKind::Interleaved1F1B, v);
                        }
                        if (!config.locks.vpp.empty())
                            std::erase_if(pipelines,
                                          [&](const auto& p) { return !contains(config.locks.vpp, p.second); });
                        for (const auto& [schedule, vpp] : pipelines) {
                            for (const int zero : space.zero) {
                                for (const auto recompute : space.recompute) {
                                    ParallelConfig c;
                                    c.tp = tp;
                                    c.cp = cp;
                                    c.pp = pp;
                                    c.dp = dp;
                                    c.ep = ep;
                                    c.etp = etp == tp ? 0 : etp;
                                    c.vpp = vpp;
                                    c.micro_batch = mb;
                                    c.num_microbatches = m;
                                    c.zero_stage = zero;
                                    c.zero_ngroups = (dp * cp) % config.zero_ngroups == 0 ? config.zero_ngroups : 1;
                                    c.sequence_parallel = tp > 1;
                                    c.tp_comm_overlap = config.tp_comm_overlap && c.sequence_parallel;
                                    c.overlap_param_gather = config.overlap_param_gather && (zero == 1 || zero == 2);
                                    c.moe_a2a_overlap = config.moe_a2a_overlap && c.ep > 1 && m >= 2
                                        && (pp == 1 || schedule == ScheduleKind::Interleaved1F1B);
                                    c.moe_shared_expert_overlap = config.moe_shared_expert_overlap && sharedExpert
                                        && c.ep > 1 && !c.moe_a2a_overlap;
                                    c.moe_capacity_factor = config.moe_capacity_factor;
                                    c.moe_router_imbalance = config.moe_router_imbalance;
                                    c.fp8_linears = config.fp8_linears;
                                    c.fp8_recipe = config.fp8_recipe;
                                    c.fp8_bf16_first_layers = config.fp8_bf16_first_layers;
                                    c.fp8_bf16_last_layers = config.fp8_bf16_last_layers;
                                    c.grad_reduce_bf16 = config.grad_reduce_bf16;
                                    c.fp8_param_gather = config.fp8_linears && config.fp8_param_gather && zero >= 1
                                        && profile.fp8_weight_cache;
                                    c.eager_kernels = config.eager_kernels;
                                    c.recompute = recompute;
                                    c.recompute_modules = space.recompute_modules;
                                    c.schedule = schedule;
                                    c.framework = config.framework;
                                    c.framework_version = config.framework_version;
                                    // The dimensions are pruned already (applyFramework); what is left are
                                    // combinations such as DeepSpeed's pipeline with ZeRO-2/3.
                                    if (restricted && !frameworkRestriction(profile, c).empty()) {
                                        ++skipped;
                                        continue;
                                    }
                                    out.push_back(std::move(c));
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    if (frameworkSkipped)
        *frameworkSkipped = skipped;
    return out;
}

} // namespace shardscape
