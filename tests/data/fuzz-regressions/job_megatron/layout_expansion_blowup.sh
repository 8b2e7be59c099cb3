torchrun --nnodes 1 --nproc-per-node 8 pretrain_gpt.py \
    --tensor-model-parallel-size 1 --pipeline-model-parallel-size 2 --micro-batch-size 1 --global-batch-size 16 \
    --num-layers 32 --hidden-size 4096 --num-attention-heads 32 --seq-length 4096 --max-position-embeddings 4096 \
    --pipeline-model-parallel-layout "((t*999999)*999999)*999999"
