#!/usr/bin/env bash
# Shardscape Megatron-LM launch script for llama3.2-1b on 1 x 1 h200 (NVIDIA H200 SXM 141GB)
# Plan: tp1 pp1 dp1 mb2 m8 zero0 recompute=full [megatron-core]; global batch 16 x 2048 tokens on 1 GPUs
# Predicted: step time 0.710 s, MFU 38.4 %, HFU 48.7 %, 46121 tokens/s, peak memory 28.9 GB per GPU (datasheet)
# Plan written by shardscape-cli plan 0.1.0; model spec 'llama3.2-1b.json'
# Framework profile: megatron-core (Megatron-LM core_v0.12-core_v0.15); the plan was made for it
# Framework version: megatron-core core_v0.19 (export --framework-version core_v0.18 | core_v0.17 | core_v0.16 |
#   core_v0.15 writes for another release)
#
# Run this on every node. MEGATRON_LM is a Megatron-LM checkout of core_v0.19,
# MASTER_ADDR the host name of node 0; any arguments are appended to pretrain_gpt.py's.
set -euo pipefail

NNODES=${NNODES:-1}
GPUS_PER_NODE=${GPUS_PER_NODE:-1}
MASTER_ADDR=${MASTER_ADDR:-localhost}
MASTER_PORT=${MASTER_PORT:-29400}
JOB_ID=${JOB_ID:-shardscape}
MEGATRON_LM=${MEGATRON_LM:-.}

# Mock data and a null tokenizer, so that the script runs as it is: replace --mock-data and the tokenizer arguments
# with your --data-path and tokenizer. With core_v0.19's NullTokenizer --vocab-size 128256 gives 128256 tokens.
torchrun --nnodes "$NNODES" --nproc-per-node "$GPUS_PER_NODE" --rdzv-backend c10d \
    --rdzv-endpoint "$MASTER_ADDR:$MASTER_PORT" --rdzv-id "$JOB_ID" \
    "$MEGATRON_LM/pretrain_gpt.py" \
    --tensor-model-parallel-size 1 \
    --pipeline-model-parallel-size 1 \
    --context-parallel-size 1 \
    --micro-batch-size 2 \
    --global-batch-size 16 \
    --recompute-granularity full \
    --recompute-method uniform \
    --recompute-num-layers 1 \
    --num-layers 16 \
    --hidden-size 2048 \
    --ffn-hidden-size 8192 \
    --num-attention-heads 32 \
    --group-query-attention \
    --num-query-groups 8 \
    --seq-length 2048 \
    --max-position-embeddings 131072 \
    --swiglu \
    --normalization RMSNorm \
    --position-embedding-type rope \
    --rotary-base 500000 \
    --disable-bias-linear \
    --attention-dropout 0.00 \
    --hidden-dropout 0.00 \
    --bf16 \
    --train-iters 100 \
    --lr 3.0e-4 \
    --mock-data \
    --tokenizer-type NullTokenizer \
    --vocab-size 128256 \
    "$@"
