// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/cost/float8_recipe.h"
#include "shardscape/sim/schedule.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace shardscape {

/** The training framework a plan is for. It decides what the job allocates, how it communicates and what it can run. */
enum class Framework : std::uint8_t
{
    Generic, ///< no framework: the CostParams knobs (nnScaler's coefficients) decide memory
    MegatronCore,
    NeMo,
    Torchtitan,
    DeepSpeed,
    Composer
};

/** "generic", "megatron-core", "nemo", "torchtitan", "deepspeed", "composer" */
std::string_view frameworkName(Framework framework);
/** Accepts the names above and the aliases "megatron", "megatron-lm", "mcore", "titan", "llm-foundry". */
std::optional<Framework> parseFramework(std::string_view name);
/** Every framework, Generic first (for menus and error messages). */
const std::vector<Framework>& allFrameworks();

/** How a framework fetches sharded parameters under ZeRO-3 / FSDP. */
enum class ShardedDpImpl : std::uint8_t
{
    /** FSDP1/FSDP2, Megatron-FSDP: one flat all-gather per wrapped block on its own stream, the next block's
        gather issued before the current block runs (prefetch depth 1), one reduce-scatter per block in backward. */
    PerModule,
    /** DeepSpeed ZeRO-3 (stage3.py, 2021 design): parameters fetched on the host-side trace of the module order,
        coalesced into prefetch buckets; each fetch waits on its module's hooks, and the hooks serialise with the
        compute stream, so only part of the gather hides. */
    PerParameter
};

/** How a framework's context parallelism exchanges K/V between the cp ranks of a sequence. */
enum class CpComm : std::uint8_t
{
    /** A ring of point-to-point sends: each of the cp steps passes the K/V chunk on while it computes the one it
        holds (Transformer Engine's AttnFuncWithCPAndKVP2P, Megatron's default cp_comm_type "p2p"). Backward passes
        K/V and dK/dV along the ring the same way. */
    P2PRing,
    /** One all-gather of every rank's K/V, issued before the first (local) step and waited for at the second; the
        remaining steps read slices of it (PyTorch context_parallel, torch/distributed/tensor/experimental/
        _attention.py _AllGatherRotater, the default _cp_options.rotate_method, as torchtitan runs it). Backward
        gathers K/V again and rotates the fp32 dK/dV along a ring (the dkv_rotater is always ALL_TO_ALL). */
    AllGather
};

/**
 * What one framework allocates per parameter and per token, and which configurations it can run. Every term is
 * read from the framework's source (core/src/cost/framework_profile.cpp cites file and function per value).
 * Byte counts are per parameter element (P) or per logit element unless the name says otherwise.
 */
struct FrameworkProfile
{
    Framework framework = Framework::Generic;
    std::string version; ///< the framework versions the terms were read from

    // --- per-parameter state -----------------------------------------------------------------------------------
    /** The compute copy of the weights (16-bit: bf16). */
    double weight_bytes = 2;
    /** FSDP keeps the sharded parameters in fp32 and all-gathers 16-bit compute copies per block (FSDP2's
        MixedPrecisionPolicy, Composer's FSDP "DEFAULT"); the master copy is then the sharded parameter itself. */
    bool sharded_fp32_params = false;
    /** Gradient element size where the gradients accumulate (fp32 main grads: 4; DeepSpeed's bf16 grads: 2). */
    double grad_bytes = 4;
    /** Megatron's distributed optimizer (ZeRO-1) keeps the whole fp32 grad buffer on every rank; DeepSpeed's ZeRO-1
        BF16 optimizer keeps fp32 gradient copies of the whole model too. */
    bool zero1_full_grad_buffer = true;
    /** A second, fp32 gradient copy of the rank's shard (DeepSpeed ZeRO-1/2 accumulates bf16 grads, then keeps an
        fp32 partition for the step: single_partition_of_fp32_groups' .grad). */
    double fp32_grad_partition_bytes = 0;
    /** fp32 master weights, 0 when the sharded parameters are fp32 already. */
    double master_bytes = 4;
    /** Adam's exp_avg and exp_avg_sq in fp32. */
    double adam_state_bytes = 8;

