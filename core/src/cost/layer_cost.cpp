// SPDX-License-Identifier: MIT
#include "shardscape/cost/layer_cost.h"

#include "shardscape/support/strings.h"

#include <algorithm>
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
        const auto& shape = graph.tensor(op.params.front()).shape;
        if (shape.size() >= 2) {
            g.k = static_cast<double>(shape[shape.size() - 2]);
            g.n = static_cast<double>(shape.back());
            if (op.tp_role == TpRole::Row)
                g.k /= tp;
            else if (op.tp_role != TpRole::Replicated)
                g.n /= tp;
        }
    } else if (!op.outputs.empty()) {
        // Activation @ activation (attention scores or context): batched GEMMs with a square-ish shape.
        const auto& shape = graph.tensor(op.outputs.front()).shape;
        g.n = static_cast<double>(shape.back());
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
    /** Bytes of a tensor on one device under the layout. */
    double operator()(TensorId id) const
    {
        const Tensor& t = graph.tensor(id);
        double bytes = t.bytes() * scale;
        if (t.tp_sharded || layout.sequence_parallel)
            bytes /= layout.tp;
        return bytes;
    }
    /** Bytes of a hidden-size activation before any TP/SP split (what TP collectives move). */
    double full(TensorId id) const { return graph.tensor(id).bytes() * scale; }
};

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
double eagerTrafficFactor(const ModelGraph& graph, const Op& op)
{
    const auto lastComponent = [](const std::string& module) {
        const auto dot = module.rfind('.');
        return dot == std::string::npos ? module : module.substr(dot + 1);
    };
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
};

