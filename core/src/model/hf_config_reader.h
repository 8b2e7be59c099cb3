// SPDX-License-Identifier: MIT
// The Hugging Face config reader's shared pieces (hf_config.cpp: dispatch and entry points; hf_families.cpp: one
// parser per model family): the typed field reader and what a parse returns. Private to core/src/model.
#pragma once

#include "shardscape/model/hf_config.h"
#include "shardscape/support/error.h"
#include "shardscape/support/strings.h"

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shardscape::hf_detail {

using nlohmann::json;

/** Which linears carry a bias, next to the shape. */
struct ParsedConfig
{
    TransformerShape shape;
    bool qkvBias = false;
    bool outBias = false;
    bool mlpBias = false;
    std::vector<std::string> notes; ///< what was assumed or left out (shown by inspect and plan)
};

/** Typed, range-checked access to config fields; every error names the field and the origin. */
class ConfigReader
{
public:
    ConfigReader(const json& config, std::string_view origin)
        : m_config(config)
        , m_origin(origin.empty() ? std::string("config.json") : std::string(origin))
    {
    }

    const std::string& origin() const { return m_origin; }

    /** A field that is absent or null. */
    bool isUnset(const char* key) const
    {
        const auto it = m_config.find(key);
        return it == m_config.end() || it->is_null();
    }

    /** A positive integer in [1, max]; `what` says in the hint what the field means. */
    std::int64_t required(const char* key, std::int64_t max, std::string_view what) const
    {
        if (isUnset(key))
            fail(cat("'", key, "' is missing"), cat("a ", m_family, " config.json needs it (", what, ")"));
        return positive(key, max);
    }

    /** `required` for GPT-2's own names with the generic alias GPT2Config.attribute_map also accepts. */
    std::int64_t required(const char* key, const char* alias, std::int64_t max, std::string_view what) const
    {
        return isUnset(key) && !isUnset(alias) ? positive(alias, max) : required(key, max, what);
    }

    std::optional<std::int64_t> optional(const char* key, std::int64_t max) const
    {
        if (isUnset(key))
            return std::nullopt;
        return positive(key, max);
    }

    /** A count that may be 0 (first_k_dense_replace, n_shared_experts); absent or null = fallback. */
    std::int64_t count(const char* key, std::int64_t max, std::int64_t fallback) const
    {
        if (isUnset(key))
            return fallback;
        const json& v = m_config.at(key);
        if (v.is_number_integer() && !v.is_number_unsigned() && v.get<std::int64_t>() == 0)
            return 0;
        return positive(key, max);
    }

    /** The per-layer attention kinds of newer configs ("sliding_attention" / "full_attention"), if listed. */
    std::vector<std::string> layerTypes() const
    {
        std::vector<std::string> types;
        if (isUnset("layer_types"))
            return types;
        const json& v = m_config.at("layer_types");
        if (!v.is_array())
            fail(cat("'layer_types' must be an array of strings, got ", brief(v)), "copy the config.json unchanged");
        for (const auto& e : v) {
            if (!e.is_string())
                fail("'layer_types' must hold strings", "e.g. [\"sliding_attention\", \"full_attention\"]");
            types.push_back(e.get<std::string>());
        }
        return types;
    }

    /** A non-empty JSON array (mlp_only_layers, no_rope_layers), or its size 0 when absent. */
    std::size_t arraySize(const char* key) const
    {
        if (isUnset(key))
            return 0;
        const json& v = m_config.at(key);
        if (!v.is_array())
            fail(cat("'", key, "' must be an array, got ", brief(v)), "copy the config.json unchanged");
        return v.size();
    }

    const json& raw() const { return m_config; }

    bool flag(const char* key, bool fallback) const
    {
        if (isUnset(key))
            return fallback;
        const json& v = m_config.at(key);
        if (!v.is_boolean())
            fail(cat("'", key, "' must be true or false, got ", brief(v)), "write a JSON boolean");
        return v.get<bool>();
    }

    /** A dropout probability in [0, 1). */
    double probability(const char* key, double fallback) const
    {
        if (isUnset(key))
            return fallback;
        const json& v = m_config.at(key);
        const double p = v.is_number() ? v.get<double>() : -1;
        if (!(p >= 0 && p < 1))
            fail(cat("'", key, "' must be a probability in [0, 1), got ", brief(v)), "e.g. 0.1, or 0.0 for none");
        return p;
    }

    std::optional<std::string> text(const char* key) const
    {
        if (isUnset(key))
            return std::nullopt;
        const json& v = m_config.at(key);
        if (!v.is_string())
            fail(cat("'", key, "' must be a string, got ", brief(v)), "write it in double quotes");
        return v.get<std::string>();
    }

    /** A field we do not use but still check the type of, so a broken file is not silently accepted. */
    void expectNumber(const char* key) const
    {
        if (!isUnset(key) && !m_config.at(key).is_number())
            fail(cat("'", key, "' must be a number, got ", brief(m_config.at(key))), "write a JSON number");
    }
    void expectObject(const char* key) const
    {
        if (!isUnset(key) && !m_config.at(key).is_object())
            fail(cat("'", key, "' must be an object or null, got ", brief(m_config.at(key))),
                 "copy the model's config.json unchanged");
    }

    void setFamily(std::string family) { m_family = std::move(family); }

    [[noreturn]] void fail(const std::string& cause, std::string hint) const
    {
        throw InputError(cat(m_origin, ": ", cause), std::move(hint));
    }

private:
    std::int64_t positive(const char* key, std::int64_t max) const
    {
        const json& v = m_config.at(key);
        if (!v.is_number_integer())
            fail(cat("'", key, "' must be an integer, got ", brief(v)), "write a whole number without quotes");
        // Unsigned first: a value above INT64_MAX would wrap as int64.
        if (v.is_number_unsigned() ? v.get<std::uint64_t>() > static_cast<std::uint64_t>(max)
                                   : v.get<std::int64_t>() > max)
            fail(cat("'", key, "' = ", brief(v), " is out of range (at most ", max, ")"),
                 "check the value: no real model is that large");
        const auto value = v.get<std::int64_t>();
        if (value < 1)
            fail(cat("'", key, "' must be at least 1, got ", value), "check the value");
        return value;
    }

    static std::string brief(const json& v)
    {
        std::string text = v.dump(-1, ' ', false, json::error_handler_t::replace);
        if (text.size() > 40)
            text = text.substr(0, 37) + "...";
        return text;
    }

    const json& m_config;
    std::string m_origin;
    std::string m_family = "model";
};

/** "supported model_type values: ... (architectures ...)", for the messages that refuse a config. */
std::string supportedList();

ParsedConfig parseGpt2(const ConfigReader& r);

/** GPT-NeoX and Pythia (model_type gpt_neox). */
ParsedConfig parseGptNeox(const ConfigReader& r);

/** BLOOM (model_type bloom). */
ParsedConfig parseBloom(const ConfigReader& r);

/** Llama, Mistral, Mixtral and Qwen2 share LlamaConfig's names. */
ParsedConfig parseLlamaFamily(const ConfigReader& r, const std::string& family);

/** Qwen3 (configuration_qwen3.py): Llama names, head_dim given, RMSNorm on each q and k head. */
ParsedConfig parseQwen3(const ConfigReader& r, const std::string& family);

/** Qwen2-MoE (configuration_qwen2_moe.py): q/k/v biases, routed experts plus a gated shared expert. */
ParsedConfig parseQwen2Moe(const ConfigReader& r);

/**
 * DeepSeek-V2 / V3 (configuration_deepseek_v3.py): multi-head latent attention, n_routed_experts of
 * moe_intermediate_size with n_shared_experts always on, the first first_k_dense_replace layers dense
 * (intermediate_size), MoE every moe_layer_freq layers after them. The multi-token-prediction module
 * (num_nextn_predict_layers) is not built: the report's 671B / 37B count the main model only.
 */
ParsedConfig parseDeepSeek(const ConfigReader& r, const std::string& family);

/**
 * Gemma 2 / 3 (configuration_gemma2.py, configuration_gemma3.py Gemma3TextConfig): GeGLU MLP, tied embeddings,
 * four norms per block, sliding-window layers with a global one every 2 (Gemma 2) or sliding_window_pattern
 * (Gemma 3, 6) layers, q/k norms in Gemma 3. Gemma 3's multimodal config nests the text model in text_config; the
 * vision tower is not built.
 */
ParsedConfig parseGemma(const ConfigReader& r, const std::string& family);

/** Phi-3 (configuration_phi3.py): Llama's shapes with fused qkv_proj and gate_up_proj (the same parameters). */
ParsedConfig parsePhi3(const ConfigReader& r);

/**
 * Llama 4 text model (configuration_llama4.py Llama4TextConfig): num_local_experts of intermediate_size each plus
 * a shared expert of the same width, MoE every interleave_moe_layer_step layers, dense layers
 * intermediate_size_mlp wide; chunked attention (attention_chunk_size) with every 4th layer global (NoPE).
 */
ParsedConfig parseLlama4(const ConfigReader& r);

/** gpt-oss (configuration_gpt_oss.py): biased attention, 128-token sliding windows on alternate layers, routed
    experts of intermediate_size (their biases are counted with the attention sinks as negligible). */
ParsedConfig parseGptOss(const ConfigReader& r);

/**
 * A model_type this reader does not know, built from the standard decoder fields when they are all there
 * (hidden_size, intermediate_size, num_hidden_layers, num_attention_heads, vocab_size; experts when listed),
 * as a pre-norm RMSNorm / SwiGLU / rotary decoder. Every assumption is noted.
 */
ParsedConfig parseStandardDecoder(const ConfigReader& r, const std::string& type);

} // namespace shardscape::hf_detail
