// SPDX-License-Identifier: MIT
// The profile database: strict file reading (version, checksum, keys, numbers), log-space interpolation against
// closed forms, the nccl-tests importer on real published logs, the measured cost source per kind, and finding
// the profile of a cluster's device.
#include "shardscape/profile/log_curve.h"
#include "shardscape/profile/nccl_tests_import.h"
#include "shardscape/profile/profile.h"
#include "shardscape/profile/profile_cost_source.h"
#include "shardscape/profile/profile_db.h"
#include "shardscape/profile/profile_summary.h"
#include "shardscape/support/json_file.h"
#include "test_helpers.h"

#include <QTemporaryDir>
#include <QTest>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

using namespace shardscape;
using shardscape::test::inputErrorOf;
using shardscape::test::writeFile;

namespace {

const std::string kData = std::string(SHARDSCAPE_SOURCE_DIR) + "/tests/data/nccl-tests/";

std::string readAll(const std::filesystem::path& path)
{
    return readTextFile(path);
}

/** A profile with every kind: GEMMs on a power law, attention, memory and collectives. */
Profile sampleProfile()
{
    Profile p;
    p.created_utc = "2026-11-22T10:00:00Z";
    p.tool = "tst_profile";
    p.device.name = "NVIDIA H100 80GB HBM3";
    p.device.count = 8;
    p.device.memory_bytes = 85520809984;
    p.device.runtime_reserve_bytes = 553648128;
    p.device.hbm_copy_bytes_per_s = 2.9e12;
    p.device.sm_count = 132;
    p.device.compute_capability = "9.0";
    p.device.driver_version = "13000";
    p.device.runtime_version = "13000";
    for (const std::int64_t s : {1024, 2048, 4096})
        p.matmul.push_back({DType::BF16, s, s, s, 1e-12 * std::pow(2.0 * s * s * s, 0.9), "cublasLt"});
    p.attention.push_back({DType::BF16, 1, 32, 4096, 128, true, 4.0 * 32 * 4096 * 4096 * 128, 3.0e-3, "test"});
    p.memory_ops.push_back({"elementwise", DType::BF16, 268435456, 8.0e-5});
    p.collectives.push_back({"all_reduce", 134217728, 8, 8, DType::BF16, 6.4e-4, 366.7, "shardscape-profile"});
    return p;
}

/** Writes `doc` with a correct checksum, so only the property under test is wrong. */
void writeWithChecksum(const std::filesystem::path& file, nlohmann::json doc)
{
    doc["checksum"] = profileChecksum(doc);
    writeFile(file.string(), doc.dump(1));
}

double relativeError(double a, double b)
{
    return std::fabs(a - b) / std::fabs(b);
}

/** Sets an environment variable for one test and restores it. */
class ScopedEnv
{
public:
    ScopedEnv(const char* name, const QByteArray& value)
        : m_name(name)
        , m_had(qEnvironmentVariableIsSet(name))
        , m_old(qgetenv(name))
    {
        qputenv(name, value);
    }
    ~ScopedEnv()
    {
        if (m_had)
            qputenv(m_name, m_old);
        else
            qunsetenv(m_name);
    }
    ScopedEnv(const ScopedEnv&) = delete;
    ScopedEnv& operator=(const ScopedEnv&) = delete;

private:
    const char* m_name;
    bool m_had;
    QByteArray m_old;
};

DeviceSpec presetDevice(const char* name)
{
    return devicePreset(name);
}

} // namespace

class TestProfile : public QObject
{
    Q_OBJECT

private slots:
    void roundTrip()
    {
        QTemporaryDir dir;
        const std::filesystem::path file = dir.filePath("sub/profile.json").toStdString();
        const Profile p = sampleProfile();
        saveProfile(file, p); // creates sub/
        const ProfileStatus status = inspectProfile(file);
        QCOMPARE(status.state, ProfileState::Valid);
        QVERIFY(toJson(*status.profile) == toJson(p));
        const auto doc = nlohmann::json::parse(readAll(file));
        QCOMPARE(doc["format"].get<std::string>(), std::string(kProfileFormat));
        QCOMPARE(doc["checksum"].get<std::string>(), profileChecksum(doc));
        QVERIFY(doc["checksum"].get<std::string>().starts_with("fnv1a64:"));
        QCOMPARE(doc["checksum"].get<std::string>().size(), std::string("fnv1a64:").size() + 16);
        // Whole byte counts are written as integers.
        QVERIFY(doc["collectives"][0]["bytes"].is_number_integer());
        QCOMPARE(loadProfile(file).matmul.size(), std::size_t {3});
    }

    void checksumIsFnv1a64()
    {
        // FNV-1a 64 of "{}" (the empty object's compact dump): offset basis and prime from the FNV reference.
        std::uint64_t hash = 0xcbf29ce484222325ull;
        for (const char c : std::string("{}")) {
            hash ^= static_cast<unsigned char>(c);
            hash *= 0x100000001b3ull;
        }
        char hex[17];
        std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
        QCOMPARE(profileChecksum(nlohmann::json::object({{"checksum", "x"}})), std::string("fnv1a64:") + hex);
    }

