// SPDX-License-Identifier: MIT
#include "shardscape/cost/layer_cost.h"

#include "shardscape/support/strings.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <unordered_set>

namespace shardscape {

std::string matchedModule(const std::string& module, const std::vector<std::string>& suffixes)
{
    for (const auto& suffix : suffixes) {
        if (suffix == "ROOT")
            return module.substr(0, module.find('.') == std::string::npos ? module.size() : module.find('.'));
        // Walk the module's prefixes at component boundaries: "a.b.c" -> "a", "a.b", "a.b.c".
        std::size_t end = 0;
        while (end != std::string::npos) {
            end = module.find('.', end + 1);
            const std::string prefix = module.substr(0, end);
            if (prefix == suffix || endsWith(prefix, "." + suffix))
                return prefix;
            if (end == std::string::npos)
                break;
        }
    }
    return {};
}

namespace {

// Cross-entropy runs in fp32 in every framework we calibrate against, not on the 16-bit logits the graph
// stores: Megatron's vocab_parallel_cross_entropy takes output.float() (2 B read + 4 B written per logit), then
// max, subtract, exp and the normalising divide each stream the fp32 logits; PyTorch's F.cross_entropy on
// .float() logits (torchtitan, llm-foundry) upcasts, runs log_softmax in two passes and writes its output.
// Backward writes the fp32 softmax gradient and casts it back to 16 bits. Bytes moved per logit (calibration
// fix: the graph's bytes_read/bytes_written count only the 16-bit logits once, about 10x too little).
constexpr double kLossFwdBytesPerLogit = 18; // 2 (read bf16) + 4 (write fp32) + 2 x 4 (max/sum passes) + 4 (write)
constexpr double kLossBwdBytesPerLogit = 22; // 4 + 4 (read grad and softmax) + 4 (write fp32) + 4 + 2 (cast back) + 4

bool splitsByTp(TpRole role)
{
    return role == TpRole::Column || role == TpRole::Row || role == TpRole::Heads || role == TpRole::Vocab
        || role == TpRole::Local || role == TpRole::Experts;
}

bool isGemm(OpKind kind)
{
    return kind == OpKind::Linear || kind == OpKind::MatMul || kind == OpKind::AttentionScore
        || kind == OpKind::AttentionContext || kind == OpKind::MoeRouter || kind == OpKind::MoeExperts
        || kind == OpKind::Conv;
}

/** The GEMM an op runs on one device, [m x k] @ [k x n], from its weight shape and FLOPs. */
struct Gemm
{
    double m = 0, n = 0, k = 0;
};

Gemm gemmOf(const ModelGraph& graph, const Op& op, double flops, int tp)
{
    Gemm g;
    if (!op.params.empty()) {
        const WeightGemm w = weightGemmOf(op, graph.tensor(op.params.front()));
        g.k = w.k;
        g.n = w.n;
        if (op.tp_role == TpRole::Row)
            g.k /= tp;
        else if (op.tp_role != TpRole::Replicated)
            g.n /= tp;
    } else if (!op.outputs.empty()) {
        // Activation @ activation (attention scores or context): batched GEMMs with a square-ish shape.
        // A vector product's output is a scalar (rank 0): no dimension to read, the fallback below applies.
        const auto& shape = graph.tensor(op.outputs.front()).shape;
        g.n = shape.empty() ? 0 : static_cast<double>(shape.back());
        g.k = static_cast<double>(shape.size() >= 2 ? shape[shape.size() - 2] : 1);
    }
    if (g.n <= 0 || g.k <= 0) {
        g.n = g.k = 1024;
    }
    g.m = flops / (2 * g.n * g.k);
    return g;
}

struct TensorBytes
{
    const ModelGraph& graph;
    const LayerLayout& layout;
    double scale; ///< micro-batch / graph batch, divided by cp
    /** The experts' routed internals (dispatched tokens, projections) and the load of the busiest rank on them. */
    const std::unordered_set<TensorId>* routed = nullptr;
    double routed_load = 1;
    /** Bytes of a tensor on one device under the layout. */
    double operator()(TensorId id) const
    {
        const Tensor& t = graph.tensor(id);
        double bytes = t.bytes() * scale;
        if (routed && routed->count(id))
            bytes *= routed_load;
        if (t.tp_sharded || layout.sequence_parallel)
            bytes /= layout.tp;
        return bytes;
    }
    /** Bytes of a hidden-size activation before any TP/SP split (what TP collectives move). */
    double full(TensorId id) const { return graph.tensor(id).bytes() * scale; }
};

/**
 * HBM bytes an activation @ activation GEMM streams in its forward: every operand read once and its output written
 * once. gemmOf folds such a GEMM into one [m x k] @ [k x n] without its batch dimension, which leaves out the
 * b x heads x s x s tensor that unfused attention's QK^T writes and its PV reads (torch.baddbmm / torch.bmm over
 * b * heads / tp batches in Megatron's CoreAttention and the BLOOM and GPT-NeoX forks of it, and in Hugging Face's
 * eager attention). They do head_dim FLOP per byte of that tensor, 64-128 in these models, below the A100's (about
 * 170 at the efficiencies we use) or the H100's ratio of GEMM FLOP/s to HBM bytes/s, so its traffic bounds them.
 * Backward runs two GEMMs, each streaming the s x s tensor once more (QK^T: dQ = dS K and dK = dS^T Q read dS;
 * PV: dP = dO V^T writes dP and dV = P^T dO reads P), which is about twice these bytes.
 */
double batchedGemmBytes(const Op& op, const TensorBytes& bytesOf)
{
    double bytes = 0;
    for (const TensorId t : op.inputs)
        bytes += bytesOf(t);
    for (const TensorId t : op.outputs)
        bytes += bytesOf(t);
    return bytes;
}

/**
 * Bytes moved per element by a dynamic-scaling FP8 cast: an amax pass reads the 16-bit tensor, the cast pass reads it
 * again and writes one byte (torchao's tensorwise float8 and Transformer Engine's delayed-scaling casts both stream
 * the tensor; torch.compile can fuse the amax into the producer, which this ignores).
 */
constexpr double kFp8CastBytesPerElement = 2 + 2 + 1;

/** FP8 covers the linear layers split by Megatron's TP roles; the vocabulary projection and embedding stay 16-bit
    (torchtitan's float8 filter_fqns keeps `output`, Transformer Engine keeps the output layer in higher precision). */
bool runsInFp8(const Op& op, const LayerLayout& layout)
{
    return layout.fp8_linears && op.kind == OpKind::Linear
        && (op.tp_role == TpRole::Column || op.tp_role == TpRole::Row || op.tp_role == TpRole::Replicated);
}

/** Column-parallel ops all-gather their input under SP (all-reduce its gradient without): the column linears and the
    vocabulary projection. */
bool gathersItsInput(const Op& op)
{
    return op.tp_role == TpRole::Column
        || (op.tp_role == TpRole::Vocab && (op.kind == OpKind::Linear || op.kind == OpKind::MatMul));
}

/**
 * Throughput of torchao's rowwise-scaled FP8 GEMM relative to the tensorwise one. torch._scaled_mm with per-row
 * scales runs a CUTLASS kernel whose epilogue multiplies every output by a row and a column scale (aten/src/ATen/
 * native/cuda/RowwiseScaledMM.cu f8f8bf16_rowwise), where tensorwise calls cuBLASLt with two scalar scales.
 * Measured on an H100 SXM (tests/gpu/fp8_gemm_probe.py, tests/data/measured_fp8_gemms_h100.json: the three GEMMs of
 * every Llama 3 8B / 70B linear at 4k-16k tokens, torch 2.11): the rowwise GEMMs take 1 / 0.919 of the tensorwise
 * time in total (median per GEMM 0.960; the gradient GEMMs, which run without fast accumulation, lose the most).
 * The torchao README's training table (Llama 3 8B, 8x H100: tensorwise +25%, rowwise +10% over bf16 end to end) is
 * the check for this together with the extra casts below, not a fit.
 */
constexpr double kRowwiseGemmRelativeThroughput = 0.92;

/**
 * Elements cast to FP8 per GEMM under a recipe, for the forward GEMM (input m x k, weight k x n) and the two
 * backward GEMMs. torchao/float8/float8_linear.py matmul_with_hp_or_float8_args: forward casts input and weight;
 * the input-gradient GEMM casts grad_output and (again) the weight, the weight-gradient GEMM grad_output and
 * (again) the input. Tensorwise scaling gives the same scale along both axes, so the forward's FP8 input and
 * weight are reused (transposed) and grad_output is cast once; rowwise (Float8LinearConfig.from_recipe_name
 * ROWWISE: every CastConfig axiswise) scales along the GEMM's reduction dimension, which differs between the
 * GEMMs, so each operand is cast once per GEMM it enters.
 */
struct Fp8Casts
{
    double fwd = 0, bwd_input = 0, bwd_weight = 0; ///< elements cast before each GEMM
};

Fp8Casts fp8CastsOf(double m, double n, double k, Float8Recipe recipe)
{
    if (recipe == Float8Recipe::Rowwise)
        return {m * k + k * n, m * n + k * n, m * n + m * k};
    return {m * k + k * n, m * n, 0};
}

/**
 * Fixed work of a flash-attention thread block in units of key/value tokens: loading its Q tile, the pipeline
 * prologue, the softmax rescale and writing its O tile cost about two 128-wide K/V tiles. A kernel whose blocks
 * loop over L keys per query tile therefore runs at L / (L + 256) of its long-sequence rate. Read from the
 * published kernel curves at fixed batch x sequence (pytorch/benchmark PR 2391, H100, head_dim 128, 16k tokens):
 * FlashAttention-3 430/517/566/590/614/621 TFLOP/s and the Triton FlashAttention-2 329/390/434/458/471/477 at
 * sequence 512/1k/2k/4k/8k/16k both follow L / (L + 230-250).
 */
constexpr double kAttentionFixedKvTokens = 256;

/** Rows of one tile of a grouped GEMM's output (CUTLASS / cuBLAS grouped kernels on Hopper and Ampere use 128-row
    tiles): an expert's rows are tiled on their own, so its last tile is padded. */
constexpr double kGroupedGemmTileRows = 128;

/** The local experts' grouped GEMM (Megatron's GroupedMLP / TEGroupedLinear, torchtitan's grouped_mm): one launch,
    but each expert is tiled on its own, and every expert that receives a token reads its whole weights. */
struct ExpertGroups
{
    double padding = 1; ///< computed rows over real rows (each expert's last tile padded)
    double weight_elements = 0; ///< elements of one weight matrix over the experts that receive tokens
};

ExpertGroups expertGroups(const Op& op, const Gemm& g, int ep)
{
    const double matrices = std::max<double>(1, static_cast<double>(op.params.size()));
    const double rows = g.m / matrices; // routed token copies on this device, per matrix
    const double local = std::max(1.0, static_cast<double>(op.num_experts) / std::max(1, ep));
    const double occupied = std::min(local, std::max(1.0, rows));
    const double perExpert = std::max(1.0, rows / occupied);
    ExpertGroups e;
    e.padding = std::ceil(perExpert / kGroupedGemmTileRows) * kGroupedGemmTileRows / perExpert;
    e.weight_elements = occupied * g.k * g.n;
    return e;
}

/** Time of a flash-attention kernel of `flops` (unmasked) whose thread blocks loop over `kvTokens` keys each. */
double attentionKernelTime(const CostSource& source, double flops, double kvTokens, DType dtype)
{
    if (flops <= 0)
        return 0;
    const double occupancy = kvTokens > 0 ? kvTokens / (kvTokens + kAttentionFixedKvTokens) : 1.0;
    return source.attentionTime(flops / occupancy, dtype);
}

/**
 * HBM traffic of eager PyTorch over the fused kernel the graph costs, per op of the transformer builders (the
 * torchtitan / Meta Llama module code, 2024): bytes moved per element of the 16-bit activation.
 * - RMSNorm: x.float() (2 read, 4 written), pow(2) (4, 4), mean (4), x * rsqrt (4, 4), type_as (4, 2), * weight
 *   (2, 2) = 36 bytes against 4 fused: 9x. (LayerNorm is one fused ATen kernel in eager mode too: 1x.)
 * - Rotary embedding: xq.float() (2, 4), the complex multiply (4, 4), type_as (4, 2) = 20 against 4: 5x.
 * - SwiGLU: silu(gate) (2, 2), * up (4, 2) = 10 against 6: 5/3x.
 * Backward repeats the chain through autograd, so the same ratio applies. Residual adds, dropout and ops of
 * imported graphs (whose fusion is unknown) keep 1x.
 */
std::string lastComponent(const std::string& module)
{
    const auto dot = module.rfind('.');
    return dot == std::string::npos ? module : module.substr(dot + 1);
}

/** The transformer builders' gated activation (SwiGLU / GeGLU): act(gate) * up in one op. */
bool isGatedActivation(const Op& op)
{
    return op.kind == OpKind::Elementwise && op.inputs.size() == 2 && lastComponent(op.module) == "act";
}

double eagerTrafficFactor(const ModelGraph& graph, const Op& op)
{
    if (op.kind == OpKind::Norm)
        return graph.transformer && graph.transformer->norm == "rmsnorm" ? 9.0 : 1.0;
    if (op.kind == OpKind::Elementwise && graph.transformer) {
        const std::string name = lastComponent(op.module);
        if (name == "rotary")
            return 5.0;
        if (name == "act" && op.inputs.size() == 2)
            return 10.0 / 6.0;
    }
    return 1.0;
}

/**
 * A sequence-parallel collective that overlaps the GEMMs beside it (TP communication overlap): the all-gather of a
 * column-parallel input runs under the GEMMs that consume it, the reduce-scatter of a row-parallel output under the
 * GEMM that produces it, and their backward counterparts under the input-gradient GEMMs. The collective is split
 * into tp chunks pipelined against the GEMM's chunks (Transformer Engine's ring-exchange / pipelined overlap,
 * PyTorch's async-TP micro-pipelining), so one chunk (1/tp) is always exposed and the rest hides only as far as
 * the GEMM lasts.
 */
struct OverlappedCollective
{
    double comm_fwd = 0, comm_bwd = 0; ///< collective seconds
    double gemm_fwd = 0, gemm_bwd = 0; ///< seconds of the GEMMs they run under
    bool recomputed = false; ///< the forward collective repeats in backward with the recomputation
    double gemm_recompute = 0; ///< seconds of the recomputed GEMMs the repeated collective runs under
    bool fwd_fused = true, bwd_fused = true; ///< the overlap applies (FrameworkProfile::tp_overlap_by_pattern)
};

/**
 * Which of a linear's sequence-parallel collectives TP overlap can fuse with its GEMMs. Transformer Engine overlaps
 * them all. PyTorch's async TP rewrites collective + matmul pairs (FrameworkProfile::tp_overlap_by_pattern): a
 * gather fuses only into a GEMM that reads the gathered 16-bit or float8 tensor as it is, so not where a rowwise
 * float8 cast sits between them; a reduce-scatter only into the single GEMM producing its input, so not a column
 * input's gradient summed over its `consumers` linears.
 */
struct TpFusion
{
    bool column_fwd = true, column_bwd = true; ///< the input's all-gather; its gradient's reduce-scatter
    bool row_fwd = true, row_bwd = true; ///< the output's reduce-scatter; its gradient's all-gather
};

TpFusion tpFusionOf(const LayerLayout& layout, bool rowwiseFp8, int consumers)
{
    if (!layout.tp_overlap_by_pattern)
        return {};
    return {!rowwiseFp8, consumers <= 1, true, !rowwiseFp8};
}

double exposedTime(double comm, double gemm, int tp)
{
    return comm <= 0 ? 0 : std::max(comm / tp, comm - gemm);
}

/** What one layer's fused attention does under context parallelism (per micro-batch, per device). */
struct CpAttention
{
    int cp = 1;
    double attention_fwd = 0, attention_bwd = 0; ///< the whole local attention, all cp steps, seconds
    double kv_bytes = 0; ///< the local K and V (16-bit; only the kv heads under GQA)
    double out_elements = 0; ///< elements of the local attention output
    CpComm comm = CpComm::P2PRing;
    double merge_bytes_per_element = 10; ///< merging one more step's output into the running one
    double dkv_bytes_per_element = 2; ///< dK/dV as passed along the ring in backward
};

struct CpAttentionCost
{
    double exposed_fwd = 0, exposed_bwd = 0; ///< communication not hidden under the attention steps
    double merge_fwd = 0, merge_bwd = 0; ///< per-step output merges and gradient accumulations
};

/**
 * Context-parallel attention as the frameworks run it: causal load balancing splits the sequence into 2 cp chunks
 * and gives rank r chunks r and 2cp-1-r (Transformer Engine's get_batch_on_this_cp_rank in Megatron; PyTorch's
 * _context_parallel_shard with enable_load_balance / the round-robin note of _templated_ring_attention). Every one
 * of the cp steps then does the same work: the local step a causal block over both chunks, the others half
 * blocks (both local query chunks against the sender's first chunk, or the second query chunk against both), so
 * a step takes 1/cp of the attention.
 * - P2P ring (TE AttnFuncWithCPAndKVP2P): the K/V for step i+1 travel while step i computes, so each of the cp - 1
 *   transfers is exposed only beyond one step's attention. Backward sends K/V and the partial dK/dV together; the
 *   dK/dV finally returns to its owner after the last step, unhidden.
 * - All-gather (PyTorch _AllGatherRotater): the whole K/V is gathered once, under the local (first) step only.
 *   Backward gathers again under the first step and rotates dK/dV (fp32) on a ring, each transfer under the next
 *   step, the last one exposed.
 * Every step after the first merges its partial output into the running one (online softmax); backward
 * accumulates each step's dQ (read fp32 accumulator and the 16-bit step result, write fp32: 10 B per element).
 */
CpAttentionCost cpAttentionCost(const CpAttention& a, const GroupShape& group, const CostSource& source)
{
    CpAttentionCost c;
    if (a.cp <= 1 || a.kv_bytes <= 0)
        return c;
    const bool inter = group.nodes() > 1;
    const double steps = a.cp;
    const double fwdStep = a.attention_fwd / steps;
    const double bwdStep = a.attention_bwd / steps;
    const double dkvBytes = a.kv_bytes * a.dkv_bytes_per_element / 2.0;
    switch (a.comm) {
    case CpComm::P2PRing: {
        const double kv = source.p2pTime(a.kv_bytes, inter);
        const double kvAndDkv = source.p2pTime(a.kv_bytes + dkvBytes, inter);
        c.exposed_fwd = (steps - 1) * std::max(0.0, kv - fwdStep);
        c.exposed_bwd = (steps - 1) * std::max(0.0, kvAndDkv - bwdStep) + source.p2pTime(dkvBytes, inter);
        break;
    }
    case CpComm::AllGather: {
        const double gather = source.collectiveTime(Collective::AllGather, a.kv_bytes * a.cp, group);
        const double dkv = source.p2pTime(dkvBytes, inter);
        c.exposed_fwd = std::max(0.0, gather - fwdStep);
        c.exposed_bwd = std::max(0.0, gather - bwdStep) + (steps - 2) * std::max(0.0, dkv - bwdStep) + dkv;
        break;
    }
    }
    c.merge_fwd = (steps - 1) * source.memoryTime(a.merge_bytes_per_element * a.out_elements);
    constexpr double kGradAccumulateBytesPerElement = 4 + 2 + 4;
    c.merge_bwd = (steps - 1) * source.memoryTime(kGradAccumulateBytesPerElement * a.out_elements);
    return c;
}

/** The recomputed module instance an op belongs to, or "" when its activations are kept. */
std::string recomputeInstance(const Op& op, const Layer& layer, const LayerLayout& layout)
{
    switch (layout.recompute) {
    case RecomputeKind::None:
        return {};
    case RecomputeKind::Full:
        return layer.kind == LayerKind::Block ? layer.name : std::string();
    case RecomputeKind::Selective:
        return matchedModule(op.module, {"core"});
    case RecomputeKind::Modules:
        break;
    }
    if (std::find(layout.recompute_modules.begin(), layout.recompute_modules.end(), "ROOT")
        != layout.recompute_modules.end())
        return layer.name;
    return matchedModule(op.module, layout.recompute_modules);
}

} // namespace

WeightGemm weightGemmOf(const Op& op, const Tensor& weight)
{
    const auto& shape = weight.shape;
    if (shape.size() < 2)
        return {};
    if (op.kind == OpKind::Conv && shape.size() > 2) {
        double window = 1;
        for (std::size_t d = 1; d < shape.size(); ++d)
            window *= static_cast<double>(shape[d]);
        return {window, static_cast<double>(shape.front())};
    }
    return {static_cast<double>(shape[shape.size() - 2]), static_cast<double>(shape.back())};
}

double expertLoadFactor(double capacityFactor, double routerImbalance, int ep, double routedPerRank)
{
    double load = 1;
    if (ep > 1 && routedPerRank > 0)
        load = std::max(routerImbalance, 1 + std::sqrt(2 * std::log(static_cast<double>(ep)) / routedPerRank));
    return capacityFactor > 0 ? std::min(load, capacityFactor) : load;
}

LayerCost computeLayerCost(const ModelGraph& graph, const std::vector<OpId>& producer, const Layer& layer,
                           const LayerLayout& layout, const CostSource& source)
{
    LayerCost cost;
    const int tp = std::max(1, layout.tp);
    const int cp = std::max(1, layout.cp);
    const double batchScale = layout.micro_batch / static_cast<double>(graph.batch);
    const DType dtype = graph.dtype;
    // The experts' routed token copies on the busiest expert-parallel rank (expertLoadFactor): its GEMMs, its
    // all-to-all receive and its saved internals all scale with them.
    std::unordered_set<TensorId> routedTensors;
    double expertLoad = 1;
    for (const auto id : layer.ops) {
        const Op& op = graph.op(id);
        if (op.kind != OpKind::MoeExperts || op.top_k <= 0)
            continue;
        routedTensors.insert(op.outputs.begin() + std::min<std::ptrdiff_t>(1, std::ssize(op.outputs)),
                             op.outputs.end());
        const double routedPerRank = op.top_k * layout.micro_batch * static_cast<double>(graph.seq_len) / cp
            / (layout.sequence_parallel ? tp : 1);
        expertLoad
            = expertLoadFactor(layout.moe_capacity_factor, layout.moe_router_imbalance, layout.ep, routedPerRank);
    }
    const TensorBytes bytesOf {graph, layout, batchScale / cp, &routedTensors, expertLoad};

    std::vector<std::string> instanceOf(layer.ops.size());
    std::unordered_map<OpId, std::size_t> indexOf;
    /** What recomputing each op costs (forward seconds, executed and model FLOPs): a compiled policy drops the
        recomputations the backward does not read, so they are taken back after the walk below. */
    struct RecomputeShare
    {
        double seconds = 0, flops = 0, model_flops = 0;
    };
    std::vector<RecomputeShare> recomputeOf(layer.ops.size());
    const bool perOpPolicy = layout.selective_checkpoint_policy && layout.recompute == RecomputeKind::Selective
        && layer.kind == LayerKind::Block;
    int gemmCount = 0;
    for (std::size_t i = 0; i < layer.ops.size(); ++i) {
        indexOf.emplace(layer.ops[i], i);
        const Op& op = graph.op(layer.ops[i]);
        if (perOpPolicy) {
            // torchtitan's per-op selective checkpointing (torchtitan/distributed/activation_checkpoint.py
            // _get_custom_policy, selective_ac_option = "op"): the block is one checkpoint region whose policy
            // caches the outputs of the attention kernel and of every odd-numbered matmul in forward order, and
            // recomputes everything else (the even matmuls, norms, rotary, activation, residual adds). The builder
            // lists v, k, q and up, gate where torchtitan runs wq, wk, wv and w1, w3: the cached set has the same
            // shapes either way (q and v; one ffn-wide output).
            const bool cached = (op.kind == OpKind::FlashAttention && layout.policy_caches_attention)
                || (isGemm(op.kind) && ++gemmCount % 2 == 1);
            instanceOf[i] = cached ? std::string() : layer.name;
        } else {
            instanceOf[i] = recomputeInstance(op, layer, layout);
        }
    }
    const auto producedInside = [&](TensorId t, const std::string& instance) {
        const OpId from = producer[static_cast<std::size_t>(t)];
        const auto it = indexOf.find(from);
        return from >= 0 && it != indexOf.end() && instanceOf[it->second] == instance;
    };

    std::unordered_set<TensorId> stashed;
    std::unordered_set<TensorId> fullStash; ///< what the layer would save without recomputation
    std::vector<TensorId> produced;
    TensorId lossLogits = -1;
    double lossSavedBytes = 0;
    std::unordered_set<TensorId> columnInputs;
    std::vector<OverlappedCollective> overlapped;
    std::unordered_map<TensorId, std::size_t> overlappedInput; ///< gathered column input -> its entry
    /** A column input's backward collectives where they run beside its consumers' own GEMMs
        (LayerLayout::tp_backward_comm_async): the SP re-gather beside the dgrad, the dgrad's reduction beside the
        wgrad. */
    struct AsyncBackward
    {
        double regather = 0, reduce = 0;
        double dgrad = 0, wgrad = 0;
    };
    std::unordered_map<TensorId, AsyncBackward> asyncBackward;
    double tpFwd = 0, tpBwd = 0, otherFwd = 0, otherBwd = 0;
    double a2aOverlapped = 0; ///< expert all-to-alls that run under another micro-batch's compute
    double a2aBesideShared = 0; ///< expert all-to-alls that run beside the shared expert (one direction's share)
    double sharedFwd = 0, sharedBwd = 0; ///< the shared expert's own compute
    double tpRecompute = 0; ///< forward TP collectives of recomputed ops, repeated inside backward
    double attentionFwd = 0, attentionBwd = 0;
    bool attentionRecomputed = false; ///< the fused attention is part of a recomputed module
    // Tensors some saved copy of which is bigger than the graph's tensor: K and V repeated to the query heads
    // (FrameworkProfile::attention_repeats_kv), by the extra bytes.
    std::unordered_map<TensorId, double> repeatedKvExtra;
    // Sequence-parallel column inputs saved whole rather than as the shard (LayerLayout::sp_saves_gathered_inputs),
    // by the extra bytes.
    std::unordered_map<TensorId, double> gatheredExtra;
    double eagerActExtra = 0; ///< eager SwiGLU's silu(gate), saved by the multiply beside gate and up
    bool eagerActKept = false;
    double cpKvBytes = 0; ///< local K and V (kv heads only under GQA)
    double cpOutElements = 0; ///< elements of the local attention output

    // GEMMs reading each column-parallel input (Q, K and V read one; gate and up another): autograd sums their
    // input gradients before the reduce-scatter.
    std::unordered_map<TensorId, int> columnConsumers;
    std::unordered_set<TensorId> fp8CastInputs; ///< column inputs already cast to float8 before their gather
    // Where the framework runs those linears as one GEMM (LayerLayout::fused_column_gemms), its output width.
    std::unordered_map<TensorId, double> fusedWidth;
    for (const auto id : layer.ops) {
        const Op& op = graph.op(id);
        if (isGemm(op.kind) && !op.inputs.empty() && gathersItsInput(op)) {
            ++columnConsumers[op.inputs.front()];
            if (layout.fused_column_gemms && !op.params.empty() && op.kind != OpKind::MoeExperts)
                fusedWidth[op.inputs.front()] += gemmOf(graph, op, 1, tp).n;
        }
    }

    for (std::size_t i = 0; i < layer.ops.size(); ++i) {
        const Op& op = graph.op(layer.ops[i]);
        const bool split = splitsByTp(op.tp_role) || layout.sequence_parallel;
        const double share = batchScale / cp / (split ? tp : 1) * (op.kind == OpKind::MoeExperts ? expertLoad : 1);
        const double fwdFlops = op.flops_fwd * share;
        const double bwdInputFlops = op.flops_bwd_input * share;
        const double bwdWeightFlops = op.flops_bwd_weight * share;

        // A GEMM beside an overlapped sequence-parallel collective runs in tp chunks of m / tp rows, each
        // pipelined against one chunk of the collective (PyTorch async TP: torch/distributed/_symmetric_memory/
        // __init__.py _fused_all_gather_matmul_impl / _fused_matmul_reduce_scatter_impl split the sharded operand
        // per rank; Transformer Engine's ring-exchange userbuffers overlap, transformer_engine/pytorch/module/
        // base.py initialize_ub, likewise tp chunks). Where the framework runs the chunks one after another
        // (FrameworkProfile::tp_overlap_serial_chunks) they are tp smaller, less efficient GEMMs instead of one.
        const bool gathersInputOp = gathersItsInput(op);
        const bool reducesOutputOp = op.tp_role == TpRole::Row;
        const bool rowwiseFp8 = runsInFp8(op, layout) && layout.fp8_recipe == Float8Recipe::Rowwise;
        // Tensorwise float8 TP (FrameworkProfile::tp_gathers_fp8_tensorwise) casts before it gathers.
        const bool fp8TensorwiseTp = tp > 1 && layout.sequence_parallel && layout.tp_gathers_fp8_tensorwise
            && runsInFp8(op, layout) && layout.fp8_recipe == Float8Recipe::Tensorwise;
        const auto consumers = columnConsumers.find(op.inputs.empty() ? -1 : op.inputs.front());
        const TpFusion fusion
            = tpFusionOf(layout, rowwiseFp8, consumers == columnConsumers.end() ? 1 : consumers->second);
        const bool chunked = tp > 1 && layout.sequence_parallel && layout.tp_comm_overlap
            && layout.tp_overlap_serial_chunks && isGemm(op.kind);
        const int chunks
            = chunked && ((gathersInputOp && fusion.column_fwd) || (reducesOutputOp && fusion.row_fwd)) ? tp : 1;
        const int chunksBwd
            = chunked && ((gathersInputOp && fusion.column_bwd) || (reducesOutputOp && fusion.row_bwd)) ? tp : 1;
        double fwd = 0, bwdIn = 0, bwdW = 0;
        if (isGemm(op.kind) && fwdFlops > 0) {
            const Gemm g = gemmOf(graph, op, fwdFlops, op.kind == OpKind::MoeExperts ? layout.etp : (split ? tp : 1));
            const bool fp8 = runsInFp8(op, layout);
            const DType gemmType = fp8 ? DType::FP8 : dtype;
            const double rowwise
                = fp8 && layout.fp8_recipe == Float8Recipe::Rowwise ? 1.0 / kRowwiseGemmRelativeThroughput : 1.0;
            // The experts' grouped GEMM computes its padded rows; with few tokens per expert, reading (or, for the
            // weight gradient, writing) every receiving expert's matrices is what takes the time.
            const bool grouped = op.kind == OpKind::MoeExperts && op.num_experts > 0;
            const ExpertGroups groups = grouped ? expertGroups(op, g, layout.ep) : ExpertGroups {};
            const double weights = grouped ? source.memoryTime(static_cast<double>(op.params.size())
                                                               * groups.weight_elements * dtypeBytes(gemmType))
                                           : 0;
            const double m = g.m * groups.padding;
            const double mc = m / chunks;
            // A linear fused with the others reading its input runs as its share of one wider GEMM.
            const auto fused = op.inputs.empty() ? fusedWidth.end() : fusedWidth.find(op.inputs.front());
            const double width = fused != fusedWidth.end() && fused->second > g.n ? fused->second : g.n;
            const double part = g.n / width;
            fwd = std::max(chunks * source.matmulTime(mc, width, g.k, gemmType) * part * rowwise, weights);
            bwdIn = bwdInputFlops > 0 ? std::max(chunksBwd * source.matmulTime(m / chunksBwd, g.k, width, gemmType)
                                                     * part * rowwise * bwdInputFlops / fwdFlops,
                                                 weights)
                                      : 0;
            // The weight-gradient GEMM reduces over all m rows at once (it is not part of the pipelined overlap).
            bwdW = bwdWeightFlops > 0 ? std::max(
                       source.matmulTime(g.k, width, m, gemmType) * part * rowwise * bwdWeightFlops / fwdFlops, weights)
                                      : 0;
            if (op.params.empty()) {
                const double streamed = batchedGemmBytes(op, bytesOf);
                fwd = std::max(fwd, source.memoryTime(streamed));
                if (bwdIn > 0)
                    bwdIn = std::max(bwdIn, source.memoryTime(2 * streamed));
            }
            if (fp8) {
                // Dynamic-scaling casts of each GEMM's operands (the recipe decides which are cast again).
                Fp8Casts casts = fp8CastsOf(g.m, g.n, g.k, layout.fp8_recipe);
                const OpId inputFrom = op.inputs.empty() ? -1 : producer[static_cast<std::size_t>(op.inputs.front())];
                const bool castInNorm
                    = layout.fp8_cast_in_norm && inputFrom >= 0 && graph.op(inputFrom).kind == OpKind::Norm;
                if (castInNorm) {
                    // Transformer Engine's LayerNormLinear (transformer_engine/pytorch/module/layernorm_linear.py,
                    // with_quantized_norm): the norm kernel writes the FP8 input, gathered as FP8 under SP.
                    casts.fwd -= g.m * g.k;
                } else if (fp8TensorwiseTp) {
                    // Float8 TP casts sequence shards before gathering them (torchao float8_tensor_parallel.py):
                    // PrepareFloat8ModuleInput casts a module's input once for all its linears (Q, K and V read
                    // that one float8 copy), and Float8RowwiseParallel's output casts its gradient in backward
                    // before the gather.
                    if (gathersInputOp && !op.inputs.empty()) {
                        casts.fwd -= g.m * g.k;
                        if (fp8CastInputs.insert(op.inputs.front()).second)
                            casts.fwd += g.m * g.k / tp;
                    }
                }
                if (fp8TensorwiseTp && reducesOutputOp)
                    casts.bwd_input -= g.m * g.n * (1 - 1.0 / tp);
                // The weight's cast is a kernel of its own, once per micro-batch unless the framework caches it.
                const double weightElements = op.params.empty() ? 0 : g.k * g.n;
                const double weightCast = source.memoryTime(kFp8CastBytesPerElement * weightElements);
                cost.fp8_weight_cast += weightCast;
                fwd += weightCast + source.memoryTime(kFp8CastBytesPerElement * (casts.fwd - weightElements));
                bwdIn += source.memoryTime(kFp8CastBytesPerElement * casts.bwd_input);
                bwdW += source.memoryTime(kFp8CastBytesPerElement * casts.bwd_weight);
            }
            if (tp > 1 && layout.sequence_parallel && layout.tp_comm_overlap && layout.tp_overlap_by_pattern
                && reducesOutputOp && fusion.row_fwd && !op.outputs.empty()) {
                // PyTorch's fused matmul + reduce-scatter (torch/distributed/_symmetric_memory/__init__.py
                // _fused_matmul_reduce_scatter_impl) sends each chunk's partial product to its owner and then sums
                // the tp partials in a separate kernel on the compute stream: it reads the whole 16-bit product
                // and writes the 1/tp shard.
                fwd += source.memoryTime(bytesOf.full(op.outputs.front()) * (1 + 1.0 / tp));
            }
        } else if (op.kind == OpKind::FlashAttention) {
            // Per ring step under context parallelism (see the cp block below): each of the cp steps covers an
            // equal share of the causal work, its thread blocks looping over about one chunk of S / (2 cp) keys
            // (zig-zag halves) up to 1.5 chunks; without CP a causal kernel's blocks loop over S / 2 keys on average.
            const double seq = static_cast<double>(graph.seq_len);
            const double kvTokens = cp > 1 ? 1.5 * seq / (2.0 * cp) : seq / 2.0;
            fwd = attentionKernelTime(source, fwdFlops, kvTokens, dtype) / layout.attention_speedup;
            // Flash backward recomputes the scores: five GEMM passes to the forward's two (x 1.25 of 2x).
            bwdIn = attentionKernelTime(source, bwdInputFlops * 1.25, kvTokens, dtype) / layout.attention_speedup;
            attentionFwd += fwd;
            attentionBwd += bwdIn;
            attentionRecomputed = attentionRecomputed || !instanceOf[i].empty();
            for (std::size_t k = 1; k < op.inputs.size() && k < 3; ++k)
                cpKvBytes += bytesOf(op.inputs[k]);
            if (!op.outputs.empty())
                cpOutElements
                    += bytesOf(op.outputs.front()) / std::max(1, dtypeBytes(graph.tensor(op.outputs.front()).dtype));
        } else if (op.kind == OpKind::Loss && !op.inputs.empty()) {
            const Tensor& logitsTensor = graph.tensor(op.inputs.front());
            const double logits = bytesOf(op.inputs.front()) / std::max(1, dtypeBytes(logitsTensor.dtype));
            fwd = source.memoryTime(kLossFwdBytesPerLogit * logits);
            bwdIn = source.memoryTime(kLossBwdBytesPerLogit * logits);
        } else {
            const double moved = (op.bytes_read + op.bytes_written) * share
                * (layout.eager_kernels ? eagerTrafficFactor(graph, op) : 1.0);
            fwd = source.memoryTime(moved);
            // Backward reads the saved input and the output gradient and writes the input gradient.
            bwdIn = source.memoryTime(1.5 * moved);
        }
        if (op.kind == OpKind::AttentionScore || op.kind == OpKind::AttentionContext)
            attentionFwd += fwd;

        if (op.module.find("shared_expert") != std::string::npos) {
            sharedFwd += fwd;
            sharedBwd += bwdIn + bwdW;
        }
        cost.forward += fwd;
        cost.backward_input += bwdIn;
        cost.backward_weight += bwdW;
        cost.flops += fwdFlops + bwdInputFlops + bwdWeightFlops;

        if (op.kind == OpKind::Loss && !op.inputs.empty()) {
            // What the loss saves and holds while it runs is the framework's (framework_profile.cpp cites each):
            // an fp32 softmax in place of the 16-bit logits (Megatron, torchtitan) or the logits themselves (fused
            // cross-entropy, llm-foundry).
            const Tensor& logitsTensor = graph.tensor(op.inputs.front());
            const double logits = bytesOf(op.inputs.front()) / std::max(1, dtypeBytes(logitsTensor.dtype));
            lossSavedBytes += logits * layout.loss_saved_bytes_per_logit;
            cost.working_bytes = std::max(cost.working_bytes, logits * layout.loss_working_bytes_per_logit);
        }
        if (op.kind == OpKind::FlashAttention && layout.attention_repeats_kv && graph.transformer
            && graph.transformer->num_kv_heads > 0 && graph.transformer->num_heads > graph.transformer->num_kv_heads) {
            // repeat_kv before the kernel (torchtitan v0.2.0-v0.2.1 torchtitan/models/llama3/model/model.py
            // Attention.forward; Hugging Face's eager and sdpa attention): the kernel saves the repeated K and V,
            // and the kv-head tensors they came from are saved by nobody.
            const double repeats = static_cast<double>(graph.transformer->num_heads) / graph.transformer->num_kv_heads;
            for (std::size_t k = 1; k < op.inputs.size() && k < 3; ++k)
                if (std::find(op.saved.begin(), op.saved.end(), op.inputs[k]) != op.saved.end())
                    repeatedKvExtra[op.inputs[k]] = (repeats - 1) * bytesOf(op.inputs[k]);
        }
        if (layout.eager_kernels && isGatedActivation(op) && !op.outputs.empty()) {
            // F.silu(w1(x)) * w3(x) in eager mode: silu saves its input, the multiply both of its operands, so the
            // silu output is stashed beside gate and up (a fused SwiGLU, Megatron's bias_swiglu_impl or a compiled
            // block, saves gate and up only).
            eagerActExtra += bytesOf(op.outputs.front());
            eagerActKept = eagerActKept || instanceOf[i].empty();
        }
        const auto keeps
            = [&](TensorId t) { return op.kind != OpKind::Loss || op.inputs.empty() || t != op.inputs.front(); };
        for (const auto t : op.saved)
            if (keeps(t))
                fullStash.insert(t);
        if (!instanceOf[i].empty()) {
            recomputeOf[i] = {fwd, fwdFlops, op.flops_fwd * batchScale};
            cost.recompute += fwd;
            cost.recompute_flops += fwdFlops;
            cost.recompute_model_flops += op.flops_fwd * batchScale;
            // A recomputed module keeps its external inputs, and what ops outside it need.
            for (const auto t : op.inputs)
                if (!graph.tensor(t).is_param && !producedInside(t, instanceOf[i]) && keeps(t))
                    stashed.insert(t);
            for (const auto t : op.saved)
                if (!producedInside(t, instanceOf[i]) && keeps(t))
                    stashed.insert(t);
        } else {
            for (const auto t : op.saved)
                if (keeps(t))
                    stashed.insert(t);
        }
        for (const auto t : op.outputs)
            produced.push_back(t);
        if (op.kind == OpKind::Loss && !op.inputs.empty())
            lossLogits = op.inputs.front();

        // Megatron's tensor-parallel collectives (Shoeybi et al.; Korthikanti et al. for SP).
        if (tp > 1) {
            const bool sp = layout.sequence_parallel;
            // Recomputing an op's forward repeats its forward collectives too (calibration fix: they were counted
            // once, so full recomputation under TP was charged 2 all-reduces per block too few). torchtitan's
            // per-op policy (_save_list in torchtitan/models/llama3/parallelize_llama.py at 820504e) saves
            // reduce_scatter_tensor, so a row linear's reduce-scatter never repeats, and not
            // all_gather_into_tensor, so every gathered column input is gathered again in backward, whichever of
            // its linears the policy caches: their weight gradients read the gathered input. Compiled, the
            // partitioner may recompute a collective a user's checkpoint policy tags
            // (torch/_functorch/partitioners.py force_save_collectives).
            const bool opRecomputed = !instanceOf[i].empty();
            const bool policyOnSp = perOpPolicy && sp;
            const bool reducesOutput
                = op.tp_role == TpRole::Row || (op.tp_role == TpRole::Vocab && op.kind == OpKind::Embedding);
            // The embedding's reduce-scatter has no GEMM to hide under; the others overlap when asked to.
            const bool overlap = sp && layout.tp_comm_overlap && isGemm(op.kind);
            // Tensorwise float8 TP gathers the 1-byte casts.
            const double gatherShare = fp8TensorwiseTp ? 1.0 / dtypeBytes(dtype) : 1.0;
            if (reducesOutput && !op.outputs.empty()) {
                const double bytes = bytesOf.full(op.outputs.front());
                const double forward = source.collectiveTime(sp ? Collective::ReduceScatter : Collective::AllReduce,
                                                             bytes, layout.tp_group);
                const double backward
                    = sp ? source.collectiveTime(Collective::AllGather, bytes * gatherShare, layout.tp_group) : 0;
                const bool repeated = opRecomputed && !policyOnSp;
                if (overlap) {
                    overlapped.push_back(
                        {forward, backward, fwd, bwdIn, repeated, fwd, fusion.row_fwd, fusion.row_bwd});
                } else {
                    tpFwd += forward;
                    tpBwd += backward;
                    tpRecompute += repeated ? forward : 0;
                }
            }
            if (gathersInputOp && !op.inputs.empty()) {
                const TensorId input = op.inputs.front();
                if (sp && layout.sp_saves_gathered_inputs
                    && std::find(op.saved.begin(), op.saved.end(), input) != op.saved.end()) {
                    // Under FP8 the gathered copy is the 1-byte cast (torchao's Float8ColwiseParallel casts first).
                    const double saved = bytesOf.full(input) * (runsInFp8(op, layout) ? 0.5 : 1.0);
                    gatheredExtra[input] = std::max(gatheredExtra[input], saved - bytesOf(input));
                }
                if (columnInputs.insert(input).second) {
                    const double bytes = bytesOf.full(input);
                    const double forward
                        = sp ? source.collectiveTime(Collective::AllGather, bytes * gatherShare, layout.tp_group) : 0;
                    const double backward = source.collectiveTime(
                        sp ? Collective::ReduceScatter : Collective::AllReduce, bytes, layout.tp_group);
                    const bool repeated = opRecomputed || policyOnSp;
                    if (overlap) {
                        overlappedInput.emplace(input, overlapped.size());
                        overlapped.push_back(
                            {forward, backward, 0, 0, repeated, 0, fusion.column_fwd, fusion.column_bwd});
                    } else if (layout.tp_backward_comm_async) {
                        // Megatron keeps the sharded input and gathers it again for the wgrad GEMM.
                        tpFwd += forward;
                        asyncBackward[input] = {forward, backward, 0, 0};
                    } else {
                        tpFwd += forward;
                        tpBwd += backward;
                    }
                    tpRecompute += repeated && !overlap ? forward : 0;
                }
                if (const auto it = asyncBackward.find(input); it != asyncBackward.end()) {
                    it->second.dgrad += bwdIn;
                    it->second.wgrad += bwdW;
                }
                // Every GEMM that consumes the gathered input (Q, K and V; gate and up) hides a share of it.
                if (const auto it = overlappedInput.find(input); it != overlappedInput.end()) {
                    overlapped[it->second].gemm_fwd += fwd;
                    overlapped[it->second].gemm_bwd += bwdIn;
                    overlapped[it->second].gemm_recompute += opRecomputed ? fwd : 0;
                }
            }
            if (op.kind == OpKind::Loss && op.tp_role == TpRole::Vocab) {
                // Vocab-parallel cross-entropy: max, sum of exponentials and target logit, fp32 per token.
                const double tokens = layout.micro_batch * static_cast<double>(graph.seq_len) / cp;
                const double reductions = 3 * source.collectiveTime(Collective::AllReduce, 4 * tokens, layout.tp_group);
                tpFwd += reductions;
                tpRecompute += opRecomputed ? reductions : 0;
            }
        }
        if (op.kind == OpKind::MoeExperts && layout.ep > 1 && op.top_k > 0 && !op.inputs.empty()) {
            // Dispatch and combine all-to-alls of the routed tokens, forward and backward.
            const double routed
                = bytesOf.full(op.inputs.front()) * op.top_k / (layout.sequence_parallel ? tp : 1) * expertLoad;
            const double a2a = source.collectiveTime(Collective::AllToAll, routed, layout.ep_group);
            if (layout.moe_shared_expert_overlap) {
                a2aBesideShared += 2 * a2a;
            } else if (layout.moe_a2a_overlap) {
                a2aOverlapped += 4 * a2a;
            } else {
                otherFwd += 2 * a2a;
                otherBwd += 2 * a2a;
            }
        }
        if (op.kind == OpKind::MoeExperts && layout.etp > 1 && !op.inputs.empty()) {
            // Experts split over etp ranks (Megatron's alltoall dispatcher): with sequence parallelism the routed
            // tokens are all-gathered over the etp group before the expert GEMMs and the outputs reduce-scattered
            // after them (backward: the reverse); without it each rank holds every token and the row-split down
            // projection's output is all-reduced (backward: the input gradient), as in a dense MLP.
            const double tokens = bytesOf.full(op.inputs.front());
            if (layout.sequence_parallel) {
                const double routed = tokens * std::max(1, op.top_k) / tp * layout.etp * expertLoad;
                const double pair = source.collectiveTime(Collective::AllGather, routed, layout.etp_group)
                    + source.collectiveTime(Collective::ReduceScatter, routed, layout.etp_group);
                otherFwd += pair;
                otherBwd += pair;
            } else {
                const double allReduce = source.collectiveTime(Collective::AllReduce, tokens, layout.etp_group);
                otherFwd += allReduce;
                otherBwd += allReduce;
            }
        }
    }

    // The biggest temporary a layer's backward holds twice (input and gradient); the logits are in the loss's
    // working set already.
    for (const auto t : produced)
        if (t != lossLogits)
            cost.largest_activation_bytes = std::max(cost.largest_activation_bytes, bytesOf(t));
    const bool anyRecomputed
        = std::any_of(instanceOf.begin(), instanceOf.end(), [](const std::string& i) { return !i.empty(); });
    const bool anyKept
        = std::any_of(instanceOf.begin(), instanceOf.end(), [](const std::string& i) { return i.empty(); });
    const bool policyStash = layout.selective_checkpoint_policy && anyRecomputed && anyKept;
    if (policyStash && layout.eager_kernels) {
        // torch.utils.checkpoint with a policy in eager mode (torchtitan's _apply_op_sac): the region keeps its
        // inputs, and _CachingTorchDispatchMode caches the output of every op the policy saves (mm, SDPA) whether
        // backward reads it or not; every other tensor backward needs is recomputed.
        stashed.clear();
        for (std::size_t i = 0; i < layer.ops.size(); ++i) {
            const Op& op = graph.op(layer.ops[i]);
            for (const auto t : op.inputs) {
                const OpId from = producer[static_cast<std::size_t>(t)];
                if (!graph.tensor(t).is_param && (from < 0 || !indexOf.count(from)))
                    stashed.insert(t);
            }
            if (instanceOf[i].empty() && (isGemm(op.kind) || op.kind == OpKind::FlashAttention))
                stashed.insert(op.outputs.begin(), op.outputs.end());
            // The policy also saves _c10d_functional.reduce_scatter_tensor: a row-parallel linear's output under SP.
            else if (tp > 1 && layout.sequence_parallel && op.tp_role == TpRole::Row && isGemm(op.kind))
                stashed.insert(op.outputs.begin(), op.outputs.end());
        }
    } else if (policyStash) {
        // Compiled (torchtitan wraps each block in AC, then torch.compile): AOTAutograd turns the policy into
        // MUST_SAVE / PREFER_RECOMPUTE tags on one joint graph, and the partitioner saves only what the backward
        // graph reads (torch/_functorch/partitioners.py _extract_fwd_bwd_modules drops saved values the backward
        // does not use). So: walk back from what each op's backward reads, through the ops the policy recomputes,
        // to the cached outputs and region inputs they start from. The second MLP matmul's output, which only
        // the residual add consumes, is cached in eager mode and not saved here. The same walk says which
        // recomputations the backward graph runs: the partitioner recomputes only what the backward reads. So the
        // block's last residual add is not run again, nor under SP the attention output projection (the policy's
        // fourth matmul), which feeds only the saved reduce-scatter.
        std::vector<bool> rerun(layer.ops.size(), false);
        stashed.clear();
        std::vector<TensorId> pending;
        for (const auto id : layer.ops)
            for (const auto t : graph.op(id).saved)
                pending.push_back(t);
        std::unordered_set<TensorId> visited;
        while (!pending.empty()) {
            const TensorId t = pending.back();
            pending.pop_back();
            if (graph.tensor(t).is_param || !visited.insert(t).second)
                continue;
            const OpId from = producer[static_cast<std::size_t>(t)];
            const auto it = from < 0 ? indexOf.end() : indexOf.find(from);
            // The saved reduce-scatter of a row linear's output (see the eager case) ends the walk like a cached
            // output: the residual add that reads it is recomputed from it, not from the linear.
            const bool savedReduceScatter = it != indexOf.end() && tp > 1 && layout.sequence_parallel
                && graph.op(from).tp_role == TpRole::Row && isGemm(graph.op(from).kind);
            if (it == indexOf.end() || instanceOf[it->second].empty() || savedReduceScatter) {
                stashed.insert(t);
                continue;
            }
            rerun[it->second] = true;
            for (const auto input : graph.op(from).inputs)
                pending.push_back(input);
        }
        for (std::size_t i = 0; i < layer.ops.size(); ++i) {
            if (rerun[i])
                continue;
            cost.recompute -= recomputeOf[i].seconds;
            cost.recompute_flops -= recomputeOf[i].flops;
            cost.recompute_model_flops -= recomputeOf[i].model_flops;
        }
    }
    const auto extraIn = [](const std::unordered_map<TensorId, double>& extras, TensorId t) {
        const auto it = extras.find(t);
        return it == extras.end() ? 0.0 : it->second;
    };
    const auto extraOf = [&](TensorId t) { return extraIn(repeatedKvExtra, t); };
    const auto gatheredOf = [&](TensorId t) { return extraIn(gatheredExtra, t); };
    for (const auto t : stashed)
        if (!graph.tensor(t).is_param)
            cost.activation_bytes += bytesOf(t) + (policyStash ? 0.0 : extraOf(t)) + gatheredOf(t);
    cost.activation_bytes += lossSavedBytes;
    if (eagerActKept && !policyStash)
        cost.activation_bytes += eagerActExtra;
    // Recomputation re-creates the module's whole stash before its backward runs (torch.utils.checkpoint and
    // Megatron's CheckpointFunction run the forward again, then backward through it), so for the length of this
    // layer's backward everything it would have saved is alive beside what it did save.
    double fullBytes = lossSavedBytes + eagerActExtra;
    for (const auto t : fullStash)
        if (!graph.tensor(t).is_param)
            fullBytes += bytesOf(t) + extraOf(t) + gatheredOf(t);
    cost.working_bytes = std::max(cost.working_bytes, fullBytes - cost.activation_bytes);

    if (cp > 1 && cpKvBytes > 0) {
        const CpAttentionCost cpCost
            = cpAttentionCost({cp, attentionFwd, attentionBwd, cpKvBytes, cpOutElements, layout.cp_comm,
                               layout.cp_merge_bytes_per_element, layout.cp_dkv_bytes_per_element},
                              layout.cp_group, source);
        otherFwd += cpCost.exposed_fwd;
        otherBwd += cpCost.exposed_bwd;
        cost.forward += cpCost.merge_fwd;
        cost.backward_input += cpCost.merge_bwd;
        if (attentionRecomputed) {
            // The recomputed forward runs the ring (and its merges) again before the backward.
            otherBwd += cpCost.exposed_fwd;
            cost.recompute += cpCost.merge_fwd;
        }
    }

    for (const auto& o : overlapped) {
        tpFwd += o.fwd_fused ? exposedTime(o.comm_fwd, o.gemm_fwd, tp) : o.comm_fwd;
        tpBwd += o.bwd_fused ? exposedTime(o.comm_bwd, o.gemm_bwd, tp) : o.comm_bwd;
        // A repeated gather fuses only into the GEMMs that are themselves recomputed.
        if (o.recomputed)
            tpRecompute += o.fwd_fused ? exposedTime(o.comm_fwd, o.gemm_recompute, tp) : o.comm_fwd;
    }
    for (const auto& [input, a] : asyncBackward)
        tpBwd += std::max(0.0, a.regather - a.dgrad) + std::max(0.0, a.reduce - a.wgrad);
    tpBwd += tpRecompute;
    if (a2aOverlapped > 0) {
        // One micro-batch's four all-to-alls run under another's forward and backward of this layer (Megatron's
        // combined 1F1B): only what outlasts that compute stays exposed, and the kernels share SMs and HBM with
        // it, so at most overlap_hidden_fraction of them hides even under a long layer.
        const double compute = cost.forward + cost.backward_input + cost.backward_weight;
        const double exposed = std::max(a2aOverlapped * (1 - layout.overlap_hidden_fraction), a2aOverlapped - compute);
        otherFwd += exposed / 2;
        otherBwd += exposed / 2;
    }
    if (a2aBesideShared > 0) {
        // Megatron's --moe-shared-expert-overlap (megatron/core/transformer/moe/shared_experts.py): the shared
        // expert runs on its own stream between dispatch and combine, and autograd runs its backward on that stream
        // too, so each direction's two all-to-alls hide under that direction's shared-expert compute.
        otherFwd += std::max(0.0, a2aBesideShared - sharedFwd);
        otherBwd += std::max(0.0, a2aBesideShared - sharedBwd);
    }
    cost.tp_comm = tpFwd + tpBwd;
    cost.other_comm = otherFwd + otherBwd;
    cost.other_comm_forward = otherFwd;
    cost.forward += tpFwd + otherFwd;
    cost.backward_input += tpBwd + otherBwd + cost.recompute;

    // What a pipeline boundary after this layer sends: the last op's main output.
    if (!layer.ops.empty()) {
        const Op& last = graph.op(layer.ops.back());
        if (!last.outputs.empty())
            cost.output_bytes = bytesOf(last.outputs.front());
    }
    return cost;
}

LayerParams paramsPerDevice(const ModelGraph& graph, const std::vector<const Layer*>& layers, int tp, int ep, int etp)
{
    LayerParams p;
    std::unordered_set<TensorId> seen;
    for (const Layer* layer : layers) {
        for (const auto id : layer->ops) {
            const Op& op = graph.op(id);
            for (const auto t : op.params) {
                if (!seen.insert(t).second)
                    continue;
                const Tensor& tensor = graph.tensor(t);
                const double elements = static_cast<double>(tensor.elements());
                if (op.kind == OpKind::MoeExperts)
                    p.expert += elements / (tensor.tp_sharded ? std::max(1, etp) : 1) / std::max(1, ep);
                else
                    p.dense += elements / (tensor.tp_sharded ? tp : 1);
            }
        }
    }
    return p;
}

} // namespace shardscape
