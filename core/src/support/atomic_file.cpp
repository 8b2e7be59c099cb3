// SPDX-License-Identifier: MIT
#include "shardscape/support/atomic_file.h"

#include "shardscape/support/error.h"
#include "shardscape/support/strings.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <random>
#include <unistd.h>

namespace shardscape {

namespace {

std::string errnoText()
{
    return std::strerror(errno);
}

/** Removes the temporary file unless released: no half-written leftovers on any error path. */
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

} // namespace

void writeFileAtomic(const std::filesystem::path& path, std::string_view content)
{
    const std::filesystem::path target = path.has_parent_path() ? path : std::filesystem::path(".") / path;
    const std::filesystem::path directory = target.parent_path();
    std::error_code ec;
    if (!std::filesystem::is_directory(directory, ec))
        throw InputError(cat(path.string(), ": directory ", directory.string(), " does not exist"),
                         "create it first or choose another path");

    std::random_device seed;
    TempFileGuard temp;
    temp.path = (directory / cat(".", target.filename().string(), ".tmp", seed())).string();
    temp.fd = ::open(temp.path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (temp.fd < 0) {
        temp.path.clear();
        throw InputError(cat(path.string(), ": cannot write in ", directory.string(), " (", errnoText(), ")"),
                         "choose a writable directory");
    }
    const char* data = content.data();
    std::size_t left = content.size();
    while (left > 0) {
        const ssize_t written = ::write(temp.fd, data, left);
        if (written < 0) {
            if (errno == EINTR)
                continue;
            throw InputError(cat(path.string(), ": write failed (", errnoText(), ")"), "check free disk space");
        }
        data += written;
        left -= static_cast<std::size_t>(written);
    }
    if (::fsync(temp.fd) != 0)
        throw InputError(cat(path.string(), ": fsync failed (", errnoText(), ")"));
    ::close(temp.fd);
    temp.fd = -1;
    if (::rename(temp.path.c_str(), target.c_str()) != 0)
        throw InputError(cat(path.string(), ": cannot replace the file (", errnoText(), ")"),
                         "check the directory's permissions");
    temp.path.clear();
}

} // namespace shardscape
