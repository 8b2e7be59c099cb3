#!/usr/bin/env bash
# Shardscape Megatron-LM launch script for llama2-70b on 8 x 8 h100-sxm (NVIDIA H100 SXM5 80GB)
# Plan: tp8 pp4 dp2 vpp2 mb1 m8 zero3 sp recompute=full interleaved; global batch 16 x 4096 tokens on 64 GPUs
# Predicted: step time 2.823 s, MFU 16.3 %, HFU 21.7 %, 23214 tokens/s, peak memory 25.9 GB per GPU (datasheet)
# Plan written by tst_plan_export test; model spec 'llama2-70b'
# Framework profile: megatron-core (Megatron-LM core_v0.12-core_v0.15); the plan was made for no framework (plan
#   with --framework megatron-core for its memory terms and limits)
# Framework version: megatron-core core_v0.19 (export --framework-version core_v0.18 | core_v0.17 | core_v0.16 |
#   core_v0.15 writes for another release)
#
# Run this on every node. MEGATRON_LM is a Megatron-LM checkout of core_v0.19,
# MASTER_ADDR the host name of node 0; any arguments are appended to pretrain_gpt.py's.
# The prediction is for Transformer Engine's layer: with --transformer-impl local attention runs
# unfused (slower, s x s probabilities in memory); simulate --from-config predicts that too.
#
# What this target cannot express (also printed by shardscape-cli export):
# - ZeRO-3 is written as Megatron-FSDP (--use-megatron-fsdp with strategy optim_grads_params), Megatron's ZeRO-2/3
#   analogue; it wants CUDA_DEVICE_MAX_CONNECTIONS unset, so the script does not set it
set -euo pipefail

NNODES=${NNODES:-8}
GPUS_PER_NODE=${GPUS_PER_NODE:-8}
MASTER_ADDR=${MASTER_ADDR:-localhost}
MASTER_PORT=${MASTER_PORT:-29400}
JOB_ID=${JOB_ID:-shardscape}
MEGATRON_LM=${MEGATRON_LM:-.}

# Mock data and a null tokenizer, so that the script runs as it is: replace --mock-data and the tokenizer arguments
# with your --data-path and tokenizer. With core_v0.19's NullTokenizer --vocab-size 32000 gives 32000 tokens.
torchrun --nnodes "$NNODES" --nproc-per-node "$GPUS_PER_NODE" --rdzv-backend c10d \
    --rdzv-endpoint "$MASTER_ADDR:$MASTER_PORT" --rdzv-id "$JOB_ID" \
    "$MEGATRON_LM/pretrain_gpt.py" \
    --tensor-model-parallel-size 8 \
    --sequence-parallel \
    --pipeline-model-parallel-size 4 \
    --decoder-first-pipeline-num-layers 18 \
    --decoder-last-pipeline-num-layers 18 \
    --num-virtual-stages-per-pipeline-rank 2 \
    --context-parallel-size 1 \
    --micro-batch-size 1 \
    --global-batch-size 16 \
    --use-megatron-fsdp \
    --data-parallel-sharding-strategy optim_grads_params \
    --no-gradient-accumulation-fusion \
    --use-distributed-optimizer \
    --ckpt-format fsdp_dtensor \
    --init-model-with-meta-device \
    --recompute-granularity full \
    --recompute-method uniform \
    --recompute-num-layers 1 \
    --num-layers 80 \
    --hidden-size 8192 \
    --ffn-hidden-size 28672 \
    --num-attention-heads 64 \
    --group-query-attention \
    --num-query-groups 8 \
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
    --make-vocab-size-divisible-by 32 \
    --bf16 \
    --train-iters 100 \
    --eval-interval 1000 \
    --lr 3.0e-4 \
    --mock-data \
    --tokenizer-type NullTokenizer \
    --vocab-size 32000 \
    "$@"
