// SPDX-License-Identifier: MIT
// What each training framework allocates and can run, read from its source. Each value cites the file and the
// function it comes from; "UNVERIFIED" marks an estimate no source states.
#include "shardscape/cost/framework_profile.h"

#include "shardscape/cost/parallel_config.h"
#include "shardscape/model/model_graph.h"
#include "shardscape/support/strings.h"
#include "shardscape/support/units.h"

#include <algorithm>
#include <array>

namespace shardscape {

std::string_view frameworkName(Framework framework)
{
    switch (framework) {
    case Framework::Generic:
        return "generic";
    case Framework::MegatronCore:
        return "megatron-core";
    case Framework::NeMo:
        return "nemo";
    case Framework::Torchtitan:
        return "torchtitan";
    case Framework::DeepSpeed:
        return "deepspeed";
    case Framework::Composer:
        break;
    }
    return "composer";
}

std::optional<Framework> parseFramework(std::string_view name)
{
    for (const auto f : allFrameworks())
        if (frameworkName(f) == name)
            return f;
    if (name == "megatron" || name == "megatron-lm" || name == "mcore")
        return Framework::MegatronCore;
    if (name == "titan")
        return Framework::Torchtitan;
    if (name == "llm-foundry")
        return Framework::Composer;
    return std::nullopt;
}

const std::vector<Framework>& allFrameworks()
{
    static const std::vector<Framework> all {Framework::Generic,    Framework::MegatronCore, Framework::NeMo,
                                             Framework::Torchtitan, Framework::DeepSpeed,    Framework::Composer};
    return all;
}

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

/**
 * Shared by every PyTorch-based framework on a current CUDA (12.x, lazy module loading):
 * - CUDA context plus the loaded kernel images: 300-400 MiB with lazy module loading (PyTorch maintainers in
 *   pytorch/pytorch issues #107667 and #109888; it grows with the number of distinct kernels a job loads).
 * - cuBLAS workspace: PyTorch's getChosenWorkspaceSize() (aten/src/ATen/cuda/CublasHandlePool.cpp) defaults to
 *   32 MiB on sm90 (4 MiB x 8 otherwise) per handle and stream; a training step uses the compute stream and,
 *   with overlapped communication, one or two side streams: 3 handles.
 * - NCCL: every communicator the rank has used keeps NCCL_BUFFSIZE (4 MiB) per channel and peer for its
 *   protocols (nccl src/transport/p2p.cc, net.cc); with 16-32 channels on NVLink/IB nodes that is 100-250 MiB per
 *   communicator (UNVERIFIED average).
 */
FrameworkProfile pytorchRuntime(FrameworkProfile p)
{
    p.cuda_context_bytes = 384 * kMiB;
    p.cublas_workspace_bytes = 3 * 32 * kMiB;
    p.nccl_bytes_per_communicator = 160 * kMiB;
    return p;
}

FrameworkProfile generic()
{
    FrameworkProfile p;
    p.framework = Framework::Generic;
    p.version = "none (CostParams coefficients)";
    p.moe_a2a_overlap = true; // generic runs whatever a plan asks for
    p.moe_shared_expert_overlap = true;
    p.fp8_bf16_edge_layers = true;
    p.grad_reduce_bf16 = true;
    return p;
}

/**
 * Megatron-LM core_v0.12 - core_v0.15:
 * - weights bf16 (Float16Module, megatron/core/transformer/module.py);
 * - main grads in one fp32 buffer per bucket group: DistributedDataParallelConfig.grad_reduce_in_fp32 is set from
 *   --accumulate-allreduce-grads-in-fp32, which megatron/training/arguments.py forces on for bf16
 *   (validate_args); megatron/core/distributed/param_and_grad_buffer.py _ParamAndGradBuffer allocates grad_data
 *   for every parameter, and the distributed optimizer shards only the fp32 master params and Adam states
 *   (docs/source/api-guide/dist_optimizer.md: 6 + 12/d bytes per parameter with bf16 params and fp32 grads);
 * - loss: tensor_parallel.vocab_parallel_cross_entropy(logits.float(), ...) (megatron/core/tensor_parallel/
 *   cross_entropy.py, _VocabParallelCrossEntropy.forward): the fp32 copy is turned into exp_logits in place and
 *   saved (4 B per logit); the bf16 logits are live beside it (2 B); backward scales the saved softmax in place
 *   and casts it to bf16 (2 B): 6 B per logit at either peak, 2 beyond the saved 4;
 * - Megatron-FSDP (ZeRO-2/3, --use-megatron-fsdp): fp32 main params and grads sharded, bf16 buffers per module;
 * - schedules: forward_backward_pipelining_without_interleaving (1F1B) and _with_interleaving
 *   (megatron/core/pipeline_parallel/schedules.py get_forward_backward_func); no GPipe, no zero-bubble schedule;
 * - caching allocator: reserved / allocated around 1.1 at the peak (Megatron's "max reserved" / "max allocated"
 *   log lines; the measured-peak set, tests/data/measured_peaks.md).
 */
FrameworkProfile megatronCore()
{
    FrameworkProfile p = pytorchRuntime({});
    p.framework = Framework::MegatronCore;
    p.version = "Megatron-LM core_v0.12-core_v0.15";
    p.zero3_unsharded_grad_bytes = 4; // Megatron-FSDP reduces the fp32 main grads of the module's bucket
    p.loss_working_bytes_per_logit = 2;
    p.fragmentation = 1.10;
    p.schedules = {ScheduleKind::OneFOneB, ScheduleKind::Interleaved1F1B};
    // Context parallelism: cp_comm_type defaults to "p2p" (megatron/core/transformer/transformer_config.py), i.e.
    // Transformer Engine's AttnFuncWithCPAndKVP2P (transformer_engine/pytorch/attention/dot_product_attention/
    // context_parallel.py): a ring of K/V sends, each overlapped with one step's attention, the per-step outputs
    // corrected into one output by flash_attn_fwd_out_correction (read the step's bf16 output, read and write the
    // accumulator: ~10 B per element); backward sends K/V and the 16-bit dK/dV together along the ring.
    // TP overlap (Transformer Engine userbuffers, transformer_engine/common/comm_gemm_overlap/
    // comm_gemm_overlap.cpp split_overlap_ag / split_overlap_rs): the chunk GEMMs go round-robin onto
    // _stream_compute (num_max_streams = 3), so consecutive chunks run concurrently: no chunking penalty.
    p.tp_overlap_serial_chunks = false;
    // Column-parallel backward (megatron/core/tensor_parallel/layers.py LinearWithGradAccumulationAndAsync-
    // Communication.backward): under SP the all-gather of the saved input shard is issued async before the dgrad
    // GEMM; the dgrad's all-reduce (allreduce_dgrad, tp > 1 without SP) or reduce-scatter (SP) is issued async
    // before the wgrad GEMM and waited for after it (CUDA_DEVICE_MAX_CONNECTIONS=1 keeps the order). Transformer
    // Engine's Linear does the same (transformer_engine/pytorch/module/linear.py _Linear.backward). Megatron-LM
    // has done it since 2021 (--no-async-tensor-model-parallel-allreduce turned it off).
    p.tp_backward_comm_async = true;
    // Pipeline p2p (megatron/core/pipeline_parallel/p2p_communication.py _communicate): batched isend/irecv whose
    // requests are waited for before the call returns (wait_on_reqs=True) in the 1F1B schedule, so the stage's
    // compute waits for its own send; the interleaved schedule passes wait_on_reqs=(not overlap_p2p_comm), and
    // megatron/training/arguments.py turns overlap_p2p_comm on by default there (--no-overlap-p2p-communication)
    // and forces it off without interleaving.
    p.pipeline_p2p_blocks_compute = true;
    p.interleaved_p2p_overlaps = true;
    // --fp8-recipe (megatron/training/arguments.py): tensorwise (Transformer Engine's Float8CurrentScaling, the
    // dynamic per-tensor scaling the cost model prices), delayed, mxfp8, blockwise; no per-row scaling.
    p.fp8_recipes = {Float8Recipe::Tensorwise};
    // --overlap-moe-expert-parallel-comm (megatron/core/pipeline_parallel/ combined 1F1B with
    // --delay-wgrad-compute): a forward and a backward micro-batch interleaved layer by layer.
    p.moe_a2a_overlap = true;
    // --moe-shared-expert-overlap (megatron/core/transformer/moe/shared_experts.py SharedExpertMLP.stream).
    p.moe_shared_expert_overlap = true;
    p.cp_comm = CpComm::P2PRing;
    p.cp_merge_bytes_per_element = 10;
    p.cp_dkv_bytes_per_element = 2;
    // Attention is Transformer Engine's DotProductAttention (megatron/core/extensions/transformer_engine.py
    // TEDotProductAttention). Its backend choice (transformer_engine/pytorch/attention/dot_product_attention/
    // utils.py get_attention_backend, "Select FusedAttention for performance"; on sm90 since TE 225b560e9, 2023-12)
    // drops FlashAttention for cuDNN's FusedAttention on sm90 and newer whenever both can run the shape.
    p.vendor_fused_attention = true;
    // FP8 linears are Transformer Engine's. linear_qkv and linear_fc1 are TELayerNormColumnParallelLinear
    // (megatron/core/models/gpt/gpt_layer_specs.py via column_parallel_layer_norm_linear), whose norm kernel writes
    // the FP8 input (transformer_engine/pytorch/module/layernorm_linear.py, with_quantized_norm) and whose QKV or
    // gate-and-up GEMM is one; linear_proj and linear_fc2 cast their inputs. Each module's FP8 weight is cast on a
    // chunk's first micro-batch and reused (transformer_engine/pytorch/module/linear.py: update_ws =
    // is_first_microbatch; TELinear.forward passes is_first_microbatch unless disable_parameter_transpose_cache).
    // Under SP the FP8 input is gathered as FP8 (gather_along_first_dim with the input quantizer), and so is the
    // output gradient of a row-parallel linear in backward.
    p.fp8_cast_in_norm = true;
    p.fp8_weight_cached_per_step = true;
    p.tp_gathers_fp8_tensorwise = true;
    // SelfAttention's linear_qkv projects to query_projection_size + 2 kv_projection_size in one GEMM, and MLP's
    // linear_fc1 to 2 ffn_hidden_size when gated (megatron/core/transformer/attention.py, mlp.py).
    p.fused_column_gemms = true;
    // --first-last-layers-bf16 (megatron/core/fp8_utils.py get_fp8_context: is_first_last_bf16_layer blocks run
    // without the FP8 autocast); transformer_config.py refuses it with the delayed recipe only.
    p.fp8_bf16_edge_layers = true;
    // Transformer Engine's weight workspace (transformer_engine/pytorch/module/base.py get_weight_workspace, TE 2.9):
    // with is_first_microbatch given (TELinear.forward passes it unless disable_parameter_transpose_cache), the FP8
    // weight is cached in the module's _fp8_workspaces across micro-batches and steps, with its transpose where the
    // device takes FP8 GEMMs in the TN layout only. --fp8-param-gather (fp8_model_init) makes the parameter itself
    // the FP8 tensor; megatron/training/arguments.py asserts the distributed optimizer or an FSDP for it.
    p.fp8_weight_cache = true;
    // --grad-reduce-in-bf16 (megatron/training/arguments.py validate_args turns accumulate_allreduce_grads_in_fp32
    // off; megatron/core/distributed/param_and_grad_buffer.py group_params_for_buffers: grad_dtype = param.dtype).
    p.grad_reduce_bf16 = true;
    return p;
}

/** NeMo 2.x runs Megatron-Core (the same buffers and schedules); its performance recipes set
    PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (nemo/lightning/run/plugins.py PerfEnvPlugin), which removes
    most of the allocator's split-block slack. */
FrameworkProfile nemo()
{
    FrameworkProfile p = megatronCore();
    p.framework = Framework::NeMo;
    p.version = "NeMo 2.x (Megatron-Core underneath)";
    p.fragmentation = 1.03;
    return p;
}

/**
 * torchtitan v0.2.x (FSDP2, torch.distributed.fsdp.fully_shard):
 * - parameters sharded in fp32; MixedPrecisionPolicy(param_dtype=bfloat16, reduce_dtype=float32)
 *   (torchtitan/models/llama3/infra/parallelize.py apply_fsdp) all-gathers bf16 copies per block, so the
 *   master copy is the fp32 shard itself (4/d), grads sharded fp32 (4/d), AdamW states 8/d;
 * - unsharded: the running block and the one prefetched (FSDP2 implicit forward prefetch of one module,
 *   torch/distributed/fsdp/_fully_shard/_fsdp_state.py); in backward the block's bf16 grads plus their fp32
 *   copy for the reduce-scatter (reduce_dtype float32, _fsdp_collectives.py foreach_reduce): 2 + 4 B/element;
 * - loss: cross_entropy_loss (torchtitan/components/loss.py) = F.cross_entropy(pred.flatten(0, 1).float(), ...):
 *   log_softmax's fp32 output is saved (4 B per logit); at the forward's peak the bf16 logits and the fp32 copy
 *   are live (2 + 4); the train step deletes the logits before backward, where NLL's dense fp32 gradient and
 *   log-softmax's fp32 input gradient are live beside the saved output (4 + 4): 8 B working;
 * - with TP the train context enables loss_parallel (train.py, parallelism.disable_loss_parallel false), and the
 *   loss runs through DTensor's handlers (torch/distributed/tensor/parallel/loss.py): _log_softmax keeps the fp32
 *   input, the shifted copy and exp() or the result at once beside the bf16 logits (2 + 4 + 4 + 4, of which the
 *   result's 4 are the saved output), and _nll_loss_and_log_softmax_backward holds grad_input, grad_input +
 *   exp(x) and its product with grad_output beside the saved output (4 + 4 + 4): 12 B working;
 * - compiled (compile.components includes "loss" by default, torchtitan/components/loss.py
 *   build_cross_entropy_loss; from pytorch/torchtitan#1033, 2025-04): the upcast, log-softmax and NLL form one
 *   joint graph. The min-cut partitioner (torch/_functorch/partitioners.py) bans recomputing the row reductions
 *   (amax, sum of exp: output 4x smaller than input) and may recompute the pointwise rest, whose [N, V] fp32
 *   tensors are unmaterialized (fusible) and so weigh twice their size, so the cheapest cut is the 16-bit logits
 *   themselves plus per-row statistics: 2 B saved per logit. The fused backward writes the 16-bit logits'
 *   gradient directly: 2 B working, with or without loss_parallel;
 * - under pipeline parallelism torchtitan sets reshard_after_forward=False (apply_fsdp), and it never reshards the
 *   final norm and output after forward: a stage keeps its blocks' bf16 copies from forward to backward;
 * - v0.2.x trains in bf16 under TP or PP only with FSDP: without dp_shard or cp the model keeps fp32 weights
 *   (training.mixed_precision applies in apply_fsdp), so that release requires dp x cp >= 2 there; main applies
 *   FSDP at any degree (models/llama3/parallelize.py), so mixed precision always holds;
 * - schedules: torch.distributed.pipelining ScheduleGPipe, Schedule1F1B, ScheduleInterleaved1F1B, and the V-shaped
 *   ScheduleZBVZeroBubble and ScheduleDualPipeV (torchtitan's pipeline_parallel_schedule "ZBVZeroBubble",
 *   "DualPipeV"); no ZB-H1 (its other zero-bubble schedule is an interleaved one); Schedule1F1B raises when
 *   n_microbatches < num_stages.
 */
FrameworkProfile torchtitan()
{
    FrameworkProfile p = pytorchRuntime({});
    p.framework = Framework::Torchtitan;
    p.version = "torchtitan v0.2.0-v0.2.2 (PyTorch 2.8-2.9 FSDP2)";
    p.sharded_fp32_params = true;
    p.master_bytes = 0;
    p.zero3_unsharded_grad_bytes = 2 + 4;
    p.keeps_last_forward_gather = true;
    // Its layer-wise selective AC wraps every k-th block counted over the whole model (torchtitan/distributed/
    // activation_checkpoint.py _apply_layer_sac: _layer_sac_count % ac_freq == 0), not the first n of each stage.
    p.block_recompute = false;
    // The sharded gradients are freed each step too (optimizers.zero_grad()), but FSDP2 allocates them on its
    // reduce-scatter stream (torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py foreach_reduce:
    // reduce_output is allocated under reduce_scatter_stream), whose cached blocks the compute stream's
    // activations cannot reuse: they stay reserved beside the activation peak, so gradients_freed_each_step stays
    // false. Set, it takes the 26 torchtitan peaks 4-14% under the reserved figures they measured (session 24).
    p.fsdp_gathers_fp8_tensorwise = true;
    p.loss_working_bytes_per_logit = 8;
    p.loss_parallel_eager_working_bytes_per_logit = 12;
    p.compiles_loss = true;
    // Attention.forward repeats K and V to the query heads (repeat_kv) before F.scaled_dot_product_attention up to
    // v0.2.1 (torchtitan/models/llama3/model/model.py); v0.2.2 passes enable_gqa instead (pytorch/torchtitan#2259).
    // The published torchtitan runs, and the layer measured in tests/data/measured_layers_h100.json, repeat.
    p.attention_repeats_kv = true;
    // Tensor parallelism is DTensor's (torchtitan/models/llama3/infra/parallelize.py apply_tp): PrepareModuleInput
    // redistributes the norm's sequence shard to Replicate (an all-gather) before attention and feed_forward, and
    // the colwise wq/wk/wv and w1/w3 matmuls save that gathered tensor for backward, as does the output projection
    // (ColwiseParallel with input_layouts Shard(1)). Megatron saves the shard and gathers again in backward.
    p.sp_saves_gathered_inputs = true;
    p.fragmentation = 1.05;
    p.zero_stages = {2, 3};
    p.schedules = {ScheduleKind::GPipe, ScheduleKind::OneFOneB, ScheduleKind::Interleaved1F1B,
                   ScheduleKind::ZeroBubbleV, ScheduleKind::DualPipeV};
    p.requires_sharded_dp = true;
    p.microbatches_at_least_stages = true;
    // Context parallelism is PyTorch's context_parallel (torch/distributed/tensor/experimental/_attention.py):
    // _cp_options.rotate_method defaults to ALL_GATHER (_AllGatherRotater: one all-gather of K/V issued at the first
    // step, waited for at the second), and _templated_ring_attention merges every step's output with
    // _SDPAMerger(convert_to_f32=True): block_out.to(float32) (2 read, 4 written), out - block_out (8, 4),
    // sigmoid(lse diff) * diff (4, 4), out - that (8, 4) = 38 B per output element per step. Backward re-gathers
    // K/V and rotates dK/dV with the ALL_TO_ALL rotater in the fp32 accumulation dtype
    // (_templated_ring_attention_backward: accum_dtype = float32).
    // Async TP (torch/distributed/_symmetric_memory/__init__.py _fused_all_gather_matmul_impl and
    // _fused_matmul_reduce_scatter_impl): the shards are consumed one by one by separate matmuls on the current
    // stream while copy engines move the next shard, so each GEMM runs as tp GEMMs of m / tp rows.
    p.tp_overlap_serial_chunks = true;
    p.tp_overlap_by_pattern = true;
    // torchtitan/models/llama3/infra/parallelize.py: float8 TP (torchao's Float8ColwiseParallel / RowwiseParallel)
    // for tensorwise recipes only; rowwise recipes run regular TP.
    p.tp_gathers_fp8_tensorwise = true;
    p.cp_comm = CpComm::AllGather;
    p.cp_merge_bytes_per_element = 38;
    p.cp_dkv_bytes_per_element = 4;
    // torchtitan's MoE (torchtitan/models/common/moe.py) routes token choice top-k with no capacity: dropless.
    p.moe_token_dropping = false;
    return p;
}

/**
 * DeepSpeed (v0.14+; Megatron-DeepSpeed and HF Trainer jobs):
 * - ZeRO paper accounting (Rajbhandari et al. 2020, Sec. 3): 2 (16-bit params) + 2 (16-bit grads) + 12 (fp32
 *   master, momentum, variance); stage 1 shards the 12 (4 + 12/d), stage 2 also the grads (2 + 14/d), stage 3
 *   everything (16/d). bf16 with ZeRO accumulates gradients in bf16 unless grad_accum_dtype is fp32
 *   (deepspeed/runtime/engine.py _configure_optimizer picks stage_1_and_2 over BF16_Optimizer), so 2 B grads;
 * - stage 2/3 (deepspeed/runtime/zero/stage_1_and_2.py, stage3.py): an ipg bucket of reduce_bucket_size (default
 *   5e8 elements, deepspeed/runtime/zero/config.py) in bf16, doubled when overlap_comm is on, which is the
 *   default for stage 3 only: 1 GB at stage 2, 2 GB at stage 3;
 * - stage 3 (deepspeed/runtime/zero/stage3.py): parameters fetched per module through
 *   PartitionedParameterCoordinator with prefetch buckets of stage3_prefetch_bucket_size (5e7 elements), at most
 *   stage3_max_live_parameters (1e9) live; one reduce bucket (5e8 x 2 B);
 * - allgather_bucket_size gathers into the bf16 parameters in place (no extra buffer);
 * - loss: the model's own (Megatron-DeepSpeed: vocab_parallel_cross_entropy on fp32 logits);
 * - the pipeline engine (deepspeed/runtime/pipe/engine.py) runs TrainSchedule (1F1B) only and asserts ZeRO < 2;
 *   no ring context parallelism (DeepSpeed-Ulysses is a different scheme), no FP8 training;
 * - gradient sync after backward, not under it: the pipeline engine's TrainSchedule (pipe/schedule.py) issues
 *   ReduceTiedGrads and ReduceGrads after the last micro-batch's backward, and without a pipeline stage 1/2 run
 *   their reduction buckets on the compute stream unless overlap_comm is set (zero/config.py: on by default at
 *   stage 3 only);
 * - bf16 with a pipeline at ZeRO stage 0 (how Megatron-DeepSpeed configures bf16 pipelines) runs BF16_Optimizer
 *   (engine.py _do_optimizer_sanity_check), which shards the fp32 master weights and Adam states itself, as ZeRO-1,
 *   and keeps fp32 gradient buffers for the stage's whole flat bf16 group beside the bf16 .grad
 *   (runtime/bf16_optimizer.py); _exec_reduce_grads calls _bf16_reduce_grads, which all-reduces those buffers;
 *   at stage 1 with the default bf16 grad_accum_dtype the engine runs ZeRO-1 (stage_1_and_2) with bf16 gradients;
 * - pipeline p2p is synchronous: pipe/p2p.py send() and recv() assert async_op == False and call dist.send /
 *   dist.recv, which wait for the transfer on the calling stream; TrainSchedule's SendActivation, RecvGrad,
 *   SendGrad and RecvActivation each stop the stage's compute while they run;
 * - pipe/engine.py _exec_forward_pass keeps pipe_buffers['outputs'][buffer_id] until _exec_backward_pass frees
 *   it, and computes on pipe_buffers['inputs'][buffer_id].clone(): with tensor parallelism (is_pipe_partitioned,
 *   the default pipeline.pipe_partitioned) the output is replaced by its 1/tp PartitionedTensor and the input
 *   buffer by the gathered tensor the forward uses; without it the stage keeps the whole output and the received
 *   input beside its clone;
 * - with tensor parallelism the stage-to-stage tensors travel partitioned (pipe/engine.py: is_pipe_partitioned and
 *   is_grad_partitioned = is_model_parallel): _exec_forward_pass wraps the output in a PartitionedTensor over the
 *   slice-parallel (TP) group and _exec_send_activations sends its meta and 1/tp data; the receiver rebuilds it
 *   with PartitionedTensor.from_meta(...).full(), an all-gather over the TP group, before the forward;
 *   _exec_send_grads / _exec_backward_pass do the same for the input's gradient.
 */
FrameworkProfile deepSpeed()
{
    FrameworkProfile p = pytorchRuntime({});
    p.framework = Framework::DeepSpeed;
    p.version = "DeepSpeed v0.14-v0.18";
    p.grad_bytes = 2;
    p.grad_bucket_bytes = 5e8 * 2; // doubled at stage 3 (overlap_comm), fixedBufferBytes
    p.zero3_unsharded_grad_bytes = 2;
    p.loss_working_bytes_per_logit = 2; // Megatron-DeepSpeed's vocab_parallel_cross_entropy, as Megatron
    p.fragmentation = 1.15;
    p.sharded_dp = ShardedDpImpl::PerParameter;
    p.zero3_prefetch_elements = 5e7; // stage3_prefetch_bucket_size default (deepspeed/runtime/zero/config.py)
    // stage3.py releases a module's parameters after its forward (release_sub_module); the checkpointed forward
    // triggers the pre-forward hook again and fetches them a third time per micro-batch.
    p.zero3_regather_for_recompute = true;
    // Each module's fetch waits on its pre-forward hook and on the coordinator's trace (stage3.py
    // fetch_sub_module): host work per parameter group of ~0.5 ms (UNVERIFIED order of magnitude).
    p.sharded_dp_overhead_s = 0.5e-3;
    p.grad_sync_overlaps_backward = false;
    p.pipeline_bf16_fp32_grads = true;
    p.pipeline_p2p_blocks_compute = true;
    p.pipeline_keeps_stage_io = true;
    p.pipeline_p2p_partitioned = true;
    p.schedules = {ScheduleKind::OneFOneB};
    p.pipeline_with_zero23 = false;
    p.context_parallel = false;
    p.fp8 = false;
    // deepspeed.checkpointing checkpoints what the model's code wraps, and the DeepSpeed config the export writes has
    // no "first n blocks of each stage" setting (its activation_checkpointing keys tune how, not which).
    p.block_recompute = false;
    return p;
}

/**
 * Composer / llm-foundry (FSDP1 through composer.distributed): FULL_SHARD or SHARD_GRAD_OP with mixed precision
 * DEFAULT (composer/distributed/mosaic_parallelism.py get_mixed_precision: param_dtype = the autocast dtype,
 * reduce_dtype float32), so sharded flat parameters stay fp32 like FSDP2; limit_all_gathers keeps two blocks'
 * unsharded parameters live. Loss: llm-foundry's ComposerMPTCausalLM builds loss_fn from model.loss_fn, default
 * 'fused_crossentropy' = flash_attn.losses.cross_entropy.CrossEntropyLoss (xentropy_cuda): forward takes the 16-bit
 * logits as they are and saves them with an fp32 log-sum-exp per row; backward writes a 16-bit gradient of the same
 * shape. No fp32 copy of the logits exists: 2 B per logit saved (the logits), 2 B working (their gradient).
 * No pipeline or ring context parallelism; llm-foundry's benchmarks run FSDP only.
 */
FrameworkProfile composer()
{
    FrameworkProfile p = torchtitan();
    p.framework = Framework::Composer;
    p.version = "Composer 0.2x / llm-foundry (FSDP1)";
    p.zero_stages = {0, 2, 3};
    p.schedules = {};
    p.requires_sharded_dp = false;
    p.microbatches_at_least_stages = false;
    p.context_parallel = false;
    p.expert_parallel = false;
    p.tensor_parallel = false;
    p.loss_saved_bytes_per_logit = 2;
    p.loss_working_bytes_per_logit = 2;
    // llm-foundry's default attn_impl 'flash' (flash_attn_varlen_func) takes the kv heads as they are.
    p.attention_repeats_kv = false;
    p.fragmentation = 1.10;
    return p;
}

} // namespace

