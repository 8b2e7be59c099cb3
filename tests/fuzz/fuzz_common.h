// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/support/error.h"

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace shardscape::fuzz {

/** The fuzzer's bytes as text (the loaders take any bytes: non-UTF-8 and NUL included). */
inline std::string_view text(const std::uint8_t* data, std::size_t size)
{
    return {reinterpret_cast<const char*>(data), size};
}

/**
 * Runs one loader call. InputError is the documented rejection of bad input, so it is a normal outcome. Anything
 * else escapes on purpose: an uncaught exception ends in std::terminate, which libFuzzer reports as a crash and
 * saves the input, exactly as it does for sanitizer reports, timeouts (-timeout) and memory blow-ups (-rss_limit_mb).
 */
template<typename Load> int loadOnce(Load&& load)
{
    try {
        load();
    } catch (const InputError&) {
    }
    return 0;
}

} // namespace shardscape::fuzz