double exposedTime(double comm, double gemm, int tp)
{
    return comm <= 0 ? 0 : std::max(comm / tp, comm - gemm);
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

LayerCost computeLayerCost(const ModelGraph& graph, const std::vector<OpId>& producer, const Layer& layer,
                           const LayerLayout& layout, const CostSource& source)
{
    LayerCost cost;
    const int tp = std::max(1, layout.tp);
    const int cp = std::max(1, layout.cp);
    const double batchScale = layout.micro_batch / static_cast<double>(graph.batch);
    const TensorBytes bytesOf {graph, layout, batchScale / cp};
    const DType dtype = graph.dtype;

    std::vector<std::string> instanceOf(layer.ops.size());
    std::unordered_map<OpId, std::size_t> indexOf;
    for (std::size_t i = 0; i < layer.ops.size(); ++i) {
        indexOf.emplace(layer.ops[i], i);
        instanceOf[i] = recomputeInstance(graph.op(layer.ops[i]), layer, layout);
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
    double tpFwd = 0, tpBwd = 0, otherFwd = 0, otherBwd = 0;
    double tpRecompute = 0; ///< forward TP collectives of recomputed ops, repeated inside backward
    double attentionFwd = 0;
    double cpKvBytes = 0;

    for (std::size_t i = 0; i < layer.ops.size(); ++i) {
        const Op& op = graph.op(layer.ops[i]);
        const bool split = splitsByTp(op.tp_role) || layout.sequence_parallel;
        const double share = batchScale / cp / (split ? tp : 1);
        const double fwdFlops = op.flops_fwd * share;
        const double bwdInputFlops = op.flops_bwd_input * share;
        const double bwdWeightFlops = op.flops_bwd_weight * share;

        double fwd = 0, bwdIn = 0, bwdW = 0;
        if (isGemm(op.kind) && fwdFlops > 0) {
            const Gemm g = gemmOf(graph, op, fwdFlops, split ? tp : 1);
            const bool fp8 = runsInFp8(op, layout);
            const DType gemmType = fp8 ? DType::FP8 : dtype;
            fwd = source.matmulTime(g.m, g.n, g.k, gemmType);
            bwdIn = bwdInputFlops > 0 ? source.matmulTime(g.m, g.k, g.n, gemmType) * bwdInputFlops / fwdFlops : 0;
            bwdW = bwdWeightFlops > 0 ? source.matmulTime(g.k, g.n, g.m, gemmType) * bwdWeightFlops / fwdFlops : 0;
            if (fp8) {
                // Casts of the input and the weight before the forward GEMM, of the output gradient before backward.
                fwd += source.memoryTime(kFp8CastBytesPerElement * (g.m * g.k + g.k * g.n));
                bwdIn += source.memoryTime(kFp8CastBytesPerElement * g.m * g.n);
            }
        } else if (op.kind == OpKind::FlashAttention) {
            fwd = source.attentionTime(fwdFlops, dtype);
            // Flash backward recomputes the scores: five GEMM passes to the forward's two (x 1.25 of 2x).
            bwdIn = source.attentionTime(bwdInputFlops * 1.25, dtype);
            attentionFwd += fwd;
            for (std::size_t k = 1; k < op.inputs.size() && k < 3; ++k)
                cpKvBytes += bytesOf(op.inputs[k]);
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

        cost.forward += fwd;
        cost.backward_input += bwdIn;
        cost.backward_weight += bwdW;
        cost.flops += fwdFlops + bwdInputFlops + bwdWeightFlops;

        if (op.kind == OpKind::Loss && !op.inputs.empty()) {
            // Every framework computes cross-entropy on an fp32 copy of the logits and saves the fp32 softmax
            // (framework_profile.cpp cites each): the 16-bit logits are not what backward keeps.
            const Tensor& logitsTensor = graph.tensor(op.inputs.front());
            const double logits = bytesOf(op.inputs.front()) / std::max(1, dtypeBytes(logitsTensor.dtype));
            lossSavedBytes += logits * layout.loss_saved_bytes_per_logit;
            cost.working_bytes = std::max(cost.working_bytes, logits * layout.loss_working_bytes_per_logit);
        }
        const auto keeps
            = [&](TensorId t) { return op.kind != OpKind::Loss || op.inputs.empty() || t != op.inputs.front(); };
        for (const auto t : op.saved)
            if (keeps(t))
                fullStash.insert(t);
        if (!instanceOf[i].empty()) {
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
        const double tpFwdBefore = tpFwd;
        if (tp > 1) {
            const bool sp = layout.sequence_parallel;
            const bool reducesOutput
                = op.tp_role == TpRole::Row || (op.tp_role == TpRole::Vocab && op.kind == OpKind::Embedding);
            const bool gathersInput = op.tp_role == TpRole::Column
                || (op.tp_role == TpRole::Vocab && (op.kind == OpKind::Linear || op.kind == OpKind::MatMul));
            // The embedding's reduce-scatter has no GEMM to hide under; the others overlap when asked to.
            const bool overlap = sp && layout.tp_comm_overlap && isGemm(op.kind);
            if (reducesOutput && !op.outputs.empty()) {
                const double bytes = bytesOf.full(op.outputs.front());
                const double forward = source.collectiveTime(sp ? Collective::ReduceScatter : Collective::AllReduce,
                                                             bytes, layout.tp_group);
                const double backward = sp ? source.collectiveTime(Collective::AllGather, bytes, layout.tp_group) : 0;
                if (overlap) {
                    overlapped.push_back({forward, backward, fwd, bwdIn, !instanceOf[i].empty()});
                } else {
                    tpFwd += forward;
                    tpBwd += backward;
                }
            }
            if (gathersInput && !op.inputs.empty()) {
                const TensorId input = op.inputs.front();
                if (columnInputs.insert(input).second) {
                    const double bytes = bytesOf.full(input);
                    const double forward
                        = sp ? source.collectiveTime(Collective::AllGather, bytes, layout.tp_group) : 0;
                    const double backward = source.collectiveTime(
                        sp ? Collective::ReduceScatter : Collective::AllReduce, bytes, layout.tp_group);
                    if (overlap) {
                        overlappedInput.emplace(input, overlapped.size());
                        overlapped.push_back({forward, backward, 0, 0, !instanceOf[i].empty()});
                    } else {
                        tpFwd += forward;
                        tpBwd += backward;
                    }
                }
                // Every GEMM that consumes the gathered input (Q, K and V; gate and up) hides a share of it.
                if (const auto it = overlappedInput.find(input); it != overlappedInput.end()) {
                    overlapped[it->second].gemm_fwd += fwd;
                    overlapped[it->second].gemm_bwd += bwdIn;
                }
            }
            if (op.kind == OpKind::Loss && op.tp_role == TpRole::Vocab) {
                // Vocab-parallel cross-entropy: max, sum of exponentials and target logit, fp32 per token.
                const double tokens = layout.micro_batch * static_cast<double>(graph.seq_len) / cp;
                tpFwd += 3 * source.collectiveTime(Collective::AllReduce, 4 * tokens, layout.tp_group);
            }
        }
        // Recomputing an op's forward repeats its forward collectives too (calibration fix: they were counted
        // once, so full recomputation under TP was charged 2 all-reduces per block too few).
        if (!instanceOf[i].empty())
            tpRecompute += tpFwd - tpFwdBefore;
        if (op.kind == OpKind::MoeExperts && layout.ep > 1 && op.top_k > 0 && !op.inputs.empty()) {
            // Dispatch and combine all-to-alls of the routed tokens, forward and backward.
            const double routed = bytesOf.full(op.inputs.front()) * op.top_k / (layout.sequence_parallel ? tp : 1);
            const double a2a = source.collectiveTime(Collective::AllToAll, routed, layout.ep_group);
            otherFwd += 2 * a2a;
            otherBwd += 2 * a2a;
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
    if (layout.selective_checkpoint_policy && anyRecomputed && anyKept) {
        // torch.utils.checkpoint with a policy (torchtitan's _apply_op_sac): the region keeps its inputs and the
        // cached outputs of the ops the policy saves (mm, SDPA); every other tensor backward needs is recomputed.
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
        }
    }
    for (const auto t : stashed)
        if (!graph.tensor(t).is_param)
            cost.activation_bytes += bytesOf(t);
    cost.activation_bytes += lossSavedBytes;
    // Recomputation re-creates the module's whole stash before its backward runs (torch.utils.checkpoint and
    // Megatron's CheckpointFunction run the forward again, then backward through it), so for the length of this
    // layer's backward everything it would have saved is alive beside what it did save.
    double fullBytes = lossSavedBytes;
    for (const auto t : fullStash)
        if (!graph.tensor(t).is_param)
            fullBytes += bytesOf(t);
    cost.working_bytes = std::max(cost.working_bytes, fullBytes - cost.activation_bytes);

    if (cp > 1 && cpKvBytes > 0) {
        // Ring attention: cp - 1 steps each passing the local K/V chunk on, hidden under the attention compute.
        const bool inter = layout.cp_group.nodes() > 1;
        const double ring = (cp - 1) * source.p2pTime(cpKvBytes, inter);
        otherFwd += std::max(0.0, ring - attentionFwd);
        otherBwd += std::max(0.0, 2 * ring - 2 * attentionFwd); // K/V out and dK/dV back
    }

    for (const auto& o : overlapped) {
        const double forward = exposedTime(o.comm_fwd, o.gemm_fwd, tp);
        tpFwd += forward;
        tpBwd += exposedTime(o.comm_bwd, o.gemm_bwd, tp);
        if (o.recomputed)
            tpRecompute += forward;
    }
    tpBwd += tpRecompute;
    cost.tp_comm = tpFwd + tpBwd;
    cost.other_comm = otherFwd + otherBwd;
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

LayerParams paramsPerDevice(const ModelGraph& graph, const std::vector<const Layer*>& layers, int tp, int ep)
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
                    p.expert += elements / (tensor.tp_sharded ? tp : 1) / std::max(1, ep);
                else
                    p.dense += elements / (tensor.tp_sharded ? tp : 1);
            }
        }
    }
    return p;
}

} // namespace shardscape
