// SPDX-License-Identifier: MIT
#include "shardscape/plan/result_json.h"

#include "shardscape/support/units.h"

#include <nlohmann/json.hpp>

namespace shardscape {

namespace {

using nlohmann::json;

double toGB(double bytes)
{
    return bytes / units::kGB;
}

json layerRange(int first, int last)
{
    return json::array({first, last});
}

std::string layerName(const CostModel& model, int index)
{
    const auto& layers = model.layers();
    return index >= 0 && static_cast<std::size_t>(index) < layers.size() ? layers[static_cast<std::size_t>(index)].name
                                                                         : std::string();
}

json stageJson(const StageReport& stage, const ParallelConfig& config, const CostModel& model)
{
    const MemoryBreakdown& m = stage.memory;
    json out {{"layers", layerRange(stage.first_layer, stage.last_layer)},
              {"devices", stage.devices},
              {"compute_s", stage.compute},
              {"memory_gb", toGB(m.total())},
              {"layer_names", json::array({layerName(model, stage.first_layer), layerName(model, stage.last_layer)})},
              {"peak_inflight", stage.peak_inflight},
              {"memory",
               {{"weights_gb", toGB(m.weights)},
                {"gradients_gb", toGB(m.gradients)},
                {"optimizer_gb", toGB(m.optimizer)},
                {"activations_gb", toGB(m.activations)},
                {"transient_gb", toGB(m.transient)},
                {"reserve_gb", toGB(m.reserve)},
                {"runtime_gb", toGB(m.runtime)},
                {"fragmentation_gb", toGB(m.fragmentation)},
                {"calibrated_gb", toGB(m.calibrated)},
                {"allocated_gb", toGB(m.allocated())},
                {"allocator_reserved_gb", toGB(m.allocatorReserved())}}}};
    // With one chunk per rank the chunk is the stage's layer range; listing it again would only add noise.
    if (config.vpp > 1) {
        auto chunks = json::array();
        for (const auto& [first, last] : stage.chunks)
            chunks.push_back(layerRange(first, last));
        out["chunks"] = std::move(chunks);
    }
    return out;
}

} // namespace

nlohmann::json candidateJson(const Evaluation& e, const CostModel& model)
{
    const ParallelConfig& c = e.config;
    // nlohmann::json writes keys sorted, so files list them alphabetically; the header gives the logical order.
    json out {{"tp", c.tp},
              {"pp", c.pp},
              {"dp", c.dp},
              {"vpp", c.vpp},
              {"cp", c.cp},
              {"ep", c.ep},
              {"etp", c.expertTp()},
              {"micro_batch", c.micro_batch},
              {"num_micro_batches", c.num_microbatches},
              {"global_batch", static_cast<std::int64_t>(c.dp) * c.micro_batch * c.num_microbatches},
              {"zero", c.zero_stage},
              {"zero_ngroups", c.zero_ngroups},
              {"recompute", recomputeName(c.recompute)},
              {"sequence_parallel", c.sequence_parallel},
              {"tp_comm_overlap", c.tp_comm_overlap},
              {"overlap_param_gather", c.overlap_param_gather},
              {"moe_a2a_overlap", c.moe_a2a_overlap},
              {"moe_shared_expert_overlap", c.moe_shared_expert_overlap},
              {"moe_capacity_factor", c.moe_capacity_factor},
              {"moe_router_imbalance", c.moe_router_imbalance},
              {"fp8_linears", c.fp8_linears},
              {"fp8_recipe", float8RecipeName(c.fp8_recipe)},
              {"eager_kernels", c.eager_kernels},
              {"framework", frameworkName(c.framework)},
              {"schedule", scheduleName(c.schedule)},
              {"rank_order", c.rank_order},
              {"feasible", e.feasible},
              {"reason", e.reason},
              {"cost_source", e.cost_source},
              {"memory_limit_gb", toGB(e.memory_limit_bytes)}};
    if (c.grad_reduce_bf16)
        out["grad_reduce_bf16"] = true;
    if (c.fp8_linears && c.fp8_param_gather)
        out["fp8_param_gather"] = true;
    if (c.hasFp8Bf16Layers()) {
        out["fp8_bf16_first_layers"] = c.fp8_bf16_first_layers;
        out["fp8_bf16_last_layers"] = c.fp8_bf16_last_layers;
    }
    if (c.recompute == RecomputeKind::Modules)
        out["recompute_modules"] = c.recompute_modules;
    if (!c.stage_layers.empty())
        out["stage_layers"] = c.stage_layers;

    // Without a simulation nothing was measured: null says "unknown", where 0 would read as a (wrong) prediction.
    const bool simulated = e.simulation != nullptr;
    const auto metric = [simulated](double value) { return simulated ? json(value) : json(nullptr); };
    out["step_time_s"] = metric(e.step_time);
    out["tokens_per_s"] = metric(e.tokens_per_s);
    out["tflops_per_gpu"] = metric(e.tflops_per_gpu);
    out["mfu"] = metric(e.mfu);
    out["hfu"] = metric(e.hfu);
    out["bubble_ratio"] = metric(e.bubble_ratio);
    out["step_time_range_s"] = simulated ? json::array({e.step_time_range.low, e.step_time_range.high}) : json(nullptr);
    // The memory prediction exists once the configuration was costed (simulated or not).
    const bool costed = !e.stages.empty();
    out["peak_memory_range_gb"]
        = costed ? json::array({toGB(e.peak_memory_range.low), toGB(e.peak_memory_range.high)}) : json(nullptr);
    out["oom_risk"] = costed ? json(oomRiskName(e.oom_risk)) : json(nullptr);
    out["regime"] = e.regime;

    auto peaks = json::array();
    auto stages = json::array();
    for (const auto& stage : e.stages) {
        peaks.push_back(toGB(stage.memory.total()));
        json stageDoc = stageJson(stage, c, model);
        // The calibration band is relative to the predicted peak (CostModel's uncertainty), so each stage's range is
        // its own peak scaled by the same factors.
        const double peak = e.peakMemory();
        if (peak > 0 && e.peak_memory_range.high > 0)
            stageDoc["memory_range_gb"] = json::array({toGB(stage.memory.total() * (e.peak_memory_range.low / peak)),
                                                       toGB(stage.memory.total() * (e.peak_memory_range.high / peak))});
        stages.push_back(std::move(stageDoc));
    }
    out["peak_memory_gb"] = std::move(peaks);
    out["stages"] = std::move(stages);

    if (simulated) {
        const TimeBreakdown& t = e.time;
        out["time"] = {{"compute_s", t.compute},       {"recompute_s", t.recompute}, {"tp_comm_s", t.tp_comm},
                       {"other_comm_s", t.other_comm}, {"pp_bubble_s", t.pp_bubble}, {"dp_exposed_s", t.dp_exposed},
                       {"optimizer_s", t.optimizer}};
    } else {
        out["time"] = nullptr;
    }
    return out;
}

nlohmann::json resultJson(const std::vector<Evaluation>& evaluations, const CostModel& model, SearchCounts counts)
{
    const ModelGraph& graph = model.graph();
    auto layerNames = json::array();
    for (const auto& layer : model.layers())
        layerNames.push_back(layer.name);
    json modelInfo {{"name", graph.name},
                    {"params", graph.paramCount()},
                    {"active_params", graph.activeParamCount()},
                    {"seq_len", graph.seq_len},
                    {"dtype", dtypeName(graph.dtype)},
                    {"flops_per_token", model.modelFlopsPerToken()},
                    {"num_layers", model.layers().size()},
                    {"layers", std::move(layerNames)}};

    auto candidates = json::array();
    for (const auto& e : evaluations)
        candidates.push_back(candidateJson(e, model));
    return json {{"schema", kResultSchema},
                 {"model", std::move(modelInfo)},
                 {"cluster", toJson(model.cluster())},
                 {"candidates", std::move(candidates)},
                 {"search",
                  {{"candidates_total", counts.candidates_total},
                   {"candidates_feasible", counts.candidates_feasible},
                   {"simulated", counts.simulated},
                   {"enumerate_s", counts.enumerate_s},
                   {"cost_s", counts.cost_s},
                   {"elapsed_s", counts.elapsed_s}}}};
}

} // namespace shardscape
