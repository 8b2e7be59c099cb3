// SPDX-License-Identifier: MIT
// One serving deployment's memory and speed: weights and KV cache per GPU, then decode steps that stream the weights
// and the KV cache from HBM, with the prefill of new requests chunked into the same steps (continuous batching).
#include "shardscape/cost/serving.h"

#include "shardscape/support/error.h"
#include "shardscape/support/strings.h"
#include "shardscape/support/units.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace shardscape {

namespace {

/** vLLM and vLLM-style engines allocate the KV cache in blocks of this many tokens. */
constexpr double kKvBlockTokens = 16;
/** Sequences the engines' samplers profile at start (vLLM max_num_seqs' default of 256 in its profile run). */
constexpr double kSamplerProfileRows = 256;
/** Measured FP8 (tensorwise) over bf16 GEMM throughput on H100 at Llama 3 8B / 70B shapes (median, session 8). */
constexpr double kLowPrecisionGemmSpeedup = 1.78;

struct Stage
{
    std::size_t first = 0; ///< block indices [first, last)
    std::size_t last = 0;
    bool embedding = false;
    bool head = false;
};

/** Blocks split as evenly as counts allow, the earlier stages taking the remainder. */
std::vector<Stage> splitStages(std::size_t layers, int pp)
{
    std::vector<Stage> stages(static_cast<std::size_t>(pp));
    const std::size_t base = layers / static_cast<std::size_t>(pp);
    const std::size_t extra = layers % static_cast<std::size_t>(pp);
    std::size_t at = 0;
    for (std::size_t s = 0; s < stages.size(); ++s) {
        stages[s].first = at;
        at += base + (s < extra ? 1 : 0);
        stages[s].last = at;
    }
    stages.front().embedding = true;
    stages.back().head = true;
    return stages;
}

/** The work one engine step puts on one stage: decoding sequences and prefill tokens, and their contexts. */
struct StepLoad
{
    double decode_seqs = 0;
    double decode_context = 0; ///< keys each decoding sequence attends
    double prefill_tokens = 0;
    double prefill_context = 0; ///< keys an average prefill token attends (half its prompt: causal)
};

class ServingEstimator
{
public:
    ServingEstimator(const ServingModel& model, const Cluster& cluster, const CostSource& costs,
                     const CostParams& params, const ServingParallel& parallel, const ServingRequest& request,
                     const ServingParams& serving)
        : m_model(model)
        , m_cluster(cluster)
        , m_costs(costs)
        , m_params(params)
        , m_parallel(parallel)
        , m_request(request)
        , m_serving(serving)
        , m_stages(splitStages(model.layers.size(), parallel.pp))
    {
        m_weightBytes = weightFormatBits(request.weight_format) / 8;
        // FP8 weights run W8A8 on FP8 tensor cores; int8 on int8 ones; the 4-bit formats dequantize into bf16
        // GEMMs (Marlin, Machete) on devices without FP4 math.
        // FP8 weights run W8A8 GEMMs where the device has FP8 tensor cores, at the measured FP8 / bf16 throughput
        // ratio (tests/data/measured_fp8_gemms_h100.json: tensorwise over bf16, median 1.78 on H100, not the 2x of
        // the datasheet); int8 on int8 tensor cores likewise; the 4-bit formats dequantize into bf16 GEMMs (Marlin,
        // Machete) on devices without FP4 math.
        m_gemmRate = cluster.device.peak(DType::BF16) * matmulEfficiency();
        if ((request.weight_format == WeightFormat::FP8 && cluster.device.peak(DType::FP8) > 0)
            || (request.weight_format == WeightFormat::INT8 && cluster.device.peak(DType::I8) > 0))
            m_gemmRate *= kLowPrecisionGemmSpeedup;
        m_attentionRate = cluster.device.peak(DType::BF16) * serving.prefill_attention_efficiency;
        m_bandwidth = cluster.device.hbm_bandwidth * serving.decode_memory_efficiency;
        m_tpGroup = {parallel.tp, std::min(parallel.tp, cluster.gpus_per_node)};
        m_epGroup = {parallel.ep, std::min(parallel.ep, cluster.gpus_per_node)};
    }

