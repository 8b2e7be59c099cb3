#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The ThreadSanitizer step of `bootstrap.sh test`: the dev-tsan preset builds only the threaded tests (the oneTBB
# search, its config and the GUI's background jobs) and runs them; any TSan report fails them (halt_on_error=1 in
# the preset). About 2.5 minutes on two cores. The whole suite under TSan and ASan + UBSan are the dev-tsan and
# dev-asan presets (tests/bench/RESULTS.md, "Sanitizers"); with the CI build, the fuzzers and the package test
# they would not fit the test command's 30 minutes.
#   bash tests/sanitizers/ci_tsan.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
jobs=$(nproc 2>/dev/null || echo 2)
threaded='^(tst_search|tst_search_config|tst_ui_app)$'
cmake --preset dev-tsan >/dev/null
cmake --build --preset dev-tsan --target tst_search tst_search_config tst_ui_app -- -j"$jobs"
ctest --preset dev-tsan -R "$threaded" -j"$jobs"
