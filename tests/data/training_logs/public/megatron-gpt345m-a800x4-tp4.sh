#!/usr/bin/env bash
# Megatron-LM GPT-2 345M pretraining on 1 node x 4 NVIDIA A800 80GB (fp16), written from the argument dump
# ("------------------------ arguments ------------------------") printed in megatron-gpt345m-a800x4-tp4.log.
# Every value below is the value of that dump; nothing is a guess. The author's own script was run as
#   sh pretrain_gpt_distributed_with_4tp.sh
# (Megatron-LM commit 992da75, container nvcr.io/nvidia/pytorch:23.04-py3) and is not published;
# this file restates its arguments as a torchrun line.
# Source: https://github.com/liguodongiot/llm-action/blob/3c6d1c7249787fd3d00b8d7a0f0bc5dc20ac57dd/llm-train/megatron/gpt2/model_train.md
#   (lines 1337-1754; world size 4, data-parallel-size 1, tensor-model-parallel size 4, pipeline-model-parallel size 1)
# Vocabulary: GPT2BPETokenizer, 50257 tokens (the log prints how it is padded for this TP size).
set -euo pipefail

GPUS_PER_NODE=4
NNODES=1

torchrun --nnodes $NNODES --nproc-per-node $GPUS_PER_NODE \
    pretrain_gpt.py \
    --tensor-model-parallel-size 4 \
    --pipeline-model-parallel-size 1 \
    --sequence-parallel \
    --num-layers 24 \
    --hidden-size 1024 \
    --ffn-hidden-size 4096 \
    --num-attention-heads 16 \
    --seq-length 1024 \
    --max-position-embeddings 1024 \
    --micro-batch-size 2 \
    --global-batch-size 8 \
    --lr 0.00015 \
    --train-iters 2000 \
    --lr-decay-iters 320000 \
    --lr-decay-style cosine \
    --min-lr 1e-05 \
    --weight-decay 0.01 \
    --lr-warmup-fraction 0.01 \
    --clip-grad 1.0 \
    --fp16 \
    --data-path /workspace/data/my-gpt2_text_document \
    --tokenizer-type GPT2BPETokenizer \
    --vocab-file /workspace/model/gpt2-vocab/gpt2-vocab.json \
    --merge-file /workspace/model/gpt2-vocab/gpt2-merges.txt \
    --data-impl mmap \
    --split 700,200,100 \
    --log-interval 100 \
    --save-interval 1000 \
    --eval-interval 1000 \
    --eval-iters 10 \
    --save /workspace/model/megatron-models/345m-init-4tp \
    --load /workspace/model/megatron-models/345m-init-4tp
