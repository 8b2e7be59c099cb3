// SPDX-License-Identifier: MIT
// The plan file written: the configuration, the inputs' fingerprints, the stages with their ranks, layers, memory
// and time, and the prediction (shardscape.plan/1). Reading it back: plan_file_read.cpp.
#include "shardscape/plan/plan_file.h"

#include "shardscape/model/native_json.h"
#include "shardscape/support/atomic_file.h"
#include "shardscape/support/error.h"
#include "shardscape/support/json_fields.h"
#include "shardscape/support/json_file.h"
#include "shardscape/support/strings.h"
#include "shardscape/support/units.h"

#include "plan_ranks.h"
#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>

namespace shardscape {

namespace {

using nlohmann::json;
using plan_ranks::stageRanks;

/** Stages with more GPUs than this list them as {count, first, stride} when the ranks are evenly spaced. */
constexpr std::size_t kMaxListedRanks = 64;

std::uint64_t fnv1a64(std::string_view data)
{
    std::uint64_t hash = 0xcbf29ce484222325ull;
    for (const char c : data) {
        hash ^= static_cast<unsigned char>(c);
        hash *= 0x100000001b3ull;
    }
    return hash;
}

std::string hex16(std::uint64_t value)
{
    std::array<char, 17> buffer {};
    const auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value, 16);
    const std::string digits(buffer.data(), result.ptr);
    return std::string(16 - digits.size(), '0') + digits;
}

/** A per-sequence value as 12 significant digits: the division by the batch may differ in the last bit. */
std::string perSequence(double value, double batch)
{
    std::array<char, 40> buffer {};
    const auto result
        = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value / batch, std::chars_format::general, 12);
    return std::string(buffer.data(), result.ptr);
}

double toGB(double bytes)
{
    return bytes / units::kGB;
}

bool evenlySpaced(const std::vector<std::int64_t>& ranks)
{
    for (std::size_t i = 2; i < ranks.size(); ++i)
        if (ranks[i] - ranks[i - 1] != ranks[1] - ranks[0])
            return false;
    return true;
}

json ranksJson(const std::vector<std::int64_t>& ranks)
{
    if (ranks.size() > kMaxListedRanks && evenlySpaced(ranks))
        return json {{"count", ranks.size()}, {"first", ranks.front()}, {"stride", ranks[1] - ranks[0]}};
    return ranks;
}

std::string layerName(const CostModel& model, int index)
{
    return model.layers().at(static_cast<std::size_t>(index)).name;
}

json configJson(const ParallelConfig& c)
{
    json doc {{"tp", c.tp},
              {"pp", c.pp},
              {"dp", c.dp},
              {"cp", c.cp},
              {"ep", c.ep},
              {"etp", c.etp}, // 0: the experts split by tp
              {"vpp", c.vpp},
              {"micro_batch", c.micro_batch},
              {"num_microbatches", c.num_microbatches},
              {"zero_stage", c.zero_stage},
              {"zero_ngroups", c.zero_ngroups},
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
              {"recompute", recomputeName(c.recompute)},
              {"recompute_modules", c.recompute_modules},
              {"schedule", scheduleName(c.schedule)},
              {"stage_layers", c.stage_layers},
              {"rank_order", c.rank_order}};
    // Written only when set, so plans without them read as before.
    if (c.grad_reduce_bf16)
        doc["grad_reduce_bf16"] = true;
    if (c.fp8_linears && c.fp8_param_gather)
        doc["fp8_param_gather"] = true;
    if (c.hasFp8Bf16Layers()) {
        doc["fp8_bf16_first_layers"] = c.fp8_bf16_first_layers;
        doc["fp8_bf16_last_layers"] = c.fp8_bf16_last_layers;
    }
    // The release the plan is for, when one was named (exports write the framework's current line otherwise).
    if (!c.framework_version.empty())
        doc["framework_version"] = c.framework_version;
    return doc;
}

