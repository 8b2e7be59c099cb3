// SPDX-License-Identifier: MIT
#include "test_helpers.h"

#include "shardscape/hardware/cluster.h"
#include "shardscape/support/embedded.h"
#include "shardscape/support/error.h"
#include "shardscape/support/json_file.h"

#include <QTemporaryDir>
#include <QTest>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

using namespace shardscape;
using nlohmann::json;

using shardscape::test::inputErrorOf;
using shardscape::test::writeFile;

namespace {

const std::string kSourceDir = SHARDSCAPE_SOURCE_DIR;

/** The InputError message (cause and hint) that `call` throws, or a marker saying what went wrong instead. */
/** A small valid device object; the bad-input tests break one field of it at a time. */
json validDevice()
{
    return json::parse(R"({
        "schema": "shardscape.device/1",
        "name": "test-gpu",
        "display_name": "Test GPU",
        "memory_gib": 80,
        "hbm_bandwidth_gb_s": 3350,
        "tdp_watts": 700,
        "peak_tflops": {"bf16": 989, "f32": 67},
        "gpus_per_node": 8,
        "intra_node": {"kind": "nvlink4", "bandwidth_gb_s": 450, "latency_us": 3},
        "inter_node": {"kind": "infiniband-ndr", "bandwidth_gb_s": 50, "latency_us": 5},
        "source": "made up",
        "notes": ["one", "two"]
    })");
}

json validClusterFile()
{
    return json {{"schema", "shardscape.cluster/1"}, {"device", "h100-sxm"}, {"nodes", 4}, {"gpus_per_node", 8}};
}

/** Exact equality of everything the cost model reads. */
void compareClusters(const Cluster& a, const Cluster& b)
{
    QCOMPARE(a.device.name, b.device.name);
    QCOMPARE(a.device.display_name, b.device.display_name);
    QVERIFY(a.device.memory_bytes == b.device.memory_bytes);
    QVERIFY(a.device.hbm_bandwidth == b.device.hbm_bandwidth);
    QVERIFY(a.device.tdp_watts == b.device.tdp_watts);
    QVERIFY(a.device.peak_flops == b.device.peak_flops);
    QCOMPARE(a.device.default_gpus_per_node, b.device.default_gpus_per_node);
    for (const auto& [x, y] : {std::pair {&a.device.intra_node, &b.device.intra_node},
                               std::pair {&a.device.inter_node, &b.device.inter_node}}) {
        QCOMPARE(x->kind, y->kind);
        QVERIFY(x->bandwidth == y->bandwidth);
        QVERIFY(x->latency == y->latency);
        QVERIFY(x->efficiency == y->efficiency);
    }
    QCOMPARE(a.nodes, b.nodes);
    QCOMPARE(a.gpus_per_node, b.gpus_per_node);
    QCOMPARE(a.fingerprint(), b.fingerprint());
}

} // namespace

