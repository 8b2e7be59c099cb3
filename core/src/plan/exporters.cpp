// SPDX-License-Identifier: MIT
// Export dispatch, the shared header and helpers, and the three targets that need no framework knowledge: the
// plan JSON (re-simulated and written again), the Chrome trace of the simulated step and the MoAI one-line dump.
// The framework targets live in export_torchtitan.cpp, export_megatron.cpp, export_deepspeed.cpp and
// export_torchrun.cpp.
#include "export_common.h"

#include "shardscape/cost/cost_model.h"
#include "shardscape/search/planner.h"
#include "shardscape/sim/chrome_trace.h"
#include "shardscape/support/error.h"
#include "shardscape/support/strings.h"
#include "shardscape/support/units.h"

#include <algorithm>
#include <array>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>

namespace shardscape {

namespace {

struct TargetInfo
{
    ExportTarget target;
    std::string_view name;
    std::string_view suffix;
};

constexpr std::array<TargetInfo, 7> kTargets {{{ExportTarget::Json, "json", ".json"},
                                               {ExportTarget::Torchtitan, "torchtitan", ".toml"}, // v0.2
                                               {ExportTarget::Megatron, "megatron", ".sh"},
                                               {ExportTarget::DeepSpeed, "deepspeed", ".json"},
                                               {ExportTarget::Torchrun, "torchrun", ".sh"},
                                               {ExportTarget::ChromeTrace, "chrome-trace", ".json"},
                                               {ExportTarget::Dump, "dump", ".dump"}}};

const TargetInfo& infoOf(ExportTarget target)
{
    for (const auto& info : kTargets)
        if (info.target == target)
            return info;
    return kTargets.front();
}

/** A cost model like the planner's (default planner settings) and the plan evaluated on it. */
struct Reevaluation
{
    std::unique_ptr<CostModel> model;
    Evaluation evaluation;
};

/**
 * Re-simulates the plan as the planner evaluated it: the same layers (planningLayers with default settings), the
 * recorded stage split and memory limit. Notes when the result differs from what the plan recorded.
 */
Reevaluation reevaluate(const LoadedPlan& plan, const ModelGraph& graph, const Cluster& cluster, bool timeline,
                        std::vector<std::string>& notes)
{
    if (graph.seq_len != plan.seq_len)
        throw InputError(cat("the model was built for seq_len ", graph.seq_len, ", the plan for ", plan.seq_len),
                         cat("load the model with --seq-len ", plan.seq_len));
    const PlannerConfig settings;
    auto shared = std::make_shared<const ModelGraph>(graph);
    std::vector<Layer> layers = planningLayers(*shared, settings);
    shared = withShardingRoles(shared, layers, cluster, CostParams {}, settings);
    Reevaluation out;
    out.model = std::make_unique<CostModel>(shared, cluster, CostParams {}, nullptr, std::move(layers));
    const int numLayers = static_cast<int>(out.model->layers().size());
    if (numLayers != plan.num_layers)
        throw InputError(cat("the plan has ", plan.num_layers, " layers, but ", graph.name, " has ", numLayers,
                             ": it was made for another model or another layer grouping"),
                         "export with the model the plan was made for (--model)");

    Workload workload;
    workload.global_batch = plan.global_batch;
    workload.seq_len = plan.seq_len;
    // The plan's limit holds for its own device; on another one, that device's capacity.
    // (0 = the device's capacity, which GB -> bytes -> GB might not reproduce to the bit.)
    if (cluster.fingerprint() == plan.cluster_fingerprint
        && plan.metrics.memory_limit_gb != cluster.device.memory_bytes / units::kGB)
        workload.memory_limit_bytes = plan.metrics.memory_limit_gb * units::kGB;
    EvaluateOptions options;
    options.record_timeline = timeline;
    options.require_full_cluster = false;
    out.evaluation = out.model->evaluate(plan.config, workload, options);
    if (out.evaluation.chunkLayers() != plan.resolved_stage_layers) {
        // The automatic split of this model differs from the plan's: pin the plan's split.
        ParallelConfig pinned = plan.config;
        pinned.stage_layers = plan.resolved_stage_layers;
        out.evaluation = out.model->evaluate(pinned, workload, options);
        notes.push_back("the model's automatic stage split differs from the plan's: re-simulated with the plan's "
                        "split pinned (config.stage_layers)");
    }
    if (out.evaluation.stages.empty())
        throw InputError(cat("the plan cannot be re-simulated on ", graph.name, ": ", out.evaluation.reason),
                         "export with the model and cluster the plan was made for");
    if (out.evaluation.step_time != plan.metrics.step_time_s)
        notes.push_back(cat("re-simulated step time ", fixed(out.evaluation.step_time, 4), " s differs from the ",
                            fixed(plan.metrics.step_time_s, 4),
                            " s the plan recorded (the model, cluster or cost model changed since)"));
    return out;
}

std::string exportJson(exporting::Context& context)
{
    const Reevaluation r = reevaluate(context.plan, context.model, context.cluster, false, context.notes);
    PlanFileContext file;
    file.global_batch = context.plan.global_batch;
    file.seq_len = context.plan.seq_len;
    file.model_name = context.plan.model_name;
    file.model_spec = context.plan.model_spec;
    file.created_by = context.plan.created_by;
    file.version = context.plan.version;
    // JSON has no comments, and the plan schema rejects unknown keys: the file's own fields (created_by, model,
    // cluster, metrics) are its header.
    return planToJson(r.evaluation, *r.model, file).dump(2) + "\n";
}

std::string exportChromeTrace(exporting::Context& context, const SimulationResult* timeline)
{
    Reevaluation r;
    if (!timeline || timeline->events.empty()) {
        r = reevaluate(context.plan, context.model, context.cluster, true, context.notes);
        timeline = r.evaluation.simulation.get();
        if (!timeline)
            throw InputError(cat("the plan could not be simulated: ", r.evaluation.reason));
    }
    const auto header = exporting::headerLines(context, "simulated timeline");
    nlohmann::json doc = toChromeTrace(*timeline, cat(context.modelName(), ": ", context.config().describe()));
    nlohmann::json& other = doc["otherData"];
    other["generator"] = "Shardscape";
    other["header"] = header;
    other["model"] = context.modelName();
    other["cluster"]
        = cat(context.cluster.nodes, " x ", context.cluster.gpus_per_node, " ", context.cluster.device.name);
    other["config"] = context.config().describe();
    other["predicted_step_time_s"] = context.plan.metrics.step_time_s;
    other["predicted_mfu"] = context.plan.metrics.mfu;
    if (!context.notes.empty())
        other["notes"] = context.notes;
    // Compact, like `simulate --trace`: thousands of events are read by tools, not people.
    return doc.dump() + "\n";
}

std::string exportDump(const exporting::Context& context)
{
    // selectedConfigLine reads the configuration and the chunk layer ranges only.
    Evaluation e;
    e.config = context.config();
    const int pp = e.config.pp;
    const int vpp = e.config.vpp;
    std::vector<int> first(context.chunks.size(), 0);
    for (std::size_t v = 1; v < context.chunks.size(); ++v)
        first[v] = first[v - 1] + context.chunks[v - 1];
    for (int r = 0; r < pp; ++r) {
        StageReport stage;
        for (int k = 0; k < vpp; ++k) {
            const auto v = static_cast<std::size_t>(chunkStage(e.config.schedule, pp, r, k));
            if (v < context.chunks.size())
                stage.chunks.emplace_back(first[v], first[v] + context.chunks[v] - 1);
        }
        e.stages.push_back(std::move(stage));
    }
    return exporting::commentBlock(exporting::headerLines(context, "MoAI-style dump"), "# ") + selectedConfigLine(e)
        + "\n";
}

} // namespace

const std::vector<ExportTarget>& exportTargets()
{
    static const std::vector<ExportTarget> targets = [] {
        std::vector<ExportTarget> out;
        for (const auto& info : kTargets)
            out.push_back(info.target);
        return out;
    }();
    return targets;
}

std::string_view exportTargetName(ExportTarget target)
{
    return infoOf(target).name;
}

std::optional<ExportTarget> parseExportTarget(std::string_view name)
{
    for (const auto& info : kTargets)
        if (info.name == name)
            return info.target;
    return std::nullopt;
}

std::string_view exportTargetSuffix(ExportTarget target, std::string_view frameworkVersion)
{
    // torchtitan main reads Python config modules; its v0.2 releases TOML job files.
    if (target == ExportTarget::Torchtitan && frameworkVersion != "v0.2")
        return ".py";
    return infoOf(target).suffix;
}

namespace {

/** The framework whose config a target writes. */
std::optional<Framework> targetFramework(ExportTarget target)
{
    switch (target) {
    case ExportTarget::Torchtitan:
        return Framework::Torchtitan;
    case ExportTarget::Megatron:
        return Framework::MegatronCore;
    case ExportTarget::DeepSpeed:
        return Framework::DeepSpeed;
    case ExportTarget::Json:
    case ExportTarget::Torchrun:
    case ExportTarget::ChromeTrace:
    case ExportTarget::Dump:
        break;
    }
    return std::nullopt;
}

} // namespace

std::string exportFrameworkVersion(ExportTarget target, const LoadedPlan& plan, const ExportOptions& options)
{
    // The torchrun launcher starts torchtitan by default: its file name follows torchtitan's format.
    const auto framework
        = target == ExportTarget::Torchrun ? std::optional(Framework::Torchtitan) : targetFramework(target);
    if (!framework)
        return {};
    std::string_view requested = options.framework_version;
    if (requested.empty() && plan.config.framework == *framework)
        requested = plan.config.framework_version;
    if (const auto version = resolveFrameworkVersion(*framework, requested))
        return *version;
    const auto [cause, hint] = unknownFrameworkVersion(*framework, requested);
    throw InputError(cause, hint);
}

std::string exportDefaultFileName(ExportTarget target, std::string_view frameworkVersion)
{
    switch (target) {
    case ExportTarget::Json:
        return "plan.json";
    case ExportTarget::Torchtitan:
        return frameworkVersion == "v0.2" ? "plan.toml" : "plan_config.py";
    case ExportTarget::Megatron:
        return "megatron.sh";
    case ExportTarget::DeepSpeed:
        return "ds_config.json";
    case ExportTarget::Torchrun:
        return "launch.sh";
    case ExportTarget::ChromeTrace:
        return "trace.json";
    case ExportTarget::Dump:
        break;
    }
    return "plan.dump";
}

ExportResult exportPlan(ExportTarget target, const LoadedPlan& plan, const ModelGraph& model, const Cluster& cluster,
                        const SimulationResult* timeline, const ExportOptions& options)
{
    // A framework config is for running the plan: one the framework would refuse at start-up, or run as another
    // plan than the one predicted, is not written (the profile's limits are the frameworks' own checks).
    const std::string version = exportFrameworkVersion(target, plan, options);
    if (const auto framework = targetFramework(target)) {
        const std::string_view name = frameworkName(*framework);
        ParallelConfig asWritten = plan.config;
        asWritten.framework_version = version;
        if (const std::string problem = frameworkRestriction(frameworkProfile(*framework), asWritten); !problem.empty())
            throw InputError(cat("cannot export this plan for ", name, ": ", problem),
                             cat("plan for ", name, " (shardscape-cli plan --framework ", name,
                                 ", or simulate --framework ", name,
                                 " with a layout it runs, then --save-plan) and export that plan"));
        if (const std::string problem = frameworkModelRestriction(*framework, version, model); !problem.empty())
            throw InputError(cat("cannot export this plan for ", name, ": ", problem),
                             "export it with --format megatron or --format deepspeed");
    }
    exporting::Context context = exporting::makeContext(plan, model, cluster);
    context.framework_version = version;
    ExportResult result;
    switch (target) {
    case ExportTarget::Json:
        result.text = exportJson(context);
        break;
    case ExportTarget::Torchtitan:
        result.text = context.framework_version == "v0.2" ? exporting::exportTorchtitan(context)
                                                          : exporting::exportTorchtitanConfig(context);
        break;
    case ExportTarget::Megatron:
        result.text = exporting::exportMegatron(context);
        break;
    case ExportTarget::DeepSpeed:
        result.text = exporting::exportDeepSpeed(context);
        break;
    case ExportTarget::Torchrun:
        result.text = exporting::exportTorchrun(context);
        break;
    case ExportTarget::ChromeTrace:
        result.text = exportChromeTrace(context, timeline);
        break;
    case ExportTarget::Dump:
        result.text = exportDump(context);
        break;
    }
    result.notes = std::move(context.notes);
    return result;
}

// ---- shared helpers (export_common.h) ------------------------------------------------------------------------

namespace exporting {

std::string Context::modelName() const
{
    return plan.model_name.empty() ? model.name : plan.model_name;
}

Context makeContext(const LoadedPlan& plan, const ModelGraph& model, const Cluster& cluster)
{
    Context context {plan, model, cluster, plan.resolved_stage_layers, {}, {}, {}};
    const ParallelConfig& c = plan.config;
    if (static_cast<int>(context.chunks.size()) != c.pp * c.vpp)
        throw InputError(
            cat("the plan has ", context.chunks.size(), " stage layer counts, expected pp x vpp = ", c.pp * c.vpp));
    if (model.transformer && plan.num_layers == model.transformer->num_layers + 2) {
        // [embedding, block 0 .. block L-1, head]: the embedding opens chunk 0 and the head closes the last chunk.
        context.blocks = context.chunks;
        context.blocks.front() -= 1;
        context.blocks.back() -= 1;
        if (std::any_of(context.blocks.begin(), context.blocks.end(), [](int n) { return n < 0; }))
            context.blocks.clear();
    }
    if (!plan.metrics.feasible)
        context.note(cat("the plan does not fit as recorded (", plan.metrics.reason, "): exported as it is"));
    if (cluster.fingerprint() != plan.cluster_fingerprint)
        context.note(cat("the cluster (", cluster.nodes, " x ", cluster.gpus_per_node, " ", cluster.device.name,
                         ") differs from the plan's (", plan.cluster.nodes, " x ", plan.cluster.gpus_per_node, " ",
                         plan.cluster.device.name, "): the predictions quoted are the plan's"));
    return context;
}

std::vector<std::string> headerLines(const Context& context, std::string_view what)
{
    const LoadedPlan& plan = context.plan;
    const ParallelConfig& c = plan.config;
    const Cluster& cluster = context.cluster;
    const PlanMetrics& m = plan.metrics;
    std::vector<std::string> lines;
    lines.push_back(cat("Shardscape ", what, " for ", context.modelName(), " on ", cluster.nodes, " x ",
                        cluster.gpus_per_node, " ", cluster.device.name, " (", cluster.device.display_name, ")"));
    lines.push_back(cat("Plan: ", c.describe(), "; global batch ", plan.global_batch, " x ", plan.seq_len,
                        " tokens on ", c.worldSize(), " GPUs"));
    if (m.feasible) {
        const double peak
            = m.peak_memory_gb.empty() ? 0 : *std::max_element(m.peak_memory_gb.begin(), m.peak_memory_gb.end());
        lines.push_back(cat("Predicted: step time ", fixed(m.step_time_s, 3), " s, MFU ", fixed(100 * m.mfu, 1),
                            " %, HFU ", fixed(100 * m.hfu, 1), " %, ", fixed(m.tokens_per_s, 0),
                            " tokens/s, peak memory ", fixed(peak, 1), " GB per GPU (", m.cost_source, ")"));
    } else {
        lines.push_back(cat("Predicted: infeasible: ", m.reason));
    }
    lines.push_back(cat("Plan written by ", plan.created_by, plan.version.empty() ? "" : " " + plan.version,
                        "; model spec '", plan.model_spec, "'"));
    return lines;
}

void appendFrameworkLines(const Context& context, Framework target, std::vector<std::string>& head)
{
    const ParallelConfig& c = context.config();
    const std::string_view name = frameworkName(target);
    const std::string_view planned = frameworkName(c.framework);
    std::string line = cat("Framework profile: ", name, " (", frameworkProfile(target).version, ")");
    if (c.framework == target)
        line += "; the plan was made for it";
    else if (c.framework == Framework::Generic)
        line += cat("; the plan was made for no framework (plan with --framework ", name,
                    " for its memory terms and limits)");
    for (auto& wrapped : wrap(line, 112, "", "  "))
        head.push_back(std::move(wrapped));
    std::vector<std::string> others;
    for (const auto& v : frameworkVersions(target))
        if (v != context.framework_version)
            others.push_back(v);
    for (auto& wrapped : wrap(cat("Framework version: ", name, " ", context.framework_version,
                                  others.empty() ? std::string()
                                                 : cat(" (export --framework-version ", join(others, " | "),
                                                       " writes for another release)")),
                              112, "", "  "))
        head.push_back(std::move(wrapped));
    if (c.framework != Framework::Generic && c.framework != target)
        for (auto& wrapped :
             wrap(cat("WARNING: the plan was made for ", planned, ", not ", name, ": its predictions use ", planned,
                      "'s memory terms and limits (plan again with --framework ", name, " for this target)"),
                  112, "", "  "))
            head.push_back(std::move(wrapped));
}

std::vector<std::string> wrap(std::string_view text, std::size_t width, std::string_view first, std::string_view rest)
{
    std::vector<std::string> lines;
    std::string line(first);
    bool empty = true;
    std::size_t pos = 0;
    while (pos < text.size()) {
        while (pos < text.size() && text[pos] == ' ')
            ++pos;
        if (pos >= text.size())
            break;
        std::size_t end = text.find(' ', pos);
        if (end == std::string_view::npos)
            end = text.size();
        const std::string_view word = text.substr(pos, end - pos);
        if (!empty && line.size() + 1 + word.size() > width) {
            lines.push_back(line);
            line = std::string(rest);
            empty = true;
        }
        if (!empty)
            line += ' ';
        line += word;
        empty = false;
        pos = end;
    }
    if (!empty || lines.empty())
        lines.push_back(line);
    return lines;
}

std::string commentBlock(const std::vector<std::string>& lines, std::string_view prefix)
{
    std::string out;
    for (const auto& line : lines) {
        if (line.empty()) {
            std::string_view bare = prefix;
            while (!bare.empty() && bare.back() == ' ')
                bare.remove_suffix(1);
            out += cat(bare, "\n");
        } else {
            out += cat(prefix, line, "\n");
        }
    }
    return out;
}

std::string notesBlock(const std::vector<std::string>& notes, std::string_view prefix)
{
    if (notes.empty())
        return {};
    std::vector<std::string> lines {"What this target cannot express (also printed by shardscape-cli export):"};
    for (const auto& note : notes)
        for (auto& line : wrap(note, 112, "- ", "  "))
            lines.push_back(std::move(line));
    return commentBlock(lines, prefix);
}

std::vector<std::string> torchtitanLaunchLines(Context& context, std::string_view trainArgs)
{
    const LaunchShape shape = launchShape(context);
    return {cat("  torchrun --nnodes ", shape.nodes, " --nproc-per-node ", shape.gpus_per_node,
                " --rdzv-backend c10d --rdzv-endpoint HOST:29400 --rdzv-id JOB \\"),
            cat("      -m torchtitan.train ", trainArgs)};
}

LaunchShape launchShape(Context& context)
{
    const int world = context.config().worldSize();
    const int perNode = std::max(1, context.cluster.gpus_per_node);
    LaunchShape shape;
    if (world <= perNode) {
        shape = {1, world};
    } else if (world % perNode == 0) {
        shape = {world / perNode, perNode};
    } else {
        // torchrun needs the same process count on every node: the largest divisor of the world that fits a node.
        int g = perNode;
        while (world % g)
            --g;
        shape = {world / g, g};
        context.note(cat("the plan's ", world, " GPUs are not a multiple of ", perNode,
                         " GPUs per node: torchrun launches ", shape.nodes, " nodes x ", shape.gpus_per_node,
                         " processes"));
    }
    if (world < context.cluster.worldSize())
        context.note(cat("the plan uses ", world, " of the cluster's ", context.cluster.worldSize(), " GPUs"));
    return shape;
}

std::string shellWord(std::string_view text)
{
    const bool plain = !text.empty() && std::all_of(text.begin(), text.end(), [](char ch) {
        return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9')
            || std::string_view("_./:=,+-@%").find(ch) != std::string_view::npos;
    });
    if (plain)
        return std::string(text);
    std::string out = "'";
    for (const char ch : text)
        out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
    return out + "'";
}

std::string tomlString(std::string_view text)
{
    std::string out = "\"";
    for (const char ch : text) {
        switch (ch) {
        case '"':
            out += "\\\"";
            break;
        case '\\':
            out += "\\\\";
            break;
        case '\n':
            out += "\\n";
            break;
        case '\t':
            out += "\\t";
            break;
        default:
            if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) {
                static constexpr char kHex[] = "0123456789ABCDEF";
                out += "\\u00";
                out += kHex[(ch >> 4) & 0xf];
                out += kHex[ch & 0xf];
            } else {
                out += ch;
            }
        }
    }
    return out + "\"";
}

} // namespace exporting

} // namespace shardscape