    void checksumMismatchIsCorrupt()
    {
        QTemporaryDir dir;
        const std::filesystem::path file = dir.filePath("profile.json").toStdString();
        saveProfile(file, sampleProfile());
        auto doc = nlohmann::json::parse(readAll(file));
        doc["memory_ops"][0]["time_s"] = 4.0e-5; // an edit that keeps the file well-formed
        writeFile(file.string(), doc.dump(1));
        const ProfileStatus status = inspectProfile(file);
        QCOMPARE(status.state, ProfileState::Corrupt);
        QVERIFY2(status.reason.find("checksum mismatch") != std::string::npos, status.reason.c_str());
        QVERIFY(!status.profile);
        QVERIFY(inputErrorOf([&] { loadProfile(file); }).find("checksum mismatch") != std::string::npos);
    }

    void otherVersionIsReported_data()
    {
        QTest::addColumn<QString>("format");
        QTest::newRow("older") << "shardscape.profile/0";
        QTest::newRow("newer") << "shardscape.profile/2";
    }

    void otherVersionIsReported()
    {
        QFETCH(QString, format);
        QTemporaryDir dir;
        const std::filesystem::path file = dir.filePath("profile.json").toStdString();
        saveProfile(file, sampleProfile());
        auto doc = nlohmann::json::parse(readAll(file));
        doc["format"] = format.toStdString();
        doc["future_key"] = 1; // not read: the version is checked first
        writeWithChecksum(file, doc);
        const ProfileStatus status = inspectProfile(file);
        QCOMPARE(status.state, ProfileState::WrongVersion);
        QVERIFY2(status.reason.find(format.toStdString()) != std::string::npos, status.reason.c_str());
        QVERIFY(status.reason.find(kProfileFormat) != std::string::npos);
    }

    void truncatedIsCorrupt()
    {
        QTemporaryDir dir;
        const std::filesystem::path file = dir.filePath("profile.json").toStdString();
        saveProfile(file, sampleProfile());
        const std::string text = readAll(file);
        writeFile(file.string(), text.substr(0, text.size() / 2));
        const ProfileStatus status = inspectProfile(file);
        QCOMPARE(status.state, ProfileState::Corrupt);
        QVERIFY2(status.reason.find("malformed JSON") != std::string::npos, status.reason.c_str());
    }

    void missingAndOversized()
    {
        QTemporaryDir dir;
        const std::filesystem::path missing = dir.filePath("none/profile.json").toStdString();
        QCOMPARE(inspectProfile(missing).state, ProfileState::Missing);
        // A sparse file just over the limit: refused by its size before anything is read.
        const std::filesystem::path big = dir.filePath("big.json").toStdString();
        writeFile(big.string(), "{");
        std::filesystem::resize_file(big, kMaxProfileBytes + 1);
        const ProfileStatus status = inspectProfile(big);
        QCOMPARE(status.state, ProfileState::Corrupt);
        QVERIFY2(status.reason.find("limit") != std::string::npos, status.reason.c_str());
    }

    void badValuesNameTheKey_data()
    {
        QTest::addColumn<QString>("pointer");
        QTest::addColumn<QString>("value"); // JSON text
        QTest::addColumn<QString>("expected");
        QTest::newRow("unknown row key") << "/matmul/0/tile"
                                         << "128"
                                         << "matmul[0].tile: unknown key";
        QTest::newRow("unknown top key") << "/gemms"
                                         << "[]"
                                         << "gemms: unknown key";
        QTest::newRow("unknown device key") << "/device/clock"
                                            << "1"
                                            << "device.clock: unknown key";
        QTest::newRow("negative time") << "/matmul/0/time_s"
                                       << "-1e-3"
                                       << "matmul[0].time_s: expected a finite number > 0";
        QTest::newRow("zero bytes") << "/memory_ops/0/bytes"
                                    << "0"
                                    << "memory_ops[0].bytes: expected a finite number > 0";
        QTest::newRow("fractional bytes") << "/collectives/0/bytes"
                                          << "1.5"
                                          << "collectives[0].bytes: expected a whole";
        QTest::newRow("nan as text") << "/collectives/0/time_s"
                                     << "\"nan\""
                                     << "collectives[0].time_s: expected a number";
        QTest::newRow("one rank") << "/collectives/0/ranks"
                                  << "1"
                                  << "collectives[0].ranks: value 1 is out of range";
        QTest::newRow("more per node than ranks") << "/collectives/0/ranks_per_node"
                                                  << "9"
                                                  << "ranks_per_node";
        QTest::newRow("unknown op") << "/collectives/0/op"
                                    << "\"broadcast\""
                                    << "unknown op 'broadcast'";
        QTest::newRow("unknown dtype") << "/matmul/0/dtype"
                                       << "\"bf17\""
                                       << "unknown dtype 'bf17'";
        QTest::newRow("attention flops convention") << "/attention/0/flops"
                                                    << "1e12"
                                                    << "attention[0].flops";
        QTest::newRow("missing time") << "/memory_ops/0/time_s"
                                      << "null"
                                      << "memory_ops[0].time_s: required";
    }

    void badValuesNameTheKey()
    {
        QFETCH(QString, pointer);
        QFETCH(QString, value);
        QFETCH(QString, expected);
        QTemporaryDir dir;
        const std::filesystem::path file = dir.filePath("profile.json").toStdString();
        auto doc = toJson(sampleProfile());
        doc[nlohmann::json::json_pointer(pointer.toStdString())] = nlohmann::json::parse(value.toStdString());
        writeWithChecksum(file, doc);
        const ProfileStatus status = inspectProfile(file);
        QCOMPARE(status.state, ProfileState::Corrupt);
        QVERIFY2(status.reason.find(expected.toStdString()) != std::string::npos, status.reason.c_str());
    }

