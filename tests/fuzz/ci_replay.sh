#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The fuzzing step of `bootstrap.sh test`: builds the libFuzzer targets with clang (ASan + UBSan) in BUILD_DIR and
# replays every seed and every committed regression input through them once (CTest label "fuzz"). No fuzzing: on the
# 2-core CI machine the clean clang build already takes about 3 minutes; long runs are manual (tests/fuzz/README.md).
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
      -DSHARDSCAPE_BUILD_BENCH=OFF -DSHARDSCAPE_WITH_CUDA=OFF -DSHARDSCAPE_WERROR=ON >/dev/null
cmake --build "$build" --target shardscape_fuzzers -- -j"$jobs"
ctest --test-dir "$build" -L fuzz -j"$jobs" --output-on-failure