    double matmulEfficiency() const
    {
        return m_cluster.device.matmul_efficiency > 0 ? m_cluster.device.matmul_efficiency : m_params.matmul_efficiency;
    }
    const std::vector<Stage>& stages() const { return m_stages; }

    double stageWeights(const Stage& stage) const
    {
        const double tp = m_parallel.tp;
        double bytes = 0;
        for (std::size_t i = stage.first; i < stage.last; ++i) {
            const auto& l = m_model.layers[i];
            bytes += (l.quantizable / tp + l.replicated_linear) * m_weightBytes + l.replicated * 2;
            bytes += l.experts / expertShards() * m_weightBytes;
        }
        if (stage.embedding)
            bytes += m_model.embedding / tp * 2;
        if (stage.head)
            bytes += (m_model.head + (m_model.tied_embeddings && m_parallel.pp > 1 ? m_model.embedding : 0)) / tp * 2;
        return bytes;
    }

    /** KV bytes one token of one layer takes on one GPU: K/V heads split over TP, replicated past kv_heads. */
    double layerKvBytesPerToken(const ServingModel::LayerWeights& l) const
    {
        double elements = l.kv_elements_per_token;
        if (l.kv_split_by_tp) {
            const auto kvHeads = static_cast<double>(m_model.num_kv_heads);
            elements *= std::ceil(kvHeads / m_parallel.tp) / kvHeads;
        }
        return elements * dtypeBytes(m_request.kv_dtype);
    }

    double stageKvBytesPerToken(const Stage& stage) const
    {
        double bytes = 0;
        for (std::size_t i = stage.first; i < stage.last; ++i)
            bytes += layerKvBytesPerToken(m_model.layers[i]);
        return bytes;
    }

    /** One sequence of `context` tokens, in whole blocks; windowed layers keep only their window. */
    double stageKvBytesPerSequence(const Stage& stage, double context) const
    {
        double bytes = 0;
        for (std::size_t i = stage.first; i < stage.last; ++i) {
            const auto& l = m_model.layers[i];
            const double kept = l.window > 0 ? std::min(context, static_cast<double>(l.window)) : context;
            bytes += layerKvBytesPerToken(l) * std::ceil(kept / kKvBlockTokens) * kKvBlockTokens;
        }
        return bytes;
    }

    /** The profile run's peak: max_batched_tokens through the widest layer, and the sampler's fp32 logits. */
    double stageActivations(const Stage& stage, double batchedTokens) const
    {
        const double hidden = static_cast<double>(m_model.hidden);
        double widest = 0;
        for (std::size_t i = stage.first; i < stage.last; ++i) {
            const auto& l = m_model.layers[i];
            // Per token: the residual stream, a norm output and the layer's sharded intermediate widths.
            double width = 4 * hidden + l.quantizable / hidden / m_parallel.tp;
            if (l.num_experts > 0)
                width += l.experts / l.num_experts / hidden * l.top_k / (m_parallel.ep > 1 ? 1 : m_parallel.tp);
            widest = std::max(widest, width);
        }
        double bytes = batchedTokens * widest * 2;
        if (stage.head)
            bytes += std::min(batchedTokens, kSamplerProfileRows) * static_cast<double>(m_model.vocab) * 4 * 2;
        return bytes;
    }

    /** The GEMM rate at `rows` tokens: the training model's shape curve along m (CostParams::matmul_half_dim), whose
        small-m loss only matters once the FLOPs outlast the weight reads. */
    double gemmRate(double rows) const
    {
        const double m = std::max(rows, 1.0);
        return m_gemmRate * m / (m + m_params.matmul_half_dim);
    }

    double expertShards() const { return m_parallel.ep > 1 ? m_parallel.ep : m_parallel.tp; }

