// SPDX-License-Identifier: MIT
// `export`: writes a saved plan for another framework (or as a trace or dump); the work happens in core's exporters.
#include "cli_common.h"
#include "commands.h"

#include "shardscape/hardware/cluster.h"
#include "shardscape/model/model_source.h"
#include "shardscape/plan/exporters.h"
#include "shardscape/plan/plan_file.h"
#include "shardscape/plan/serving_export.h"
#include "shardscape/support/atomic_file.h"
#include "shardscape/support/error.h"
#include "shardscape/support/json_file.h"
#include "shardscape/support/strings.h"

#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

namespace shardscape::cli {

namespace {

struct ExportOptions
{
    std::string plan;
    std::string format;
    std::string out;
    std::string model;
    std::string cluster;
    int nodes = 0;
    int gpus_per_node = 0;
    std::string framework_version;
};

std::string formatNames()
{
    std::vector<std::string> names;
    for (const auto target : exportTargets())
        names.emplace_back(exportTargetName(target));
    return join(names, ", ") + ", vllm, sglang (serving plans)";
}

/** Writes an export to o.out ("-" = stdout), its notes to stderr; launch scripts (`executable`) are run directly. */
int writeExport(const ExportOptions& o, const std::string& text, const std::vector<std::string>& notes,
                std::string_view format, bool executable)
{
    for (const auto& note : notes)
        std::cerr << "note: " << note << '\n';
    if (o.out == "-") {
        std::cout << text;
        return kExitOk;
    }
    writeFileAtomic(o.out, text);
    if (executable) {
        namespace fs = std::filesystem;
        std::error_code ignored;
        fs::permissions(o.out, fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec,
                        fs::perm_options::add, ignored);
    }
    std::cout << "wrote " << format << " export of " << o.plan << " to " << o.out << '\n';
    return kExitOk;
}

/** vllm / sglang: a serving plan's launch command. */
int runServingExport(const ExportOptions& o, const nlohmann::json& doc)
{
    const auto target = parseServingExportTarget(o.format);
    if (!target)
        throw InputError(cat(o.plan, " is a serving plan; '", o.format, "' exports training plans"),
                         "choose vllm or sglang");
    const LoadedServingPlan plan = servingPlanFromJson(doc, o.plan);
    const std::string modelPath = servingModelPath(o.model.empty() ? plan.model_spec : o.model);
    if (modelPath.empty())
        throw InputError(cat(o.plan, " does not record the model it was made for"), "pass --model");
    const ServingExport result = exportServingPlan(*target, plan, modelPath);
    return writeExport(o, result.text, result.notes, servingExportTargetName(*target), true);
}

int runExport(const ExportOptions& o)
{
    if (const nlohmann::json doc = readJsonFile(o.plan); isServingPlan(doc))
        return runServingExport(o, doc);
    if (parseServingExportTarget(o.format))
        throw InputError(cat(o.plan, " is a training plan; ", o.format, " launches serving plans"),
                         "plan serving with is_train false (or simulate --mode inference --save-plan) first");
    const auto target = parseExportTarget(o.format);
    if (!target)
        throw InputError(cat("unknown format '", o.format, "'"), "choose " + formatNames());
    const LoadedPlan plan = loadPlanFile(o.plan);

    const std::string modelSpec = o.model.empty() ? plan.model_spec : o.model;
    if (modelSpec.empty())
        throw InputError(cat(o.plan, " does not record the model it was made for"), "pass --model");
    BuildOptions build;
    build.batch = plan.config.micro_batch;
    build.seq_len = plan.seq_len;
    const ModelGraph graph = loadModel(modelSpec, build);

    Cluster cluster = plan.cluster;
    if (!o.cluster.empty()) {
        cluster = loadCluster(o.cluster, o.nodes, o.gpus_per_node);
    } else {
        if (o.nodes > 0)
            cluster.nodes = o.nodes;
        if (o.gpus_per_node > 0)
            cluster.gpus_per_node = o.gpus_per_node;
    }

    shardscape::ExportOptions options;
    options.framework_version = o.framework_version;
    const ExportResult result = exportPlan(*target, plan, graph, cluster, nullptr, options);
    return writeExport(o, result.text, result.notes, exportTargetName(*target),
                       *target == ExportTarget::Megatron || *target == ExportTarget::Torchrun);
}

} // namespace

void addExportCommand(CLI::App& app, CommandAction& action)
{
    auto o = std::make_shared<ExportOptions>();
    auto* cmd = app.add_subcommand("export", "Write a saved plan as a framework config, launcher, trace or dump");
    cmd->add_option("--plan,-p", o->plan,
                    "plan file (shardscape.plan/1, or shardscape.serving-plan/1 for vllm and sglang; from --save-plan)")
        ->required();
    cmd->add_option("--format,-f", o->format, "what to write: " + formatNames())->required();
    cmd->add_option("--out,-o", o->out, "output file ('-' for stdout); written atomically")->required();
    cmd->add_option("--model,-m", o->model, "the model (default: the one the plan records)");
    cmd->add_option("--cluster,-c", o->cluster, "device preset or cluster .json to launch on (default: the plan's)");
    cmd->add_option("--nodes", o->nodes, "nodes (overrides the cluster's)")->check(CLI::Range(1, 100'000));
    cmd->add_option("--gpus-per-node", o->gpus_per_node, "GPUs per node (overrides the cluster's)")
        ->check(CLI::Range(1, 1024));
    cmd->add_option("--framework-version", o->framework_version,
                    "the framework release to write for: megatron core_v0.15-core_v0.19 (default core_v0.19), "
                    "torchtitan main (Python config, default) or v0.2 (TOML), deepspeed v0.19; default: the plan's");
    cmd->footer("What a format cannot express is printed as 'note: ...' lines on stderr and written into the file "
                "as comments where the format has them.");
    cmd->callback([&action, o] { action = [o] { return runExport(*o); }; });
}

} // namespace shardscape::cli