json memoryJson(const MemoryBreakdown& m)
{
    return json {{"weights_gb", toGB(m.weights)},      {"gradients_gb", toGB(m.gradients)},
                 {"optimizer_gb", toGB(m.optimizer)},  {"activations_gb", toGB(m.activations)},
                 {"transient_gb", toGB(m.transient)},  {"reserve_gb", toGB(m.reserve)},
                 {"runtime_gb", toGB(m.runtime)},      {"fragmentation_gb", toGB(m.fragmentation)},
                 {"calibrated_gb", toGB(m.calibrated)}};
}

/** [low, high]; in GB (bytes / 1e9, the division every other GB field uses) when `bytes`. */
json rangeJson(const PredictionRange& range, bool bytes)
{
    return bytes ? json::array({toGB(range.low), toGB(range.high)}) : json::array({range.low, range.high});
}

json timeJson(const TimeBreakdown& t)
{
    return json {{"compute_s", t.compute},       {"recompute_s", t.recompute}, {"tp_comm_s", t.tp_comm},
                 {"other_comm_s", t.other_comm}, {"pp_bubble_s", t.pp_bubble}, {"dp_exposed_s", t.dp_exposed},
                 {"optimizer_s", t.optimizer}};
}

} // namespace

std::string modelFingerprint(const ModelGraph& graph)
{
    json doc = toNativeJson(graph);
    const double batch = static_cast<double>(std::max<std::int64_t>(1, graph.batch));
    // Identity is the architecture, not the label or the micro-batch it was built for (see the header).
    doc.erase("batch");
    doc.erase("name");
    for (auto& tensor : doc["tensors"]) {
        if (tensor.value("param", false))
            continue;
        auto& shape = tensor["shape"];
        if (!shape.empty())
            shape.erase(shape.begin());
    }
    for (auto& op : doc["ops"]) {
        for (const char* key : {"flops_fwd", "flops_bwd_input", "flops_bwd_weight"})
            op[key] = perSequence(op[key].get<double>(), batch);
        op.erase("bytes_read");
        op.erase("bytes_written");
    }
    return "model:" + hex16(fnv1a64(doc.dump()));
}