    double allReduce(double bytes) const
    {
        if (m_parallel.tp <= 1 || bytes <= 0)
            return 0;
        const double nccl = m_costs.collectiveTime(Collective::AllReduce, bytes, m_tpGroup);
        if (m_tpGroup.nodes() > 1)
            return nccl;
        // vLLM's and SGLang's custom all-reduce inside an NVLink node: one barrier, then each GPU reads the others'
        // buffers directly (one shot), which beats NCCL's ring on the small messages of decode.
        const Link& link = m_cluster.device.intra_node;
        const double oneShot
            = 2 * link.latency + bytes * (m_parallel.tp - 1) / (link.bandwidth * m_params.intra_node_efficiency);
        return std::min(nccl, oneShot);
    }

    /** Seconds of one engine step on `stage`; `parts` (optional) receives where they go. */
    double stageTime(const Stage& stage, const StepLoad& load, DecodeBreakdown* parts = nullptr) const
    {
        DecodeBreakdown d;
        const double tp = m_parallel.tp;
        const double hidden = static_cast<double>(m_model.hidden);
        const double tokens = load.decode_seqs + load.prefill_tokens;
        const auto gemm = [this](double rows, double flops, double bytes) {
            return std::max(flops / gemmRate(rows), bytes / m_bandwidth);
        };
        for (std::size_t i = stage.first; i < stage.last; ++i) {
            const auto& l = m_model.layers[i];
            const double dense = l.quantizable / tp + l.replicated_linear;
            d.weights += gemm(tokens, 2 * tokens * dense, dense * m_weightBytes + l.replicated * 2);
            if (l.num_experts > 0)
                d.weights += expertTime(l, tokens);
            // Decode attention streams each sequence's KV cache; prefill attention is compute-bound.
            const double kvToken = layerKvBytesPerToken(l);
            const auto keys = [&l](double context) {
                return l.window > 0 ? std::min(context, static_cast<double>(l.window)) : context;
            };
            const double decodeKeys = load.decode_seqs * keys(load.decode_context);
            d.kv += std::max(decodeKeys * l.decode_attention_flops_per_key / tp / m_attentionRate,
                             decodeKeys * kvToken / m_bandwidth);
            const double prefillKeys = load.prefill_tokens * keys(load.prefill_context);
            d.kv += prefillKeys * l.prefill_attention_flops_per_key / tp / m_attentionRate;
            // Attention and MLP outputs are all-reduced over TP; routed tokens cross the EP group twice.
            d.communication += 2 * allReduce(tokens * hidden * 2);
            if (l.num_experts > 0 && m_parallel.ep > 1)
                d.communication
                    += 2 * m_costs.collectiveTime(Collective::AllToAll, tokens * l.top_k * hidden * 2 / tp, m_epGroup);
            d.overhead += m_serving.small_kernels_per_layer * m_costs.minKernelTime();
        }
        if (stage.head) {
            // Only the sequences that sample a token run the LM head.
            const double rows = load.decode_seqs + (load.prefill_tokens > 0 ? 1 : 0);
            const double head = m_model.head / tp;
            d.weights += gemm(rows, 2 * rows * head, head * 2);
        }
        if (m_parallel.pp > 1 && !stage.head)
            d.communication
                += m_costs.p2pTime(tokens * hidden * 2, m_parallel.tp * m_parallel.pp > m_cluster.gpus_per_node);
        d.overhead += m_serving.step_overhead_s;
        if (parts)
            *parts = d;
        return d.weights + d.kv + d.communication + d.overhead;
    }

    /** Experts of one MoE layer: only the experts some token routes to are read; the replicas of an EP group share
        them, so EP across dp replicas sees all replicas' tokens. */
    double expertTime(const ServingModel::LayerWeights& l, double tokens) const
    {
        const double experts = l.num_experts;
        const double perExpert = l.experts / experts;
        const double groupTokens = tokens * (m_parallel.ep > 1 ? m_parallel.dp : 1);
        const double touched = 1 - std::pow(1 - static_cast<double>(l.top_k) / experts, groupTokens);
        const double localWeights = l.experts / expertShards();
        const double routedHere = m_parallel.ep > 1 ? groupTokens * l.top_k / m_parallel.ep : tokens * l.top_k;
        const double flops = 2 * routedHere * perExpert / (m_parallel.ep > 1 ? 1 : m_parallel.tp);
        const double rowsPerExpert
            = routedHere / std::max(1.0, touched * experts / (m_parallel.ep > 1 ? m_parallel.ep : 1));
        return std::max(flops / gemmRate(rowsPerExpert), localWeights * touched * m_weightBytes / m_bandwidth);
    }

