// SPDX-License-Identifier: MIT
// Transformer graphs from HF config.json: published parameter counts, closed-form FLOPs, Korthikanti's
// activation memory, the graph conventions other modules rely on, and the error paths.
#include "shardscape/model/hf_config.h"
#include "shardscape/model/layers.h"
#include "shardscape/model/native_json.h"
#include "shardscape/support/error.h"
#include "shardscape/support/json_file.h"

#include <QElapsedTimer>
#include <QTest>
#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>

using namespace shardscape;
using nlohmann::json;

namespace {

const char* const kDensePresets[] = {"gpt2",      "gpt2-xl",    "llama2-7b",   "llama2-13b", "llama2-70b",
                                     "llama3-8b", "llama3-70b", "llama3-405b", "mistral-7b", "qwen2-7b"};

json preset(const std::string& name)
{
    return readJsonFile(std::string(SHARDSCAPE_SOURCE_DIR "/resources/models/") + name + ".json");
}

ModelGraph buildPreset(const std::string& name, std::int64_t batch = 1, std::int64_t seqLen = 0)
{
    BuildOptions options;
    options.batch = batch;
    options.seq_len = seqLen;
    return buildFromHfConfig(preset(name), options, name);
}

/** The InputError's message, or "(no error)". Other exceptions escape and fail the test. */
std::string errorOf(const std::function<void()>& f)
{
    try {
        f();
    } catch (const InputError& e) {
        return e.message();
    }
    return "(no error)";
}

const Op& opNamed(const ModelGraph& g, const std::string& name)
{
    const auto id = g.findOp(name);
    if (!id)
        throw std::runtime_error("no op " + name);
    return g.op(*id);
}

const Tensor& tensorNamed(const ModelGraph& g, const std::string& name)
{
    const auto id = g.findTensor(name);
    if (!id)
        throw std::runtime_error("no tensor " + name);
    return g.tensor(*id);
}

/** A small GPT-2-style shape (layernorm, learned positions, GELU MLP with f = 4h, tied embeddings). */
TransformerShape gptShape(std::int64_t h, std::int64_t a, double dropout, bool flash)
{
    TransformerShape t;
    t.family = "gpt2";
    t.hidden = h;
    t.num_layers = 2;
    t.num_heads = a;
    t.num_kv_heads = a;
    t.head_dim = h / a;
    t.ffn_hidden = 4 * h;
    t.vocab = 1000;
    t.max_positions = 4096;
    t.gated_mlp = false;
    t.tied_embeddings = true;
    t.learned_positions = true;
    t.flash_attention = flash;
    t.dropout = dropout;
    t.norm = "layernorm";
    return t;
}

double blockActivationBytes(const ModelGraph& g, std::size_t block)
{
    const auto layers = layersByModule(g);
    const Layer& layer = layers.at(block + 1); // layer 0 is the embedding
    if (layer.kind != LayerKind::Block)
        throw std::runtime_error("not a block");
    return layer.activation_bytes;
}

} // namespace

// QCOMPARE compares doubles fuzzily (1e-12); closed forms of whole-number FLOPs and bytes must match exactly.
#define COMPARE_EXACT(actual, expected)                                                                                \
    do {                                                                                                               \
        const double a_ = (actual);                                                                                    \
        const double e_ = (expected);                                                                                  \
        QVERIFY2(a_ == e_, qPrintable(QStringLiteral("%1 != %2").arg(a_, 0, 'f', 0).arg(e_, 0, 'f', 0)));              \
    } while (false)

class TestModelBuilders : public QObject
{
    Q_OBJECT

private slots:
    void presetParams_data();
    void presetParams();
    void gpt2ExactParams();
    void mixtralActiveParams();
    void frontierParams_data();
    void frontierParams();
    void frontierShapes();
    void slidingWindowCostsTheWindow();
    void unknownModelTypeIsBuiltWithANote();
    void presetShapes();
    void matmulFlopsClosedForm_data();
    void matmulFlopsClosedForm();
    void flopsPerToken_data();
    void flopsPerToken();
    void layersOfPresets_data();
    void layersOfPresets();
    void korthikantiActivations_data();
    void korthikantiActivations();
    void flashActivations();
    void hfEagerAttention();
    void megatronTorchSoftmax();
    void graphIsWellFormed_data();
    void graphIsWellFormed();
    void llamaConventions();
    void gpt2Conventions();
    void gptNeoxConventions();
    void bloomConventions();
    void embeddingNormSavesItsInput();
    void mixtralConventions();
    void configVariants();
    void sequenceLength();
    void configErrors_data();
    void configErrors();
    void builderErrors();
    void buildSpeed();
};

void TestModelBuilders::presetParams_data()
{
    QTest::addColumn<QString>("name");
    QTest::addColumn<double>("published");
    // Published totals (model cards / papers); the research note's table has the same figures.
    QTest::newRow("gpt2") << "gpt2" << 1.24e8;
    QTest::newRow("gpt2-xl") << "gpt2-xl" << 1.558e9;
    QTest::newRow("llama2-7b") << "llama2-7b" << 6.74e9;
    QTest::newRow("llama2-13b") << "llama2-13b" << 1.30e10;
    QTest::newRow("llama2-70b") << "llama2-70b" << 6.90e10;
    QTest::newRow("llama3-8b") << "llama3-8b" << 8.03e9;
    QTest::newRow("llama3-70b") << "llama3-70b" << 7.06e10;
    QTest::newRow("llama3-405b") << "llama3-405b" << 4.05e11;
    QTest::newRow("mistral-7b") << "mistral-7b" << 7.24e9;
    QTest::newRow("qwen2-7b") << "qwen2-7b" << 7.62e9;
    QTest::newRow("mixtral-8x7b") << "mixtral-8x7b" << 4.67e10;
    QTest::newRow("gpt-neox-20b") << "gpt-neox-20b" << 2.0556e10;
    QTest::newRow("bloom-176b") << "bloom-176b" << 1.7625e11;
}

void TestModelBuilders::presetParams()
{
    QFETCH(QString, name);
    QFETCH(double, published);
    const ModelGraph g = buildPreset(name.toStdString(), 1, 128);
    const double params = g.paramCount();
    QVERIFY2(std::fabs(params / published - 1) < 0.005,
             qPrintable(QStringLiteral("%1 params vs published %2").arg(params, 0, 'g', 6).arg(published)));
}

