// SPDX-License-Identifier: MIT
// is_train false: every tp x pp x dp (x ep) shape that uses the cluster, each costed by estimateServing.
#include "shardscape/search/serving_planner.h"

#include "shardscape/support/error.h"
#include "shardscape/support/strings.h"
#include "shardscape/support/units.h"

#include <algorithm>
#include <chrono>

namespace shardscape {

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start)
{
    return std::chrono::duration<double>(Clock::now() - start).count();
}

std::vector<int> divisorsOf(int n)
{
    std::vector<int> out;
    for (int d = 1; d <= n; ++d)
        if (n % d == 0)
            out.push_back(d);
    return out;
}

/** Candidate shapes: tp a power of two inside a node (or spanning whole nodes), pp and dp the rest. */
std::vector<ServingParallel> servingShapes(const ServingModel& model, const Cluster& cluster,
                                           const PlannerConfig& config)
{
    std::vector<ServingParallel> shapes;
    const int world = cluster.worldSize();
    for (int tp = 1; tp <= world; tp *= 2) {
        if (world % tp != 0)
            continue;
        for (const int pp : divisorsOf(world / tp)) {
            if (config.pipeline_nstages > 0 && pp != config.pipeline_nstages)
                continue;
            if (static_cast<std::size_t>(pp) > model.layers.size())
                continue;
            const int dp = world / tp / pp;
            shapes.push_back({tp, pp, 1, dp});
            if (model.isMoe() && tp * dp > 1)
                shapes.push_back({tp, pp, tp * dp, dp});
        }
    }
    return shapes;
}

bool better(const ServingEstimate& a, const ServingEstimate& b)
{
    if (a.output_tokens_per_s != b.output_tokens_per_s)
        return a.output_tokens_per_s > b.output_tokens_per_s;
    if (a.tpot_s != b.tpot_s)
        return a.tpot_s < b.tpot_s;
    return a.parallel.tp < b.parallel.tp;
}

std::string ms(double seconds)
{
    return fixed(seconds * 1e3, 1) + " ms";
}

std::vector<std::string> explain(const ServingPlanResult& r, const ServingRequest& request)
{
    std::vector<std::string> lines;
    if (r.top.empty())
        return lines;
    const ServingEstimate& best = r.top.front();
    lines.push_back(cat(best.parallel.describe(), " serves ", siCount(best.output_tokens_per_s, 1),
                        " output tokens/s at ", best.concurrency, " requests in flight (TTFT ", ms(best.ttft_s),
                        ", TPOT ", ms(best.tpot_s), "); the KV pool holds ", best.max_concurrency, " sequences of ",
                        request.contextLen(), " tokens."));
    if (r.top.size() > 1) {
        const ServingEstimate& next = r.top[1];
        lines.push_back(cat("Runner-up ", next.parallel.describe(), ": ", siCount(next.output_tokens_per_s, 1),
                            " tokens/s at ", next.concurrency, " requests (TPOT ", ms(next.tpot_s),
                            ", max concurrency ", next.max_concurrency, ")."));
    }
    const auto faster = std::find_if(r.infeasible.begin(), r.infeasible.end(), [&best](const ServingEstimate& e) {
        return e.max_concurrency > 0 && e.concurrency > 0 && e.output_tokens_per_s > best.output_tokens_per_s;
    });
    if (faster != r.infeasible.end())
        lines.push_back(cat(faster->parallel.describe(), " would serve more (", siCount(faster->output_tokens_per_s, 1),
                            " tokens/s) but is out: ", faster->reason, "."));
    return lines;
}

} // namespace

std::string servingConfigLine(const ServingEstimate& e)
{
    const ServingRequest& r = e.request;
    return cat("num_stages : ", e.parallel.pp, ", TP ", e.parallel.tp, ", DP ", e.parallel.dp, ", EP ", e.parallel.ep,
               ", train : false, concurrency : ", e.concurrency, ", input_len : ", r.input_len,
               ", output_len : ", r.output_len, ", weight_dtype : ", weightFormatName(r.weight_format),
               ", kv_cache_dtype : ", dtypeName(r.kv_dtype), ", framework : ", servingFrameworkName(r.framework));
}

ServingPlanResult planServing(const ModelGraph& graph, const Cluster& cluster, const PlannerConfig& config,
                              ProgressSink& progress, std::stop_token stop)
{
    const auto start = Clock::now();
    config.validate();
    ServingPlanResult result;
    result.model_name = graph.name;
    result.cluster = cluster;
    const auto log = [&](std::string line) {
        progress.log(line);
        result.log.push_back(std::move(line));
    };
    const ServingModel model = ServingModel::fromGraph(graph);
    ServingRequest request = config.servingRequest();
    if (!config.consider_mem)
        request.memory_limit_bytes = 1e30;
    request.validate();
    CostParams params;
    std::vector<std::string> profileNotes;
    const auto source = plannerCostSource(cluster, params, config,
                                          [&](std::string line) { profileNotes.push_back(std::move(line)); });
    for (auto& line : profileNotes)
        log(std::move(line));
    log(cat("train : false, serving ", graph.name, " on ", cluster.nodes, " x ", cluster.gpus_per_node, " ",
            cluster.device.name, " with ", servingFrameworkName(request.framework), ": ", request.input_len, " in / ",
            request.output_len, " out, concurrency ",
            request.concurrency == 0 ? std::string("max") : cat(request.concurrency), ", weights ",
            weightFormatName(request.weight_format), ", KV cache ", dtypeName(request.kv_dtype)));

    const std::vector<ServingParallel> shapes = servingShapes(model, cluster, config);
    result.counts.candidates_total = shapes.size();
    result.counts.enumerate_s = secondsSince(start);
    log(cat("number of candidates : ", shapes.size()));
    std::vector<ServingEstimate> feasible;
    std::vector<ServingEstimate> rejected;
    for (std::size_t i = 0; i < shapes.size(); ++i) {
        if (stop.stop_requested()) {
            result.cancelled = true;
            log("search cancelled");
            return result;
        }
        progress.progress("costing", i, shapes.size());
        ServingEstimate e = estimateServing(model, cluster, *source, params, shapes[i], request);
        (e.feasible ? feasible : rejected).push_back(std::move(e));
    }
    result.counts.candidates_feasible = feasible.size();
    result.counts.cost_s = secondsSince(start) - result.counts.enumerate_s;
    std::sort(feasible.begin(), feasible.end(), better);
    std::sort(rejected.begin(), rejected.end(), [](const ServingEstimate& a, const ServingEstimate& b) {
        if (a.max_concurrency != b.max_concurrency)
            return a.max_concurrency > b.max_concurrency;
        return better(a, b);
    });
    const auto topk = static_cast<std::size_t>(std::max(1, config.topk));
    if (feasible.size() > topk)
        feasible.resize(topk);
    if (rejected.size() > topk)
        rejected.resize(topk);
    result.top = std::move(feasible);
    result.infeasible = std::move(rejected);
    log(cat("number of feasible candidates : ", result.counts.candidates_feasible));
    if (!result.top.empty())
        log("selected configuration : " + servingConfigLine(result.top.front()));
    else if (!result.infeasible.empty())
        log("no deployment serves this request: " + result.infeasible.front().reason);
    result.explanation = explain(result, request);
    result.counts.elapsed_s = secondsSince(start);
    log(cat("elapsed time to plan : ", fixed(result.counts.elapsed_s, 3), " s"));
    progress.progress("done", 1, 1);
    return result;
}

} // namespace shardscape