const FrameworkProfile& frameworkProfile(Framework framework)
{
    static const std::array<FrameworkProfile, 6> profiles {generic(),    megatronCore(), nemo(),
                                                           torchtitan(), deepSpeed(),    composer()};
    return profiles[static_cast<std::size_t>(framework)];
}

const std::vector<std::string>& frameworkVersions(Framework framework)
{
    // Megatron-LM: the release tags whose arguments.py the export was checked against (tests/data/
    // framework_schemas); NullTokenizer's vocabulary rule changed at core_v0.18. torchtitan: main's Python config
    // modules (the format since commit 9810191, 2026-02-23) and the v0.2.x TOML job files. DeepSpeed: master after
    // v0.19.5.
    static const std::vector<std::string> megatron {"core_v0.19", "core_v0.18", "core_v0.17", "core_v0.16",
                                                    "core_v0.15"};
    static const std::vector<std::string> torchtitan {"main", "v0.2"};
    static const std::vector<std::string> deepspeed {"v0.19"};
    static const std::vector<std::string> none;
    switch (framework) {
    case Framework::MegatronCore:
        return megatron;
    case Framework::Torchtitan:
        return torchtitan;
    case Framework::DeepSpeed:
        return deepspeed;
    case Framework::Generic:
    case Framework::NeMo:
    case Framework::Composer:
        break;
    }
    return none;
}