    void nanLiteralIsMalformed()
    {
        // JSON has no NaN: a writer that prints one produces a file the parser rejects at that spot.
        QTemporaryDir dir;
        const std::filesystem::path file = dir.filePath("profile.json").toStdString();
        writeFile(file.string(), R"({"format": "shardscape.profile/1", "matmul": [{"time_s": NaN}]})");
        const ProfileStatus status = inspectProfile(file);
        QCOMPARE(status.state, ProfileState::Corrupt);
        QVERIFY2(status.reason.find("malformed JSON") != std::string::npos, status.reason.c_str());
    }

    void saveRefusesInvalid()
    {
        QTemporaryDir dir;
        const std::filesystem::path file = dir.filePath("profile.json").toStdString();
        Profile p = sampleProfile();
        p.matmul[0].time_s = std::nan("");
        QVERIFY(inputErrorOf([&] { saveProfile(file, p); }).find("matmul[0].time_s") != std::string::npos);
        QVERIFY(!std::filesystem::exists(file));
        p = sampleProfile();
        p.device.name.clear();
        QVERIFY(inputErrorOf([&] { saveProfile(file, p); }).find("device.name") != std::string::npos);
    }

    void slug()
    {
        QCOMPARE(deviceSlug("NVIDIA H200"), std::string("nvidia-h200"));
        QCOMPARE(deviceSlug("NVIDIA A100-SXM4-80GB"), std::string("nvidia-a100-sxm4-80gb"));
        QCOMPARE(deviceSlug("Vendor X/Y 2"), std::string("vendor-x-y-2"));
    }

    // --- interpolation -------------------------------------------------------------------------------------------

    void powerLawIsExactBetweenPoints()
    {
        const double a = 3e-11;
        const double b = 0.85;
        const auto law = [&](double w) { return a * std::pow(w, b); };
        const LogCurve curve({{1e9, law(1e9)}, {1e6, law(1e6)}, {1e12, law(1e12)}}); // any order
        for (const double w : {1e6, 3.3e6, 1e8, 7.7e10, 1e12})
            QVERIFY2(relativeError(curve.at(w), law(w)) < 1e-12, qPrintable(QString::number(w)));
        // Two segments of different exponents: each is its own power law through its end points.
        const LogCurve bent({{1e3, 1e-6}, {1e5, 1e-6 * std::pow(100.0, 0.5)}, {1e7, 1e-5 * std::pow(100.0, 1.0)}});
        QVERIFY(relativeError(bent.at(1e4), 1e-6 * std::pow(10.0, 0.5)) < 1e-12);
        QVERIFY(relativeError(bent.at(1e6), 1e-5 * 10.0) < 1e-12);
    }

    void extrapolationKeepsThroughput()
    {
        const LogCurve curve({{1e3, 2e-6}, {1e6, 5e-4}});
        // Below the range: the throughput of the smallest point (1e3 / 2e-6 per s); above: of the largest.
        QVERIFY(relativeError(curve.at(10), 2e-6 * 10 / 1e3) < 1e-12);
        QVERIFY(relativeError(curve.at(1e9), 5e-4 * 1e9 / 1e6) < 1e-12);
        QCOMPARE(curve.at(0), 0.0);
        QCOMPARE(LogCurve({}).at(5), 0.0);
    }

    void repeatedPointsTakeTheGeometricMean()
    {
        const LogCurve curve({{100, 1e-6}, {100, 4e-6}, {1000, 1e-5}});
        QCOMPARE(curve.points().size(), std::size_t {2});
        QVERIFY(relativeError(curve.at(100), 2e-6) < 1e-12);
    }

    // --- the measured cost source --------------------------------------------------------------------------------

    void matmulExactAspectAndFallback()
    {
        Profile p = sampleProfile();
        // A second family: skinny GEMMs m = 16n (e.g. a large batch against a narrow weight), on another law.
        for (const std::int64_t n : {256, 512, 1024})
            p.matmul.push_back({DType::BF16, 16 * n, n, n, 5e-12 * std::pow(2.0 * 16 * n * n * n, 0.8), ""});
        p.matmul.push_back({DType::BF16, 1024, 1024, 1024, 2.5e-4, ""}); // a repeat: exact matches take the mean
        const auto fallback = makeDatasheetCostSource(loadCluster("h100-sxm"), {});
        const auto source = makeProfileCostSource(std::make_shared<const Profile>(p), fallback);
        const double square1024 = 1e-12 * std::pow(2.0 * 1024 * 1024 * 1024, 0.9);
        QVERIFY(relativeError(source->matmulTime(1024, 1024, 1024, DType::BF16), std::sqrt(square1024 * 2.5e-4))
                < 1e-12);
        // Square between measured squares: on the square law (the skinny rows are not near this aspect).
        const double w = 2.0 * 3000 * 3000 * 3000;
        QVERIFY(relativeError(source->matmulTime(3000, 3000, 3000, DType::BF16), 1e-12 * std::pow(w, 0.9)) < 1e-9);
        // A skinny query between skinny rows: on the skinny law.
        const double ws = 2.0 * 16 * 700 * 700 * 700;
        QVERIFY(relativeError(source->matmulTime(16 * 700, 700, 700, DType::BF16), 5e-12 * std::pow(ws, 0.8)) < 1e-9);
        // No f32 rows: the datasheet answers.
        QCOMPARE(source->matmulTime(4096, 4096, 4096, DType::F32), fallback->matmulTime(4096, 4096, 4096, DType::F32));
        // Never below the shortest kernel time.
        QCOMPARE(source->matmulTime(1, 1, 1, DType::BF16), fallback->minKernelTime());
    }

