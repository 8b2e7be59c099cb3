// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/cost/cost_params.h"
#include "shardscape/cost/cost_source.h"
#include "shardscape/hardware/cluster.h"
#include "shardscape/model/model_graph.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shardscape {

/** How the linear layers' weights are stored for serving (embeddings, norms and the router stay bf16). */
enum class WeightFormat : std::uint8_t
{
    BF16,
    FP8, ///< W8A8 on devices with FP8 tensor cores, weight-only elsewhere
    INT8, ///< W8A8 int8 (SmoothQuant-style)
    INT4, ///< weight-only, group-128 scales and zeros (AWQ / GPTQ): bf16 compute
    FP4 ///< NVFP4: e2m1 with an fp8 scale per 16 elements; weight-only where the device has no FP4 peak
};
std::string_view weightFormatName(WeightFormat format);
std::optional<WeightFormat> parseWeightFormat(std::string_view name);
/** Stored bits per weight, scales included: 16, 8, 8, 4.25 (bf16 scale + zero per 128), 4.5 (fp8 scale per 16). */
double weightFormatBits(WeightFormat format);

/** A KV-cache element type: bf16, fp16 or fp8 (and "auto" = bf16, as the engines' default); nullopt otherwise. */
std::optional<DType> parseKvCacheDtype(std::string_view name);

/** The serving engine the deployment runs on; it sets the memory split and the scheduler's defaults. */
enum class ServingFramework : std::uint8_t
{
    Vllm,
    Sglang
};
std::string_view servingFrameworkName(ServingFramework framework);
std::optional<ServingFramework> parseServingFramework(std::string_view name);

/** What to serve: the request shape, the numerics and the service-level bounds. */
struct ServingRequest
{
    std::int64_t input_len = 1024; ///< prompt tokens per request
    std::int64_t output_len = 256; ///< generated tokens per request
    int concurrency
        = 0; ///< requests in flight over the whole deployment; 0 = "max" (the most that fit and meet bounds)
    WeightFormat weight_format = WeightFormat::BF16;
    DType kv_dtype = DType::BF16; ///< BF16 or FP8
    double max_ttft_ms = 0; ///< 0 = unbounded
    double max_tpot_ms = 0; ///< 0 = unbounded
    ServingFramework framework = ServingFramework::Vllm;
    /** Share of HBM the engine may take (vLLM gpu_memory_utilization, SGLang mem_fraction_static); 0 = its
        default (vLLM 0.9; SGLang's depends on the GPU, ServingEstimate::memory_fraction says which). */
    double memory_fraction = 0;
    double memory_limit_bytes = 0; ///< per GPU; 0 = the device's capacity
    /** Tokens one engine step may carry (vLLM max_num_batched_tokens, SGLang chunked_prefill_size); 0 = default. */
    std::int64_t max_batched_tokens = 0;

    std::int64_t contextLen() const { return input_len + output_len; }
    /** Throws InputError naming the field when a value is out of range. */
    void validate() const;
};

/** One serving deployment's shape: dp replicas of tp x pp GPUs; MoE experts split ep ways (1 or tp x dp). */
struct ServingParallel
{
    int tp = 1;
    int pp = 1;
    int ep = 1;
    int dp = 1;
    int gpus() const { return tp * pp * dp; }
    std::string describe() const;
};

/** Per-GPU memory of the busiest pipeline stage, bytes. */
struct ServingMemory
{
    double weights = 0;
    double kv_cache = 0; ///< what the requests in flight hold at full context
    double kv_pool = 0; ///< what the engine reserves for KV cache (all of it is allocated at start)
    double activations = 0; ///< the forward pass's peak workspace at max_batched_tokens, logits included
    double reserve = 0; ///< CUDA context, NCCL and cuBLAS buffers, CUDA graphs, and what the memory fraction leaves
    double capacity = 0; ///< the limit the four above must fit in
};

/** Where one decode step's time goes on the busiest stage, seconds (sums to decode_step_s). */
struct DecodeBreakdown
{
    double weights = 0; ///< linear layers: max(weight reads, their FLOPs)
    double kv = 0; ///< attention: max(KV reads, its FLOPs)
    double communication = 0; ///< TP all-reduces, EP all-to-alls, pipeline sends
    double overhead = 0; ///< small kernels and the engine's per-step scheduling
};

/** Throughput and latency at one concurrency: one point of the throughput-vs-batch curve. */
struct ServingPoint
{
    int concurrency = 0; ///< whole deployment
    double ttft_s = 0;
    double tpot_s = 0;
    double output_tokens_per_s = 0; ///< whole deployment
};

/** A prediction for one serving deployment. */
struct ServingEstimate
{
    ServingParallel parallel;
    ServingRequest request;
    bool feasible = false;
    std::string reason; ///< why not, when infeasible
    int concurrency = 0; ///< the one used (with "max": the largest that fits and meets the bounds)
    int max_concurrency = 0; ///< the most sequences the KV pool holds at full context (whole deployment)
    double ttft_s = 0; ///< time to first token under that load
    double tpot_s = 0; ///< time per output token after the first
    double output_tokens_per_s = 0; ///< whole deployment
    double total_tokens_per_s = 0; ///< input + output tokens per second
    double prefill_s = 0; ///< one prompt alone, idle engine
    double decode_step_s = 0; ///< one decode step of the busiest stage at this load
    double memory_fraction = 0; ///< the one applied
    std::int64_t max_batched_tokens = 0; ///< the one applied
    double kv_bytes_per_token = 0; ///< per GPU, busiest stage
    DecodeBreakdown decode;
    ServingMemory memory;
    std::vector<ServingPoint> curve; ///< concurrency 1, 2, 4, ... up to max_concurrency
    std::string cost_source;

