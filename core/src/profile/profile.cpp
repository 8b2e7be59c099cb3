// SPDX-License-Identifier: MIT
// The profile file: strict reading (format first, then checksum, then every key) and atomic writing.
#include "shardscape/profile/profile.h"

#include "shardscape/support/atomic_file.h"
#include "shardscape/support/error.h"
#include "shardscape/support/json_fields.h"
#include "shardscape/support/json_file.h"
#include "shardscape/support/strings.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <limits>
#include <nlohmann/json.hpp>
#include <system_error>

namespace shardscape {

namespace {

constexpr std::int64_t kMaxInt = std::numeric_limits<std::int64_t>::max();
// Far beyond any real buffer or GEMM, small enough that products of sizes stay finite doubles.
constexpr double kMaxQuantity = 1e30;

/** A finite number > 0; `integral` also requires a whole number (sizes in bytes). */
double positive(JsonFields& f, std::string_view key, bool integral = false)
{
    const auto* value = f.find(key);
    if (!value)
        f.fail(key, "required field is missing");
    if (!value->is_number())
        f.fail(key, cat("expected a number > 0, got ", describeJson(*value)));
    const double d = value->get<double>();
    if (!std::isfinite(d) || d <= 0 || d > kMaxQuantity)
        f.fail(key, cat("expected a finite number > 0, got ", describeJson(*value)));
    if (integral && d != std::floor(d))
        f.fail(key, cat("expected a whole number of bytes, got ", describeJson(*value)));
    return d;
}

double optPositive(JsonFields& f, std::string_view key, bool integral = false)
{
    return f.has(key) ? positive(f, key, integral) : (f.find(key), 0.0);
}

DType dtypeField(JsonFields& f, std::string_view key)
{
    const std::string name = f.string(key);
    const auto dtype = parseDType(name);
    if (!dtype)
        f.fail(key, cat("unknown dtype '", name, "'"), "use bf16, f16, f32, tf32, fp8, f64 or i8");
    return *dtype;
}

std::string oneOf(JsonFields& f, std::string_view key, const std::vector<std::string>& allowed)
{
    const std::string value = f.string(key);
    if (std::find(allowed.begin(), allowed.end(), value) == allowed.end())
        f.fail(key, cat("unknown op '", value, "'"), cat("use one of: ", join(allowed)));
    return value;
}

/** Runs `read` on each element of the array `key` as a strict object. */
template<typename Row, typename Read>
std::vector<Row> rows(JsonFields& top, std::string_view key, std::string_view origin, Read read)
{
    std::vector<Row> out;
    const auto& array = top.array(key, false);
    out.reserve(array.size());
    for (std::size_t i = 0; i < array.size(); ++i) {
        JsonFields f(array[i], std::string(origin), cat(key, "[", i, "]"));
        out.push_back(read(f));
        f.checkNoUnknownKeys();
    }
    return out;
}

ProfileDevice readDevice(JsonFields& top, std::string_view origin)
{
    JsonFields f(top.object("device"), std::string(origin), "device");
    ProfileDevice d;
    d.name = f.string("name");
    if (d.name.empty())
        f.fail("name", "must not be empty");
    d.count = f.optInteger("count", 1, 1 << 20).value_or(0);
    d.memory_bytes = optPositive(f, "memory_bytes", true);
    d.runtime_reserve_bytes = optPositive(f, "runtime_reserve_bytes", true);
    d.hbm_copy_bytes_per_s = optPositive(f, "hbm_copy_bytes_per_s");
    d.sm_count = f.optInteger("sm_count", 1, 1 << 20).value_or(0);
    d.compute_capability = f.optString("compute_capability").value_or("");
    d.driver_version = f.optString("driver_version").value_or("");
    d.runtime_version = f.optString("runtime_version").value_or("");
    f.checkNoUnknownKeys();
    return d;
}

std::uint64_t fnv1a64(std::string_view text)
{
    std::uint64_t hash = 0xcbf29ce484222325ull;
    for (const char c : text) {
        hash ^= static_cast<unsigned char>(c);
        hash *= 0x100000001b3ull;
    }
    return hash;
}

/** Whole numbers (sizes in bytes) as JSON integers, so the file reads as it was measured. */
nlohmann::json number(double value)
{
    if (value == std::floor(value) && std::fabs(value) < 9e15)
        return static_cast<std::int64_t>(value);
    return value;
}

void putIf(nlohmann::json& object, const char* key, double value)
{
    if (value > 0)
        object[key] = number(value);
}

void putIf(nlohmann::json& object, const char* key, std::int64_t value)
{
    if (value > 0)
        object[key] = value;
}

void putIf(nlohmann::json& object, const char* key, const std::string& value)
{
    if (!value.empty())
        object[key] = value;
}

nlohmann::json calibrationJson(const ProfileCalibration& c)
{
    nlohmann::json runs = nlohmann::json::array();
    for (const auto& r : c.runs) {
        nlohmann::json row = {{"log", r.log},
                              {"framework", r.framework},
                              {"config", r.config},
                              {"measured_step_s", r.measured_step_s},
                              {"predicted_step_s", r.predicted_step_s},
                              {"calibrated_step_s", r.calibrated_step_s}};
        if (r.measured_peak_bytes > 0) {
            row["measured_peak_bytes"] = number(r.measured_peak_bytes);
            row["peak_kind"] = r.peak_kind;
        }
        runs.push_back(std::move(row));
    }
    return {{"matmul_time_scale", c.matmul_time_scale},
            {"attention_time_scale", c.attention_time_scale},
            {"memory_time_scale", c.memory_time_scale},
            {"collective_time_scale", c.collective_time_scale},
            {"kernel_floor_s", c.kernel_floor_s},
            {"memory_offset_bytes", number(c.memory_offset_bytes)},
            {"created_utc", c.created_utc},
            {"runs", std::move(runs)}};
}

ProfileCalibration readCalibration(JsonFields& top, std::string_view origin)
{
    JsonFields f(top.object("calibration"), std::string(origin), "calibration");
    ProfileCalibration c;
    // A fitted scale outside [1/20, 20] is not a calibration but a different machine or a broken log.
    const auto scale = [&](std::string_view key) { return f.number(key, kMinCalibrationScale, kMaxCalibrationScale); };
    c.matmul_time_scale = scale("matmul_time_scale");
    c.attention_time_scale = scale("attention_time_scale");
    c.memory_time_scale = scale("memory_time_scale");
    c.collective_time_scale = scale("collective_time_scale");
    c.kernel_floor_s = f.optNumber("kernel_floor_s", 0, kMaxKernelFloorSeconds).value_or(0);
    c.memory_offset_bytes = f.number("memory_offset_bytes", -kMaxCalibrationOffsetBytes, kMaxCalibrationOffsetBytes);
    c.created_utc = f.string("created_utc");
    c.runs = rows<CalibrationRun>(f, "runs", origin, [](JsonFields& r) {
        CalibrationRun run;
        run.log = r.string("log");
        run.framework = r.string("framework");
        run.config = r.string("config");
        run.measured_step_s = positive(r, "measured_step_s");
        run.predicted_step_s = positive(r, "predicted_step_s");
        run.calibrated_step_s = positive(r, "calibrated_step_s");
        run.measured_peak_bytes = optPositive(r, "measured_peak_bytes", true);
        if (run.measured_peak_bytes > 0) {
            run.peak_kind = r.string("peak_kind");
            if (run.peak_kind != "reserved" && run.peak_kind != "allocated")
                r.fail("peak_kind", cat("unknown kind '", run.peak_kind, "'"), "use reserved or allocated");
        }
        return run;
    });
    f.checkNoUnknownKeys();
    return c;
}

nlohmann::json unvalidatedJson(const Profile& p)
{
    nlohmann::json device = {{"name", p.device.name}};
    putIf(device, "count", p.device.count);
    putIf(device, "memory_bytes", p.device.memory_bytes);
    putIf(device, "runtime_reserve_bytes", p.device.runtime_reserve_bytes);
    putIf(device, "hbm_copy_bytes_per_s", p.device.hbm_copy_bytes_per_s);
    putIf(device, "sm_count", p.device.sm_count);
    putIf(device, "compute_capability", p.device.compute_capability);
    putIf(device, "driver_version", p.device.driver_version);
    putIf(device, "runtime_version", p.device.runtime_version);

    nlohmann::json matmul = nlohmann::json::array();
    for (const auto& r : p.matmul) {
        nlohmann::json row = {{"dtype", dtypeName(r.dtype)}, {"m", r.m}, {"n", r.n}, {"k", r.k}, {"time_s", r.time_s}};
        putIf(row, "source", r.source);
        matmul.push_back(std::move(row));
    }
    nlohmann::json attention = nlohmann::json::array();
    for (const auto& r : p.attention) {
        nlohmann::json row
            = {{"dtype", dtypeName(r.dtype)}, {"batch", r.batch},   {"heads", r.heads}, {"seq", r.seq},
               {"head_dim", r.head_dim},      {"causal", r.causal}, {"flops", r.flops}, {"time_s", r.time_s}};
        putIf(row, "source", r.source);
        attention.push_back(std::move(row));
    }
    nlohmann::json memory = nlohmann::json::array();
    for (const auto& r : p.memory_ops)
        memory.push_back(
            {{"op", r.op}, {"dtype", dtypeName(r.dtype)}, {"bytes", number(r.bytes)}, {"time_s", r.time_s}});
    nlohmann::json collectives = nlohmann::json::array();
    for (const auto& r : p.collectives) {
        nlohmann::json row = {{"op", r.op},
                              {"bytes", number(r.bytes)},
                              {"ranks", r.ranks},
                              {"ranks_per_node", r.ranks_per_node},
                              {"dtype", dtypeName(r.dtype)},
                              {"time_s", r.time_s}};
        putIf(row, "busbw_gb_per_s", r.busbw_gb_per_s);
        putIf(row, "source", r.source);
        collectives.push_back(std::move(row));
    }
    nlohmann::json doc = {
        {"format", kProfileFormat},        {"created_utc", p.created_utc},         {"tool", p.tool},
        {"device", std::move(device)},     {"matmul", std::move(matmul)},          {"attention", std::move(attention)},
        {"memory_ops", std::move(memory)}, {"collectives", std::move(collectives)}};
    if (p.calibration)
        doc["calibration"] = calibrationJson(*p.calibration);
    return doc;
}

/** Everything after the format and checksum checks. */
Profile readFields(const nlohmann::json& doc, std::string_view origin)
{
    JsonFields top(doc, std::string(origin));
    top.ignore({"format", "checksum"});
    Profile p;
    p.created_utc = top.string("created_utc");
    p.tool = top.string("tool");
    p.device = readDevice(top, origin);
    p.matmul = rows<MatmulRow>(top, "matmul", origin, [](JsonFields& f) {
        MatmulRow r;
        r.dtype = dtypeField(f, "dtype");
        r.m = f.integer("m", 1, kMaxInt);
        r.n = f.integer("n", 1, kMaxInt);
        r.k = f.integer("k", 1, kMaxInt);
        if (!std::isfinite(r.flops()) || r.flops() > kMaxQuantity)
            f.fail("m", "m x n x k is too large");
        r.time_s = positive(f, "time_s");
        r.source = f.optString("source").value_or("");
        return r;
    });
    p.attention = rows<AttentionRow>(top, "attention", origin, [](JsonFields& f) {
        AttentionRow r;
        r.dtype = dtypeField(f, "dtype");
        r.batch = f.integer("batch", 1, kMaxInt);
        r.heads = f.integer("heads", 1, kMaxInt);
        r.seq = f.integer("seq", 1, kMaxInt);
        r.head_dim = f.integer("head_dim", 1, kMaxInt);
        const auto* causal = f.find("causal");
        if (!causal)
            f.fail("causal", "required field is missing");
        r.causal = f.boolean("causal", true);
        r.flops = positive(f, "flops");
        // FORMAT.md fixes the count (unmasked); another convention would silently halve or double every lookup.
        const double expected = 4.0 * static_cast<double>(r.batch) * static_cast<double>(r.heads)
            * static_cast<double>(r.seq) * static_cast<double>(r.seq) * static_cast<double>(r.head_dim);
        if (std::fabs(r.flops - expected) > 1e-6 * expected)
            f.fail("flops", cat("is ", r.flops, " but 4*batch*heads*seq*seq*head_dim = ", expected),
                   "flops is the unmasked count, also for causal rows");
        r.time_s = positive(f, "time_s");
        r.source = f.optString("source").value_or("");
        return r;
    });
    p.memory_ops = rows<MemoryOpRow>(top, "memory_ops", origin, [](JsonFields& f) {
        MemoryOpRow r;
        r.op = oneOf(f, "op", profileMemoryOps());
        r.dtype = dtypeField(f, "dtype");
        r.bytes = positive(f, "bytes", true);
        r.time_s = positive(f, "time_s");
        return r;
    });
    p.collectives = rows<CollectiveRow>(top, "collectives", origin, [](JsonFields& f) {
        CollectiveRow r;
        r.op = oneOf(f, "op", profileCollectiveOps());
        r.bytes = positive(f, "bytes", true);
        r.ranks = static_cast<int>(f.integer("ranks", 2, 1 << 24));
        r.ranks_per_node = static_cast<int>(f.integer("ranks_per_node", 1, r.ranks));
        r.dtype = dtypeField(f, "dtype");
        r.time_s = positive(f, "time_s");
        r.busbw_gb_per_s = optPositive(f, "busbw_gb_per_s");
        r.source = f.optString("source").value_or("");
        return r;
    });
    if (top.has("calibration"))
        p.calibration = readCalibration(top, origin);
    top.checkNoUnknownKeys();
    return p;
}

ProfileStatus failed(ProfileState state, const std::filesystem::path& file, std::string reason)
{
    ProfileStatus status;
    status.state = state;
    status.file = file;
    status.reason = std::move(reason);
    return status;
}

} // namespace

const std::vector<std::string>& profileMemoryOps()
{
    static const std::vector<std::string> ops {"copy", "elementwise", "rmsnorm", "layernorm", "softmax"};
    return ops;
}

const std::vector<std::string>& profileCollectiveOps()
{
    static const std::vector<std::string> ops {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv"};
    return ops;
}

std::string_view profileStateName(ProfileState state)
{
    switch (state) {
    case ProfileState::Missing:
        return "missing";
    case ProfileState::Corrupt:
        return "corrupt";
    case ProfileState::WrongVersion:
        return "wrong version";
    case ProfileState::Valid:
        break;
    }
    return "valid";
}

std::string profileChecksum(const nlohmann::json& doc)
{
    nlohmann::json copy = doc;
    if (copy.is_object())
        copy.erase("checksum");
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fnv1a64(copy.dump())));
    return cat("fnv1a64:", hex);
}