    void measuredOrFallbackPerKind()
    {
        Profile p;
        p.created_utc = "2026-11-22T10:00:00Z";
        p.tool = "tst_profile";
        p.device.name = "NVIDIA H100 80GB HBM3";
        for (const auto& run :
             parseNcclTestsText(readAll(kData + "h100_2x8_all_reduce_perf.log"), "all_reduce_perf.log"))
            mergeCollectives(p, collectiveRows(run, "h.log"));
        const Cluster cluster = loadCluster("h100-sxm", 2, 8);
        const auto fallback = makeDatasheetCostSource(cluster, {});
        const auto source = makeProfileCostSource(std::make_shared<const Profile>(p), fallback);
        QCOMPARE(
            source->name(),
            std::string("profile:nvidia-h100-80gb-hbm3 (collectives) + datasheet (matmul, attention, memory, p2p)"));
        // Measured group, measured size: the logged out-of-place time.
        QVERIFY(relativeError(source->collectiveTime(Collective::AllReduce, 134217728, GroupShape {16, 8}), 1652.2e-6)
                < 1e-12);
        // Between 128 MiB and 256 MiB: the log-space interpolation of the two logged times.
        const double mid = std::sqrt(134217728.0 * 268435456.0);
        QVERIFY(relativeError(source->collectiveTime(Collective::AllReduce, mid, GroupShape {16, 8}),
                              std::sqrt(1652.2e-6 * 2360.9e-6))
                < 1e-9);
        // Four nodes: the 2-node curve rescaled by the all-reduce bus factor 2(n-1)/n.
        const double factor = (2.0 * 31 / 32) / (2.0 * 15 / 16);
        QVERIFY(relativeError(source->collectiveTime(Collective::AllReduce, 134217728, GroupShape {32, 8}),
                              1652.2e-6 * factor)
                < 1e-12);
        // Inside one node nothing was measured, nor any all-gather: the datasheet.
        QCOMPARE(source->collectiveTime(Collective::AllReduce, 1e8, GroupShape {8, 8}),
                 fallback->collectiveTime(Collective::AllReduce, 1e8, GroupShape {8, 8}));
        QCOMPARE(source->collectiveTime(Collective::AllGather, 1e8, GroupShape {16, 8}),
                 fallback->collectiveTime(Collective::AllGather, 1e8, GroupShape {16, 8}));
        QCOMPARE(source->matmulTime(4096, 4096, 4096, DType::BF16),
                 fallback->matmulTime(4096, 4096, 4096, DType::BF16));
        QCOMPARE(source->attentionTime(1e12, DType::BF16), fallback->attentionTime(1e12, DType::BF16));
        QCOMPARE(source->memoryTime(1e8), fallback->memoryTime(1e8));
        QCOMPARE(source->p2pTime(1e6, true), fallback->p2pTime(1e6, true));
        QCOMPARE(source->collectiveTime(Collective::AllReduce, 1e8, GroupShape {1, 1}), 0.0);
    }

    void everyKindMeasured()
    {
        Profile p = sampleProfile();
        p.collectives.push_back({"send_recv", 1048576, 2, 2, DType::BF16, 2e-5, 0, ""});
        p.collectives.push_back({"send_recv", 1048576, 2, 1, DType::BF16, 5e-5, 0, ""});
        p.memory_ops.push_back({"copy", DType::BF16, 268435456, 1.0e-4}); // elementwise is preferred
        const auto fallback = makeDatasheetCostSource(loadCluster("h100-sxm"), {});
        const auto source = makeProfileCostSource(std::make_shared<const Profile>(p), fallback);
        QCOMPARE(source->name(),
                 std::string("profile:nvidia-h100-80gb-hbm3 (matmul, attention, memory, collectives, p2p)"));
        QCOMPARE(source->attentionTime(4.0 * 32 * 4096 * 4096 * 128, DType::BF16), 3.0e-3);
        QVERIFY(relativeError(source->attentionTime(4.0 * 32 * 8192 * 8192 * 128, DType::BF16), 4 * 3.0e-3) < 1e-12);
        QCOMPARE(source->memoryTime(268435456), 8.0e-5);
        QCOMPARE(source->p2pTime(1048576, false), 2e-5);
        QCOMPARE(source->p2pTime(1048576, true), 5e-5);
        QCOMPARE(source->collectiveTime(Collective::AllReduce, 134217728, GroupShape {8, 8}), 6.4e-4);
        // Fewer ranks in the node: rescaled through the bus factor, 2(4-1)/4 against 2(8-1)/8.
        QVERIFY(relativeError(source->collectiveTime(Collective::AllReduce, 134217728, GroupShape {4, 8}),
                              6.4e-4 * (1.5 / 1.75))
                < 1e-12);
    }

