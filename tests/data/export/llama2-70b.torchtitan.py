# Shardscape torchtitan config for llama2-70b on 8 x 8 h100-sxm (NVIDIA H100 SXM5 80GB)
# Plan: tp8 pp4 dp2 vpp2 mb1 m8 zero3 sp recompute=full interleaved; global batch 16 x 4096 tokens on 64 GPUs
# Predicted: step time 2.823 s, MFU 16.3 %, HFU 21.7 %, 23214 tokens/s, peak memory 25.9 GB per GPU (datasheet)
# Plan written by tst_plan_export test; model spec 'llama2-70b'
# Framework profile: torchtitan (torchtitan v0.2.0-v0.2.2 (PyTorch 2.8-2.9 FSDP2)); the plan was made for no
#   framework (plan with --framework torchtitan for its memory terms and limits)
# Framework version: torchtitan main (export --framework-version v0.2 writes for another release)
#
# A torchtitan config module for torchtitan main (Python configs; fields of commit b5bcd76,
# 2026-08-21). Save it as plan_config.py and run on every node, with its folder on PYTHONPATH:
#   torchrun --nnodes 8 --nproc-per-node 8 --rdzv-backend c10d --rdzv-endpoint HOST:29400 --rdzv-id JOB \
#       -m torchtitan.train --module plan_config --config shardscape_plan
# (shardscape-cli export --format torchrun writes a launcher that does this).
#
# What this target cannot express (also printed by shardscape-cli export):
# - torchtitan's llama3 model has no built-in flavor for llama2-70b: register flavor 'llama2-70b' in
#   torchtitan/models/llama3/__init__.py with dim 8192, n_layers 80, n_heads 64, n_kv_heads 8, FFN hidden 28672,
#   vocab_size 32000
# - the config starts from torchtitan's llama3_8b recipe (llama3 flavor 8B) with the model swapped for
#   'llama2-70b'

from torchtitan.distributed.activation_checkpoint import FullAC
from torchtitan.models.common.config_utils import decoder_vocab_size
from torchtitan.models.llama3 import model_registry
from torchtitan.models.llama3.config_registry import llama3_8b
from torchtitan.trainer import Trainer


def shardscape_plan() -> Trainer.Config:
    config = llama3_8b()
    config.model_spec = model_registry("llama2-70b")  # register this flavor (see the notes)
    config.loss.loss_fn.global_vocab_size = decoder_vocab_size(config.model_spec)
    config.dump_folder = "./outputs"
    config.parallelism.data_parallel_replicate_degree = 1
    config.parallelism.data_parallel_shard_degree = 2
    config.parallelism.fsdp_reshard_after_forward = "always"  # ZeRO-3
    config.parallelism.tensor_parallel_degree = 8
    config.parallelism.enable_sequence_parallel = True
    config.parallelism.context_parallel_degree = 1
    config.parallelism.pipeline_parallel_degree = 4
    config.parallelism.pipeline_parallel_schedule = "Interleaved1F1B"
    config.parallelism.num_pp_microbatches = 8
    config.parallelism.module_fqns_per_model_part = [
        ["tok_embeddings", "layers.0", "layers.1", "layers.2", "layers.3", "layers.4", "layers.5", "layers.6",
         "layers.7", "layers.8"],
        ["layers.9", "layers.10", "layers.11", "layers.12", "layers.13", "layers.14", "layers.15", "layers.16",
         "layers.17", "layers.18", "layers.19"],
        ["layers.20", "layers.21", "layers.22", "layers.23", "layers.24", "layers.25", "layers.26", "layers.27",
         "layers.28", "layers.29", "layers.30"],
        ["layers.31", "layers.32", "layers.33", "layers.34", "layers.35", "layers.36", "layers.37", "layers.38",
         "layers.39"],
        ["layers.40", "layers.41", "layers.42", "layers.43", "layers.44", "layers.45", "layers.46", "layers.47",
         "layers.48"],
        ["layers.49", "layers.50", "layers.51", "layers.52", "layers.53", "layers.54", "layers.55", "layers.56",
         "layers.57", "layers.58", "layers.59"],
        ["layers.60", "layers.61", "layers.62", "layers.63", "layers.64", "layers.65", "layers.66", "layers.67",
         "layers.68", "layers.69", "layers.70"],
        ["layers.71", "layers.72", "layers.73", "layers.74", "layers.75", "layers.76", "layers.77", "layers.78",
         "layers.79", "norm", "lm_head"],
    ]
    config.training.disable_cuda_graphs = True
    config.training.max_context_length = 4096
    config.training.num_tokens_per_microbatch_per_dp_rank = 4096  # micro-batch 1 x 4096 tokens
    config.training.num_tokens_per_train_step = 65536  # global batch 16 x 4096 tokens
    config.training.mixed_precision_param = "bfloat16"
    config.activation_checkpoint = FullAC.Config()
    config.compile.enable = True
    config.compile.components = ["model", "loss"]
    config.compile.enable_async_tensor_parallel = False
    return config
