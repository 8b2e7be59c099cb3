// SPDX-License-Identifier: MIT
#include "shardscape/model/layers.h"
#include "shardscape/model/model_source.h"
#include "shardscape/model/model_summary.h"
#include "shardscape/model/native_json.h"
#include "shardscape/support/error.h"
#include "shardscape/support/json_file.h"

#include <QElapsedTimer>
#include <QTemporaryDir>
#include <QTest>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

using namespace shardscape;

namespace {

std::string errorOf(const std::function<void()>& f)
{
    try {
        f();
    } catch (const InputError& e) {
        return e.what();
    }
    return "(no error)";
}

/** embed -> 3 blocks of one linear each -> head reusing the embedding table (tied), all [1, 4, 8] bf16. */
ModelGraph tinyTiedModel()
{
    ModelGraph g;
    g.name = "tiny";
    g.batch = 1;
    g.seq_len = 4;
    const auto ids = g.addTensor({"ids", {1, 4}, DType::I64, false, false});
    const auto table = g.addTensor({"embed.weight", {10, 8}, DType::BF16, true, true});
    auto x = g.addTensor({"x0", {1, 4, 8}, DType::BF16, false, false});
    Op embed;
    embed.name = "embed";
    embed.module = "net.embed";
    embed.kind = OpKind::Embedding;
    embed.inputs = {ids};
    embed.outputs = {x};
    embed.params = {table};
    embed.saved = {ids};
    g.addOp(embed);
    for (int i = 0; i < 3; ++i) {
        const auto w = g.addTensor({"w" + std::to_string(i), {8, 8}, DType::BF16, true, false});
        const auto y = g.addTensor({"x" + std::to_string(i + 1), {1, 4, 8}, DType::BF16, false, false});
        Op fc;
        fc.name = "fc" + std::to_string(i);
        fc.module = "net.blocks." + std::to_string(i) + ".fc";
        fc.kind = OpKind::Linear;
        fc.inputs = {x};
        fc.outputs = {y};
        fc.params = {w};
        fc.saved = {x};
        fc.flops_fwd = 2.0 * 4 * 8 * 8;
        fc.flops_bwd_input = fc.flops_fwd;
        fc.flops_bwd_weight = fc.flops_fwd;
        g.addOp(fc);
        x = y;
    }
    const auto logits = g.addTensor({"logits", {1, 4, 10}, DType::BF16, false, true});
    Op head;
    head.name = "head";
    head.module = "net.head";
    head.kind = OpKind::Linear;
    head.tp_role = TpRole::Vocab;
    head.inputs = {x};
    head.outputs = {logits};
    head.params = {table};
    head.saved = {x};
    head.flops_fwd = 2.0 * 4 * 8 * 10;
    g.addOp(head);
    return g;
}

nlohmann::json tinyDoc()
{
    return toNativeJson(tinyTiedModel());
}

} // namespace