    double busiestStageTime(const StepLoad& load, DecodeBreakdown* parts = nullptr) const
    {
        double worst = -1;
        for (const auto& stage : m_stages) {
            DecodeBreakdown d;
            const double t = stageTime(stage, load, &d);
            if (t > worst) {
                worst = t;
                if (parts)
                    *parts = d;
            }
        }
        return worst;
    }

    double sumStageTime(const StepLoad& load) const
    {
        double sum = 0;
        for (const auto& stage : m_stages)
            sum += stageTime(stage, load);
        return sum;
    }

private:
    const ServingModel& m_model;
    const Cluster& m_cluster;
    const CostSource& m_costs;
    const CostParams& m_params;
    ServingParallel m_parallel;
    const ServingRequest& m_request;
    const ServingParams& m_serving;
    std::vector<Stage> m_stages;
    double m_weightBytes = 2;
    double m_gemmRate = 1;
    double m_attentionRate = 1;
    double m_bandwidth = 1;
    GroupShape m_tpGroup;
    GroupShape m_epGroup;
};

/** vLLM V1 (EngineArgs._set_default_args, vllm/engine/arg_utils.py @99d7eb5): max_num_batched_tokens 8192 for
    `vllm serve` on GPUs of 70 GiB or more other than the A100, else 2048. SGLang (arg_groups/memory_hook.py
    handle_gpu_memory_settings @a82da8d): chunked_prefill_size 2048 under 20 GiB, 4096 under 60 GiB, 8192 under
    160 GiB, 16384 above. */
std::int64_t defaultBatchedTokens(ServingFramework framework, const DeviceSpec& device)
{
    const double gib = device.memory_bytes / units::kGiB;
    if (framework == ServingFramework::Vllm)
        return gib >= 70 && device.name.find("a100") == std::string::npos ? 8192 : 2048;
    return gib < 20 ? 2048 : gib < 60 ? 4096 : gib < 160 ? 8192 : 16384;
}

/**
 * vLLM: gpu_memory_utilization 0.9. SGLang (memory_hook.py L245-297 @a82da8d): (memory - reserved) / memory with
 * reserved = 512 MiB + 1.5 KiB x max(chunked_prefill_size, 2048) + tp x pp / 8 GiB + the CUDA graphs' share (2 MiB
 * per decode batch size up to 256 or 512, 1.5 GiB more for MLA's prefill graphs), at least 10 GiB above 60 GiB.
 */
double defaultMemoryFraction(ServingFramework framework, const DeviceSpec& device, const ServingParallel& parallel,
                             std::int64_t batchedTokens, bool mla)
{
    if (framework == ServingFramework::Vllm)
        return 0.9;
    const double memoryMiB = device.memory_bytes / units::kMiB;
    const double graphMiB = (parallel.tp < 4 ? 256.0 : 512.0) * 2 + (mla ? 1536.0 : 0.0);
    double reservedMiB = 512 + 1.5 * static_cast<double>(std::max<std::int64_t>(batchedTokens, 2048))
        + parallel.tp * parallel.pp / 8.0 * 1024 + graphMiB;
    if (memoryMiB > 60 * 1024)
        reservedMiB = std::max(reservedMiB, 10.0 * 1024);
    return std::round((memoryMiB - reservedMiB) / memoryMiB * 1000) / 1000;
}

struct Timing
{
    double ttft = 0;
    double tpot = 0;
    double output_tokens_per_s = 0;
    double step = 0;
    DecodeBreakdown decode;
};

/**
 * The mean wait of a prompt for the prefill capacity ahead of it (Pollaczek-Khinchine, M/D/1): prompts arrive
 * independently at `rate` per second and each holds the replica's bottleneck stage for `service` seconds (fixed
 * lengths: deterministic service). Infinite at or beyond saturation.
 */
double prefillQueueWait(double rate, double service)
{
    const double rho = rate * service;
    return rho < 1 ? rho * service / (2 * (1 - rho)) : std::numeric_limits<double>::infinity();
}

/**
 * Continuous batching at `concurrency` requests over the deployment, each replica stepping pp micro-batches.
 * Each request spends ceil(I / chunk) steps in prefill and O in decode, so the steady state replaces b / O sequences
 * per step: b x I / O prefill tokens ride along with every decode step (chunked prefill). A new prompt also queues
 * for prefill behind the prompts that arrived before it: the replica's requests arrive at concurrency / life (a
 * closed loop), so the life and the queue are solved together.
 */
Timing timingAt(const ServingEstimator& est, const ServingRequest& r, const ServingParallel& p, int concurrency,
                double batchedTokens)
{
    const double input = static_cast<double>(r.input_len);
    const double output = static_cast<double>(r.output_len);
    const double perReplica = std::ceil(static_cast<double>(concurrency) / p.dp);
    const double microBatches = std::min<double>(p.pp, perReplica);
    const double b = perReplica / microBatches;
    const double prefillSteps = std::ceil(input / batchedTokens);
    const double decoding = output / (output + prefillSteps);
    // The other requests of the micro-batch: their decode steps, and the prefill that replaces finished ones.
    const double others = (b - 1) * decoding;
    const double othersPrefill = others * input / output;

    Timing t;
    StepLoad decodeStep {.decode_seqs = others + 1,
                         .decode_context = input + output / 2,
                         .prefill_tokens = othersPrefill,
                         .prefill_context = input / 2};
    t.step = est.busiestStageTime(decodeStep, &t.decode);
    t.tpot = p.pp * t.step;

    StepLoad chunkStep {.decode_seqs = others,
                        .decode_context = input + output / 2,
                        .prefill_tokens = std::max(othersPrefill, std::min(input, batchedTokens)),
                        .prefill_context = input / 2};
    const double chunkTime = p.pp > 1 ? p.pp * est.busiestStageTime(chunkStep) : est.sumStageTime(chunkStep);
    const double decodeTime = (output - 1) * t.tpot;
    // A request arriving mid-step waits for that step to end. Arrivals land in long steps more often than in short
    // ones (renewal theory: the mean residual is E[S^2] / (2 E[S]), not E[S] / 2): the steps that carry a prefill
    // chunk, a fraction f = chunks per second x E[S] of them, take chunkTime; the rest are shorter, so that the
    // mean stays the decode step the throughput uses.
    const auto stepWait
        = [&](double rate) { return b > 1 ? meanResidualStep(t.tpot, chunkTime, rate * prefillSteps * t.tpot) : 0.0; };
    const double ownChunks = prefillSteps * chunkTime;

    // The prefill server: one prompt's chunks on the replica's bottleneck stage.
    const StepLoad promptChunk {.prefill_tokens = input / prefillSteps, .prefill_context = input / 2};
    const double service = prefillSteps * est.busiestStageTime(promptChunk);
    double rate = 0;
    if (perReplica > 1) {
        // rate = perReplica / life(rate): life grows with the rate, so the fixed point is unique; bisect for it.
        double lo = 0;
        double hi = std::min(perReplica / (ownChunks + decodeTime), 1 / service);
        for (int i = 0; i < 60; ++i) {
            const double mid = 0.5 * (lo + hi);
            const double life = stepWait(mid) + ownChunks + prefillQueueWait(mid, service) + decodeTime;
            (mid * life < perReplica ? lo : hi) = mid;
        }
        rate = lo;
    }
    t.ttft = stepWait(rate) + ownChunks + (perReplica > 1 ? prefillQueueWait(rate, service) : 0);
    const double life = t.ttft + decodeTime;
    t.output_tokens_per_s = concurrency * output / life;
    return t;
}

} // namespace

