// SPDX-License-Identifier: MIT
// Every input the fuzzers (tests/fuzz) found a bug with, kept under tests/data/fuzz-regressions/<target>/, goes
// through the same loader call as the fuzz target: it must be rejected with an InputError that names the cause, or,
// for a file named "ok-*" (a valid input that used to crash or hang), load. A crash, a sanitizer report under the
// dev-asan preset, or any other exception fails the test.
#include "../fuzz/fuzz_loaders.h"
#include "shardscape/support/error.h"
#include "test_helpers.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QTest>

using namespace shardscape;

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

        QElapsedTimer timer;
        timer.start();
        const std::string message = test::inputErrorOf([&] {
            loader->load({bytes.constData(), static_cast<std::size_t>(bytes.size())});
        });
        // The fuzzers' -timeout is 10 s; a regression input is one that once hung or crashed, so it must be quick.
        QVERIFY2(timer.elapsed() < 5000, qPrintable(QString("took %1 ms").arg(timer.elapsed())));
        if (QFileInfo(path).fileName().startsWith("ok-")) {
            QCOMPARE(message, std::string("(no error)"));
        } else {
            QVERIFY2(message != "(no error)", "expected an InputError");
            QVERIFY2(message.size() > 10, message.c_str());
        }
    }
};

QTEST_GUILESS_MAIN(TestFuzzRegressions)
#include "tst_fuzz_regressions.moc"
