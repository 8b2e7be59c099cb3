// SPDX-License-Identifier: MIT
#include "shardscape/support/atomic_file.h"
#include "shardscape/support/error.h"
#include "shardscape/support/json_fields.h"
#include "shardscape/support/json_file.h"
#include "shardscape/support/strings.h"

#include <QTemporaryDir>
#include <QTest>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sys/wait.h>
#include <unistd.h>

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
} // namespace

class TestSupport : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void editDistanceMatchesLevenshtein_data()
    {
        QTest::addColumn<QString>("a");
        QTest::addColumn<QString>("b");
        QTest::addColumn<int>("distance");
        QTest::newRow("equal") << "h100-sxm"
                               << "h100-sxm" << 0;
        QTest::newRow("case") << "H100-SXM"
                              << "h100-sxm" << 0;
        QTest::newRow("kitten") << "kitten"
                                << "sitting" << 3;
        QTest::newRow("empty") << ""
                               << "abc" << 3;
        QTest::newRow("suffix") << "h100"
                                << "h100-sxm" << 4;
    }
    void editDistanceMatchesLevenshtein()
    {
        QFETCH(QString, a);
        QFETCH(QString, b);
        QFETCH(int, distance);
        QCOMPARE(editDistance(a.toStdString(), b.toStdString()), static_cast<std::size_t>(distance));
    }

    void nearestNamesRanksFamilyFirst()
    {
        const std::vector<std::string> names {"a100-40g", "a100-80g", "h100-pcie", "h100-sxm", "h200", "mi300x"};
        const auto near = nearestNames("h100", names, 3);
        QCOMPARE(near.size(), std::size_t {3});
        QVERIFY(near[0] == "h100-pcie" || near[0] == "h100-sxm");
        QVERIFY(near[1] == "h100-pcie" || near[1] == "h100-sxm");
    }

    void memoryTextIsNeverZeroForSomething()
    {
        QCOMPARE(memoryText(0), std::string("0 GB"));
        QCOMPARE(memoryText(3e7), std::string("30 MB"));
        QCOMPARE(memoryText(4e5), std::string("0.40 MB"));
        QCOMPARE(memoryText(0.4e9), std::string("0.40 GB"));
        QCOMPARE(memoryText(12.34e9), std::string("12.3 GB"));
        QCOMPARE(memoryText(80e9), std::string("80.0 GB"));
    }

    void siCountAndBytes()
    {
        QCOMPARE(siCount(6.74e9), std::string("6.74 B"));
        QCOMPARE(siCount(124e6), std::string("124.00 M"));
        QCOMPARE(humanBytes(2.5e9), std::string("2.50 GB"));
        QCOMPARE(humanBytes(512), std::string("512 B"));
    }

    void malformedJsonNamesLineAndColumn()
    {
        const std::string text = "{\n  \"a\": 1,\n  \"b\": [1, 2,, 3]\n}\n";
        const std::string message = errorOf([&] { parseJson(text, "x.json"); });
        QVERIFY2(message.rfind("x.json:3:", 0) == 0, message.c_str());
    }

    /** nlohmann's message minus its own position prefix; the echoed input escaped so it is printable UTF-8. */
    void malformedJsonSaysWhyAndEscapesTheInput()
    {
        std::string message = errorOf([] { parseJson("{\"a\": NaN}", "x.json"); });
        QVERIFY2(message.find("x.json:1:7: malformed JSON: syntax error while parsing value - invalid literal")
                     != std::string::npos,
                 message.c_str());
        QVERIFY2(message.find("json.exception") == std::string::npos, message.c_str());
        message = errorOf([] { parseJson("{\"a\": \"b\xff\"}", "x.json"); });
        QVERIFY2(message.find("ill-formed UTF-8 byte") != std::string::npos, message.c_str());
        QVERIFY2(message.find("\\xFF") != std::string::npos, message.c_str());
        QVERIFY(isValidUtf8(message));
        // Nesting is bounded before a value is built: 100 levels load, 101 are refused with where, and brackets
        // inside strings (escaped quotes included) do not count. 100,000 levels used to crash whatever quoted them.
        QVERIFY(parseJson(std::string(100, '[') + std::string(100, ']'), "ok.json").is_array());
        message = errorOf(
            [] { parseJson("{\"a\":\n" + std::string(101, '[') + std::string(101, ']') + "}", "deep.json"); });
        QVERIFY2(message.find("deep.json:2:100: JSON nested more than 100 levels deep") != std::string::npos,
                 message.c_str());
        message = errorOf([] { parseJson(std::string(100000, '[') + std::string(100000, ']'), "deep.json"); });
        QVERIFY2(message.find("nested more than 100") != std::string::npos, message.c_str());
        QVERIFY(parseJson("{\"s\": \"" + std::string(500, '[') + "\\\"" + std::string(500, '{') + "\"}", "s.json")
                    .is_object());
    }

    void utf8ValidationAndEscaping()
    {
        QVERIFY(isValidUtf8(""));
        QVERIFY(isValidUtf8("plain ascii"));
        QVERIFY(isValidUtf8("\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80")); // e-acute, euro, emoji
        QVERIFY(!isValidUtf8("\xff"));
        QVERIFY(!isValidUtf8("\xc3")); // truncated
        QVERIFY(!isValidUtf8("\xc0\xaf")); // overlong '/'
        QVERIFY(!isValidUtf8("\xed\xa0\x80")); // surrogate
        QVERIFY(!isValidUtf8("\xf4\x90\x80\x80")); // past U+10FFFF
        QCOMPARE(escapeInvalidUtf8("a\xff"
                                   "b\xc3\xa9\n"),
                 std::string("a\\xFFb\xc3\xa9\\x0A"));
        QVERIFY(isValidUtf8(escapeInvalidUtf8("\xc0\xaf\xed\xa0\x80\xf4\x90")));
    }

    void emptyAndMissingFiles()
    {
        QVERIFY(errorOf([] { parseJson("  \n", "empty.json"); }).find("empty") != std::string::npos);
        QVERIFY(errorOf([] { readTextFile("/nonexistent/file.json"); }).find("no such file") != std::string::npos);
        QTemporaryDir dir;
        QVERIFY(errorOf([&] { readTextFile(dir.path().toStdString()); }).find("directory") != std::string::npos);
    }

    void oversizedFileIsRefusedBeforeReading()
    {
        QTemporaryDir dir;
        const std::string path = dir.filePath("big.json").toStdString();
        {
            std::ofstream out(path);
            out << std::string(4096, ' ');
        }
        QVERIFY(errorOf([&] { readTextFile(path, 1024); }).find("limit") != std::string::npos);
    }

    void jsonFieldsChecksTypesRangesAndUnknownKeys()
    {
        const auto doc = nlohmann::json::parse(R"({"n": 3, "f": 2.5, "s": "x", "neg": -1, "big": 1e300, "typo": 1})");
        JsonFields f(doc, "cfg.json");
        QCOMPARE(f.integer("n", 1, 10), std::int64_t {3});
        QCOMPARE(f.number("f", 0, 10), 2.5);
        QCOMPARE(f.string("s"), std::string("x"));
        QVERIFY(errorOf([&] { f.integer("f", 0, 10); }).find("expected an integer") != std::string::npos);
        QVERIFY(errorOf([&] { f.integer("neg", 0, 10); }).find("out of range") != std::string::npos);
        QVERIFY(errorOf([&] { f.number("big", 0, 1e9); }).find("out of range") != std::string::npos);
        QVERIFY(errorOf([&] { f.string("n"); }).find("expected a string") != std::string::npos);
        QVERIFY(errorOf([&] { f.integer("missing", 0, 1); }).find("missing") != std::string::npos);
        const std::string unknown = errorOf([&] { f.checkNoUnknownKeys(); });
        QVERIFY2(unknown.find("typo") != std::string::npos, unknown.c_str());
    }

    void atomicWriteReplacesWholeFileAndLeavesNoTemp()
    {
        QTemporaryDir dir;
        const std::filesystem::path path = dir.filePath("plan.json").toStdString();
        writeFileAtomic(path, "first");
        writeFileAtomic(path, "second version");
        QCOMPARE(readTextFile(path), std::string("second version"));
        int files = 0;
        for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir.path().toStdString()))
            ++files;
        QCOMPARE(files, 1);
        QVERIFY(errorOf([&] { writeFileAtomic("/nonexistent-dir/x.json", "x"); }).find("does not exist")
                != std::string::npos);
    }

    void atomicWriteRemovesOnlyDeadWritersTemps()
    {
        QTemporaryDir dir;
        const std::filesystem::path root = dir.path().toStdString();
        // The host part as writeFileAtomic spells it (first 32 characters, '-' and '/' as '_').
        char buffer[256] = {};
        QCOMPARE(::gethostname(buffer, sizeof buffer - 1), 0);
        std::string host = std::string(buffer).substr(0, 32);
        std::replace(host.begin(), host.end(), '-', '_');
        std::replace(host.begin(), host.end(), '/', '_');
        // A process that has exited and been reaped: its pid names no process.
        const pid_t dead = ::fork();
        if (dead == 0)
            ::_exit(0);
        QVERIFY(dead > 0);
        QCOMPARE(::waitpid(dead, nullptr, 0), dead);
        const auto touch = [&](const std::string& name) { std::ofstream(root / name) << "partial"; };
        const std::string staleTemp = cat(".plan.json.tmp-", dead, "-123-", host);
        const std::string liveTemp = cat(".plan.json.tmp-", ::getpid(), "-456-", host);
        const std::string otherHost = cat(".plan.json.tmp-", dead, "-789-", host, "x");
        const std::string otherFile = cat(".other.json.tmp-", dead, "-123-", host);
        for (const auto& name : {staleTemp, liveTemp, otherHost, otherFile})
            touch(name);

        writeFileAtomic(root / "plan.json", "complete");
        QCOMPARE(readTextFile(root / "plan.json"), std::string("complete"));
        QVERIFY(!std::filesystem::exists(root / staleTemp));
        QVERIFY(std::filesystem::exists(root / liveTemp)); // a writer still running keeps its temporary
        QVERIFY(std::filesystem::exists(root / otherHost)); // another machine's writer may still be running
        QVERIFY(std::filesystem::exists(root / otherFile)); // only temporaries of the file being written
    }

    void atomicWriteFollowsLinksAndWritesDevicesInPlace()
    {
        QTemporaryDir dir;
        const std::filesystem::path root = dir.path().toStdString();
        writeFileAtomic(root / "real.json", "old");
        std::filesystem::create_symlink("real.json", root / "link.json");
        writeFileAtomic(root / "link.json", "new");
        QVERIFY(std::filesystem::is_symlink(root / "link.json"));
        QCOMPARE(readTextFile(root / "real.json"), std::string("new"));

        // Renaming over /dev/null would replace the device (as root) or fail: it must be written in place.
        writeFileAtomic("/dev/null", "discarded");
        QVERIFY(std::filesystem::is_character_file("/dev/null"));
        QVERIFY(errorOf([&] { writeFileAtomic(root, "x"); }).find("is a directory") != std::string::npos);
    }
};

QTEST_APPLESS_MAIN(TestSupport)
#include "tst_support.moc"
