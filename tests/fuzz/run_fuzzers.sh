#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Fuzzes each target for SECONDS (default 60) one after the other, from its seeds, its saved corpus and its committed
# regression inputs. Findings land in BUILD/tests/fuzz/artifacts/<target>/; one log per target next to them.
#   tests/fuzz/run_fuzzers.sh BUILD_DIR [SECONDS] [TARGET...]      (targets without the fuzz_ prefix; default all)
#   MAX_LEN=1048576 tests/fuzz/run_fuzzers.sh ...                   (longest input; default 16 kB, ONNX 128 kB)
set -euo pipefail
build=${1:?usage: run_fuzzers.sh BUILD_DIR [SECONDS] [TARGET...]}
seconds=${2:-60}
shift $(( $# >= 2 ? 2 : 1 ))
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=$build/tests/fuzz
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    for exe in "$dir"/fuzz_*; do
        [ -x "$exe" ] && targets+=("${exe##*/fuzz_}")
    done
fi
status=0
for t in "${targets[@]}"; do
    mkdir -p "$dir/corpus/$t" "$dir/artifacts/$t"
    inputs=("$dir/corpus/$t" "$dir/seeds/$t")
    [ -d "$root/tests/data/fuzz-regressions/$t" ] && inputs+=("$root/tests/data/fuzz-regressions/$t")
    # Mutating the ~1 MB seeds (ONNX) or a 60 kB regression input at full length is slow and rarely useful, so the
    # default is short; MAX_LEN=1048576 lets inputs grow to 1 MB (deep nesting, huge arrays, long lines).
    max_len=16384
    [ "$t" = onnx ] && max_len=131072
    max_len=${MAX_LEN:-$max_len}
    echo "== fuzz_$t for ${seconds}s"
    if ! "$dir/fuzz_$t" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 -max_total_time="$seconds" -max_len=$max_len \
        -artifact_prefix="$dir/artifacts/$t/" "${inputs[@]}" >"$dir/artifacts/$t.log" 2>&1; then
        status=1
        echo "   FINDING: see $dir/artifacts/$t.log and $dir/artifacts/$t/"
    fi
    grep -E '^(#[0-9]+ +DONE|stat::number_of_executed_units|stat::average_exec_per_sec)' "$dir/artifacts/$t.log" \
        | sed 's/^/   /' || true
done
exit $status
