// SPDX-License-Identifier: MIT
//
// Device presets, links and clusters.
//
// Device file format ("shardscape.device/1"; resources/devices/*.json are compiled into the binary)
// ---------------------------------------------------------------------------------------------
//   {
//     "schema": "shardscape.device/1",          required; this exact tag
//     "name": "h100-sxm",                        required; preset key, matched case-insensitively
//     "display_name": "NVIDIA H100 SXM5 80GB",   optional; defaults to name
//     "memory_gib": 80,                          required; device memory in GiB (2^30 bytes), <= 102400 (100 TiB)
//     "hbm_bandwidth_gb_s": 3350,                required; device memory bandwidth, GB/s (1e9 bytes/s), <= 1e6
//     "tdp_watts": 700,                          optional; board power, W
//     "peak_tflops": {"bf16": 989, "f16": 989,   required; dense (no sparsity) peak TFLOP/s (1e12 FLOP/s) per dtype:
//                     "tf32": 494, "f32": 67,    f64 f32 tf32 f16 bf16 fp8 i64 i32 i8 u8 bool (or aliases such as
//                     "fp8": 1979},              "fp16", "bfloat16"); 0 or absent = unsupported; at least one > 0
//     "gpus_per_node": 8,                        optional (default 8); 1 to 1024; a preset's node size
//     "intra_node": {                            required; GPU-to-GPU link inside a node
//       "kind": "nvlink4",                         free text: nvlink3/4/5, pcie4/5, xgmi, ...
//       "bandwidth_gb_s": 450,                     GB/s per GPU per DIRECTION (NVIDIA's bidirectional figure / 2)
//       "latency_us": 3},                          per-message latency (alpha), microseconds, <= 1e6
//     "inter_node": {"kind": "infiniband-ndr",   required; the per-GPU share of the node's scale-out network,
//                    "bandwidth_gb_s": 50,       same keys (NIC Gb/s / 8, e.g. NDR 400 Gb/s = 50 GB/s)
//                    "latency_us": 5},
//     "source": "NVIDIA H100 ... datasheet",     optional; where the numbers come from (presets always say)
//     "notes": ["...", "..."]                    optional; a string or an array of strings: assumptions
//   }
// Links may carry their own "notes", and an "efficiency" (0 < x <= 1): the fraction of bandwidth_gb_s that NCCL
// collectives were measured to reach on that fabric, which replaces the cost model's default for the link. Across
// nodes that is an all-reduce's nccl-tests busbw over the node's line rate (gpus_per_node x bandwidth_gb_s).
// Every number must be finite and > 0 (peak_tflops entries >= 0). Unknown keys, wrong types, missing required keys
// and absurd values are errors that name the file and the key.
//
// Cluster file format ("shardscape.cluster/1"), what --cluster FILE.json reads
// ----------------------------------------------------------------------------
//   {
//     "schema": "shardscape.cluster/1",          required
//     "name": "...", "notes": ...                optional, for people
//     "device": "h100-sxm",                      required; a preset name, a device .json path (relative to this
//                                                file), or a full device object (its "schema" may be left out)
//     "nodes": 4,                                optional (default 1); 1 to 100000
//     "gpus_per_node": 8,                        optional (default: the device's gpus_per_node); 1 to 1024
//     "intra_node": {"bandwidth_gb_s": 400},     optional; overrides some or all of the device's link fields
//     "inter_node": {"kind": "roce-200g", "bandwidth_gb_s": 25, "latency_us": 6}
//   }
// World size (nodes x gpus_per_node) is at most 1,048,576. --nodes/--gpus-per-node override the file. A device
// file given as --cluster means one node of the device's gpus_per_node. toJson() writes this format with the device
// as a full object, so a saved cluster reloads identically.
#include "shardscape/hardware/cluster.h"

#include "shardscape/support/embedded.h"
#include "shardscape/support/error.h"
#include "shardscape/support/json_file.h"
#include "shardscape/support/strings.h"
#include "shardscape/support/units.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <system_error>

