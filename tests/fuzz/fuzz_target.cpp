// SPDX-License-Identifier: MIT
// The libFuzzer entry point of every target: FUZZ_TARGET names the loader (fuzz_loaders.cpp) it drives.
#include "fuzz_loaders.h"
#include "shardscape/support/error.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#ifndef FUZZ_TARGET
#error "define FUZZ_TARGET, e.g. \"native_graph\""
#endif

namespace {

const shardscape::fuzz::Loader& loader()
{
    static const shardscape::fuzz::Loader* found = shardscape::fuzz::findLoader(FUZZ_TARGET);
    if (!found) {
        std::fprintf(stderr, "no loader named %s\n", FUZZ_TARGET);
        std::abort();
    }
    return *found;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    // InputError is the documented rejection of bad input: a normal outcome. Anything else escapes on purpose: an
    // uncaught exception ends in std::terminate, which libFuzzer reports as a crash and saves the input, as it does
    // for sanitizer reports, timeouts (-timeout) and memory blow-ups (-rss_limit_mb).
    try {
        loader().load({reinterpret_cast<const char*>(data), size});
    } catch (const shardscape::InputError&) {
    }
    return 0;
}