    // --- fixed buffers, bytes per GPU ---------------------------------------------------------------------------
    /** Gradient-reduction buckets outside the gradient buffer (DeepSpeed reduce_bucket_size x 2 buffers). */
    double grad_bucket_bytes = 0;
    /** Parameter gather buckets for ZeRO-1/2's post-step all-gather (DeepSpeed allgather_bucket_size). */
    double gather_bucket_bytes = 0;
    /** ZeRO-3: blocks whose 16-bit parameters are unsharded at once (the running one plus those prefetched). */
    int zero3_live_blocks = 2;
    /** ZeRO-3: the unsharded gradients of a block before its reduce-scatter, in bytes per element (bf16 grad plus
        the fp32 reduce copy under FSDP2's reduce_dtype float32). */
    double zero3_unsharded_grad_bytes = 6;
    /** FSDP2 keeps the flat output of the forward's last all-gather alive until the next forward's copy-out
        (FSDPParamGroup.wait_for_unshard stores it in comm_ctx.all_gather_state to overlap that copy-out with the
        next gather), so the last module's gathered bytes stay allocated through the whole backward. */
    bool keeps_last_forward_gather = false;
    /** torchtitan before pytorch/torchtitan#1094 (83e694105, 2025-07-28): apply_fsdp left the embedding, the final
        norm and the output to the root unit (fully_shard(model)), which FSDP2 never reshards after forward
        (_fsdp_state.py _lazy_init: the root's post_forward_mesh_info = None), and kept the last block gathered
        (reshard_after_forward = layer_id < n_layers - 1). Both stay unsharded from the forward to their backward,
        beside the kept gather. From #1094 on the embedding is its own unit, resharded after forward, and only the
        norm and output stay gathered. */
    bool fsdp_root_keeps_embedding = false;
    /** With tensorwise float8 linears under FSDP, the linears' sharded weights are cast to float8 before the
        all-gather, which then moves 1 byte per element (torchao's enable_fsdp_float8_all_gather, which the
        torchtitan export turns on for such plans: torchtitan/components/quantization/float8.py). */
    bool fsdp_gathers_fp8_tensorwise = false;

    // --- loss --------------------------------------------------------------------------------------------------
    /** Bytes per logit saved for the loss's backward (fp32 softmax / log-softmax). Replaces the 16-bit logits. */
    double loss_saved_bytes_per_logit = 4;
    /** Bytes per logit live beside the saved ones at the loss's peak (the 16-bit logits, an fp32 upcast, the fp32
        gradient before its cast back to 16 bits). */
    double loss_working_bytes_per_logit = 6;
    /** Under tensor parallelism with the vocabulary-parallel loss run op by op (not compiled): bytes per logit live
        beside the saved ones at its peak; 0 = loss_working_bytes_per_logit. */
    double loss_parallel_eager_working_bytes_per_logit = 0;
    /** The framework compiles the loss along with the model when torch.compile is on. */
    bool compiles_loss = false;
    /** A compiled loss: bytes per logit saved (the 16-bit logits Inductor keeps in place of an fp32 softmax) and
        live beside them at its peak (its fused backward's 16-bit gradient). */
    double compiled_loss_saved_bytes_per_logit = 2;
    double compiled_loss_working_bytes_per_logit = 2;

    // --- activations as the framework's model code saves them ---------------------------------------------------
    /** Grouped-query attention repeats K and V to the query heads before the attention kernel (repeat_kv), which
        then saves the repeated copies for its backward: K and V stashed at num_heads, not num_kv_heads. */
    bool attention_repeats_kv = false;
    /** Attention runs the vendor's fused kernels where the device has faster ones than FlashAttention-2
        (DeviceSpec::fused_attention_speedup): Transformer Engine's DotProductAttention picks cuDNN's FusedAttention
        on Hopper. PyTorch's SDPA keeps its flash (FlashAttention-2) backend there. */
    bool vendor_fused_attention = false;
    /** Per-op selective checkpointing caches the attention kernel's output (torchtitan's save list names the SDPA
        kernels; before pytorch/torchtitan#2095 it lacked cuDNN's, the backend torchtitan picks on Blackwell). */
    bool op_sac_caches_attention = true;
    /** Under sequence parallelism a column-parallel linear saves the all-gathered (full-sequence) input for its
        backward, not the sequence shard it came from (DTensor TP: the gather is a redistribute before the matmul). */
    bool sp_saves_gathered_inputs = false;
    /** Full recomputation uses PyTorch's non-reentrant checkpoint with its default early stop: the recomputed
        forward stops once every tensor the backward needs is back, so the block's trailing ops (the last GEMM,
        which saves only its input, and the residual add after it) are not re-run. */
    bool recompute_early_stop = false;