Profile profileFromJson(const nlohmann::json& doc, std::string_view origin)
{
    if (!doc.is_object())
        throw InputError(cat(origin, ": not a profile (expected a JSON object)"));
    const auto format = doc.find("format");
    if (format == doc.end() || !format->is_string())
        throw InputError(cat(origin, ": not a profile (no \"format\" string)"),
                         cat("a profile starts with \"format\": \"", kProfileFormat, "\""));
    if (format->get<std::string>() != kProfileFormat)
        throw InputError(
            cat(origin, ": format is '", format->get<std::string>(), "', this build reads '", kProfileFormat, "'"),
            "re-run shardscape-profile to measure the device again");
    const auto checksum = doc.find("checksum");
    if (checksum == doc.end() || !checksum->is_string())
        throw InputError(cat(origin, ": no \"checksum\" string"), "profiles are written by shardscape-profile");
    const std::string expected = profileChecksum(doc);
    if (checksum->get<std::string>() != expected)
        throw InputError(cat(origin, ": checksum mismatch (file says ", checksum->get<std::string>(),
                             ", contents give ", expected, "): edited or truncated"),
                         "re-run shardscape-profile or restore the file");
    return readFields(doc, origin);
}

ProfileStatus inspectProfile(const std::filesystem::path& file)
{
    std::error_code ec;
    if (!std::filesystem::exists(file, ec))
        return failed(ProfileState::Missing, file, cat(file.string(), ": no profile there"));
    std::string text;
    nlohmann::json doc;
    try {
        text = readTextFile(file, kMaxProfileBytes);
        doc = parseJson(text, file.string());
    } catch (const InputError& error) {
        return failed(ProfileState::Corrupt, file, error.message());
    }
    if (doc.is_object()) {
        const auto format = doc.find("format");
        if (format != doc.end() && format->is_string() && format->get<std::string>() != kProfileFormat)
            return failed(ProfileState::WrongVersion, file,
                          cat(file.string(), ": format is '", format->get<std::string>(), "', this build reads '",
                              kProfileFormat, "'"));
    }
    try {
        auto profile = std::make_shared<const Profile>(profileFromJson(doc, file.string()));
        ProfileStatus status;
        status.state = ProfileState::Valid;
        status.file = file;
        status.profile = std::move(profile);
        return status;
    } catch (const InputError& error) {
        return failed(ProfileState::Corrupt, file, error.message());
    }
}

