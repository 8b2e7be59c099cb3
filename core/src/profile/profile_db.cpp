// SPDX-License-Identifier: MIT
// Finding the profile for a device: explicit file or directory, or the per-device cache directory.
#include "shardscape/profile/profile_db.h"

#include "shardscape/support/strings.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <system_error>

namespace shardscape {

namespace {

std::string lower(std::string_view text)
{
    std::string out(text);
    for (auto& c : out)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

bool contains(const std::string& text, std::string_view part)
{
    return text.find(part) != std::string::npos;
}

std::string quoted(const std::filesystem::path& path)
{
    const std::string text = path.string();
    return text.find_first_of(" \t'\"$\\") == std::string::npos ? text : cat('"', text, '"');
}

} // namespace

std::filesystem::path profileCacheRoot()
{
    // XDG Base Directory: a relative XDG_CACHE_HOME is invalid and must be ignored.
    if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg && std::filesystem::path(xdg).is_absolute())
        return std::filesystem::path(xdg) / "shardscape";
    if (const char* home = std::getenv("HOME"); home && *home)
        return std::filesystem::path(home) / ".cache" / "shardscape";
    return {};
}

std::filesystem::path defaultProfileDir(std::string_view deviceName)
{
    const auto root = profileCacheRoot();
    return root.empty() ? std::filesystem::path() : root / deviceSlug(deviceName);
}

std::optional<std::string> presetForDeviceName(std::string_view deviceName)
{
    const std::string name = lower(deviceName);
    if (contains(name, "h200"))
        return "h200";
    if (contains(name, "h100"))
        return contains(name, "pcie") ? "h100-pcie" : "h100-sxm";
    if (contains(name, "a100"))
        return contains(name, "40gb") ? "a100-40g" : "a100-80g";
    if (contains(name, "b200"))
        return "b200";
    if (contains(name, "l40s"))
        return "l40s";
    if (contains(name, "4090"))
        return "rtx4090";
    if (contains(name, "mi300x"))
        return "mi300x";
    return std::nullopt;
}

bool profileMatchesDevice(std::string_view deviceName, const DeviceSpec& device)
{
    if (const auto preset = presetForDeviceName(deviceName))
        return *preset == device.name;
    const std::string slug = deviceSlug(deviceName);
    return slug == deviceSlug(device.name) || (!device.display_name.empty() && slug == deviceSlug(device.display_name));
}

std::string profilerCommand(const std::filesystem::path& dir)
{
    std::string command = "shardscape-profile";
    if (!dir.empty())
        command += " --out " + quoted(dir);
    return command;
}

std::vector<std::filesystem::path> cachedProfileDirs()
{
    std::vector<std::filesystem::path> dirs;
    const auto root = profileCacheRoot();
    std::error_code ec;
    if (root.empty() || !std::filesystem::is_directory(root, ec))
        return dirs;
    for (std::filesystem::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec))
        if (it->is_directory(ec) && std::filesystem::exists(it->path() / kProfileFileName, ec))
            dirs.push_back(it->path());
    std::sort(dirs.begin(), dirs.end());
    return dirs;
}

ProfileChoice findProfile(const DeviceSpec& device, const ProfileRequest& request)
{
    ProfileChoice choice;
    choice.explicit_request = !request.profile_file.empty() || !request.profile_dir.empty();
    if (!request.use_profile) {
        choice.notes.emplace_back("use_profile is off: costs come from the datasheet");
        return choice;
    }
    std::filesystem::path dir;
    if (!request.profile_file.empty()) {
        choice.file = request.profile_file;
        dir = choice.file.parent_path();
    } else if (!request.profile_dir.empty()) {
        dir = request.profile_dir;
        choice.file = dir / kProfileFileName;
    } else {
        std::vector<std::filesystem::path> matching;
        std::vector<std::string> others;
        for (const auto& candidate : cachedProfileDirs()) {
            if (profileMatchesDevice(candidate.filename().string(), device))
                matching.push_back(candidate);
            else
                others.push_back(candidate.filename().string());
        }
        if (matching.empty()) {
            if (!others.empty())
                choice.notes.push_back(cat("no measured profile for ", device.name, " under ",
                                           profileCacheRoot().string(), " (it has ", join(others),
                                           "); costs come from the datasheet"));
            if (request.re_profile) {
                choice.profiler_command = profilerCommand({});
                choice.notes.push_back(cat("re_profile is set: measure the device with: ", choice.profiler_command));
            }
            return choice;
        }
        if (matching.size() > 1) {
            std::vector<std::string> names;
            for (const auto& m : matching)
                names.push_back(m.filename().string());
            choice.notes.push_back(cat("several profiles match ", device.name, " (", join(names), "); using ",
                                       names.front(), " (name one with --profile-dir)"));
        }
        dir = matching.front();
        choice.file = dir / kProfileFileName;
    }
    const std::string command = profilerCommand(dir);
    const ProfileStatus status = inspectProfile(choice.file);
    choice.state = status.state;
    if (request.re_profile) {
        choice.profiler_command = command;
        choice.notes.push_back(
            cat("re_profile is set: ",
                status.state == ProfileState::Missing ? "there is no profile at " : "not using the profile in ",
                choice.file.string(), "; measure the device again with: ", command));
        return choice;
    }
    switch (status.state) {
    case ProfileState::Missing:
        choice.profiler_command = command;
        choice.notes.push_back(cat("no profile at ", choice.file.string(),
                                   "; costs come from the datasheet (measure with: ", command,
                                   ", or import nccl-tests logs with shardscape-cli profile import-nccl)"));
        return choice;
    case ProfileState::Corrupt:
    case ProfileState::WrongVersion:
        choice.profiler_command = command;
        choice.notes.push_back(cat("ignoring the profile: ", status.reason,
                                   "; costs come from the datasheet (measure "
                                   "again with: ",
                                   command, ")"));
        return choice;
    case ProfileState::Valid:
        break;
    }
    const std::string measured = status.profile->device.name;
    if (!profileMatchesDevice(measured, device)) {
        if (!choice.explicit_request) {
            choice.notes.push_back(cat("ignoring ", choice.file.string(), ": measured on ", measured, ", not on the ",
                                       "cluster's ", device.name));
            return choice;
        }
        choice.notes.push_back(cat("using ", choice.file.string(), " although it was measured on ", measured,
                                   ", not on the cluster's ", device.name, ", because you named it"));
    }
    choice.profile = status.profile;
    return choice;
}

} // namespace shardscape