namespace shardscape {

namespace {

using nlohmann::json;

constexpr std::string_view kDeviceSchema = "shardscape.device/1";
constexpr std::string_view kClusterSchema = "shardscape.cluster/1";

constexpr double kMaxMemoryGiB = 100.0 * 1024.0; // 100 TiB
constexpr double kMaxBandwidthGBs = 1e6;
constexpr double kMaxLatencyUs = 1e6; // one second per message
constexpr double kMaxTflops = 1e6; // one EFLOP/s per device
constexpr double kMaxTdpWatts = 1e5;
constexpr int kMaxGpusPerNode = 1024;
constexpr int kMaxNodes = 100000;
constexpr long long kMaxWorldSize = 1 << 20;
constexpr int kDefaultGpusPerNode = 8;
constexpr std::size_t kMaxNameLength = 200;

constexpr std::size_t kDTypeCount = std::tuple_size_v<decltype(DeviceSpec::peak_flops)>;
static_assert(static_cast<std::size_t>(DType::Bool) + 1 == kDTypeCount, "peak_flops must cover every DType");

const std::vector<std::string> kDeviceKeys {"schema",
                                            "name",
                                            "display_name",
                                            "memory_gib",
                                            "hbm_bandwidth_gb_s",
                                            "tdp_watts",
                                            "peak_tflops",
                                            "gpus_per_node",
                                            "intra_node",
                                            "inter_node",
                                            "source",
                                            "notes",
                                            "matmul_efficiency",
                                            "attention_efficiency",
                                            "fused_attention_speedup",
                                            "fp8_gemm_any_layout"};
const std::vector<std::string> kLinkKeys {"kind", "bandwidth_gb_s", "latency_us", "efficiency", "notes"};
const std::vector<std::string> kClusterKeys {"schema", "name",          "notes",      "source",    "device",
                                             "nodes",  "gpus_per_node", "intra_node", "inter_node"};

const char* const kPresetHint = "run `shardscape-cli clusters` to list the device presets, or pass a cluster "
                                "JSON file";

/** Where a value sits, for messages: the file (or preset) and the key path inside it. */
struct Where
{
    std::string_view origin;
    std::string prefix; ///< "" or "device." / "intra_node." ...

