// SPDX-License-Identifier: MIT
#include "model_shapes.h"

#include "errors.h"
#include "shardscape/support/json_nesting.h"

#include <algorithm>
#include <array>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace shardscape::profiler {

namespace {

using nlohmann::json;

constexpr std::int64_t kMaxDim = 10'000'000; // far above any real model; catches typos and overflow

std::string brief(const json& v)
{
    std::string text = v.dump(-1, ' ', false, json::error_handler_t::replace);
    return text.size() > 40 ? text.substr(0, 37) + "..." : text;
}

/** Field access on a config.json that names the file and the key in every error. */
class Fields
{
public:
    Fields(const json& doc, std::string_view origin)
        : m_doc(doc)
        , m_origin(origin)
    {
    }
    bool has(const char* key) const { return m_doc.contains(key) && !m_doc.at(key).is_null(); }
    std::int64_t integer(const char* key) const
    {
        if (!has(key))
            fail(std::string("'") + key + "' is missing", "copy the model's config.json unchanged");
        const json& v = m_doc.at(key);
        if (!v.is_number_integer() || v.get<std::int64_t>() < 1 || v.get<std::int64_t>() > kMaxDim)
            fail(std::string("'") + key + "' must be a whole number from 1 to " + std::to_string(kMaxDim) + ", got "
                     + brief(v),
                 "check the value");
        return v.get<std::int64_t>();
    }
    /** `key`, else `alias` (GPT-2 names vs the generic ones), else `fallback` when it is >= 0. */
    std::int64_t integer(const char* key, const char* alias, std::int64_t fallback = -1) const
    {
        if (has(key))
            return integer(key);
        if (alias && has(alias))
            return integer(alias);
        if (fallback >= 0)
            return fallback;
        return integer(key); // reports it missing
    }
    std::string text(const char* key) const
    {
        if (!has(key))
            return {};
        if (!m_doc.at(key).is_string())
            fail(std::string("'") + key + "' must be a string, got " + brief(m_doc.at(key)), "write it in quotes");
        return m_doc.at(key).get<std::string>();
    }
    [[noreturn]] void fail(const std::string& cause, const std::string& hint) const
    {
        throw BadInput(m_origin + ": " + cause, hint);
    }

private:
    const json& m_doc;
    std::string m_origin;
};

constexpr std::array<std::string_view, 5> kGatedTypes {"llama", "mistral", "mixtral", "qwen2", "qwen3"};
constexpr std::array<std::pair<std::string_view, std::string_view>, 6> kArchitectures {{
    {"GPT2LMHeadModel", "gpt2"},
    {"LlamaForCausalLM", "llama"},
    {"MistralForCausalLM", "mistral"},
    {"MixtralForCausalLM", "mixtral"},
    {"Qwen2ForCausalLM", "qwen2"},
    {"Qwen3ForCausalLM", "qwen3"},
}};

std::string modelType(const json& config, const Fields& f)
{
    std::string type = f.text("model_type");
    if (type.empty() && config.contains("architectures") && config.at("architectures").is_array()
        && !config.at("architectures").empty() && config.at("architectures")[0].is_string()) {
        const auto arch = config.at("architectures")[0].get<std::string>();
        for (const auto& [name, t] : kArchitectures)
            if (name == arch)
                type = t;
    }
    if (type == "gpt2" || std::find(kGatedTypes.begin(), kGatedTypes.end(), type) != kGatedTypes.end())
        return type;
    f.fail(type.empty() ? "no model_type and no known architectures entry"
                        : "model_type '" + type + "' is not supported",
           "supported: gpt2, llama, mistral, mixtral, qwen2, qwen3; for other models list the GEMMs with --shapes");
}

std::int64_t ceilDiv(std::int64_t a, std::int64_t b)
{
    return (a + b - 1) / b;
}

/** Adds the three GEMMs of a linear with `in` inputs and `out` outputs over `tokens` rows. */
void addLinear(std::vector<GemmShape>& out, const std::string& name, std::int64_t tokens, std::int64_t in,
               std::int64_t outFeatures)
{
    out.push_back({tokens, outFeatures, in, name + ".fwd"});
    out.push_back({tokens, in, outFeatures, name + ".bwd_input"});
    out.push_back({outFeatures, in, tokens, name + ".bwd_weight"});
}

/** Merges identical (m, n, k), keeping the first position and joining the names. */
std::vector<GemmShape> mergeDuplicates(const std::vector<GemmShape>& shapes)
{
    std::vector<GemmShape> merged;
    for (const auto& s : shapes) {
        auto it = std::find_if(merged.begin(), merged.end(),
                               [&](const GemmShape& g) { return g.m == s.m && g.n == s.n && g.k == s.k; });
        if (it == merged.end())
            merged.push_back(s);
        else
            it->name += "+" + s.name;
    }
    return merged;
}

} // namespace

