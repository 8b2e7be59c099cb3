// SPDX-License-Identifier: MIT
// Reads a Hugging Face config.json into a TransformerShape: GPT-2, GPT-NeoX, BLOOM, the Llama family and the 2025-26
// families (Qwen2-MoE, Qwen3, Qwen3-MoE, DeepSeek-V2/V3, Gemma 2/3, Phi-3, Llama 4, gpt-oss). Field names and defaults
// follow transformers' configuration_<model_type>.py of each; an unknown model_type with the standard decoder fields
// is built from them, with a note naming what was assumed. This file picks the family and builds; hf_families.cpp
// holds the parsers.
#include "shardscape/model/hf_config.h"

#include "hf_config_reader.h"

#include "shardscape/support/error.h"
#include "shardscape/support/strings.h"

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

namespace shardscape {

namespace detail {
// Defined in transformer_builder.cpp: TransformerShape has no field for the linears' biases,
// which only the config (attention_bias, mlp_bias) can tell.
ModelGraph buildTransformerGraphWithBiases(const TransformerShape& shape, bool qkvBias, bool outBias, bool mlpBias,
                                           const BuildOptions& options, std::string name);
} // namespace detail

namespace hf_detail {

constexpr std::array<std::pair<std::string_view, std::string_view>, 19> kArchitectures {{
    {"GPT2LMHeadModel", "gpt2"},
    {"GPTNeoXForCausalLM", "gpt_neox"},
    {"BloomForCausalLM", "bloom"},
    {"LlamaForCausalLM", "llama"},
    {"MistralForCausalLM", "mistral"},
    {"MixtralForCausalLM", "mixtral"},
    {"Qwen2ForCausalLM", "qwen2"},
    {"Qwen2MoeForCausalLM", "qwen2_moe"},
    {"Qwen3ForCausalLM", "qwen3"},
    {"Qwen3MoeForCausalLM", "qwen3_moe"},
    {"DeepseekV2ForCausalLM", "deepseek_v2"},
    {"DeepseekV3ForCausalLM", "deepseek_v3"},
    {"Gemma2ForCausalLM", "gemma2"},
    {"Gemma3ForConditionalGeneration", "gemma3"},
    {"Gemma3ForCausalLM", "gemma3_text"},
    {"Phi3ForCausalLM", "phi3"},
    {"Llama4ForConditionalGeneration", "llama4"},
    {"Llama4ForCausalLM", "llama4_text"},
    {"GptOssForCausalLM", "gpt_oss"},
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

/** model_type, or architectures[0] when there is none. */
std::string modelFamily(const json& config, const ConfigReader& r)
{
    if (const auto type = r.text("model_type"))
        return *type; // an unknown one is built from its standard decoder fields (parseStandardDecoder)
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

} // namespace hf_detail

namespace {

using namespace hf_detail;

ParsedConfig parseFamily(const json& config, ConfigReader& r);

/** RoPE's base: rope_theta, transformers v5's rope_parameters.rope_theta, or GPT-NeoX's rotary_emb_base; 0 when the
    config states none. */
double ropeTheta(const json& config)
{
    const json* source = &config;
    if (config.is_object() && config.contains("text_config") && config.at("text_config").is_object())
        source = &config.at("text_config");
    for (const json* where : {source, source->contains("rope_parameters") ? &source->at("rope_parameters") : nullptr})
        for (const char* key : {"rope_theta", "rotary_emb_base"})
            if (where && where->is_object() && where->contains(key) && where->at(key).is_number()
                && where->at(key).get<double>() > 0)
                return where->at(key).get<double>();
    return 0;
}

ParsedConfig parseConfig(const json& config, std::string_view origin)
{
    ConfigReader r(config, origin);
    ParsedConfig c = parseFamily(config, r);
    if (!c.shape.learned_positions)
        c.shape.rope_theta = ropeTheta(config);
    return c;
}

ParsedConfig parseFamily(const json& config, ConfigReader& r)
{
    if (!config.is_object())
        r.fail(cat("expected a JSON object (a Hugging Face config.json), got ", config.type_name()),
               "pass the model's config.json");
    const std::string family = modelFamily(config, r);
    r.setFamily(family);
    // Multimodal configs nest the text decoder (Gemma 3, Llama 4); the vision tower is not built.
    if ((family == "gemma3" || family == "llama4") && !r.isUnset("text_config")) {
        if (!config.at("text_config").is_object())
            r.fail("'text_config' must be an object", "copy the model's config.json unchanged");
        ConfigReader text(config.at("text_config"), cat(r.origin(), " text_config"));
        text.setFamily(family);
        checkIgnoredFields(text);
        ParsedConfig c = family == "gemma3" ? parseGemma(text, "gemma3") : parseLlama4(text);
        c.notes.push_back("the vision encoder in the config is not built (text decoder only)");
        return c;
    }
    checkIgnoredFields(r);
    if (family == "gpt2")
        return parseGpt2(r);
    if (family == "gpt_neox")
        return parseGptNeox(r);
    if (family == "bloom")
        return parseBloom(r);
    if (family == "qwen3" || family == "qwen3_moe")
        return parseQwen3(r, family);
    if (family == "qwen2_moe")
        return parseQwen2Moe(r);
    if (family == "deepseek_v2" || family == "deepseek_v3")
        return parseDeepSeek(r, family);
    if (family == "gemma2" || family == "gemma3" || family == "gemma3_text")
        return parseGemma(r, family == "gemma3_text" ? "gemma3" : family);
    if (family == "phi3")
        return parsePhi3(r);
    if (family == "llama4" || family == "llama4_text")
        return parseLlama4(r);
    if (family == "gpt_oss")
        return parseGptOss(r);
    if (!knownModelType(family))
        return parseStandardDecoder(r, family);
    return parseLlamaFamily(r, family);
}

} // namespace

TransformerShape parseHfConfig(const nlohmann::json& config, std::string_view origin)
{
    return parseConfig(config, origin).shape;
}

ModelGraph buildFromHfConfig(const nlohmann::json& config, const BuildOptions& options, std::string name)
{
    const ParsedConfig parsed = parseConfig(config, name);
    ModelGraph graph = detail::buildTransformerGraphWithBiases(parsed.shape, parsed.qkvBias, parsed.outBias,
                                                               parsed.mlpBias, options, std::move(name));
    graph.load_notes = parsed.notes;
    return graph;
}

} // namespace shardscape
