// SPDX-License-Identifier: MIT
// nccl-tests logs into a profile file: shared by `shardscape-cli profile import-nccl` and the desktop app.
#include "shardscape/profile/profile_import.h"

#include "shardscape/profile/nccl_tests_import.h"
#include "shardscape/profile/profile_db.h"
#include "shardscape/support/error.h"
#include "shardscape/support/strings.h"

namespace shardscape {

NcclImportResult importNcclTestsLogs(const std::vector<std::filesystem::path>& logs,
                                     const std::filesystem::path& profileDir, std::string_view deviceName,
                                     std::string_view tool)
{
    if (logs.empty())
        throw InputError("no nccl-tests logs to import", "name at least one all_reduce_perf (or similar) output file");
    // Read every log first: a bad one must leave the profile untouched.
    struct Parsed
    {
        std::string name;
        std::vector<NcclTestsRun> runs;
    };
    std::vector<Parsed> parsed;
    std::string loggedDevice;
    for (const auto& log : logs) {
        Parsed p;
        p.name = log.filename().string();
        p.runs = readNcclTestsFile(log);
        for (const auto& run : p.runs) {
            if (run.device_name.empty())
                continue;
            if (loggedDevice.empty())
                loggedDevice = run.device_name;
            else if (deviceSlug(run.device_name) != deviceSlug(loggedDevice))
                throw InputError(
                    cat(log.string(), " was measured on ", run.device_name, ", an earlier log on ", loggedDevice),
                    "import each device's logs into its own --profile-dir");
        }
        parsed.push_back(std::move(p));
    }
    if (!deviceName.empty() && !loggedDevice.empty() && deviceSlug(deviceName) != deviceSlug(loggedDevice))
        throw InputError(cat("--device-name is ", deviceName, " but the logs were measured on ", loggedDevice),
                         "drop --device-name, or import logs of that device");
    const std::string device = deviceName.empty() ? loggedDevice : std::string(deviceName);

    std::filesystem::path dir = profileDir;
    if (dir.empty()) {
        if (device.empty())
            throw InputError("the logs do not name the GPU (no \"# Rank\" lines)",
                             "give --device-name (e.g. \"NVIDIA H100 80GB HBM3\") or --profile-dir");
        dir = defaultProfileDir(device);
        if (dir.empty())
            throw InputError("no HOME or XDG_CACHE_HOME to put the profile under", "give --profile-dir");
    }
    NcclImportResult result;
    result.file = dir / kProfileFileName;
    const ProfileStatus status = inspectProfile(result.file);
    Profile& profile = result.profile;
    switch (status.state) {
    case ProfileState::Valid:
        profile = *status.profile;
        if (!device.empty() && deviceSlug(device) != deviceSlug(profile.device.name))
            throw InputError(
                cat(result.file.string(), " is the profile of ", profile.device.name, ", the logs are from ", device),
                "import into another --profile-dir");
        break;
    case ProfileState::Missing:
        if (device.empty())
            throw InputError(cat("no profile at ", result.file.string(), " and the logs do not name the GPU"),
                             "give --device-name (e.g. \"NVIDIA H100 80GB HBM3\")");
        profile.created_utc = utcNow();
        profile.tool = std::string(tool);
        profile.device.name = device;
        break;
    case ProfileState::Corrupt:
    case ProfileState::WrongVersion:
        throw InputError(cat("not touching the profile: ", status.reason),
                         "move the file away (or re-run shardscape-profile), then import again");
    }

    for (const auto& p : parsed) {
        for (const auto& run : p.runs) {
            const std::vector<CollectiveRow> rows = collectiveRows(run, p.name);
            if (rows.empty())
                continue;
            const MergeCounts counts = mergeCollectives(profile, rows);
            result.added += counts.added;
            result.replaced += counts.replaced;
            result.lines.push_back(cat(p.name, ": ", run.program, ", ", run.ranks, " ranks (", run.ranks_per_node,
                                       " per node), ", rows.size(), " sizes ", humanBytes(rows.front().bytes), " .. ",
                                       humanBytes(rows.back().bytes), ": ", counts.added, " added, ", counts.replaced,
                                       " replaced"));
            for (const auto& note : run.notes)
                result.lines.push_back("  note: " + note);
        }
    }
    saveProfile(result.file, profile);
    return result;
}

} // namespace shardscape