void TestModelBuilders::gpt2ExactParams()
{
    // wte 50257*768 + wpe 1024*768 + 12 blocks * 7,087,872 + ln_f 2*768, tied lm_head counted once.
    QCOMPARE(buildPreset("gpt2", 1, 64).paramCount(), 124'439'808.0);
    // GPT-2 XL: 50257*1600 + 1024*1600 + 48 * 30,740,800 + 3200.
    QCOMPARE(buildPreset("gpt2-xl", 1, 64).paramCount(), 1'557'611'200.0);
}

void TestModelBuilders::mixtralActiveParams()
{
    const ModelGraph g = buildPreset("mixtral-8x7b", 1, 128);
    const double active = g.activeParamCount();
    QVERIFY2(std::fabs(active / 1.29e10 - 1) < 0.005, qPrintable(QString::number(active, 'g', 6)));
    // Exactly: everything but the experts, plus 2 of 8 experts' 3 matrices per layer.
    const double experts = 32.0 * 8 * 3 * 4096 * 14336;
    QCOMPARE(active, g.paramCount() - experts + experts * 2 / 8);
}

void TestModelBuilders::frontierParams_data()
{
    QTest::addColumn<QString>("name");
    QTest::addColumn<QByteArray>("patch"); // applied to the preset (JSON merge patch); {} = the preset itself
    QTest::addColumn<double>("total");
    QTest::addColumn<double>("active");
    QTest::addColumn<double>("tolerance");
    // Published totals / active counts (model cards, the DeepSeek-V3 report), rounded by their authors to the
    // digits given: the tolerance is 0.5% or the rounding, whichever is larger. activeParamCount counts every
    // weight a token touches; DeepSeek and OpenAI leave the input embedding table out of "activated" (a lookup
    // reads one row), Qwen and Meta keep it: a negative active figure below is compared without the table.
    QTest::newRow("deepseek-v3") << "deepseek-v3" << QByteArray("{}") << 671e9 << -37e9 << 0.015;
    QTest::newRow("qwen3-8b") << "qwen3-8b" << QByteArray("{}") << 8.19e9 << 0.0 << 0.005;
    QTest::newRow("qwen3-32b") << "qwen3-32b" << QByteArray("{}") << 32.8e9 << 0.0 << 0.005;
    QTest::newRow("qwen3-30b-a3b") << "qwen3-30b-a3b" << QByteArray("{}") << 30.5e9 << 3.3e9 << 0.016;
    QTest::newRow("qwen3-235b-a22b") << "qwen3-235b-a22b" << QByteArray("{}") << 235e9 << 22e9 << 0.01;
    QTest::newRow("gemma3-27b") << "gemma3-27b" << QByteArray("{}") << 27.0e9 << 0.0 << 0.005;
    // Llama 4 Scout's 109B includes the vision encoder (not built): the text decoder is 107.8B; 17B active.
    QTest::newRow("llama4-scout") << "llama4-scout" << QByteArray("{}") << 107.8e9 << 17e9 << 0.01;
    // Family configs as published (model cards' totals).
    QTest::newRow("qwen1.5-moe-a2.7b (qwen2_moe)")
        << "qwen3-8b"
        << QByteArray(R"({"model_type": "qwen2_moe", "architectures": ["Qwen2MoeForCausalLM"], "head_dim": null,
            "hidden_size": 2048, "intermediate_size": 5632, "moe_intermediate_size": 1408,
            "shared_expert_intermediate_size": 5632, "num_experts": 60, "num_experts_per_tok": 4,
            "num_hidden_layers": 24, "num_attention_heads": 16, "num_key_value_heads": 16, "vocab_size": 151936,
            "max_position_embeddings": 8192, "decoder_sparse_step": 1})")
        << 14.3e9 << 2.7e9 << 0.01;
    QTest::newRow("deepseek-v2-lite")
        << "deepseek-v3"
        << QByteArray(R"({"model_type": "deepseek_v2", "architectures": ["DeepseekV2ForCausalLM"], "hidden_size": 2048,
            "intermediate_size": 10944, "moe_intermediate_size": 1408, "n_routed_experts": 64, "n_shared_experts": 2,
            "num_experts_per_tok": 6, "first_k_dense_replace": 1, "num_hidden_layers": 27, "num_attention_heads": 16,
            "num_key_value_heads": 16, "q_lora_rank": null, "vocab_size": 102400, "num_nextn_predict_layers": null})")
        << 15.7e9 << -2.4e9 << 0.021;
    QTest::newRow("phi-3-mini (phi3)")
        << "qwen3-8b" << QByteArray(R"({"model_type": "phi3", "architectures": ["Phi3ForCausalLM"], "head_dim": null,
            "hidden_size": 3072, "intermediate_size": 8192, "num_hidden_layers": 32, "num_attention_heads": 32,
            "num_key_value_heads": 32, "vocab_size": 32064, "max_position_embeddings": 4096, "sliding_window": 2047})")
        << 3.82e9 << 0.0 << 0.005;
    QTest::newRow("gemma-2-9b (gemma2)")
        << "qwen3-8b" << QByteArray(R"({"model_type": "gemma2", "architectures": ["Gemma2ForCausalLM"], "head_dim": 256,
            "hidden_size": 3584, "intermediate_size": 14336, "num_hidden_layers": 42, "num_attention_heads": 16,
            "num_key_value_heads": 8, "vocab_size": 256000, "max_position_embeddings": 8192, "sliding_window": 4096,
            "tie_word_embeddings": null})")
        << 9.24e9 << 0.0 << 0.005;
    // gpt-oss-120b: 116.8B total, 5.1B active (model card).
    QTest::newRow("gpt-oss-120b")
        << "qwen3-8b" << QByteArray(R"({"model_type": "gpt_oss", "architectures": ["GptOssForCausalLM"], "head_dim": 64,
            "hidden_size": 2880, "intermediate_size": 2880, "num_local_experts": 128, "num_experts_per_tok": 4,
            "num_hidden_layers": 36, "num_attention_heads": 64, "num_key_value_heads": 8, "vocab_size": 201088,
            "max_position_embeddings": 131072, "sliding_window": 128, "attention_bias": true})")
        << 116.8e9 << -5.13e9 << 0.005;
}

void TestModelBuilders::frontierParams()
{
    QFETCH(QString, name);
    QFETCH(QByteArray, patch);
    QFETCH(double, total);
    QFETCH(double, active);
    QFETCH(double, tolerance);
    json config = preset(name.toStdString());
    config.merge_patch(json::parse(patch.toStdString()));
    BuildOptions options;
    options.seq_len = 128;
    const ModelGraph g = buildFromHfConfig(config, options, name.toStdString());
    QVERIFY2(std::fabs(g.paramCount() / total - 1) < tolerance,
             qPrintable(QStringLiteral("total %1 vs %2").arg(g.paramCount(), 0, 'g', 6).arg(total)));
    double embedding = 0;
    for (const auto& tensor : g.tensors())
        if (tensor.is_param && tensor.name == "model.embed_tokens.weight")
            embedding = static_cast<double>(tensor.elements());
    const double counted = active < 0 ? g.activeParamCount() - embedding : g.activeParamCount();
    // Active counts are published to two significant digits: half of the last one, plus 0.5%.
    const double published = std::max(1.0, std::fabs(active));
    const double digit = std::pow(10.0, std::floor(std::log10(published)) - 1);
    const double activeTolerance = 0.005 + 0.5 * digit / published;
    if (active != 0)
        QVERIFY2(std::fabs(counted / std::fabs(active) - 1) < activeTolerance,
                 qPrintable(QStringLiteral("active %1 vs %2").arg(counted, 0, 'g', 6).arg(std::fabs(active))));
}

void TestModelBuilders::frontierShapes()
{
    // DeepSeek-V3: one MLA layer's weights in closed form (q_a, q_a_norm, q_b, kv_a, kv_a_norm, kv_b, o).
    const TransformerShape t = parseHfConfig(preset("deepseek-v3"), "deepseek-v3");
    QCOMPARE(t.kv_lora_rank, 512);
    QCOMPARE(t.first_dense_layers, 3);
    QCOMPARE(t.shared_expert_ffn, 2048);
    QCOMPARE(t.dense_ffn_hidden, 18432);
    QVERIFY(!t.isMoeLayer(2) && t.isMoeLayer(3) && t.isMoeLayer(60));
    const ModelGraph g = buildPreset("deepseek-v3", 1, 128);
    double attention = 0;
    for (const auto& tensor : g.tensors())
        if (tensor.is_param && tensor.name.starts_with("model.layers.0.self_attn."))
            attention += static_cast<double>(tensor.elements());
    const double mla = 7168.0 * 1536 + 1536 + 1536.0 * 128 * 192 + 7168.0 * (512 + 64) + 512 + 512.0 * 128 * 256
        + 128.0 * 128 * 7168;
    QCOMPARE(attention, mla);
    // Qwen3-MoE: every layer routed; Llama 4 Scout: a shared expert beside 16 routed ones.
    QVERIFY(parseHfConfig(preset("qwen3-30b-a3b"), "q").isMoeLayer(0));
    const TransformerShape scout = parseHfConfig(preset("llama4-scout"), "scout");
    QCOMPARE(scout.num_experts, 16);
    QCOMPARE(scout.shared_expert_ffn, 8192);
    QCOMPARE(scout.attention_window, 8192);
    QCOMPARE(scout.global_layer_every, 4);
}

void TestModelBuilders::slidingWindowCostsTheWindow()
{
    // Gemma 3 at 8k tokens: five of every six layers attend 1,024 keys, the sixth all 8,192; the attention
    // kernel's FLOPs are 4 x s x keys x heads x head_dim per sequence (non-causal count).
    const ModelGraph g = buildPreset("gemma3-27b", 1, 8192);
    const double perKey = 4.0 * 8192 * 32 * 128;
    int local = 0, global = 0;
    for (const auto& op : g.ops()) {
        if (op.kind != OpKind::FlashAttention)
            continue;
        if (op.flops_fwd == perKey * 1024)
            ++local;
        else if (op.flops_fwd == perKey * 8192)
            ++global;
        else
            QFAIL(qPrintable(QStringLiteral("%1: %2 FLOPs").arg(QString::fromStdString(op.name)).arg(op.flops_fwd)));
    }
    QCOMPARE(global, 62 / 6);
    QCOMPARE(local, 62 - 62 / 6);
}

