// SPDX-License-Identifier: MIT
#pragma once

#include <filesystem>
#include <string_view>

namespace shardscape {

/**
 * Writes `content` to `path` atomically: a temporary file in the same directory, fsync, then rename.
 * A crash or kill at any moment leaves either the old file or the new one, never a partial file.
 * Throws InputError naming the path when the directory is missing or not writable.
 */
void writeFileAtomic(const std::filesystem::path& path, std::string_view content);

} // namespace shardscape
