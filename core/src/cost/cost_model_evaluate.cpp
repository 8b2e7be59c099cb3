// SPDX-License-Identifier: MIT
// From an assembled pipeline spec to an Evaluation: the event simulation (evaluate) or the closed-form estimate the
// planner ranks with (estimate), then memory per stage, throughput, utilisation and the time breakdown (finish).
#include "shardscape/cost/cost_model.h"

#include "memory_model.h"
#include "shardscape/cost/uncertainty.h"
#include "v_stage_split.h"

#include "shardscape/support/error.h"
#include "shardscape/support/strings.h"
#include "shardscape/support/units.h"

#include "cost_model_assembly.h"
#include <algorithm>
#include <functional>
#include <numeric>
#include <sstream>
#include <unordered_set>

namespace shardscape {

void CostModel::finish(Evaluation& e, const Assembly& a, const std::vector<double>& peakStash,
                       const std::vector<int>& inflight, double stepTime, double pipelineTime,
                       const std::vector<double>& busy) const
{
    const ParallelConfig& c = e.config;
    e.step_time = stepTime;

    // Per pipeline rank: memory at its peak and its share of the layers.
    e.stages.assign(static_cast<std::size_t>(c.pp), StageReport {});
    for (int r = 0; r < c.pp; ++r) {
        StageReport& report = e.stages[static_cast<std::size_t>(r)];
        report.devices = c.tp * c.cp * c.dp;
        report.first_layer = a.chunks[static_cast<std::size_t>(r)].first;
        double largest = 0;
        double working = 0;
        double largestLayerParams = 0;
        double shardedLayerPeak = 0;
        for (int ch = 0; ch < c.vpp; ++ch) {
            const int k = chunkStage(c.schedule, c.pp, r, ch);
            const auto& chunk = a.chunks[static_cast<std::size_t>(k)];
            const auto& stage = a.spec.stages[static_cast<std::size_t>(k)];
            report.chunks.emplace_back(chunk.first, chunk.last);
            report.last_layer = chunk.last;
            report.compute += stage.forward + stage.backward_input + stage.backward_weight;
            report.memory.weights += chunk.weights;
            report.memory.gradients += chunk.gradients;
            report.memory.optimizer += chunk.optimizer;
            largest = std::max(largest, chunk.largest);
            working = std::max(working, chunk.working);
            largestLayerParams = std::max(largestLayerParams, chunk.largestLayerParams);
            shardedLayerPeak = std::max(shardedLayerPeak, chunk.shardedDpLayerPeak);
        }
        // Per micro-batch of the step: under DualPipe each micro-batch passes one of the rank's two stages.
        report.compute *= static_cast<double>(chainMicrobatches(c.schedule, c.num_microbatches)) / c.num_microbatches;
        const FrameworkProfile& framework = frameworkOf(c);
        report.memory.activations = std::max(0.0, peakStash[static_cast<std::size_t>(r)]);
        // Under per-module sharding the worst layer's peak holds that layer's working set already.
        const double beside = perModuleShardedPeak(framework, c)
            ? shardedLayerPeak
            : working + shardedDpWorkingBytes(framework, c, largestLayerParams, dtypeBytes(m_graph->dtype));
        report.memory.transient = m_params.transient_mem_coef * largest + beside + fixedBufferBytes(framework, c);
        if (framework.gradients_freed_each_step && c.pp == 1 && c.num_microbatches == 1) {
            // Backward trades activations for gradients layer by layer (FrameworkProfile::gradients_freed_each_step):
            // it starts with the activations A and the working set T (the loss's, the recomputation's) and no
            // gradient, and ends with every gradient G and nothing else, so the peak is max(A + T, G). The
            // breakdown shows the gradients that are live at it.
            report.memory.gradients
                = std::max(0.0, report.memory.gradients - report.memory.activations - report.memory.transient);
        }
        // A negative calibration never takes the peak below what the model itself holds.
        report.memory.calibrated = std::max(m_params.calibrated_memory_bytes, -report.memory.allocated());
        addReserve(report.memory, framework, m_params, c);
        report.peak_inflight = inflight[static_cast<std::size_t>(r)];
    }

    // Throughput and utilisation.
    const double tokens = static_cast<double>(c.globalBatch()) * static_cast<double>(m_graph->seq_len);
    const double world = c.worldSize();
    const double modelFlops = m_flopsPerToken * tokens;
    double recomputeFlops = 0;
    for (const auto& chunk : a.chunks)
        recomputeFlops += chunk.recomputeModelFlops;
    // per micro-batch of one replica; under DualPipe each virtual stage sees half of them
    recomputeFlops *= static_cast<double>(chainMicrobatches(c.schedule, c.num_microbatches)) * c.dp;
    const double peak = m_cluster.device.peak(m_graph->dtype);
    e.tokens_per_s = tokens / e.step_time;
    e.tflops_per_gpu = modelFlops / e.step_time / world / units::kTera;
    e.mfu = modelFlops / (e.step_time * world * peak);
    e.hfu = (modelFlops + recomputeFlops) / (e.step_time * world * peak);

    // Where the time of the busiest rank goes.
    const auto busiest = static_cast<int>(std::max_element(busy.begin(), busy.end()) - busy.begin());
    double tpComm = 0, otherComm = 0, recompute = 0, shardedDp = 0;
    for (int ch = 0; ch < c.vpp; ++ch) {
        const int k = chunkStage(c.schedule, c.pp, busiest, ch);
        shardedDp += a.chunks[static_cast<std::size_t>(k)].shardedDpExposed.first
            + a.chunks[static_cast<std::size_t>(k)].shardedDpExposed.second;
        tpComm += a.chunks[static_cast<std::size_t>(k)].tpComm;
        otherComm += a.chunks[static_cast<std::size_t>(k)].otherComm;
        recompute += a.chunks[static_cast<std::size_t>(k)].recompute;
    }
    const double m = chainMicrobatches(c.schedule, c.num_microbatches); // through each of the rank's chunks
    e.time.tp_comm = tpComm * m;
    e.time.other_comm = otherComm * m;
    e.time.recompute = recompute * m;
    e.time.sharded_dp = shardedDp * m;
    e.time.compute = busy[static_cast<std::size_t>(busiest)] - e.time.tp_comm - e.time.other_comm - e.time.recompute
        - e.time.sharded_dp;
    e.time.pp_bubble = std::max(0.0, pipelineTime - busy[static_cast<std::size_t>(busiest)]);
    e.bubble_ratio = e.step_time > 0 ? e.time.pp_bubble / e.step_time : 0;
    e.time.optimizer = a.spec.optimizer_step;
    e.time.dp_exposed = std::max(0.0, stepTime - pipelineTime - a.spec.optimizer_step);

    // Feasible only when every stage fits; the reason names the worst stage.
    e.feasible = true;
    std::size_t worst = 0;
    for (std::size_t r = 1; r < e.stages.size(); ++r)
        if (e.stages[r].memory.total() > e.stages[worst].memory.total())
            worst = r;
    const auto& mem = e.stages[worst].memory;
    if (mem.total() > e.memory_limit_bytes) {
        e.feasible = false;
        e.reason = cat("pipeline stage ", worst, " needs ", memoryText(mem.total()), " per GPU, over the ",
                       memoryText(e.memory_limit_bytes), " limit (weights ", memoryText(mem.weights), ", grads ",
                       memoryText(mem.gradients), ", optimizer ", memoryText(mem.optimizer), ", activations ",
                       memoryText(mem.activations), ", transient ", memoryText(mem.transient), ", reserve ",
                       memoryText(mem.reserve),
                       mem.calibrated != 0 ? cat(", calibration ", memoryText(mem.calibrated)) : std::string(), ")");
    }
}

Evaluation CostModel::evaluate(const ParallelConfig& c, const Workload& w, const EvaluateOptions& options,
                               std::stop_token stop) const
{
    Evaluation e;
    e.config = c;
    e.cost_source = m_source->name();
    e.memory_limit_bytes = w.memory_limit_bytes > 0 ? w.memory_limit_bytes : m_cluster.device.memory_bytes;
    e.reason = structuralProblem(c, w, options.require_full_cluster);
    if (!e.reason.empty())
        return e;
    auto a = assemble(c);
    a->spec.record_events = options.record_timeline;
    auto sim = std::make_shared<SimulationResult>(simulatePipeline(a->spec, stop));
    e.simulation = sim;
    std::vector<double> stash(static_cast<std::size_t>(c.pp), 0.0);
    for (int r = 0; r < c.pp; ++r) {
        double fixedBytes = 0;
        for (int ch = 0; ch < c.vpp; ++ch)
            fixedBytes += a->spec.stages[static_cast<std::size_t>(chunkStage(c.schedule, c.pp, r, ch))].static_bytes;
        stash[static_cast<std::size_t>(r)] = sim->peak_memory[static_cast<std::size_t>(r)] - fixedBytes;
    }
    finish(e, *a, stash, sim->peak_inflight, sim->step_time, sim->pipeline_time, sim->busy);
    applyUncertainty(e, m_graph->seq_len, w.min_memory_headroom_bytes);
    return e;
}

CostModel::LayerProfile CostModel::layerProfile(const ParallelConfig& c) const
{
    LayerProfile profile;
    const auto costs = layerCosts(c);
    const double weightBytes = dtypeBytes(m_graph->dtype);
    const double denseShard = static_cast<double>(c.dp * c.cp) / c.zero_ngroups;
    const double expertShard = std::max(1.0, static_cast<double>(c.expertDp()) / c.zero_ngroups);
    const FrameworkProfile& framework = frameworkOf(c);
    const bool perModule = perModuleShardedPeak(framework, c);
    const int lastLayer = static_cast<int>(m_layers.size()) - 1;
    const double retained = perModule ? retainedParams(0, lastLayer, c, framework) : 0;
    // As CostModel::assemble: the neighbour gathered ahead is the layer before (the first layer's: the one after).
    double neighbourParams = perModule && m_layers.size() > 1 ? spanParams(1, 1, c).dense : 0;
    for (std::size_t l = 0; l < m_layers.size(); ++l) {
        const LayerCost& lc = *costs[l];
        const LayerParams p = spanParams(static_cast<int>(l), static_cast<int>(l), c);
        profile.time.push_back(lc.forward + lc.backward_input + lc.backward_weight);
        profile.static_bytes.push_back(
            parameterMemory(framework, m_params, c, p, m_graph->dtype, {denseShard, expertShard}).total()
            + fp8WeightBytes(static_cast<int>(l), static_cast<int>(l), c, framework));
        profile.stash_bytes.push_back(lc.activation_bytes);
        const double beside = perModule
            ? shardedDpLayerPeakBytes(framework, c, p.dense, neighbourParams, lc.working_bytes, weightBytes)
                + retainedGatherBytes(framework, c, retained, weightBytes)
            : lc.working_bytes + shardedDpWorkingBytes(framework, c, p.dense, weightBytes);
        neighbourParams = p.dense;
        profile.transient_bytes.push_back(m_params.transient_mem_coef * lc.largest_activation_bytes + beside);
    }
    return profile;
}

Evaluation CostModel::estimate(const ParallelConfig& c, const Workload& w, bool requireFullCluster) const
{
    Evaluation e;
    e.config = c;
    e.cost_source = m_source->name();
    e.memory_limit_bytes = w.memory_limit_bytes > 0 ? w.memory_limit_bytes : m_cluster.device.memory_bytes;
    e.reason = structuralProblem(c, w, requireFullCluster);
    if (!e.reason.empty())
        return e;
    const auto a = assemble(c);
    const auto& stages = a->spec.stages;
    const int p = c.pp;
    const int v = c.vpp;
    const int m = chainMicrobatches(c.schedule, c.num_microbatches); // through each virtual stage
    const ScheduleKind schedule = a->spec.schedule;

    std::vector<double> busy(static_cast<std::size_t>(p), 0.0);
    std::vector<double> stash(static_cast<std::size_t>(p), 0.0);
    std::vector<int> inflight(static_cast<std::size_t>(p), 0);
    double sumChunk = 0, maxChunk = 0, maxZbGap = 0, maxSync = 0, maxF = 0, maxBi = 0, maxW = 0;
    for (int k = 0; k < p * v; ++k) {
        const auto& s = stages[static_cast<std::size_t>(k)];
        const double compute = s.forward + s.backward_input + s.backward_weight;
        const double sends = s.send_forward + s.send_backward;
        busy[static_cast<std::size_t>(stageRank(schedule, p, k))] += compute * m;
        sumChunk += compute + sends;
        // Sends delay every micro-batch's cycle only when the stage waits for them; otherwise they lengthen the
        // pipeline's fill once (sumChunk).
        maxChunk = std::max(maxChunk, compute + (a->spec.blocking_p2p ? sends : 0));
        maxZbGap
            = std::max(maxZbGap, s.forward + s.backward_input - s.backward_weight + s.send_forward + s.send_backward);
        maxSync = std::max(maxSync, s.grad_sync - s.grad_sync_overlap);
        maxF = std::max(maxF, s.forward + s.send_forward);
        maxBi = std::max(maxBi, s.backward_input + s.send_backward);
        maxW = std::max(maxW, s.backward_weight);
    }
    // In flight per rank, by the schedule's warm-up rule (micro-batches, or chunk-micro-batches when interleaved).
    for (int r = 0; r < p; ++r) {
        int count = 0;
        switch (schedule) {
        case ScheduleKind::GPipe:
            count = m;
            break;
        case ScheduleKind::OneFOneB:
            count = std::min(m, p - r);
            break;
        case ScheduleKind::ZeroBubbleH1:
            count = std::min(m, p); // W runs late, so every rank keeps up to p micro-batches
            break;
        case ScheduleKind::Interleaved1F1B:
            count = std::min(m * v, (p - r - 1) * 2 + (v - 1) * p + 1);
            break;
        case ScheduleKind::ZeroBubbleV:
            count = 2 * p; // chunk-micro-batches: 1F1B's p whole micro-batches (Qi et al., ZB-V)
            break;
        case ScheduleKind::DualPipeV:
            count = 2 * p + 1; // PP + 1 chunk-micro-batches (DualPipe README)
            break;
        case ScheduleKind::DualPipe:
            count = p + 1; // PP + 1 stage-micro-batches over both directions (DualPipe README)
            break;
        }
        inflight[static_cast<std::size_t>(r)] = count;
        double perMicrobatch = 0;
        for (int ch = 0; ch < v; ++ch)
            perMicrobatch += stages[static_cast<std::size_t>(chunkStage(schedule, p, r, ch))].activation_bytes;
        stash[static_cast<std::size_t>(r)] = schedule == ScheduleKind::Interleaved1F1B || isVShaped(schedule)
            ? perMicrobatch / v * count
            : perMicrobatch * count;
    }
    double pipelineTime = 0;
    const double maxBusy = *std::max_element(busy.begin(), busy.end());
    switch (schedule) {
    case ScheduleKind::GPipe:
    case ScheduleKind::OneFOneB:
        // Alpa (OSDI'22, Eq. 2): every chunk once, plus m - 1 times the slowest.
        pipelineTime = std::max(sumChunk + (m - 1) * maxChunk, maxBusy);
        break;
    case ScheduleKind::Interleaved1F1B:
        pipelineTime = maxBusy + (p - 1) * maxChunk;
        break;
    case ScheduleKind::ZeroBubbleH1:
        // Qi et al. (ICLR'24): ZB-H1's bubble is (p - 1)(T_F + T_B - T_W).
        pipelineTime = maxBusy + (p - 1) * std::max(0.0, maxZbGap);
        break;
    case ScheduleKind::ZeroBubbleV:
        // Per chunk: the last rank waits p - 1 forwards for its first input; a backward longer than the W that
        // fills behind it adds the difference (exact at F = B = W, within a chunk's F elsewhere; tst_sim).
        pipelineTime = maxBusy + (p - 1) * std::max(maxF, maxF + maxBi - maxW);
        break;
    case ScheduleKind::DualPipeV:
        // DualPipe README: (PP/2 - 1)(F&B + B - 3W) with PP = 2p stages, F&B = F + B and B = I + W per chunk.
        pipelineTime = maxBusy + (p - 1) * std::max(maxF, maxF + 2 * maxBi - maxW);
        break;
    case ScheduleKind::DualPipe:
        // The same formula with PP = p stages: DualPipe runs as two halves of a DualPipeV over p / 2 ranks.
        pipelineTime = maxBusy + (p / 2 - 1) * std::max(maxF, maxF + 2 * maxBi - maxW);
        break;
    }
    const double stepTime = pipelineTime + std::max(0.0, maxSync) + a->spec.optimizer_step;
    finish(e, *a, stash, inflight, stepTime, pipelineTime, busy);
    applyUncertainty(e, m_graph->seq_len, w.min_memory_headroom_bytes);
    return e;
}

} // namespace shardscape