    double outputTokensPerSecondPerGpu() const { return output_tokens_per_s / std::max(1, parallel.gpus()); }
};

/** Serving-specific physical knobs (documented defaults; never fitted per case). */
struct ServingParams
{
    /** Fraction of HBM bandwidth a decode GEMV or paged-attention kernel streams at (FlashInfer and vLLM's kernels
        reach 75-85% of the datasheet on H100; the training default is 0.75). */
    double decode_memory_efficiency = 0.8;
    /** Fraction of the dense peak a forward-only flash-attention kernel sustains in prefill (FA3 on H100 forward
        bf16 at 8k reaches 500-650 TFLOP/s of 989). */
    double prefill_attention_efficiency = 0.5;
    /** CUDA context, cuBLAS workspace and NCCL buffers per GPU, beyond the engine's memory fraction. */
    double runtime_reserve_bytes = 1.5 * units::kGiB;
    /** Small fused kernels per transformer layer per step (norms, rotary, activation, cache write). */
    double small_kernels_per_layer = 4;
    /** The engine's per-step CPU work not hidden by asynchronous scheduling, seconds. */
    double step_overhead_s = 0.3e-3;
    /** The largest decode batch one replica runs (vLLM's and SGLang's CUDA-graph batch sizes end near here). */
    int max_batch_per_replica = 1024;
};

/**
 * What serving reads from a model: per-layer weight and KV-cache sizes, independent of the deployment.
 * Built from a transformer graph (preset, HF config.json); graphs without a transformer shape are refused.
 */
struct ServingModel
{
    struct LayerWeights
    {
        double quantizable = 0; ///< linear weights split over tp (elements)
        double replicated_linear = 0; ///< linear weights kept whole on every TP rank (MLA's down-projections)
        double replicated = 0; ///< norms, router, biases: bf16, whole on every rank (elements)
        double experts = 0; ///< all experts' weights of an MoE layer (elements)
        int num_experts = 0;
        int top_k = 0;
        double kv_elements_per_token = 0; ///< K and V (or MLA's latent) per token, unsplit
        bool kv_split_by_tp = true; ///< false for MLA, whose latent is replicated on every TP rank
        std::int64_t window = 0; ///< keys attended at most (0 = all)
        /** FLOPs per query token per attended key: 2 x heads x (dk + dv); MLA decode attends in the latent. */
        double decode_attention_flops_per_key = 0;
        double prefill_attention_flops_per_key = 0;
    };
    std::string name;
    std::int64_t hidden = 0;
    std::int64_t vocab = 0;
    std::int64_t num_heads = 0;
    std::int64_t num_kv_heads = 0;
    std::int64_t max_positions = 0;
    bool mla = false;
    double embedding = 0; ///< elements, split over tp by vocabulary
    double head = 0; ///< LM head and final norm, elements
    bool tied_embeddings = false; ///< the head reuses the embedding (a second copy on the last stage when pp > 1)
    std::vector<LayerWeights> layers;
    double params = 0;

    static ServingModel fromGraph(const ModelGraph& graph);
    bool isMoe() const;
    /** KV-cache bytes per token of the whole model on one GPU at tp 1 (2 x layers x kv_heads x head_dim x dtype). */
    double kvBytesPerToken(DType kvDtype) const;
};

/**
 * Predicts one serving deployment: memory (weights, KV pool, activation workspace, reserve), the largest
 * concurrency the KV pool holds, and under continuous batching with chunked prefill the TTFT, TPOT and
 * throughput at the requested concurrency (Little's law over one request's life: TTFT + (O - 1) x TPOT).
 * Returns infeasible estimates with a reason (does not fit, does not divide); throws InputError for bad input.
 */
ServingEstimate estimateServing(const ServingModel& model, const Cluster& cluster, const CostSource& costs,
                                const CostParams& params, const ServingParallel& parallel,
                                const ServingRequest& request, const ServingParams& serving = {});

/**
 * The mean wait of a request that arrives during a continuous-batching step for that step to end, when a fraction
 * `chunkFraction` of the steps carry a prefill chunk and take `chunkStep` s, and the steps average `meanStep` s (the
 * others correspondingly shorter). Renewal theory: an arrival lands in a step with probability proportional to its
 * length, so the wait is E[S^2] / (2 E[S]), at least meanStep / 2.
 */
double meanResidualStep(double meanStep, double chunkStep, double chunkFraction);

/** Why `parallel` cannot serve `model` on `cluster` (heads, experts, layers, GPUs), or empty. */
std::string servingParallelError(const ServingModel& model, const Cluster& cluster, const ServingParallel& parallel);

} // namespace shardscape
