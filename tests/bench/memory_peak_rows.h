// SPDX-License-Identifier: MIT
// Turns one row of tests/data/measured_peaks.json (a measured per-GPU peak of a real training run, with its source)
// into the model, cluster and ParallelConfig the cost model evaluates, and picks the predicted figure that matches
// what the source measured (max allocated, max reserved, or the whole device). Shared by
// tests/bench/bench_memory_peaks and tests/core/tst_calibration. One rule per framework, no per-row factors.
#pragma once

#include "calibration_rows.h"

namespace shardscape::memory_peaks {

using calibration::detail::contains;
using calibration::detail::isNull;
using calibration::detail::optInt;
using calibration::detail::optNumber;
using calibration::detail::text;

/** What the source measured. */
enum class PeakKind : std::uint8_t
{
    Allocated, ///< torch.cuda.max_memory_allocated (Megatron "max allocated"), or the allocator's active peak
    Reserved, ///< torch.cuda.max_memory_reserved (torchtitan "max_reserved")
    Device ///< nvidia-smi: everything on the device
};

struct PeakCase
{
    std::string id;
    std::string framework_name;
    bool simulable = false;
    std::string reason;
    std::vector<std::string> assumptions;
    calibration::Case c; ///< model, cluster and config (c.published unused)
    PeakKind kind = PeakKind::Reserved;
    bool ran = true;
    double measured_bytes = 0;
    CostParams params; ///< Generic rows: the optimizer and gradient bytes the row states
};

inline double predictedBytes(const MemoryBreakdown& m, PeakKind kind)
{
    switch (kind) {
    case PeakKind::Allocated:
        return m.allocated();
    case PeakKind::Reserved:
        return m.allocatorReserved();
    case PeakKind::Device:
        break;
    }
    return m.total();
}

inline const nlohmann::json& at(const nlohmann::json& row, const char* key)
{
    static const nlohmann::json empty = nlohmann::json::object();
    return row.contains(key) && row[key].is_object() ? row[key] : empty;
}

/** The device preset a row's gpu type names (the GPU's memory comes from the row). */
inline std::optional<std::string> devicePresetOf(const std::string& gpu)
{
    if (contains(gpu, "H200"))
        return std::string("h200");
    if (contains(gpu, "H100") || contains(gpu, "H800"))
        return std::string("h100-sxm");
    if (contains(gpu, "B200"))
        return std::string("b200");
    if (contains(gpu, "MI300X"))
        return std::string("mi300x");
    if (contains(gpu, "A100") || contains(gpu, "A800"))
        return std::string(contains(gpu, "40") ? "a100-40g" : "a100-80g");
    return std::nullopt;
}

inline PeakCase makePeakCase(const nlohmann::json& row)
{
    PeakCase out;
    out.id = text(row, "id");
    out.framework_name = text(row, "framework");
    calibration::Case& c = out.c;
    c.id = out.id;
    const auto& model = at(row, "model");
    const auto& gpu = at(row, "gpu");
    const auto& par = at(row, "parallel");
    const auto& batch = at(row, "batch");
    const auto& measured = at(row, "measured");

    if (row.contains("config_complete") && row["config_complete"].is_boolean() && !row["config_complete"].get<bool>()) {
        out.reason = "the source leaves part of the configuration unstated (config_complete false)";
        return out;
    }
    const std::string optimizer = toLower(text(row, "optimizer"));
    if (contains(optimizer, "8bit")) {
        out.reason = "8-bit optimizer states are not modelled";
        return out;
    }
    const auto flagged = [&](const char* what) {
        for (const auto& flag : row.value("other_flags", nlohmann::json::array()))
            if (flag.is_string() && contains(toLower(flag.get<std::string>()), what))
                return true;
        return false;
    };
    // torchtune's chunked cross-entropy is modelled where the recipe compiles it (see the torchtune profile below).
    const bool chunkedLoss
        = toLower(out.framework_name) == "torchtune" && flagged("compile") && flagged("cewithchunkedoutputloss");
    for (const auto& flag : row.value("other_flags", nlohmann::json::array()))
        if (flag.is_string())
            for (const char* unmodelled : {"offload", "chunked", "optimizer_in_bwd", "opt-in-bwd", "lora"})
                if (contains(toLower(flag.get<std::string>()), unmodelled)
                    && !(chunkedLoss && std::string_view(unmodelled) == "chunked")) {
                    out.reason = cat("'", flag.get<std::string>(), "' is not modelled");
                    return out;
                }

    // --- framework ------------------------------------------------------------------------------------------
    const std::string fw = toLower(out.framework_name);
    ParallelConfig& p = c.config;
    if (fw == "torchtune") {
        // torchtune's full fine-tune recipes keep weights, gradients and AdamW states in bf16 (no fp32 master):
        // 2 + 2 + 4 bytes per parameter, stated by the row's precision "bf16 (pure)".
        p.framework = Framework::Generic;
        out.params.grad_bytes = 2;
        out.params.opt_resident_coef = 2;
        out.params.runtime_reserve_bytes = 0;
        out.assumptions.push_back("torchtune: pure bf16 (weights, grads, AdamW states: 2 + 2 + 4 B/param)");
    } else if (const auto f = parseFramework(fw)) {
        p.framework = *f;
    } else {
        out.reason = cat("no framework profile for '", out.framework_name, "'");
        return out;
    }

    // --- model ----------------------------------------------------------------------------------------------
    TransformerShape& t = c.shape;
    for (const char* key : {"num_layers", "hidden_size", "num_attention_heads", "ffn_hidden_size", "vocab_size"})
        if (isNull(model, key)) {
            out.reason = cat("model.", key, " not stated");
            return out;
        }
    const bool llama = model.value("gated_mlp", false);
    t.family = llama ? "llama" : "gpt2";
    t.hidden = *optInt(model, "hidden_size");
    t.num_layers = *optInt(model, "num_layers");
    t.num_heads = *optInt(model, "num_attention_heads");
    t.num_kv_heads = optInt(model, "num_kv_heads").value_or(t.num_heads);
    t.head_dim = t.hidden / t.num_heads;
    t.ffn_hidden = *optInt(model, "ffn_hidden_size");
    t.vocab = *optInt(model, "vocab_size");
    t.gated_mlp = llama;
    t.norm = llama ? "rmsnorm" : "layernorm";
    t.tied_embeddings = !llama;
    t.learned_positions = !llama;
    t.flash_attention = true;
    for (const auto& flag : row.value("other_flags", nlohmann::json::array()))
        if (flag.is_string() && contains(toLower(flag.get<std::string>()), "no flash attention"))
            t.flash_attention = false;
    t.dropout = llama ? 0.0 : 0.1; // Megatron's GPT defaults: hidden and attention dropout 0.1
    // A GPT-style model that states where it differs (GPT-NeoX: untied, rotary, no dropout, one fused QKV GEMM).
    const bool stated = model.contains("tied_embeddings") || model.contains("learned_positions")
        || model.contains("dropout") || model.contains("family");
    if (!llama && !stated)
        out.assumptions.push_back("GPT: LayerNorm, learned positions, tied embeddings, dropout 0.1 (Megatron default)");
    if (model.contains("family") && model["family"].is_string())
        t.family = model["family"].get<std::string>();
    t.tied_embeddings = model.value("tied_embeddings", t.tied_embeddings);
    t.learned_positions = model.value("learned_positions", t.learned_positions);
    t.dropout = model.value("dropout", t.dropout);
    t.embedding_norm = model.value("embedding_norm", false);

    const auto seq = optInt(batch, "seq_length");
    const auto mb = optInt(batch, "micro_batch_size");
    if (!seq || !mb) {
        out.reason = "sequence length or micro-batch not stated";
        return out;
    }
    c.seq_len = *seq;
    t.max_positions = c.seq_len;
    const std::string precision = toLower(text(row, "precision"));
    c.dtype = contains(precision, "fp16") ? DType::F16 : DType::BF16;
    if (c.dtype == DType::F16)
        out.assumptions.push_back("fp16 costed with the framework's bf16 terms (Megatron keeps 16-bit grads in fp16 "
                                  "without --accumulate-allreduce-grads-in-fp32)");

    // --- cluster --------------------------------------------------------------------------------------------
    const auto device = devicePresetOf(text(gpu, "type"));
    if (!device) {
        out.reason = cat("no device preset for '", text(gpu, "type"), "'");
        return out;
    }
    c.device = *device;
    c.gpus = static_cast<int>(optInt(gpu, "num_gpus").value_or(0));
    c.gpus_per_node = static_cast<int>(optInt(gpu, "gpus_per_node").value_or(std::min(c.gpus, 8)));
    // The stated memory, else the preset's (rows that name the GPU but not its memory size).
    c.memory_bytes = optNumber(gpu, "memory_gb").value_or(0) * units::kGiB;
    if (c.memory_bytes <= 0)
        c.memory_bytes = devicePreset(c.device).memory_bytes;

    // --- parallel configuration --------------------------------------------------------------------------------
    p.tp = static_cast<int>(optInt(par, "tp").value_or(1));
    p.pp = static_cast<int>(optInt(par, "pp").value_or(1));
    p.cp = static_cast<int>(optInt(par, "cp").value_or(1));
    p.dp = static_cast<int>(optInt(par, "dp").value_or(c.gpus / std::max(1, p.tp * p.pp * p.cp)));
    p.zero_stage = static_cast<int>(optInt(par, "zero_stage").value_or(0));
    p.sequence_parallel = p.tp > 1 && (par.value("sequence_parallel", false) || p.framework == Framework::Torchtitan);
    if (p.pp > 1 && !isNull(par, "vpp") && optInt(par, "vpp").value_or(1) > 1) {
        p.vpp = static_cast<int>(*optInt(par, "vpp"));
        p.schedule = ScheduleKind::Interleaved1F1B;
    }
    p.micro_batch = static_cast<int>(*mb);
    const std::int64_t accum = optInt(batch, "grad_accum_steps").value_or(1);
    p.num_microbatches = static_cast<int>(std::max<std::int64_t>(1, accum));
    if (p.pp > 1 && isNull(batch, "grad_accum_steps") && !isNull(batch, "global_batch_size"))
        p.num_microbatches
            = static_cast<int>(std::max<std::int64_t>(1, *optInt(batch, "global_batch_size") / (p.dp * *mb)));
    c.global_batch = p.globalBatch();

    const std::string ac = toLower(text(row, "recompute"));
    if (ac.empty() || ac == "none") {
        p.recompute = RecomputeKind::None;
    } else if (ac == "full") {
        p.recompute = RecomputeKind::Full;
    } else if (ac == "selective") {
        p.recompute = RecomputeKind::Selective;
    } else if (ac == "per-op-sac" && p.framework == Framework::Torchtitan) {
        // The profile's own per-op policy (layer_cost.cpp), as an imported or exported plan runs it.
        p.recompute = RecomputeKind::Selective;
    } else if (ac == "per-op-sac") {
        p.recompute = RecomputeKind::Modules;
        p.recompute_modules = calibration::detail::torchtitanPerOpModules();
    } else if (ac.starts_with("per-layer-sac")) {
        p.recompute = RecomputeKind::Modules;
        p.recompute_modules = calibration::detail::torchtitanPerLayerModules(t.num_layers);
    } else {
        out.reason = cat("unknown recompute '", ac, "'");
        return out;
    }
    p.fp8_linears = contains(precision, "fp8") && !contains(precision, "mxfp8");
    const bool compiled = flagged("compile");
    p.eager_kernels = (p.framework == Framework::Torchtitan || fw == "torchtune") && !compiled;
    if (fw == "torchtune") {
        // torchtune at the README table's commit (1814feb17): eager, its RMSNorm upcasts to fp32 and FeedForward
        // multiplies activation(w1(x)) by w3(x), as torchtitan's blocks do (torchtune/modules/rms_norm.py,
        // feed_forward.py); MultiHeadAttention expands K and V to the query heads before the attention call
        // (modules/attention.py); the decoder returns fp32 logits (modules/transformer.py: output(h).float()), and
        // the recipe deletes them after the loss (full_finetune_single_device.py: del logits). Eager, the
        // cross-entropy saves its fp32 log-softmax (4 B per logit), and its backward holds the nll gradient and
        // the log-softmax gradient beside it (4 + 4). With compile on, the recipe compiles the loss too
        // (training.compile_loss): the fused loss keeps its fp32 input (4) and writes one fp32 gradient (4).
        c.framework_profile = c.framework_profile.value_or(frameworkProfile(p.framework));
        c.framework_profile->attention_repeats_kv = true;
        // The single-device recipe steps with optimizer.zero_grad(set_to_none=True) (full_finetune_single_device.py).
        c.framework_profile->gradients_freed_each_step = true;
        c.framework_profile->loss_saved_bytes_per_logit = 4;
        c.framework_profile->loss_working_bytes_per_logit = 8;
        c.framework_profile->compiles_loss = true;
        c.framework_profile->compiled_loss_saved_bytes_per_logit = 4;
        c.framework_profile->compiled_loss_working_bytes_per_logit = 4;
        if (chunkedLoss) {
            // CEWithChunkedOutputLoss (modules/loss/ce_chunked_output_loss.py, num_output_chunks 8): the decoder
            // returns the logits as 8 bf16 chunks without the fp32 cast, and compile_loss compiles only
            // compute_cross_entropy (training/_compile.py), one chunk's upcast and cross-entropy: each keeps its
            // bf16 chunk (2 B per logit in all) and writes a bf16 gradient for it. Autograd frees a chunk's input
            // as its gradient appears, so one chunk (2 / 8 B per logit) is live beyond the saved ones.
            c.framework_profile->compiled_loss_saved_bytes_per_logit = 2;
            c.framework_profile->compiled_loss_working_bytes_per_logit = 2.0 / 8;
        }
    }

    // --- what was measured --------------------------------------------------------------------------------------
    const std::string kind = toLower(text(measured, "kind"));
    if (contains(kind, "reserved"))
        out.kind = PeakKind::Reserved;
    else if (contains(kind, "allocated") || contains(kind, "active"))
        out.kind = PeakKind::Allocated;
    else if (contains(kind, "nvidia"))
        out.kind = PeakKind::Device;
    else {
        out.reason = cat("unknown measurement kind '", kind, "'");
        return out;
    }
    out.ran = measured.value("ran", true);
    if (const auto gib = optNumber(measured, "peak_gib"))
        out.measured_bytes = *gib * units::kGiB;
    else if (const auto gb = optNumber(measured, "peak_gb"))
        out.measured_bytes = *gb * units::kGB;
    if (out.ran && out.measured_bytes <= 0) {
        out.reason = "no measured peak";
        return out;
    }
    // A CUDA context the source measured on the run's own software stack (PyTorch before CUDA's lazy module
    // loading loaded every kernel image up front), in place of the profile's current-stack figure.
    const auto& environment = at(row, "environment");
    if (const auto context = optNumber(environment, "cuda_context_mib")) {
        c.framework_profile = c.framework_profile.value_or(frameworkProfile(p.framework));
        c.framework_profile->cuda_context_bytes = *context * units::kMiB;
        out.assumptions.push_back(cat("CUDA context ", *context, " MiB as measured on the run's stack"));
    }
    // The run's framework release compiled the model but not the loss.
    if (environment.contains("loss_compiled") && environment["loss_compiled"].is_boolean()) {
        c.framework_profile = c.framework_profile.value_or(frameworkProfile(p.framework));
        c.framework_profile->compiles_loss = environment["loss_compiled"].get<bool>();
    }
    // The run's framework commit left its attention backend out of the per-op checkpointing save list.
    if (environment.contains("op_sac_caches_attention") && environment["op_sac_caches_attention"].is_boolean()) {
        c.framework_profile = c.framework_profile.value_or(frameworkProfile(p.framework));
        c.framework_profile->op_sac_caches_attention = environment["op_sac_caches_attention"].get<bool>();
    }
    // The run's torchtitan predates pytorch/torchtitan#1094: its root FSDP unit held the embedding and stayed gathered.
    if (environment.contains("fsdp_root_keeps_embedding") && environment["fsdp_root_keeps_embedding"].is_boolean()) {
        c.framework_profile = c.framework_profile.value_or(frameworkProfile(p.framework));
        c.framework_profile->fsdp_root_keeps_embedding = environment["fsdp_root_keeps_embedding"].get<bool>();
    }
    c.simulable = true;
    return out;
}

struct PeakPrediction
{
    Evaluation evaluation;
    double predicted_bytes = 0; ///< the figure comparable with what the source measured
    double relative_error = 0; ///< predicted / measured - 1
    bool predicted_fit = false; ///< the whole device (weights ... reserve) under the GPU's memory
};

inline PeakPrediction predictPeak(const PeakCase& row)
{
    const auto modelOwner = calibration::makeCostModel(row.c, row.params);
    const CostModel& model = *modelOwner;
    Workload workload;
    workload.global_batch = row.c.global_batch;
    workload.seq_len = row.c.seq_len;
    workload.memory_limit_bytes = row.c.memory_bytes;
    EvaluateOptions options;
    options.require_full_cluster = row.c.gpus % row.c.gpus_per_node == 0;
    PeakPrediction out;
    out.evaluation = model.evaluate(row.c.config, workload, options);
    const Evaluation& e = out.evaluation;
    if (e.stages.empty())
        throw std::runtime_error(cat(row.id, ": ", e.reason));
    std::size_t worst = 0;
    for (std::size_t r = 1; r < e.stages.size(); ++r)
        if (e.stages[r].memory.total() > e.stages[worst].memory.total())
            worst = r;
    out.predicted_bytes = predictedBytes(e.stages[worst].memory, row.kind);
    out.relative_error = row.measured_bytes > 0 ? out.predicted_bytes / row.measured_bytes - 1 : 0;
    out.predicted_fit = e.stages[worst].memory.total() <= row.c.memory_bytes;
    return out;
}

} // namespace shardscape::memory_peaks