std::optional<std::string> resolveFrameworkVersion(Framework framework, std::string_view requested)
{
    const auto& versions = frameworkVersions(framework);
    if (versions.empty())
        return requested.empty() ? std::optional<std::string>(std::string()) : std::nullopt;
    if (requested.empty())
        return versions.front();
    for (const auto& v : versions) {
        // A patch release names its line: core_v0.19.1 -> core_v0.19, v0.2.2 -> v0.2.
        if (requested == v
            || (requested.size() > v.size() + 1 && requested.substr(0, v.size()) == v && requested[v.size()] == '.'
                && requested.find_first_not_of("0123456789", v.size() + 1) == std::string_view::npos))
            return v;
    }
    return std::nullopt;
}

std::pair<std::string, std::string> unknownFrameworkVersion(Framework framework, std::string_view requested)
{
    const std::string_view name = frameworkName(framework);
    const auto& versions = frameworkVersions(framework);
    return {cat("'", requested, "' is not a ", name, " release Shardscape writes for"),
            versions.empty() ? cat("leave it empty (or name the framework first): ", name, " has no exporter")
                             : cat("use ", join(versions), " (the first is the default)")};
}

std::string zeroStageList(const FrameworkProfile& p)
{
    std::string stages;
    for (const int z : p.zero_stages)
        stages += cat(stages.empty() ? "" : ", ", z);
    return stages;
}