    std::string key(std::string_view name) const { return cat("'", prefix, name, "'"); }
    /** The object itself: "'intra_node'" for prefix "intra_node.", `topLevel` for the document. */
    std::string self(std::string_view topLevel) const
    {
        return prefix.empty() ? std::string(topLevel) : cat("'", prefix.substr(0, prefix.size() - 1), "'");
    }
    Where nested(std::string_view name) const { return {origin, cat(prefix, name, ".")}; }
};

[[noreturn]] void fail(const Where& where, const std::string& what, std::string hint = {})
{
    throw InputError(cat(where.origin, ": ", what), std::move(hint));
}

void requireObject(const json& value, const Where& where, std::string_view what)
{
    if (!value.is_object())
        fail(where, cat(where.self(what), " must be a JSON object (got ", value.type_name(), ")"));
}

void checkKeys(const json& object, const std::vector<std::string>& allowed, const Where& where)
{
    for (const auto& item : object.items()) {
        if (std::find(allowed.begin(), allowed.end(), item.key()) != allowed.end())
            continue;
        const auto nearest = nearestNames(item.key(), allowed, 1);
        std::string hint = nearest.empty() ? std::string() : cat("did you mean '", nearest.front(), "'? ");
        fail(where, cat("unknown key ", where.key(item.key())), cat(hint, "allowed keys: ", join(allowed)));
    }
}

const json* member(const json& object, std::string_view key)
{
    const auto it = object.find(key);
    return it == object.end() ? nullptr : &*it;
}

const json& require(const json& object, std::string_view key, const Where& where)
{
    const json* value = member(object, key);
    if (!value)
        fail(where, cat("missing required key ", where.key(key)));
    return *value;
}

double toNumber(const json& value, std::string_view key, const Where& where)
{
    if (!value.is_number())
        fail(where, cat(where.key(key), " must be a number (got ", value.type_name(), ")"));
    const double number = value.get<double>();
    if (!std::isfinite(number))
        fail(where, cat(where.key(key), " is not a finite number"));
    return number;
}

/** A number in (0, max]; `limitText` states the limit with its unit for the message. */
double positive(const json& value, std::string_view key, const Where& where, double max, std::string_view limitText)
{
    const double number = toNumber(value, key, where);
    if (!(number > 0))
        fail(where, cat(where.key(key), " is ", number, "; it must be greater than 0"));
    if (number > max)
        fail(where, cat(where.key(key), " is ", number, "; the largest accepted value is ", limitText),
             "is the unit right? see the device file format");
    return number;
}

int wholeNumber(const json& value, std::string_view key, const Where& where, int min, int max)
{
    const double number = toNumber(value, key, where);
    if (std::floor(number) != number)
        fail(where, cat(where.key(key), " is ", number, "; it must be a whole number"));
    if (number < min || number > max)
        fail(where, cat(where.key(key), " is ", number, "; it must be between ", min, " and ", max));
    return static_cast<int>(number);
}

/** A string; unless `freeText`, also non-blank and short (names, kinds, tags). */
std::string text(const json& value, std::string_view key, const Where& where, bool freeText = false)
{
    if (!value.is_string())
        fail(where, cat(where.key(key), " must be a string (got ", value.type_name(), ")"));
    auto result = value.get<std::string>();
    if (freeText)
        return result;
    if (result.find_first_not_of(" \t\r\n") == std::string::npos)
        fail(where, cat(where.key(key), " must not be empty"));
    if (result.size() > kMaxNameLength)
        fail(where, cat(where.key(key), " is ", result.size(), " characters long; at most ", kMaxNameLength));
    return result;
}

/** "notes": free text for people, a string or an array of strings; checked, then ignored. */
void checkNotes(const json& object, const Where& where)
{
    const json* notes = member(object, "notes");
    if (!notes || notes->is_string())
        return;
    if (!notes->is_array())
        fail(where, cat(where.key("notes"), " must be a string or an array of strings (got ", notes->type_name(), ")"));
    for (const auto& note : *notes)
        if (!note.is_string())
            fail(where, cat(where.key("notes"), " must hold only strings (found ", note.type_name(), ")"));
}

void checkSchema(const json& object, std::string_view expected, const Where& where, bool required)
{
    const json* schema = member(object, "schema");
    if (!schema) {
        if (required)
            fail(where, cat("missing required key ", where.key("schema")), cat("expected \"", expected, "\""));
        return;
    }
    const auto tag = text(*schema, "schema", where);
    if (tag != expected)
        fail(where, cat("unsupported schema '", tag, "'"), cat("this build reads \"", expected, "\""));
}

/** Reads the link keys present in `object` over `link`; with `complete` every field must be given. */
void readLink(const json& object, const Where& where, bool complete, Link& link)
{
    requireObject(object, where, "link");
    checkKeys(object, kLinkKeys, where);
    checkNotes(object, where);
    if (const json* kind = complete ? &require(object, "kind", where) : member(object, "kind"))
        link.kind = text(*kind, "kind", where);
    if (const json* bandwidth = complete ? &require(object, "bandwidth_gb_s", where) : member(object, "bandwidth_gb_s"))
        link.bandwidth = positive(*bandwidth, "bandwidth_gb_s", where, kMaxBandwidthGBs, "1e6 GB/s") * units::kGB;
    if (const json* latency = complete ? &require(object, "latency_us", where) : member(object, "latency_us"))
        link.latency = positive(*latency, "latency_us", where, kMaxLatencyUs, "1e6 us (one second)") / 1e6;
    if (const json* efficiency = member(object, "efficiency"))
        link.efficiency = positive(*efficiency, "efficiency", where, 1, "1 (the whole bandwidth)");
}

void readPeakFlops(const json& object, const Where& where, DeviceSpec& device)
{
    requireObject(object, where, "peak_tflops");
    std::vector<std::string> dtypeNames;
    for (std::size_t i = 0; i < kDTypeCount; ++i)
        dtypeNames.emplace_back(dtypeName(static_cast<DType>(i)));
    std::array<bool, kDTypeCount> seen {};
    bool anyPositive = false;
    for (const auto& item : object.items()) {
        const auto dtype = parseDType(toLower(item.key()));
        if (!dtype)
            fail(where, cat("unknown dtype ", where.key(item.key())), cat("dtypes: ", join(dtypeNames)));
        const auto index = static_cast<std::size_t>(*dtype);
        if (seen[index])
            fail(where, cat(where.key(item.key()), " repeats dtype '", dtypeName(*dtype), "'"));
        seen[index] = true;
        const double tflops = toNumber(item.value(), item.key(), where);
        if (tflops < 0)
            fail(where, cat(where.key(item.key()), " is ", tflops, "; it must be 0 (unsupported) or more"));
        if (tflops > kMaxTflops)
            fail(where, cat(where.key(item.key()), " is ", tflops, " TFLOP/s; the largest accepted is 1e6"),
                 "peak_tflops is in TFLOP/s (1e12 FLOP/s)");
        device.peak_flops[index] = tflops * units::kTera;
        anyPositive = anyPositive || tflops > 0;
    }
    if (!anyPositive)
        fail(where, cat(where.self("peak_tflops"), " gives no dtype a FLOP/s rate above 0"), "add e.g. \"bf16\": 989");
}

DeviceSpec readDevice(const json& doc, const Where& where, bool schemaRequired)
{
    requireObject(doc, where, "a device");
    checkKeys(doc, kDeviceKeys, where);
    checkSchema(doc, kDeviceSchema, where, schemaRequired);
    checkNotes(doc, where);

    DeviceSpec device;
    device.name = text(require(doc, "name", where), "name", where);
    device.display_name = device.name;
    if (const json* display = member(doc, "display_name"))
        device.display_name = text(*display, "display_name", where);
    if (const json* source = member(doc, "source"))
        text(*source, "source", where, true);
    device.memory_bytes
        = positive(require(doc, "memory_gib", where), "memory_gib", where, kMaxMemoryGiB, "102400 GiB (100 TiB)")
        * units::kGiB;
    device.hbm_bandwidth
        = positive(require(doc, "hbm_bandwidth_gb_s", where), "hbm_bandwidth_gb_s", where, kMaxBandwidthGBs, "1e6 GB/s")
        * units::kGB;
    if (const json* tdp = member(doc, "tdp_watts"))
        device.tdp_watts = positive(*tdp, "tdp_watts", where, kMaxTdpWatts, "1e5 W");
    readPeakFlops(require(doc, "peak_tflops", where), where.nested("peak_tflops"), device);
    device.default_gpus_per_node = kDefaultGpusPerNode;
    if (const json* gpus = member(doc, "gpus_per_node"))
        device.default_gpus_per_node = wholeNumber(*gpus, "gpus_per_node", where, 1, kMaxGpusPerNode);
    readLink(require(doc, "intra_node", where), where.nested("intra_node"), true, device.intra_node);
    readLink(require(doc, "inter_node", where), where.nested("inter_node"), true, device.inter_node);
    // Optional measured efficiencies (fractions of the dense peak) that override the cost model's defaults.
    if (const json* matmul = member(doc, "matmul_efficiency"))
        device.matmul_efficiency = positive(*matmul, "matmul_efficiency", where, 1, "1 (a fraction of the peak)");
    if (const json* attention = member(doc, "attention_efficiency"))
        device.attention_efficiency
            = positive(*attention, "attention_efficiency", where, 1, "1 (a fraction of the peak)");
    if (const json* fused = member(doc, "fused_attention_speedup"))
        device.fused_attention_speedup
            = positive(*fused, "fused_attention_speedup", where, 10, "10 (a ratio to FlashAttention-2's speed)");
    if (const json* anyLayout = member(doc, "fp8_gemm_any_layout")) {
        if (!anyLayout->is_boolean())
            fail(where,
                 cat(where.key("fp8_gemm_any_layout"), " must be true or false (got ", anyLayout->type_name(), ")"));
        device.fp8_gemm_any_layout = anyLayout->get<bool>();
    }
    return device;
}

struct PresetTable
{
    std::map<std::string, DeviceSpec> byName; ///< lower-case name -> spec, sorted
    std::vector<std::string> names;
};

const PresetTable& presets()
{
    static const PresetTable table = [] {
        PresetTable result;
        for (const auto& file : embeddedDevicePresets()) {
            const std::string origin = cat("built-in preset ", file.name);
            DeviceSpec device;
            try {
                device = parseDeviceSpec(parseJson(file.text, origin), origin);
            } catch (const InputError& error) {
                // A broken built-in file is our bug, not the user's input.
                throw std::logic_error(error.message());
            }
            if (cat(device.name, ".json") != file.name)
                throw std::logic_error(cat(origin, ": name '", device.name, "' does not match the file name"));
            const std::string key = toLower(device.name);
            result.names.push_back(device.name);
            result.byName.emplace(key, std::move(device));
        }
        std::sort(result.names.begin(), result.names.end());
        return result;
    }();
    return table;
}

const DeviceSpec* findPreset(std::string_view name)
{
    const auto& table = presets();
    const auto it = table.byName.find(toLower(name));
    return it == table.byName.end() ? nullptr : &it->second;
}

/** readJsonFile, with the nlohmann errors it lets through (a number literal that overflows) made InputErrors. */
json readJson(const std::filesystem::path& path)
{
    try {
        return readJsonFile(path);
    } catch (const nlohmann::json::exception& error) {
        throw InputError(cat(path.string(), ": malformed JSON: ", error.what()), "fix the value it names");
    }
}

/** Device named by a cluster file's "device" string: a preset, or a device file relative to the cluster file. */
DeviceSpec namedDevice(const std::string& name, const Where& where, const std::filesystem::path& baseDir)
{
    if (endsWith(toLower(name), ".json")) {
        std::filesystem::path path(name);
        if (path.is_relative())
            path = baseDir / path;
        const auto doc = readJson(path);
        const std::string origin = path.string();
        return readDevice(doc, Where {origin, {}}, true);
    }
    try {
        return devicePreset(name);
    } catch (const InputError& error) {
        fail(where, cat(where.key("device"), ": ", error.what()), error.hint());
    }
}

void checkShape(const Cluster& cluster, std::string_view origin)
{
    const Where where {origin, {}};
    if (cluster.nodes < 1 || cluster.nodes > kMaxNodes)
        fail(where, cat("nodes is ", cluster.nodes, "; it must be between 1 and ", kMaxNodes));
    if (cluster.gpus_per_node < 1 || cluster.gpus_per_node > kMaxGpusPerNode)
        fail(where, cat("gpus_per_node is ", cluster.gpus_per_node, "; it must be between 1 and ", kMaxGpusPerNode));
    const long long world = static_cast<long long>(cluster.nodes) * cluster.gpus_per_node;
    if (world > kMaxWorldSize)
        fail(where,
             cat("world size ", cluster.nodes, " x ", cluster.gpus_per_node, " = ", world,
                 " GPUs is above the limit of ", kMaxWorldSize),
             "use fewer nodes or GPUs per node");
}

Cluster readClusterJson(const json& doc, std::string_view origin, const std::filesystem::path& baseDir)
{
    const Where where {origin, {}};
    requireObject(doc, where, "a cluster file");

    // A device file alone means one node of that device.
    if (const json* schema = member(doc, "schema");
        schema && schema->is_string() && schema->get<std::string>() == kDeviceSchema) {
        Cluster cluster;
        cluster.device = readDevice(doc, where, true);
        cluster.gpus_per_node = cluster.device.default_gpus_per_node;
        return cluster;
    }

    checkKeys(doc, kClusterKeys, where);
    checkSchema(doc, kClusterSchema, where, true);
    checkNotes(doc, where);
    if (const json* name = member(doc, "name"))
        text(*name, "name", where, true);
    if (const json* source = member(doc, "source"))
        text(*source, "source", where, true);

    Cluster cluster;
    const json& device = require(doc, "device", where);
    if (device.is_string())
        cluster.device = namedDevice(text(device, "device", where), where, baseDir);
    else if (device.is_object())
        cluster.device = readDevice(device, where.nested("device"), false);
    else
        fail(where,
             cat(where.key("device"), " must be a preset name, a device file name or a device object (got ",
                 device.type_name(), ")"));

    cluster.nodes = 1;
    if (const json* nodes = member(doc, "nodes"))
        cluster.nodes = wholeNumber(*nodes, "nodes", where, 1, kMaxNodes);
    cluster.gpus_per_node = cluster.device.default_gpus_per_node;
    if (const json* gpus = member(doc, "gpus_per_node"))
        cluster.gpus_per_node = wholeNumber(*gpus, "gpus_per_node", where, 1, kMaxGpusPerNode);
    if (const json* intra = member(doc, "intra_node"))
        readLink(*intra, where.nested("intra_node"), false, cluster.device.intra_node);
    if (const json* inter = member(doc, "inter_node"))
        readLink(*inter, where.nested("inter_node"), false, cluster.device.inter_node);
    return cluster;
}

/**
 * The value to write for `stored` in a file unit so that reading it back gives `stored` bit for bit:
 * `toStored` is the reader's conversion, `guess` the plain inverse (which can be one ulp off).
 */
template<typename ToStored> double fileValue(double stored, double guess, ToStored toStored)
{
    if (toStored(guess) == stored)
        return guess;
    double down = guess;
    double up = guess;
    for (int step = 0; step < 8; ++step) {
        down = std::nextafter(down, -std::numeric_limits<double>::infinity());
        up = std::nextafter(up, std::numeric_limits<double>::infinity());
        if (toStored(up) == stored)
            return up;
        if (toStored(down) == stored)
            return down;
    }
    return guess;
}

/** Whole numbers as JSON integers ("memory_gib": 80, not 80.0), others as doubles. */
json number(double value)
{
    if (std::floor(value) == value && std::fabs(value) < 9e15)
        return static_cast<std::int64_t>(value);
    return value;
}

json scaledDown(double stored, double scale)
{
    return number(fileValue(stored, stored / scale, [scale](double x) { return x * scale; }));
}

json linkJson(const Link& link)
{
    json doc {{"kind", link.kind},
              {"bandwidth_gb_s", scaledDown(link.bandwidth, units::kGB)},
              {"latency_us", number(fileValue(link.latency, link.latency * 1e6, [](double x) { return x / 1e6; }))}};
    if (link.efficiency > 0)
        doc["efficiency"] = number(link.efficiency);
    return doc;
}

json deviceJson(const DeviceSpec& device)
{
    json flops = json::object();
    for (std::size_t i = 0; i < kDTypeCount; ++i)
        if (device.peak_flops[i] > 0)
            flops[std::string(dtypeName(static_cast<DType>(i)))] = scaledDown(device.peak_flops[i], units::kTera);
    json doc {{"schema", kDeviceSchema},
              {"name", device.name},
              {"display_name", device.display_name},
              {"memory_gib", scaledDown(device.memory_bytes, units::kGiB)},
              {"hbm_bandwidth_gb_s", scaledDown(device.hbm_bandwidth, units::kGB)},
              {"peak_tflops", flops},
              {"gpus_per_node", device.default_gpus_per_node},
              {"intra_node", linkJson(device.intra_node)},
              {"inter_node", linkJson(device.inter_node)}};
    if (device.tdp_watts > 0)
        doc["tdp_watts"] = number(device.tdp_watts);
    if (device.matmul_efficiency > 0)
        doc["matmul_efficiency"] = number(device.matmul_efficiency);
    if (device.attention_efficiency > 0)
        doc["attention_efficiency"] = number(device.attention_efficiency);
    if (device.fused_attention_speedup > 0)
        doc["fused_attention_speedup"] = number(device.fused_attention_speedup);
    if (device.fp8_gemm_any_layout)
        doc["fp8_gemm_any_layout"] = true;
    return doc;
}

/** Shortest text that reads back as the same double; locale-independent. */
std::string exact(double value)
{
    std::array<char, 32> buffer {};
    const auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
    return std::string(buffer.data(), result.ptr);
}

std::uint64_t fnv1a64(std::string_view data)
{
    std::uint64_t hash = 0xcbf29ce484222325ull;
    for (const char c : data) {
        hash ^= static_cast<unsigned char>(c);
        hash *= 0x100000001b3ull;
    }
    return hash;
}

} // namespace

std::string measuredLinksNote(const Cluster& cluster)
{
    std::vector<std::string> notes;
    for (const auto& [name, link] :
         {std::pair {"intra-node", &cluster.device.intra_node}, std::pair {"inter-node", &cluster.device.inter_node}})
        if (link->efficiency > 0)
            notes.push_back(
                cat(name, " links at a measured ", fixed(100 * link->efficiency, 1), "% of their line rate"));
    return join(notes, "; ");
}

std::string Cluster::fingerprint() const
{
    // Everything the cost model reads, in a fixed order; bump "v1" when the meaning of a field changes.
    std::string canonical = cat("v1|device=", device.name, "|memory=", exact(device.memory_bytes),
                                "|hbm=", exact(device.hbm_bandwidth), "|flops=");
    for (std::size_t i = 0; i < kDTypeCount; ++i)
        canonical += cat(dtypeName(static_cast<DType>(i)), ":", exact(device.peak_flops[i]), ",");
    for (const auto* link : {&device.intra_node, &device.inter_node}) {
        canonical += cat("|link=", link->kind, ",", exact(link->bandwidth), ",", exact(link->latency));
        if (link->efficiency > 0) // only when measured, so that other links keep their fingerprints
            canonical += cat(",", exact(link->efficiency));
    }
    // Appended only when set, so devices without measured efficiencies keep their fingerprints.
    if (device.matmul_efficiency > 0 || device.attention_efficiency > 0)
        canonical += cat("|efficiency=", exact(device.matmul_efficiency), ",", exact(device.attention_efficiency));
    if (device.fused_attention_speedup > 0)
        canonical += cat("|fused_attention=", exact(device.fused_attention_speedup));
    if (device.fp8_gemm_any_layout)
        canonical += "|fp8_any_layout";
    canonical += cat("|nodes=", nodes, "|gpus_per_node=", gpus_per_node);

    const std::uint64_t hash = fnv1a64(canonical);
    std::array<char, 17> hex {};
    const auto result = std::to_chars(hex.data(), hex.data() + hex.size(), hash, 16);
    const std::string digits(hex.data(), result.ptr);
    return cat("cluster:", std::string(16 - digits.size(), '0'), digits);
}

std::vector<std::string> devicePresetNames()
{
    return presets().names;
}

DeviceSpec devicePreset(std::string_view name)
{
    if (const DeviceSpec* device = findPreset(name))
        return *device;
    const auto nearest = nearestNames(name, presets().names, 3);
    throw InputError(cat("unknown device preset '", name, "' (nearest: ", join(nearest), ")"), kPresetHint);
}

DeviceSpec parseDeviceSpec(const nlohmann::json& doc, std::string_view origin)
{
    return readDevice(doc, Where {origin, {}}, true);
}

Cluster loadCluster(const std::string& spec, int nodes, int gpusPerNode)
{
    if (spec.find_first_not_of(" \t\r\n") == std::string::npos)
        throw InputError("no cluster given", "name a device preset such as h100-sxm, or a cluster JSON file");
    if (nodes < 0)
        throw InputError(cat("node count ", nodes, " is negative"), "pass a node count of 1 or more");
    if (gpusPerNode < 0)
        throw InputError(cat("GPUs per node ", gpusPerNode, " is negative"), "pass a GPU count of 1 or more");

    // A preset name wins over a file of the same name in the working directory, unless it says ".json" or is a path.
    const bool looksLikeFile = endsWith(toLower(spec), ".json") || spec.find('/') != std::string::npos;
    std::error_code ec;
    const bool isFile = looksLikeFile || (!findPreset(spec) && std::filesystem::is_regular_file(spec, ec));

    Cluster cluster;
    if (isFile) {
        const std::filesystem::path path(spec);
        cluster = readClusterJson(readJson(path), spec, path.parent_path());
    } else {
        cluster.device = devicePreset(spec);
        cluster.nodes = 1;
        cluster.gpus_per_node = cluster.device.default_gpus_per_node;
    }
    if (nodes > 0)
        cluster.nodes = nodes;
    if (gpusPerNode > 0)
        cluster.gpus_per_node = gpusPerNode;
    checkShape(cluster, isFile ? spec : cat("cluster '", spec, "'"));
    return cluster;
}

Cluster clusterFromJson(const nlohmann::json& doc, std::string_view origin, const std::filesystem::path& baseDir)
{
    Cluster cluster = readClusterJson(doc, origin, baseDir);
    checkShape(cluster, origin);
    return cluster;
}

nlohmann::json toJson(const Cluster& cluster)
{
    return json {{"schema", kClusterSchema},
                 {"device", deviceJson(cluster.device)},
                 {"nodes", cluster.nodes},
                 {"gpus_per_node", cluster.gpus_per_node}};
}

} // namespace shardscape
