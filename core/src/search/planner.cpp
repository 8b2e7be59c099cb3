// SPDX-License-Identifier: MIT
// The search engine: enumerate, partition, cost in parallel with closed-form estimates, then simulate a
// shortlist with the event simulator and keep the top k. Deterministic: every sort breaks ties by the
// candidate's enumeration index, never by thread timing.
#include "shardscape/search/planner.h"

#include "candidate_scoring.h"
#include "partial_recompute.h"

#include "shardscape/search/candidate_space.h"
#include "shardscape/search/explain.h"
#include "shardscape/support/error.h"
#include "shardscape/support/strings.h"
#include "shardscape/support/tsan_annotations.h"
#include "shardscape/support/units.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <mutex>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

namespace shardscape {

namespace {

using Clock = std::chrono::steady_clock;
double secondsSince(Clock::time_point start)
{
    return std::chrono::duration<double>(Clock::now() - start).count();
}

/**
 * Throttled, thread-safe progress: only the thread that crosses the next 0.1% step reports, and reports are
 * serialised, so a sink sees one call at a time (two workers can cross consecutive steps at once).
 */
class ProgressCounter
{
public:
    ProgressCounter(ProgressSink& sink, std::string phase, std::uint64_t total)
        : m_sink(sink)
        , m_phase(std::move(phase))
        , m_total(total)
        , m_step(std::max<std::uint64_t>(1, total / 1000))
    {
        m_sink.progress(m_phase, 0, m_total);
    }
    void advance()
    {
        const std::uint64_t done = ++m_done;
        std::uint64_t next = m_next.load();
        if (done >= next && m_next.compare_exchange_strong(next, done + m_step)) {
            const std::lock_guard lock(m_sinkMutex);
            m_sink.progress(m_phase, done, m_total);
        }
    }
    void finish() { m_sink.progress(m_phase, m_total, m_total); }

private:
    ProgressSink& m_sink;
    std::string m_phase;
    std::uint64_t m_total;
    std::uint64_t m_step;
    std::atomic<std::uint64_t> m_done {0};
    std::atomic<std::uint64_t> m_next {0};
    std::mutex m_sinkMutex;
};

/** tbb::parallel_for, with the fork and join that oneTBB guarantees made visible to ThreadSanitizer. */
template<typename Body> void parallelFor(std::size_t count, std::size_t grain, Body body)
{
    const char join = 0;
    const TsanForkJoinBody annotated(std::move(body), &join);
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, count, grain), annotated);
    annotated.joined();
}

Cluster plannedCluster(const Problem& problem, const PlannerConfig& config)
{
    Cluster cluster = problem.cluster;
    if (config.mesh_row > 0)
        cluster.nodes = config.mesh_row;
    if (config.mesh_col > 0)
        cluster.gpus_per_node = config.mesh_col;
    if (config.world_size > 0 && config.world_size != cluster.worldSize())
        throw InputError(cat("world_size ", config.world_size, " does not match the cluster's ", cluster.nodes, " x ",
                             cluster.gpus_per_node, " = ", cluster.worldSize(), " GPUs"),
                         "set mesh_row/mesh_col to match, or drop world_size");
    return cluster;
}

} // namespace