    // --- nccl-tests logs -----------------------------------------------------------------------------------------

    void h100AllReduceLog()
    {
        const auto runs
            = parseNcclTestsText(readAll(kData + "h100_2x8_all_reduce_perf.log"), "h100_2x8_all_reduce_perf.log");
        QCOMPARE(runs.size(), std::size_t {1});
        const NcclTestsRun& run = runs.front();
        QCOMPARE(run.op, std::string("all_reduce"));
        QCOMPARE(run.program, std::string("all_reduce_perf"));
        QCOMPARE(run.ranks, 16);
        QCOMPARE(run.ranks_per_node, 8);
        QCOMPARE(run.device_name, std::string("NVIDIA H100 80GB HBM3"));
        QCOMPARE(run.results.size(), std::size_t {31});
        QCOMPARE(run.results.front().bytes, 8.0);
        QCOMPARE(run.results.front().time_us, 135.8);
        QCOMPARE(run.results.front().type, std::string("float"));
        QCOMPARE(run.results.back().bytes, 8589934592.0);
        QCOMPARE(run.results.back().count, std::int64_t {2147483648});
        QCOMPARE(run.results.back().time_us, 47535.0);
        QCOMPARE(run.results.back().algbw_gb_s, 180.71);
        QCOMPARE(run.results.back().busbw_gb_s, 338.82);
        const auto rows = collectiveRows(run, "h100_2x8_all_reduce_perf.log");
        QCOMPARE(rows.size(), run.results.size());
        for (std::size_t i = 0; i < rows.size(); ++i) {
            const auto& logged = run.results[i];
            const auto& row = rows[i];
            QCOMPARE(row.dtype, DType::F32);
            QCOMPARE(row.time_s, logged.time_us / 1e6);
            // busbw = algbw x 2(n-1)/n with algbw = size / time (GB = 1e9), the closed form of doc/PERFORMANCE.md.
            const double algbw = row.bytes / row.time_s / 1e9;
            QVERIFY(std::fabs(row.busbw_gb_per_s - algbw * 2 * 15 / 16) < 1e-9 * row.busbw_gb_per_s);
            // ... and it agrees with what the log printed (2 decimals, from an unrounded time).
            QVERIFY2(std::fabs(algbw - logged.algbw_gb_s) <= 0.005 + 1e-3 * logged.algbw_gb_s,
                     qPrintable(QString::number(logged.bytes)));
            QVERIFY2(std::fabs(row.busbw_gb_per_s - logged.busbw_gb_s) <= 0.005 + 1e-3 * logged.busbw_gb_s,
                     qPrintable(QString::number(logged.bytes)));
        }
    }

    void a40SendRecvLog()
    {
        const auto runs
            = parseNcclTestsText(readAll(kData + "a40_2nodes_sendrecv_perf.log"), "a40_2nodes_sendrecv_perf.log");
        QCOMPARE(runs.size(), std::size_t {1});
        const NcclTestsRun& run = runs.front();
        QCOMPARE(run.op, std::string("send_recv")); // from the file name
        QCOMPARE(run.ranks, 2);
        QCOMPARE(run.ranks_per_node, 1); // gpu23 and gpu24
        QCOMPARE(run.device_name, std::string("NVIDIA A40"));
        QCOMPARE(run.results.size(), std::size_t {5});
        QCOMPARE(run.results[0].bytes, 256.0);
        QCOMPARE(run.results[0].time_us, 34.24);
        QCOMPARE(run.results[4].bytes, 4096.0);
        QCOMPARE(run.results[4].time_us, 30.74);
        QVERIFY(!run.results[4].in_place);
        for (const auto& row : collectiveRows(run, "a40")) // sendrecv: busbw = algbw
            QVERIFY(std::fabs(row.busbw_gb_per_s - row.bytes / row.time_s / 1e9) < 1e-15);
        QVERIFY(relativeError(collectiveRows(run, "a40")[4].busbw_gb_per_s, 4096 / 30.74e-6 / 1e9) < 1e-12);
    }

    void gb10RunNamesItsTest()
    {
        const auto runs = parseNcclTestsText(readAll(kData + "gb10_2nodes_run.log"), "gb10_2nodes_run.log");
        QCOMPARE(runs.size(), std::size_t {1});
        QCOMPARE(runs[0].op, std::string("all_reduce")); // from "# Collective test starting: all_reduce_perf"
        QCOMPARE(runs[0].ranks, 2);
        QCOMPARE(runs[0].ranks_per_node, 1);
        QCOMPARE(runs[0].device_name, std::string("NVIDIA GB10"));
        QCOMPARE(runs[0].results.size(), std::size_t {4});
        QCOMPARE(runs[0].results[3].bytes, 65536.0);
        QCOMPARE(runs[0].results[3].time_us, 67.93);
        QCOMPARE(runs[0].results[3].busbw_gb_s, 0.96);
    }

