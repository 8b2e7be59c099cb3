// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/hardware/cluster.h"
#include "shardscape/profile/profile.h"

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shardscape {

/**
 * Where measured profiles live: $XDG_CACHE_HOME/shardscape when XDG_CACHE_HOME is an absolute path, else
 * $HOME/.cache/shardscape; empty when neither is set (then only an explicit profile_dir is looked at).
 */
std::filesystem::path profileCacheRoot();

/** The default profile directory of a measured device: profileCacheRoot() / deviceSlug(name). */
std::filesystem::path defaultProfileDir(std::string_view deviceName);

/**
 * The device preset a CUDA device name (or its slug) stands for, by the chip in it: "NVIDIA H100 80GB HBM3" ->
 * h100-sxm, "NVIDIA H100 PCIe" -> h100-pcie, "NVIDIA A100-SXM4-40GB" -> a100-40g, other A100s -> a100-80g, H200,
 * B200, L40S, RTX 4090, MI300X likewise; nullopt for chips without a preset (H800, GB10, ...).
 */
std::optional<std::string> presetForDeviceName(std::string_view deviceName);

/** Whether a profile measured on `deviceName` describes `device`: same preset, or the same slug as its name or
    display name (custom devices in cluster files). */
bool profileMatchesDevice(std::string_view deviceName, const DeviceSpec& device);

/** What the planner or the CLI asks for (PlannerConfig's profile_dir, use_profile, re_profile, parallel_profile). */
struct ProfileRequest
{
    /** A directory holding profile.json; empty = look under profileCacheRoot() for the cluster's device. */
    std::string profile_dir;
    /** A profile file named directly (CLI --profile); wins over profile_dir. */
    std::string profile_file;
    /** False: cost everything from the datasheet, whatever profile exists (the GUI's "Use measured profile"). */
    bool use_profile = true;
    /** Do not use an existing profile: the caller must run the profiler again (AutoDist's re_profile). */
    bool re_profile = false;
    /**
     * AutoDist's parallel_profile (spread the single-GPU measurements over a node's GPUs). Accepted for AutoDist
     * configs; shardscape-profile measures the one GPU it is given, which stands for every GPU of its kind, so the
     * command it leads to is the same either way.
     */
    bool parallel_profile = true;
};

/** What findProfile decided. */
struct ProfileChoice
{
    /** The profile to use; null = none (the datasheet model alone). */
    std::shared_ptr<const Profile> profile;
    /** The profile file looked at (empty when there was none to look at). */
    std::filesystem::path file;
    /** State of that file (Missing when none). */
    ProfileState state = ProfileState::Missing;
    /** Whether the user named the profile (profile_dir or profile_file) rather than the default location. */
    bool explicit_request = false;
    /** One line each: what was found, what was ignored and why, what was used anyway. */
    std::vector<std::string> notes;
    /** The command that (re-)creates the profile, when the profiler should run; empty otherwise. */
    std::string profiler_command;
};

/**
 * Finds the profile for `device`. A corrupt or other-version profile is reported in `notes` and not used; so is one
 * measured on another device, unless the user named it (then it is used and the note says so). With re_profile an
 * existing profile is not used and `profiler_command` says how to measure again; with use_profile false none is
 * looked for. Never throws for file contents.
 */
ProfileChoice findProfile(const DeviceSpec& device, const ProfileRequest& request);

/** "shardscape-profile [--out DIR]": how to (re-)measure (FORMAT.md, "Running the profiler"). */
std::string profilerCommand(const std::filesystem::path& dir);

/** Every profile directory under profileCacheRoot() that has a profile.json, sorted. */
std::vector<std::filesystem::path> cachedProfileDirs();

} // namespace shardscape
