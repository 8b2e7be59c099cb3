#!/usr/bin/env bash
# Shardscape Megatron-LM launch script for llama2-7b on 1 x 8 h100-sxm (NVIDIA H100 SXM5 80GB)
# Plan: tp2 pp2 dp2 mb1 m8 zero1 recompute=selective 1f1b; global batch 16 x 4096 tokens on 8 GPUs
# Predicted: step time 1.040 s, MFU 36.7 %, HFU 38.4 %, 62996 tokens/s, peak memory 34.3 GB per GPU (datasheet)
# Plan written by tst_plan_export test; model spec 'llama2-7b'
# Framework profile: megatron-core (Megatron-LM core_v0.12-core_v0.15); the plan was made for no framework (plan
#   with --framework megatron-core for its memory terms and limits)
# Framework version: megatron-core core_v0.19 (export --framework-version core_v0.18 | core_v0.17 | core_v0.16 |
#   core_v0.15 writes for another release)
#
# Run this on every node. MEGATRON_LM is a Megatron-LM checkout of core_v0.19,
# MASTER_ADDR the host name of node 0; any arguments are appended to pretrain_gpt.py's.
# The prediction is for Transformer Engine's layer: with --transformer-impl local attention runs
# unfused (slower, s x s probabilities in memory); simulate --from-config predicts that too.
set -euo pipefail

NNODES=${NNODES:-1}
GPUS_PER_NODE=${GPUS_PER_NODE:-8}
MASTER_ADDR=${MASTER_ADDR:-localhost}
MASTER_PORT=${MASTER_PORT:-29400}
JOB_ID=${JOB_ID:-shardscape}
MEGATRON_LM=${MEGATRON_LM:-.}
# Megatron asserts this with tensor or context parallelism (before Blackwell).
export CUDA_DEVICE_MAX_CONNECTIONS=1

# Mock data and a null tokenizer, so that the script runs as it is: replace --mock-data and the tokenizer arguments
# with your --data-path and tokenizer. With core_v0.19's NullTokenizer --vocab-size 32000 gives 32000 tokens.
torchrun --nnodes "$NNODES" --nproc-per-node "$GPUS_PER_NODE" --rdzv-backend c10d \
    --rdzv-endpoint "$MASTER_ADDR:$MASTER_PORT" --rdzv-id "$JOB_ID" \
    "$MEGATRON_LM/pretrain_gpt.py" \
    --tensor-model-parallel-size 2 \
    --pipeline-model-parallel-size 2 \
    --context-parallel-size 1 \
    --micro-batch-size 1 \
    --global-batch-size 16 \
    --use-distributed-optimizer \
    --recompute-granularity selective \
    --num-layers 32 \
    --hidden-size 4096 \
    --ffn-hidden-size 11008 \
    --num-attention-heads 32 \
    --seq-length 4096 \
    --max-position-embeddings 4096 \
    --swiglu \
    --normalization RMSNorm \
    --position-embedding-type rope \
    --untie-embeddings-and-output-weights \
    --disable-bias-linear \
    --attention-dropout 0.00 \
    --hidden-dropout 0.00 \
    --transformer-impl transformer_engine \
    --bf16 \
    --train-iters 100 \
    --eval-interval 1000 \
    --lr 3.0e-4 \
    --mock-data \
    --tokenizer-type NullTokenizer \
    --vocab-size 32000 \
    "$@"