std::string scheduleList(const FrameworkProfile& p)
{
    std::string names;
    for (const auto s : p.schedules)
        names += cat(names.empty() ? "" : ", ", scheduleName(s));
    return names;
}

namespace {

/**
 * What only some releases of a framework refuse. A configuration names its release when it is written for one (an
 * export resolves it, the current line by default); one that names none is costed for the framework as a whole.
 */
std::string releaseRestriction(const FrameworkProfile& p, const ParallelConfig& c)
{
    if (p.framework != Framework::Torchtitan || c.framework_version.empty())
        return {};
    const std::string version = resolveFrameworkVersion(p.framework, c.framework_version).value_or("");
    if (version == "v0.2") {
        // torchtitan/distributed/utils.py maybe_enable_amp (v0.2.2): without FSDP (dp_shard and cp 1) mixed
        // precision comes from autocast, which it refuses under TP or PP ("only supported when FSDP/HSDP/CP is
        // enabled"): the model then trains in training.dtype, float32.
        if (p.requires_sharded_dp && c.dp * c.cp < 2 && (c.tp > 1 || c.pp > 1))
            return cat("torchtitan v0.2 trains in bf16 with TP or PP only under FSDP, which needs dp x cp >= 2 (got ",
                       c.dp * c.cp, "): without it the model trains in float32; export for torchtitan main");
        return {};
    }
    // main: float8 linears have the rowwise recipes only (commit 6348d93d1), and expert tensor parallelism is gone
    // (commit c4b409af2): experts are whole on each expert-parallel rank.
    if (c.fp8_linears && c.fp8_recipe != Float8Recipe::Rowwise)
        return cat("torchtitan main has only rowwise float8 recipes (got ", float8RecipeName(c.fp8_recipe),
                   "): use the rowwise recipe, or export for torchtitan v0.2");
    if (c.ep > 1 && c.expertTp() > 1)
        return cat("torchtitan main has no expert tensor parallelism (experts split over ", c.expertTp(),
                   " ranks): set etp 1, or export for torchtitan v0.2");
    return {};
}

} // namespace

