// SPDX-License-Identifier: MIT
#include "cli_common.h"
#include "commands.h"
#include "text_table.h"

#include "shardscape/hardware/cluster.h"
#include "shardscape/model/model_source.h"
#include "shardscape/support/strings.h"
#include "shardscape/support/units.h"

#include <iostream>

namespace shardscape::cli {

namespace {

int listModels()
{
    TextTable table;
    table.addColumn("preset", TextTable::Align::Left);
    table.addColumn("family", TextTable::Align::Left);
    table.addColumn("params", TextTable::Align::Right);
    table.addColumn("active", TextTable::Align::Right);
    table.addColumn("layers", TextTable::Align::Right);
    table.addColumn("hidden", TextTable::Align::Right);
    table.addColumn("heads/kv", TextTable::Align::Right);
    table.addColumn("ffn", TextTable::Align::Right);
    table.addColumn("vocab", TextTable::Align::Right);
    table.addColumn("max seq", TextTable::Align::Right);
    for (const auto& name : modelPresetNames()) {
        // A one-token graph is enough for the architecture and parameter counts.
        BuildOptions options;
        options.seq_len = 1;
        const ModelGraph graph = loadModel(name, options);
        const auto& t = *graph.transformer;
        table.addRow({name, t.family + (t.num_experts ? cat(" (", t.num_experts, "x top-", t.top_k, ")") : ""),
                      siCount(graph.paramCount()), siCount(graph.activeParamCount()), cat(t.num_layers), cat(t.hidden),
                      cat(t.num_heads, "/", t.num_kv_heads), cat(t.ffn_hidden), cat(t.vocab), cat(t.max_positions)});
    }
    table.print(std::cout);
    return kExitOk;
}

int listClusters()
{
    TextTable table;
    table.addColumn("preset", TextTable::Align::Left);
    table.addColumn("device", TextTable::Align::Left);
    table.addColumn("bf16 TFLOP/s", TextTable::Align::Right);
    table.addColumn("fp8 TFLOP/s", TextTable::Align::Right);
    table.addColumn("memory GiB", TextTable::Align::Right);
    table.addColumn("HBM GB/s", TextTable::Align::Right);
    table.addColumn("intra-node", TextTable::Align::Left);
    table.addColumn("inter-node", TextTable::Align::Left);
    table.addColumn("GPUs/node", TextTable::Align::Right);
    const auto link = [](const Link& l) { return cat(l.kind, " ", fixed(l.bandwidth / units::kGB, 0), " GB/s"); };
    for (const auto& name : devicePresetNames()) {
        const DeviceSpec d = devicePreset(name);
        const double fp8 = d.peak(DType::FP8);
        table.addRow({name, d.display_name, fixed(d.peak(DType::BF16) / units::kTera, 1),
                      fp8 > 0 ? fixed(fp8 / units::kTera, 1) : "-", fixed(d.memory_bytes / units::kGiB, 0),
                      fixed(d.hbm_bandwidth / units::kGB, 0), link(d.intra_node), link(d.inter_node),
                      cat(d.default_gpus_per_node)});
    }
    table.print(std::cout);
    std::cout << "\nLink bandwidths are per GPU per direction. Use a preset name with --cluster, or a cluster "
                 ".json file (see README).\n";
    return kExitOk;
}

} // namespace

void addPresetCommands(CLI::App& app, CommandAction& action)
{
    app.add_subcommand("models", "List the built-in model presets")->callback([&action] { action = listModels; });
    app.add_subcommand("clusters", "List the built-in device presets (datasheet numbers)")->callback([&action] {
        action = listClusters;
    });
}

} // namespace shardscape::cli
