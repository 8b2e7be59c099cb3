// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/model/dtype.h"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shardscape {

/** The only profile format this build reads and writes (core/src/profile/FORMAT.md). */
inline constexpr std::string_view kProfileFormat = "shardscape.profile/1";
/** The file inside a profile directory. */
inline constexpr std::string_view kProfileFileName = "profile.json";
/** Largest profile file read, checked before reading: a real one holds a few thousand rows (well under 10 MB). */
inline constexpr std::uintmax_t kMaxProfileBytes = 256ull * 1024 * 1024;

/** Bounds of a fitted calibration (a scale outside them means another machine or a broken log, not a fit). */
inline constexpr double kMinCalibrationScale = 0.05;
inline constexpr double kMaxCalibrationScale = 20;
inline constexpr double kMaxCalibrationOffsetBytes = 1e12;
inline constexpr double kMaxKernelFloorSeconds = 1e-2;

/** The measured GPU. Numbers are 0 and strings empty where the profile does not say (e.g. nccl-tests imports). */
struct ProfileDevice
{
    std::string name; ///< cudaDeviceProp.name, e.g. "NVIDIA H100 80GB HBM3"; required
    std::int64_t count = 0; ///< local GPUs seen
    double memory_bytes = 0; ///< total HBM, bytes
    double runtime_reserve_bytes = 0; ///< total - free right after context creation, bytes
    double hbm_copy_bytes_per_s = 0; ///< device-to-device copy, (read + write) bytes / s
    std::int64_t sm_count = 0;
    std::string compute_capability;
    std::string driver_version;
    std::string runtime_version;
};

/** One GEMM C[m x n] = A[m x k] @ B[k x n]: 2mnk FLOPs in `time_s` seconds. */
struct MatmulRow
{
    DType dtype = DType::BF16;
    std::int64_t m = 0;
    std::int64_t n = 0;
    std::int64_t k = 0;
    double time_s = 0;
    std::string source; ///< e.g. "cublasLt"; may be empty

    double flops() const { return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k); }
};

/** One fused attention forward; `flops` is the unmasked count 4*b*h*s*s*d whether causal or not. */
/** AttentionRow::source of shardscape-profile's unfused attention (cuBLAS QK^T, causal softmax, cuBLAS PV). */
inline constexpr std::string_view kUnfusedAttentionSource = "cublas-batched+softmax";

struct AttentionRow
{
    DType dtype = DType::BF16;
    std::int64_t batch = 0;
    std::int64_t heads = 0;
    std::int64_t seq = 0;
    std::int64_t head_dim = 0;
    bool causal = true;
    double flops = 0;
    double time_s = 0;
    std::string source;
};

/** One streaming kernel; `bytes` = bytes read + bytes written. op: copy, elementwise, rmsnorm, layernorm, softmax. */
struct MemoryOpRow
{
    std::string op;
    DType dtype = DType::BF16;
    double bytes = 0;
    double time_s = 0;
};

/**
 * One collective: `bytes` is the nccl-tests `size` column (the whole buffer: all-reduce input, all-gather output,
 * reduce-scatter input, all-to-all send buffer, one send_recv message). op: all_reduce, all_gather, reduce_scatter,
 * all_to_all, send_recv.
 */
struct CollectiveRow
{
    std::string op;
    double bytes = 0;
    int ranks = 0;
    int ranks_per_node = 0;
    DType dtype = DType::F32;
    double time_s = 0;
    double busbw_gb_per_s = 0; ///< 0 = not stated; GB = 1e9 bytes
    std::string source; ///< "shardscape-profile", "nccl-tests:<file name>", ...
};

/** One training run a calibration was fitted on (`profile import-log`). */
struct CalibrationRun
{
    std::string log; ///< the log's file name
    std::string framework; ///< "megatron", "torchtitan" or "deepspeed": the log's format
    std::string config; ///< the run's configuration, e.g. "tp1 pp1 dp1 mb2 m8 zero0 recompute=none"
    double measured_step_s = 0; ///< the log's steady-state step time
    double predicted_step_s = 0; ///< the prediction before the fit
    double calibrated_step_s = 0; ///< after the fit
    double measured_peak_bytes = 0; ///< 0 when the log has no memory line
    std::string peak_kind; ///< "reserved" or "allocated" (what the log measured); empty without a peak
};

