#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The fuzzing step of `bootstrap.sh test`: builds the libFuzzer targets with clang (ASan + UBSan) in BUILD_DIR,
# replays every seed and every committed regression input through them once, then gives each target one repeatable
# round of fuzzing, two at a time (CTest label "fuzz"): a fixed number of executions from the fixed
# SHARDSCAPE_FUZZ_SEED (default 1; 0 = random), about 27 s each here, stopped early after SHARDSCAPE_FUZZ_SECONDS
# (default 60; 0 = replay only) on a slower machine. A finding fails the step and leaves its input under
# BUILD_DIR/tests/fuzz/artifacts/<target>/. Long, randomly seeded runs: tests/fuzz/README.md.
#   bash tests/fuzz/ci_replay.sh [BUILD_DIR]        (default build/fuzz-ci)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build/fuzz-ci}
if ! command -v clang++ >/dev/null; then
    echo "fuzz replay skipped: clang++ is not installed (apt-get install clang)"
    exit 0
fi
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang \
      -DCMAKE_CXX_COMPILER=clang++ -DSHARDSCAPE_BUILD_FUZZ=ON -DSHARDSCAPE_BUILD_GUI=OFF \
      -DSHARDSCAPE_BUILD_BENCH=OFF -DSHARDSCAPE_WITH_CUDA=OFF -DSHARDSCAPE_WERROR=ON \
      -DSHARDSCAPE_FUZZ_SECONDS="${SHARDSCAPE_FUZZ_SECONDS:-60}" -DSHARDSCAPE_FUZZ_SEED="${SHARDSCAPE_FUZZ_SEED:-1}" \
      >/dev/null
cmake --build "$build" --target shardscape_fuzzers -- -j"$jobs"
ctest --test-dir "$build" -L fuzz -j"$jobs" --output-on-failure
