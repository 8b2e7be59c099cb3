#!/usr/bin/env bash
# Shardscape torchrun launcher for llama2-70b on 8 x 8 h100-sxm (NVIDIA H100 SXM5 80GB)
# Plan: tp8 pp4 dp2 vpp2 mb1 m8 zero3 sp recompute=full interleaved; global batch 16 x 4096 tokens on 64 GPUs
# Predicted: step time 2.823 s, MFU 16.3 %, HFU 21.7 %, 23214 tokens/s, peak memory 25.9 GB per GPU (datasheet)
# Plan written by tst_plan_export test; model spec 'llama2-70b'
#
# torchrun launcher for 8 nodes x 8 GPUs (64 processes), c10d rendezvous. Run it on every node
# with the same MASTER_ADDR (the host of node 0) and JOB_ID. Without arguments it runs torchtitan
# main with the config module from `shardscape-cli export --format torchtitan` (CONFIG, default plan_config.py
# next to this script); with arguments it runs them instead, e.g.
#   ./launch.sh train.py --my-option 1
#   ./launch.sh -m torchtitan.train --module other_config --config other_function
set -euo pipefail

NNODES=${NNODES:-8}
GPUS_PER_NODE=${GPUS_PER_NODE:-8}
MASTER_ADDR=${MASTER_ADDR:-localhost}
MASTER_PORT=${MASTER_PORT:-29400}
JOB_ID=${JOB_ID:-shardscape}
CONFIG=${CONFIG:-$(dirname "$0")/plan_config.py}

if [ "$#" -eq 0 ]; then
    export PYTHONPATH="$(cd "$(dirname "$CONFIG")" && pwd)${PYTHONPATH:+:$PYTHONPATH}"
    set -- -m torchtitan.train --module "$(basename "$CONFIG" .py)" --config shardscape_plan
fi

exec torchrun --nnodes "$NNODES" --nproc-per-node "$GPUS_PER_NODE" \
    --rdzv-backend c10d --rdzv-endpoint "$MASTER_ADDR:$MASTER_PORT" --rdzv-id "$JOB_ID" \
    "$@"