    // --- runtime outside the tensors ----------------------------------------------------------------------------
    /** CUDA context and the framework's kernels' module images (outside the caching allocator). */
    double cuda_context_bytes = 0;
    /** NCCL communicators' channel buffers, per communicator the rank belongs to (NCCL_BUFFSIZE x channels). */
    double nccl_bytes_per_communicator = 0;
    /** cuBLAS / cuBLASLt workspaces (allocated through the caching allocator in PyTorch >= 2.3). */
    double cublas_workspace_bytes = 0;
    /** The caching allocator's reserved / allocated at the peak (block rounding, split blocks). */
    double fragmentation = 1.0;
    /** The training loop frees the gradients between steps (optimizer.zero_grad(set_to_none=True), PyTorch's
        default since 2.0) and keeps no gradient buffer of its own: a step's one backward creates them layer by
        layer as it frees that layer's activations, so without accumulation or a pipeline the two peaks do not add. */
    bool gradients_freed_each_step = false;

    // --- communication -----------------------------------------------------------------------------------------
    ShardedDpImpl sharded_dp = ShardedDpImpl::PerModule;
    /** ZeRO-3: parameter elements fetched ahead of the running module; 0 = the whole next block (FSDP's prefetch).
        A block larger than this waits, unhidden, for the rest of its gather. */
    double zero3_prefetch_elements = 0;
    /** ZeRO-3 re-gathers a block's parameters for the recomputed forward (DeepSpeed releases them after each
        use; FSDP's backward pre-hook has already unsharded them when the checkpoint re-runs the forward). */
    bool zero3_regather_for_recompute = false;
    /** Host-side overhead per sharded-DP collective (hooks, stream waits, launches), seconds. */
    double sharded_dp_overhead_s = 0;
    /** ZeRO-0/1/2 gradient buckets are reduced on a side stream while backward still runs (Megatron's
        overlap_grad_reduce, DDP's and FSDP's hooks); false where they run after backward or on its stream. */
    bool grad_sync_overlaps_backward = true;
    /** 16-bit bf16 training under pipeline parallelism goes through an optimizer that accumulates every gradient
        of the stage in fp32 and reduces those fp32 buffers (DeepSpeed's BF16_Optimizer). */
    bool pipeline_bf16_fp32_grads = false;
    /** Pipeline sends and receives are waited for on the compute stream: a stage computes nothing while its
        activation or gradient is on the wire (DeepSpeed's pipe/p2p.py send/recv, async_op False; Megatron's
        _communicate with wait_on_reqs). Otherwise sends run beside compute and only the receiver waits. */
    bool pipeline_p2p_blocks_compute = false;
    /** ... except under the interleaved schedule, whose p2p runs beside the next chunk (Megatron's
        overlap_p2p_comm, on unless --no-overlap-p2p-communication). */
    bool interleaved_p2p_overlaps = false;
    /** The pipeline engine keeps every in-flight micro-batch's stage output until its backward, and with a single
        tensor-parallel rank the received input beside the clone it computes on (DeepSpeed's pipe_buffers); under
        tensor parallelism it keeps only the output's 1/tp partition. Megatron frees the output's storage once sent
        (deallocate_output_tensor). */
    bool pipeline_keeps_stage_io = false;
    /** Under tensor parallelism each rank sends only its 1/tp slice of the stage's output (and of the input's
        gradient going back), and the receiving stage all-gathers the slices over its tensor-parallel group before
        it computes (DeepSpeed's PartitionedTensor, is_pipe_partitioned / is_grad_partitioned). Megatron-Core sends
        the whole tensor (its sequence-parallel output is already 1/tp). */
    bool pipeline_p2p_partitioned = false;