std::string frameworkRestriction(const FrameworkProfile& p, const ParallelConfig& c)
{
    const std::string_view name = frameworkName(p.framework);
    if (std::find(p.zero_stages.begin(), p.zero_stages.end(), c.zero_stage) == p.zero_stages.end())
        return cat(name, " runs ZeRO stages ", zeroStageList(p), " only (got ", c.zero_stage,
                   "): choose one of those, or --framework generic");
    if (c.pp > 1) {
        if (p.schedules.empty())
            return cat(name, " has no pipeline parallelism: set pp to 1, or choose another framework");
        if (std::find(p.schedules.begin(), p.schedules.end(), c.schedule) == p.schedules.end())
            return cat(name, " has no ", scheduleName(c.schedule), " pipeline schedule (it runs ", scheduleList(p),
                       ")");
        if (!p.pipeline_with_zero23 && c.zero_stage >= 2)
            return cat(name, "'s pipeline engine refuses ZeRO-", c.zero_stage,
                       " (it asserts stage < 2): use ZeRO 0 or 1 with pp > 1");
        if (p.microbatches_at_least_stages && c.num_microbatches < c.pp)
            return cat(name, "'s pipeline schedules raise with fewer micro-batches (", c.num_microbatches,
                       ") than stages (", c.pp, "): raise the global batch or lower pp");
    }
    if (c.cp > 1 && !p.context_parallel)
        return cat(name, " has no ring context parallelism: set cp to 1, or choose another framework");
    if (c.ep > 1 && !p.expert_parallel)
        return cat(name, " has no expert parallelism: set ep to 1, or choose another framework");
    if (c.tp > 1 && !p.tensor_parallel)
        return cat(name, " has no tensor parallelism: set tp to 1, or choose another framework");
    if (c.moe_a2a_overlap && !p.moe_a2a_overlap)
        return cat(name,
                   " does not overlap expert all-to-alls with compute: turn the overlap off, or plan for "
                   "megatron-core (--overlap-moe-expert-parallel-comm)");
    if (c.moe_a2a_overlap && (p.framework == Framework::MegatronCore || p.framework == Framework::NeMo)) {
        // megatron/core/transformer/transformer_config.py __post_init__ (core_v0.15-core_v0.19): the overlap asserts
        // recompute_granularity != 'full' and "moe" not in recompute_modules (a recomputed MLP block is "moe" in
        // MoE layers).
        const bool mlp = std::any_of(c.recompute_modules.begin(), c.recompute_modules.end(), [](const std::string& m) {
            return m.find("mlp") != std::string::npos || m.find("moe") != std::string::npos
                || m.find("experts") != std::string::npos;
        });
        // Whole blocks by index are --recompute-granularity full too (--recompute-method block).
        if (c.recompute == RecomputeKind::Full || recomputesBlockIndices(c)
            || (c.recompute == RecomputeKind::Modules && mlp))
            return cat(name,
                       "'s expert all-to-all overlap refuses full recomputation and recomputed MoE layers: "
                       "recompute the attention core or norms only, or turn the overlap off");
    }
    if (c.moe_shared_expert_overlap && !p.moe_shared_expert_overlap)
        return cat(name,
                   " runs the shared expert beside the routed experts, not under their all-to-alls: turn the "
                   "overlap off, or plan for megatron-core (--moe-shared-expert-overlap)");
    if (c.moe_capacity_factor > 0 && !p.moe_token_dropping)
        return cat(name,
                   "'s experts are dropless: set the capacity factor to 0, or plan for megatron-core "
                   "(--moe-expert-capacity-factor)");
    if (c.fp8_linears && !p.fp8)
        return cat(name, " has no FP8 training: turn FP8 linears off, or choose another framework");
    if (c.fp8_linears && std::find(p.fp8_recipes.begin(), p.fp8_recipes.end(), c.fp8_recipe) == p.fp8_recipes.end())
        return cat(name, " has no ", float8RecipeName(c.fp8_recipe),
                   " FP8 scaling: use the tensorwise recipe, or choose another framework");
    if (c.grad_reduce_bf16 && !p.grad_reduce_bf16)
        return cat(name,
                   p.framework == Framework::DeepSpeed
                       ? " reduces bf16 gradients already (its communication_data_type follows the model's dtype): "
                         "turn the 16-bit gradient reduce off"
                       : " reduces gradients in fp32 only: turn the 16-bit gradient reduce off, or plan for "
                         "megatron-core (--grad-reduce-in-bf16)");
    if (c.fp8_linears && c.fp8_param_gather && !p.fp8_weight_cache && p.framework != Framework::Generic)
        return cat(name,
                   " has no FP8 parameters: turn the FP8 parameter gather off, or plan for megatron-core "
                   "(--fp8-param-gather)");
    if (c.fp8_linears && c.fp8_param_gather && c.zero_stage < 1)
        return "FP8 parameters need the distributed optimizer (Megatron's --fp8-param-gather asserts it): use ZeRO 1 "
               "or more, or turn the FP8 parameter gather off";
    if (c.hasFp8Bf16Layers() && !p.fp8_bf16_edge_layers)
        return cat(name,
                   " runs every FP8 linear of the blocks in FP8: set the BF16 first and last layers to 0, or "
                   "plan for megatron-core (--first-last-layers-bf16)");
    if (p.framework == Framework::Torchtitan && c.tp_comm_overlap && c.eager_kernels)
        return "torchtitan's async TP needs torch.compile: turn eager kernels off or TP overlap off";
    return releaseRestriction(p, c);
}