void TestModelBuilders::unknownModelTypeIsBuiltWithANote()
{
    // A causal LM whose model_type this reader does not know, with the standard fields: built, and the note says
    // what was assumed. An encoder with the same fields is refused.
    json config = preset("llama3-8b");
    config["model_type"] = "acme_lm";
    config["architectures"] = {"AcmeForCausalLM"};
    const ModelGraph g = buildFromHfConfig(config, {}, "acme");
    QVERIFY(std::fabs(g.paramCount() / buildPreset("llama3-8b").paramCount() - 1) < 1e-12);
    QCOMPARE(g.load_notes.size(), std::size_t(1));
    QVERIFY(g.load_notes.front().find("acme_lm") != std::string::npos);
    QVERIFY(g.load_notes.front().find("SwiGLU") != std::string::npos);
    config["architectures"] = {"AcmeForMaskedLM"};
    QVERIFY(errorOf([&] { buildFromHfConfig(config, {}, "acme"); }).find("not a causal language model")
            != std::string::npos);
}

void TestModelBuilders::presetShapes()
{
    const TransformerShape t = parseHfConfig(preset("llama3-405b"), "llama3-405b");
    QCOMPARE(t.family, std::string("llama"));
    QCOMPARE(t.hidden, 16384);
    QCOMPARE(t.num_layers, 126);
    QCOMPARE(t.num_heads, 128);
    QCOMPARE(t.num_kv_heads, 8);
    QCOMPARE(t.head_dim, 128);
    QCOMPARE(t.ffn_hidden, 53248);
    QCOMPARE(t.vocab, 128256);
    QCOMPARE(t.max_positions, 131072);
    QVERIFY(t.gated_mlp && !t.tied_embeddings && !t.learned_positions && t.flash_attention);
    QCOMPARE(t.dropout, 0.0);
    QCOMPARE(t.norm, std::string("rmsnorm"));

    const TransformerShape gpt = parseHfConfig(preset("gpt2"), "gpt2");
    QCOMPARE(gpt.ffn_hidden, 4 * 768);
    QCOMPARE(gpt.norm, std::string("layernorm"));
    QVERIFY(gpt.tied_embeddings && gpt.learned_positions && !gpt.gated_mlp);
    QCOMPARE(gpt.dropout, 0.1);

    const TransformerShape mixtral = parseHfConfig(preset("mixtral-8x7b"), "mixtral-8x7b");
    QCOMPARE(mixtral.family, std::string("mixtral"));
    QCOMPARE(mixtral.num_experts, 8);
    QCOMPARE(mixtral.top_k, 2);
    QCOMPARE(mixtral.ffn_hidden, 14336);
}

void TestModelBuilders::matmulFlopsClosedForm_data()
{
    QTest::addColumn<QString>("name");
    for (const char* name : kDensePresets)
        QTest::newRow(name) << name;
}

void TestModelBuilders::matmulFlopsClosedForm()
{
    QFETCH(QString, name);
    const std::int64_t b = 2;
    const std::int64_t s = 256;
    const ModelGraph g = buildPreset(name.toStdString(), b, s);
    const TransformerShape& t = *g.transformer;
    const double h = static_cast<double>(t.hidden);
    const double q = static_cast<double>(t.num_heads * t.head_dim);
    const double kv = static_cast<double>(t.num_kv_heads * t.head_dim);
    const double f = static_cast<double>(t.ffn_hidden);
    const double L = static_cast<double>(t.num_layers);
    const double tokens = static_cast<double>(b * s);

    // Matmul weights per block: q, k, v, o and 3 (SwiGLU) or 2 (GELU) MLP matrices; plus lm_head once
    // (also when tied: the matmul runs whatever the storage).
    const double blockWeights = h * q + 2 * h * kv + q * h + (t.gated_mlp ? 3 : 2) * h * f;
    const double weights = L * blockWeights + h * static_cast<double>(t.vocab);
    // A bias adds one FLOP per output element: GPT-2 has them on every block linear, Qwen2 on q/k/v.
    const bool gpt2 = t.family == "gpt2";
    const double qkvBias = gpt2 || t.family == "qwen2" ? q + 2 * kv : 0;
    const double otherBias = gpt2 ? h + f + h : 0;
    const double biases = L * (qkvBias + otherBias);
    const double attention = 4 * L * tokens * static_cast<double>(s) * static_cast<double>(t.num_heads * t.head_dim);
    const double expected = 2 * weights * tokens + biases * tokens + attention;

    double linear = 0;
    for (const auto& op : g.ops())
        if (op.kind == OpKind::Linear || op.kind == OpKind::AttentionScore || op.kind == OpKind::AttentionContext
            || op.kind == OpKind::FlashAttention)
            linear += op.flops_fwd;
    COMPARE_EXACT(linear, expected);
}

void TestModelBuilders::flopsPerToken_data()
{
    QTest::addColumn<QString>("name");
    for (const char* name : kDensePresets)
        QTest::newRow(name) << name;
    QTest::newRow("mixtral-8x7b") << "mixtral-8x7b";
}

void TestModelBuilders::flopsPerToken()
{
    // Kaplan-style estimate: 2 FLOPs per non-embedding (active) parameter, the LM head, and attention.
    QFETCH(QString, name);
    const ModelGraph g = buildPreset(name.toStdString());
    const TransformerShape& t = *g.transformer;
    const double h = static_cast<double>(t.hidden);
    const double V = static_cast<double>(t.vocab);
    double embedding = V * h * (t.tied_embeddings ? 1 : 2);
    if (t.learned_positions)
        embedding += static_cast<double>(t.max_positions) * h;
    const double nonEmbedding = g.activeParamCount() - embedding;
    const double estimate = 2 * nonEmbedding + 2 * h * V
        + 4 * static_cast<double>(t.num_layers * g.seq_len) * static_cast<double>(t.num_heads * t.head_dim);
    const double perToken = g.forwardFlops() / g.tokens();
    QVERIFY2(std::fabs(perToken / estimate - 1) < 0.02,
             qPrintable(QStringLiteral("%1 FLOPs/token vs estimate %2").arg(perToken, 0, 'g', 6).arg(estimate)));
}

void TestModelBuilders::layersOfPresets_data()
{
    QTest::addColumn<QString>("name");
    QTest::addColumn<int>("blocks");
    QTest::newRow("gpt2") << "gpt2" << 12;
    QTest::newRow("llama2-70b") << "llama2-70b" << 80;
    QTest::newRow("llama3-405b") << "llama3-405b" << 126;
    QTest::newRow("qwen2-7b") << "qwen2-7b" << 28;
    QTest::newRow("mixtral-8x7b") << "mixtral-8x7b" << 32;
}

void TestModelBuilders::layersOfPresets()
{
    QFETCH(QString, name);
    QFETCH(int, blocks);
    const ModelGraph g = buildPreset(name.toStdString(), 1, 512);
    const auto layers = layersByModule(g);
    QCOMPARE(static_cast<int>(layers.size()), blocks + 2);
    QCOMPARE(layers.front().kind, LayerKind::Embedding);
    QCOMPARE(layers.back().kind, LayerKind::Head);
    double params = 0;
    double flops = 0;
    std::size_t ops = 0;
    for (std::size_t i = 0; i < layers.size(); ++i) {
        if (i > 0 && i + 1 < layers.size())
            QCOMPARE(layers[i].kind, LayerKind::Block);
        params += layers[i].params;
        flops += layers[i].flops_fwd;
        ops += layers[i].ops.size();
    }
    QCOMPARE(ops, g.ops().size());
    QCOMPARE(params, g.paramCount());
    QVERIFY(std::fabs(flops / g.forwardFlops() - 1) < 1e-12);
    // Every block is identical.
    QCOMPARE(layers[1].activation_bytes, layers[static_cast<std::size_t>(blocks)].activation_bytes);
    QCOMPARE(layers[1].params, layers[static_cast<std::size_t>(blocks)].params);
}

void TestModelBuilders::korthikantiActivations_data()
{
    QTest::addColumn<qint64>("h");
    QTest::addColumn<qint64>("a");
    QTest::addColumn<qint64>("s");
    QTest::addColumn<qint64>("b");
    QTest::newRow("h256 a8 s128 b2") << qint64(256) << qint64(8) << qint64(128) << qint64(2);
    QTest::newRow("h768 a12 s1024 b1") << qint64(768) << qint64(12) << qint64(1024) << qint64(1);
    QTest::newRow("h1600 a25 s512 b3") << qint64(1600) << qint64(25) << qint64(512) << qint64(3);
}

