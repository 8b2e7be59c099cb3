// SPDX-License-Identifier: MIT
#include "cli_common.h"
#include "commands.h"
#include "text_table.h"

#include "shardscape/model/model_source.h"
#include "shardscape/model/model_summary.h"
#include "shardscape/support/strings.h"

#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

namespace shardscape::cli {

namespace {

struct InspectOptions
{
    std::string model;
    std::string json;
    std::int64_t seq_len = 0;
    std::int64_t micro_batch = 1;
};

void printSummary(const ModelSummary& s, const ModelGraph& graph)
{
    std::cout << "Model " << s.name;
    if (graph.transformer) {
        const auto& t = *graph.transformer;
        std::cout << "  (" << t.family << ", " << t.num_layers << " decoder layers, hidden " << t.hidden << ", "
                  << t.num_heads << " heads / " << t.num_kv_heads << " KV, ffn " << t.ffn_hidden << ", vocab "
                  << t.vocab;
        if (t.num_experts) {
            std::cout << ", " << t.num_experts << " experts top-" << t.top_k;
            if (t.shared_expert_ffn > 0)
                std::cout << " + shared " << t.shared_expert_ffn;
            if (t.first_dense_layers > 0 || t.moe_layer_step > 1)
                std::cout << ", dense MLP " << (t.dense_ffn_hidden > 0 ? t.dense_ffn_hidden : t.ffn_hidden);
        }
        if (t.kv_lora_rank > 0)
            std::cout << ", MLA kv_lora " << t.kv_lora_rank << " q_lora " << t.q_lora_rank;
        if (t.attention_window > 0) {
            std::cout << ", window " << t.attention_window;
            if (t.global_layer_every > 0)
                std::cout << " (global every " << t.global_layer_every << ")";
        }
        if (!t.flash_attention)
            std::cout << (t.hf_eager_attention          ? ", eager attention (fp32 softmax kept)"
                              : t.masked_softmax_fusion ? ", unfused attention"
                                                        : ", unfused attention (masked_fill_ + torch softmax)");
        std::cout << ")";
    }
    for (const auto& note : graph.load_notes)
        std::cout << "\nnote: " << note;
    std::cout << "\nParameters " << scientific(s.params, 2) << " (" << siCount(s.params) << ")";
    if (s.active_params < s.params)
        std::cout << ", active per token " << scientific(s.active_params, 2) << " (" << siCount(s.active_params) << ")";
    std::cout << "\nForward FLOPs per token " << scientific(s.flops_per_token_fwd, 3) << " at seq_len " << s.seq_len
              << "; activations " << humanBytes(s.activation_bytes) << " per micro-batch of " << s.batch
              << " (no recomputation, no parallelism); " << s.num_ops << " ops, " << s.layers.size() << " layers\n\n";

    TextTable table;
    table.addColumn("#", TextTable::Align::Right);
    table.addColumn("layer", TextTable::Align::Left);
    table.addColumn("kind", TextTable::Align::Left);
    table.addColumn("params", TextTable::Align::Right);
    table.addColumn("fwd FLOPs/token", TextTable::Align::Right);
    table.addColumn("activations", TextTable::Align::Right);
    table.addColumn("ops", TextTable::Align::Right);
    for (std::size_t i = 0; i < s.layers.size(); ++i) {
        const auto& l = s.layers[i];
        table.addRow({cat(i), l.name, std::string(layerKindName(l.kind)), siCount(l.params),
                      scientific(l.flops_fwd / graph.tokens(), 3), humanBytes(l.activation_bytes), cat(l.ops.size())});
    }
    table.print(std::cout);
}

} // namespace

void addInspectCommand(CLI::App& app, CommandAction& action)
{
    auto options = std::make_shared<InspectOptions>();
    auto* cmd = app.add_subcommand("inspect", "Layers, parameters, FLOPs per token and activation bytes of a model");
    cmd->add_option("--model,-m", options->model, "preset name, HF config.json, native graph .json or .onnx")
        ->required();
    cmd->add_option("--seq-len", options->seq_len, "tokens per sequence (default: min(max positions, 4096))")
        ->check(CLI::Range(std::int64_t {1}, std::int64_t {100'000'000}));
    cmd->add_option("--micro-batch", options->micro_batch, "sequences per micro-batch")
        ->check(CLI::Range(std::int64_t {1}, std::int64_t {1'000'000}));
    cmd->add_option("--json", options->json, "also write the summary as JSON to this file ('-' for stdout)");
    cmd->callback([&action, options] {
        action = [options] {
            BuildOptions build;
            build.seq_len = options->seq_len;
            build.batch = options->micro_batch;
            const ModelGraph graph = loadModel(options->model, build);
            const ModelSummary summary = summarizeModel(graph);
            if (options->json != "-")
                printSummary(summary, graph);
            if (!options->json.empty())
                writeJsonOutput(toJson(summary, graph), options->json);
            return kExitOk;
        };
    });
}

} // namespace shardscape::cli
