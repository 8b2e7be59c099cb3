// SPDX-License-Identifier: MIT
// Serving plans as vLLM and SGLang launch commands. Every flag is one the engine's argument parser defines
// (SERVING_EXPORTS.md beside this file gives the file, line and commit of each).
#include "shardscape/plan/serving_export.h"

#include "shardscape/model/model_source.h"
#include "shardscape/support/error.h"
#include "shardscape/support/strings.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

namespace shardscape {

namespace {

/** The versions whose argument parsers the flags were checked against. */
constexpr std::string_view kVllmVersion = "vLLM (flags of vllm/engine/arg_utils.py @99d7eb5, about v0.11)";
constexpr std::string_view kSglangVersion = "SGLang (flags of python/sglang/srt/server_args.py @47ed7ecf, 0.5 series)";

std::string quoted(const std::string& text)
{
    std::string out = "'";
    for (const char c : text)
        out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

std::string number(double value)
{
    std::string text = fixed(value, 3);
    while (!text.empty() && text.back() == '0')
        text.pop_back();
    if (!text.empty() && text.back() == '.')
        text.pop_back();
    return text;
}

/** Where the weights' storage format comes from: FP8 is quantized on load; the others need such a checkpoint. */
void weightNotes(WeightFormat format, std::vector<std::string>& notes)
{
    switch (format) {
    case WeightFormat::BF16:
    case WeightFormat::FP8:
        return;
    case WeightFormat::INT8:
        notes.push_back("int8 weights: point MODEL at a W8A8 int8 checkpoint (compressed-tensors); the engine reads "
                        "the quantization from its config");
        return;
    case WeightFormat::INT4:
        notes.push_back("int4 weights: point MODEL at an AWQ or GPTQ checkpoint; the engine reads the quantization "
                        "from its config");
        return;
    case WeightFormat::FP4:
        break;
    }
    notes.push_back("fp4 weights: point MODEL at an NVFP4 checkpoint (NVIDIA ModelOpt); the engine reads the "
                    "quantization from its config");
}

int perReplica(const LoadedServingPlan& plan)
{
    const int concurrency = std::max(plan.concurrency, 1);
    return (concurrency + plan.parallel.dp - 1) / plan.parallel.dp;
}

std::string script(std::string_view engine, const LoadedServingPlan& plan, const std::vector<std::string>& notes,
                   const std::string& command)
{
    std::string text = "#!/usr/bin/env bash\n";
    text += cat("# ", plan.model_name, " served with ", engine, ": ", plan.parallel.describe(), " on ",
                plan.parallel.gpus(), " x ", plan.device, "\n");
    text += cat("# planned by Shardscape: ", plan.request.input_len, " input / ", plan.request.output_len,
                " output tokens, ", plan.concurrency, " requests in flight\n");
    for (const auto& note : notes)
        text += "# note: " + note + "\n";
    text += "set -euo pipefail\n";
    return text + command + "\n";
}

ServingExport vllmCommand(const LoadedServingPlan& plan, const std::string& modelPath)
{
    const ServingParallel& p = plan.parallel;
    ServingExport out;
    std::string cmd = cat("MODEL=${MODEL:-", quoted(modelPath), "}\nvllm serve \"$MODEL\" \\\n");
    cmd += cat("  --tensor-parallel-size ", p.tp, " \\\n");
    if (p.pp > 1)
        cmd += cat("  --pipeline-parallel-size ", p.pp, " \\\n");
    if (p.dp > 1)
        cmd += cat("  --data-parallel-size ", p.dp, " \\\n");
    if (p.ep > 1)
        cmd += "  --enable-expert-parallel \\\n"; // experts over tp x dp ranks
    cmd += "  --dtype bfloat16 \\\n";
    if (plan.request.weight_format == WeightFormat::FP8)
        cmd += "  --quantization fp8 \\\n";
    if (plan.request.kv_dtype == DType::FP8)
        cmd += "  --kv-cache-dtype fp8 \\\n";
    cmd += cat("  --max-model-len ", plan.request.contextLen(), " \\\n");
    cmd += cat("  --max-num-seqs ", perReplica(plan), " \\\n");
    cmd += cat("  --max-num-batched-tokens ", plan.max_batched_tokens, " \\\n");
    cmd += cat("  --gpu-memory-utilization ", number(plan.memory_fraction));
    weightNotes(plan.request.weight_format, out.notes);
    if (p.gpus() > plan.gpus_per_node)
        out.notes.push_back(cat("the deployment spans ", (p.gpus() + plan.gpus_per_node - 1) / plan.gpus_per_node,
                                " nodes: start a Ray cluster over them first (ray start --head / --address) and run "
                                "this on the head node"));
    out.text = script(kVllmVersion, plan, out.notes, cmd);
    return out;
}

ServingExport sglangCommand(const LoadedServingPlan& plan, const std::string& modelPath)
{
    const ServingParallel& p = plan.parallel;
    ServingExport out;
    // SGLang's tp_size counts every GPU of a DP-attention group: attention runs dp-way data parallel inside it and
    // the experts spread over all of them; without DP attention, dp_size starts separate tp_size replicas.
    const bool dpAttention = p.ep > 1 && p.dp > 1;
    std::string cmd
        = cat("MODEL=${MODEL:-", quoted(modelPath), "}\npython -m sglang.launch_server --model-path \"$MODEL\" \\\n");
    cmd += cat("  --tp-size ", dpAttention ? p.tp * p.dp : p.tp, " \\\n");
    if (p.pp > 1)
        cmd += cat("  --pp-size ", p.pp, " \\\n");
    if (p.dp > 1)
        cmd += cat("  --dp-size ", p.dp, " \\\n");
    if (dpAttention)
        cmd += "  --enable-dp-attention \\\n";
    if (p.ep > 1)
        cmd += cat("  --ep-size ", p.ep, " \\\n");
    cmd += "  --dtype bfloat16 \\\n";
    if (plan.request.weight_format == WeightFormat::FP8)
        cmd += "  --quantization fp8 \\\n";
    if (plan.request.kv_dtype == DType::FP8)
        cmd += "  --kv-cache-dtype fp8_e4m3 \\\n";
    cmd += cat("  --context-length ", plan.request.contextLen(), " \\\n");
    cmd += cat("  --max-running-requests ", dpAttention ? std::max(plan.concurrency, 1) : perReplica(plan), " \\\n");
    cmd += cat("  --chunked-prefill-size ", plan.max_batched_tokens, " \\\n");
    cmd += cat("  --mem-fraction-static ", number(plan.memory_fraction));
    weightNotes(plan.request.weight_format, out.notes);
    if (p.gpus() > plan.gpus_per_node)
        out.notes.push_back(cat("the deployment spans ", (p.gpus() + plan.gpus_per_node - 1) / plan.gpus_per_node,
                                " nodes: run this on each with --nnodes N --node-rank R --dist-init-addr HEAD:PORT"));
    out.text = script(kSglangVersion, plan, out.notes, cmd);
    return out;
}

} // namespace

std::string_view servingExportTargetName(ServingExportTarget target)
{
    return target == ServingExportTarget::Vllm ? "vllm" : "sglang";
}

std::optional<ServingExportTarget> parseServingExportTarget(std::string_view name)
{
    const std::string lower = toLower(name);
    if (lower == "vllm")
        return ServingExportTarget::Vllm;
    if (lower == "sglang")
        return ServingExportTarget::Sglang;
    return std::nullopt;
}

std::string servingModelPath(const std::string& spec)
{
    namespace fs = std::filesystem;
    const auto presets = modelPresetNames();
    if (std::find(presets.begin(), presets.end(), spec) != presets.end()) {
        const nlohmann::json config = modelPresetConfig(spec);
        if (const auto it = config.find("_name_or_path"); it != config.end() && it->is_string())
            return it->get<std::string>();
        return spec;
    }
    const fs::path path(spec);
    if (path.filename() == "config.json")
        return path.parent_path().empty() ? "." : path.parent_path().string();
    return spec;
}

ServingExport exportServingPlan(ServingExportTarget target, const LoadedServingPlan& plan, const std::string& modelPath)
{
    const ServingFramework planned = plan.request.framework;
    const ServingFramework wanted
        = target == ServingExportTarget::Vllm ? ServingFramework::Vllm : ServingFramework::Sglang;
    if (planned != wanted)
        throw InputError(cat("the plan was made for ", servingFrameworkName(planned),
                             ", whose memory split and "
                             "defaults differ from ",
                             servingFrameworkName(wanted), "'s"),
                         cat("plan again with serving_framework ", servingFrameworkName(wanted),
                             " (simulate --serving-framework) and export that"));
    return target == ServingExportTarget::Vllm ? vllmCommand(plan, modelPath) : sglangCommand(plan, modelPath);
}

} // namespace shardscape
