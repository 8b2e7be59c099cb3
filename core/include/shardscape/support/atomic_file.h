// SPDX-License-Identifier: MIT
#pragma once

#include <filesystem>
#include <string_view>

namespace shardscape {

/**
 * Writes `content` to `path` atomically: a temporary file in the same directory, fsync, rename over `path`, fsync
 * of the directory. A crash or kill -9 at any moment leaves either the old file or the new one, never a partial
 * file.
 *
 * The temporary is named ".<name>.tmp-<pid>-<random>-<host>", so nothing that looks for <name> ever reads it. A kill
 * between its creation and the rename leaves it behind; the next write of the same <name> from the same host removes
 * every such temporary whose process is gone, so they never accumulate.
 *
 * A symbolic link is followed (the file it points to is replaced, the link stays). A path that exists but is not a
 * regular file (/dev/null, /dev/stdout, a FIFO) is written in place: renaming over a device would replace it.
 * Throws InputError naming the path when the directory is missing or not writable or the write fails.
 */
void writeFileAtomic(const std::filesystem::path& path, std::string_view content);

} // namespace shardscape