/**
 * Factors fitted by `profile import-log` so that predictions reproduce the user's own training runs: each kind of
 * kernel time is multiplied by its scale, and `memory_offset_bytes` (may be negative) is added to every predicted
 * peak as tensor memory the model does not account for (FORMAT.md, "calibration").
 */
struct ProfileCalibration
{
    double matmul_time_scale = 1;
    double attention_time_scale = 1;
    double memory_time_scale = 1; ///< streaming kernels (norms, elementwise, optimizer step)
    double collective_time_scale = 1; ///< collectives and point-to-point messages
    /** Shortest time any compute kernel takes on the user's stack, seconds; 0 = the cost source's own. Eager
        frameworks launch one kernel per op from Python: when kernels are shorter than the host takes to issue them,
        the GPU waits for the host, which is what small models and micro-batches measure. */
    double kernel_floor_s = 0;
    double memory_offset_bytes = 0;
    std::string created_utc;
    std::vector<CalibrationRun> runs;
};

/** A measured profile of one device (one profile.json). Plain data; validated by load and save. */
struct Profile
{
    std::string created_utc; ///< ISO 8601, e.g. "2026-11-22T10:00:00Z"
    std::string tool; ///< what wrote it, e.g. "shardscape-profile 0.1.0"
    ProfileDevice device;
    std::vector<MatmulRow> matmul;
    std::vector<AttentionRow> attention;
    std::vector<MemoryOpRow> memory_ops;
    std::vector<CollectiveRow> collectives;
    /** Fitted on the user's own runs (`profile import-log`); absent = none. */
    std::optional<ProfileCalibration> calibration;
};

/** The memory_ops op names, and the collective op names, in FORMAT.md order. */
const std::vector<std::string>& profileMemoryOps();
const std::vector<std::string>& profileCollectiveOps();

/** What a look at a profile file found. */
enum class ProfileState : std::uint8_t
{
    Missing, ///< no file there
    Corrupt, ///< unreadable, malformed, checksum mismatch, unknown key or a bad value
    WrongVersion, ///< another `format` (older or newer): not read further
    Valid
};
std::string_view profileStateName(ProfileState state);

struct ProfileStatus
{
    ProfileState state = ProfileState::Missing;
    std::filesystem::path file;
    /** Why it is not valid, one line naming the file (empty when valid). */
    std::string reason;
    /** The profile when valid. */
    std::shared_ptr<const Profile> profile;
};

/**
 * Looks at a profile file without throwing for its contents: the size is checked before reading (kMaxProfileBytes),
 * `format` first, then the checksum (FNV-1a 64 of the compact dump without `checksum`), then every key and value
 * (unknown keys, non-finite or non-positive numbers, non-integral sizes are errors naming the key).
 */
ProfileStatus inspectProfile(const std::filesystem::path& file);

/** inspectProfile, throwing InputError with the reason unless the profile is valid. */
Profile loadProfile(const std::filesystem::path& file);

/** Parses a profile document already in memory (`origin` names it in messages); InputError when not valid. */
Profile profileFromJson(const nlohmann::json& doc, std::string_view origin);

/** The document without `checksum` (keys sorted, as nlohmann's default object is). Validates first. */
nlohmann::json toJson(const Profile& profile);

/** "fnv1a64:<16 hex digits>" of the compact dump of `doc` without its `checksum` member. */
std::string profileChecksum(const nlohmann::json& doc);

/**
 * Validates `profile`, computes the checksum and writes it atomically (temporary file + rename), creating the
 * directory when missing. Throws InputError for an invalid profile or an unwritable path.
 */
void saveProfile(const std::filesystem::path& file, const Profile& profile);

/** The slug of a device name (FORMAT.md): lower-cased, spaces and '/' replaced by '-'. "NVIDIA H200" -> "nvidia-h200".
 */
std::string deviceSlug(std::string_view deviceName);

/** Now as "YYYY-MM-DDTHH:MM:SSZ". */
std::string utcNow();

} // namespace shardscape