void TestModelBuilders::korthikantiActivations()
{
    QFETCH(qint64, h);
    QFETCH(qint64, a);
    QFETCH(qint64, s);
    QFETCH(qint64, b);
    BuildOptions options;
    options.batch = b;
    options.seq_len = s;
    const double sbh = static_cast<double>(s * b * h);
    const double abss = static_cast<double>(a * b * s * s); // s*b*h * a*s/h, kept exact

    // Korthikanti et al. 2022, Table 2, no parallelism: s*b*h*(34 + 5as/h) bytes in 16-bit precision.
    // 34 = attention 11 (QKV input 2, Q and K 4, V 2, output projection input 2, its dropout mask 1)
    //    + MLP 19 (first linear input 2, GELU input 8, second linear input 8, dropout mask 1)
    //    + the two LayerNorms' inputs 4;
    // 5as/h = softmax output 2 + attention dropout mask 1 + dropout output 2.
    const ModelGraph withDropout = buildTransformerGraph(gptShape(h, a, 0.1, false), options, "gpt");
    COMPARE_EXACT(blockActivationBytes(withDropout, 0), sbh * 34 + 5 * abss);
    COMPARE_EXACT(blockActivationBytes(withDropout, 1), sbh * 34 + 5 * abss);

    // Without dropout the two u8 masks after the projections go (34 - 2 = 32) and so do the attention
    // mask and the dropped probabilities (5 - 3 = 2): the context matmul saves the softmax output, which the
    // softmax already keeps, so it counts once.
    const ModelGraph noDropout = buildTransformerGraph(gptShape(h, a, 0.0, false), options, "gpt");
    COMPARE_EXACT(blockActivationBytes(noDropout, 0), sbh * 32 + 2 * abss);

    // Hugging Face's eager attention keeps the fp32 softmax output (4) for the softmax's backward, and the PV
    // matmul keeps the 16-bit copy (2) or, with dropout, the mask (1) and the dropped copy (2).
    TransformerShape eager = gptShape(h, a, 0.1, false);
    eager.hf_eager_attention = true;
    COMPARE_EXACT(blockActivationBytes(buildTransformerGraph(eager, options, "gpt"), 0), sbh * 34 + 7 * abss);
    eager.dropout = 0;
    COMPARE_EXACT(blockActivationBytes(buildTransformerGraph(eager, options, "gpt"), 0), sbh * 32 + 6 * abss);
}

void TestModelBuilders::hfEagerAttention()
{
    // A config's _attn_implementation "eager" selects Hugging Face's chain; sdpa (the default) is fused.
    const std::string base = R"({"model_type": "llama", "hidden_size": 512, "num_hidden_layers": 2,
        "num_attention_heads": 8, "num_key_value_heads": 8, "intermediate_size": 1024, "vocab_size": 1000,
        "max_position_embeddings": 256)";
    const TransformerShape sdpa = parseHfConfig(nlohmann::json::parse(base + "}"), "llama");
    QVERIFY(sdpa.flash_attention && !sdpa.hf_eager_attention);
    const TransformerShape eager
        = parseHfConfig(nlohmann::json::parse(base + R"(, "_attn_implementation": "eager"})"), "llama");
    QVERIFY(!eager.flash_attention && eager.hf_eager_attention);

    // Bytes the chain between QK^T and PV streams, per score element (16-bit model): * scaling reads 2 and writes
    // 2, + causal_mask likewise plus the [b, 1, s, s] mask once, softmax(dtype=float32) reads 2 and writes 4,
    // .to(bf16) reads 4 and writes 2: 20 per element and 2 per mask element, against the fused kernel's 4.
    const std::int64_t b = 2;
    const std::int64_t s = 256;
    BuildOptions options;
    options.batch = b;
    options.seq_len = s;
    const ModelGraph g = buildTransformerGraph(eager, options, "llama");
    const std::string core = "model.layers.0.self_attn.core";
    double streamed = 0;
    int ops = 0;
    for (const auto& op : g.ops())
        if (op.module == core && (op.kind == OpKind::Elementwise || op.kind == OpKind::Softmax)) {
            streamed += op.bytes_read + op.bytes_written;
            ++ops;
        }
    QCOMPARE(ops, 4);
    const double scores = static_cast<double>(b * 8 * s * s);
    COMPARE_EXACT(streamed, 20 * scores + 2.0 * static_cast<double>(b * s * s));

    // The native graph keeps the choice.
    const ModelGraph reloaded = loadNativeGraph(toNativeJson(g), "round trip");
    QVERIFY(reloaded.transformer && reloaded.transformer->hf_eager_attention);
}

void TestModelBuilders::megatronTorchSoftmax()
{
    // Megatron's forward_torch_softmax (--no-masked-softmax-fusion): masked_fill_ reads the 16-bit scores and the
    // [b, 1, s, s] boolean mask and writes the scores (2 + 2 per element, 1 per mask element), the 16-bit softmax
    // reads 2 and writes 2: 8 per element against the fused kernel's 4. It keeps what the fused one keeps.
    const std::int64_t b = 2;
    const std::int64_t s = 256;
    const std::int64_t a = 8;
    BuildOptions options;
    options.batch = b;
    options.seq_len = s;
    TransformerShape fused = gptShape(256, a, 0.0, false);
    TransformerShape torch = fused;
    torch.masked_softmax_fusion = false;
    const ModelGraph g = buildTransformerGraph(torch, options, "gpt");
    double streamed = 0;
    int ops = 0;
    for (const auto& op : g.ops())
        if (op.module == "transformer.h.0.attn.core"
            && (op.kind == OpKind::Elementwise || op.kind == OpKind::Softmax)) {
            streamed += op.bytes_read + op.bytes_written;
            ++ops;
        }
    QCOMPARE(ops, 2);
    const double scores = static_cast<double>(b * a * s * s);
    COMPARE_EXACT(streamed, 8 * scores + static_cast<double>(b * s * s));
    COMPARE_EXACT(blockActivationBytes(g, 0), blockActivationBytes(buildTransformerGraph(fused, options, "gpt"), 0));

    const ModelGraph reloaded = loadNativeGraph(toNativeJson(g), "round trip");
    QVERIFY(reloaded.transformer && !reloaded.transformer->masked_softmax_fusion);
}

void TestModelBuilders::flashActivations()
{
    // Fused attention keeps q, k, v, o and an f32 log-sum-exp [b, a, s] instead of the s x s tensors.
    // Llama block: norm inputs 2+2, q_proj input 2, q 2, k and v 2*g*d/h each, o 2, gate/up/act 2f/h each.
    const std::int64_t b = 2;
    const std::int64_t s = 1024;
    const ModelGraph g = buildPreset("llama3-8b", b, s);
    const double h = 4096;
    const double kv = 8 * 128;
    const double f = 14336;
    const double sb = static_cast<double>(s * b);
    const double expected = sb * (12 * h + 4 * kv + 6 * f) + 4.0 * static_cast<double>(b * 32 * s);
    COMPARE_EXACT(blockActivationBytes(g, 0), expected);

    // GPT-2 preset (dropout 0.1, flash): 34sbh minus the attention core's unfused terms plus flash's.
    BuildOptions options;
    options.batch = 1;
    options.seq_len = 256;
    const ModelGraph gpt = buildTransformerGraph(gptShape(256, 8, 0.1, true), options, "gpt");
    // No score tensors; o (the c_proj input) is shared with the core: 34 sbh and the lse.
    COMPARE_EXACT(blockActivationBytes(gpt, 0), 256.0 * 256 * 34 + 4.0 * 8 * 256);
}

void TestModelBuilders::graphIsWellFormed_data()
{
    QTest::addColumn<QString>("name");
    QTest::addColumn<bool>("flash");
    QTest::addColumn<double>("dropout");
    QTest::newRow("gpt2") << "gpt2" << true << 0.1;
    QTest::newRow("gpt2 eager") << "gpt2" << false << 0.1;
    QTest::newRow("llama3-8b") << "llama3-8b" << true << 0.0;
    QTest::newRow("llama3-8b eager dropout") << "llama3-8b" << false << 0.1;
    QTest::newRow("mixtral-8x7b") << "mixtral-8x7b" << true << 0.0;
    QTest::newRow("mixtral-8x7b dropout") << "mixtral-8x7b" << true << 0.05;
}

