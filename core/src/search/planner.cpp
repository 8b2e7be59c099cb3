// SPDX-License-Identifier: MIT
// The search engine: enumerate, partition, cost in parallel with closed-form estimates, then simulate a
// shortlist with the event simulator and keep the top k. Deterministic: every sort breaks ties by the
// candidate's enumeration index, never by thread timing.
#include "shardscape/search/planner.h"

#include "shardscape/model/layer_construction.h"
#include "shardscape/search/candidate_space.h"
#include "shardscape/search/explain.h"
#include "shardscape/search/stage_partition.h"
#include "shardscape/search/tp_annotation.h"
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

/** A candidate after the fast pass. */
struct Scored
{
    std::size_t index = 0;
    Evaluation estimate;
    bool pruned = false; ///< dropped by a pipeline rule (bubble, balance), not by memory
};

bool faster(const Scored& a, const Scored& b)
{
    if (a.estimate.step_time != b.estimate.step_time)
        return a.estimate.step_time < b.estimate.step_time;
    return a.index < b.index;
}

/** The ranking: every plan whose memory fits (its peak range's high end, with the headroom, under the limit) before
    every tight one, then the shorter step; "likely" out-of-memory plans are infeasible and never ranked. */
bool better(const Scored& a, const Scored& b)
{
    const bool aTight = a.estimate.oom_risk != OomRisk::Fits;
    const bool bTight = b.estimate.oom_risk != OomRisk::Fits;
    if (aTight != bTight)
        return bTight;
    return faster(a, b);
}

std::vector<bool> pivotsFor(const CostModel& model, const std::vector<std::string>& pivots)
{
    const auto& layers = model.layers();
    std::vector<bool> mayStart(layers.size(), pivots.empty());
    mayStart[0] = true;
    for (std::size_t i = 0; i < layers.size(); ++i)
        for (const auto& pivot : pivots)
            if (layers[i].name == pivot || endsWith(layers[i].name, "." + pivot)
                || startsWith(layers[i].name, pivot + "."))
                mayStart[i] = true;
    return mayStart;
}

int inflightOf(ScheduleKind schedule, int stage, int stages, int microbatches)
{
    switch (schedule) {
    case ScheduleKind::GPipe:
        return microbatches;
    case ScheduleKind::ZeroBubbleH1:
        return std::min(microbatches, stages);
    case ScheduleKind::ZeroBubbleV: // two chunks per rank: the partitioner does not split V pipelines
    case ScheduleKind::DualPipeV:
    case ScheduleKind::DualPipe:
    case ScheduleKind::OneFOneB:
    case ScheduleKind::Interleaved1F1B:
        break;
    }
    return std::min(microbatches, stages - stage);
}

/** The bubble (Evaluation::bubble_ratio: the pipeline's idle share of the step) of uniform stages, from the idle /
    busy ratio r of the schedule: r / (1 + r); (p-1)/(m+p-1) for 1F1B and GPipe, as AutoDist bounds it. */
double closedFormBubble(const ParallelConfig& c)
{
    const double idleOverBusy = static_cast<double>(c.pp - 1) / (static_cast<double>(c.vpp) * c.num_microbatches);
    double r = idleOverBusy;
    // With F = B = W: ZB-H1 and ZB-V idle for one F per stage, DualPipeV for two (tst_sim's closed forms).
    switch (c.schedule) {
    case ScheduleKind::ZeroBubbleH1:
    case ScheduleKind::ZeroBubbleV:
        r = idleOverBusy / 3;
        break;
    case ScheduleKind::DualPipeV:
        r = idleOverBusy * 2 / 3;
        break;
    case ScheduleKind::DualPipe:
        // (p / 2 - 1) x 2F idle over a busy time of 3F per micro-batch (tst_sim's closed form).
        r = static_cast<double>(c.pp - 2) / (3.0 * c.num_microbatches);
        break;
    default:
        break;
    }
    return r / (1 + r);
}

struct Context
{
    const CostModel& model;
    const PlannerConfig& config;
    const Workload& workload;
    std::vector<bool> mayStart;
};