    void textVariants()
    {
        const std::string log = readAll(kData + "h100_2x8_all_reduce_perf.log");
        const auto reference = parseNcclTestsText(log, "all_reduce_perf.log").front();
        const auto sameRows = [&](const NcclTestsRun& run) {
            QCOMPARE(run.results.size(), reference.results.size());
            for (std::size_t i = 0; i < run.results.size(); ++i) {
                QCOMPARE(run.results[i].bytes, reference.results[i].bytes);
                QCOMPARE(run.results[i].time_us, reference.results[i].time_us);
            }
        };
        // -S 1: a timestamp after the in-place group ("%21s" of "%Y-%m-%d %H:%M:%S" in util.cu).
        std::string stamped;
        std::string tagged;
        std::istringstream in(log);
        for (std::string line; std::getline(in, line);) {
            std::string s = line;
            while (!s.empty() && s.back() == ' ')
                s.pop_back();
            if (!line.empty() && line[0] == ' ')
                s += "  2025-03-04 10:11:12";
            else if (line.find("#wrong") != std::string::npos)
                s += "           timestamp";
            stamped += s + "\n";
            tagged += "[1,0]<stdout>:" + line + "\n"; // mpirun --tag-output
        }
        sameRows(parseNcclTestsText(stamped, "all_reduce_perf.log").front());
        sameRows(parseNcclTestsText(tagged, "all_reduce_perf.log").front());
        // Two runs in one file: both read, the second named by its own starting line.
        const auto two = parseNcclTestsText("# Collective test starting: all_reduce_perf\n" + log
                                                + "# Collective test starting: all_gather_perf\n" + log,
                                            "x.log");
        QCOMPARE(two.size(), std::size_t {2});
        QCOMPARE(two[1].op, std::string("all_gather"));
        sameRows(two[1]);
    }

    void wrongRowsAndBlankGroups()
    {
        const std::string log = readAll(kData + "a40_2nodes_sendrecv_perf.log");
        // A row whose out-of-place check failed (#wrong 3) is skipped and said so.
        std::string wrong = log;
        const std::string row = "34.24    0.01    0.01      0    33.65";
        wrong.replace(wrong.find(row), row.size(), "34.24    0.01    0.01      3    33.65");
        const auto run = parseNcclTestsText(wrong, "sendrecv_perf.log").front();
        QCOMPARE(run.results.size(), std::size_t {4});
        QVERIFY(!run.notes.empty() && run.notes.front().find("wrong") != std::string::npos);
        // Trace replay leaves the out-of-place group blank: the in-place values are read.
        std::string blank;
        std::istringstream in(log);
        for (std::string line; std::getline(in, line);) {
            if (!line.empty() && line[0] == ' ') {
                auto t = std::istringstream(line);
                std::vector<std::string> cells;
                for (std::string c; t >> c;)
                    cells.push_back(c);
                line = cells[0] + " " + cells[1] + " " + cells[2] + " " + cells[3] + " " + cells[4] + " " + cells[9]
                    + " " + cells[10] + " " + cells[11] + " " + cells[12];
            }
            blank += line + "\n";
        }
        const auto inPlace = parseNcclTestsText(blank, "sendrecv_perf.log").front();
        QCOMPARE(inPlace.results.size(), std::size_t {5});
        QCOMPARE(inPlace.results[0].time_us, 33.65);
        QVERIFY(inPlace.results[0].in_place);
    }

    void unusableLogs_data()
    {
        QTest::addColumn<QString>("edit"); // what to do to the H100 log
        QTest::addColumn<QString>("expected");
        QTest::newRow("rank listed twice") << "duplicate-rank"
                                           << "rank 0 is listed twice";
        QTest::newRow("a test the cost model does not use") << "broadcast"
                                                            << "broadcast_perf measures a collective";
        QTest::newRow("no table") << "no-header"
                                  << "no result table";
        QTest::newRow("no test named") << "unnamed"
                                       << "cannot tell which collective";
        QTest::newRow("not nccl-tests") << "empty"
                                        << "no nccl-tests output";
        QTest::newRow("one rank") << "one-rank"
                                  << "ran on one rank";
    }

    void unusableLogs()
    {
        QFETCH(QString, edit);
        QFETCH(QString, expected);
        std::string log = readAll(kData + "h100_2x8_all_reduce_perf.log");
        std::string name = "all_reduce_perf.log";
        const auto eraseLine = [&](const std::string& part) {
            const auto at = log.find(part);
            const auto begin = log.rfind('\n', at) + 1;
            log.erase(begin, log.find('\n', at) + 1 - begin);
        };
        if (edit == "duplicate-rank") {
            log.replace(log.find("Rank  1 Group"), 13, "Rank  0 Group");
        } else if (edit == "broadcast") {
            log = "# Collective test starting: broadcast_perf\n" + log;
        } else if (edit == "no-header") {
            eraseLine("#       size");
        } else if (edit == "unnamed") {
            name = "results.txt";
        } else if (edit == "empty") {
            log = "hello\n";
        } else if (edit == "one-rank") {
            log = log.substr(0, log.find("#  Rank  1")) + log.substr(log.find("#\n#      "));
        }
        const std::string error = inputErrorOf([&] { parseNcclTestsText(log, name); });
        QVERIFY2(error.find(expected.toStdString()) != std::string::npos, error.c_str());
    }