void TestModelBuilders::graphIsWellFormed()
{
    QFETCH(QString, name);
    QFETCH(bool, flash);
    QFETCH(double, dropout);
    TransformerShape t = parseHfConfig(preset(name.toStdString()), name.toStdString());
    t.flash_attention = flash;
    t.dropout = dropout;
    t.num_layers = 3;
    BuildOptions options;
    options.batch = 2;
    options.seq_len = 64;
    const ModelGraph g = buildTransformerGraph(t, options, name.toStdString());
    QCOMPARE(g.batch, 2);
    QCOMPARE(g.seq_len, 64);
    QCOMPARE(g.name, name.toStdString());
    QVERIFY(g.transformer.has_value());
    QCOMPARE(g.topologicalOrder().size(), g.ops().size());

    // Only the token ids and labels are unproduced activations; every activation is consumed or is the
    // loss or an op's saved internal; saved tensors are the op's own inputs or outputs.
    const auto producer = g.producers();
    std::set<std::string> inputs;
    for (std::size_t i = 0; i < g.tensors().size(); ++i)
        if (!g.tensors()[i].is_param && producer[i] < 0)
            inputs.insert(g.tensors()[i].name);
    QCOMPARE(inputs, (std::set<std::string> {"input_ids", "labels"}));
    int dropouts = 0;
    for (const auto& op : g.ops()) {
        for (const auto id : op.saved) {
            const bool own = std::count(op.inputs.begin(), op.inputs.end(), id)
                + std::count(op.outputs.begin(), op.outputs.end(), id);
            QVERIFY2(own, qPrintable(QString::fromStdString(op.name + " saves a tensor it does not touch")));
        }
        QVERIFY(op.flops_fwd >= 0 && op.bytes_read + op.bytes_written > 0);
        QVERIFY2(op.module == op.name || op.name.rfind(op.module + ".", 0) == 0,
                 qPrintable(QString::fromStdString(op.name + " is not under " + op.module)));
        dropouts += op.kind == OpKind::Dropout;
    }
    // Embedding + per block: after attention, after the MLP, and inside an unfused core.
    const int perBlock = dropout > 0 ? (flash ? 2 : 3) : 0;
    QCOMPARE(dropouts, dropout > 0 ? 1 + 3 * perBlock : 0);
}

void TestModelBuilders::llamaConventions()
{
    const ModelGraph g = buildPreset("llama3-8b", 1, 128);
    const std::string p = "model.layers.5.";
    const auto role = [&](const std::string& op) { return opNamed(g, op).tp_role; };
    QCOMPARE(role(p + "self_attn.q_proj"), TpRole::Column);
    QCOMPARE(role(p + "self_attn.k_proj"), TpRole::Column);
    QCOMPARE(role(p + "self_attn.v_proj"), TpRole::Column);
    QCOMPARE(role(p + "self_attn.o_proj"), TpRole::Row);
    QCOMPARE(role(p + "self_attn.rotary"), TpRole::Local);
    QCOMPARE(role(p + "self_attn.core"), TpRole::Heads);
    QCOMPARE(role(p + "mlp.gate_proj"), TpRole::Column);
    QCOMPARE(role(p + "mlp.up_proj"), TpRole::Column);
    QCOMPARE(role(p + "mlp.act"), TpRole::Local);
    QCOMPARE(role(p + "mlp.down_proj"), TpRole::Row);
    QCOMPARE(role(p + "input_layernorm"), TpRole::Replicated);
    QCOMPARE(role(p + "post_attention_layernorm"), TpRole::Replicated);
    QCOMPARE(role(p + "residual1"), TpRole::Replicated);
    QCOMPARE(role(p + "residual2"), TpRole::Replicated);
    QCOMPARE(role("model.embed_tokens"), TpRole::Vocab);
    QCOMPARE(role("model.norm"), TpRole::Replicated);
    QCOMPARE(role("lm_head"), TpRole::Vocab);
    QCOMPARE(role("loss"), TpRole::Vocab);
    QCOMPARE(opNamed(g, p + "self_attn.core").kind, OpKind::FlashAttention);

    const Op& k = opNamed(g, p + "self_attn.k_proj");
    QCOMPARE(g.tensor(k.params.at(0)).shape, (std::vector<std::int64_t> {4096, 1024}));
    QCOMPARE(g.tensor(k.outputs.at(0)).shape, (std::vector<std::int64_t> {1, 128, 1024}));
    QCOMPARE(k.params.size(), std::size_t {1}); // no bias in Llama

    const auto sharded = [&](const std::string& tensor) { return tensorNamed(g, tensor).tp_sharded; };
    QVERIFY(sharded(p + "self_attn.q_proj.weight"));
    QVERIFY(sharded(p + "self_attn.o_proj.weight"));
    QVERIFY(sharded(p + "mlp.down_proj.weight"));
    QVERIFY(sharded("model.embed_tokens.weight"));
    QVERIFY(sharded("lm_head.weight"));
    QVERIFY(!sharded(p + "input_layernorm.weight"));
    QVERIFY(sharded(p + "self_attn.q_proj.out"));
    QVERIFY(sharded(p + "self_attn.rotary.k"));
    QVERIFY(sharded(p + "self_attn.core.out"));
    QVERIFY(sharded(p + "self_attn.core.lse"));
    QVERIFY(sharded(p + "mlp.act.out"));
    QVERIFY(sharded("lm_head.out"));
    QVERIFY(!sharded(p + "input_layernorm.out"));
    QVERIFY(!sharded(p + "self_attn.o_proj.out"));
    QVERIFY(!sharded(p + "residual1.out"));
    QVERIFY(!sharded("model.embed_tokens.out"));

    // Flash core: fwd 4*b*s*s*a*d, backward twice that, saves q, k, v, o and the f32 lse.
    const Op& core = opNamed(g, p + "self_attn.core");
    QCOMPARE(core.flops_fwd, 4.0 * 128 * 128 * 32 * 128);
    QCOMPARE(core.flops_bwd_input, 2 * core.flops_fwd);
    QCOMPARE(core.flops_bwd_weight, 0.0);
    QCOMPARE(core.saved.size(), std::size_t {5});
    QCOMPARE(tensorNamed(g, p + "self_attn.core.lse").dtype, DType::F32);
    QVERIFY(opNamed(g, p + "self_attn.rotary").saved.empty());
    QVERIFY(opNamed(g, p + "residual1").saved.empty());
    QCOMPARE(opNamed(g, p + "mlp.act").saved.size(), std::size_t {2});

    // A linear: fwd = 2*tokens*in*out, both backward halves the same; bytes = input + weight, output.
    const Op& up = opNamed(g, p + "mlp.up_proj");
    QCOMPARE(up.flops_fwd, 2.0 * 128 * 4096 * 14336);
    QCOMPARE(up.flops_bwd_input, up.flops_fwd);
    QCOMPARE(up.flops_bwd_weight, up.flops_fwd);
    QCOMPARE(up.bytes_read, 2.0 * (128 * 4096 + 4096.0 * 14336));
    QCOMPARE(up.bytes_written, 2.0 * 128 * 14336);

    // The loss saves the logits; the embedding its ids; lm_head its input.
    QCOMPARE(g.tensor(opNamed(g, "loss").saved.at(0)).name, std::string("lm_head.out"));
    QCOMPARE(opNamed(g, "loss").flops_fwd, 4.0 * 128 * 128256);
    QCOMPARE(g.tensor(opNamed(g, "model.embed_tokens").saved.at(0)).name, std::string("input_ids"));
    QCOMPARE(g.tensor(opNamed(g, "lm_head").saved.at(0)).name, std::string("model.norm.out"));
    QCOMPARE(opNamed(g, "model.embed_tokens").flops_fwd, 0.0);
}

