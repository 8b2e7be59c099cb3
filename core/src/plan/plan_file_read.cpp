// SPDX-License-Identifier: MIT
// The plan file read back, every field checked with bounds and errors that name the field; and the warnings for a
// plan whose model, cluster or costs have changed since it was saved.
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
using plan_ranks::isRankOrder;
using plan_ranks::stageRanks;

constexpr std::string_view kClusterSchema = "shardscape.cluster/1";

// Bounds far beyond any real run: they catch corrupt numbers, not ambitious users.
constexpr std::int64_t kMaxDevices = std::int64_t {1} << 20;
constexpr std::int64_t kMaxMicroBatch = 1'000'000;
constexpr std::int64_t kMaxMicrobatches = std::int64_t {1} << 20;
constexpr std::int64_t kMaxGlobalBatch = std::int64_t {1} << 62;
constexpr std::int64_t kMaxSeqLen = 100'000'000;
constexpr std::int64_t kMaxLayers = 1'000'000;
constexpr std::int64_t kMaxNodes = 100'000;
constexpr std::int64_t kMaxGpusPerNode = 1024;
constexpr double kMaxValue = 1e30; ///< seconds, tokens/s, TFLOP/s, GB, parameters
// The time split is derived by subtraction (busy time minus communication); allow rounding noise below zero.
constexpr double kTimeSlack = -1e-9;