ModelShapes deriveModelShapes(const json& config, const ModelRun& run, std::string_view origin)
{
    const Fields f(config, origin);
    if (!config.is_object())
        f.fail("not a JSON object", "give a Hugging Face config.json");
    ModelShapes result;
    const std::string type = modelType(config, f);
    const bool gpt2 = type == "gpt2";
    result.family = gpt2 ? "gpt2" : "llama";

    const std::int64_t hidden = f.integer("hidden_size", "n_embd");
    const std::int64_t heads = f.integer("num_attention_heads", "n_head");
    const std::int64_t kvHeads = gpt2 ? heads : f.integer("num_key_value_heads", nullptr, heads);
    if (!f.has("head_dim") && hidden % heads != 0)
        f.fail("hidden size " + std::to_string(hidden) + " is not a multiple of the " + std::to_string(heads)
                   + " attention heads",
               "check hidden_size and num_attention_heads, or give head_dim");
    const std::int64_t headDim = f.has("head_dim") ? f.integer("head_dim") : hidden / heads;
    const std::int64_t ffn = gpt2 ? f.integer("n_inner", nullptr, 4 * hidden) : f.integer("intermediate_size");
    const std::int64_t vocab = f.integer("vocab_size");
    if (heads % kvHeads != 0)
        f.fail("num_attention_heads " + std::to_string(heads) + " is not a multiple of num_key_value_heads "
                   + std::to_string(kvHeads),
               "check the two values");

    const std::int64_t tp = run.tp;
    const std::string tpText = "--tp " + std::to_string(tp);
    if (heads % tp != 0)
        throw BadInput(tpText + " does not divide the " + std::to_string(heads) + " attention heads of "
                           + std::string(origin),
                       "use a --tp that divides num_attention_heads");
    if (kvHeads % tp != 0 && tp % kvHeads != 0)
        throw BadInput(tpText + " neither divides nor is a multiple of the " + std::to_string(kvHeads)
                           + " key/value heads of " + std::string(origin),
                       "use a --tp that divides num_key_value_heads or is a multiple of it");
    if (ffn % tp != 0)
        throw BadInput(tpText + " does not divide the MLP width " + std::to_string(ffn) + " of " + std::string(origin),
                       "use a --tp that divides intermediate_size");
    const std::int64_t tokens = run.seqLen * run.microBatch;
    const std::int64_t headsRank = heads / tp;
    const std::int64_t kvRank = kvHeads % tp == 0 ? kvHeads / tp : 1;
    const std::int64_t ffnRank = ffn / tp;

    std::vector<GemmShape> gemms;
    addLinear(gemms, "qkv", tokens, hidden, (headsRank + 2 * kvRank) * headDim);
    addLinear(gemms, "attn_out", tokens, headsRank * headDim, hidden);
    const std::int64_t experts = gpt2 || !f.has("num_local_experts") ? 0 : f.integer("num_local_experts");
    std::int64_t mlpTokens = tokens;
    if (experts > 0) {
        const std::int64_t topK = f.integer("num_experts_per_tok", nullptr, 2);
        if (topK > experts)
            f.fail("num_experts_per_tok " + std::to_string(topK) + " exceeds num_local_experts "
                       + std::to_string(experts),
                   "check the two values");
        addLinear(gemms, "router", tokens, hidden, experts);
        mlpTokens = ceilDiv(tokens * topK, experts);
    }
    const std::string mlp = experts > 0 ? "expert_" : "mlp_";
    if (!gpt2) {
        addLinear(gemms, mlp + "gate", mlpTokens, hidden, ffnRank);
        addLinear(gemms, mlp + "up", mlpTokens, hidden, ffnRank);
    } else {
        addLinear(gemms, mlp + "up", mlpTokens, hidden, ffnRank);
    }
    addLinear(gemms, mlp + "down", mlpTokens, ffnRank, hidden);
    addLinear(gemms, "lm_head", tokens, hidden, ceilDiv(vocab, tp));
    result.gemms = mergeDuplicates(gemms);
    result.attention = {run.microBatch, headsRank, run.seqLen, headDim};
    return result;
}