void TestModelBuilders::gpt2Conventions()
{
    const ModelGraph g = buildPreset("gpt2", 2, 128);
    const std::string p = "transformer.h.3.";
    QCOMPARE(opNamed(g, p + "attn.c_attn").tp_role, TpRole::Column);
    QCOMPARE(opNamed(g, p + "attn.split").kind, OpKind::Reshape);
    QCOMPARE(opNamed(g, p + "attn.split").tp_role, TpRole::Local);
    QCOMPARE(opNamed(g, p + "attn.c_proj").tp_role, TpRole::Row);
    QCOMPARE(opNamed(g, p + "mlp.c_fc").tp_role, TpRole::Column);
    QCOMPARE(opNamed(g, p + "mlp.c_proj").tp_role, TpRole::Row);
    QCOMPARE(opNamed(g, p + "ln_1").tp_role, TpRole::Replicated);
    QCOMPARE(opNamed(g, p + "attn.resid_dropout").tp_role, TpRole::Replicated);
    QCOMPARE(opNamed(g, "transformer.drop").kind, OpKind::Dropout);
    QCOMPARE(opNamed(g, "transformer.wte").tp_role, TpRole::Vocab);
    QCOMPARE(tensorNamed(g, p + "attn.c_attn.out").shape, (std::vector<std::int64_t> {2, 128, 3 * 768}));

    // Column biases are split with their outputs, row biases and LayerNorm parameters are not.
    QVERIFY(tensorNamed(g, p + "attn.c_attn.bias").tp_sharded);
    QVERIFY(tensorNamed(g, p + "mlp.c_fc.bias").tp_sharded);
    QVERIFY(!tensorNamed(g, p + "attn.c_proj.bias").tp_sharded);
    QVERIFY(!tensorNamed(g, p + "ln_2.bias").tp_sharded);
    QVERIFY(!tensorNamed(g, p + "attn.resid_dropout.mask").tp_sharded);
    QCOMPARE(tensorNamed(g, p + "attn.resid_dropout.mask").dtype, DType::U8);

    // Tied: lm_head reads the token embedding table itself and has no weight of its own.
    QCOMPARE(opNamed(g, "lm_head").params.at(0), *g.findTensor("transformer.wte.weight"));
    QVERIFY(!g.findTensor("lm_head.weight"));

    // A biased linear adds tokens*out FLOPs forward and to the weight gradient.
    const Op& fc = opNamed(g, p + "mlp.c_fc");
    const double tokens = 256;
    QCOMPARE(fc.flops_fwd, 2 * tokens * 768 * 3072 + tokens * 3072);
    QCOMPARE(fc.flops_bwd_input, 2 * tokens * 768 * 3072);
    QCOMPARE(fc.flops_bwd_weight, 2 * tokens * 768 * 3072 + tokens * 3072);
}