    // --- context parallelism (framework_profile.cpp cites the implementation) ----------------------------------
    CpComm cp_comm = CpComm::P2PRing;
    /** Bytes moved per element of the local attention output to merge one more ring step's partial result into
        the running one (online-softmax correction of out and log-sum-exp). */
    double cp_merge_bytes_per_element = 10;
    /** Bytes per element of the dK/dV passed along the ring in backward (fp32 accumulation: 4). */
    double cp_dkv_bytes_per_element = 2;
    /** TP communication overlap runs its tp GEMM chunks one after another on the compute stream, each of m / tp
        rows (PyTorch async TP). Transformer Engine spreads the chunks over several compute streams, which keeps
        the SMs as full as one large GEMM. */
    bool tp_overlap_serial_chunks = false;
    /** TP communication overlap is a compiler rewrite of collective + matmul pairs (PyTorch async TP,
        torch/_inductor/fx_passes/micro_pipeline_tp.py): an all-gather fuses only into matmuls that read the gathered
        tensor as it is (_find_consumer_matmuls), a reduce-scatter only into the one matmul that produces its input
        (fuse_matmul_reduce_scatter via _find_producer_matmul). So the input gradient of a column input read by
        several linears (Q, K, V; gate, up), which autograd sums, is reduce-scattered unfused, and so is every gather
        whose result is cast before its GEMM (rowwise float8, whose TP gathers 16-bit tensors). Transformer Engine's
        userbuffers overlap every sequence-parallel collective. */
    bool tp_overlap_by_pattern = false;
    /** Tensorwise float8 linears under TP all-gather their input, and in backward their output's gradient, already
        cast to float8: 1 byte per element (torchao float8/float8_tensor_parallel.py: Float8ColwiseParallel casts
        before the redistribute, Float8RowwiseParallel's NoopFwToFloat8BwDynamic casts the gradient before the
        reduce-scatter's backward gathers it). The reduce-scatters sum in 16 bits. */
    bool tp_gathers_fp8_tensorwise = false;
    /** A linear fed by a norm gets its FP8 input from the norm kernel itself, and linears that share that input
        (Q, K and V; gate and up) are one GEMM reading one cast: no cast pass of their own (Transformer Engine's
        LayerNormLinear). */
    bool fp8_cast_in_norm = false;
    /** The FP8 copy of each weight is cast on a step's first micro-batch and reused by the others (Transformer
        Engine's weight workspace, refreshed only when is_first_microbatch is set). */
    bool fp8_weight_cached_per_step = false;
    /** The linears that read one input are one GEMM: Q, K and V as one query-key-value projection, gate and up as
        one. A model graph lists them apart; the framework's GEMM has their summed width. */
    bool fused_column_gemms = false;
    /** It can keep the first and last decoder blocks out of FP8 (ParallelConfig::fp8_bf16_first_layers). */
    bool fp8_bf16_edge_layers = false;
    /** Transformer Engine's linears keep an FP8 copy of their 16-bit weight from a step's first micro-batch on
        (ParallelConfig::fp8_linears without fp8_param_gather; see CostModel's FP8 weight memory), and the framework
        can make the weights FP8 parameters instead (ParallelConfig::fp8_param_gather). */
    bool fp8_weight_cache = false;
    /** It can reduce gradients in the 16-bit dtype (ParallelConfig::grad_reduce_bf16). */
    bool grad_reduce_bf16 = false;
    /** A column-parallel linear's backward launches its TP collectives asynchronously beside its own GEMMs: the
        input gradient's all-reduce (reduce-scatter under SP) runs under the weight-gradient GEMM, and under SP the
        re-gather of the saved (sharded) input runs under the input-gradient GEMM. Otherwise the backward waits for
        each collective. */
    bool tp_backward_comm_async = false;

