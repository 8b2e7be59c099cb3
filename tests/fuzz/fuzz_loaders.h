// SPDX-License-Identifier: MIT
#pragma once

#include <string_view>
#include <vector>

namespace shardscape::fuzz {

/**
 * One file loader as a fuzz target drives it: the bytes of a file in, InputError out when they are rejected.
 * Shared by the libFuzzer targets (fuzz_target.cpp) and the regression test (tests/core/tst_fuzz_regressions.cpp),
 * so a committed regression input goes through exactly the code that found it.
 */
struct Loader
{
    std::string_view target; ///< the fuzz target's name without "fuzz_", and its folder in tests/data/fuzz-regressions
    void (*load)(std::string_view bytes);
};

/** Every loader of this build (ONNX only when it is built). */
const std::vector<Loader>& loaders();

/** The loader of `target`, or nullptr. */
const Loader* findLoader(std::string_view target);

} // namespace shardscape::fuzz