namespace {

using namespace search_detail;

/** How many of the estimated candidates the event simulator checks: four per plan kept, at least 32. */
std::size_t shortlistSize(const PlannerConfig& config)
{
    return std::max<std::size_t>(4 * static_cast<std::size_t>(config.topk), 32);
}

/** Whether two enumerated candidates differ only in what they recompute. */
bool sameLayout(const ParallelConfig& a, const ParallelConfig& b)
{
    return a.tp == b.tp && a.pp == b.pp && a.dp == b.dp && a.cp == b.cp && a.ep == b.ep && a.etp == b.etp
        && a.vpp == b.vpp && a.micro_batch == b.micro_batch && a.num_microbatches == b.num_microbatches
        && a.zero_stage == b.zero_stage && a.schedule == b.schedule;
}

/**
 * Adds to `scored` (after the enumerated candidates, so ties keep the enumeration order) each fitting
 * full-recomputation candidate with the fewest blocks per chunk recomputed that still fits as well, when its twin
 * without recomputation does not and the variant could reach the `shortlist`: the step between the two that
 * Megatron's block method runs. Only where the framework runs that method and the search has both none and full to
 * choose from. Returns how many were added.
 */
std::size_t addPartialRecompute(const Context& ctx, const SearchSpace& space,
                                const std::vector<ParallelConfig>& candidates, std::vector<Scored>& scored,
                                std::size_t shortlist, tbb::task_arena& arena, const std::stop_token& stop)
{
    const auto has = [&](RecomputeKind kind) {
        return std::find(space.recompute.begin(), space.recompute.end(), kind) != space.recompute.end();
    };
    // Megatron's first blocks of each chunk, or torchtitan v0.2's every k-th block (main has per-op SAC only).
    const bool layerSac = ctx.config.framework == Framework::Torchtitan
        && resolveFrameworkVersion(Framework::Torchtitan, ctx.config.framework_version).value_or("") == "v0.2"
        && !ctx.config.framework_version.empty();
    if ((!frameworkProfile(ctx.config.framework).block_recompute && !layerSac) || !has(RecomputeKind::None)
        || !has(RecomputeKind::Full))
        return 0;
    if (ctx.model.blockIndices().empty())
        return 0;
    // A variant can only reach the shortlist if, with no recomputation time at all, it would rank above the
    // shortlist's last plan so far: the others are not worth their estimates.
    std::vector<const Scored*> ranked;
    for (const auto& s : scored)
        if (s.estimate.feasible)
            ranked.push_back(&s);
    const Scored* bar = nullptr;
    if (ranked.size() >= shortlist) {
        std::nth_element(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(shortlist - 1), ranked.end(),
                         [](const Scored* a, const Scored* b) { return better(*a, *b); });
        bar = ranked[shortlist - 1];
    }
    // Recomputation is the innermost loop of the enumeration: a candidate's twin without it sits just before it.
    std::vector<std::size_t> seeds;
    for (std::size_t i = 0; i < scored.size(); ++i) {
        const Evaluation& full = scored[i].estimate;
        if (scored[i].pruned || !full.feasible || candidates[i].recompute != RecomputeKind::Full)
            continue;
        if (bar) {
            // better()'s order, with the step the variant could at most reach.
            const bool tight = full.oom_risk != OomRisk::Fits;
            const bool barTight = bar->estimate.oom_risk != OomRisk::Fits;
            if (tight != barTight ? tight : full.step_time - full.time.recompute >= bar->estimate.step_time)
                continue;
        }
        const Evaluation* none = nullptr;
        for (std::size_t back = 1; back <= space.recompute.size() && back <= i; ++back)
            if (candidates[i - back].recompute == RecomputeKind::None
                && sameLayout(candidates[i - back], candidates[i]))
                none = &scored[i - back].estimate;
        const bool noneFitsAsWell
            = none && none->feasible && (none->oom_risk == OomRisk::Fits || full.oom_risk != OomRisk::Fits);
        if (!noneFitsAsWell)
            seeds.push_back(i);
    }
    std::vector<std::optional<Evaluation>> found(seeds.size());
    arena.execute([&] {
        parallelFor(seeds.size(), 4, [&](const tbb::blocked_range<std::size_t>& range) {
            for (std::size_t k = range.begin(); k != range.end(); ++k) {
                if (stop.stop_requested())
                    return;
                found[k] = layerSac ? sparsestLayerSac(ctx, scored[seeds[k]].estimate)
                                    : fewestRecomputedBlocks(ctx, scored[seeds[k]].estimate);
            }
        });
    });
    std::size_t added = 0;
    const std::size_t enumerated = scored.size();
    for (auto& evaluation : found) {
        if (!evaluation)
            continue;
        Scored s;
        s.index = enumerated + added++;
        s.estimate = std::move(*evaluation);
        scored.push_back(std::move(s));
    }
    return added;
}

PlanResult searchPlans(const Problem& problem, const PlannerConfig& config, ProgressSink& progress,
                       std::stop_token stop);

} // namespace

PlanResult plan(const Problem& problem, const PlannerConfig& config, ProgressSink& progress, std::stop_token stop)
{
    PlanResult result = searchPlans(problem, config, progress, stop);
    if (!result.top.empty() || result.cancelled || !config.locks.any() || !config.load_plan_path.empty())
        return result;
    // Nothing fits under the user's locks: say which one to release, with what that finds.
    for (const auto& name : config.locks.names()) {
        PlannerConfig relaxed = config;
        relaxed.locks = config.locks.without(name);
        NullProgress quiet;
        PlanResult r;
        try {
            r = searchPlans(problem, relaxed, quiet, stop);
        } catch (const InputError&) {
            continue; // the other locks leave nothing to search either
        }
        if (r.cancelled) {
            result.cancelled = true;
            return result;
        }
        if (!r.top.empty())
            result.lock_advice.push_back(cat("releasing the ", name, " lock finds ", r.top.front().config.describe(),
                                             " at ", fixed(r.top.front().step_time, 2), " s per step"));
    }
    if (result.lock_advice.empty())
        result.log.push_back(cat("no configuration fits under the locks (", config.locks.describe(),
                                 "), nor with any one of them released"));
    for (const auto& line : result.lock_advice)
        result.log.push_back(line);
    return result;
}