class TestHardware : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void presetNamesAreSorted()
    {
        const std::vector<std::string> expected {"a100-40g", "a100-80g", "b200", "h100-pcie", "h100-sxm",
                                                 "h200",     "h800",     "l40s", "mi300x",    "rtx4090"};
        QCOMPARE(devicePresetNames(), expected);
    }

    void presetDatasheetNumbers_data()
    {
        QTest::addColumn<QString>("name");
        QTest::addColumn<double>("bf16Tflops");
        QTest::addColumn<double>("fp8Tflops");
        QTest::addColumn<double>("f32Tflops");
        QTest::addColumn<double>("memoryGiB");
        QTest::addColumn<double>("hbmGBs");
        QTest::addColumn<double>("intraGBs");
        QTest::addColumn<double>("interGBs");
        QTest::addColumn<double>("tdpWatts");

        QTest::newRow("a100-40g") << "a100-40g" << 312.0 << 0.0 << 19.5 << 40.0 << 1555.0 << 300.0 << 25.0 << 400.0;
        QTest::newRow("a100-80g") << "a100-80g" << 312.0 << 0.0 << 19.5 << 80.0 << 2039.0 << 300.0 << 25.0 << 400.0;
        QTest::newRow("h100-sxm") << "h100-sxm" << 989.0 << 1979.0 << 67.0 << 80.0 << 3350.0 << 450.0 << 50.0 << 700.0;
        QTest::newRow("h100-pcie") << "h100-pcie" << 756.0 << 1513.0 << 51.0 << 80.0 << 2000.0 << 64.0 << 50.0 << 350.0;
        QTest::newRow("h200") << "h200" << 989.0 << 1979.0 << 67.0 << 141.0 << 4800.0 << 450.0 << 50.0 << 700.0;
        QTest::newRow("b200") << "b200" << 2250.0 << 4500.0 << 75.0 << 180.0 << 8000.0 << 900.0 << 50.0 << 1000.0;
        QTest::newRow("l40s") << "l40s" << 362.0 << 733.0 << 91.6 << 48.0 << 864.0 << 32.0 << 25.0 << 350.0;
        QTest::newRow("rtx4090") << "rtx4090" << 165.2 << 330.3 << 82.6 << 24.0 << 1008.0 << 32.0 << 25.0 << 450.0;
        QTest::newRow("mi300x") << "mi300x" << 1307.4 << 2614.9 << 163.4 << 192.0 << 5300.0 << 448.0 << 50.0 << 750.0;
    }

    void presetDatasheetNumbers()
    {
        QFETCH(QString, name);
        QFETCH(double, bf16Tflops);
        QFETCH(double, fp8Tflops);
        QFETCH(double, f32Tflops);
        QFETCH(double, memoryGiB);
        QFETCH(double, hbmGBs);
        QFETCH(double, intraGBs);
        QFETCH(double, interGBs);
        QFETCH(double, tdpWatts);

        const DeviceSpec device = devicePreset(name.toStdString());
        QCOMPARE(QString::fromStdString(device.name), name);
        QVERIFY(!device.display_name.empty());
        QCOMPARE(device.peak(DType::BF16), bf16Tflops * 1e12);
        QCOMPARE(device.peak(DType::F16), bf16Tflops * 1e12);
        QCOMPARE(device.peak(DType::FP8), fp8Tflops * 1e12);
        QCOMPARE(device.peak(DType::F32), f32Tflops * 1e12);
        QVERIFY(device.peak(DType::TF32) > device.peak(DType::F32) || name == "rtx4090");
        QCOMPARE(device.memory_bytes, memoryGiB * 1024.0 * 1024.0 * 1024.0);
        QCOMPARE(device.hbm_bandwidth, hbmGBs * 1e9);
        QCOMPARE(device.intra_node.bandwidth, intraGBs * 1e9);
        QCOMPARE(device.inter_node.bandwidth, interGBs * 1e9);
        QCOMPARE(device.tdp_watts, tdpWatts);
        QCOMPARE(device.default_gpus_per_node, 8);
        // Latencies are microseconds: a few, never seconds or nanoseconds by a unit slip.
        for (const Link* link : {&device.intra_node, &device.inter_node}) {
            QVERIFY(!link->kind.empty());
            QVERIFY(link->latency >= 1e-6 && link->latency <= 10e-6);
        }
    }

    void presetSpotChecks()
    {
        // The numbers the brief pins, spelled out once more in bytes and FLOP/s.
        const auto h100 = devicePreset("h100-sxm");
        QCOMPARE(h100.peak(DType::BF16), 989e12);
        QCOMPARE(h100.memory_bytes, 80.0 * (1ull << 30));
        QCOMPARE(h100.hbm_bandwidth, 3.35e12);
        QCOMPARE(h100.intra_node.kind, std::string("nvlink4"));
        QCOMPARE(h100.intra_node.latency, 3e-6);
        const auto a100 = devicePreset("a100-80g");
        QCOMPARE(a100.peak(DType::BF16), 312e12);
        QCOMPARE(a100.hbm_bandwidth, 2.039e12);
        QCOMPARE(a100.peak(DType::FP8), 0.0);
        const auto mi300x = devicePreset("mi300x");
        QCOMPARE(mi300x.peak(DType::BF16), 1307.4e12);
        QCOMPARE(mi300x.memory_bytes, 192.0 * (1ull << 30));
    }

    void presetNamesAreCaseInsensitive()
    {
        QCOMPARE(devicePreset("H100-SXM").name, std::string("h100-sxm"));
        QCOMPARE(devicePreset("Mi300X").name, std::string("mi300x"));
        QCOMPARE(loadCluster("A100-80G").device.name, std::string("a100-80g"));
    }

    void presetFilesCarrySources()
    {
        QCOMPARE(embeddedDevicePresets().size(), devicePresetNames().size());
        for (const auto& file : embeddedDevicePresets()) {
            const json doc = json::parse(file.text);
            QVERIFY2(doc.contains("source") && doc["source"].is_string() && !doc["source"].get<std::string>().empty(),
                     std::string(file.name).c_str());
            QVERIFY2(doc.contains("notes") && doc["notes"].is_array() && !doc["notes"].empty(),
                     std::string(file.name).c_str());
            // The file on disk is the one compiled in.
            const std::string path = kSourceDir + "/resources/devices/" + std::string(file.name);
            const DeviceSpec onDisk = parseDeviceSpec(readJsonFile(path), path);
            Cluster a;
            a.device = onDisk;
            Cluster b;
            b.device = devicePreset(onDisk.name);
            compareClusters(a, b);
        }
    }

    void unknownPresetSuggestsNearest()
    {
        try {
            devicePreset("h100");
            QFAIL("no exception");
        } catch (const InputError& error) {
            const std::string what = error.what();
            QVERIFY2(what.find("unknown device preset 'h100'") != std::string::npos, what.c_str());
            for (const char* nearest : {"h100-sxm", "h100-pcie", "h200"})
                QVERIFY2(what.find(nearest) != std::string::npos, what.c_str());
            QVERIFY2(error.hint().find("shardscape-cli clusters") != std::string::npos, error.hint().c_str());
        }
        const std::string message = inputErrorOf([] { loadCluster("a100"); });
        QVERIFY2(message.find("a100-40g") != std::string::npos, message.c_str());
        QVERIFY2(message.find("a100-80g") != std::string::npos, message.c_str());
    }

    void presetClusterShape()
    {
        const Cluster one = loadCluster("h100-sxm");
        QCOMPARE(one.nodes, 1);
        QCOMPARE(one.gpus_per_node, 8);
        QCOMPARE(one.worldSize(), 8);
        const Cluster overridden = loadCluster("a100-80g", 2, 4);
        QCOMPARE(overridden.nodes, 2);
        QCOMPARE(overridden.gpus_per_node, 4);
        QCOMPARE(overridden.worldSize(), 8);
        QCOMPARE(loadCluster("l40s", 0, 2).nodes, 1);
        QCOMPARE(loadCluster("l40s", 0, 2).gpus_per_node, 2);
        QCOMPARE(loadCluster("l40s", 16).worldSize(), 128);
    }

    void exampleClusterFile()
    {
        const std::string path = kSourceDir + "/resources/clusters/example-h100-4x8.json";
        const Cluster cluster = loadCluster(path);
        QCOMPARE(cluster.device.name, std::string("h100-sxm"));
        QCOMPARE(cluster.nodes, 4);
        QCOMPARE(cluster.gpus_per_node, 8);
        QCOMPARE(cluster.worldSize(), 32);
        // Its inter_node block restates the preset, so it is the same cluster as the preset with overrides.
        compareClusters(cluster, loadCluster("h100-sxm", 4, 8));

        const Cluster overridden = loadCluster(path, 2, 0);
        QCOMPARE(overridden.nodes, 2);
        QCOMPARE(overridden.gpus_per_node, 8);
        QCOMPARE(loadCluster(path, 0, 4).nodes, 4);
        QCOMPARE(loadCluster(path, 0, 4).gpus_per_node, 4);
    }

    void clusterFileForms()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const std::string root = dir.path().toStdString();

        // Device by preset name, partial link override, nodes and gpus_per_node defaulted.
        writeFile(root + "/partial.json",
                  R"({"schema": "shardscape.cluster/1", "device": "h100-sxm",
                      "inter_node": {"bandwidth_gb_s": 25}, "notes": "200G NICs"})");
        const Cluster partial = loadCluster(root + "/partial.json");
        QCOMPARE(partial.nodes, 1);
        QCOMPARE(partial.gpus_per_node, 8);
        QCOMPARE(partial.device.inter_node.bandwidth, 25e9);
        QCOMPARE(partial.device.inter_node.kind, std::string("infiniband-ndr"));
        QCOMPARE(partial.device.inter_node.latency, 5e-6);
        QCOMPARE(partial.device.intra_node.bandwidth, 450e9);
        QVERIFY(partial.fingerprint() != loadCluster("h100-sxm").fingerprint());

        // A fabric measured below its line rate (NCCL over Omni-Path): the link's efficiency, kept on save.
        writeFile(root + "/measured.json",
                  R"({"schema": "shardscape.cluster/1", "device": "a100-80g", "nodes": 4,
                      "inter_node": {"kind": "omni-path", "bandwidth_gb_s": 6.25, "efficiency": 0.295}})");
        const Cluster measured = loadCluster(root + "/measured.json");
        QCOMPARE(measured.device.inter_node.efficiency, 0.295);
        QCOMPARE(measured.device.intra_node.efficiency, 0.0); // not stated: the cost model's default
        QCOMPARE(measuredLinksNote(measured), std::string("inter-node links at a measured 29.5% of their line rate"));
        QCOMPARE(measuredLinksNote(loadCluster("a100-80g")), std::string());
        QCOMPARE(toJson(measured)["device"]["inter_node"]["efficiency"].get<double>(), 0.295);
        QVERIFY(!toJson(measured)["device"]["intra_node"].contains("efficiency"));
        writeFile(root + "/measured-saved.json", toJson(measured).dump());
        compareClusters(measured, loadCluster(root + "/measured-saved.json"));

        // Device as a full object (schema may be left out inside a cluster file).
        json inlineDevice = validDevice();
        inlineDevice.erase("schema");
        json file {{"schema", "shardscape.cluster/1"}, {"device", inlineDevice}, {"nodes", 3}};
        writeFile(root + "/inline.json", file.dump());
        const Cluster inlined = loadCluster(root + "/inline.json");
        QCOMPARE(inlined.device.name, std::string("test-gpu"));
        QCOMPARE(inlined.nodes, 3);
        QCOMPARE(inlined.gpus_per_node, 8);

        // Device as a file next to the cluster file.
        writeFile(root + "/my-gpu.json", validDevice().dump(2));
        writeFile(root + "/by-path.json",
                  R"({"schema": "shardscape.cluster/1", "device": "my-gpu.json", "nodes": 2, "gpus_per_node": 4})");
        const Cluster byPath = loadCluster(root + "/by-path.json");
        QCOMPARE(byPath.device.name, std::string("test-gpu"));
        QCOMPARE(byPath.worldSize(), 8);

        // A device file given as --cluster: one node of its default size.
        const Cluster deviceOnly = loadCluster(root + "/my-gpu.json");
        QCOMPARE(deviceOnly.device.name, std::string("test-gpu"));
        QCOMPARE(deviceOnly.nodes, 1);
        QCOMPARE(deviceOnly.gpus_per_node, 8);

        // A file without .json that exists is read as a file (when it is no preset name).
        writeFile(root + "/cluster.conf", validClusterFile().dump());
        QCOMPARE(loadCluster(root + "/cluster.conf").worldSize(), 32);
    }

    void roundTrip_data()
    {
        QTest::addColumn<QString>("spec");
        QTest::addColumn<int>("nodes");
        QTest::addColumn<int>("gpusPerNode");
        for (const auto& name : devicePresetNames())
            QTest::newRow(name.c_str()) << QString::fromStdString(name) << 3 << 0;
        QTest::newRow("example file") << QString::fromStdString(kSourceDir
                                                                + "/resources/clusters/example-h100-4x8.json")
                                      << 0 << 2;
        QTest::newRow("measured fabric file")
            << QString::fromStdString(kSourceDir + "/resources/clusters/example-a100-omnipath-48x8.json") << 0 << 0;
    }

    void roundTrip()
    {
        QFETCH(QString, spec);
        QFETCH(int, nodes);
        QFETCH(int, gpusPerNode);
        const Cluster original = loadCluster(spec.toStdString(), nodes, gpusPerNode);
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const std::string path = dir.path().toStdString() + "/saved.json";
        writeFile(path, toJson(original).dump(2));
        const Cluster reloaded = loadCluster(path);
        compareClusters(original, reloaded);
        // Saving the reloaded cluster gives the same text.
        QCOMPARE(toJson(reloaded).dump(), toJson(original).dump());
    }

    void roundTripOddNumbers()
    {
        // Values whose unit conversions are not exact in binary must still reload bit for bit.
        json device = validDevice();
        device["memory_gib"] = 79.65234375;
        device["hbm_bandwidth_gb_s"] = 3352.123456789;
        device["tdp_watts"] = 699.9;
        device["peak_tflops"] = {{"bf16", 989.4}, {"tf32", 1.0 / 3.0}, {"fp8", 0.1}, {"f32", 0}};
        device["intra_node"]["latency_us"] = 2.7;
        device["inter_node"]["latency_us"] = 0.1 + 0.2;
        device["inter_node"]["bandwidth_gb_s"] = 12.3456789012345;
        Cluster original;
        original.device = parseDeviceSpec(device, "odd");
        original.nodes = 7;
        original.gpus_per_node = 3;
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const std::string path = dir.path().toStdString() + "/odd.json";
        writeFile(path, toJson(original).dump());
        compareClusters(original, loadCluster(path));
        QCOMPARE(original.device.peak(DType::F32), 0.0);
    }

    void fingerprint()
    {
        const Cluster base = loadCluster("h100-sxm", 4, 8);
        const std::string print = base.fingerprint();
        QVERIFY2(print.rfind("cluster:", 0) == 0, print.c_str());
        QCOMPARE(print.size(), std::string("cluster:").size() + 16);
        QCOMPARE(loadCluster("h100-sxm", 4, 8).fingerprint(), print);

        auto changed = [&](auto&& edit) {
            Cluster copy = base;
            edit(copy);
            return copy.fingerprint() != print;
        };
        QVERIFY(changed([](Cluster& c) { c.nodes = 5; }));
        QVERIFY(changed([](Cluster& c) { c.gpus_per_node = 4; }));
        QVERIFY(changed([](Cluster& c) { c.device.name = "h200"; }));
        QVERIFY(changed([](Cluster& c) { c.device.memory_bytes += 1; }));
        QVERIFY(changed([](Cluster& c) { c.device.hbm_bandwidth *= 1.01; }));
        QVERIFY(changed([](Cluster& c) { c.device.peak_flops[static_cast<std::size_t>(DType::BF16)] *= 0.9; }));
        QVERIFY(changed([](Cluster& c) { c.device.peak_flops[static_cast<std::size_t>(DType::FP8)] = 0; }));
        QVERIFY(changed([](Cluster& c) { c.device.intra_node.bandwidth = 400e9; }));
        QVERIFY(changed([](Cluster& c) { c.device.intra_node.latency = 4e-6; }));
        QVERIFY(changed([](Cluster& c) { c.device.inter_node.bandwidth = 25e9; }));
        QVERIFY(changed([](Cluster& c) { c.device.inter_node.latency = 6e-6; }));
        QVERIFY(changed([](Cluster& c) { c.device.inter_node.efficiency = 0.3; }));
        // What the cost model does not read does not matter.
        QVERIFY(!changed([](Cluster& c) { c.device.display_name = "renamed"; }));
        // Different presets differ.
        QVERIFY(loadCluster("h100-sxm").fingerprint() != loadCluster("h200").fingerprint());
    }

    void badDevice_data()
    {
        QTest::addColumn<QString>("pointer"); // JSON pointer into validDevice()
        QTest::addColumn<QString>("value"); // JSON text to put there, or "<remove>"
        QTest::addColumn<QString>("expected"); // must appear in the message

        QTest::newRow("no schema") << "/schema"
                                   << "<remove>"
                                   << "missing required key 'schema'";
        QTest::newRow("wrong schema") << "/schema"
                                      << R"("shardscape.device/2")"
                                      << "unsupported schema";
        QTest::newRow("schema not string") << "/schema"
                                           << "1"
                                           << "'schema' must be a string";
        QTest::newRow("no name") << "/name"
                                 << "<remove>"
                                 << "'name'";
        QTest::newRow("empty name") << "/name"
                                    << R"("")"
                                    << "'name' must not be empty";
        QTest::newRow("name not string") << "/name"
                                         << "7"
                                         << "'name' must be a string";
        QTest::newRow("unknown key") << "/memroy_gib"
                                     << "80"
                                     << "unknown key 'memroy_gib'";
        QTest::newRow("unknown key hint") << "/memroy_gib"
                                          << "80"
                                          << "did you mean 'memory_gib'";
        QTest::newRow("unknown key lists keys") << "/colour"
                                                << "1"
                                                << "allowed keys: schema, name";
        QTest::newRow("no memory") << "/memory_gib"
                                   << "<remove>"
                                   << "missing required key 'memory_gib'";
        QTest::newRow("negative memory") << "/memory_gib"
                                         << "-80"
                                         << "'memory_gib' is -80";
        QTest::newRow("zero memory") << "/memory_gib"
                                     << "0"
                                     << "must be greater than 0";
        QTest::newRow("huge memory") << "/memory_gib"
                                     << "1e9"
                                     << "largest accepted";
        QTest::newRow("memory as string") << "/memory_gib"
                                          << R"("80")"
                                          << "'memory_gib' must be a number (got string)";
        QTest::newRow("memory as bool") << "/memory_gib"
                                        << "true"
                                        << "'memory_gib' must be a number";
        QTest::newRow("memory null") << "/memory_gib"
                                     << "null"
                                     << "'memory_gib' must be a number";
        QTest::newRow("zero hbm") << "/hbm_bandwidth_gb_s"
                                  << "0"
                                  << "'hbm_bandwidth_gb_s'";
        QTest::newRow("huge hbm") << "/hbm_bandwidth_gb_s"
                                  << "2e6"
                                  << "'hbm_bandwidth_gb_s' is 2e+06";
        QTest::newRow("zero tdp") << "/tdp_watts"
                                  << "0"
                                  << "'tdp_watts'";
        QTest::newRow("no flops") << "/peak_tflops"
                                  << "<remove>"
                                  << "'peak_tflops'";
        QTest::newRow("flops not object") << "/peak_tflops"
                                          << "989"
                                          << "'peak_tflops' must be a JSON object";
        QTest::newRow("flops all zero") << "/peak_tflops"
                                        << R"({"bf16": 0, "fp8": 0})"
                                        << "no dtype";
        QTest::newRow("flops empty") << "/peak_tflops"
                                     << "{}"
                                     << "no dtype";
        QTest::newRow("negative flops") << "/peak_tflops/bf16"
                                        << "-1"
                                        << "'peak_tflops.bf16' is -1";
        QTest::newRow("huge flops") << "/peak_tflops/bf16"
                                    << "5e7"
                                    << "'peak_tflops.bf16'";
        QTest::newRow("flops string") << "/peak_tflops/bf16"
                                      << R"("989")"
                                      << "'peak_tflops.bf16' must be a number";
        QTest::newRow("unknown dtype") << "/peak_tflops/bf32"
                                       << "1"
                                       << "unknown dtype 'peak_tflops.bf32'";
        QTest::newRow("repeated dtype") << "/peak_tflops/bfloat16"
                                        << "1"
                                        << "repeats dtype 'bf16'";
        QTest::newRow("gpus zero") << "/gpus_per_node"
                                   << "0"
                                   << "'gpus_per_node' is 0";
        QTest::newRow("gpus huge") << "/gpus_per_node"
                                   << "2048"
                                   << "between 1 and 1024";
        QTest::newRow("gpus fraction") << "/gpus_per_node"
                                       << "8.5"
                                       << "whole number";
        QTest::newRow("fused attention zero") << "/fused_attention_speedup"
                                              << "0"
                                              << "'fused_attention_speedup' is 0; it must be greater than 0";
        QTest::newRow("fused attention huge") << "/fused_attention_speedup"
                                              << "16"
                                              << "the largest accepted value is 10";
        QTest::newRow("gpus string") << "/gpus_per_node"
                                     << R"("8")"
                                     << "'gpus_per_node' must be a number";
        QTest::newRow("no intra") << "/intra_node"
                                  << "<remove>"
                                  << "missing required key 'intra_node'";
        QTest::newRow("intra not object") << "/intra_node"
                                          << "450"
                                          << "'intra_node' must be a JSON object";
        QTest::newRow("intra no kind") << "/intra_node/kind"
                                       << "<remove>"
                                       << "'intra_node.kind'";
        QTest::newRow("intra kind number") << "/intra_node/kind"
                                           << "4"
                                           << "'intra_node.kind' must be a string";
        QTest::newRow("intra zero bw") << "/intra_node/bandwidth_gb_s"
                                       << "0"
                                       << "'intra_node.bandwidth_gb_s' is 0";
        QTest::newRow("intra huge bw") << "/intra_node/bandwidth_gb_s"
                                       << "1e7"
                                       << "'intra_node.bandwidth_gb_s'";
        QTest::newRow("intra no latency") << "/intra_node/latency_us"
                                          << "<remove>"
                                          << "'intra_node.latency_us'";
        QTest::newRow("intra negative latency") << "/intra_node/latency_us"
                                                << "-3"
                                                << "'intra_node.latency_us' is -3";
        QTest::newRow("intra unknown key") << "/intra_node/speed"
                                           << "1"
                                           << "unknown key 'intra_node.speed'";
        QTest::newRow("inter bw string") << "/inter_node/bandwidth_gb_s"
                                         << R"("50")"
                                         << "'inter_node.bandwidth_gb_s' must be a number";
        QTest::newRow("inter efficiency zero") << "/inter_node/efficiency"
                                               << "0"
                                               << "'inter_node.efficiency' is 0";
        QTest::newRow("inter efficiency over 1") << "/inter_node/efficiency"
                                                 << "1.5"
                                                 << "'inter_node.efficiency'";
        QTest::newRow("inter latency huge") << "/inter_node/latency_us"
                                            << "1e9"
                                            << "'inter_node.latency_us'";
        QTest::newRow("notes number") << "/notes"
                                      << "5"
                                      << "'notes' must be a string or an array";
        QTest::newRow("notes of numbers") << "/notes"
                                          << "[1]"
                                          << "'notes' must hold only strings";
        QTest::newRow("source number") << "/source"
                                       << "5"
                                       << "'source' must be a string";
        QTest::newRow("display name array") << "/display_name"
                                            << "[]"
                                            << "'display_name' must be a string";
    }

    void badDevice()
    {
        QFETCH(QString, pointer);
        QFETCH(QString, value);
        QFETCH(QString, expected);
        json device = validDevice();
        const json::json_pointer where(pointer.toStdString());
        if (value == "<remove>")
            device[where.parent_pointer()].erase(where.back());
        else
            device[where] = json::parse(value.toStdString());
        const std::string message = inputErrorOf([&] { parseDeviceSpec(device, "my-device.json"); });
        QVERIFY2(message.find(expected.toStdString()) != std::string::npos, message.c_str());
        QVERIFY2(message.rfind("my-device.json: ", 0) == 0, message.c_str());
    }

    void badDeviceNotObject()
    {
        for (const json& doc : {json::array(), json(5), json("h100-sxm"), json()}) {
            const std::string message = inputErrorOf([&] { parseDeviceSpec(doc, "x.json"); });
            QVERIFY2(message.find("must be a JSON object") != std::string::npos, message.c_str());
        }
    }

    void nonFiniteNumbers()
    {
        // JSON text cannot spell NaN; a document built in code (or an overflowing literal) can hold one.
        for (const double bad : {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
                                 -std::numeric_limits<double>::infinity()}) {
            for (const char* pointer : {"/memory_gib", "/peak_tflops/bf16", "/intra_node/latency_us"}) {
                json device = validDevice();
                device[json::json_pointer(pointer)] = bad;
                const std::string message = inputErrorOf([&] { parseDeviceSpec(device, "nan.json"); });
                QVERIFY2(message.find("finite") != std::string::npos, message.c_str());
            }
        }
        // An overflowing literal in a file.
        QTemporaryDir dir;
        const std::string path = dir.path().toStdString() + "/overflow.json";
        std::string text = validDevice().dump();
        text.replace(text.find("\"memory_gib\":80"), std::string("\"memory_gib\":80").size(), "\"memory_gib\":1e999");
        writeFile(path, text);
        const std::string message = inputErrorOf([&] { loadCluster(path); });
        QVERIFY2(message.find("overflow.json") != std::string::npos, message.c_str());
    }

    void badClusterFile_data()
    {
        QTest::addColumn<QString>("text"); // file contents
        QTest::addColumn<QString>("expected");

        QTest::newRow("malformed") << R"({"schema": "shardscape.cluster/1", "device": })"
                                   << "malformed JSON";
        QTest::newRow("empty") << "   \n"
                               << "empty";
        QTest::newRow("array") << "[1, 2]"
                               << "must be a JSON object";
        QTest::newRow("no schema") << R"({"device": "h100-sxm"})"
                                   << "missing required key 'schema'";
        QTest::newRow("wrong schema") << R"({"schema": "shardscape.cluster/9", "device": "h100-sxm"})"
                                      << "unsupported schema 'shardscape.cluster/9'";
        QTest::newRow("unknown key") << R"({"schema": "shardscape.cluster/1", "device": "h100-sxm", "nodez": 2})"
                                     << "unknown key 'nodez'";
        QTest::newRow("no device") << R"({"schema": "shardscape.cluster/1", "nodes": 2})"
                                   << "missing required key 'device'";
        QTest::newRow("unknown device") << R"({"schema": "shardscape.cluster/1", "device": "h100"})"
                                        << "h100-sxm";
        QTest::newRow("device number") << R"({"schema": "shardscape.cluster/1", "device": 100})"
                                       << "'device' must be a preset name";
        QTest::newRow("device empty") << R"({"schema": "shardscape.cluster/1", "device": ""})"
                                      << "'device' must not be empty";
        QTest::newRow("device file missing") << R"({"schema": "shardscape.cluster/1", "device": "nope.json"})"
                                             << "no such file";
        QTest::newRow("inline device bad")
            << R"({"schema": "shardscape.cluster/1", "device": {"name": "x", "memory_gib": -1}})"
            << "'device.memory_gib' is -1";
        QTest::newRow("inline device unknown key")
            << R"({"schema": "shardscape.cluster/1", "device": {"name": "x", "hbm": 1}})"
            << "unknown key 'device.hbm'";
        QTest::newRow("zero nodes") << R"({"schema": "shardscape.cluster/1", "device": "h100-sxm", "nodes": 0})"
                                    << "'nodes' is 0";
        QTest::newRow("negative nodes") << R"({"schema": "shardscape.cluster/1", "device": "h100-sxm", "nodes": -2})"
                                        << "'nodes' is -2";
        QTest::newRow("too many nodes")
            << R"({"schema": "shardscape.cluster/1", "device": "h100-sxm", "nodes": 100001})"
            << "between 1 and 100000";
        QTest::newRow("fraction nodes") << R"({"schema": "shardscape.cluster/1", "device": "h100-sxm", "nodes": 1.5})"
                                        << "whole number";
        QTest::newRow("string nodes") << R"({"schema": "shardscape.cluster/1", "device": "h100-sxm", "nodes": "4"})"
                                      << "'nodes' must be a number";
        QTest::newRow("zero gpus") << R"({"schema": "shardscape.cluster/1", "device": "h100-sxm", "gpus_per_node": 0})"
                                   << "'gpus_per_node'";
        QTest::newRow("too many gpus")
            << R"({"schema": "shardscape.cluster/1", "device": "h100-sxm", "gpus_per_node": 1025})"
            << "between 1 and 1024";
        QTest::newRow("world too big")
            << R"({"schema": "shardscape.cluster/1", "device": "h100-sxm", "nodes": 100000, "gpus_per_node": 1024})"
            << "world size";
        QTest::newRow("link override bad")
            << R"({"schema": "shardscape.cluster/1", "device": "h100-sxm", "inter_node": {"bandwidth_gb_s": -5}})"
            << "'inter_node.bandwidth_gb_s' is -5";
        QTest::newRow("link override key")
            << R"({"schema": "shardscape.cluster/1", "device": "h100-sxm", "intra_node": {"gbps": 5}})"
            << "unknown key 'intra_node.gbps'";
        QTest::newRow("link override type")
            << R"({"schema": "shardscape.cluster/1", "device": "h100-sxm", "intra_node": 5})"
            << "'intra_node' must be a JSON object";
        QTest::newRow("name not string") << R"({"schema": "shardscape.cluster/1", "device": "h100-sxm", "name": 5})"
                                         << "'name' must be a string";
        QTest::newRow("bad device file as cluster")
            << R"({"schema": "shardscape.device/1", "name": "x", "memory_gib": 1})"
            << "missing required key";
    }

    void badClusterFile()
    {
        QFETCH(QString, text);
        QFETCH(QString, expected);
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const std::string path = dir.path().toStdString() + "/bad-cluster.json";
        writeFile(path, text.toStdString());
        const std::string message = inputErrorOf([&] { loadCluster(path); });
        QVERIFY2(message.find(expected.toStdString()) != std::string::npos, message.c_str());
        QVERIFY2(message.find("bad-cluster.json") != std::string::npos
                     || message.find("nope.json") != std::string::npos,
                 message.c_str());
    }

    void badClusterSpec_data()
    {
        QTest::addColumn<QString>("spec");
        QTest::addColumn<int>("nodes");
        QTest::addColumn<int>("gpusPerNode");
        QTest::addColumn<QString>("expected");

        QTest::newRow("empty") << "" << 0 << 0 << "no cluster given";
        QTest::newRow("blank") << "  " << 0 << 0 << "no cluster given";
        QTest::newRow("unknown preset") << "h100" << 0 << 0 << "unknown device preset 'h100'";
        QTest::newRow("missing file") << "/nonexistent/dir/cluster.json" << 0 << 0 << "no such file";
        QTest::newRow("missing relative file") << "no-such-cluster.json" << 0 << 0 << "no such file";
        QTest::newRow("directory") << QString::fromStdString(kSourceDir + "/resources/devices/") << 0 << 0
                                   << "is a directory";
        QTest::newRow("negative nodes") << "h100-sxm" << -1 << 0 << "negative";
        QTest::newRow("negative gpus") << "h100-sxm" << 0 << -8 << "negative";
        QTest::newRow("too many nodes") << "h100-sxm" << 100001 << 0 << "nodes is 100001";
        QTest::newRow("too many gpus") << "h100-sxm" << 0 << 1025 << "gpus_per_node is 1025";
        QTest::newRow("world too big") << "h100-sxm" << 100000 << 1024 << "world size";
        QTest::newRow("world just too big") << "h100-sxm" << 1025 << 1024 << "1049600";
    }

    void badClusterSpec()
    {
        QFETCH(QString, spec);
        QFETCH(int, nodes);
        QFETCH(int, gpusPerNode);
        QFETCH(QString, expected);
        const std::string message = inputErrorOf([&] { loadCluster(spec.toStdString(), nodes, gpusPerNode); });
        QVERIFY2(message.find(expected.toStdString()) != std::string::npos, message.c_str());
    }

    void largestAcceptedShapes()
    {
        QCOMPARE(loadCluster("h100-sxm", 1024, 1024).worldSize(), 1 << 20);
        QCOMPARE(loadCluster("h100-sxm", 100000, 8).worldSize(), 800000);
        QCOMPARE(loadCluster("h100-sxm", 1, 1024).worldSize(), 1024);
    }
};

QTEST_APPLESS_MAIN(TestHardware)
#include "tst_hardware.moc"
