// SPDX-License-Identifier: MIT
// One parser per Hugging Face model family: field names and defaults as transformers' configuration_<model_type>.py
// of each (GPT-2, GPT-NeoX, BLOOM, the Llama family, Qwen2-MoE, Qwen3, DeepSeek-V2/V3, Gemma 2/3, Phi-3, Llama 4,
// gpt-oss), and the standard decoder an unknown model_type is built from.
#include "hf_config_reader.h"

#include <algorithm>
#include <string_view>
#include <tuple>
#include <utility>

namespace shardscape::hf_detail {

// Limits past which a value is a typo, not a model (the largest published models are far below them).
constexpr std::int64_t kMaxHidden = 1'000'000;
constexpr std::int64_t kMaxLayers = kMaxTransformerLayers;
constexpr std::int64_t kMaxVocab = 100'000'000;
constexpr std::int64_t kMaxHeads = 1'000'000;
constexpr std::int64_t kMaxHeadDim = 1'000'000;
constexpr std::int64_t kMaxFfn = 100'000'000;
constexpr std::int64_t kMaxPositions = 1'000'000'000;
constexpr std::int64_t kMaxExperts = 4096;

/** "_attn_implementation": "eager" runs Hugging Face's eager attention, which materializes the s x s scores; sdpa
    and flash kernels do not. */
void readAttentionImplementation(const ConfigReader& r, TransformerShape& t)
{
    t.hf_eager_attention = r.text("_attn_implementation").value_or("sdpa") == "eager";
    t.flash_attention = !t.hf_eager_attention;
}

/** head_dim = width / heads, where the config does not name it; `headsKey` and `widthKey` are the config's own
    names for them, `hint` the way out when they do not divide. */
void headDimFromWidth(const ConfigReader& r, TransformerShape& t, std::string_view headsKey, std::string_view widthKey,
                      std::string_view hint)
{
    if (t.hidden % t.num_heads != 0)
        r.fail(cat("'", headsKey, "' (", t.num_heads, ") does not divide '", widthKey, "' (", t.hidden, ")"),
               std::string(hint));
    t.head_dim = t.hidden / t.num_heads;
}

ParsedConfig parseGpt2(const ConfigReader& r)
{
    ParsedConfig c;
    TransformerShape& t = c.shape;
    t.family = "gpt2";
    t.hidden = r.required("n_embd", "hidden_size", kMaxHidden, "the model width");
    t.num_layers = r.required("n_layer", "num_hidden_layers", kMaxLayers, "the number of blocks");
    t.num_heads = r.required("n_head", "num_attention_heads", kMaxHeads, "the number of attention heads");
    t.max_positions
        = r.required("n_positions", "max_position_embeddings", kMaxPositions, "the number of learned positions");
    t.vocab = r.required("vocab_size", kMaxVocab, "the vocabulary size");
    headDimFromWidth(r, t, "n_head", "n_embd", "GPT-2 heads are n_embd / n_head wide");
    t.num_kv_heads = t.num_heads;
    t.ffn_hidden = r.optional("n_inner", kMaxFfn).value_or(4 * t.hidden);
    t.gated_mlp = false;
    t.norm = "layernorm";
    t.learned_positions = true;
    t.tied_embeddings = r.flag("tie_word_embeddings", true);
    // HF's GPT2Config defaults every dropout to 0.1; the graph has one rate for all of them.
    t.dropout = std::max(
        {r.probability("resid_pdrop", 0.1), r.probability("attn_pdrop", 0.1), r.probability("embd_pdrop", 0.1)});
    readAttentionImplementation(r, t);
    c.qkvBias = c.outBias = c.mlpBias = true;
    return c;
}

void localAttention(const ConfigReader& r, ParsedConfig& c, std::int64_t globalEvery,
                    const char* key = "sliding_window");

/** The sizes every LlamaConfig-style config names alike (DeepSeek's too). */
void readDecoderSizes(const ConfigReader& r, TransformerShape& t, const std::string& family)
{
    t.family = family;
    t.hidden = r.required("hidden_size", kMaxHidden, "the model width");
    t.ffn_hidden = r.required("intermediate_size", kMaxFfn, "the (dense) MLP's inner size");
    t.num_layers = r.required("num_hidden_layers", kMaxLayers, "the number of decoder layers");
    t.num_heads = r.required("num_attention_heads", kMaxHeads, "the number of query heads");
    t.vocab = r.required("vocab_size", kMaxVocab, "the vocabulary size");
    t.max_positions = r.required("max_position_embeddings", kMaxPositions, "the trained context length");
}

/**
 * GPT-NeoX-20B and Pythia (configuration_gpt_neox.py, modeling_gpt_neox.py): two LayerNorms per block, one fused
 * query_key_value projection, a two-matrix GELU MLP (dense_h_to_4h, dense_4h_to_h), biases on every linear
 * (attention_bias, default true, for the attention's two; always for the MLP's), untied embeddings and no dropout
 * by default. Rotary covers rotary_pct of each head; it is costed over the whole head, an elementwise pass either way.
 */
ParsedConfig parseGptNeox(const ConfigReader& r)
{
    ParsedConfig c;
    TransformerShape& t = c.shape;
    readDecoderSizes(r, t, "gpt_neox");
    headDimFromWidth(r, t, "num_attention_heads", "hidden_size",
                     "GPT-NeoX heads are hidden_size / num_attention_heads wide");
    t.num_kv_heads = t.num_heads;
    t.gated_mlp = false;
    t.norm = "layernorm";
    t.learned_positions = false;
    t.tied_embeddings = r.flag("tie_word_embeddings", false);
    t.dropout = std::max(r.probability("hidden_dropout", 0.0), r.probability("attention_dropout", 0.0));
    readAttentionImplementation(r, t);
    c.qkvBias = c.outBias = r.flag("attention_bias", true);
    c.mlpBias = true;
    r.expectNumber("rotary_pct");
    r.expectNumber("rotary_emb_base");
    if (r.flag("use_parallel_residual", true))
        c.notes.push_back("use_parallel_residual: attention and MLP read the same input and are added to it together; "
                          "costed as the sequential block, which has the same parameters, FLOPs and saved activations");
    return c;
}

/**
 * BLOOM (configuration_bloom.py, modeling_bloom.py): a LayerNorm after the word embedding
 * (word_embeddings_layernorm), two LayerNorms per block, one fused query_key_value projection and a 4h GELU MLP,
 * biases on every linear, tied embeddings, ALiBi. The config names its sizes n_embed / n_layer / n_head or the
 * generic hidden_size / num_hidden_layers / num_attention_heads (attribute_map). ALiBi has no position table and no
 * trained length in the config: seq_length where it is given, else BLOOM's 2,048.
 */
ParsedConfig parseBloom(const ConfigReader& r)
{
    ParsedConfig c;
    TransformerShape& t = c.shape;
    t.family = "bloom";
    t.hidden = r.required("n_embed", "hidden_size", kMaxHidden, "the model width");
    t.num_layers = r.required("n_layer", "num_hidden_layers", kMaxLayers, "the number of blocks");
    t.num_heads = r.required("n_head", "num_attention_heads", kMaxHeads, "the number of attention heads");
    t.vocab = r.required("vocab_size", kMaxVocab, "the vocabulary size");
    headDimFromWidth(r, t, r.isUnset("n_head") ? "num_attention_heads" : "n_head",
                     r.isUnset("n_embed") ? "hidden_size" : "n_embed", "BLOOM heads are hidden_size / n_head wide");
    t.num_kv_heads = t.num_heads;
    t.ffn_hidden = r.optional("n_inner", kMaxFfn).value_or(4 * t.hidden);
    t.max_positions = r.optional("seq_length", kMaxPositions).value_or(2048);
    t.gated_mlp = false;
    t.norm = "layernorm";
    t.embedding_norm = true;
    t.learned_positions = false;
    t.tied_embeddings = r.flag("tie_word_embeddings", true);
    t.dropout = std::max(r.probability("hidden_dropout", 0.0), r.probability("attention_dropout", 0.0));
    readAttentionImplementation(r, t);
    c.qkvBias = c.outBias = c.mlpBias = true;
    c.notes.push_back("ALiBi adds a per-head bias to the attention scores inside the softmax; costed as a rotary "
                      "pass, an elementwise op either way");
    return c;
}

/** Llama, Mistral, Mixtral and Qwen2 share LlamaConfig's names. */
ParsedConfig parseLlamaFamily(const ConfigReader& r, const std::string& family)
{
    ParsedConfig c;
    TransformerShape& t = c.shape;
    readDecoderSizes(r, t, family);
    t.num_kv_heads = r.optional("num_key_value_heads", kMaxHeads).value_or(t.num_heads);
    if (const auto headDim = r.optional("head_dim", kMaxHeadDim)) {
        t.head_dim = *headDim;
    } else {
        headDimFromWidth(r, t, "num_attention_heads", "hidden_size",
                         "set 'head_dim' explicitly when heads are not hidden_size / num_attention_heads wide");
    }
    if (t.num_heads % t.num_kv_heads != 0)
        r.fail(cat("'num_key_value_heads' (", t.num_kv_heads, ") does not divide 'num_attention_heads' (", t.num_heads,
                   ")"),
               "grouped-query attention shares each KV head among a whole number of query heads");
    t.gated_mlp = true;
    t.norm = "rmsnorm";
    t.learned_positions = false;
    // LlamaConfig, MistralConfig, MixtralConfig and Qwen2Config all default tie_word_embeddings to False
    // (overriding PretrainedConfig's True).
    t.tied_embeddings = r.flag("tie_word_embeddings", false);
    t.dropout = r.probability("attention_dropout", 0.0);
    readAttentionImplementation(r, t);
    if (family == "mixtral") {
        t.num_experts = r.required("num_local_experts", kMaxExperts, "the number of experts per layer");
        t.top_k = r.required("num_experts_per_tok", kMaxExperts, "the experts each token is routed to");
        if (t.top_k > t.num_experts)
            r.fail(cat("'num_experts_per_tok' (", t.top_k, ") is more than 'num_local_experts' (", t.num_experts, ")"),
                   "a token can be routed to at most every expert");
    }
    if (family == "qwen2") {
        c.qkvBias = true; // Qwen2Attention always has q/k/v biases (and none on o_proj)
    } else if (family == "llama") {
        c.qkvBias = c.outBias = r.flag("attention_bias", false);
        c.mlpBias = r.flag("mlp_bias", false);
    }
    if (family == "mistral")
        localAttention(r, c, 0); // MistralConfig.sliding_window (4096 in v0.1, null later): every layer
    return c;
}

/** Routed experts: count, experts per token and each expert's width, checked together. */
void routedExperts(const ConfigReader& r, TransformerShape& t, const char* experts, const char* topK, const char* width)
{
    t.num_experts = r.required(experts, kMaxExperts, "the routed experts per MoE layer");
    t.top_k = r.required(topK, kMaxExperts, "the experts each token is routed to");
    if (t.top_k > t.num_experts)
        r.fail(cat("'", topK, "' (", t.top_k, ") is more than '", experts, "' (", t.num_experts, ")"),
               "a token can be routed to at most every expert");
    t.dense_ffn_hidden = t.ffn_hidden; // intermediate_size stays the dense layers' MLP width
    t.ffn_hidden = r.required(width, kMaxFfn, "each routed expert's MLP width");
}

/**
 * Sliding-window or chunked attention: `window` keys per query, every `globalEvery`-th layer global (0: none).
 * Newer configs list layer_types instead; a periodic list gives the period, anything else is costed with the
 * first global layer's period and noted.
 */
void localAttention(const ConfigReader& r, ParsedConfig& c, std::int64_t globalEvery, const char* key)
{
    TransformerShape& t = c.shape;
    const auto window = r.optional(key, kMaxPositions);
    if (!window)
        return;
    t.attention_window = *window;
    t.global_layer_every = globalEvery;
    const auto types = r.layerTypes();
    if (types.empty())
        return;
    std::int64_t first = 0;
    while (first < static_cast<std::int64_t>(types.size())
           && types[static_cast<std::size_t>(first)] != "full_attention")
        ++first;
    if (first == static_cast<std::int64_t>(types.size())) {
        t.global_layer_every = 0;
        return;
    }
    t.global_layer_every = first + 1;
    for (std::size_t i = 0; i < types.size(); ++i)
        if ((types[i] == "full_attention") != ((static_cast<std::int64_t>(i) + 1) % t.global_layer_every == 0)) {
            c.notes.push_back(
                cat("layer_types is not periodic: costed as one global layer in every ", t.global_layer_every));
            break;
        }
}

/** Qwen3 (configuration_qwen3.py): Llama names, head_dim given, RMSNorm on each q and k head. */
ParsedConfig parseQwen3(const ConfigReader& r, const std::string& family)
{
    ParsedConfig c = parseLlamaFamily(r, family);
    c.shape.qk_norm = true;
    c.qkvBias = c.outBias = r.flag("attention_bias", false);
    if (family == "qwen3_moe") {
        routedExperts(r, c.shape, "num_experts", "num_experts_per_tok", "moe_intermediate_size");
        c.shape.moe_layer_step = r.optional("decoder_sparse_step", kMaxLayers).value_or(1);
        if (r.arraySize("mlp_only_layers") > 0)
            c.notes.push_back("mlp_only_layers lists dense layers: they are costed as MoE layers");
    }
    return c;
}

/** Qwen2-MoE (configuration_qwen2_moe.py): q/k/v biases, routed experts plus a gated shared expert. */
ParsedConfig parseQwen2Moe(const ConfigReader& r)
{
    ParsedConfig c = parseLlamaFamily(r, "qwen2_moe");
    c.qkvBias = true;
    routedExperts(r, c.shape, "num_experts", "num_experts_per_tok", "moe_intermediate_size");
    c.shape.moe_layer_step = r.optional("decoder_sparse_step", kMaxLayers).value_or(1);
    c.shape.shared_expert_ffn = r.count("shared_expert_intermediate_size", kMaxFfn, 0);
    c.shape.shared_expert_gate = c.shape.shared_expert_ffn > 0;
    if (r.arraySize("mlp_only_layers") > 0)
        c.notes.push_back("mlp_only_layers lists dense layers: they are costed as MoE layers");
    return c;
}

/**
 * DeepSeek-V2 / V3 (configuration_deepseek_v3.py): multi-head latent attention, n_routed_experts of
 * moe_intermediate_size with n_shared_experts always on, the first first_k_dense_replace layers dense
 * (intermediate_size), MoE every moe_layer_freq layers after them. The multi-token-prediction module
 * (num_nextn_predict_layers) is not built: the report's 671B / 37B count the main model only.
 */
ParsedConfig parseDeepSeek(const ConfigReader& r, const std::string& family)
{
    ParsedConfig c;
    TransformerShape& t = c.shape;
    readDecoderSizes(r, t, family);
    t.num_kv_heads = t.num_heads; // MLA expands the latent to every head's key and value
    t.kv_lora_rank = r.required("kv_lora_rank", kMaxHidden, "the compressed key-value latent's width");
    t.q_lora_rank = r.count("q_lora_rank", kMaxHidden, 0);
    t.qk_rope_head_dim = r.required("qk_rope_head_dim", kMaxHeadDim, "the rotary part of each query/key head");
    t.qk_nope_head_dim = r.required("qk_nope_head_dim", kMaxHeadDim, "the non-rotary part of each query/key head");
    t.v_head_dim = r.required("v_head_dim", kMaxHeadDim, "each value head's width");
    t.head_dim = t.qk_nope_head_dim + t.qk_rope_head_dim;
    t.gated_mlp = true;
    t.norm = "rmsnorm";
    t.tied_embeddings = r.flag("tie_word_embeddings", false);
    t.dropout = r.probability("attention_dropout", 0.0);
    readAttentionImplementation(r, t);
    if (!r.isUnset("n_routed_experts")) {
        routedExperts(r, t, "n_routed_experts", "num_experts_per_tok", "moe_intermediate_size");
        t.shared_expert_ffn = r.count("n_shared_experts", kMaxExperts, 0) * t.ffn_hidden;
        t.first_dense_layers = r.count("first_k_dense_replace", kMaxLayers, 0);
        t.moe_layer_step = r.optional("moe_layer_freq", kMaxLayers).value_or(1);
    }
    c.qkvBias = c.outBias = r.flag("attention_bias", false);
    if (r.count("num_nextn_predict_layers", kMaxLayers, 0) > 0)
        c.notes.push_back("the multi-token-prediction module (num_nextn_predict_layers) is not built");
    return c;
}

/**
 * Gemma 2 / 3 (configuration_gemma2.py, configuration_gemma3.py Gemma3TextConfig): GeGLU MLP, tied embeddings,
 * four norms per block, sliding-window layers with a global one every 2 (Gemma 2) or sliding_window_pattern
 * (Gemma 3, 6) layers, q/k norms in Gemma 3. Gemma 3's multimodal config nests the text model in text_config; the
 * vision tower is not built.
 */
ParsedConfig parseGemma(const ConfigReader& r, const std::string& family)
{
    ParsedConfig c = parseLlamaFamily(r, family);
    TransformerShape& t = c.shape;
    t.tied_embeddings = r.flag("tie_word_embeddings", true);
    t.sandwich_norms = true;
    const bool three = family != "gemma2";
    t.qk_norm = three;
    c.qkvBias = c.outBias = r.flag("attention_bias", false);
    localAttention(r, c, three ? r.optional("sliding_window_pattern", kMaxLayers).value_or(6) : 2);
    return c;
}

/** Phi-3 (configuration_phi3.py): Llama's shapes with fused qkv_proj and gate_up_proj (the same parameters). */
ParsedConfig parsePhi3(const ConfigReader& r)
{
    ParsedConfig c = parseLlamaFamily(r, "phi3");
    c.qkvBias = c.outBias = false;
    localAttention(r, c, 0);
    return c;
}

/**
 * Llama 4 text model (configuration_llama4.py Llama4TextConfig): num_local_experts of intermediate_size each plus
 * a shared expert of the same width, MoE every interleave_moe_layer_step layers, dense layers
 * intermediate_size_mlp wide; chunked attention (attention_chunk_size) with every 4th layer global (NoPE).
 */
ParsedConfig parseLlama4(const ConfigReader& r)
{
    ParsedConfig c = parseLlamaFamily(r, "llama4");
    TransformerShape& t = c.shape;
    routedExperts(r, t, "num_local_experts", "num_experts_per_tok", "intermediate_size");
    t.dense_ffn_hidden = r.optional("intermediate_size_mlp", kMaxFfn).value_or(t.ffn_hidden);
    t.shared_expert_ffn = t.ffn_hidden;
    t.moe_layer_step = r.optional("interleave_moe_layer_step", kMaxLayers).value_or(1);
    c.qkvBias = c.outBias = r.flag("attention_bias", false);
    localAttention(r, c, 4, "attention_chunk_size");
    return c;
}

/** gpt-oss (configuration_gpt_oss.py): biased attention, 128-token sliding windows on alternate layers, routed
    experts of intermediate_size (their biases are counted with the attention sinks as negligible). */
ParsedConfig parseGptOss(const ConfigReader& r)
{
    ParsedConfig c = parseLlamaFamily(r, "gpt_oss");
    routedExperts(r, c.shape, "num_local_experts", "num_experts_per_tok", "intermediate_size");
    c.qkvBias = c.outBias = r.flag("attention_bias", true);
    localAttention(r, c, 2);
    c.notes.push_back("gpt-oss expert biases and attention sinks (under 0.1% of the parameters) are not built");
    return c;
}

/**
 * A model_type this reader does not know, built from the standard decoder fields when they are all there
 * (hidden_size, intermediate_size, num_hidden_layers, num_attention_heads, vocab_size; experts when listed),
 * as a pre-norm RMSNorm / SwiGLU / rotary decoder. Every assumption is noted.
 */
ParsedConfig parseStandardDecoder(const ConfigReader& r, const std::string& type)
{
    // Encoders (BERT, T5's encoder...) share the field names: only a causal-LM architecture is a decoder.
    if (!r.isUnset("architectures") && r.raw().at("architectures").is_array()) {
        bool decoder = false;
        for (const auto& a : r.raw().at("architectures"))
            if (a.is_string())
                for (const char* suffix : {"ForCausalLM", "LMHeadModel", "ForConditionalGeneration"})
                    decoder = decoder || a.get<std::string>().ends_with(suffix);
        if (!decoder)
            r.fail(cat("unsupported model_type '", type, "': its architectures are not a causal language model"),
                   cat(supportedList(), "; for other models load an ONNX export or a native graph .json"));
    }
    for (const char* key :
         {"hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "vocab_size"})
        if (r.isUnset(key))
            r.fail(cat("unsupported model_type '", type, "' without the standard decoder field '", key, "'"),
                   cat(supportedList(), "; for other models load an ONNX export or a native graph .json"));
    if (r.isUnset("max_position_embeddings"))
        r.fail(cat("unsupported model_type '", type, "' without 'max_position_embeddings'"),
               "add the trained context length, or load an ONNX export");
    ParsedConfig c = parseLlamaFamily(r, type);
    std::string experts;
    for (const auto& [count, topK, width] :
         {std::tuple {"num_experts", "num_experts_per_tok", "moe_intermediate_size"},
          std::tuple {"num_local_experts", "num_experts_per_tok", "intermediate_size"},
          std::tuple {"n_routed_experts", "num_experts_per_tok", "moe_intermediate_size"}})
        if (c.shape.num_experts == 0 && !r.isUnset(count) && !r.isUnset(topK) && !r.isUnset(width)) {
            routedExperts(r, c.shape, count, topK, width);
            experts = cat(", ", c.shape.num_experts, " routed experts (", count, ") in every layer");
        }
    c.notes.push_back(cat("model_type '", type,
                          "' is not one this reader knows: built from its standard fields as "
                          "a pre-norm RMSNorm / SwiGLU / rotary decoder without biases",
                          experts, "; check the parameter count against the model card"));
    return c;
}

} // namespace shardscape::hf_detail
