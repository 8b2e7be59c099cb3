// SPDX-License-Identifier: MIT
// Every input the fuzzers (tests/fuzz) found a bug with, kept under tests/data/fuzz-regressions/<target>/, goes
// through the same loader call as the fuzz target: it must be rejected with an InputError that names the cause, or,
// for a file named "ok-*" (a valid input that used to crash or hang), load. A crash, a sanitizer report under the
// dev-asan preset, or any other exception fails the test.
#include "../fuzz/fuzz_loaders.h"
#include "shardscape/model/model_source.h"
#include "shardscape/plan/config_import.h"
#include "shardscape/support/error.h"
#include "test_helpers.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QTest>

using namespace shardscape;

namespace {

/** What a loader makes of `bytes` (its InputError's message, or "(no error)") and how long it took, ms. */
std::pair<std::string, qint64> loadTimed(const fuzz::Loader& loader, const QByteArray& bytes)
{
    QElapsedTimer timer;
    timer.start();
    std::string message = test::inputErrorOf([&] {
        loader.load({bytes.constData(), static_cast<std::size_t>(bytes.size())});
    });
    return {std::move(message), timer.elapsed()};
}

} // namespace

class TestFuzzRegressions : public QObject
{
    Q_OBJECT

private slots:
    void everyTargetHasALoader()
    {
        // A folder whose name matches no loader would be silently skipped by the data-driven test below.
        const QDir root(SHARDSCAPE_SOURCE_DIR "/tests/data/fuzz-regressions");
        QVERIFY(root.exists());
        for (const QString& target : root.entryList(QDir::Dirs | QDir::NoDotAndDotDot)) {
            const QByteArray name = target.toUtf8();
            const bool onnxWithoutOnnx = target == "onnx" && !fuzz::findLoader("onnx");
            QVERIFY2(fuzz::findLoader(name.toStdString()) || onnxWithoutOnnx, name.constData());
        }
    }

    void replay_data()
    {
        QTest::addColumn<QString>("target");
        QTest::addColumn<QString>("path");
        const QDir root(SHARDSCAPE_SOURCE_DIR "/tests/data/fuzz-regressions");
        int count = 0;
        for (const auto& loader : fuzz::loaders()) {
            const QString target
                = QString::fromUtf8(loader.target.data(), static_cast<qsizetype>(loader.target.size()));
            const QDir dir(root.filePath(target));
            for (const QString& file : dir.entryList(QDir::Files, QDir::Name)) {
                const QString row = target + "/" + file;
                QTest::newRow(row.toUtf8().constData()) << target << dir.filePath(file);
                ++count;
            }
        }
        if (count == 0)
            QSKIP("no regression inputs");
    }

    void replay()
    {
        QFETCH(QString, target);
        QFETCH(QString, path);
        QFile file(path);
        QVERIFY(file.open(QIODevice::ReadOnly));
        const QByteArray bytes = file.readAll();
        const auto* loader = fuzz::findLoader(target.toStdString());
        QVERIFY(loader);
        const auto [message, ms] = loadTimed(*loader, bytes);
        // The fuzzers' -timeout is 10 s; a regression input is one that once hung or crashed, so it must be quick.
        QVERIFY2(ms < 5000, qPrintable(QString("took %1 ms").arg(ms)));
        if (QFileInfo(path).fileName().startsWith("ok-")) {
            QCOMPARE(message, std::string("(no error)"));
        } else {
            QVERIFY2(message != "(no error)", "expected an InputError");
            QVERIFY2(message.size() > 10, message.c_str());
        }
    }

    /** Every model the loaders accept from the seeds (the presets' HF configs and the ONNX test exports) plans and
        simulates end to end: the fuzzers plan only small mutations (kMaxOpsToPlan), so real sizes are checked here. */
    void everySeedModelPlansAndSimulates()
    {
        QStringList files;
        for (const QString& name : QDir(SHARDSCAPE_SOURCE_DIR "/resources/models").entryList({"*.json"}, QDir::Files))
            files << QStringLiteral(SHARDSCAPE_SOURCE_DIR "/resources/models/") + name;
#ifdef SHARDSCAPE_HAVE_ONNX
        for (const QString& name : QDir(SHARDSCAPE_SOURCE_DIR "/tests/data/onnx").entryList({"*.onnx"}, QDir::Files))
            files << QStringLiteral(SHARDSCAPE_SOURCE_DIR "/tests/data/onnx/") + name;
#endif
        QVERIFY(files.size() >= 10);
        int planned = 0;
        for (const QString& file : files) {
            BuildOptions options;
            options.seq_len = 512;
            std::string message = "(no error)";
            try {
                const ModelGraph graph = loadModel(file.toStdString(), options);
                message = test::inputErrorOf([&] { fuzz::planAndSimulate(graph); });
                ++planned;
            } catch (const InputError&) {
                continue; // a test file that is meant to be refused (external data, control flow)
            }
            QVERIFY2(message == "(no error)" || message.size() > 10,
                     qPrintable(file + ": " + QString::fromStdString(message)));
        }
        QVERIFY2(planned >= 10, qPrintable(QString::number(planned)));
    }

