// SPDX-License-Identifier: MIT
#include "profile_db.h"

#include "checksum.h"
#include "errors.h"
#include "shardscape/support/json_nesting.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <sys/stat.h>
#include <unistd.h>

namespace shardscape::profiler {

namespace {

using nlohmann::json;

double positive(double value, const char* what)
{
    if (!std::isfinite(value) || value <= 0)
        throw std::invalid_argument(std::string("profile value '") + what + "' is " + std::to_string(value)
                                    + ", not a finite number > 0");
    return value;
}

std::int64_t positive(std::int64_t value, const char* what)
{
    if (value <= 0)
        throw std::invalid_argument(std::string("profile value '") + what + "' is " + std::to_string(value)
                                    + ", not > 0");
    return value;
}

json withoutChecksum(const json& doc)
{
    json copy = doc;
    copy.erase("checksum");
    return copy;
}

} // namespace

double AttentionResult::flops() const
{
    return 4.0 * static_cast<double>(batch) * static_cast<double>(heads) * static_cast<double>(seq)
        * static_cast<double>(seq) * static_cast<double>(headDim);
}

json profileJson(const ProfileDocument& doc)
{
    const DeviceInfo& d = doc.device;
    json device = {
        {"name", d.name},
        {"count", positive(std::int64_t(d.count), "device.count")},
        {"memory_bytes", positive(d.memoryBytes, "device.memory_bytes")},
        {"runtime_reserve_bytes", positive(d.runtimeReserveBytes, "device.runtime_reserve_bytes")},
        {"hbm_copy_bytes_per_s", positive(d.hbmCopyBytesPerSecond, "device.hbm_copy_bytes_per_s")},
        {"sm_count", positive(std::int64_t(d.smCount), "device.sm_count")},
        {"compute_capability", d.computeCapability},
        {"driver_version", d.driverVersion},
        {"runtime_version", d.runtimeVersion},
    };
    json matmul = json::array();
    for (const auto& r : doc.matmul)
        matmul.push_back({{"dtype", dtypeName(r.dtype)},
                          {"m", positive(r.m, "matmul.m")},
                          {"n", positive(r.n, "matmul.n")},
                          {"k", positive(r.k, "matmul.k")},
                          {"time_s", positive(r.seconds, "matmul.time_s")},
                          {"source", "cublasLt"}});
    json attention = json::array();
    for (const auto& r : doc.attention)
        attention.push_back({{"dtype", dtypeName(r.dtype)},
                             {"batch", positive(r.batch, "attention.batch")},
                             {"heads", positive(r.heads, "attention.heads")},
                             {"seq", positive(r.seq, "attention.seq")},
                             {"head_dim", positive(r.headDim, "attention.head_dim")},
                             {"causal", true},
                             {"flops", positive(r.flops(), "attention.flops")},
                             {"time_s", positive(r.seconds, "attention.time_s")},
                             {"source", "cublas-batched+softmax"}});
    json memoryOps = json::array();
    for (const auto& r : doc.memoryOps)
        memoryOps.push_back({{"op", r.op},
                             {"dtype", dtypeName(r.dtype)},
                             {"bytes", positive(r.bytes, "memory_ops.bytes")},
                             {"time_s", positive(r.seconds, "memory_ops.time_s")}});
    json collectives = json::array();
    for (const auto& r : doc.collectives)
        collectives.push_back(
            {{"op", collectiveName(r.op)},
             {"bytes", positive(r.bytes, "collectives.bytes")},
             {"ranks", positive(std::int64_t(r.ranks), "collectives.ranks")},
             {"ranks_per_node", positive(std::int64_t(r.ranksPerNode), "collectives.ranks_per_node")},
             {"dtype", dtypeName(r.dtype)},
             {"time_s", positive(r.seconds, "collectives.time_s")},
             {"busbw_gb_per_s",
              positive(busBandwidthGBps(r.op, r.bytes, r.seconds, r.ranks), "collectives.busbw_gb_per_s")},
             {"source", kCollectiveSource}});
    return {{"format", kFormat},
            {"created_utc", doc.createdUtc},
            {"tool", doc.tool},
            {"device", std::move(device)},
            {"matmul", std::move(matmul)},
            {"attention", std::move(attention)},
            {"memory_ops", std::move(memoryOps)},
            {"collectives", std::move(collectives)}};
}

void addChecksum(json& doc)
{
    doc.erase("checksum");
    const std::string sum = checksumText(doc.dump());
    doc["checksum"] = sum;
}

bool checksumMatches(const json& doc)
{
    if (!doc.is_object() || !doc.contains("checksum") || !doc.at("checksum").is_string())
        return false;
    return doc.at("checksum").get<std::string>() == checksumText(withoutChecksum(doc).dump());
}

json mergeProfiles(const json& fresh, const json& old, const MeasuredKinds& measured)
{
    json merged = withoutChecksum(fresh);
    const auto keep = [&](const char* kind, bool measuredNow) {
        if (!measuredNow && old.contains(kind) && old.at(kind).is_array())
            merged[kind] = old.at(kind);
    };
    keep("matmul", measured.matmul);
    keep("attention", measured.attention);
    keep("memory_ops", measured.memoryOps);
    keep("collectives", measured.collectives);
    if (measured.collectives && old.contains("collectives") && old.at("collectives").is_array()) {
        // Collectives depend on the rank layout: keep old rows (own or nccl-tests imports) of layouts not
        // measured now, e.g. a 16-rank two-node run when this run measured the 8 local GPUs.
        json& rows = merged["collectives"];
        const json freshRows = rows;
        for (const json& row : old.at("collectives")) {
            bool sameLayout = false;
            for (const json& f : freshRows)
                sameLayout = sameLayout
                    || (f.value("ranks", 0) == row.value("ranks", -1)
                        && f.value("ranks_per_node", 0) == row.value("ranks_per_node", -1));
            if (!sameLayout)
                rows.push_back(row);
        }
    }
    return merged;
}

json reusableProfile(const std::filesystem::path& file, std::string_view deviceName, std::string& why)
{
    why.clear();
    std::error_code ec;
    if (!std::filesystem::exists(file, ec))
        return nullptr;
    const auto size = std::filesystem::file_size(file, ec);
    if (ec || size > 256ull * 1024 * 1024) {
        why = "unreadable or too large";
        return nullptr;
    }
    std::ifstream in(file, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    if (shardscape::findJsonNestingExcess(text.str())) {
        why = "JSON nested deeper than any profile";
        return nullptr;
    }
    json doc = json::parse(text.str(), nullptr, false);
    if (doc.is_discarded() || !doc.is_object()) {
        why = "not a JSON object";
        return nullptr;
    }
    if (doc.value("format", std::string()) != kFormat) {
        why = "format is not " + std::string(kFormat);
        return nullptr;
    }
    if (!checksumMatches(doc)) {
        why = "checksum mismatch (edited or truncated)";
        return nullptr;
    }
    if (!doc.contains("device") || !doc.at("device").is_object()
        || doc.at("device").value("name", std::string()) != deviceName) {
        why = "it profiles another device";
        return nullptr;
    }
    return doc;
}

std::string deviceSlug(std::string_view deviceName)
{
    std::string slug;
    for (const char c : deviceName)
        slug += c == ' ' || c == '/' ? '-' : static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    return slug;
}

std::filesystem::path defaultProfileDir(std::string_view deviceName)
{
    const char* home = std::getenv("HOME");
    if (!home || !*home)
        throw BadInput("HOME is not set, so there is no default profile directory", "give --out DIR");
    return std::filesystem::path(home) / ".cache" / "shardscape" / deviceSlug(deviceName);
}

void prepareOutputDir(const std::filesystem::path& dir)
{
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec)
        throw BadInput("cannot create the output directory '" + dir.string() + "': " + ec.message(),
                       "choose another --out DIR");
    if (!std::filesystem::is_directory(dir) || ::access(dir.c_str(), W_OK) != 0)
        throw BadInput("the output directory '" + dir.string() + "' is not a writable directory",
                       "choose another --out DIR");
}

void writeFileAtomic(const std::filesystem::path& file, std::string_view content)
{
    const std::filesystem::path dir = file.has_parent_path() ? file.parent_path() : std::filesystem::path(".");
    const std::filesystem::path temp
        = dir / ("." + file.filename().string() + ".tmp-" + std::to_string(static_cast<long>(::getpid())));
    const auto fail = [&](const std::string& step) {
        const std::string reason = std::strerror(errno);
        ::unlink(temp.c_str());
        throw std::runtime_error("cannot write '" + file.string() + "' (" + step + ": " + reason + ")");
    };
    const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        fail("create " + temp.string());
    std::size_t written = 0;
    while (written < content.size()) {
        const ssize_t n = ::write(fd, content.data() + written, content.size() - written);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            ::close(fd);
            fail("write");
        }
        written += static_cast<std::size_t>(n);
    }
    if (::fsync(fd) != 0) {
        ::close(fd);
        fail("fsync");
    }
    if (::close(fd) != 0)
        fail("close");
    if (::rename(temp.c_str(), file.c_str()) != 0)
        fail("rename");
    // Make the rename itself durable; failure here leaves a complete file, so it is not an error.
    if (const int dirFd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dirFd >= 0) {
        ::fsync(dirFd);
        ::close(dirFd);
    }
}

std::string utcNow()
{
    const std::time_t now = std::time(nullptr);
    std::tm utc {};
    ::gmtime_r(&now, &utc);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
    return text;
}

} // namespace shardscape::profiler
