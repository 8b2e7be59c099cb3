// SPDX-License-Identifier: MIT
// FNV-1a 64, the profile DB checksum (core/src/profile/FORMAT.md). Header-only and dependency-free because
// shardscape-profile does not link shardscape_core; core computes the same function in its own reader.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace shardscape::profiler {

/** FNV-1a, 64-bit: offset basis 0xcbf29ce484222325, prime 0x100000001b3, over the bytes of `data`. */
constexpr std::uint64_t fnv1a64(std::string_view data)
{
    std::uint64_t hash = 0xcbf29ce484222325ull;
    for (const char c : data) {
        hash ^= static_cast<std::uint8_t>(c);
        hash *= 0x100000001b3ull;
    }
    return hash;
}

/** "fnv1a64:" followed by 16 lower-case hex digits, the form FORMAT.md gives for the `checksum` member. */
inline std::string checksumText(std::string_view compactDump)
{
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fnv1a64(compactDump)));
    return std::string("fnv1a64:") + hex;
}

} // namespace shardscape::profiler