nlohmann::json planToJson(const Evaluation& chosen, const CostModel& model, const PlanFileContext& context)
{
    const ParallelConfig& c = chosen.config;
    if (chosen.stages.empty() || static_cast<int>(chosen.stages.size()) != c.pp)
        throw InputError(cat("cannot save a plan for ", c.describe(), ": it was not costed (",
                             chosen.reason.empty() ? std::string("no stages") : chosen.reason, ")"),
                         "choose a configuration that the simulator accepts");
    const ModelGraph& graph = model.graph();
    const std::int64_t configBatch = std::int64_t {c.dp} * c.micro_batch * c.num_microbatches;
    const std::int64_t globalBatch = context.global_batch > 0 ? context.global_batch : configBatch;
    if (globalBatch != configBatch)
        throw InputError(cat("plan global batch ", globalBatch,
                             " is not dp x micro_batch x num_microbatches = ", configBatch, " of ", c.describe()));
    const std::int64_t seqLen = context.seq_len > 0 ? context.seq_len : graph.seq_len;
    if (seqLen != graph.seq_len)
        throw InputError(cat("plan seq_len ", seqLen, " differs from the model graph's ", graph.seq_len));

    // Stages: chunk k of pipeline rank r is virtual stage k x pp + r (Megatron's looped placement), or the V's.
    const int numLayers = static_cast<int>(model.layers().size());
    std::vector<int> stageOf(static_cast<std::size_t>(numLayers), 0);
    std::vector<int> chunkOf(static_cast<std::size_t>(numLayers), 0);
    auto stages = json::array();
    auto peaks = json::array();
    for (int r = 0; r < c.pp; ++r) {
        const StageReport& s = chosen.stages[static_cast<std::size_t>(r)];
        auto chunks = json::array();
        for (std::size_t k = 0; k < s.chunks.size(); ++k) {
            const auto [first, last] = s.chunks[k];
            const int virtualStage = chunkStage(c.schedule, c.pp, r, static_cast<int>(k));
            // A layer's placement is its first direction's (DualPipe runs every layer on two ranks).
            if (layerChunkOf(c.schedule, c.pp, virtualStage) == virtualStage)
                for (int l = first; l <= last; ++l) {
                    stageOf[static_cast<std::size_t>(l)] = r;
                    chunkOf[static_cast<std::size_t>(l)] = static_cast<int>(k);
                }
            chunks.push_back({{"virtual_stage", virtualStage},
                              {"layers", json::array({first, last})},
                              {"layer_names", json::array({layerName(model, first), layerName(model, last)})}});
        }
        stages.push_back({{"pp_rank", r},
                          {"devices", s.devices},
                          {"ranks", ranksJson(stageRanks(c, r))},
                          {"chunks", std::move(chunks)},
                          {"compute_s", s.compute},
                          {"peak_inflight", s.peak_inflight},
                          {"memory_gb", toGB(s.memory.total())},
                          {"memory", memoryJson(s.memory)}});
        peaks.push_back(toGB(s.memory.total()));
    }

    auto layers = json::array();
    for (int l = 0; l < numLayers; ++l) {
        const Layer& layer = model.layers()[static_cast<std::size_t>(l)];
        const LayerCost& cost = model.layerCost(static_cast<std::size_t>(l), c);
        layers.push_back({{"index", l},
                          {"name", layer.name},
                          {"kind", layerKindName(layer.kind)},
                          {"stage", stageOf[static_cast<std::size_t>(l)]},
                          {"chunk", chunkOf[static_cast<std::size_t>(l)]},
                          {"tp", c.tp},
                          {"sequence_parallel", c.sequence_parallel},
                          {"recomputed", cost.recompute_flops > 0}});
    }

    json metrics {{"feasible", chosen.feasible},
                  {"reason", chosen.reason},
                  {"cost_source", chosen.cost_source},
                  {"step_time_s", chosen.step_time},
                  {"tokens_per_s", chosen.tokens_per_s},
                  {"tflops_per_gpu", chosen.tflops_per_gpu},
                  {"mfu", chosen.mfu},
                  {"hfu", chosen.hfu},
                  {"bubble_ratio", chosen.bubble_ratio},
                  {"memory_limit_gb", toGB(chosen.memory_limit_bytes)},
                  {"peak_memory_gb", std::move(peaks)},
                  {"time", timeJson(chosen.time)},
                  {"step_time_range_s", rangeJson(chosen.step_time_range, false)},
                  {"peak_memory_range_gb", rangeJson(chosen.peak_memory_range, true)},
                  {"oom_risk", oomRiskName(chosen.oom_risk)},
                  {"regime", chosen.regime}};

    json modelInfo {{"name", context.model_name.empty() ? graph.name : context.model_name},
                    {"spec", context.model_spec},
                    {"num_layers", numLayers},
                    {"dtype", dtypeName(graph.dtype)},
                    {"params", graph.paramCount()}};

    return json {{"schema", kPlanSchema},
                 {"created_by", context.created_by},
                 {"version", context.version},
                 {"model_fingerprint", modelFingerprint(graph)},
                 {"cluster_fingerprint", model.cluster().fingerprint()},
                 {"global_batch", globalBatch},
                 {"seq_len", seqLen},
                 {"world_size", std::int64_t {c.tp} * c.cp * c.dp * c.pp},
                 {"model", std::move(modelInfo)},
                 {"cluster", toJson(model.cluster())},
                 {"config", configJson(c)},
                 {"stages", std::move(stages)},
                 {"layers", std::move(layers)},
                 {"metrics", std::move(metrics)}};
}

void savePlanFile(const std::filesystem::path& path, const nlohmann::json& plan)
{
    writeFileAtomic(path, plan.dump(2) + "\n");
}

} // namespace shardscape
