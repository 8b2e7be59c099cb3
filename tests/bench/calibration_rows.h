// SPDX-License-Identifier: MIT
// Turns one row of tests/data/published_configs.json (a published, measured training run) into the model,
// cluster and ParallelConfig the cost model evaluates, and converts the prediction into the row's own
// throughput metric. Shared by tests/bench/bench_calibration and tests/core/tst_calibration.
//
// Every value the row leaves null is filled by ONE rule per series, written down here next to its source
// (see also tests/bench/calibration_results.md). Nothing in this file is tuned to make a row fit: there are
// no per-row factors. The only data not in the JSON are the micro-batch and interleaving of the Megatron SC'21
// Table 1 rows, read from the authors' own reproduction script, and the tokenizer size of the two model families
// whose rows leave vocab_size null.
#pragma once

#include "shardscape/cost/cost_model.h"
#include "shardscape/hardware/cluster.h"
#include "shardscape/model/hf_config.h"
#include "shardscape/support/strings.h"
#include "shardscape/support/units.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

namespace shardscape::calibration {

/** The throughput metric a series publishes, each with the source's own FLOP-counting formula. */
enum class Metric : std::uint8_t
{
    /** TFLOP/s per GPU, F = 96 B s l h^2 (1 + s/6h + V/16lh): Megatron SC'21 and BLOOM's throughput_calculator.
        4 passes: assumes full recomputation. */
    TflopsMegatron4Pass,
    /** TFLOP/s per GPU as GPT-NeoX logged it from 2021 until September 2023 (megatron/logging.py get_flops at
        36d2c20f, the code GPT-NeoX-20B trained with; replaced by a Megatron-style count in 5f364017):
        F = B s (6 N + 60 s h l), N = model.total_params (every parameter, embeddings included). 3 passes: the
        recomputed forward is not counted. */
    TflopsNeox2021,
    /** TFLOP/s per GPU, Megatron-Core's num_floating_point_operations: 12 B s l h^2 [(1 + g/a + s/h) q/h +
        (f/h) glu + V/(2lh)], 3 passes, full (non-causal) attention. */
    TflopsMegatronCore,
    /** torchtitan's tokens per second per GPU: global tokens / (step time x GPUs). */
    TokensPerSecondPerGpu,
    /** llm-foundry's MFU in percent: (6 N s + 12 L d s^2) x sequences/s / (GPUs x peak), N = all parameters. */
    MptMfuPercent,
    /** Seconds per iteration as measured (Korthikanti et al. Table 5). The error is still a throughput error,
        published / predicted seconds - 1, so that its sign means what it means for the other metrics. */
    SecondsPerIteration,
};

inline const char* metricName(Metric metric)
{
    switch (metric) {
    case Metric::TflopsMegatron4Pass:
        return "TFLOP/s/GPU (96Bslh^2 formula)";
    case Metric::TflopsMegatronCore:
        return "TFLOP/s/GPU (Megatron-Core formula)";
    case Metric::TflopsNeox2021:
        return "TFLOP/s/GPU (GPT-NeoX 2021 get_flops)";
    case Metric::TokensPerSecondPerGpu:
        return "tokens/s/GPU";
    case Metric::SecondsPerIteration:
        return "s/iteration";
    case Metric::MptMfuPercent:
        break;
    }
    return "MFU % (llm-foundry formula)";
}

/** One row, converted. `simulable` false means `reason` says which essential is missing. */
struct Case
{
    std::string id;
    std::string series;
    std::string model;
    int gpus = 0;
    bool simulable = false;
    std::string reason; ///< why the row cannot be simulated
    std::vector<std::string> assumptions; ///< every null filled and every rule applied, for the report
    std::vector<std::string> caveats; ///< known causes of error the cost model does not represent

    TransformerShape shape;
    DType dtype = DType::BF16;
    std::int64_t seq_len = 0;
    std::string device; ///< device preset
    int gpus_per_node = 8;
    double inter_node_bandwidth = 0; ///< bytes/s per GPU per direction when the row states its NICs; 0 = preset
    /** The fabric's measured all-reduce bus bandwidth over its stated line rate, where the row cites a measurement
        (`interconnect_measured`); 0 = the cost model's default efficiency. */
    double inter_node_efficiency = 0;
    double hbm_bandwidth = 0; ///< bytes/s when the source states a memory bandwidth other than the preset's; 0 = preset
    double memory_bytes = 0; ///< the row's stated GPU memory (gpu_memory_gb, read as GiB like the presets); 0 = preset
    ParallelConfig config;
    std::int64_t global_batch = 0; ///< sequences per step as simulated (dp x micro-batch x micro-batches)