class TestModel : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void tiedParametersCountOnce()
    {
        const ModelGraph g = tinyTiedModel();
        QCOMPARE(g.paramCount(), 10.0 * 8 + 3 * 64);
        QCOMPARE(g.activeParamCount(), g.paramCount());
        QCOMPARE(g.forwardFlops(), 3 * 2.0 * 4 * 64 + 2.0 * 4 * 80);
    }

    void layersFollowModulePaths()
    {
        const ModelGraph g = tinyTiedModel();
        const auto layers = layersByModule(g);
        QCOMPARE(layers.size(), std::size_t {5});
        QCOMPARE(layers[0].name, std::string("net.embed"));
        QCOMPARE(layers[0].kind, LayerKind::Embedding);
        QCOMPARE(layers[1].name, std::string("net.blocks.0"));
        QCOMPARE(layers[3].name, std::string("net.blocks.2"));
        QCOMPARE(layers[4].kind, LayerKind::Head);
        QCOMPARE(layers[0].params, 80.0);
        QCOMPARE(layers[4].params, 0.0); // the tied table was counted by the embedding layer
        QCOMPARE(layers[1].activation_bytes, 4.0 * 8 * 2);
        QCOMPARE(layers[0].activation_bytes, 4.0 * 8); // int64 token ids
        QCOMPARE(layers[2].input_bytes, 4.0 * 8 * 2);
        QCOMPARE(layers[0].input_bytes, 0.0);
    }

    void blocksSortNumerically()
    {
        ModelGraph g;
        g.name = "order";
        g.seq_len = 1;
        auto x = g.addTensor({"x", {1}, DType::BF16, false, false});
        for (int i = 0; i < 12; ++i) {
            const auto y = g.addTensor({"y" + std::to_string(i), {1}, DType::BF16, false, false});
            Op op;
            op.name = "op" + std::to_string(i);
            op.module = "h." + std::to_string(i);
            op.kind = OpKind::Elementwise;
            op.inputs = {x};
            op.outputs = {y};
            g.addOp(op);
            x = y;
        }
        const auto layers = layersByModule(g);
        QCOMPARE(layers.size(), std::size_t {12});
        QCOMPARE(layers[2].name, std::string("h.2"));
        QCOMPARE(layers[11].name, std::string("h.11"));
    }

    void topologicalOrderRespectsDataFlow()
    {
        const ModelGraph g = tinyTiedModel();
        const auto order = g.topologicalOrder();
        QCOMPARE(order.size(), g.ops().size());
        std::vector<int> position(order.size());
        for (std::size_t i = 0; i < order.size(); ++i)
            position[static_cast<std::size_t>(order[i])] = static_cast<int>(i);
        const auto producer = g.producers();
        for (std::size_t i = 0; i < g.ops().size(); ++i)
            for (const auto in : g.ops()[i].inputs)
                if (producer[static_cast<std::size_t>(in)] >= 0)
                    QVERIFY(position[static_cast<std::size_t>(producer[static_cast<std::size_t>(in)])] < position[i]);
    }

    void cycleIsReportedWithItsOps()
    {
        ModelGraph g;
        g.name = "cyclic";
        const auto a = g.addTensor({"a", {2}, DType::BF16, false, false});
        const auto b = g.addTensor({"b", {2}, DType::BF16, false, false});
        Op first;
        first.name = "first";
        first.inputs = {b};
        first.outputs = {a};
        Op second;
        second.name = "second";
        second.inputs = {a};
        second.outputs = {b};
        g.addOp(first);
        g.addOp(second);
        const std::string message = errorOf([&] { g.topologicalOrder(); });
        QVERIFY2(message.find("cycle") != std::string::npos, message.c_str());
        QVERIFY2(message.find("first") != std::string::npos && message.find("second") != std::string::npos,
                 message.c_str());
    }

    void nativeJsonRoundTripIsLossless()
    {
        const nlohmann::json doc = tinyDoc();
        const ModelGraph loaded = loadNativeGraph(doc, "tiny.json");
        QVERIFY(toNativeJson(loaded) == doc);
        QTemporaryDir dir;
        const std::string path = dir.filePath("tiny.json").toStdString();
        saveNativeGraph(loaded, path);
        QVERIFY(toNativeJson(loadModel(path, {})) == doc);
    }

    void presetRoundTripsThroughNativeJson_data()
    {
        QTest::addColumn<QString>("preset");
        // DeepSeek-V3 and Gemma 3 carry the MoE layout, MLA and window fields (written only when set).
        for (const char* name : {"llama2-7b", "deepseek-v3", "gemma3-27b"})
            QTest::newRow(name) << QString(name);
    }
    void presetRoundTripsThroughNativeJson()
    {
        QFETCH(QString, preset);
        BuildOptions options;
        options.seq_len = 512;
        const ModelGraph graph = loadModel(preset.toStdString(), options);
        const nlohmann::json doc = toNativeJson(graph);
        const ModelGraph loaded = loadNativeGraph(nlohmann::json::parse(doc.dump()), "llama2-7b.json");
        QVERIFY(toNativeJson(loaded) == doc);
        QCOMPARE(loaded.paramCount(), graph.paramCount());
        QCOMPARE(loaded.forwardFlops(), graph.forwardFlops());
        QVERIFY(loaded.transformer.has_value());
        const TransformerShape& a = *graph.transformer;
        const TransformerShape& b = *loaded.transformer;
        QCOMPARE(b.kv_lora_rank, a.kv_lora_rank);
        QCOMPARE(b.first_dense_layers, a.first_dense_layers);
        QCOMPARE(b.shared_expert_ffn, a.shared_expert_ffn);
        QCOMPARE(b.attention_window, a.attention_window);
        QCOMPARE(b.global_layer_every, a.global_layer_every);
        QCOMPARE(b.sandwich_norms, a.sandwich_norms);
        QCOMPARE(b.qk_norm, a.qk_norm);
    }

    void badNativeGraphs_data()
    {
        QTest::addColumn<QString>("edit");
        QTest::addColumn<QString>("expected");
        QTest::newRow("wrong schema") << R"({"schema": "other/9"})"
                                      << "unsupported schema";
        QTest::newRow("missing ops") << R"({"ops": null})"
                                     << "ops: required field is missing";
        QTest::newRow("unknown key") << R"({"opz": 1})"
                                     << "unknown key";
        QTest::newRow("zero batch") << R"({"batch": 0})"
                                    << "batch: value 0 is out of range";
        QTest::newRow("string seq") << R"({"seq_len": "long"})"
                                    << "seq_len: expected an integer";
        QTest::newRow("negative dim") << R"({"tensors/0/shape/0": -3})"
                                      << "dimension 0 must be";
        QTest::newRow("bad dtype") << R"({"tensors/0/dtype": "float13"})"
                                   << "unknown dtype";
        QTest::newRow("dup tensor") << R"({"tensors/1/name": "ids"})"
                                    << "duplicate tensor name 'ids'";
        QTest::newRow("dup op") << R"({"ops/1/name": "embed"})"
                                << "duplicate op name 'embed'";
        QTest::newRow("dangling") << R"({"ops/1/inputs/0": "nowhere"})"
                                  << "undefined tensor 'nowhere'";
        QTest::newRow("bad kind") << R"({"ops/0/kind": "teleport"})"
                                  << "unknown op kind";
        QTest::newRow("nan flops") << R"({"ops/1/flops_fwd": -1})"
                                   << "flops_fwd: value -1 is out of range";
        QTest::newRow("cycle") << R"({"ops/1/inputs/0": "x3"})"
                               << "cycle";
        QTest::newRow("two producers") << R"({"ops/2/outputs/0": "x1"})"
                                       << "produced by two ops";
        QTest::newRow("not object") << R"({"": [1, 2]})"
                                    << "expected a JSON object";
        // issue 8's hostile values
        QTest::newRow("zero seq") << R"({"seq_len": 0})"
                                  << "seq_len: value 0 is out of range";
        QTest::newRow("zero dim") << R"({"tensors/0/shape/0": 0})"
                                  << "dimension 0 must be an integer in [1, 2^40]";
        QTest::newRow("float dim") << R"({"tensors/0/shape/1": 4.5})"
                                   << "dimension 1 must be an integer";
        QTest::newRow("dim 2^62") << R"({"tensors/0/shape/0": 4611686018427387904})"
                                  << "dimension 0 must be an integer in [1, 2^40]";
        QTest::newRow("elements overflow int64") << R"({"tensors/1/shape": [1099511627776, 1099511627776]})"
                                                 << "elements, over the limit of 1e+15";
        QTest::newRow("flops 1e300") << R"({"ops/1/flops_fwd": 1e300})"
                                     << "flops_fwd: value 1e+300 is out of range";
        QTest::newRow("name not a string") << R"({"tensors/0/name": 7})"
                                           << "name: expected a string";
    }
    void badNativeGraphs()
    {
        QFETCH(QString, edit);
        QFETCH(QString, expected);
        nlohmann::json doc = tinyDoc();
        const nlohmann::json edits = nlohmann::json::parse(edit.toStdString());
        for (const auto& [pointer, value] : edits.items()) {
            if (pointer.empty())
                doc = value;
            else if (value.is_null())
                doc.erase(pointer);
            else
                doc[nlohmann::json::json_pointer("/" + pointer)] = value;
        }
        const std::string message = errorOf([&] { loadNativeGraph(doc, "bad.json"); });
        QVERIFY2(message.find(expected.toStdString()) != std::string::npos, message.c_str());
    }

    /** JSON text is UTF-8, but a document built in code need not be: names that are not UTF-8 could not be written
        back (plan files, traces), so the graph refuses them and says which. */
    void nonUtf8NamesAreRefused()
    {
        nlohmann::json doc = tinyDoc();
        doc["ops"][1]["name"] = "fc\xff";
        std::string message = errorOf([&] { loadNativeGraph(doc, "bad.json"); });
        QVERIFY2(message.find("op 'fc\\xFF' has a name that is not valid UTF-8") != std::string::npos, message.c_str());
        doc = tinyDoc();
        doc["ops"][1]["module"] = "net.\xc3(";
        message = errorOf([&] { loadNativeGraph(doc, "bad.json"); });
        QVERIFY2(message.find("not valid UTF-8: 'net.\\xC3('") != std::string::npos, message.c_str());
        ModelGraph graph;
        QVERIFY(errorOf([&] {
                    graph.addTensor({"t\xe2\x82", {1}, DType::BF16, false, false});
                }).find("UTF-8")
                != std::string::npos);
        QCOMPARE(errorOf([&] {
                     graph.addTensor({"t\xe2\x82\xac", {1}, DType::BF16, false, false});
                 }),
                 std::string("(no error)")); // the euro sign is fine
    }

    /** A config.json whose file name is not UTF-8 still loads: the label is escaped, so it can be written as JSON. */
    void nonUtf8FileNameIsEscaped()
    {
        QTemporaryDir dir;
        const std::string path = dir.path().toStdString() + "/m\xff.json";
        {
            std::ofstream out(path);
            out << R"({"model_type": "llama", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
                       "num_attention_heads": 4, "vocab_size": 100, "max_position_embeddings": 64})";
        }
        const ModelGraph graph = loadModel(path, {1, 16, DType::BF16});
        QCOMPARE(graph.name, std::string("m\\xFF"));
        QVERIFY(!toNativeJson(graph).dump().empty());
    }

    /** issue 8's hostile files, each a clean InputError naming the cause. */
    void loadModelRejectsHostileFiles_data()
    {
        QTest::addColumn<QByteArray>("bytes");
        QTest::addColumn<QString>("expected");
        QTest::newRow("empty") << QByteArray() << "file is empty";
        QTest::newRow("whitespace") << QByteArray(" \n\t") << "file is empty";
        QTest::newRow("truncated") << QByteArray(R"({"model_type": "llama", "hidden_size": 4)") << "malformed JSON";
        QTest::newRow("NaN") << QByteArray(R"({"model_type": "llama", "hidden_size": NaN})") << "invalid literal";
        QTest::newRow("1e999") << QByteArray(R"({"model_type": "llama", "hidden_size": 1e999})") << "number overflow";
        QTest::newRow("not UTF-8") << QByteArray("{\"model_type\": \"ll\xff\"}") << "ill-formed UTF-8 byte";
        QTest::newRow("binary") << QByteArray("\x00\x01\x02\x89PNG", 8) << "malformed JSON";
        QTest::newRow("array") << QByteArray("[1, 2]") << "expected a JSON object";
        QTest::newRow("deeply nested") << QByteArray(100000, '[') + QByteArray(100000, ']')
                                       << "config.json:1:101: JSON nested more than 100 levels deep";
    }
    void loadModelRejectsHostileFiles()
    {
        QFETCH(QByteArray, bytes);
        QFETCH(QString, expected);
        QTemporaryDir dir;
        const std::string path = dir.filePath("config.json").toStdString();
        {
            std::ofstream out(path, std::ios::binary);
            out.write(bytes.constData(), bytes.size());
        }
        const std::string message = errorOf([&] { loadModel(path, {}); });
        QVERIFY2(message.find(expected.toStdString()) != std::string::npos, message.c_str());
        QVERIFY2(message.find("config.json") != std::string::npos, message.c_str());
        for (const char ch : message) // echoed input is escaped: no raw control or invalid bytes reach the terminal
            QVERIFY2(static_cast<unsigned char>(ch) >= 0x20 && static_cast<unsigned char>(ch) < 0x7f, message.c_str());
    }

    /** A several-GB file (sparse) is refused from its size, at once, without reading or allocating it. */
    void loadModelRefusesHugeFileBeforeReading()
    {
        QTemporaryDir dir;
        const std::string path = dir.filePath("huge.json").toStdString();
        {
            std::ofstream create(path);
        }
        std::error_code ec;
        std::filesystem::resize_file(path, std::uintmax_t {3} << 30, ec);
        if (ec)
            QSKIP("cannot create a sparse 3 GB file here");
        QElapsedTimer timer;
        timer.start();
        const std::string message = errorOf([&] { loadModel(path, {}); });
        QVERIFY2(message.find("over the 536.87 MB limit") != std::string::npos, message.c_str());
        QVERIFY(timer.elapsed() < 1000);
    }

    void loadModelRejectsUnknownInputs()
    {
        const std::string preset = errorOf([] { loadModel("llama2-7", {}); });
        QVERIFY2(preset.find("unknown model preset") != std::string::npos
                     && preset.find("llama2-7b") != std::string::npos,
                 preset.c_str());
        QVERIFY(errorOf([] { loadModel("/nonexistent/config.json", {}); }).find("no such file") != std::string::npos);
        QVERIFY(errorOf([] { loadModel("", {}); }).find("no model") != std::string::npos);
        QTemporaryDir dir;
        const std::string path = dir.filePath("config.json").toStdString();
        QFile file(QString::fromStdString(path));
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write("{\"model_type\": \"llama\", \"hidden_size\": 64,");
        file.close();
        const std::string truncated = errorOf([&] { loadModel(path, {}); });
        QVERIFY2(truncated.find("malformed JSON") != std::string::npos, truncated.c_str());
    }

    void summaryMatchesGraph()
    {
        BuildOptions options;
        options.seq_len = 1024;
        const ModelGraph graph = loadModel("gpt2", options);
        const ModelSummary s = summarizeModel(graph);
        QCOMPARE(s.params, graph.paramCount());
        QCOMPARE(s.layers.size(), std::size_t {14}); // embedding, 12 blocks, head
        double flops = 0;
        for (const auto& layer : s.layers)
            flops += layer.flops_fwd;
        QCOMPARE(flops / graph.tokens(), s.flops_per_token_fwd);
        const nlohmann::json doc = toJson(s, graph);
        QCOMPARE(doc["layers"].size(), std::size_t {14});
        QCOMPARE(doc["params"].get<double>(), s.params);
    }
};

QTEST_APPLESS_MAIN(TestModel)
#include "tst_model.moc"