void TestModelBuilders::gptNeoxConventions()
{
    // EleutherAI/gpt-neox-20b: its model card's 20,556,201,984 parameters are GPT-NeoX's get_total_params, which sums
    // every model-parallel rank of the tp2 checkpoint and so counts twice what each rank keeps whole: two LayerNorms
    // (4h) and the two row-parallel biases (2h) per block, and the final LayerNorm (2h): 44 * 6h + 2h = 1,634,304.
    const ModelGraph g = buildPreset("gpt-neox-20b", 1, 128);
    const double h = 6144;
    QCOMPARE(g.paramCount(), 20'556'201'984.0 - (44 * 6 * h + 2 * h));
    QVERIFY(g.load_notes.size() == 1 && g.load_notes.front().find("use_parallel_residual") != std::string::npos);

    const TransformerShape t = *g.transformer;
    QCOMPARE(t.family, std::string("gpt_neox"));
    QCOMPARE(t.norm, std::string("layernorm"));
    QVERIFY(!t.gated_mlp && !t.tied_embeddings && !t.learned_positions && t.flash_attention);
    QCOMPARE(t.dropout, 0.0);
    QCOMPARE(t.rope_theta, 10000.0); // rotary_emb_base

    // One fused query_key_value GEMM, biases on all four linears, a GELU MLP of two matrices.
    const std::string p = "gpt_neox.layers.7.";
    QCOMPARE(opNamed(g, p + "attention.query_key_value").tp_role, TpRole::Column);
    QCOMPARE(tensorNamed(g, p + "attention.query_key_value.out").shape, (std::vector<std::int64_t> {1, 128, 3 * 6144}));
    for (const char* linear :
         {"attention.query_key_value", "attention.dense", "mlp.dense_h_to_4h", "mlp.dense_4h_to_h"})
        QVERIFY2(g.findTensor(p + linear + ".bias"), linear);
    QCOMPARE(tensorNamed(g, p + "mlp.dense_h_to_4h.weight").shape, (std::vector<std::int64_t> {6144, 24576}));
    QVERIFY(!g.findTensor(p + "mlp.gate_proj.weight"));
    QVERIFY(g.findTensor("lm_head.weight")); // untied

    // attention_bias false drops the attention's biases only (Pythia-style configs may set it).
    json config = preset("gpt-neox-20b");
    config["attention_bias"] = false;
    const ModelGraph unbiased = buildFromHfConfig(config, {}, "neox");
    QCOMPARE(unbiased.paramCount(), buildPreset("gpt-neox-20b").paramCount() - 44 * (3 * h + h));
}

void TestModelBuilders::bloomConventions()
{
    // bigscience/bloom: its model card's 176,247,271,424 parameters, exactly: 70 blocks of 12h^2 + 13h, the tied
    // 250,880 x h table, and two LayerNorms outside the blocks (after the embedding, and ln_f).
    const ModelGraph g = buildPreset("bloom-176b", 1, 128);
    QCOMPARE(g.paramCount(), 176'247'271'424.0);
    const TransformerShape& t = *g.transformer;
    QCOMPARE(t.family, std::string("bloom"));
    QVERIFY(t.embedding_norm && t.tied_embeddings && !t.learned_positions && !t.gated_mlp);
    QCOMPARE(t.ffn_hidden, 4 * 14336);
    QCOMPARE(t.max_positions, 2048); // ALiBi states no trained length: BLOOM's 2,048
    QCOMPARE(opNamed(g, "transformer.word_embeddings_layernorm").kind, OpKind::Norm);
    QVERIFY(g.findTensor("transformer.h.5.self_attention.query_key_value.bias"));
    QVERIFY(!g.findTensor("lm_head.weight")); // tied
    QVERIFY(g.load_notes.size() == 1 && g.load_notes.front().find("ALiBi") != std::string::npos);
    // The generic names BloomConfig's attribute_map also accepts.
    json config = preset("bloom-176b");
    config.erase("n_embed");
    config.erase("n_layer");
    config["hidden_size"] = 14336;
    config["num_hidden_layers"] = 70;
    QCOMPARE(buildFromHfConfig(config, {}, "bloom").paramCount(), 176'247'271'424.0);
}

void TestModelBuilders::embeddingNormSavesItsInput()
{
    // BLOOM's word_embeddings_layernorm (Megatron-DeepSpeed --embed-layernorm): one LayerNorm of 2h parameters after
    // the token embedding, which keeps its b x s x h input for the backward; it survives a native JSON round trip.
    TransformerShape t = parseHfConfig(preset("gpt2"), "gpt2");
    BuildOptions options;
    options.batch = 2;
    options.seq_len = 128;
    const ModelGraph plain = buildTransformerGraph(t, options, "plain");
    t.embedding_norm = true;
    const ModelGraph normed = buildTransformerGraph(t, options, "normed");
    QCOMPARE(normed.paramCount() - plain.paramCount(), 2.0 * 768);
    const Op& norm = opNamed(normed, "transformer.wte_layernorm");
    QCOMPARE(norm.kind, OpKind::Norm);
    QCOMPARE(norm.inputs.front(), *normed.findTensor("transformer.embed_add.out")); // after the position add
    bool savesInput = false;
    for (const TensorId id : norm.saved)
        savesInput = savesInput
            || (id == norm.inputs.front() && normed.tensor(id).shape == std::vector<std::int64_t> {2, 128, 768});
    QVERIFY(savesInput);
    const ModelGraph loaded = loadNativeGraph(nlohmann::json::parse(toNativeJson(normed).dump()), "normed.json");
    QVERIFY(loaded.transformer && loaded.transformer->embedding_norm);
    QCOMPARE(loaded.paramCount(), normed.paramCount());
}

void TestModelBuilders::mixtralConventions()
{
    const ModelGraph g = buildPreset("mixtral-8x7b", 1, 256);
    const std::string p = "model.layers.0.block_sparse_moe.";
    const Op& router = opNamed(g, p + "gate");
    QCOMPARE(router.kind, OpKind::MoeRouter);
    QCOMPARE(router.tp_role, TpRole::Replicated);
    QCOMPARE(g.tensor(router.params.at(0)).shape, (std::vector<std::int64_t> {4096, 8}));
    QCOMPARE(router.flops_fwd, 2.0 * 256 * 4096 * 8);

    const Op& experts = opNamed(g, p + "experts");
    QCOMPARE(experts.kind, OpKind::MoeExperts);
    QCOMPARE(experts.tp_role, TpRole::Experts);
    QCOMPARE(experts.num_experts, 8);
    QCOMPARE(experts.top_k, 2);
    QCOMPARE(experts.flops_fwd, 2.0 * 256 * 3 * 2 * 4096 * 14336);
    QCOMPARE(experts.params.size(), std::size_t {3});
    for (const auto id : experts.params)
        QVERIFY(g.tensor(id).tp_sharded);
    QCOMPARE(g.tensor(experts.params[0]).shape, (std::vector<std::int64_t> {8, 4096, 14336}));
    QCOMPARE(g.tensor(experts.params[2]).shape, (std::vector<std::int64_t> {8, 14336, 4096}));
    QCOMPARE(experts.inputs.size(), std::size_t {2});
    QCOMPARE(g.tensor(experts.outputs.at(0)).shape, (std::vector<std::int64_t> {1, 256, 4096}));
    // Saved: dispatched [k*b*s, h], gate and up [k*b*s, f], activation [k*b*s, f].
    double saved = 0;
    for (const auto id : experts.saved)
        saved += g.tensor(id).bytes();
    QCOMPARE(experts.saved.size(), std::size_t {4});
    QCOMPARE(saved, 2.0 * 2 * 256 * (4096 + 3 * 14336));
    QVERIFY(!g.findOp("model.layers.0.mlp.up_proj"));
}

void TestModelBuilders::configVariants()
{
    const json llama = preset("llama2-7b");
    const double base = buildFromHfConfig(llama, {}, "llama").paramCount();

    // No model_type: dispatch on architectures[0].
    json noType = llama;
    noType.erase("model_type");
    QCOMPARE(parseHfConfig(noType, "x").family, std::string("llama"));

    // num_key_value_heads null means MHA; head_dim may be given explicitly (and need not be h/a).
    json variant = llama;
    variant["num_key_value_heads"] = nullptr;
    QCOMPARE(parseHfConfig(variant, "x").num_kv_heads, 32);
    variant["head_dim"] = 96;
    variant["num_attention_heads"] = 48;
    QCOMPARE(parseHfConfig(variant, "x").head_dim, 96);

    // transformers v5 rope_parameters and the llama3 rope_scaling are accepted and change nothing.
    json rope = llama;
    rope.erase("rope_scaling");
    rope["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 10000.0}};
    QCOMPARE(buildFromHfConfig(rope, {}, "llama").paramCount(), base);

    // Eager attention materializes the scores.
    json eager = llama;
    eager["_attn_implementation"] = "eager";
    QVERIFY(!parseHfConfig(eager, "x").flash_attention);
    QVERIFY(parseHfConfig(llama, "x").flash_attention);

    // LlamaConfig defaults tie_word_embeddings to false; GPT2Config keeps PretrainedConfig's true.
    json untied = llama;
    untied.erase("tie_word_embeddings");
    QVERIFY(!parseHfConfig(untied, "x").tied_embeddings);
    json tied = llama;
    tied["tie_word_embeddings"] = true;
    QCOMPARE(buildFromHfConfig(tied, {}, "llama").paramCount(), base - 32000.0 * 4096);
    json gpt = preset("gpt2");
    gpt.erase("n_inner");
    QVERIFY(parseHfConfig(gpt, "x").tied_embeddings);
    QCOMPARE(parseHfConfig(gpt, "x").ffn_hidden, 3072);
    gpt["n_inner"] = 1000;
    QCOMPARE(parseHfConfig(gpt, "x").ffn_hidden, 1000);

    // GPT-2 dropout: the largest of the three rates, each 0.1 by default.
    gpt.erase("resid_pdrop");
    gpt.erase("attn_pdrop");
    gpt["embd_pdrop"] = 0.0;
    QCOMPARE(parseHfConfig(gpt, "x").dropout, 0.1);
    gpt["resid_pdrop"] = 0.0;
    gpt["attn_pdrop"] = 0.25;
    QCOMPARE(parseHfConfig(gpt, "x").dropout, 0.25);
    json dropping = llama;
    dropping["attention_dropout"] = 0.1;
    QCOMPARE(parseHfConfig(dropping, "x").dropout, 0.1);

    // attention_bias adds q, k, v and o biases; mlp_bias gate, up and down biases.
    json biased = llama;
    biased["attention_bias"] = true;
    QCOMPARE(buildFromHfConfig(biased, {}, "llama").paramCount(), base + 32.0 * 4 * 4096);
    biased["mlp_bias"] = true;
    QCOMPARE(buildFromHfConfig(biased, {}, "llama").paramCount(), base + 32.0 * (4 * 4096 + 2 * 11008 + 4096));

    // Qwen2 always has q/k/v biases: 3584 + 2 * 512 per layer.
    const ModelGraph qwen = buildPreset("qwen2-7b", 1, 64);
    QCOMPARE(opNamed(qwen, "model.layers.0.self_attn.k_proj").params.size(), std::size_t {2});
    QCOMPARE(opNamed(qwen, "model.layers.0.self_attn.o_proj").params.size(), std::size_t {1});

    // Mistral (sliding window) and a Mixtral found through architectures only.
    QCOMPARE(parseHfConfig(preset("mistral-7b"), "x").family, std::string("mistral"));
    json mixtral = preset("mixtral-8x7b");
    mixtral.erase("model_type");
    QCOMPARE(parseHfConfig(mixtral, "x").num_experts, 8);
}

void TestModelBuilders::sequenceLength()
{
    QCOMPARE(buildPreset("llama3-405b").seq_len, 4096); // min(131072, 4096)
    QCOMPARE(buildPreset("gpt2").seq_len, 1024); // min(1024, 4096)
    // Rotary positions extrapolate: longer than max_position_embeddings is allowed.
    QCOMPARE(buildPreset("llama2-7b", 1, 8192).seq_len, 8192);
    const ModelGraph g = buildPreset("llama2-7b", 3, 100);
    QCOMPARE(g.batch, 3);
    QCOMPARE(g.tokens(), 300.0);
    QCOMPARE(tensorNamed(g, "input_ids").shape, (std::vector<std::int64_t> {3, 100}));
    QCOMPARE(tensorNamed(g, "input_ids").dtype, DType::I64);
    QCOMPARE(tensorNamed(g, "labels").dtype, DType::I64);
    BuildOptions fp32;
    fp32.dtype = DType::F32;
    fp32.seq_len = 16;
    const ModelGraph f = buildFromHfConfig(preset("gpt2"), fp32, "gpt2");
    QCOMPARE(tensorNamed(f, "transformer.wte.weight").dtype, DType::F32);
    QCOMPARE(tensorNamed(f, "transformer.h.0.ln_1.out").dtype, DType::F32);
    QCOMPARE(f.dtype, DType::F32);
}

void TestModelBuilders::configErrors_data()
{
    QTest::addColumn<QString>("base");
    QTest::addColumn<QByteArray>("patch"); // JSON merge patch; null removes a field
    QTest::addColumn<QString>("expected"); // in the message

    QTest::newRow("missing hidden_size") << "llama2-7b" << QByteArray(R"({"hidden_size": null})") << "hidden_size";
    QTest::newRow("missing vocab_size") << "mistral-7b" << QByteArray(R"({"vocab_size": null})") << "vocab_size";
    QTest::newRow("missing n_embd") << "gpt2" << QByteArray(R"({"n_embd": null})") << "n_embd";
    QTest::newRow("missing experts") << "mixtral-8x7b" << QByteArray(R"({"num_local_experts": null})")
                                     << "num_local_experts";
    QTest::newRow("string int") << "llama2-7b" << QByteArray(R"({"hidden_size": "4096"})") << "hidden_size";
    QTest::newRow("float int") << "llama2-7b" << QByteArray(R"({"num_hidden_layers": 32.5})") << "num_hidden_layers";
    QTest::newRow("integral float") << "llama2-7b" << QByteArray(R"({"num_hidden_layers": 32.0})")
                                    << "must be an integer";
    QTest::newRow("bool int") << "llama2-7b" << QByteArray(R"({"num_hidden_layers": true})") << "num_hidden_layers";
    QTest::newRow("zero") << "llama2-7b" << QByteArray(R"({"intermediate_size": 0})") << "intermediate_size";
    QTest::newRow("negative") << "gpt2" << QByteArray(R"({"n_head": -12})") << "n_head";
    QTest::newRow("huge hidden") << "llama2-7b" << QByteArray(R"({"hidden_size": 2000000})") << "hidden_size";
    QTest::newRow("huge layers") << "llama2-7b" << QByteArray(R"({"num_hidden_layers": 100001})")
                                 << "num_hidden_layers";
    QTest::newRow("huge vocab") << "llama2-7b" << QByteArray(R"({"vocab_size": 100000001})") << "vocab_size";
    // issue 8's absurd sizes: refused from the number, before anything is allocated for them.
    QTest::newRow("hidden 1e12") << "llama2-7b" << QByteArray(R"({"hidden_size": 1000000000000})")
                                 << "'hidden_size' = 1000000000000 is out of range";
    QTest::newRow("1e7 layers") << "llama2-7b" << QByteArray(R"({"num_hidden_layers": 10000000})")
                                << "'num_hidden_layers' = 10000000 is out of range (at most 10000)";
    QTest::newRow("layers past the build limit") << "gpt2" << QByteArray(R"({"n_layer": 10001})") << "n_layer";
    QTest::newRow("zero positions") << "llama2-7b" << QByteArray(R"({"max_position_embeddings": 0})")
                                    << "max_position_embeddings";
    QTest::newRow("float hidden") << "llama2-7b" << QByteArray(R"({"hidden_size": 1e12})") << "must be an integer";
    QTest::newRow("uint64 overflow") << "llama2-7b" << QByteArray(R"({"vocab_size": 18446744073709551615})")
                                     << "vocab_size";
    QTest::newRow("heads do not divide hidden")
        << "llama2-7b" << QByteArray(R"({"num_attention_heads": 30})") << "num_attention_heads";
    QTest::newRow("kv heads do not divide heads")
        << "llama3-8b" << QByteArray(R"({"num_key_value_heads": 5})") << "num_key_value_heads";
    QTest::newRow("gpt2 heads") << "gpt2" << QByteArray(R"({"n_head": 7})") << "n_head";
    QTest::newRow("top_k > experts") << "mixtral-8x7b" << QByteArray(R"({"num_experts_per_tok": 9})")
                                     << "num_experts_per_tok";
    QTest::newRow("too many experts") << "mixtral-8x7b" << QByteArray(R"({"num_local_experts": 5000})")
                                      << "num_local_experts";
    QTest::newRow("bad tie") << "llama2-7b" << QByteArray(R"({"tie_word_embeddings": "no"})") << "tie_word_embeddings";
    QTest::newRow("bad dropout") << "gpt2" << QByteArray(R"({"attn_pdrop": 1.5})") << "attn_pdrop";
    QTest::newRow("bad rope_scaling") << "llama2-7b" << QByteArray(R"({"rope_scaling": 8})") << "rope_scaling";
    QTest::newRow("bad n_inner") << "gpt2" << QByteArray(R"({"n_inner": 0})") << "n_inner";
    QTest::newRow("unsupported model_type")
        << "llama2-7b" << QByteArray(R"({"model_type": "bert", "architectures": ["BertForMaskedLM"]})") << "qwen2";
    QTest::newRow("unknown type without decoder fields")
        << "llama2-7b" << QByteArray(R"({"model_type": "mamba", "intermediate_size": null})") << "intermediate_size";
    QTest::newRow("mla without rope dim")
        << "deepseek-v3" << QByteArray(R"({"qk_rope_head_dim": null})") << "qk_rope_head_dim";
    QTest::newRow("deepseek top_k > experts")
        << "deepseek-v3" << QByteArray(R"({"num_experts_per_tok": 300})") << "num_experts_per_tok";
    QTest::newRow("text_config not an object") << "gemma3-27b" << QByteArray(R"({"text_config": 3})") << "text_config";
    QTest::newRow("model_type not a string") << "llama2-7b" << QByteArray(R"({"model_type": 7})") << "model_type";
    QTest::newRow("unsupported architecture")
        << "llama2-7b" << QByteArray(R"({"model_type": null, "architectures": ["BertModel"]})") << "BertModel";
    QTest::newRow("no type at all") << "llama2-7b" << QByteArray(R"({"model_type": null, "architectures": null})")
                                    << "architectures";
}

void TestModelBuilders::configErrors()
{
    QFETCH(QString, base);
    QFETCH(QByteArray, patch);
    QFETCH(QString, expected);
    json config = preset(base.toStdString());
    config.merge_patch(json::parse(patch.toStdString()));
    const std::string message = errorOf([&] { parseHfConfig(config, "my/config.json"); });
    QVERIFY2(message.find(expected.toStdString()) != std::string::npos, message.c_str());
    QVERIFY2(message.find("my/config.json") != std::string::npos, message.c_str()); // names the origin
    // buildFromHfConfig refuses it too.
    QVERIFY(errorOf([&] { buildFromHfConfig(config, {}, "m"); }) != "(no error)");
}

void TestModelBuilders::builderErrors()
{
    QVERIFY(errorOf([] { parseHfConfig(json::array({1, 2}), "a.json"); }).find("a.json") != std::string::npos);
    QVERIFY(errorOf([] { parseHfConfig(json("llama"), "a.json"); }) != "(no error)");

    // GPT-2's learned positions stop at n_positions.
    const std::string tooLong = errorOf([] { buildPreset("gpt2", 1, 1025); });
    QVERIFY2(tooLong.find("1024") != std::string::npos, tooLong.c_str());
    QVERIFY(errorOf([] { buildPreset("gpt2", 1, 1024); }) == "(no error)");
    QVERIFY(errorOf([] { buildPreset("llama2-7b", 0, 128); }) != "(no error)");
    QVERIFY(errorOf([] { buildPreset("llama2-7b", 1, -5); }) != "(no error)");
    QVERIFY(errorOf([] { buildPreset("llama2-7b", 100'000, 100'000); }) != "(no error)"); // 1e10 tokens

    // Shapes handed to buildTransformerGraph directly are checked too.
    const auto refused = [](const std::function<void(TransformerShape&)>& edit) {
        TransformerShape t = gptShape(256, 8, 0.0, true);
        edit(t);
        BuildOptions options;
        options.seq_len = 64;
        return errorOf([&] { buildTransformerGraph(t, options, "t"); }) != "(no error)";
    };
    QVERIFY(!refused([](TransformerShape&) {}));
    QVERIFY(refused([](TransformerShape& t) { t.num_kv_heads = 3; }));
    QVERIFY(refused([](TransformerShape& t) { t.hidden = 0; }));
    QVERIFY(refused([](TransformerShape& t) { t.head_dim = -1; }));
    QVERIFY(refused([](TransformerShape& t) { t.num_experts = 4, t.top_k = 5; }));
    QVERIFY(refused([](TransformerShape& t) { t.num_experts = 4, t.top_k = 0; }));
    QVERIFY(refused([](TransformerShape& t) { t.dropout = 1.0; }));
    QVERIFY(refused([](TransformerShape& t) { t.norm = "batchnorm"; }));
    // Unfused scores [b, a, s, s] at s = 1e7 would be 6.4e15 elements: refused rather than overflowing int64.
    TransformerShape wide = gptShape(256, 64, 0.0, false);
    wide.max_positions = 100'000'000;
    BuildOptions huge;
    huge.seq_len = 10'000'000;
    QVERIFY(errorOf([&] { buildTransformerGraph(wide, huge, "t"); }).find("elements") != std::string::npos);
}

void TestModelBuilders::buildSpeed()
{
    const json config = preset("llama3-405b");
    BuildOptions options;
    options.batch = 1;
    options.seq_len = 4096;
    QElapsedTimer timer;
    timer.start();
    const ModelGraph g = buildFromHfConfig(config, options, "llama3-405b");
    const qint64 buildNs = timer.nsecsElapsed();
    timer.restart();
    const auto layers = layersByModule(g);
    const qint64 layersNs = timer.nsecsElapsed();
    qDebug("llama3-405b b=1 s=4096: %zu ops, %zu tensors; graph built in %.2f ms, layersByModule %.2f ms",
           g.ops().size(), g.tensors().size(), static_cast<double>(buildNs) / 1e6, static_cast<double>(layersNs) / 1e6);
    QCOMPARE(layers.size(), std::size_t {128});
    // Well under 100 ms on a quiet machine; the bound leaves room for a loaded CI box or a sanitizer build.
    QVERIFY2(buildNs < 1'000'000'000, "building the 405B graph took over a second");
}

QTEST_APPLESS_MAIN(TestModelBuilders)
#include "tst_model_builders.moc"
