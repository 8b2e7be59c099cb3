#!/usr/bin/env bash
# Runs Shardscape's Megatron-LM exports unmodified on one GPU and keeps their logs: the real logs that
# `shardscape-cli profile import-log` is tested on (tests/data/training_logs/README.md).
#
#   tests/gpu/megatron_runs.sh MEGATRON_LM_CHECKOUT OUT_DIR EXPORT.sh...
#
# Every export is run with the arguments a stack without Transformer Engine or Apex needs (its "$@" tail):
# the local transformer implementation and no fusions that need those packages. Each run is bounded by a timeout
# and a failed run does not stop the next one.
set -uo pipefail

megatron=$(cd "$1" && pwd)
out=$2
shift 2
mkdir -p "$out"

{
    nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv
    python3 -c 'import torch, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())'
} >"$out/device.txt" 2>&1
cat "$out/device.txt"

# Megatron compiles its dataset helpers with make and python3-config at start; build them here so that a machine
# without python3-config still runs, and make finds the library up to date.
suffix=$(python3 -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
shim=$(mktemp -d)
if ! command -v python3-config >/dev/null; then
    printf '#!/bin/sh\necho %s\n' "$suffix" >"$shim/python3-config"
    chmod +x "$shim/python3-config"
fi
if ! command -v make >/dev/null; then
    printf '#!/bin/sh\nexit 0\n' >"$shim/make"
    chmod +x "$shim/make"
fi
export PATH="$shim:$PATH"
(cd "$megatron/megatron/core/datasets" \
    && g++ -O3 -Wall -shared -std=c++17 -fPIC $(python3 -m pybind11 --includes) helpers.cpp -o "helpers_cpp$suffix") \
    || echo "warning: could not build Megatron's dataset helpers"

export CUDA_DEVICE_MAX_CONNECTIONS=1 PYTHONUNBUFFERED=1
for script in "$@"; do
    name=$(basename "$script" .sh)
    echo "== $name"
    MEGATRON_LM="$megatron" MASTER_PORT=$((29400 + RANDOM % 500)) timeout 110 bash "$script" \
        --transformer-impl local --no-gradient-accumulation-fusion --no-rope-fusion --no-persist-layer-norm --no-masked-softmax-fusion \
        --train-iters 30 --log-interval 5 --eval-iters 0 --eval-interval 1000 --log-throughput \
        >"$out/$name.log" 2>&1
    echo "exit $? ($name)" | tee -a "$out/$name.log"
    grep -E "elapsed time per iteration|max allocated|Error|error:" "$out/$name.log" | tail -6
done