double meanResidualStep(double meanStep, double chunkStep, double chunkFraction)
{
    const double f = std::clamp(chunkFraction, 0.0, 1.0);
    if (meanStep <= 0 || f <= 0 || f >= 1 || chunkStep <= meanStep)
        return 0.5 * std::max(meanStep, 0.0);
    // The steps without a chunk are as much shorter as keeps the mean (never below zero).
    const double shortStep = std::max(0.0, (meanStep - f * chunkStep) / (1 - f));
    const double mean = f * chunkStep + (1 - f) * shortStep;
    return (f * chunkStep * chunkStep + (1 - f) * shortStep * shortStep) / (2 * mean);
}

std::string servingParallelError(const ServingModel& model, const Cluster& cluster, const ServingParallel& p)
{
    if (p.tp < 1 || p.pp < 1 || p.dp < 1 || p.ep < 1)
        return "tp, pp, dp and ep must be at least 1";
    if (p.gpus() > cluster.worldSize())
        return cat("tp x pp x dp = ", p.gpus(), " GPUs, the cluster has ", cluster.worldSize());
    if (model.num_heads % p.tp != 0)
        return cat("tp ", p.tp, " does not divide the ", model.num_heads,
                   " attention heads (vLLM and SGLang split heads evenly)");
    if (!model.mla && model.num_kv_heads % p.tp != 0 && p.tp % model.num_kv_heads != 0)
        return cat("tp ", p.tp, " and the ", model.num_kv_heads,
                   " KV heads must divide one another (heads are split or replicated whole)");
    if (static_cast<std::size_t>(p.pp) > model.layers.size())
        return cat("pp ", p.pp, " exceeds the ", model.layers.size(), " layers");
    if (p.ep > 1) {
        if (!model.isMoe())
            return cat("ep ", p.ep, " needs a mixture-of-experts model; ", model.name, " is dense");
        if (p.ep != p.tp * p.dp)
            return cat("ep must be 1 (experts split over TP) or tp x dp = ", p.tp * p.dp,
                       " (vLLM --enable-expert-parallel, SGLang --ep-size with DP attention), got ", p.ep);
        for (const auto& l : model.layers)
            if (l.num_experts > 0 && l.num_experts % p.ep != 0)
                return cat("ep ", p.ep, " does not divide the ", l.num_experts, " experts");
    }
    return {};
}

