// SPDX-License-Identifier: MIT
// Reads a Hugging Face config.json (GPT-2 and the Llama family) into a TransformerShape.
// Field names and defaults follow transformers' configuration_{gpt2,llama,mistral,mixtral,qwen2}.py.
#include "shardscape/model/hf_config.h"

#include "shardscape/support/error.h"
#include "shardscape/support/strings.h"

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

namespace shardscape {

namespace detail {
// Defined in transformer_builder.cpp: TransformerShape has no field for the linears' biases,
// which only the config (attention_bias, mlp_bias) can tell.
ModelGraph buildTransformerGraphWithBiases(const TransformerShape& shape, bool qkvBias, bool outBias, bool mlpBias,
                                           const BuildOptions& options, std::string name);
} // namespace detail

namespace {

using nlohmann::json;

// Limits past which a value is a typo, not a model (the largest published models are far below them).
constexpr std::int64_t kMaxHidden = 1'000'000;
constexpr std::int64_t kMaxLayers = kMaxTransformerLayers;
constexpr std::int64_t kMaxVocab = 100'000'000;
constexpr std::int64_t kMaxHeads = 1'000'000;
constexpr std::int64_t kMaxHeadDim = 1'000'000;
constexpr std::int64_t kMaxFfn = 100'000'000;
constexpr std::int64_t kMaxPositions = 1'000'000'000;
constexpr std::int64_t kMaxExperts = 4096;

constexpr std::array<std::pair<std::string_view, std::string_view>, 5> kArchitectures {{
    {"GPT2LMHeadModel", "gpt2"},
    {"LlamaForCausalLM", "llama"},
    {"MistralForCausalLM", "mistral"},
    {"MixtralForCausalLM", "mixtral"},
    {"Qwen2ForCausalLM", "qwen2"},
}};

std::string supportedList()
{
    std::string types;
    std::string architectures;
    for (const auto& [arch, type] : kArchitectures) {
        types += (types.empty() ? "" : ", ") + std::string(type);
        architectures += (architectures.empty() ? "" : ", ") + std::string(arch);
    }
    return cat("supported model_type values: ", types, " (architectures ", architectures, ")");
}

bool knownModelType(std::string_view type)
{
    for (const auto& entry : kArchitectures)
        if (entry.second == type)
            return true;
    return false;
}

/** Which linears carry a bias, next to the shape. */
struct ParsedConfig
{
    TransformerShape shape;
    bool qkvBias = false;
    bool outBias = false;
    bool mlpBias = false;
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

/** model_type, or architectures[0] when there is none. */
std::string modelFamily(const json& config, const ConfigReader& r)
{
    if (const auto type = r.text("model_type")) {
        if (!knownModelType(*type))
            r.fail(cat("unsupported model_type '", *type, "'"),
                   cat(supportedList(), "; for other models load an ONNX export or a native graph .json"));
        return *type;
    }
    if (r.isUnset("architectures"))
        r.fail("neither 'model_type' nor 'architectures' is set",
               cat("is this a Hugging Face config.json? ", supportedList()));
    const json& archs = config.at("architectures");
    if (!archs.is_array() || archs.empty() || !archs.front().is_string())
        r.fail("'architectures' must be a non-empty array of strings", "e.g. [\"LlamaForCausalLM\"]");
    const auto arch = archs.front().get<std::string>();
    for (const auto& [name, type] : kArchitectures)
        if (name == arch)
            return std::string(type);
    r.fail(cat("unsupported architecture '", arch, "'"), supportedList());
}

/** Fields that do not change costs but must not be rejected (rope_scaling, v5's rope_parameters). */
void checkIgnoredFields(const ConfigReader& r)
{
    r.expectNumber("rope_theta");
    r.expectObject("rope_scaling");
    r.expectObject("rope_parameters");
    r.expectNumber("rms_norm_eps");
    r.expectNumber("layer_norm_epsilon");
}

/** "_attn_implementation": "eager" materializes the s x s scores; sdpa and flash kernels do not. */
bool fusedAttention(const ConfigReader& r)
{
    return r.text("_attn_implementation").value_or("sdpa") != "eager";
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
    if (t.hidden % t.num_heads != 0)
        r.fail(cat("'n_head' (", t.num_heads, ") does not divide 'n_embd' (", t.hidden, ")"),
               "GPT-2 heads are n_embd / n_head wide");
    t.head_dim = t.hidden / t.num_heads;
    t.num_kv_heads = t.num_heads;
    t.ffn_hidden = r.optional("n_inner", kMaxFfn).value_or(4 * t.hidden);
    t.gated_mlp = false;
    t.norm = "layernorm";
    t.learned_positions = true;
    t.tied_embeddings = r.flag("tie_word_embeddings", true);
    // HF's GPT2Config defaults every dropout to 0.1; the graph has one rate for all of them.
    t.dropout = std::max(
        {r.probability("resid_pdrop", 0.1), r.probability("attn_pdrop", 0.1), r.probability("embd_pdrop", 0.1)});
    t.flash_attention = fusedAttention(r);
    c.qkvBias = c.outBias = c.mlpBias = true;
    return c;
}

/** Llama, Mistral, Mixtral and Qwen2 share LlamaConfig's names. */
ParsedConfig parseLlamaFamily(const ConfigReader& r, const std::string& family)
{
    ParsedConfig c;
    TransformerShape& t = c.shape;
    t.family = family;
    t.hidden = r.required("hidden_size", kMaxHidden, "the model width");
    t.ffn_hidden = r.required("intermediate_size", kMaxFfn, "the MLP's inner size");
    t.num_layers = r.required("num_hidden_layers", kMaxLayers, "the number of decoder layers");
    t.num_heads = r.required("num_attention_heads", kMaxHeads, "the number of query heads");
    t.vocab = r.required("vocab_size", kMaxVocab, "the vocabulary size");
    t.max_positions = r.required("max_position_embeddings", kMaxPositions, "the trained context length");
    t.num_kv_heads = r.optional("num_key_value_heads", kMaxHeads).value_or(t.num_heads);
    if (const auto headDim = r.optional("head_dim", kMaxHeadDim)) {
        t.head_dim = *headDim;
    } else {
        if (t.hidden % t.num_heads != 0)
            r.fail(cat("'num_attention_heads' (", t.num_heads, ") does not divide 'hidden_size' (", t.hidden, ")"),
                   "set 'head_dim' explicitly when heads are not hidden_size / num_attention_heads wide");
        t.head_dim = t.hidden / t.num_heads;
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
    t.flash_attention = fusedAttention(r);
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
    return c;
}

ParsedConfig parseConfig(const json& config, std::string_view origin)
{
    ConfigReader r(config, origin);
    if (!config.is_object())
        r.fail(cat("expected a JSON object (a Hugging Face config.json), got ", config.type_name()),
               "pass the model's config.json");
    const std::string family = modelFamily(config, r);
    r.setFamily(family);
    checkIgnoredFields(r);
    return family == "gpt2" ? parseGpt2(r) : parseLlamaFamily(r, family);
}

} // namespace

TransformerShape parseHfConfig(const nlohmann::json& config, std::string_view origin)
{
    return parseConfig(config, origin).shape;
}

ModelGraph buildFromHfConfig(const nlohmann::json& config, const BuildOptions& options, std::string name)
{
    const ParsedConfig parsed = parseConfig(config, name);
    return detail::buildTransformerGraphWithBiases(parsed.shape, parsed.qkvBias, parsed.outBias, parsed.mlpBias,
                                                   options, std::move(name));
}

} // namespace shardscape
