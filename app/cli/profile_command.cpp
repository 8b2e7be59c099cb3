// SPDX-License-Identifier: MIT
// `profile show` and `profile import-nccl`: what a measured profile holds, and adding nccl-tests logs to one.
#include "cli_common.h"
#include "commands.h"

#include "shardscape/profile/nccl_tests_import.h"
#include "shardscape/profile/profile_cost_source.h"
#include "shardscape/profile/profile_db.h"
#include "shardscape/profile/profile_import.h"
#include "shardscape/profile/profile_summary.h"
#include "shardscape/support/error.h"
#include "shardscape/support/strings.h"
#include "shardscape/support/units.h"

#include <iostream>
#include <memory>

namespace shardscape::cli {

namespace {

struct ShowOptions
{
    std::string profile_dir;
    std::string profile_file;
};

struct ImportOptions
{
    std::vector<std::string> logs;
    std::string profile_dir;
    std::string device_name;
};

void printProfile(const std::filesystem::path& file, const Profile& profile)
{
    const auto& d = profile.device;
    const auto preset = presetForDeviceName(d.name);
    std::cout << "Profile " << file.string() << ": valid (" << kProfileFormat << ", checksum ok)\n";
    std::cout << "Device: " << d.name << " (" << deviceSlug(d.name)
              << (preset ? cat("; preset ", *preset) : std::string("; no preset")) << ")\n";
    std::vector<std::string> facts;
    if (d.count > 0)
        facts.push_back(cat(d.count, " local GPUs"));
    if (d.memory_bytes > 0)
        facts.push_back(cat(fixed(d.memory_bytes / units::kGB, 1), " GB memory"));
    if (d.runtime_reserve_bytes > 0)
        facts.push_back(cat(fixed(d.runtime_reserve_bytes / units::kGB, 2), " GB runtime reserve"));
    if (d.hbm_copy_bytes_per_s > 0)
        facts.push_back(cat("copy ", fixed(d.hbm_copy_bytes_per_s / units::kGB, 0), " GB/s"));
    if (d.sm_count > 0)
        facts.push_back(cat(d.sm_count, " SMs"));
    if (!d.compute_capability.empty())
        facts.push_back("compute capability " + d.compute_capability);
    if (!d.driver_version.empty())
        facts.push_back("driver " + d.driver_version);
    if (!d.runtime_version.empty())
        facts.push_back("runtime " + d.runtime_version);
    if (!facts.empty())
        std::cout << "  " << join(facts) << '\n';
    std::cout << "Created " << profile.created_utc << " by " << profile.tool << '\n';
    std::cout << "Measured:\n";
    for (const auto& kind : summarizeProfile(profile)) {
        if (kind.lines.empty()) {
            std::cout << "  " << kind.kind << ": not measured (datasheet)\n";
            continue;
        }
        std::cout << "  " << kind.kind << ":\n";
        for (const auto& line : kind.lines)
            std::cout << "    " << line << '\n';
    }
    // The name the cost model reports; the datasheet behind it only lends its name here.
    Cluster cluster;
    cluster.device.name = preset.value_or(deviceSlug(d.name));
    const auto source
        = makeProfileCostSource(std::make_shared<const Profile>(profile), makeDatasheetCostSource(cluster, {}));
    std::cout << "Cost source: " << source->name() << '\n';
}

int runShow(const ShowOptions& o)
{
    if (o.profile_file.empty() && o.profile_dir.empty()) {
        const auto root = profileCacheRoot();
        const auto dirs = cachedProfileDirs();
        if (dirs.empty()) {
            std::cout << "No profiles under " << (root.empty() ? std::string("(no HOME)") : root.string())
                      << ". Measure one with shardscape-profile, or import nccl-tests logs with "
                         "shardscape-cli profile import-nccl LOG...\n";
            return kExitOk;
        }
        std::cout << "Profiles under " << root.string() << ":\n";
        for (const auto& dir : dirs) {
            const ProfileStatus status = inspectProfile(dir / kProfileFileName);
            std::cout << "  " << dir.filename().string() << ": " << profileStateName(status.state);
            if (status.state == ProfileState::Valid)
                std::cout << " (" << status.profile->device.name << ")";
            else
                std::cout << " (" << status.reason << ")";
            std::cout << '\n';
        }
        std::cout << "(shardscape-cli profile show --profile-dir DIR for the details of one)\n";
        return kExitOk;
    }
    const std::filesystem::path file = o.profile_file.empty() ? std::filesystem::path(o.profile_dir) / kProfileFileName
                                                              : std::filesystem::path(o.profile_file);
    printProfile(file, loadProfile(file));
    return kExitOk;
}

int runImport(const ImportOptions& o)
{
    const std::vector<std::filesystem::path> logs(o.logs.begin(), o.logs.end());
    const NcclImportResult result
        = importNcclTestsLogs(logs, o.profile_dir, o.device_name, "shardscape-cli 0.1.0 profile import-nccl");
    for (const auto& line : result.lines)
        std::cout << line << '\n';
    std::cout << "saved " << result.file.string() << " (" << result.profile.collectives.size()
              << " collective rows, device " << result.profile.device.name << ")\n";
    return kExitOk;
}

} // namespace

void addProfileCommand(CLI::App& app, CommandAction& action)
{
    auto* cmd = app.add_subcommand("profile", "Show measured GPU profiles, import nccl-tests logs into one");
    cmd->require_subcommand(1);

    auto show = std::make_shared<ShowOptions>();
    auto* showCmd = cmd->add_subcommand("show",
                                        "What a profile measured and whether it is valid (no option: list "
                                        "the profiles under ~/.cache/shardscape)");
    auto* dirOption = showCmd->add_option("--profile-dir", show->profile_dir, "directory holding profile.json");
    showCmd->add_option("--profile", show->profile_file, "a profile file")->excludes(dirOption);
    showCmd->callback([&action, show] { action = [show] { return runShow(*show); }; });

    auto import = std::make_shared<ImportOptions>();
    auto* importCmd = cmd->add_subcommand(
        "import-nccl",
        "Add nccl-tests results (all_reduce_perf, all_gather_perf, reduce_scatter_perf, alltoall_perf, "
        "sendrecv_perf: text output or -J JSON) to a profile, creating it when missing");
    importCmd->add_option("logs", import->logs, "nccl-tests output files")->required()->check(CLI::ExistingFile);
    importCmd->add_option("--profile-dir", import->profile_dir,
                          "directory holding profile.json (default: ~/.cache/shardscape/<device slug>)");
    importCmd->add_option("--device-name", import->device_name,
                          "the GPU as CUDA names it (default: from the logs' \"# Rank\" lines)");
    importCmd->callback([&action, import] { action = [import] { return runImport(*import); }; });
}

} // namespace shardscape::cli
