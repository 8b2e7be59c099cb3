// SPDX-License-Identifier: MIT
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

namespace shardscape {
class ModelGraph;
}

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

/** The model loaders plan and simulate the graphs they accept up to this many ops (a 24-layer transformer). */
inline constexpr std::size_t kMaxOpsToPlan = 400;

/**
 * What a user does next with a model that loaded: plan it on one node of 2 GPUs (a handful of layouts) and simulate
 * the best plan with its timeline. A loaded model must never crash a later stage; a plan that cannot be made is an
 * InputError like any other.
 */
void planAndSimulate(const ModelGraph& graph);

} // namespace shardscape::fuzz
