#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# One repeatable libFuzzer round, for CTest's fuzz_run_<target>: empties CORPUS_DIR first, so that an earlier round in
# the same build does not change this one, and runs the fuzzer with address-space randomisation off (setarch -R) where
# the kernel allows it. With the fixed -seed, -runs, -use_cmp=0 and -reload=0 that tests/fuzz/CMakeLists.txt passes,
# two rounds then make the same mutations in the same order (same coverage, same corpus: tests/bench/RESULTS.md), so
# a round that passed here passes on any machine with the same code and packages. CTest runs it in the build's
# tests/fuzz folder with relative paths only: the paths' lengths changed some rounds (libFuzzer keeps them on the heap).
#   fresh_run.sh CORPUS_DIR FUZZER [ARGS...]      (CORPUS_DIR is also one of ARGS: where libFuzzer writes)
set -euo pipefail
corpus=${1:?usage: fresh_run.sh CORPUS_DIR FUZZER [ARGS...]}
shift
rm -rf "$corpus"
mkdir -p "$corpus"
# The environment too is fixed: its size moves the initial stack, and planner_config's round changed with it (one
# 50-character variable more gave another round: RESULTS.md).
if setarch -R true 2>/dev/null; then
    exec env -i PATH=/usr/bin:/bin setarch -R "$@"
fi
echo "fresh_run.sh: setarch -R is not allowed here; the ONNX round may differ from the recorded one" >&2
exec env -i PATH=/usr/bin:/bin "$@"