/** Partitions (when pipelined), prunes and estimates one candidate. */
Scored scoreCandidate(const Context& ctx, std::size_t index, ParallelConfig c)
{
    Scored s;
    s.index = index;
    if (c.pp > 1 && closedFormBubble(c) > ctx.config.max_pipeline_bubble_ratio) {
        s.pruned = true;
        s.estimate.config = c;
        s.estimate.reason = cat("pipeline bubble ", fixed(closedFormBubble(c), 2), " over max_pipeline_bubble_ratio ",
                                fixed(ctx.config.max_pipeline_bubble_ratio, 2));
        return s;
    }
    const bool pivoted = std::find(ctx.mayStart.begin(), ctx.mayStart.end(), false) != ctx.mayStart.end();
    // The layers' times and bytes under this configuration, where stages may start.
    const auto layersOf = [&] {
        const auto profile = ctx.model.layerProfile(c);
        PartitionInput in;
        in.time = profile.time;
        in.static_bytes = profile.static_bytes;
        in.stash_bytes = profile.stash_bytes;
        in.transient_bytes = profile.transient_bytes;
        in.may_start = ctx.mayStart;
        return in;
    };
    if (c.pp > 1 && c.vpp == 1) {
        PartitionInput in = layersOf();
        // The partitioner sums allocated bytes: the runtime sits beside them, the allocator's slack scales them.
        const double slack = ctx.model.fragmentationFactor(c);
        in.fixed_bytes = ctx.model.runtimeBytes(c) / slack;
        in.memory_limit = ctx.workload.memory_limit_bytes / slack;
        in.stages = c.pp;
        for (int stage = 0; stage < c.pp; ++stage)
            in.inflight.push_back(inflightOf(c.schedule, stage, c.pp, c.num_microbatches));
        PartitionResult part = partitionStages(in);
        if (!part.feasible && in.memory_limit > 0) {
            // Nothing fits: split for time alone, so the estimate can still report the memory it needs.
            in.memory_limit = 0;
            part = partitionStages(in);
        }
        if (part.feasible) {
            c.stage_layers = part.counts;
            if (part.max_stage_time > 0
                && part.min_stage_time / part.max_stage_time < ctx.config.max_pipeline_unbalance_ratio) {
                s.pruned = true;
                s.estimate.config = c;
                s.estimate.reason
                    = cat("stages unbalanced: fastest/slowest = ", fixed(part.min_stage_time / part.max_stage_time, 2),
                          " under max_pipeline_unbalance_ratio ", fixed(ctx.config.max_pipeline_unbalance_ratio, 2));
                return s;
            }
        } else if (pivoted) {
            s.estimate.config = c;
            s.estimate.reason = part.reason;
            return s;
        }
    } else if (c.pp > 1 && pivoted) {
        // Several chunks per rank (interleaved, V schedules, DualPipe): the chunks in virtual-stage order may start
        // only at pivots too. Split them for time at the pivots and pin that split; the estimate checks memory.
        PartitionInput in = layersOf();
        in.stages = c.schedule == ScheduleKind::DualPipe ? c.pp : c.pp * c.vpp;
        in.inflight.assign(static_cast<std::size_t>(in.stages), 1);
        const PartitionResult part = partitionStages(in);
        if (!part.feasible) {
            s.estimate.config = c;
            s.estimate.reason = cat(part.reason, " (", scheduleName(c.schedule), " with ", in.stages,
                                    " model chunks must start each chunk at a pivot)");
            return s;
        }
        c.stage_layers = part.counts;
    }
    s.estimate = ctx.model.estimate(c, ctx.workload);
    return s;
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
    const std::size_t shortlist = std::min(feasible.size(), std::max<std::size_t>(4 * config.topk, 32));
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

std::shared_ptr<const ModelGraph> withShardingRoles(std::shared_ptr<const ModelGraph> graph,
                                                    const std::vector<Layer>& layers, const Cluster& cluster,
                                                    const CostParams& params, const PlannerConfig& config,
                                                    std::string* note)
{
    if (hasTensorParallelRoles(*graph) || cluster.gpus_per_node < 2)
        return graph;
    ShardingOptions options;
    options.tp = 1;
    while (options.tp * 2 <= std::min(cluster.gpus_per_node, 8))
        options.tp *= 2;
    options.solver = config.solver;
    options.memory_granularity = config.memory_granularity;
    options.ignore_small_tensor_threshold = config.ignore_small_tensor_threshold;
    options.param_memory_factor = 2 + config.opt_resident_coef;
    if (!config.partition_constraints_path.empty())
        options.constraints = loadPartitionConstraints(config.partition_constraints_path);
    const auto source = makeDatasheetCostSource(cluster, params);
    TpAnnotationReport report;
    auto annotated
        = std::make_shared<const ModelGraph>(annotateTensorParallel(*graph, layers, *source, options, &report));
    if (note) {
        *note = cat("no tensor-parallel roles in the graph: the intra-op solver (", report.solver, ") split it at tp ",
                    report.tp, ": ", report.column, " column, ", report.row, " row, ", report.heads, " heads, ",
                    report.local, " local, ", report.replicated, " replicated ops");
        for (const auto& warning : report.warnings)
            *note += "; " + warning;
    }
    return annotated;
}

std::vector<Layer> planningLayers(const ModelGraph& graph, const PlannerConfig& config, std::string* note)
{
    if (config.layer_num > 0) {
        auto layers = constructLayers(graph, config.layer_num);
        if (note)
            *note = cat("automatic layer construction: ", layers.size(), " layers (layer_num ", config.layer_num, ")");
        return layers;
    }
    try {
        return layersByModule(graph);
    } catch (const InputError&) {
        const int count = static_cast<int>(std::min<std::size_t>(graph.ops().size(), 32));
        if (note)
            *note = cat("no repeated blocks in the module paths: automatic layer construction into ", count, " layers");
        return constructLayers(graph, count);
    }
}

ProfileRequest profileRequestOf(const PlannerConfig& config)
{
    ProfileRequest request;
    request.profile_dir = config.profile_dir;
    request.use_profile = config.use_profile;
    request.re_profile = config.re_profile;
    request.parallel_profile = config.parallel_profile;
    return request;
}

std::shared_ptr<const CostSource> plannerCostSource(const Cluster& cluster, CostParams& params,
                                                    const PlannerConfig& config,
                                                    const std::function<void(std::string)>& log)
{
    const CostSourceChoice choice = chooseCostSource(cluster, params, profileRequestOf(config));
    params.calibrated_memory_bytes = choice.calibrated_memory_bytes;
    for (const auto& note : choice.profile.notes)
        log("profile: " + note);
    return choice.source;
}

std::string selectedConfigLine(const Evaluation& e)
{
    const ParallelConfig& c = e.config;
    const int recomputation = c.recompute == RecomputeKind::None ? 0
        : c.recompute == RecomputeKind::Selective                ? 1
        : c.recompute == RecomputeKind::Full                     ? 2
                                                                 : 3;
    std::string layers;
    for (const int n : e.chunkLayers())
        layers += cat(layers.empty() ? "" : " ", n);
    return cat(
        "num_stages : ", c.pp, ", num_micro_batches : ", c.num_microbatches, ", batch_per_device : ", c.micro_batch,
        ", TP ", c.tp, ", DP ", c.dp, ", CP ", c.cp, ", EP ", c.ep, ", VPP ", c.vpp,
        ", recomputation : ", recomputation, ", distribute_param : ", c.zero_stage >= 3 ? "true" : "false",
        ", distribute_grad : ", c.zero_stage >= 2 ? "true" : "false",
        ", distribute_optimizer : ", c.zero_stage >= 1 ? "true" : "false",
        ", sequence_parallel : ", c.sequence_parallel ? "true" : "false",
        ", schedule : ", scheduleName(c.pp > 1 ? c.schedule : ScheduleKind::OneFOneB), ", stage_layers : [", layers,
        "]", c.framework != Framework::Generic ? cat(", framework : ", frameworkName(c.framework)) : std::string());
}

} // namespace shardscape
