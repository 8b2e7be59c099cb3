// SPDX-License-Identifier: MIT
// `profile show` and `profile import-nccl`: what a measured profile holds, and adding nccl-tests logs to one.
#include "cli_common.h"
#include "commands.h"

#include "shardscape/profile/nccl_tests_import.h"
#include "shardscape/profile/profile_cost_source.h"
#include "shardscape/profile/profile_db.h"
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
    // Read every log first: a bad one must leave the profile untouched.
    struct Parsed
    {
        std::string name;
        std::vector<NcclTestsRun> runs;
        std::vector<CollectiveRow> rows;
    };
    std::vector<Parsed> parsed;
    std::string loggedDevice;
    for (const auto& log : o.logs) {
        Parsed p;
        p.name = std::filesystem::path(log).filename().string();
        p.runs = readNcclTestsFile(log);
        for (const auto& run : p.runs) {
            const auto rows = collectiveRows(run, p.name);
            p.rows.insert(p.rows.end(), rows.begin(), rows.end());
            if (run.device_name.empty())
                continue;
            if (loggedDevice.empty())
                loggedDevice = run.device_name;
            else if (deviceSlug(run.device_name) != deviceSlug(loggedDevice))
                throw InputError(cat(log, " was measured on ", run.device_name, ", an earlier log on ", loggedDevice),
                                 "import each device's logs into its own --profile-dir");
        }
        parsed.push_back(std::move(p));
    }
    if (!o.device_name.empty() && !loggedDevice.empty() && deviceSlug(o.device_name) != deviceSlug(loggedDevice))
        throw InputError(cat("--device-name is ", o.device_name, " but the logs were measured on ", loggedDevice),
                         "drop --device-name, or import logs of that device");
    const std::string device = o.device_name.empty() ? loggedDevice : o.device_name;

    std::filesystem::path dir = o.profile_dir;
    if (dir.empty()) {
        if (device.empty())
            throw InputError("the logs do not name the GPU (no \"# Rank\" lines)",
                             "give --device-name (e.g. \"NVIDIA H100 80GB HBM3\") or --profile-dir");
        dir = defaultProfileDir(device);
        if (dir.empty())
            throw InputError("no HOME or XDG_CACHE_HOME to put the profile under", "give --profile-dir");
    }
    const std::filesystem::path file = dir / kProfileFileName;
    const ProfileStatus status = inspectProfile(file);
    Profile profile;
    switch (status.state) {
    case ProfileState::Valid:
        profile = *status.profile;
        if (!device.empty() && deviceSlug(device) != deviceSlug(profile.device.name))
            throw InputError(
                cat(file.string(), " is the profile of ", profile.device.name, ", the logs are from ", device),
                "import into another --profile-dir");
        break;
    case ProfileState::Missing:
        if (device.empty())
            throw InputError(cat("no profile at ", file.string(), " and the logs do not name the GPU"),
                             "give --device-name (e.g. \"NVIDIA H100 80GB HBM3\")");
        profile.created_utc = utcNow();
        profile.tool = "shardscape-cli 0.1.0 profile import-nccl";
        profile.device.name = device;
        break;
    case ProfileState::Corrupt:
    case ProfileState::WrongVersion:
        throw InputError(cat("not touching the profile: ", status.reason),
                         "move the file away (or re-run shardscape-profile), then import again");
    }

    for (const auto& p : parsed) {
        std::size_t offset = 0;
        for (const auto& run : p.runs) {
            const std::vector<CollectiveRow> rows(p.rows.begin() + static_cast<std::ptrdiff_t>(offset),
                                                  p.rows.begin()
                                                      + static_cast<std::ptrdiff_t>(offset + run.results.size()));
            offset += run.results.size();
            const MergeCounts counts = mergeCollectives(profile, rows);
            std::cout << p.name << ": " << run.program << ", " << run.ranks << " ranks (" << run.ranks_per_node
                      << " per node), " << rows.size() << " sizes " << humanBytes(rows.front().bytes) << " .. "
                      << humanBytes(rows.back().bytes) << ": " << counts.added << " added, " << counts.replaced
                      << " replaced\n";
            for (const auto& note : run.notes)
                std::cout << "  note: " << note << '\n';
        }
    }
    saveProfile(file, profile);
    std::cout << "saved " << file.string() << " (" << profile.collectives.size() << " collective rows, device "
              << profile.device.name << ")\n";
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