    // --- what the framework can run (bounds the search) --------------------------------------------------------
    std::vector<int> zero_stages {0, 1, 2, 3};
    std::vector<ScheduleKind> schedules {
        ScheduleKind::GPipe,       ScheduleKind::OneFOneB,  ScheduleKind::Interleaved1F1B, ScheduleKind::ZeroBubbleH1,
        ScheduleKind::ZeroBubbleV, ScheduleKind::DualPipeV, ScheduleKind::DualPipe};
    bool pipeline_with_zero23 = true; ///< DeepSpeed's pipeline engine refuses ZeRO-2/3
    /** Recomputes the first N decoder blocks of each model chunk whole and keeps the rest (Megatron's
        --recompute-method block --recompute-num-layers N): the planner searches N between none and full. */
    bool block_recompute = true;
    bool context_parallel = true;
    bool expert_parallel = true;
    /** Expert all-to-alls overlapped with another micro-batch's compute (ParallelConfig::moe_a2a_overlap). */
    bool moe_a2a_overlap = false;
    /** The shared expert on a side stream under the dispatch/combine all-to-alls (ParallelConfig). */
    bool moe_shared_expert_overlap = false;
    /** Capacity-limited experts that drop tokens (Megatron's --moe-expert-capacity-factor); false = dropless only. */
    bool moe_token_dropping = true;
    bool tensor_parallel = true;
    bool fp8 = true;
    /** The FP8 scaling recipes it runs (Megatron's --fp8-recipe has tensorwise, delayed, mxfp8 and blockwise scaling,
        no rowwise; torchtitan's float8 converter takes torchao's tensorwise and rowwise). */
    std::vector<Float8Recipe> fp8_recipes {Float8Recipe::Tensorwise, Float8Recipe::Rowwise};
    /** torchtitan v0.2 trains in bf16 under TP or PP only with FSDP (dp x cp >= 2); main always applies FSDP. */
    bool requires_sharded_dp = false;
    /** PyTorch's 1F1B / interleaved schedules raise with fewer micro-batches than pipeline stages. */
    bool microbatches_at_least_stages = false;
};

/** "2, 3": the ZeRO stages the framework runs, for messages. */
std::string zeroStageList(const FrameworkProfile& profile);
/** "1f1b, interleaved": the pipeline schedules the framework runs, for messages. */
std::string scheduleList(const FrameworkProfile& profile);

/**
 * The releases of `framework` Shardscape's exports are written for, the current release line (the default) first;
 * empty for frameworks without an exporter (generic, NeMo, Composer). README "Exporting a plan" has the table.
 */
const std::vector<std::string>& frameworkVersions(Framework framework);
/** `requested` as one of frameworkVersions(framework) ("core_v0.19.1" -> "core_v0.19"; empty -> the current line),
    or nullopt when the framework has no such release line. */
std::optional<std::string> resolveFrameworkVersion(Framework framework, std::string_view requested);
/** Why `requested` names no release of `framework` Shardscape writes for, and what to give instead:
    {cause, hint}, for the error every reader of a framework version raises. */
std::pair<std::string, std::string> unknownFrameworkVersion(Framework framework, std::string_view requested);

/** The profile of a framework (static storage). */
const FrameworkProfile& frameworkProfile(Framework framework);

struct ParallelConfig;
/** Why `framework` cannot run `config` (empty when it can): the search uses it to skip such candidates. */
std::string frameworkRestriction(const FrameworkProfile& profile, const ParallelConfig& config);

struct TransformerShape;
/**
 * Why `framework` (at release `version`, "" = any it is written for) has no model for the architecture `shape`
 * (empty when it has one, and for graphs that are not a known transformer). torchtitan trains only the models in
 * its torchtitan/models/; a plan for another architecture could not be exported to it. The cause only: callers add
 * the way out that fits them (kModelRestrictionWayOut for a plan).
 */
std::string frameworkModelRestriction(Framework framework, std::string_view version, const TransformerShape* shape);
class ModelGraph;
/** The same for a graph (its transformer shape, if it has one). */
std::string frameworkModelRestriction(Framework framework, std::string_view version, const ModelGraph& graph);
inline constexpr std::string_view kModelRestrictionWayOut
    = "plan for megatron-core or deepspeed, or --framework generic";

} // namespace shardscape