Profile loadProfile(const std::filesystem::path& file)
{
    ProfileStatus status = inspectProfile(file);
    if (status.state != ProfileState::Valid)
        throw InputError(
            status.reason,
            status.state == ProfileState::Missing
                ? "run shardscape-profile, or import nccl-tests logs with shardscape-cli profile import-nccl"
                : "re-run shardscape-profile to measure the device again");
    return *status.profile;
}

nlohmann::json toJson(const Profile& profile)
{
    nlohmann::json doc = unvalidatedJson(profile);
    // Write only what we would read back: validate through the reader (checksum supplied for it).
    nlohmann::json check = doc;
    check["checksum"] = profileChecksum(doc);
    readFields(check, "profile to save");
    return doc;
}

void saveProfile(const std::filesystem::path& file, const Profile& profile)
{
    nlohmann::json doc = toJson(profile);
    doc["checksum"] = profileChecksum(doc);
    const auto dir = file.parent_path();
    if (!dir.empty()) {
        std::error_code ec;
        std::filesystem::create_directories(dir, ec);
        if (ec)
            throw InputError(cat(dir.string(), ": cannot create the profile directory (", ec.message(), ")"),
                             "choose another --profile-dir");
    }
    writeFileAtomic(file, doc.dump(1) + "\n");
}

std::string deviceSlug(std::string_view deviceName)
{
    std::string slug;
    slug.reserve(deviceName.size());
    for (const char c : deviceName)
        slug += c == ' ' || c == '/' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return slug;
}

std::string utcNow()
{
    const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm utc {};
    gmtime_r(&now, &utc);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
    return text;
}

} // namespace shardscape