bool isFingerprint(const std::string& text, std::string_view prefix)
{
    if (!startsWith(text, prefix) || text.size() != prefix.size() + 16)
        return false;
    return std::all_of(text.begin() + static_cast<std::ptrdiff_t>(prefix.size()), text.end(),
                       [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// ---- reading ------------------------------------------------------------------------------------------------

bool requiredBool(JsonFields& f, std::string_view key)
{
    if (!f.has(key))
        f.fail(key, "required field is missing");
    return f.boolean(key, false);
}

int intField(JsonFields& f, std::string_view key, std::int64_t min, std::int64_t max)
{
    return static_cast<int>(f.integer(key, min, max));
}

/** A [first, last] pair of layer indices within [0, numLayers). */
std::pair<int, int> layerRange(JsonFields& f, std::string_view key, int numLayers)
{
    const json& range = f.array(key, true);
    if (range.size() != 2 || !range[0].is_number_integer() || !range[1].is_number_integer())
        f.fail(key, cat("expected [first, last] layer indices, got ", describeJson(range)));
    const auto first = range[0].get<std::int64_t>();
    const auto last = range[1].get<std::int64_t>();
    if (first < 0 || last < first || last >= numLayers)
        f.fail(key, cat("layer range [", first, ", ", last, "] is not within the model's ", numLayers, " layers"));
    return {static_cast<int>(first), static_cast<int>(last)};
}

std::vector<std::string> stringList(JsonFields& f, std::string_view key, std::size_t expected)
{
    const json& list = f.array(key, true);
    if (expected > 0 && list.size() != expected)
        f.fail(key, cat("expected ", expected, " names, got ", list.size()));
    std::vector<std::string> out;
    for (std::size_t i = 0; i < list.size(); ++i) {
        if (!list[i].is_string() || list[i].get_ref<const std::string&>().empty())
            f.fail(key, cat("entry ", i, " should be a non-empty name, got ", describeJson(list[i])));
        out.push_back(list[i].get<std::string>());
    }
    return out;
}

ParallelConfig configFromJson(const json& doc, const std::string& origin, int numLayers)
{
    JsonFields f(doc, origin, "config");
    ParallelConfig c;
    c.tp = intField(f, "tp", 1, kMaxDevices);
    c.pp = intField(f, "pp", 1, kMaxDevices);
    c.dp = intField(f, "dp", 1, kMaxDevices);
    c.cp = intField(f, "cp", 1, kMaxDevices);
    c.ep = intField(f, "ep", 1, kMaxDevices);
    c.etp = f.has("etp") ? intField(f, "etp", 0, kMaxDevices) : 0; // 0 (and older plans): the experts split by tp
    c.vpp = intField(f, "vpp", 1, kMaxLayers);
    c.micro_batch = intField(f, "micro_batch", 1, kMaxMicroBatch);
    c.num_microbatches = intField(f, "num_microbatches", 1, kMaxMicrobatches);
    c.zero_stage = intField(f, "zero_stage", 0, 3);
    c.zero_ngroups = intField(f, "zero_ngroups", 1, kMaxDevices);
    c.sequence_parallel = requiredBool(f, "sequence_parallel");
    // Added after the first plan files were written: absent means off.
    c.tp_comm_overlap = f.boolean("tp_comm_overlap", false);
    c.overlap_param_gather = f.boolean("overlap_param_gather", false);
    c.moe_a2a_overlap = f.boolean("moe_a2a_overlap", false);
    c.moe_shared_expert_overlap = f.boolean("moe_shared_expert_overlap", false);
    // Absent in plans older than the capacity factor: dropless, an even router.
    c.moe_capacity_factor = f.optNumber("moe_capacity_factor", 0, 1e3).value_or(0);
    c.moe_router_imbalance = f.optNumber("moe_router_imbalance", 1, 1e3).value_or(1);
    c.fp8_linears = f.boolean("fp8_linears", false);
    if (const auto recipe = f.optString("fp8_recipe")) { // absent in older plans: tensorwise
        const auto parsed = parseFloat8Recipe(*recipe);
        if (!parsed)
            f.fail("fp8_recipe", cat("unknown FP8 recipe '", *recipe, "'"), "use tensorwise or rowwise");
        c.fp8_recipe = *parsed;
    }
    c.fp8_bf16_first_layers = f.has("fp8_bf16_first_layers") ? intField(f, "fp8_bf16_first_layers", 0, kMaxLayers) : 0;
    c.fp8_bf16_last_layers = f.has("fp8_bf16_last_layers") ? intField(f, "fp8_bf16_last_layers", 0, kMaxLayers) : 0;
    c.grad_reduce_bf16 = f.boolean("grad_reduce_bf16", false);
    c.fp8_param_gather = f.boolean("fp8_param_gather", false);
    c.eager_kernels = f.boolean("eager_kernels", false);
    if (const auto framework = f.optString("framework")) { // absent in older plans: generic
        const auto parsed = parseFramework(*framework);
        if (!parsed) {
            std::vector<std::string> names;
            for (const auto known : allFrameworks())
                names.emplace_back(frameworkName(known));
            f.fail("framework", cat("unknown framework '", *framework, "'"), cat("use ", join(names)));
        }
        c.framework = *parsed;
    }
    if (const auto version = f.optString("framework_version"); version && !version->empty()) {
        const auto resolved = resolveFrameworkVersion(c.framework, *version);
        if (!resolved) {
            const auto [cause, hint] = unknownFrameworkVersion(c.framework, *version);
            f.fail("framework_version", cause, hint);
        }
        c.framework_version = *resolved;
    }
    const std::string recompute = f.string("recompute");
    const auto recomputeKind = parseRecompute(recompute);
    if (!recomputeKind)
        f.fail("recompute", cat("unknown recomputation '", recompute, "'"), "use none, selective, full or modules");
    c.recompute = *recomputeKind;
    c.recompute_modules = stringList(f, "recompute_modules", 0);
    const std::string schedule = f.string("schedule");
    const auto scheduleKind = parseSchedule(schedule);
    if (!scheduleKind)
        f.fail("schedule", cat("unknown schedule '", schedule, "'"),
               "use gpipe, 1f1b, interleaved, zb-h1, zb-v or dualpipev");
    c.schedule = *scheduleKind;
    const json& stageLayers = f.array("stage_layers", true);
    for (std::size_t i = 0; i < stageLayers.size(); ++i) {
        const json& n = stageLayers[i];
        if (!n.is_number_integer() || n.get<std::int64_t>() < 1 || n.get<std::int64_t>() > numLayers)
            f.fail("stage_layers",
                   cat("entry ", i, " should be a layer count in [1, ", numLayers, "], got ", describeJson(n)));
        c.stage_layers.push_back(n.get<int>());
    }
    c.rank_order = f.string("rank_order");
    f.checkNoUnknownKeys();

    // The structural rules the cost model enforces, so a hand-edited plan fails here with the key named.
    const std::int64_t world = std::int64_t {c.tp} * c.cp * c.dp * c.pp;
    if (std::int64_t {c.tp} * c.cp > kMaxDevices || std::int64_t {c.tp} * c.cp * c.dp > kMaxDevices
        || world > kMaxDevices)
        f.fail("dp", cat("tp x cp x dp x pp is over ", kMaxDevices, " GPUs"));
    if (!isRankOrder(c.rank_order))
        f.fail("rank_order", cat("'", c.rank_order, "' is not an order of tp, cp, dp and pp"),
               "write the four dimensions fastest-varying first, e.g. tp-cp-dp-pp");
    if ((c.dp * c.cp) % c.zero_ngroups)
        f.fail("zero_ngroups", cat("value ", c.zero_ngroups, " does not divide dp x cp = ", c.dp * c.cp));
    if (c.etp > 0 && c.tp % c.etp)
        f.fail("etp", cat("value ", c.etp, " does not divide tp = ", c.tp));
    if ((c.tp * c.cp * c.dp) % (c.ep * c.expertTp()))
        f.fail("ep", cat("ep x etp = ", c.ep * c.expertTp(), " does not divide tp x cp x dp = ", c.tp * c.cp * c.dp));
    if (c.sequence_parallel && c.tp == 1)
        f.fail("sequence_parallel", "sequence parallelism needs tp > 1");
    if (c.tp_comm_overlap && !c.sequence_parallel)
        f.fail("tp_comm_overlap", "TP communication overlap needs sequence_parallel");
    if (c.overlap_param_gather && c.zero_stage != 1 && c.zero_stage != 2)
        f.fail("overlap_param_gather", "overlapping the parameter all-gather needs zero_stage 1 or 2");
    if (c.moe_a2a_overlap && (c.ep < 2 || c.num_microbatches < 2))
        f.fail("moe_a2a_overlap", "overlapping the expert all-to-alls needs ep > 1 and two or more micro-batches");
    if (c.moe_a2a_overlap && c.pp > 1 && !overlapsMicrobatchPairs(c.schedule))
        f.fail("moe_a2a_overlap",
               "overlapping the expert all-to-alls needs pp = 1, the interleaved schedule, dualpipev or dualpipe");
    if (c.moe_shared_expert_overlap && c.ep < 2)
        f.fail("moe_shared_expert_overlap", "overlapping the shared expert with the all-to-alls needs ep > 1");
    if (c.moe_shared_expert_overlap && c.moe_a2a_overlap)
        f.fail("moe_shared_expert_overlap", "the shared-expert overlap and moe_a2a_overlap exclude each other");
    if (c.recompute == RecomputeKind::Modules && c.recompute_modules.empty())
        f.fail("recompute_modules", "recompute by modules needs at least one module name");
    if (layerChunks(c.schedule, c.pp, c.vpp) > numLayers)
        f.fail("vpp",
               cat("pp x vpp = ", std::int64_t {c.pp} * c.vpp, " chunks, but the model has ", numLayers, " layers"));
    if (isVShaped(c.schedule)) {
        if (c.pp < 2 || c.vpp != 2)
            f.fail("schedule", cat("the ", scheduleName(c.schedule), " schedule needs pp >= 2 and vpp = 2"));
        if (c.num_microbatches < 2 * c.pp)
            f.fail("num_microbatches",
                   cat("value ", c.num_microbatches, " is below 2 x pp (the ", scheduleName(c.schedule),
                       " schedule needs that many)"));
        if (isBidirectional(c.schedule) && (c.pp % 2 || c.num_microbatches % 2))
            f.fail("num_microbatches",
                   cat("the dualpipe schedule needs an even pp and an even number of micro-batches "
                       "(half enter at each end); got pp = ",
                       c.pp, ", ", c.num_microbatches, " micro-batches"));
    } else if (c.vpp > 1 && c.schedule != ScheduleKind::Interleaved1F1B) {
        f.fail("vpp", "vpp > 1 needs the interleaved schedule");
    }
    if (c.schedule == ScheduleKind::Interleaved1F1B) {
        if (c.pp < 2 || c.vpp < 2)
            f.fail("schedule", "the interleaved schedule needs pp >= 2 and vpp >= 2");
        if (c.num_microbatches % c.pp)
            f.fail("num_microbatches",
                   cat("value ", c.num_microbatches, " is not a multiple of pp (the interleaved schedule needs it)"));
    }
    if (!c.stage_layers.empty()) {
        if (static_cast<int>(c.stage_layers.size()) != layerChunks(c.schedule, c.pp, c.vpp))
            f.fail("stage_layers",
                   cat("has ", c.stage_layers.size(), " entries, expected ", layerChunksName(c.schedule), " = ",
                       layerChunks(c.schedule, c.pp, c.vpp)));
        std::int64_t sum = 0;
        for (const int n : c.stage_layers)
            sum += n;
        if (sum != numLayers)
            f.fail("stage_layers", cat("counts sum to ", sum, ", but the model has ", numLayers, " layers"));
    }
    return c;
}

Cluster clusterFromJson(const json& doc, const std::string& origin)
{
    JsonFields f(doc, origin, "cluster");
    const std::string schema = f.string("schema");
    if (schema != kClusterSchema)
        f.fail("schema", cat("unsupported schema '", schema, "'"), cat("this version reads \"", kClusterSchema, "\""));
    Cluster cluster;
    cluster.device = parseDeviceSpec(f.object("device"), cat(origin, ": cluster.device"));
    cluster.nodes = intField(f, "nodes", 1, kMaxNodes);
    cluster.gpus_per_node = intField(f, "gpus_per_node", 1, kMaxGpusPerNode);
    f.checkNoUnknownKeys();
    return cluster;
}

/** A number the plan writer produced from a finite prediction: finite and within [min, kMaxValue]. */
double metric(JsonFields& f, std::string_view key, double min = 0)
{
    return f.number(key, min, kMaxValue);
}

MemoryBreakdown memoryFromJson(const json& doc, const std::string& origin, const std::string& path)
{
    JsonFields f(doc, origin, path);
    MemoryBreakdown m;
    m.weights = metric(f, "weights_gb") * units::kGB;
    m.gradients = metric(f, "gradients_gb") * units::kGB;
    m.optimizer = metric(f, "optimizer_gb") * units::kGB;
    m.activations = metric(f, "activations_gb") * units::kGB;
    m.transient = metric(f, "transient_gb") * units::kGB;
    m.reserve = metric(f, "reserve_gb") * units::kGB;
    // The parts of reserve, added later: absent in older plans.
    m.runtime = f.optNumber("runtime_gb", 0, kMaxValue).value_or(0) * units::kGB;
    m.fragmentation = f.optNumber("fragmentation_gb", 0, kMaxValue).value_or(0) * units::kGB;
    // A measured profile's calibration (profile import-log; may be negative): absent in older plans.
    m.calibrated = f.optNumber("calibrated_gb", -kMaxValue, kMaxValue).value_or(0) * units::kGB;
    f.checkNoUnknownKeys();
    return m;
}

TimeBreakdown timeFromJson(const json& doc, const std::string& origin)
{
    JsonFields f(doc, origin, "metrics.time");
    TimeBreakdown t;
    t.compute = metric(f, "compute_s", kTimeSlack);
    t.recompute = metric(f, "recompute_s", kTimeSlack);
    t.tp_comm = metric(f, "tp_comm_s", kTimeSlack);
    t.other_comm = metric(f, "other_comm_s", kTimeSlack);
    t.pp_bubble = metric(f, "pp_bubble_s", kTimeSlack);
    t.dp_exposed = metric(f, "dp_exposed_s", kTimeSlack);
    t.optimizer = metric(f, "optimizer_s", kTimeSlack);
    f.checkNoUnknownKeys();
    return t;
}

/** An optional [low, high] pair with 0 <= low <= high (seconds or GB). */
std::optional<PredictionRange> rangeFromJson(JsonFields& f, std::string_view key)
{
    const json* value = f.find(key);
    if (!value)
        return std::nullopt;
    if (!value->is_array() || value->size() != 2 || !(*value)[0].is_number() || !(*value)[1].is_number())
        f.fail(key, cat("expected [low, high], got ", describeJson(*value)));
    const PredictionRange range {(*value)[0].get<double>(), (*value)[1].get<double>()};
    if (!std::isfinite(range.low) || !std::isfinite(range.high) || range.low < 0 || range.high < range.low
        || range.high > kMaxValue)
        f.fail(key, cat("[", range.low, ", ", range.high, "] is not a range 0 <= low <= high"));
    return range;
}

std::optional<OomRisk> oomRiskFromJson(JsonFields& f)
{
    const auto text = f.optString("oom_risk");
    if (!text)
        return std::nullopt;
    for (const auto risk : {OomRisk::Fits, OomRisk::Tight, OomRisk::Likely})
        if (oomRiskName(risk) == *text)
            return risk;
    f.fail("oom_risk", cat("unknown OOM risk '", *text, "'"), "use fits, tight or likely");
}

/** Expands a stage's "ranks" (a list, or {count, first, stride}) into the list of global ranks. */
std::vector<std::int64_t> ranksFromJson(JsonFields& f, std::int64_t world)
{
    const json* value = f.find("ranks");
    if (!value)
        f.fail("ranks", "required field is missing");
    std::vector<std::int64_t> ranks;
    if (value->is_object()) {
        JsonFields compact(*value, f.origin(), f.pathOf("ranks"));
        const std::int64_t count = compact.integer("count", 1, world);
        const std::int64_t first = compact.integer("first", 0, world - 1);
        const std::int64_t stride = compact.integer("stride", 1, world);
        compact.checkNoUnknownKeys();
        if (first + (count - 1) * stride >= world)
            f.fail("ranks", cat("the last rank ", first + (count - 1) * stride, " is beyond the ", world, " GPUs"));
        for (std::int64_t i = 0; i < count; ++i)
            ranks.push_back(first + i * stride);
        return ranks;
    }
    if (!value->is_array())
        f.fail("ranks", cat("expected a list of GPU ranks or {count, first, stride}, got ", describeJson(*value)));
    for (std::size_t i = 0; i < value->size(); ++i) {
        const json& r = (*value)[i];
        if (!r.is_number_integer() || r.get<std::int64_t>() < 0 || r.get<std::int64_t>() >= world)
            f.fail("ranks", cat("entry ", i, " should be a GPU rank in [0, ", world - 1, "], got ", describeJson(r)));
        ranks.push_back(r.get<std::int64_t>());
    }
    return ranks;
}

std::optional<LayerKind> parseLayerKind(std::string_view name)
{
    for (const auto kind : {LayerKind::Embedding, LayerKind::Block, LayerKind::Head, LayerKind::Other})
        if (layerKindName(kind) == name)
            return kind;
    return std::nullopt;
}

} // namespace

LoadedPlan loadPlanFile(const std::filesystem::path& path)
{
    return planFromJson(readJsonFile(path), path.string());
}

LoadedPlan planFromJson(const nlohmann::json& doc, std::string_view originView)
{
    const std::string origin(originView);
    JsonFields top(doc, origin);
    const std::string schema = top.string("schema");
    if (schema != kPlanSchema)
        top.fail("schema", cat("unsupported schema '", schema, "'"), cat("this version reads \"", kPlanSchema, "\""));

    LoadedPlan plan;
    plan.created_by = top.string("created_by");
    plan.version = top.string("version");
    plan.model_fingerprint = top.string("model_fingerprint");
    if (!isFingerprint(plan.model_fingerprint, "model:"))
        top.fail("model_fingerprint", cat("'", plan.model_fingerprint, "' is not \"model:\" + 16 hex digits"));
    plan.cluster_fingerprint = top.string("cluster_fingerprint");
    if (!isFingerprint(plan.cluster_fingerprint, "cluster:"))
        top.fail("cluster_fingerprint", cat("'", plan.cluster_fingerprint, "' is not \"cluster:\" + 16 hex digits"));
    plan.global_batch = top.integer("global_batch", 1, kMaxGlobalBatch);
    plan.seq_len = top.integer("seq_len", 1, kMaxSeqLen);

    {
        JsonFields m(top.object("model"), origin, "model");
        plan.model_name = m.string("name");
        plan.model_spec = m.string("spec");
        plan.num_layers = intField(m, "num_layers", 1, kMaxLayers);
        const std::string dtype = m.string("dtype");
        if (!parseDType(dtype))
            m.fail("dtype", cat("unknown dtype '", dtype, "'"));
        metric(m, "params");
        m.checkNoUnknownKeys();
    }
    plan.cluster = clusterFromJson(top.object("cluster"), origin);

    ParallelConfig& c = plan.config;
    c = configFromJson(top.object("config"), origin, plan.num_layers);
    const std::int64_t world = std::int64_t {c.tp} * c.cp * c.dp * c.pp;
    if (top.integer("world_size", 1, kMaxDevices) != world)
        top.fail("world_size", cat("is not tp x cp x dp x pp = ", world));
    const std::int64_t configBatch = std::int64_t {c.dp} * c.micro_batch * c.num_microbatches;
    if (plan.global_batch != configBatch)
        top.fail("global_batch",
                 cat("value ", plan.global_batch, " is not dp x micro_batch x num_microbatches = ", c.dp, " x ",
                     c.micro_batch, " x ", c.num_microbatches, " = ", configBatch));

    // Stages: chunk ranges must tile the layers in virtual-stage order and the ranks must follow rank_order.
    const json& stages = top.array("stages", true);
    if (static_cast<std::int64_t>(stages.size()) != c.pp)
        top.fail("stages", cat("has ", stages.size(), " entries, expected one per pipeline rank (pp = ", c.pp, ")"));
    const int chunks = c.pp * c.vpp;
    std::vector<std::pair<int, int>> chunkRange(static_cast<std::size_t>(chunks), {-1, -1});
    std::vector<std::array<std::string, 2>> chunkNames(static_cast<std::size_t>(chunks));
    for (std::size_t r = 0; r < stages.size(); ++r) {
        const std::string path = cat("stages[", r, "]");
        JsonFields s(stages[r], origin, path);
        if (s.integer("pp_rank", 0, c.pp - 1) != static_cast<std::int64_t>(r))
            s.fail("pp_rank", cat("expected ", r, " (stages are listed in pipeline order)"));
        if (s.integer("devices", 1, kMaxDevices) != std::int64_t {c.tp} * c.cp * c.dp)
            s.fail("devices", cat("is not tp x cp x dp = ", c.tp * c.cp * c.dp));
        if (ranksFromJson(s, world) != stageRanks(c, static_cast<int>(r)))
            s.fail("ranks", cat("do not match rank_order '", c.rank_order, "' for pipeline rank ", r));
        const json& list = s.array("chunks", true);
        if (static_cast<std::int64_t>(list.size()) != c.vpp)
            s.fail("chunks", cat("has ", list.size(), " entries, expected vpp = ", c.vpp));
        for (std::size_t k = 0; k < list.size(); ++k) {
            JsonFields chunk(list[k], origin, cat(path, ".chunks[", k, "]"));
            const int virtualStage = chunkStage(c.schedule, c.pp, static_cast<int>(r), static_cast<int>(k));
            if (chunk.integer("virtual_stage", 0, chunks - 1) != virtualStage)
                chunk.fail(
                    "virtual_stage",
                    cat("expected ", virtualStage, " (chunk ", k, " of pipeline rank ", r, " with pp = ", c.pp, ")"));
            chunkRange[static_cast<std::size_t>(virtualStage)] = layerRange(chunk, "layers", plan.num_layers);
            const auto names = stringList(chunk, "layer_names", 2);
            chunkNames[static_cast<std::size_t>(virtualStage)] = {names[0], names[1]};
            chunk.checkNoUnknownKeys();
        }
        plan.metrics.stage_compute_s.push_back(metric(s, "compute_s"));
        s.integer("peak_inflight", 0, kMaxMicrobatches * kMaxLayers);
        plan.metrics.peak_memory_gb.push_back(metric(s, "memory_gb"));
        memoryFromJson(s.object("memory"), origin, cat(path, ".memory"));
        s.checkNoUnknownKeys();
    }
    // DualPipe's second direction runs the first direction's stages again: same layers, other ranks.
    const int modelChunks = layerChunks(c.schedule, c.pp, c.vpp);
    for (int v = modelChunks; v < chunks; ++v)
        if (chunkRange[static_cast<std::size_t>(v)]
            != chunkRange[static_cast<std::size_t>(layerChunkOf(c.schedule, c.pp, v))])
            top.fail("stages",
                     cat("virtual stage ", v, " must run the layers of stage ", layerChunkOf(c.schedule, c.pp, v),
                         " (DualPipe's second direction repeats the first's stages)"));
    int next = 0;
    for (int v = 0; v < modelChunks; ++v) {
        const auto [first, last] = chunkRange[static_cast<std::size_t>(v)];
        if (first != next)
            top.fail("stages",
                     cat("virtual stage ", v, " starts at layer ", first, ", expected ", next,
                         " (chunks must cover the layers in order)"));
        plan.resolved_stage_layers.push_back(last - first + 1);
        next = last + 1;
    }
    if (next != plan.num_layers)
        top.fail("stages",
                 cat("the chunks end at layer ", next - 1, ", but the model has ", plan.num_layers, " layers"));
    if (!c.stage_layers.empty() && c.stage_layers != plan.resolved_stage_layers)
        top.fail("stages", "the layers per chunk differ from config.stage_layers");

    // Per-layer strategies must agree with the stages and the config.
    const json& layers = top.array("layers", true);
    if (static_cast<std::int64_t>(layers.size()) != plan.num_layers)
        top.fail("layers", cat("has ", layers.size(), " entries, but model.num_layers is ", plan.num_layers));
    for (int v = 0; v < modelChunks; ++v) {
        const auto [first, last] = chunkRange[static_cast<std::size_t>(v)];
        for (int l = first; l <= last; ++l) {
            JsonFields f(layers[static_cast<std::size_t>(l)], origin, cat("layers[", l, "]"));
            if (f.integer("index", 0, plan.num_layers - 1) != l)
                f.fail("index", cat("expected ", l, " (layers are listed in model order)"));
            const std::string name = f.string("name");
            const auto& ends = chunkNames[static_cast<std::size_t>(v)];
            if ((l == first && name != ends[0]) || (l == last && name != ends[1]))
                f.fail("name", cat("'", name, "' does not match the layer_names of virtual stage ", v));
            const std::string kind = f.string("kind");
            if (!parseLayerKind(kind))
                f.fail("kind", cat("unknown layer kind '", kind, "'"), "use embedding, block, head or other");
            const int rank = stageRank(c.schedule, c.pp, v);
            const int chunkIndex = stageChunk(c.schedule, c.pp, v);
            if (f.integer("stage", 0, c.pp - 1) != rank)
                f.fail("stage", cat("expected ", rank, " (the pipeline rank of virtual stage ", v, ")"));
            if (f.integer("chunk", 0, c.vpp - 1) != chunkIndex)
                f.fail("chunk", cat("expected ", chunkIndex, " (the chunk of virtual stage ", v, " on its rank)"));
            if (f.integer("tp", 1, kMaxDevices) != c.tp)
                f.fail("tp", cat("expected config.tp = ", c.tp));
            if (requiredBool(f, "sequence_parallel") != c.sequence_parallel)
                f.fail("sequence_parallel", "differs from config.sequence_parallel");
            requiredBool(f, "recomputed");
            f.checkNoUnknownKeys();
        }
    }

    {
        JsonFields m(top.object("metrics"), origin, "metrics");
        PlanMetrics& out = plan.metrics;
        out.feasible = requiredBool(m, "feasible");
        out.reason = m.string("reason");
        if (out.feasible != out.reason.empty())
            m.fail("reason", out.feasible ? "a feasible plan has no reason" : "an infeasible plan needs a reason");
        out.cost_source = m.string("cost_source");
        if (out.cost_source.empty())
            m.fail("cost_source", "must not be empty");
        out.step_time_s = metric(m, "step_time_s");
        out.tokens_per_s = metric(m, "tokens_per_s");
        out.tflops_per_gpu = metric(m, "tflops_per_gpu");
        out.mfu = metric(m, "mfu");
        out.hfu = metric(m, "hfu");
        out.bubble_ratio = metric(m, "bubble_ratio"); // idle / busy time: (p - 1) / m can exceed 1
        out.memory_limit_gb = metric(m, "memory_limit_gb");
        const json& peaks = m.array("peak_memory_gb", true);
        if (peaks.size() != out.peak_memory_gb.size())
            m.fail("peak_memory_gb",
                   cat("has ", peaks.size(), " entries, expected one per pipeline rank (", c.pp, ")"));
        for (std::size_t r = 0; r < peaks.size(); ++r)
            if (!peaks[r].is_number() || peaks[r].get<double>() != out.peak_memory_gb[r])
                m.fail("peak_memory_gb",
                       cat("entry ", r, " is ", describeJson(peaks[r]), ", but stages[", r, "].memory_gb is ",
                           out.peak_memory_gb[r]));
        out.time = timeFromJson(m.object("time"), origin);
        // Added with the calibration ranges: absent in older plans.
        out.step_time_range_s = rangeFromJson(m, "step_time_range_s");
        out.peak_memory_range_gb = rangeFromJson(m, "peak_memory_range_gb");
        out.oom_risk = oomRiskFromJson(m);
        out.regime = m.optString("regime").value_or("");
        m.checkNoUnknownKeys();
    }
    top.checkNoUnknownKeys();
    return plan;
}

std::vector<std::string> planStalenessWarnings(const LoadedPlan& plan, const CostModel& current,
                                               std::int64_t globalBatch, std::int64_t seqLen)
{
    std::vector<std::string> warnings;
    const ModelGraph& graph = current.graph();
    const std::int64_t currentSeqLen = seqLen > 0 ? seqLen : graph.seq_len;
    // The fingerprint covers the sequence length too; a seq_len change alone gets its own, clearer warning.
    const std::string modelPrint = modelFingerprint(graph);
    if (modelPrint != plan.model_fingerprint && plan.seq_len == graph.seq_len)
        warnings.push_back(cat("plan was made for a different model (fingerprint ", plan.model_fingerprint, " vs ",
                               modelPrint, "; '", plan.model_name, "' then, '", graph.name,
                               "' now): re-simulating it for the current model"));
    const std::string clusterPrint = current.cluster().fingerprint();
    if (clusterPrint != plan.cluster_fingerprint) {
        const auto shape = [](const Cluster& c) { return cat(c.nodes, " x ", c.gpus_per_node, " ", c.device.name); };
        warnings.push_back(cat("plan was made for a different cluster (fingerprint ", plan.cluster_fingerprint, " vs ",
                               clusterPrint, "; ", shape(plan.cluster), " then, ", shape(current.cluster()),
                               " now): re-simulating it on the current cluster"));
    }
    if (globalBatch > 0 && globalBatch != plan.global_batch)
        warnings.push_back(cat("plan was made for global batch ", plan.global_batch, ", now ", globalBatch,
                               ": re-simulating it with the current global batch (its micro-batch count changes)"));
    if (currentSeqLen != plan.seq_len)
        warnings.push_back(cat("plan was made for seq_len ", plan.seq_len, ", now ", currentSeqLen,
                               ": re-simulating it with the current sequence length"));
    return warnings;
}

} // namespace shardscape
