// SPDX-License-Identifier: MIT
// What serving reads from a model graph: weights by how they shard and quantize, and the KV cache per token.
#include "shardscape/cost/serving.h"

#include "shardscape/model/layers.h"
#include "shardscape/support/error.h"
#include "shardscape/support/strings.h"

#include <algorithm>
#include <array>
#include <limits>

namespace shardscape {

namespace {

constexpr std::array kWeightFormats {WeightFormat::BF16, WeightFormat::FP8, WeightFormat::INT8, WeightFormat::INT4,
                                     WeightFormat::FP4};

} // namespace

std::string_view weightFormatName(WeightFormat format)
{
    switch (format) {
    case WeightFormat::BF16:
        return "bf16";
    case WeightFormat::FP8:
        return "fp8";
    case WeightFormat::INT8:
        return "int8";
    case WeightFormat::INT4:
        return "int4";
    case WeightFormat::FP4:
        break;
    }
    return "fp4";
}

std::optional<WeightFormat> parseWeightFormat(std::string_view name)
{
    const std::string lower = toLower(name);
    for (const auto format : kWeightFormats)
        if (weightFormatName(format) == lower)
            return format;
    if (lower == "bfloat16" || lower == "auto")
        return WeightFormat::BF16;
    if (lower == "nvfp4")
        return WeightFormat::FP4;
    return std::nullopt;
}

double weightFormatBits(WeightFormat format)
{
    switch (format) {
    case WeightFormat::BF16:
        return 16;
    case WeightFormat::FP8:
    case WeightFormat::INT8:
        return 8; // per-channel or per-tensor scales are negligible
    case WeightFormat::INT4:
        return 4 + 32.0 / 128; // a bf16 scale and a bf16 zero per group of 128 (AWQ, GPTQ)
    case WeightFormat::FP4:
        break;
    }
    return 4 + 8.0 / 16; // NVFP4: an fp8 e4m3 scale per block of 16
}

std::optional<DType> parseKvCacheDtype(std::string_view name)
{
    const std::string lower = toLower(name);
    const auto dtype = lower == "auto" ? std::optional<DType>(DType::BF16) : parseDType(lower);
    if (!dtype || (*dtype != DType::BF16 && *dtype != DType::FP8 && *dtype != DType::F16))
        return std::nullopt;
    return dtype;
}

std::string_view servingFrameworkName(ServingFramework framework)
{
    return framework == ServingFramework::Vllm ? "vllm" : "sglang";
}

std::optional<ServingFramework> parseServingFramework(std::string_view name)
{
    const std::string lower = toLower(name);
    if (lower == "vllm")
        return ServingFramework::Vllm;
    if (lower == "sglang")
        return ServingFramework::Sglang;
    return std::nullopt;
}

void ServingRequest::validate() const
{
    constexpr std::int64_t kMaxTokens = 100'000'000;
    if (input_len < 1 || input_len > kMaxTokens)
        throw InputError(cat("input_len must be in [1, ", kMaxTokens, "], got ", input_len));
    if (output_len < 1 || output_len > kMaxTokens)
        throw InputError(cat("output_len must be in [1, ", kMaxTokens, "], got ", output_len));
    if (concurrency < 0)
        throw InputError(cat("concurrency must be a positive number or \"max\", got ", concurrency));
    if (kv_dtype != DType::BF16 && kv_dtype != DType::FP8 && kv_dtype != DType::F16)
        throw InputError(cat("kv_cache_dtype must be bf16, fp16 or fp8, got ", dtypeName(kv_dtype)));
    if (max_ttft_ms < 0 || max_tpot_ms < 0)
        throw InputError("max_ttft_ms and max_tpot_ms must be >= 0 (0 = unbounded)");
    if (memory_fraction < 0 || memory_fraction > 1)
        throw InputError(cat("the memory fraction must be in (0, 1], got ", memory_fraction), "0 = the default");
    if (memory_limit_bytes < 0)
        throw InputError("the memory limit must be >= 0 (0 = the device's capacity)");
    if (max_batched_tokens < 0)
        throw InputError("max_batched_tokens must be >= 0 (0 = the engine's default)");
}

std::string ServingParallel::describe() const
{
    return cat("TP ", tp, ", PP ", pp, ", DP ", dp, ep > 1 ? cat(", EP ", ep) : std::string());
}

bool ServingModel::isMoe() const
{
    return std::any_of(layers.begin(), layers.end(), [](const LayerWeights& l) { return l.num_experts > 0; });
}

double ServingModel::kvBytesPerToken(DType kvDtype) const
{
    double elements = 0;
    for (const auto& layer : layers)
        elements += layer.kv_elements_per_token;
    return elements * dtypeBytes(kvDtype);
}

ServingModel ServingModel::fromGraph(const ModelGraph& graph)
{
    if (!graph.transformer)
        throw InputError(cat("inference planning needs a transformer's shape (heads, KV heads, head size); ",
                             graph.name, " has none"),
                         "load the model from a preset or an HF config.json");
    const TransformerShape& shape = *graph.transformer;
    ServingModel model;
    model.name = graph.name;
    model.hidden = shape.hidden;
    model.vocab = shape.vocab;
    model.num_heads = shape.num_heads;
    model.num_kv_heads = shape.num_kv_heads > 0 ? shape.num_kv_heads : shape.num_heads;
    model.max_positions = shape.max_positions;
    model.mla = shape.kv_lora_rank > 0;
    model.params = graph.paramCount();

    std::vector<bool> seen(graph.tensors().size(), false);
    const auto firstUse = [&seen](TensorId id) {
        const auto index = static_cast<std::size_t>(id);
        if (seen[index])
            return false;
        seen[index] = true;
        return true;
    };
    std::int64_t blockIndex = 0;
    for (const Layer& layer : layersByModule(graph)) {
        if (layer.kind != LayerKind::Block) {
            double elements = 0;
            for (const OpId opId : layer.ops)
                for (const TensorId id : graph.op(opId).params)
                    if (firstUse(id))
                        elements += static_cast<double>(graph.tensor(id).elements());
            (layer.kind == LayerKind::Embedding ? model.embedding : model.head) += elements;
            continue;
        }
        LayerWeights w;
        for (const OpId opId : layer.ops) {
            const Op& op = graph.op(opId);
            for (const TensorId id : op.params) {
                if (!firstUse(id))
                    continue;
                const Tensor& t = graph.tensor(id);
                const auto elements = static_cast<double>(t.elements());
                if (op.kind == OpKind::MoeExperts) {
                    w.experts += elements;
                    w.num_experts = op.num_experts;
                    w.top_k = op.top_k;
                } else if (op.kind == OpKind::Linear && t.shape.size() >= 2) {
                    (t.tp_sharded ? w.quantizable : w.replicated_linear) += elements;
                } else {
                    w.replicated += elements;
                }
            }
        }
        const std::int64_t i = blockIndex++;
        const std::int64_t unbounded = std::numeric_limits<std::int32_t>::max();
        const std::int64_t keys = shape.keysPerQuery(i, unbounded);
        w.window = keys < unbounded ? keys : 0;
        const auto heads = static_cast<double>(shape.num_heads);
        if (model.mla) {
            // MLA caches the compressed latent and the shared rotary key; decode absorbs the up-projections and
            // attends in the latent space (vLLM and SGLang's MLA backends), prefill expands to per-head K and V.
            const auto latent = static_cast<double>(shape.kv_lora_rank);
            const auto rope = static_cast<double>(shape.qk_rope_head_dim);
            w.kv_elements_per_token = latent + rope;
            w.kv_split_by_tp = false;
            w.decode_attention_flops_per_key = 2 * heads * ((latent + rope) + latent);
            w.prefill_attention_flops_per_key = 2 * heads
                * (static_cast<double>(shape.qk_nope_head_dim) + rope + static_cast<double>(shape.v_head_dim));
        } else {
            const auto headDim = static_cast<double>(shape.head_dim);
            w.kv_elements_per_token = 2 * static_cast<double>(model.num_kv_heads) * headDim;
            w.decode_attention_flops_per_key = 2 * heads * 2 * headDim;
            w.prefill_attention_flops_per_key = w.decode_attention_flops_per_key;
        }
        model.layers.push_back(w);
    }
    model.tied_embeddings = shape.tied_embeddings;
    if (model.layers.empty())
        throw InputError(cat(graph.name, " has no transformer blocks to serve"));
    return model;
}

} // namespace shardscape