    /**
     * Every loader, fed what broke the JSON paths once (a 400 kB file of nested brackets crashed `plan --config F` and
     * `simulate --from-config F` with SIGSEGV) and what could make one slow: nesting 200,000 deep, arrays of 200,000
     * elements, a 1 MB line. Each is loaded or refused with an InputError, within the fuzzers' time budget.
     */
    void deepAndHugeInputs_data()
    {
        QTest::addColumn<QString>("target");
        QTest::addColumn<QByteArray>("bytes");
        constexpr int kDeep = 200'000;
        const QByteArray deepArrays = QByteArray(kDeep, '[') + QByteArray(kDeep, ']');
        QByteArray deepObjects;
        for (int i = 0; i < kDeep / 8; ++i)
            deepObjects += "{\"a\":";
        deepObjects += "1" + QByteArray(kDeep / 8, '}');
        QByteArray hugeArray = "[";
        for (int i = 0; i < kDeep; ++i)
            hugeArray += i == 0 ? "0" : ",0";
        hugeArray += "]";
        const QByteArray hugeField = "{\"layers\": " + hugeArray + ", \"hidden_size\": " + hugeArray + "}";
        const QByteArray deepToml = "a = " + deepArrays;
        const QByteArray hugeToml = "[training]\nsteps = " + hugeArray + "\n";
        const QByteArray longLine = "torchrun " + QByteArray("--num-layers 2 ").repeated(70'000) + "\n";
        // Depth toml++ does not cap (dotted keys, table headers) and nested ${NAME:-default}s: both crashed (SIGSEGV).
        const QByteArray dottedKey = "a" + QByteArray(".a").repeated(kDeep / 4) + " = 1\n";
        const QByteArray deepHeader = "[a" + QByteArray(".a").repeated(kDeep / 4) + "]\nx = 1\n";
        const QByteArray nestedDefaults = "torchrun pretrain_gpt.py --num-layers \""
            + QByteArray("${A:-").repeated(kDeep / 4) + QByteArray(kDeep / 4, '}') + "\"\n";
        for (const auto& loader : fuzz::loaders()) {
            const QString target
                = QString::fromUtf8(loader.target.data(), static_cast<qsizetype>(loader.target.size()));
            const bool toml = target == QLatin1String("job_torchtitan");
            const std::vector<std::pair<const char*, QByteArray>> inputs {
                {"deep arrays", toml ? deepToml : deepArrays},
                {"deep objects", deepObjects},
                {"huge array", toml ? hugeToml : hugeArray},
                {"huge fields", hugeField},
                {"1 MB line", longLine},
                {"deep dotted key", dottedKey},
                {"deep table header", deepHeader},
                {"nested defaults", nestedDefaults},
            };
            for (const auto& [what, bytes] : inputs)
                QTest::newRow(qPrintable(target + ": " + what)) << target << bytes;
        }
    }

    void deepAndHugeInputs()
    {
        QFETCH(QString, target);
        QFETCH(QByteArray, bytes);
        const auto* loader = fuzz::findLoader(target.toStdString());
        QVERIFY(loader);
        const auto [message, ms] = loadTimed(*loader, bytes);
        QVERIFY2(ms < 5000, qPrintable(QString("took %1 ms").arg(ms)));
        // Nested JSON is refused at once, with where and why.
        if (bytes.startsWith("[[[") && target != QLatin1String("onnx") && target != QLatin1String("training_log")
            && target != QLatin1String("job_megatron") && target != QLatin1String("nccl_tests"))
            QVERIFY2(message.find("nested more than") != std::string::npos, message.c_str());
        const bool deepToml = bytes.startsWith("a.a.a") || bytes.startsWith("[a.a.a");
        if ((target == QLatin1String("job_torchtitan") && deepToml)
            || (target == QLatin1String("job_megatron") && bytes.contains("${A:-${A:-")))
            QVERIFY2(message.find("nested more than") != std::string::npos, message.c_str());
    }

    /** The depth bound counts structure, not text: brackets and dots inside strings and comments are not levels. */
    void tomlDepthCountsStructureOnly()
    {
        const std::string brackets(300, '[');
        const std::string text = "# " + brackets + "\n[job]\ndescription = \"" + brackets + " a.b.c\"\n"
            + "dump_folder = '''" + brackets + "\n" + brackets + "'''\n[model]\nname = \"llama3\"\nflavor = \"8B\"\n"
            + "[parallelism]\ntensor_parallel_degree = 2 # " + brackets + "\n"
            + "[training]\nlocal_batch_size = 1\nseq_len = 4096\nsteps = 10\nmix = { a.b = [[1, 2], [3]], c = {} }\n";
        ImportOptions options;
        options.world_size = 8;
        std::string message;
        try {
            importJobConfigText(text, "tt.toml", options);
        } catch (const InputError& e) {
            message = e.what();
        }
        QVERIFY2(message.find("nested more than") == std::string::npos, message.c_str());
        // [training] and 99 key parts: 100 levels, the bound; one more part is over it.
        const auto depthMessage = [&](int parts) {
            std::string key = "a";
            for (int i = 1; i < parts; ++i)
                key += ".a";
            try {
                importJobConfigText("[training]\nsteps = 1\n" + key + " = 1\n", "tt.toml", options);
            } catch (const InputError& e) {
                return std::string(e.what());
            }
            return std::string();
        };
        QVERIFY2(depthMessage(99).find("nested more than") == std::string::npos, depthMessage(99).c_str());
        QVERIFY2(depthMessage(100).find("tt.toml:3:") != std::string::npos, depthMessage(100).c_str());
    }
};

QTEST_GUILESS_MAIN(TestFuzzRegressions)
#include "tst_fuzz_regressions.moc"