ServingEstimate estimateServing(const ServingModel& model, const Cluster& cluster, const CostSource& costs,
                                const CostParams& params, const ServingParallel& parallel,
                                const ServingRequest& request, const ServingParams& serving)
{
    request.validate();
    ServingEstimate e;
    e.parallel = parallel;
    e.request = request;
    e.cost_source = costs.name();
    const double capacity = request.memory_limit_bytes > 0 ? request.memory_limit_bytes : cluster.device.memory_bytes;
    e.memory.capacity = capacity;
    e.max_batched_tokens = request.max_batched_tokens > 0 ? request.max_batched_tokens
                                                          : defaultBatchedTokens(request.framework, cluster.device);
    e.memory_fraction = request.memory_fraction > 0
        ? request.memory_fraction
        : defaultMemoryFraction(request.framework, cluster.device, parallel, e.max_batched_tokens, model.mla);
    if (const std::string error = servingParallelError(model, cluster, parallel); !error.empty()) {
        e.reason = error;
        return e;
    }
    const double context = static_cast<double>(request.contextLen());
    if (model.max_positions > 0 && request.contextLen() > model.max_positions) {
        e.reason = cat("input + output = ", request.contextLen(), " tokens exceeds the model's ", model.max_positions,
                       " positions");
        return e;
    }

    const ServingEstimator est(model, cluster, costs, params, parallel, request, serving);
    const auto batchedTokens = static_cast<double>(e.max_batched_tokens);
    // The replica holds as many sequences as its tightest stage's KV pool.
    double perReplica = 1e18;
    double sequenceBytes = 0; ///< one full-context sequence's KV cache on the tightest stage
    for (const auto& stage : est.stages()) {
        ServingMemory m;
        m.capacity = capacity;
        m.weights = est.stageWeights(stage);
        m.activations = est.stageActivations(stage, batchedTokens);
        const double engineShare = e.memory_fraction * capacity;
        if (request.framework == ServingFramework::Vllm) {
            // vLLM: KV cache = utilization x memory - weights - the profile run's peak - non-torch memory.
            m.reserve = serving.runtime_reserve_bytes + (1 - e.memory_fraction) * capacity;
            m.kv_pool = engineShare - m.weights - m.activations - serving.runtime_reserve_bytes;
        } else {
            // SGLang: the static share holds weights and KV cache; activations and CUDA graphs use the rest.
            m.kv_pool = engineShare - m.weights;
            m.reserve = std::max(0.0, capacity - engineShare - m.activations);
        }
        const double perSequence = est.stageKvBytesPerSequence(stage, context);
        const double fits = m.kv_pool > 0 ? std::floor(m.kv_pool / perSequence) : 0;
        if (fits < perReplica) {
            perReplica = fits;
            sequenceBytes = perSequence;
            e.kv_bytes_per_token = est.stageKvBytesPerToken(stage);
            e.memory = m;
        }
    }
    perReplica = std::min(perReplica, static_cast<double>(serving.max_batch_per_replica));
    e.max_concurrency = static_cast<int>(perReplica) * parallel.dp;
    if (e.max_concurrency < 1) {
        e.reason = cat("the weights take ", memoryText(e.memory.weights), " per GPU and leave ",
                       memoryText(std::max(0.0, e.memory.kv_pool)), " of ", memoryText(capacity), " for KV cache; one ",
                       request.contextLen(), "-token sequence needs ", memoryText(sequenceBytes));
        return e;
    }

    const auto meetsBounds = [&request](const Timing& t) {
        return (request.max_tpot_ms <= 0 || t.tpot * 1e3 <= request.max_tpot_ms)
            && (request.max_ttft_ms <= 0 || t.ttft * 1e3 <= request.max_ttft_ms);
    };
    int concurrency = request.concurrency;
    if (concurrency == 0) {
        // Throughput grows with the batch and so do TTFT and TPOT: the largest batch within the bounds.
        int lo = 0;
        int hi = e.max_concurrency;
        while (lo < hi) {
            const int mid = lo + (hi - lo + 1) / 2;
            if (meetsBounds(timingAt(est, request, parallel, mid, batchedTokens)))
                lo = mid;
            else
                hi = mid - 1;
        }
        concurrency = std::max(lo, 1);
    }
    const Timing t = timingAt(est, request, parallel, concurrency, batchedTokens);
    e.concurrency = concurrency;
    e.ttft_s = t.ttft;
    e.tpot_s = t.tpot;
    e.decode_step_s = t.step;
    e.decode = t.decode;
    e.output_tokens_per_s = t.output_tokens_per_s;
    e.total_tokens_per_s = t.output_tokens_per_s * context / static_cast<double>(request.output_len);
    e.prefill_s = timingAt(est, request, parallel, 1, batchedTokens).ttft;
    const double perReplicaUsed = std::ceil(static_cast<double>(concurrency) / parallel.dp);
    e.memory.kv_cache = perReplicaUsed * sequenceBytes;
    std::vector<int> levels;
    for (int c = 1; c < e.max_concurrency; c *= 2)
        levels.push_back(c);
    levels.push_back(e.max_concurrency);
    for (const int c : levels) {
        const Timing at = timingAt(est, request, parallel, c, batchedTokens);
        e.curve.push_back({c, at.ttft, at.tpot, at.output_tokens_per_s});
    }

    if (concurrency > e.max_concurrency) {
        e.reason = cat("concurrency ", concurrency, " needs ", memoryText(e.memory.kv_cache),
                       " of KV cache per GPU; the pool holds ", memoryText(e.memory.kv_pool), ", at most ",
                       e.max_concurrency, " sequences of ", request.contextLen(), " tokens");
        return e;
    }
    if (!meetsBounds(t)) {
        e.reason = request.max_tpot_ms > 0 && t.tpot * 1e3 > request.max_tpot_ms
            ? cat("TPOT ", fixed(t.tpot * 1e3, 1), " ms exceeds max_tpot_ms ", fixed(request.max_tpot_ms, 1),
                  request.concurrency == 0 ? " even at one request" : "")
            : cat("TTFT ", fixed(t.ttft * 1e3, 1), " ms exceeds max_ttft_ms ", fixed(request.max_ttft_ms, 1),
                  request.concurrency == 0 ? " even at one request" : "");
        return e;
    }
    e.feasible = true;
    return e;
}

} // namespace shardscape