    void jsonOutputMatchesText()
    {
        // The -J layout of nccl-tests src/util.cu, filled with the H100 log's numbers: one "devices" entry per
        // process (16 processes, 1 GPU each, on two hosts), results with out_of_place/in_place objects.
        const auto text
            = parseNcclTestsText(readAll(kData + "h100_2x8_all_reduce_perf.log"), "all_reduce_perf.log").front();
        nlohmann::json doc = {{"version", 1},
                              {"args", {"/opt/src/nccl-tests/build/all_reduce_perf", "-b", "8", "-e", "8G"}},
                              {"config", {{"nthreads", 1}, {"ngpus", 1}}},
                              {"devices", nlohmann::json::array()},
                              {"results", nlohmann::json::array()}};
        for (int rank = 0; rank < 16; ++rank)
            doc["devices"].push_back({{"rank", rank},
                                      {"hostname", rank < 8 ? "ztan-mig-235z" : "ztan-mig-gq73"},
                                      {"device", rank % 8},
                                      {"device_info", "NVIDIA H100 80GB HBM3"}});
        for (const auto& r : text.results)
            doc["results"].push_back(
                {{"size", r.bytes},
                 {"count", r.count},
                 {"type", r.type},
                 {"redop", "sum"},
                 {"root", "    -1"},
                 {"out_of_place",
                  {{"time", r.time_us}, {"alg_bw", r.algbw_gb_s}, {"bus_bw", r.busbw_gb_s}, {"nwrong", 0}}},
                 {"in_place",
                  {{"time", r.time_us}, {"alg_bw", r.algbw_gb_s}, {"bus_bw", r.busbw_gb_s}, {"nwrong", nullptr}}},
                 {"actual_iterations", 20},
                 {"experiment_name", "all_reduce_perf"}});
        doc["results"].push_back({{"size", 16}, {"out_of_place", {{"time", "nan"}}}}); // skipped, not trusted
        const NcclTestsRun json = parseNcclTestsJson(doc, "out.json");
        QCOMPARE(json.op, std::string("all_reduce"));
        QCOMPARE(json.ranks, 16);
        QCOMPARE(json.ranks_per_node, 8);
        QCOMPARE(json.device_name, std::string("NVIDIA H100 80GB HBM3"));
        QCOMPARE(json.notes.size(), std::size_t {1});
        const auto a = collectiveRows(json, "x");
        const auto b = collectiveRows(text, "x");
        QCOMPARE(a.size(), b.size());
        for (std::size_t i = 0; i < a.size(); ++i) {
            QCOMPARE(a[i].bytes, b[i].bytes);
            QCOMPARE(a[i].time_s, b[i].time_s);
            QCOMPARE(a[i].ranks_per_node, b[i].ranks_per_node);
        }
        // A single process driving 8 GPUs (-g 8): one devices entry, 8 ranks on one node.
        doc["config"]["ngpus"] = 8;
        doc["devices"] = nlohmann::json::array({doc["devices"][0]});
        const NcclTestsRun single = parseNcclTestsJson(doc, "out.json");
        QCOMPARE(single.ranks, 8);
        QCOMPARE(single.ranks_per_node, 8);
    }

    void mergeReplacesSameRows()
    {
        Profile p = sampleProfile();
        const auto run
            = parseNcclTestsText(readAll(kData + "h100_2x8_all_reduce_perf.log"), "all_reduce_perf.log").front();
        auto rows = collectiveRows(run, "h.log");
        MergeCounts first = mergeCollectives(p, rows);
        QCOMPARE(first.added, 31);
        QCOMPARE(first.replaced, 0);
        rows[0].time_s = 1e-3;
        MergeCounts second = mergeCollectives(p, rows);
        QCOMPARE(second.added, 0);
        QCOMPARE(second.replaced, 31);
        QCOMPARE(p.collectives.size(), std::size_t {32});
        // Sorted by op, ranks, ranks per node, bytes: the 8-rank sample row first, then the 16-rank rows by size.
        QCOMPARE(p.collectives[0].ranks, 8);
        QCOMPARE(p.collectives[1].bytes, 8.0);
        QCOMPARE(p.collectives[1].time_s, 1e-3);
        QVERIFY(std::is_sorted(p.collectives.begin() + 1, p.collectives.end(),
                               [](const auto& x, const auto& y) { return x.bytes < y.bytes; }));
        QTemporaryDir dir;
        const std::filesystem::path file = dir.filePath("p/profile.json").toStdString();
        saveProfile(file, p);
        QCOMPARE(loadProfile(file).collectives.size(), std::size_t {32});
    }

    // --- finding a device's profile ------------------------------------------------------------------------------

    void presetsOfDeviceNames_data()
    {
        QTest::addColumn<QString>("name");
        QTest::addColumn<QString>("preset");
        QTest::newRow("H100 SXM") << "NVIDIA H100 80GB HBM3"
                                  << "h100-sxm";
        QTest::newRow("H100 slug") << "nvidia-h100-80gb-hbm3"
                                   << "h100-sxm";
        QTest::newRow("H100 PCIe") << "NVIDIA H100 PCIe"
                                   << "h100-pcie";
        QTest::newRow("H200") << "NVIDIA H200"
                              << "h200";
        QTest::newRow("A100 40GB") << "NVIDIA A100-SXM4-40GB"
                                   << "a100-40g";
        QTest::newRow("A100 80GB") << "NVIDIA A100-SXM4-80GB"
                                   << "a100-80g";
        QTest::newRow("RTX 4090") << "NVIDIA GeForce RTX 4090"
                                  << "rtx4090";
        QTest::newRow("L40S") << "NVIDIA L40S"
                              << "l40s";
        QTest::newRow("MI300X") << "AMD Instinct MI300X"
                                << "mi300x";
        QTest::newRow("no preset") << "NVIDIA H800"
                                   << "";
    }