    Metric metric = Metric::TflopsMegatron4Pass;
    double published = 0; ///< the row's figure in `metric`
    double published_peak_memory_gib = 0; ///< measured peak memory per GPU where the row states it (GiB), else 0
    double metric_peak = 0; ///< FLOP/s the source divides by (MFU metrics)
    /** The framework profile as the series' code ran it, where it differs from today's (SeriesRules). */
    std::optional<FrameworkProfile> framework_profile;
};

/** A prediction in the row's metric, with the evaluation behind it. */
struct Prediction
{
    double value = 0;
    double relative_error = 0; ///< (predicted - published) / published
    double model_params = 0; ///< unique parameters of the built graph
    Evaluation evaluation;
};

namespace detail {

using nlohmann::json;

inline bool isNull(const json& row, const char* key)
{
    const auto it = row.find(key);
    return it == row.end() || it->is_null();
}

inline std::optional<std::int64_t> optInt(const json& row, const char* key)
{
    if (isNull(row, key))
        return std::nullopt;
    return row.at(key).get<std::int64_t>();
}

inline std::optional<double> optNumber(const json& row, const char* key)
{
    if (isNull(row, key))
        return std::nullopt;
    return row.at(key).get<double>();
}

inline std::string text(const json& row, const char* key)
{
    return isNull(row, key) ? std::string() : row.at(key).get<std::string>();
}

inline bool contains(const std::string& haystack, std::string_view needle)
{
    return haystack.find(needle) != std::string::npos;
}

/** Per-series architecture and framework conventions (the rows state only the shape). */
struct SeriesRules
{
    bool llama = false; ///< torchtitan Llama: SwiGLU, RMSNorm, rotary, separate q/k/v; else GPT: GELU 4h, LayerNorm
    bool tied = false;
    bool learned_positions = false;
    bool flash = true;
    double dropout = 0;
    bool embedding_norm = false; ///< a LayerNorm after the token embedding (TransformerShape::embedding_norm)
    Metric metric = Metric::TflopsMegatron4Pass;
    int default_zero = 0;
    bool sp_with_tp = false; ///< sequence parallelism whenever tp > 1 (when the row leaves it null)
    Framework framework = Framework::Generic; ///< the framework the series ran (its memory and comm terms)
    /** The series ran Megatron-LM from before 2021-09, whose column-parallel backward waited for its TP all-reduce
        (the async all-reduce beside the wgrad GEMM came with commit 3f65246911, 2021-09-02). */
    bool megatron_sync_tp_backward = false;
    /** The series' DeepSpeed config says ZeRO stage 0 and bf16 under a pipeline, where DeepSpeed runs BF16_Optimizer
        (which shards the optimizer states as ZeRO-1 does; the rows state zero_stage 1 for that sharding). */
    bool deepspeed_stage0_bf16_optimizer = false;
    std::string note;
};

inline std::optional<SeriesRules> seriesRules(const std::string& series)
{
    SeriesRules r;
    if (series == "megatron_ptdp_sc21_table1") {
        // GPT-3 style (Megatron-LM 2021): tied embeddings (the paper's parameter formula), learned positions,
        // no fused attention (2021), Megatron's default hidden/attention dropout 0.1, no distributed optimizer.
        r.tied = true;
        r.learned_positions = true;
        r.flash = false;
        r.dropout = 0.1;
        r.metric = Metric::TflopsMegatron4Pass;
        r.framework = Framework::MegatronCore; // Megatron-LM 2021: the same fp32 main grads and schedules
        r.megatron_sync_tp_backward = true; // the paper's runs (April 2021) predate the async dgrad all-reduce
        r.note = "GPT (Megatron-LM 2021): GELU 4h, LayerNorm, learned positions, tied embeddings, unfused "
                 "attention, dropout 0.1";
        return r;
    }
    if (series == "megatron_korthikanti_2022_table5") {
        // Megatron-LM of 2022 (the paper's code): GPT with tied embeddings and learned positions, the fused
        // (unfused-attention) softmax kernel, dropout 0.1, no distributed optimizer. The rows state SP.
        r.tied = true;
        r.learned_positions = true;
        r.flash = false;
        r.dropout = 0.1;
        r.metric = Metric::SecondsPerIteration;
        r.framework = Framework::MegatronCore;
        r.note = "GPT (Megatron-LM 2022): GELU 4h, LayerNorm, learned positions, tied embeddings, unfused "
                 "attention, dropout 0.1";
        return r;
    }
    if (series == "megatron_lm_readme_h100_weak_scaling_2024") {
        // Untied embeddings: the labelled sizes (1.7B, 7.1B) are 12lh^2 + 2Vh. The README runs with
        // --overlap-grad-reduce --overlap-param-gather (distributed optimizer = ZeRO-1) and --tp-comm-overlap,
        // which Megatron only allows with --sequence-parallel.
        r.tied = false;
        r.learned_positions = true;
        r.flash = true;
        r.dropout = 0.1;
        r.metric = Metric::TflopsMegatronCore;
        r.default_zero = 1;
        r.sp_with_tp = true;
        r.framework = Framework::MegatronCore;
        r.note = "GPT (Megatron-Core 2024): GELU 4h, LayerNorm, learned positions, untied embeddings, fused "
                 "attention, dropout 0.1, distributed optimizer (ZeRO-1), SP with TP";
        return r;
    }
    if (series == "nemo_performance_summary_h100_2024_07" || series == "megatron_bridge_performance_h100_2025_11"
        || series == "nemo_long_context_h100_2024_03") {
        // NeMo's Llama recipes (NeMo-Framework-Launcher conf/training/llama/*.yaml; Megatron-Bridge's performance
        // recipes): Megatron-Core with Transformer Engine, RMSNorm, SwiGLU, rotary, untied, flash attention, no
        // dropout, the distributed optimizer, sequence parallelism with TP, no activation checkpointing.
        r.llama = true;
        r.tied = false;
        r.learned_positions = false;
        r.flash = true;
        r.dropout = 0;
        r.metric = Metric::TokensPerSecondPerGpu;
        r.default_zero = 1;
        r.sp_with_tp = true;
        r.framework = Framework::NeMo;
        r.note = "Llama (NeMo, Megatron-Core + Transformer Engine): SwiGLU, RMSNorm, rotary, GQA, untied, flash "
                 "attention, distributed optimizer, SP with TP";
        return r;
    }
    if (series == "bloom_176b_production" || series == "bigscience_tr11_topology_2022_02_28") {
        // tr11-176B-ml.slurm: ALiBi (no position table), no dropout flags (Megatron-DeepSpeed defaults 0.1),
        // tied embeddings, Megatron fused softmax (no flash attention in 2022). The pre-launch topology benchmarks
        // of chronicles-prequel.md ran the same stack on the same 48 nodes; they state seconds per iteration.
        r.tied = true;
        r.learned_positions = false;
        r.flash = false;
        r.dropout = 0.1;
        // --embed-layernorm: VocabParallelEmbedding's LayerNorm on the first stage (megatron/mpu/layers.py).
        r.embedding_norm = true;
        r.metric = series == "bloom_176b_production" ? Metric::TflopsMegatron4Pass : Metric::SecondsPerIteration;
        r.deepspeed_stage0_bf16_optimizer = true; // tr11-176B-ml.slurm: ZERO_STAGE=0, "bf16 must use z0"
        r.framework = Framework::DeepSpeed; // Megatron-DeepSpeed: DeepSpeed's pipeline engine and ZeRO-1 optimizer
        r.note = "BLOOM: GELU 4h, LayerNorm, embedding LayerNorm, ALiBi (costed as rotary), tied embeddings, unfused "
                 "attention, dropout 0.1";
        return r;
    }
    if (series == "gpt_neox_20b_production" || series == "gpt_neox_lambda_2023") {
        // configs/20B.yml: no-weight-tying, rotary, hidden/attention dropout 0, fused softmax (2022). Lambda's 2023
        // benchmark ran the same file at hidden 4096 on one node, with the same get_flops.
        r.tied = false;
        r.learned_positions = false;
        r.flash = false;
        r.dropout = 0;
        r.metric = Metric::TflopsNeox2021;
        r.framework = Framework::DeepSpeed; // GPT-NeoX trains through DeepSpeed's pipeline engine and ZeRO-1
        r.note = "GPT-NeoX 20B.yml: GELU 4h, LayerNorm, rotary, untied, unfused attention, no dropout; "
                 "parallel residual costed as sequential (same FLOPs)";
        return r;
    }
    if (series == "torchtitan_docs_performance_2024_08" || series == "torchtitan_benchmark_h100_2024_12"
        || series == "torchtitan_asynctp_h100_2025_06" || series == "torchtitan_trainy_h200_2025_06") {
        r.llama = true;
        r.tied = false;
        r.learned_positions = false;
        r.flash = true;
        r.dropout = 0;
        r.metric = Metric::TokensPerSecondPerGpu;
        r.default_zero = 3; // FSDP2 fully shards parameters, gradients and optimizer states
        r.sp_with_tp = true; // torchtitan's TP plan shards the norms over the sequence (SequenceParallel)
        r.framework = Framework::Torchtitan;
        r.note = "Llama (torchtitan): SwiGLU, RMSNorm, rotary, GQA, untied, SDPA flash attention, FSDP2 = ZeRO-3";
        return r;
    }
    if (series == "mosaicml_llm_foundry_mpt_benchmarks") {
        // MPT benchmark yamls: learned positions (the row notes: NumParams varies with seq len), tied
        // embeddings, flash/triton attention, dropout 0, FSDP FULL_SHARD.
        r.tied = true;
        r.learned_positions = true;
        r.flash = true;
        r.dropout = 0;
        r.metric = Metric::MptMfuPercent;
        r.default_zero = 3;
        r.framework = Framework::Composer;
        r.note = "MPT: GELU 4h, LayerNorm, learned positions (benchmark configs), tied, flash attention, no "
                 "dropout (linear biases kept: MPT has none, a negligible difference)";
        return r;
    }
    return std::nullopt;
}

/**
 * Vocabulary sizes for the rows that leave vocab_size null: the tokenizer of the model family, not a
 * per-row choice. Llama 2: 32,000 (Meta's tokenizer; resources/models/llama2-*.json). GPT-NeoX-20B: 50,432
 * (20B_tokenizer.json padded, HF EleutherAI/gpt-neox-20b config.json).
 */
inline std::optional<std::int64_t> familyVocab(const std::string& model)
{
    if (startsWith(model, "Llama-2") || startsWith(model, "Llama 2") || startsWith(model, "Llama2"))
        return 32000;
    if (startsWith(model, "GPT-NeoX-20B"))
        return 50432;
    return std::nullopt;
}

/** Megatron-LM examples/sc21/run_table_1.sh (the authors' script for Table 1): MBS and layers per virtual stage. */
struct Sc21Script
{
    double billions;
    int micro_batch;
    int layers_per_virtual_stage; ///< 0 = no interleaving
};
inline constexpr Sc21Script kSc21Table1[] = {
    {1.7, 16, 0}, {3.6, 16, 0},  {7.5, 16, 0},  {18.4, 8, 0},  {39.1, 4, 0},
    {76.1, 2, 5}, {145.6, 2, 5}, {310.1, 1, 3}, {529.6, 1, 1}, {1008.0, 1, 0},
};

/** The device preset a row's gpu_type names. */
inline std::optional<std::string> devicePresetFor(const std::string& gpuType)
{
    if (contains(gpuType, "A100")) {
        if (contains(gpuType, "40"))
            return std::string("a100-40g");
        if (contains(gpuType, "80"))
            return std::string("a100-80g");
        return std::nullopt;
    }
    // Every H100 row is an SXM part (the MFU/TFLOP ratios imply the 989 TFLOP/s SXM peak), including
    // torchtitan's 96 GB HBM2e parts capped at 500 W (a caveat, not a different preset).
    if (contains(gpuType, "H100"))
        return std::string("h100-sxm");
    if (contains(gpuType, "H200"))
        return std::string("h200");
    return std::nullopt;
}

/**
 * Scale-out bandwidth per GPU when the row names fewer NICs per node than one per GPU (the presets assume
 * one HDR/NDR NIC per GPU, as DGX nodes have): "4 OPA links per node" (Omni-Path, 100 Gb/s each) and
 * "4 ConnectX-6 HCAs" (HDR InfiniBand, 200 Gb/s each). Bytes/s per direction, 0 when the preset applies.
 */
inline double statedInterNodeBandwidth(const std::string& interconnect, int gpusPerNode)
{
    static const std::regex opa(R"((\d+)\s+OPA links? per node)");
    static const std::regex cx6(R"((\d+)\s+ConnectX-6 HCAs?)");
    std::smatch m;
    double gbitPerNode = 0;
    if (std::regex_search(interconnect, m, opa))
        gbitPerNode = std::stod(m[1].str()) * 100;
    else if (std::regex_search(interconnect, m, cx6))
        gbitPerNode = std::stod(m[1].str()) * 200;
    return gbitPerNode > 0 ? gbitPerNode / 8 * 1e9 / gpusPerNode : 0;
}

/** torchtitan's per-op selective AC (selective_ac_option = 'op', the llama3 toml default in 2024): saves mm and
    SDPA outputs except every second mm (wk, wo, w3 of each block), recomputes everything else. */
inline std::vector<std::string> torchtitanPerOpModules()
{
    return {"input_layernorm",  "post_attention_layernorm", "self_attn.rotary",
            "self_attn.k_proj", "self_attn.o_proj",         "mlp.act",
            "mlp.up_proj"};
}

/** torchtitan's per-layer selective AC (selective_ac_option = '2'): every second block fully recomputed. */
inline std::vector<std::string> torchtitanPerLayerModules(std::int64_t layers)
{
    std::vector<std::string> blocks;
    for (std::int64_t i = 1; i < layers; i += 2)
        blocks.push_back(cat("model.layers.", i));
    return blocks;
}

} // namespace detail

/** Converts one JSON row; never throws for a well-formed row (problems land in Case::reason). */
inline Case makeCase(const nlohmann::json& row)
{
    using namespace detail;
    Case c;
    c.id = text(row, "id");
    c.series = text(row, "series");
    c.model = text(row, "model_name");
    c.gpus = static_cast<int>(optInt(row, "num_gpus").value_or(0));

    // --- what has to be there -------------------------------------------------------------------------------
    // FSDP-only series (torchtitan, llm-foundry) state no pipeline degree because they have none.
    const bool fsdpOnly = c.series.starts_with("torchtitan") || c.series.starts_with("mosaicml");
    std::vector<std::string> missing;
    for (const char* key :
         {"num_layers", "hidden_size", "num_attention_heads", "seq_length", "num_gpus", "global_batch_size"})
        if (isNull(row, key))
            missing.push_back(key);
    if (isNull(row, "pipeline_parallel") && !fsdpOnly)
        missing.push_back("pipeline_parallel");
    if (isNull(row, "data_parallel") && isNull(row, "pipeline_parallel") && !fsdpOnly)
        missing.push_back("data_parallel");
    const auto rules = seriesRules(c.series);
    if (!rules)
        missing.push_back(cat("a FLOP-counting rule for the published figure (", text(row, "tflops_metric"), ")"));
    if (!missing.empty()) {
        c.reason = cat("not stated: ", join(missing));
        return c;
    }
    c.metric = rules->metric;
    c.assumptions.push_back(rules->note);

    // --- the model --------------------------------------------------------------------------------------------
    TransformerShape& t = c.shape;
    t.family = rules->llama ? "llama" : "gpt2";
    t.hidden = *optInt(row, "hidden_size");
    t.num_layers = *optInt(row, "num_layers");
    t.num_heads = *optInt(row, "num_attention_heads");
    t.head_dim = t.hidden / t.num_heads;
    if (const auto kv = optInt(row, "num_kv_heads")) {
        t.num_kv_heads = *kv;
    } else {
        t.num_kv_heads = t.num_heads;
        c.assumptions.push_back("num_kv_heads null: multi-head attention (kv heads = heads)");
    }
    if (const auto ffn = optInt(row, "ffn_hidden_size")) {
        t.ffn_hidden = *ffn;
    } else if (!rules->llama) {
        t.ffn_hidden = 4 * t.hidden;
        c.assumptions.push_back("ffn_hidden_size null: 4h (standard GPT, data README)");
    } else {
        c.reason = "not stated: ffn_hidden_size (Llama)";
        return c;
    }
    if (const auto vocab = optInt(row, "vocab_size")) {
        t.vocab = *vocab;
    } else if (const auto family = familyVocab(c.model)) {
        t.vocab = *family;
        c.assumptions.push_back(cat("vocab_size null: ", *family, " (the model family's tokenizer)"));
    } else {
        c.reason = "not stated: vocab_size";
        return c;
    }
    c.seq_len = *optInt(row, "seq_length");
    t.max_positions = c.seq_len;
    t.gated_mlp = rules->llama;
    t.norm = rules->llama ? "rmsnorm" : "layernorm";
    t.tied_embeddings = rules->tied;
    t.learned_positions = rules->learned_positions;
    t.flash_attention = rules->flash;
    t.dropout = rules->dropout;
    t.embedding_norm = rules->embedding_norm;
    const std::string precision = toLower(text(row, "precision"));
    c.dtype = contains(precision, "fp16") && !contains(precision, "bf16") ? DType::F16 : DType::BF16;

    // --- the cluster ------------------------------------------------------------------------------------------
    const std::string gpuType = text(row, "gpu_type");
    const auto device = devicePresetFor(gpuType);
    if (!device) {
        c.reason = cat("no device preset for gpu_type '", gpuType, "'");
        return c;
    }
    c.device = *device;
    if (const auto gpn = optInt(row, "gpus_per_node")) {
        c.gpus_per_node = static_cast<int>(*gpn);
    } else {
        c.gpus_per_node = 8;
        c.assumptions.push_back("gpus_per_node null: 8");
    }
    if (contains(gpuType, "500W") || contains(gpuType, "500 W") || contains(gpuType, "lower-TDP")
        || contains(text(row, "interconnect"), "500W power limit")) {
        c.caveats.push_back("H100 96 GB HBM2e at a 500 W power cap, costed as a 700 W H100 SXM (predicts too high)");
        // Both torchtitan benchmark docs (llama3_h100_202412_torchtitan.md, asyncTP_llama3_h100_2025-06_torchtitan.md,
        // "Hardware"): "Each H100 GPU is equipped with 96GB HBM2e with 2.4 TB/sec peak memory bandwidth".
        c.hbm_bandwidth = 2.4e12;
        c.assumptions.push_back("HBM2e at the 2.4 TB/s the source states (the preset's HBM3: 3.35 TB/s)");
    }
    // get_flops at 117 TFLOP/s/GPU on 96 GPUs (N = 20,556,201,984, B = 1,538, s = 2,048: 4.93e17 FLOP per step)
    // makes a step 43.9 s and 150,000 steps 1,829 h: the 1,830 training hours the paper states. The figure may be
    // the whole run's average (restarts, evaluations, checkpoint saves), or both come from one steady rate.
    if (c.series == "gpt_neox_20b_production")
        c.caveats.push_back("published 117 TFLOP/s/GPU equals the paper's 1,830 training hours over 150,000 steps: "
                            "possibly a whole-run average with restarts and checkpoints (predicts too high)");
    // The torchtitan 2024-12 H100s have 96 GB: feasibility is judged against the stated memory, not the preset's.
    c.memory_bytes = optNumber(row, "gpu_memory_gb").value_or(0) * units::kGiB;
    c.inter_node_bandwidth = statedInterNodeBandwidth(text(row, "interconnect"), c.gpus_per_node);
    if (c.inter_node_bandwidth > 0)
        c.assumptions.push_back(cat(
            "inter-node bandwidth from the stated NICs: ", fixed(c.inter_node_bandwidth / 1e9, 2), " GB/s per GPU"));
    // A fabric that measured slower than its line rate (e.g. NCCL over Omni-Path) is costed at what was measured,
    // as `profile import-nccl` or a cluster file's link "efficiency" would do for a user's own cluster.
    if (const auto it = row.find("interconnect_measured"); it != row.end() && it->is_object()) {
        const double busbw = it->value("all_reduce_busbw_gbit_per_node", 0.0) / 8 * 1e9 / c.gpus_per_node;
        if (c.inter_node_bandwidth <= 0 || !(busbw > 0) || busbw > c.inter_node_bandwidth) {
            c.reason = "interconnect_measured needs stated NICs and a bus bandwidth at most their line rate";
            return c;
        }
        c.inter_node_efficiency = busbw / c.inter_node_bandwidth;
        c.assumptions.push_back(cat("inter-node links at ", fixed(100 * c.inter_node_efficiency, 1),
                                    "% of the line rate: the fabric's measured all-reduce bus bandwidth (",
                                    it->value("source", std::string("no source")), ")"));
    }

    // --- the parallel configuration ---------------------------------------------------------------------------
    ParallelConfig& p = c.config;
    p.framework = rules->framework;
    if (c.series == "torchtitan_benchmark_h100_2024_12") {
        // torchtitan 9dec370 (the benchmark's commit) compiled the model only: train.py has the loss's
        // torch.compile commented out.
        c.framework_profile = c.framework_profile.value_or(frameworkProfile(p.framework));
        c.framework_profile->compiles_loss = false;
    }
    if (c.series == "torchtitan_benchmark_h100_2024_12" || c.series == "torchtitan_trainy_h200_2025_06") {
        // Both commits (9dec370, e7c0cae) predate pytorch/torchtitan#1094: the root FSDP unit held the embedding
        // with the norm and output and stayed gathered, as did the last block (FrameworkProfile).
        c.framework_profile = c.framework_profile.value_or(frameworkProfile(p.framework));
        c.framework_profile->fsdp_root_keeps_embedding = true;
    }
    if (rules->megatron_sync_tp_backward) {
        c.framework_profile = c.framework_profile.value_or(frameworkProfile(p.framework));
        c.framework_profile->tp_backward_comm_async = false;
        c.assumptions.push_back("Megatron-LM before 2021-09: column-parallel backward all-reduces wait on the compute "
                                "stream");
    }
    p.tp = static_cast<int>(optInt(row, "tensor_parallel").value_or(1));
    p.pp = static_cast<int>(optInt(row, "pipeline_parallel").value_or(1));
    p.cp = static_cast<int>(optInt(row, "context_parallel").value_or(1));
    if (const auto dp = optInt(row, "data_parallel"))
        p.dp = static_cast<int>(*dp);
    else
        p.dp = c.gpus / (p.tp * p.pp * p.cp);
    if (p.tp * p.pp * p.cp * p.dp != c.gpus) {
        c.reason = cat("tp x pp x cp x dp = ", p.tp * p.pp * p.cp * p.dp, " is not the ", c.gpus, " GPUs");
        return c;
    }

    const std::string sharding = text(row, "sharding");
    if (contains(sharding, "SHARD_GRAD_OP"))
        p.zero_stage = 2;
    else if (contains(sharding, "FULL_SHARD") || contains(sharding, "FSDP"))
        p.zero_stage = 3;
    else if (const auto zero = optInt(row, "zero_stage"))
        p.zero_stage = static_cast<int>(*zero);
    else
        p.zero_stage = rules->default_zero;
    if (rules->deepspeed_stage0_bf16_optimizer) {
        p.zero_stage = 0;
        c.assumptions.push_back("ZeRO stage 0 in the DeepSpeed config: DeepSpeed runs BF16_Optimizer, which shards "
                                "the optimizer states itself");
    }

    if (isNull(row, "sequence_parallel")) {
        p.sequence_parallel = rules->sp_with_tp && p.tp > 1;
    } else {
        p.sequence_parallel = row.at("sequence_parallel").get<bool>() && p.tp > 1;
    }

    const std::string ac = toLower(text(row, "activation_recomputation"));
    if (ac.empty() || ac == "none") {
        p.recompute = RecomputeKind::None;
        if (ac.empty())
            c.assumptions.push_back("activation_recomputation null: none (Megatron-Core's default)");
    } else if (ac.starts_with("full")) {
        p.recompute = RecomputeKind::Full;
    } else if (ac.starts_with("selective") && rules->llama) {
        p.recompute = RecomputeKind::Modules;
        if (contains(ac, "per-layer")) {
            p.recompute_modules = torchtitanPerLayerModules(t.num_layers);
            c.assumptions.push_back("selective per-layer AC: every second block fully recomputed (torchtitan '2')");
        } else if (p.framework == Framework::Torchtitan) {
            // The profile's own per-op policy (layer_cost.cpp), as an imported or exported plan runs it.
            p.recompute = RecomputeKind::Selective;
            c.assumptions.push_back("selective AC: torchtitan per-op policy (SDPA and every odd mm saved)");
        } else {
            p.recompute_modules = torchtitanPerOpModules();
            c.assumptions.push_back("selective AC: torchtitan per-op policy (norms, rotary, act, wk, wo, w3 "
                                    "recomputed)");
        }
    } else if (ac.starts_with("selective")) {
        p.recompute = RecomputeKind::Selective;
    } else {
        c.reason = cat("unknown activation_recomputation '", ac, "'");
        return c;
    }

    // Micro-batching and the pipeline schedule.
    const std::int64_t globalBatch = *optInt(row, "global_batch_size");
    const std::string schedule = toLower(text(row, "pipeline_schedule"));
    std::int64_t microBatch = 1;
    p.vpp = 1;
    if (c.series == "megatron_ptdp_sc21_table1") {
        const double billions = optNumber(row, "num_params_billion").value_or(0);
        const Sc21Script* script = nullptr;
        for (const auto& s : kSc21Table1)
            if (std::abs(s.billions - billions) < 0.05)
                script = &s;
        if (!script) {
            c.reason = "no run_table_1.sh entry for this model size";
            return c;
        }
        microBatch = script->micro_batch;
        if (script->layers_per_virtual_stage > 0 && p.pp > 1)
            p.vpp = static_cast<int>(t.num_layers / p.pp / script->layers_per_virtual_stage);
        c.assumptions.push_back(
            cat("micro_batch_size null: ", microBatch, ", vpp ", p.vpp, " (Megatron-LM examples/sc21/run_table_1.sh)"));
    } else if (c.series.starts_with("torchtitan")) {
        // micro_batch_size holds torchtitan's local batch per data-parallel rank. With PP torchtitan splits it
        // into pipeline_parallel_microbatches, by default the number of stages (pp x stages per rank, 2 for
        // the interleaved schedule).
        const std::int64_t local = optInt(row, "micro_batch_size").value_or(1);
        if (p.pp > 1) {
            p.vpp = contains(schedule, "interleaved") ? 2 : 1;
            const std::int64_t stages = static_cast<std::int64_t>(p.pp) * p.vpp;
            microBatch = std::max<std::int64_t>(1, local / stages);
            c.assumptions.push_back(
                cat("PP micro-batches: torchtitan default (", stages, " = stages), ", microBatch, " sequences each"));
        } else {
            microBatch = local;
        }
    } else if (const auto mb = optInt(row, "micro_batch_size")) {
        microBatch = *mb;
        if (const auto vpp = optInt(row, "virtual_pipeline_stages"); vpp && p.pp > 1)
            p.vpp = static_cast<int>(*vpp);
    } else {
        microBatch = 1;
        c.assumptions.push_back("micro_batch_size null: 1");
    }
    p.micro_batch = static_cast<int>(microBatch);
    const std::int64_t perReplica = globalBatch / p.dp;
    if (perReplica * p.dp != globalBatch || perReplica % microBatch != 0) {
        c.reason = cat("global batch ", globalBatch, " does not split into dp ", p.dp, " x micro-batch ", microBatch);
        return c;
    }
    p.num_microbatches = static_cast<int>(perReplica / microBatch);
    p.schedule = p.vpp > 1 ? ScheduleKind::Interleaved1F1B : ScheduleKind::OneFOneB;
    c.global_batch = globalBatch;

    // --- the published figure ----------------------------------------------------------------------------------
    const bool a100 = c.device.starts_with("a100");
    switch (c.metric) {
    case Metric::TflopsMegatron4Pass:
    case Metric::TflopsMegatronCore:
    case Metric::TflopsNeox2021:
        if (const auto v = optNumber(row, "tflops_per_gpu"))
            c.published = *v;
        break;
    case Metric::TokensPerSecondPerGpu:
        if (const auto v = optNumber(row, "tokens_per_sec_per_gpu"))
            c.published = *v;
        break;
    case Metric::MptMfuPercent:
        if (const auto v = optNumber(row, "mfu_percent"))
            c.published = *v;
        c.metric_peak = (a100 ? 312 : 989) * 1e12;
        break;
    case Metric::SecondsPerIteration:
        if (const auto v = optNumber(row, "seconds_per_iteration"))
            c.published = *v;
        break;
    }
    c.published_peak_memory_gib = optNumber(row, "peak_memory_gib").value_or(0);
    if (c.published <= 0) {
        c.reason = cat("no published figure for ", metricName(c.metric));
        return c;
    }
    const std::string framework = text(row, "framework");
    // torchtitan rows without torch.compile ran eager PyTorch.
    if (c.series.starts_with("torchtitan") && !contains(framework, "compile"))
        p.eager_kernels = true;
    // Framework features the rows state, as the ParallelConfig switches that model them.
    p.fp8_linears = contains(precision, "float8") || contains(precision, "fp8");
    if (p.fp8_linears && contains(precision, "rowwise"))
        p.fp8_recipe = Float8Recipe::Rowwise;
    // NVIDIA's FP8 recipes make the linears' weights FP8 parameters: NeMo 2.0's bf16_with_fp8_mixed
    // (nemo/collections/llm/recipes/precision/mixed_precision.py, 3e251a0418, 2024-09-19: fp8_params = True) and
    // Megatron-Bridge's bf16_with_fp8_current_scaling_mixed (v0.2.0: fp8_param_gather = True). The 2024 tables
    // predate the first of these and do not state it; with Transformer Engine's FP8 weight copies beside 16-bit
    // weights, their Llama 3 8B (8 GPUs, 2024-07) and Llama 2 7B (4 GPUs, seq 4k, 2024-03) layouts would not fit
    // in 80 GB, and both ran.
    if (p.fp8_linears && p.zero_stage >= 1
        && (c.series == "nemo_performance_summary_h100_2024_07" || c.series == "nemo_long_context_h100_2024_03"
            || c.series == "megatron_bridge_performance_h100_2025_11"))
        p.fp8_param_gather = true;
    // torchtitan's enable_fsdp_float8_all_gather is off by default; the rows whose job config turned it on say so.
    if (p.framework == Framework::Torchtitan && !contains(toLower(framework), "float8 fsdp all-gather")) {
        c.framework_profile = c.framework_profile.value_or(frameworkProfile(p.framework));
        c.framework_profile->fsdp_gathers_fp8_tensorwise = false;
    }
    if (contains(toLower(framework), "asynctp") || contains(toLower(framework), "async tp")) {
        p.tp_comm_overlap = p.sequence_parallel;
        // torchtitan refuses async TP without torch.compile (parallelize.py apply_tp), so the run was compiled.
        p.eager_kernels = false;
    }
    if (c.series == "megatron_lm_readme_h100_weak_scaling_2024") {
        // The README's runs: --tp-comm-overlap (with SP) and --overlap-param-gather (distributed optimizer).
        p.tp_comm_overlap = p.sequence_parallel;
        p.overlap_param_gather = p.zero_stage == 1 || p.zero_stage == 2;
    }
    if (c.series == "megatron_bridge_performance_h100_2025_11") {
        // Megatron-Bridge's Llama 3 recipes overlap TP communication with userbuffers wherever they shard over TP
        // (src/megatron/bridge/recipes/llama/llama3.py at 97ad8cc6: tp_comm_overlap=True with the
        // userbuffers_*_h100_* configs; scripts/performance/configs/llama/llama3_llm_pretrain.py keeps them).
        p.tp_comm_overlap = p.sequence_parallel;
        // The release's performance scripts reduce gradients in bf16 (Megatron-Bridge v0.2.0
        // scripts/performance/configs/llama3/llama3_llm_pretrain.py set_llama3_common_configs and llama31/
        // llama31_llm_pretrain.py set_llama31_common_configs: ddp.grad_reduce_in_fp32 = False).
        p.grad_reduce_bf16 = true;
    }
    c.simulable = true;
    return c;
}

/** Exploration only (bench_calibration --param DEVICE.KNOB=VALUE): device-preset efficiencies replaced for a run. */
struct DeviceEfficiency
{
    double matmul = 0; ///< 0 = keep the preset's
    double attention = 0;
};
using DeviceOverrides = std::map<std::string, DeviceEfficiency>;

/** The graph, cluster and cost model of a case (built once; evaluate() is cheap afterwards). */
inline std::unique_ptr<CostModel> makeCostModel(const Case& c, const CostParams& params = {},
                                                const DeviceOverrides& overrides = {})
{
    BuildOptions options;
    options.batch = 1;
    options.seq_len = c.seq_len;
    options.dtype = c.dtype;
    auto graph = std::make_shared<const ModelGraph>(buildTransformerGraph(c.shape, options, c.id));
    Cluster cluster;
    cluster.device = devicePreset(c.device);
    if (c.inter_node_bandwidth > 0)
        cluster.device.inter_node.bandwidth = c.inter_node_bandwidth;
    if (c.hbm_bandwidth > 0)
        cluster.device.hbm_bandwidth = c.hbm_bandwidth;
    cluster.device.inter_node.efficiency = c.inter_node_efficiency;
    if (const auto it = overrides.find(c.device); it != overrides.end()) {
        if (it->second.matmul > 0)
            cluster.device.matmul_efficiency = it->second.matmul;
        if (it->second.attention > 0)
            cluster.device.attention_efficiency = it->second.attention;
    }
    cluster.gpus_per_node = c.gpus_per_node;
    cluster.nodes = (c.gpus + c.gpus_per_node - 1) / c.gpus_per_node;
    auto model = std::make_unique<CostModel>(std::move(graph), cluster, params);
    if (c.framework_profile)
        model->overrideFrameworkProfile(*c.framework_profile);
    return model;
}

/** Evaluates a simulable case and converts the step time into the row's metric. */
inline Prediction predict(const Case& c, const CostParams& params = {}, const DeviceOverrides& overrides = {})
{
    if (!c.simulable)
        throw std::invalid_argument(cat(c.id, " is not simulable: ", c.reason));
    const auto modelOwner = makeCostModel(c, params, overrides);
    const CostModel& model = *modelOwner;
    Workload workload;
    workload.global_batch = c.global_batch;
    workload.seq_len = c.seq_len;
    workload.memory_limit_bytes = c.memory_bytes;
    EvaluateOptions options;
    options.record_timeline = false;
    options.require_full_cluster = c.gpus % c.gpus_per_node == 0;

    Prediction out;
    out.evaluation = model.evaluate(c.config, workload, options);
    const Evaluation& e = out.evaluation;
    if (e.step_time <= 0)
        throw std::runtime_error(cat(c.id, ": the cost model could not evaluate the configuration: ", e.reason));
    for (const auto& layer : model.layers())
        out.model_params += layer.params;

    const TransformerShape& t = c.shape;
    const double B = static_cast<double>(c.global_batch);
    const double s = static_cast<double>(c.seq_len);
    const double l = static_cast<double>(t.num_layers);
    const double h = static_cast<double>(t.hidden);
    const double V = static_cast<double>(t.vocab);
    const double gpus = c.gpus;
    switch (c.metric) {
    case Metric::TflopsMegatron4Pass: {
        const double flops = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
        out.value = flops / (e.step_time * gpus) / 1e12;
        break;
    }
    case Metric::TflopsMegatronCore: {
        const double q = static_cast<double>(t.num_heads * t.head_dim) / h;
        const double groups = static_cast<double>(t.num_kv_heads) / static_cast<double>(t.num_heads);
        const double glu = t.gated_mlp ? 1.5 : 1.0;
        const double f = static_cast<double>(t.ffn_hidden) / h;
        const double flops = 12 * B * s * l * h * h * ((1 + groups + s / h) * q + f * glu + V / (2 * l * h));
        out.value = flops / (e.step_time * gpus) / 1e12;
        break;
    }
    case Metric::TflopsNeox2021: {
        const double flops = B * s * (6 * out.model_params + 60 * s * h * l);
        out.value = flops / (e.step_time * gpus) / 1e12;
        break;
    }
    case Metric::TokensPerSecondPerGpu:
        out.value = B * s / e.step_time / gpus;
        break;
    case Metric::MptMfuPercent: {
        const double perSequence = 6 * out.model_params * s + 12 * l * h * s * s;
        out.value = 100 * perSequence * (B / e.step_time) / (gpus * c.metric_peak);
        break;
    }
    case Metric::SecondsPerIteration:
        out.value = e.step_time;
        out.relative_error = c.published / e.step_time - 1;
        return out;
    }
    out.relative_error = (out.value - c.published) / c.published;
    return out;
}

/** Reads the calibration set (a JSON array of rows). */
inline std::vector<nlohmann::json> loadRows(const std::string& path)
{
    std::ifstream in(path);
    if (!in)
        throw std::runtime_error(cat("cannot open ", path));
    const nlohmann::json doc = nlohmann::json::parse(in);
    if (!doc.is_array())
        throw std::runtime_error(cat(path, ": expected a JSON array of rows"));
    return {doc.begin(), doc.end()};
}

} // namespace shardscape::calibration
