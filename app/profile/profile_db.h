// SPDX-License-Identifier: MIT
// The profile DB document shardscape-profile writes (core/src/profile/FORMAT.md, "shardscape.profile/1"):
// rows, the FNV-1a checksum, keeping the kinds a run did not measure, and the atomic write.
#pragma once

#include "collective_math.h"
#include "dtype.h"

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace shardscape::profiler {

inline constexpr std::string_view kFormat = "shardscape.profile/1";
inline constexpr std::string_view kCollectiveSource = "shardscape-profile";

struct DeviceInfo
{
    std::string name;
    int count = 0;
    std::int64_t memoryBytes = 0;
    std::int64_t runtimeReserveBytes = 0;
    double hbmCopyBytesPerSecond = 0;
    int smCount = 0;
    std::string computeCapability; ///< "9.0"
    std::string driverVersion; ///< cudaDriverGetVersion, e.g. "13000"
    std::string runtimeVersion;
};

struct MatmulResult
{
    DType dtype;
    std::int64_t m, n, k;
    double seconds;
};

struct AttentionResult
{
    DType dtype;
    std::int64_t batch, heads, seq, headDim;
    double seconds;
    double flops() const; ///< 4*b*h*s*s*d, the unmasked count FORMAT.md asks for
};

struct MemoryOpResult
{
    std::string op; ///< copy, elementwise, rmsnorm, layernorm, softmax
    DType dtype;
    std::int64_t bytes; ///< read + written
    double seconds;
};

struct CollectiveResult
{
    Collective op;
    std::int64_t bytes; ///< the nccl-tests size column
    int ranks;
    int ranksPerNode;
    DType dtype;
    double seconds;
};

/** Which kinds this run measured: those replace the old rows, the others are kept from a reusable old file. */
struct MeasuredKinds
{
    bool matmul = false;
    bool attention = false;
    bool memoryOps = false;
    bool collectives = false;
};

struct ProfileDocument
{
    std::string createdUtc;
    std::string tool;
    DeviceInfo device;
    std::vector<MatmulResult> matmul;
    std::vector<AttentionResult> attention;
    std::vector<MemoryOpResult> memoryOps;
    std::vector<CollectiveResult> collectives;
};

/** The document without `checksum`. Throws std::invalid_argument for a number that is not finite and > 0. */
nlohmann::json profileJson(const ProfileDocument& doc);

/** Sets `checksum` to fnv1a64 of the compact dump of `doc` without it (FORMAT.md). */
void addChecksum(nlohmann::json& doc);

/** True when `doc` has the right format and a matching checksum. */
bool checksumMatches(const nlohmann::json& doc);

/**
 * Replaces in `old` (a valid profile of the same device; see reusableProfile) the device, tool, date and the
 * kinds measured now; keeps the other kinds' rows, and nccl-tests imports among the collectives.
 */
nlohmann::json mergeProfiles(const nlohmann::json& fresh, const nlohmann::json& old, const MeasuredKinds& measured);

/**
 * The existing profile at `file` when it can be kept: it parses, has the format and checksum and the same
 * device name. Otherwise null, and `why` says why not (empty when there is no file).
 */
nlohmann::json reusableProfile(const std::filesystem::path& file, std::string_view deviceName, std::string& why);

/** FORMAT.md's slug: lower-cased, spaces and '/' -> '-'. "NVIDIA H200" -> "nvidia-h200". */
std::string deviceSlug(std::string_view deviceName);

/** ~/.cache/shardscape/<slug>/ ($HOME); throws BadInput when HOME is not set. */
std::filesystem::path defaultProfileDir(std::string_view deviceName);

/** Creates `dir` if needed and checks that it is writable; throws BadInput naming it otherwise. */
void prepareOutputDir(const std::filesystem::path& dir);

/**
 * Writes `content` to `file` atomically: a temporary file in the same directory, fsync, rename, fsync of the
 * directory. Throws std::runtime_error naming the file on failure (the temporary is removed).
 */
void writeFileAtomic(const std::filesystem::path& file, std::string_view content);

/** Now as "YYYY-MM-DDTHH:MM:SSZ". */
std::string utcNow();

} // namespace shardscape::profiler