    void presetsOfDeviceNames()
    {
        QFETCH(QString, name);
        QFETCH(QString, preset);
        QCOMPARE(QString::fromStdString(presetForDeviceName(name.toStdString()).value_or("")), preset);
        if (!preset.isEmpty()) // every preset named here exists
            QCOMPARE(QString::fromStdString(devicePreset(preset.toStdString()).name), preset);
    }

    void findProfileForTheClusterDevice()
    {
        QTemporaryDir cache;
        ScopedEnv xdg("XDG_CACHE_HOME", cache.path().toUtf8());
        QVERIFY(profileCacheRoot() == std::filesystem::path(cache.path().toStdString()) / "shardscape");
        const DeviceSpec h100 = presetDevice("h100-sxm");
        const DeviceSpec a100 = presetDevice("a100-80g");
        // Nothing cached: quietly nothing.
        ProfileChoice none = findProfile(h100, {});
        QVERIFY(!none.profile);
        QVERIFY(none.notes.empty());

        const auto dir = defaultProfileDir("NVIDIA H100 80GB HBM3");
        QCOMPARE(dir.filename().string(), std::string("nvidia-h100-80gb-hbm3"));
        saveProfile(dir / kProfileFileName, sampleProfile());
        ProfileChoice found = findProfile(h100, {});
        QVERIFY(found.profile);
        QVERIFY(found.notes.empty());
        QVERIFY(found.file == dir / kProfileFileName);
        QVERIFY(!found.explicit_request);

        // Another device: not used, and said why.
        ProfileChoice other = findProfile(a100, {});
        QVERIFY(!other.profile);
        QCOMPARE(other.notes.size(), std::size_t {1});
        QVERIFY2(other.notes[0].find("no measured profile for a100-80g") != std::string::npos, other.notes[0].c_str());
        QVERIFY(other.notes[0].find("nvidia-h100-80gb-hbm3") != std::string::npos);
        // ... unless named: then used, and said so.
        ProfileRequest named;
        named.profile_dir = dir.string();
        ProfileChoice forced = findProfile(a100, named);
        QVERIFY(forced.profile);
        QVERIFY(forced.explicit_request);
        QCOMPARE(forced.notes.size(), std::size_t {1});
        QVERIFY2(forced.notes[0].find("because you named it") != std::string::npos, forced.notes[0].c_str());

        // re_profile: not used; the profiler command carries the directory (and only flags the profiler takes).
        ProfileRequest again;
        again.re_profile = true;
        ProfileChoice re = findProfile(h100, again);
        QVERIFY(!re.profile);
        QCOMPARE(re.profiler_command, "shardscape-profile --out " + dir.string());
        QVERIFY(re.notes[0].find("re_profile is set") != std::string::npos);
        again.parallel_profile = false;
        QCOMPARE(findProfile(h100, again).profiler_command, "shardscape-profile --out " + dir.string());

        // use_profile off: the datasheet, with no profiler command, and the log says why.
        ProfileRequest off;
        off.use_profile = false;
        ProfileChoice datasheetOnly = findProfile(h100, off);
        QVERIFY(!datasheetOnly.profile);
        QVERIFY(datasheetOnly.profiler_command.empty());
        QCOMPARE(datasheetOnly.notes, std::vector<std::string> {"use_profile is off: costs come from the datasheet"});

        // Corrupt: reported with the reason and ignored.
        writeFile((dir / kProfileFileName).string(), "{\"format\": \"shardscape.profile/1\"");
        ProfileChoice corrupt = findProfile(h100, {});
        QVERIFY(!corrupt.profile);
        QCOMPARE(corrupt.state, ProfileState::Corrupt);
        QVERIFY2(corrupt.notes[0].find("ignoring the profile") != std::string::npos, corrupt.notes[0].c_str());

        // The cost source the planner builds follows the same decision.
        saveProfile(dir / kProfileFileName, sampleProfile());
        const auto chosen = chooseCostSource(loadCluster("h100-sxm"), {}, {});
        QVERIFY(chosen.source->name().starts_with("profile:nvidia-h100-80gb-hbm3"));
        QCOMPARE(chooseCostSource(loadCluster("a100-80g"), {}, {}).source->name(), std::string("datasheet"));
    }

    void relativeXdgIsIgnored()
    {
        ScopedEnv xdg("XDG_CACHE_HOME", "relative/cache");
        ScopedEnv home("HOME", "/home/someone");
        QVERIFY(profileCacheRoot() == std::filesystem::path("/home/someone/.cache/shardscape"));
    }

    void summaryPerKind()
    {
        const auto summary = summarizeProfile(sampleProfile());
        QCOMPARE(summary.size(), std::size_t {5});
        QCOMPARE(summary[0].kind, std::string("matmul"));
        QCOMPARE(summary[0].lines.size(), std::size_t {1});
        QVERIFY2(summary[0].lines[0].starts_with("bf16: 3 shapes"), summary[0].lines[0].c_str());
        QVERIFY(summary[4].lines.empty()); // no send_recv rows
        QVERIFY2(summary[3].lines[0].find("bus bandwidth up to 366.7 GB/s") != std::string::npos,
                 summary[3].lines[0].c_str());
    }
};

QTEST_APPLESS_MAIN(TestProfile)
#include "tst_profile.moc"