std::vector<GemmCase> parseShapesDocument(const json& doc, std::string_view origin)
{
    const std::string where(origin);
    const std::string example = R"(e.g. [{"m": 4096, "n": 4096, "k": 4096, "dtype": "bf16"}])";
    if (!doc.is_array() || doc.empty())
        throw BadInput(where + ": must be a non-empty JSON list of GEMM rows", example);
    std::vector<GemmCase> cases;
    for (std::size_t i = 0; i < doc.size(); ++i) {
        const json& row = doc[i];
        const std::string at = where + ": row " + std::to_string(i);
        if (!row.is_object())
            throw BadInput(at + " is not an object", example);
        for (const auto& [key, value] : row.items())
            if (key != "m" && key != "n" && key != "k" && key != "dtype" && key != "name")
                throw BadInput(at + ": unknown key '" + key + "'", "allowed keys: m, n, k, dtype, name");
        GemmCase c;
        const auto dim = [&](const char* key) {
            if (!row.contains(key))
                throw BadInput(at + ": '" + key + "' is missing", example);
            const json& v = row.at(key);
            if (!v.is_number_integer() || v.get<std::int64_t>() < 1 || v.get<std::int64_t>() > 1'048'576)
                throw BadInput(at + ": '" + key + "' must be a whole number from 1 to 1048576, got " + brief(v),
                               "check the value");
            return v.get<std::int64_t>();
        };
        c.shape.m = dim("m");
        c.shape.n = dim("n");
        c.shape.k = dim("k");
        if (!row.contains("dtype") || !row.at("dtype").is_string())
            throw BadInput(at + ": 'dtype' must be a string", "one of bf16, fp16, tf32, fp32, fp8");
        const auto dtype = parseDType(row.at("dtype").get<std::string>());
        if (!dtype)
            throw BadInput(at + ": unknown dtype " + brief(row.at("dtype")), "one of bf16, fp16, tf32, fp32, fp8");
        c.dtype = *dtype;
        if (row.contains("name")) {
            if (!row.at("name").is_string())
                throw BadInput(at + ": 'name' must be a string", "write it in quotes or leave it out");
            c.shape.name = row.at("name").get<std::string>();
        } else {
            c.shape.name = "shapes[" + std::to_string(i) + "]";
        }
        cases.push_back(std::move(c));
    }
    return cases;
}

json readJsonFile(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw BadInput("cannot open '" + path + "'", "check the path");
    std::stringstream text;
    text << in.rdbuf();
    if (const auto excess = shardscape::findJsonNestingExcess(text.str()))
        throw BadInput("'" + path + "' nests JSON more than " + std::to_string(excess->limit) + " levels deep (at byte "
                           + std::to_string(excess->offset) + ")",
                       "is this the right file?");
    try {
        return json::parse(text.str());
    } catch (const json::parse_error& e) {
        throw BadInput("'" + path + "' is not valid JSON: " + e.what(), "check the file");
    }
}

std::vector<GemmShape> defaultGemmGrid(bool quick)
{
    std::vector<GemmShape> grid;
    const std::vector<std::int64_t> squares = quick
        ? std::vector<std::int64_t> {1024, 4096, 8192}
        : std::vector<std::int64_t> {256, 512, 1024, 2048, 4096, 8192, 16384};
    for (const std::int64_t s : squares)
        grid.push_back({s, s, s, "square"});
    // (n, k) of typical linears: Llama-2-7B (hidden 4096, MLP 11008, vocab 32000) unsharded, and
    // Llama-2-70B (hidden 8192, 64 heads / 8 KV heads of 128, MLP 28672) on one rank of TP 8.
    struct Linear
    {
        std::int64_t n, k;
        const char* name;
    };
    const std::vector<Linear> linears = quick
        ? std::vector<Linear> {{12288, 4096, "7b.qkv"}, {4096, 11008, "7b.down"}, {3584, 8192, "70b-tp8.up"}}
        : std::vector<Linear> {
            {12288, 4096, "7b.qkv"},          {4096, 4096, "7b.attn_out"}, {11008, 4096, "7b.up"},
            {4096, 11008, "7b.down"},         {32000, 4096, "7b.lm_head"}, {1280, 8192, "70b-tp8.qkv"},
            {8192, 1024, "70b-tp8.attn_out"}, {3584, 8192, "70b-tp8.up"},  {8192, 3584, "70b-tp8.down"}};
    const std::vector<std::int64_t> tokens
        = quick ? std::vector<std::int64_t> {4096} : std::vector<std::int64_t> {2048, 8192};
    for (const std::int64_t t : tokens)
        for (const auto& l : linears)
            grid.push_back({t, l.n, l.k, std::string(l.name) + ".fwd@" + std::to_string(t)});
    if (!quick) {
        // Weight gradients: the token count becomes the reduction dimension.
        grid.push_back({4096, 4096, 8192, "7b.attn_out.bwd_weight@8192"});
        grid.push_back({11008, 4096, 8192, "7b.up.bwd_weight@8192"});
        // Few tokens (inference decode, tiny micro-batches).
        grid.push_back({16, 4096, 4096, "decode16"});
        grid.push_back({128, 4096, 4096, "decode128"});
    }
    return grid;
}

std::vector<AttentionShape> defaultAttentionGrid(bool quick)
{
    std::vector<AttentionShape> grid;
    const std::vector<std::int64_t> seqs
        = quick ? std::vector<std::int64_t> {1024, 4096} : std::vector<std::int64_t> {512, 1024, 2048, 4096, 8192};
    for (const std::int64_t s : seqs)
        grid.push_back({1, 32, s, 128});
    if (!quick)
        for (const std::int64_t s : {2048, 4096})
            grid.push_back({1, 16, s, 64});
    return grid;
}

} // namespace shardscape::profiler