namespace {

PlanResult searchPlans(const Problem& problem, const PlannerConfig& config, ProgressSink& progress,
                       std::stop_token stop)
{
    const auto start = Clock::now();
    config.validate();
    if (!problem.graph)
        throw InputError("no model to plan", "load a model first");
    if (problem.global_batch < 1)
        throw InputError(cat("global batch must be at least 1 (got ", problem.global_batch, ")"));
    if (!config.is_train)
        throw InputError("is_train false plans a serving deployment, not a training step",
                         "plan it with planServing (the CLI's plan and the GUI's inference mode do)");
    // A framework without a model for this architecture runs none of the candidates (nor could they be exported).
    if (const std::string why = frameworkModelRestriction(config.framework, config.framework_version, *problem.graph);
        !why.empty())
        throw InputError(why, std::string(kModelRestrictionWayOut));

    const Cluster cluster = plannedCluster(problem, config);
    CostParams params;
    params.transient_mem_coef = config.transient_mem_coef;
    params.opt_resident_coef = config.opt_resident_coef;
    params.opt_transient_coef = config.opt_transient_coef;
    PlanResult result;
    std::string layerNote;
    std::vector<Layer> layers = planningLayers(*problem.graph, config, &layerNote);
    std::string shardingNote;
    const auto graph = withShardingRoles(problem.graph, layers, cluster, params, config, &shardingNote);
    std::vector<std::string> profileNotes;
    const auto source = plannerCostSource(cluster, params, config,
                                          [&](std::string line) { profileNotes.push_back(std::move(line)); });
    auto model = std::make_shared<const CostModel>(graph, cluster, params, source, std::move(layers));
    result.model = model;

    Workload workload;
    workload.global_batch = problem.global_batch;
    workload.seq_len = problem.graph->seq_len;
    workload.memory_limit_bytes = !config.consider_mem ? 1e30
        : config.memory_constraint > 0                 ? config.memory_constraint * units::kGB
                                                       : cluster.device.memory_bytes;
    workload.min_memory_headroom_bytes = config.min_memory_headroom < 0 ? -1 : config.min_memory_headroom * units::kGB;
    result.memory_limit_bytes = config.consider_mem ? workload.memory_limit_bytes : 0;
    const auto log = [&](std::string line) {
        progress.log(line);
        result.log.push_back(std::move(line));
    };

    for (auto& line : profileNotes)
        log(std::move(line));
    if (!layerNote.empty())
        log(layerNote);
    if (!shardingNote.empty())
        log(shardingNote);

    // Phase 1: enumerate.
    progress.progress("enumerating", 0, 1);
    const SearchSpace space
        = buildSearchSpace(*model, config, cluster.worldSize(), cluster.gpus_per_node, problem.global_batch);
    std::uint64_t frameworkSkipped = 0;
    const std::vector<ParallelConfig> candidates = enumerateCandidates(*model, space, config, &frameworkSkipped);
    result.counts.candidates_total = candidates.size();
    result.framework_limits = space.framework_limits;
    result.counts.enumerate_s = secondsSince(start);
    if (config.verbose) {
        const auto list = [](const auto& values) {
            std::vector<std::string> text;
            for (const auto v : values)
                text.push_back(cat(v));
            return join(text, ",");
        };
        log(cat("search space : tp {", list(space.tp), "} cp {", list(space.cp), "} pp {", list(space.pp),
                "} micro-batch {", list(space.micro_batch), "} zero {", list(space.zero), "} ep {", list(space.ep),
                "} interleaved vpp {", list(space.vpp_interleaved), "}, ", space.recompute.size(),
                " recomputation modes, ", space.schedules.size(), " pipeline schedules"));
    }
    if (config.framework != Framework::Generic)
        log(cat("framework : ", frameworkName(config.framework), " (", frameworkProfile(config.framework).version, ")",
                space.framework_limits.empty()
                    ? std::string()
                    : cat("; search limited to what it runs: ", join(space.framework_limits, "; ")),
                frameworkSkipped > 0 ? cat("; ", frameworkSkipped, " combinations it cannot run skipped")
                                     : std::string()));
    log(cat("number of candidates : ", candidates.size()));
    log(cat("elapsed time to build candidates : ", fixed(result.counts.enumerate_s, 3), " s"));
    if (candidates.empty() && (frameworkSkipped > 0 || !space.framework_limits.empty()))
        throw InputError(cat("no parallel configuration of ", cluster.worldSize(), " GPUs that ",
                             frameworkName(config.framework), " runs (", join(space.framework_limits, "; "),
                             ") divides global batch ", problem.global_batch),
                         "choose another global batch or framework (--framework generic runs everything)");
    if (candidates.empty())
        throw InputError(cat("no parallel configuration of ", cluster.worldSize(), " GPUs divides global batch ",
                             problem.global_batch),
                         "choose a global batch divisible by the data-parallel degrees (e.g. a power of two)");

    // Phase 2: partition, prune and estimate every candidate in parallel.
    const Context ctx {*model, config, workload, pivotsFor(*model, config.pipeline_pivots)};
    std::vector<Scored> scored(candidates.size());
    tbb::task_arena arena(config.nproc > 0 ? config.nproc : tbb::task_arena::automatic);
    const auto costStart = Clock::now();
    {
        ProgressCounter counter(progress, "costing", candidates.size());
        arena.execute([&] {
            parallelFor(candidates.size(), 16, [&](const tbb::blocked_range<std::size_t>& range) {
                for (std::size_t i = range.begin(); i != range.end(); ++i) {
                    if (stop.stop_requested())
                        return;
                    scored[i] = scoreCandidate(ctx, i, candidates[i]);
                    counter.advance();
                }
            });
        });
        if (!stop.stop_requested())
            counter.finish();
    }
    if (stop.stop_requested()) {
        result.cancelled = true;
        result.counts.elapsed_s = secondsSince(start);
        log("search cancelled");
        return result;
    }

    const std::size_t partial = addPartialRecompute(ctx, space, candidates, scored, shortlistSize(config), arena, stop);
    result.counts.candidates_total += partial;
    if (partial > 0)
        log(cat("partial recomputation : ", partial,
                config.framework == Framework::Torchtitan
                    ? " candidates that fit only with full recomputation fit with every k-th block checkpointed "
                      "(torchtitan v0.2's selective_ac_option = \"k\")"
                    : " candidates that fit only with full recomputation fit with the first blocks of each chunk "
                      "recomputed (Megatron's --recompute-method block)"));

    std::vector<const Scored*> feasible;
    std::vector<const Scored*> infeasible;
    for (const auto& s : scored) {
        if (s.estimate.feasible)
            feasible.push_back(&s);
        else if (!s.pruned && !s.estimate.stages.empty())
            infeasible.push_back(&s);
    }
    result.counts.candidates_feasible = feasible.size();
    std::size_t pruned = 0, structural = 0;
    const Scored* firstPruned = nullptr;
    const Scored* firstStructural = nullptr;
    for (const auto& sc : scored) {
        pruned += sc.pruned ? 1 : 0;
        structural += !sc.pruned && sc.estimate.stages.empty() ? 1 : 0;
        if (sc.pruned && !firstPruned)
            firstPruned = &sc;
        if (!sc.pruned && sc.estimate.stages.empty() && !firstStructural)
            firstStructural = &sc;
    }
    if (config.verbose)
        log(cat("pruned by max_pipeline_bubble_ratio / max_pipeline_unbalance_ratio : ", pruned,
                ", invalid for the model : ", structural, ", over the memory limit : ", infeasible.size()));
    if (feasible.empty() && infeasible.empty() && !scored.empty()) {
        // Nothing reached the memory model: say which rule stopped them, not a peak that was never computed.
        std::vector<std::string> why;
        if (pruned)
            why.push_back(cat(pruned, " left the pipeline limits (e.g. ", firstPruned->estimate.config.describe(), ": ",
                              firstPruned->estimate.reason, ")"));
        if (structural)
            why.push_back(cat(structural, " do not split this model (e.g. ",
                              firstStructural->estimate.config.describe(), ": ", firstStructural->estimate.reason,
                              ")"));
        result.nothing_costed
            = cat("none of the ", scored.size(), " candidates could be costed: ", join(why, "; "),
                  pruned ? "; raise max_pipeline_bubble_ratio, give more sequences per step (--global-batch) or allow "
                           "more context parallelism (max_cp)"
                         : "");
    }
    result.counts.cost_s = secondsSince(costStart);
    log(cat("number of feasible candidates : ", feasible.size()));
    log(cat("elapsed time to cost candidates : ", fixed(result.counts.cost_s, 3), " s"));

    std::sort(infeasible.begin(), infeasible.end(), [](const Scored* a, const Scored* b) {
        const double ma = a->estimate.peakMemory(), mb = b->estimate.peakMemory();
        return ma != mb ? ma < mb : a->index < b->index;
    });
    for (std::size_t i = 0; i < infeasible.size() && i < 10; ++i)
        result.infeasible.push_back(infeasible[i]->estimate);
    if (!infeasible.empty())
        result.min_memory_needed = infeasible.front()->estimate.peakMemory();

    // Phase 3: simulate a shortlist with the event simulator and keep the top k, plans that fit before tight ones.
    std::sort(feasible.begin(), feasible.end(), [](const Scored* a, const Scored* b) { return better(*a, *b); });
    const std::size_t shortlist = std::min(feasible.size(), shortlistSize(config));
    std::vector<Scored> simulated(shortlist);
    {
        ProgressCounter counter(progress, "selecting", shortlist);
        arena.execute([&] {
            parallelFor(shortlist, 1, [&](const tbb::blocked_range<std::size_t>& range) {
                for (std::size_t i = range.begin(); i != range.end(); ++i) {
                    if (stop.stop_requested())
                        return;
                    simulated[i].index = feasible[i]->index;
                    simulated[i].estimate = model->evaluate(feasible[i]->estimate.config, workload, {}, stop);
                    counter.advance();
                }
            });
        });
    }
    if (stop.stop_requested()) {
        result.cancelled = true;
        result.counts.elapsed_s = secondsSince(start);
        log("search cancelled");
        return result;
    }
    result.counts.simulated = shortlist;
    // A simulated peak can exceed the estimate's (e.g. uneven chunks); only what truly fits is ranked.
    std::vector<Scored*> ranked;
    for (auto& s : simulated)
        if (s.estimate.feasible)
            ranked.push_back(&s);
    std::sort(ranked.begin(), ranked.end(), [](const Scored* a, const Scored* b) { return better(*a, *b); });
    for (std::size_t i = 0; i < ranked.size() && i < static_cast<std::size_t>(config.topk); ++i)
        result.top.push_back(ranked[i]->estimate);

    if (!result.top.empty()) {
        // Explain: the runner-up, and the best of each simpler family (simulated, so the numbers compare).
        std::vector<Evaluation> alternatives;
        const auto addBestOf = [&](auto member) {
            const Scored* best = nullptr;
            for (const auto& s : scored)
                if (!s.pruned && !s.estimate.stages.empty() && member(s.estimate.config)
                    && (!best || (s.estimate.feasible && !best->estimate.feasible)
                        || (s.estimate.feasible == best->estimate.feasible
                            && (s.estimate.feasible ? better(s, *best)
                                                    : s.estimate.peakMemory() < best->estimate.peakMemory()))))
                    best = &s;
            if (best)
                alternatives.push_back(best->estimate.feasible
                                           ? model->evaluate(best->estimate.config, workload, {}, stop)
                                           : best->estimate);
        };
        addBestOf([](const ParallelConfig& c) { return c.pp == 1; });
        addBestOf([](const ParallelConfig& c) { return c.tp == 1; });
        addBestOf([](const ParallelConfig& c) { return c.tp == 1 && c.pp == 1 && c.cp == 1; });
        addBestOf([](const ParallelConfig& c) { return c.recompute == RecomputeKind::None; });
        if (recomputesBlockIndices(result.top.front().config))
            addBestOf([](const ParallelConfig& c) { return c.recompute == RecomputeKind::Full; });
        addBestOf([](const ParallelConfig& c) { return c.zero_stage == 0; });
        result.explanation.lines
            = explainChoice(result.top.front(), result.top.size() > 1 ? &result.top[1] : nullptr, alternatives);
        log(cat("number of simulated candidates : ", shortlist));
        log("selected configuration : " + selectedConfigLine(result.top.front()));
    } else {
        log(cat("no configuration fits: ", whyNothingFits(result),
                result.framework_limits.empty() ? std::string()
                                                : cat(" (among what ", frameworkName(config.framework),
                                                      " runs: ", join(result.framework_limits, "; "), ")")));
    }
    result.counts.elapsed_s = secondsSince(start);
    log(cat("elapsed time to plan : ", fixed(result.counts.elapsed_s, 3), " s"));
    return result;
}

} // namespace

} // namespace shardscape