std::string frameworkModelRestriction(Framework framework, std::string_view version, const TransformerShape* shape)
{
    if (framework != Framework::Torchtitan || !shape)
        return {};
    // The model packages of torchtitan/models/ and the architectures each builds: llama3 (Llama 2/3, and Mistral
    // without a sliding window), qwen3 (dense and MoE), deepseek_v3, gpt_oss; llama4 at v0.2.2 only (gone on main).
    const std::string release = version.empty() ? "" : resolveFrameworkVersion(framework, version).value_or("");
    const std::string& family = shape->family;
    const bool llama4 = family == "llama4" && (release.empty() || release == "v0.2");
    if (family == "llama" || family == "mistral" || family == "qwen3" || family == "qwen3_moe"
        || family == "deepseek_v3" || family == "gpt_oss" || llama4)
        return {};
    return cat("torchtitan", release.empty() ? "" : cat(" ", release), " has no ", family,
               " model (torchtitan/models/ builds llama3, qwen3, deepseek_v3 and gpt_oss",
               release == "main" ? "" : ", and llama4 at v0.2", ")");
}

std::string frameworkModelRestriction(Framework framework, std::string_view version, const ModelGraph& graph)
{
    return frameworkModelRestriction(framework, version, graph.transformer ? &*graph.transformer : nullptr);
}

} // namespace shardscape
