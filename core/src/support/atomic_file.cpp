// SPDX-License-Identifier: MIT
#include "shardscape/support/atomic_file.h"

#include "shardscape/support/error.h"
#include "shardscape/support/strings.h"

#include <array>
#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <random>
#include <sys/stat.h>
#include <unistd.h>

namespace shardscape {

namespace {

std::string errnoText()
{
    return std::strerror(errno);
}

/** Closes the descriptor and removes the temporary file unless released: no leftovers on any error path. */
struct TempFileGuard
{
    std::string path;
    int fd = -1;
    ~TempFileGuard()
    {
        if (fd >= 0)
            ::close(fd);
        if (!path.empty())
            ::unlink(path.c_str());
    }
};

std::string hostName()
{
    std::array<char, 256> name {};
    if (::gethostname(name.data(), name.size() - 1) != 0 || name[0] == '\0')
        return "localhost";
    std::string host(name.data());
    // Keep the temporary's name well under NAME_MAX and free of the '-' we split on.
    host = host.substr(0, 32);
    for (char& c : host)
        if (c == '-' || c == '/')
            c = '_';
    return host;
}

std::string tempPrefix(const std::filesystem::path& target)
{
    return cat(".", target.filename().string(), ".tmp-");
}

/**
 * Removes temporaries of `target` left by writers on this host that were killed before their rename. A writer that
 * is still running keeps its temporary (kill(pid, 0) succeeds, or fails with EPERM for another user's process).
 */
void removeStaleTemps(const std::filesystem::path& directory, const std::filesystem::path& target,
                      const std::string& host)
{
    const std::string prefix = tempPrefix(target);
    std::error_code ec;
    for (std::filesystem::directory_iterator it(directory, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (name.compare(0, prefix.size(), prefix) != 0)
            continue;
        // <pid>-<random>-<host>
        const std::string_view rest = std::string_view(name).substr(prefix.size());
        const auto firstDash = rest.find('-');
        const auto secondDash = rest.find('-', firstDash == std::string_view::npos ? rest.size() : firstDash + 1);
        if (secondDash == std::string_view::npos || rest.substr(secondDash + 1) != host)
            continue;
        pid_t pid = 0;
        const auto [end_ptr, parse_error] = std::from_chars(rest.data(), rest.data() + firstDash, pid);
        if (parse_error != std::errc() || end_ptr != rest.data() + firstDash || pid <= 0)
            continue;
        if (::kill(pid, 0) != 0 && errno == ESRCH)
            ::unlink(it->path().c_str());
    }
}

void writeAll(int fd, std::string_view content, const std::filesystem::path& path)
{
    const char* data = content.data();
    std::size_t left = content.size();
    while (left > 0) {
        const ssize_t written = ::write(fd, data, left);
        if (written < 0) {
            if (errno == EINTR)
                continue;
            throw InputError(cat(path.string(), ": write failed (", errnoText(), ")"), "check free disk space");
        }
        data += written;
        left -= static_cast<std::size_t>(written);
    }
}

/** Devices and FIFOs: there is nothing to replace atomically, so write straight into them. */
void writeInPlace(const std::filesystem::path& path, std::string_view content)
{
    TempFileGuard file; // only for closing: path stays empty, nothing is unlinked
    file.fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (file.fd < 0)
        throw InputError(cat(path.string(), ": cannot write (", errnoText(), ")"), "choose another path");
    writeAll(file.fd, content, path);
}

/** Makes the rename itself durable across a power loss (a kill does not need it). Best effort. */
void syncDirectory(const std::filesystem::path& directory)
{
    const int fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        ::fsync(fd);
        ::close(fd);
    }
}

} // namespace

void writeFileAtomic(const std::filesystem::path& path, std::string_view content)
{
    std::filesystem::path target = path.has_parent_path() ? path : std::filesystem::path(".") / path;
    std::error_code ec;
    if (std::filesystem::is_symlink(target, ec)) {
        const std::filesystem::path resolved = std::filesystem::weakly_canonical(target, ec);
        if (!ec)
            target = resolved;
    }
    struct stat info
    {
    };
    if (::stat(target.c_str(), &info) == 0) {
        if (S_ISDIR(info.st_mode))
            throw InputError(cat(path.string(), " is a directory"), "name a file inside it");
        if (!S_ISREG(info.st_mode))
            return writeInPlace(target, content);
    }
    const std::filesystem::path directory = target.parent_path();
    if (!std::filesystem::is_directory(directory, ec))
        throw InputError(cat(path.string(), ": directory ", directory.string(), " does not exist"),
                         "create it first or choose another path");

    const std::string host = hostName();
    removeStaleTemps(directory, target, host);

    std::random_device seed;
    TempFileGuard temp;
    temp.path = (directory / cat(tempPrefix(target), ::getpid(), "-", seed(), "-", host)).string();
    temp.fd = ::open(temp.path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (temp.fd < 0) {
        temp.path.clear();
        throw InputError(cat(path.string(), ": cannot write in ", directory.string(), " (", errnoText(), ")"),
                         "choose a writable directory");
    }
    writeAll(temp.fd, content, path);
    if (::fsync(temp.fd) != 0)
        throw InputError(cat(path.string(), ": fsync failed (", errnoText(), ")"));
    ::close(temp.fd);
    temp.fd = -1;
    if (::rename(temp.path.c_str(), target.c_str()) != 0)
        throw InputError(cat(path.string(), ": cannot replace the file (", errnoText(), ")"),
                         "check the directory's permissions");
    temp.path.clear();
    syncDirectory(directory);
}

} // namespace shardscape
