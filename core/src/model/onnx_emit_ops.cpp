// SPDX-License-Identifier: MIT
// The op each node becomes, with its FLOPs, bytes and saved tensors in the HF builder's conventions
// (transformer_builder.cpp): linear layers, matmuls, convolutions, gathers, losses, attention, elementwise.
#include "onnx_importer.h"
#include "shardscape/support/strings.h"

#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

namespace shardscape::onnx_detail {

Op Importer::linearOp(int n, int out)
{
    const NodeInfo& nd = node(n);
    Op op;
    op.name = uniqueOpName(nd.proto->name().empty() ? cat(nd.proto->op_type(), "_", n) : nd.proto->name());
    op.kind = OpKind::Linear;
    int act = -1;
    for (const int in : nd.inputs) {
        if (isActivation(in) && act < 0) {
            act = in;
            op.inputs.push_back(activationTensor(in));
            op.bytes_read += bytesOf(in);
        } else if (isParam(in)) {
            addParams(op, in);
            op.bytes_read += bytesOf(in);
        }
    }
    estimateOutputShape(n, out0(n));
    if (out != out0(n))
        estimateOutputShape(value(out).producer, out);
    op.outputs = {activationTensor(out)};
    op.bytes_written = bytesOf(out);
    op.saved = op.inputs;
    const double matmul = matmulFlops(n, out0(n));
    double bias = 0;
    if (nd.info.category == Category::Gemm && isParam(input(n, 2)))
        bias = elementsOf(out0(n));
    op.flops_fwd = matmul + bias;
    op.flops_bwd_input = matmul;
    op.flops_bwd_weight = matmul + bias;
    return op;
}

double Importer::matmulFlops(int n, int out) const
{
    const NodeInfo& nd = node(n);
    const int a = input(n, 0);
    double k = 1;
    if (a >= 0 && !value(a).shape.empty()) {
        const Shape& s = value(a).shape;
        if (nd.info.category == Category::Gemm)
            k = static_cast<double>(intAttr(*nd.proto, "transA", 0) != 0 ? s.front() : s.back());
        else
            k = static_cast<double>(s.back());
    }
    return 2 * elementsOf(out) * k;
}

void Importer::lossCosts(Op& op, int logits)
{
    const double n = elementsOf(logits);
    op.flops_fwd = kLossFlopsPerLogit * n;
    op.flops_bwd_input = kLossFlopsPerLogit * n;
    op.saved = {activationTensor(logits)};
    for (const auto t : op.outputs)
        m_tensors[static_cast<std::size_t>(t)].dtype = DType::F32; // losses are reduced in fp32
}

void Importer::emitNode(int n)
{
    const NodeInfo& nd = node(n);
    const Category c = nd.info.category;
    switch (c) {
    case Category::MatMul:
    case Category::Gemm:
    case Category::Einsum:
        emitMatMul(n);
        return;
    case Category::Conv:
    case Category::ConvTranspose:
        emitConv(n);
        return;
    case Category::Attention:
        emitFusedAttention(n);
        return;
    case Category::Gather:
        emitGather(n);
        return;
    default:
        break;
    }

    if (c == Category::View && readsOnlySources(n)) {
        // A view of a graph input (labels reshaped for the loss): another input, not an op the first
        // pipeline stage would run and send along.
        for (const int out : nd.outputs)
            if (out >= 0) {
                estimateOutputShape(n, out);
                activationTensor(out);
            }
        return;
    }
    Op op = baseOp(n, OpKind::Elementwise);
    const int x = firstActivation(n);
    const double outElements = nd.outputs.empty() || nd.outputs[0] < 0 ? 0 : elementsOf(nd.outputs[0]);
    switch (c) {
    case Category::Elementwise:
    case Category::Source:
        elementwiseCosts(op, n, outElements);
        break;
    case Category::Reduction:
        op.flops_fwd = nd.info.flops * elementsOf(x);
        op.flops_bwd_input = op.flops_fwd;
        if (nd.proto->op_type() != "ReduceMean" && nd.proto->op_type() != "ReduceSum" && x >= 0)
            op.saved = {activationTensor(x)};
        break;
    case Category::Softmax:
        op.kind = OpKind::Softmax;
        op.flops_fwd = kSoftmaxFlops * outElements;
        op.flops_bwd_input = kBackwardFactor * op.flops_fwd;
        if (!op.outputs.empty())
            op.saved = {op.outputs.front()};
        break;
    case Category::Norm: {
        op.kind = OpKind::Norm;
        const double elements = elementsOf(x);
        const double skips = static_cast<double>(std::max<std::size_t>(op.inputs.size(), 1) - 1);
        op.flops_fwd = (kNormFlops + skips) * elements;
        op.flops_bwd_input = kBackwardFactor * kNormFlops * elements;
        op.flops_bwd_weight = op.params.empty() ? 0 : kNormWeightGradFlops * elements;
        if (x >= 0)
            op.saved = {activationTensor(x)};
        break;
    }
    case Category::View:
        op.kind = OpKind::Reshape;
        op.bytes_read = op.bytes_written = 0;
        break;
    case Category::Move:
        op.kind = OpKind::Reshape;
        if (const auto& t = nd.proto->op_type();
            t == "Slice" || t == "GatherElements" || t == "GatherND" || t == "Compress")
            op.bytes_read = op.bytes_written; // reads only what it copies
        break;
    case Category::Loss:
        op.kind = OpKind::Loss;
        if (x >= 0)
            lossCosts(op, x);
        if (nd.proto->op_type() == "NegativeLogLikelihoodLoss") {
            op.flops_fwd = elementsOf(x);
            op.flops_bwd_input = elementsOf(x);
        }
        break;
    case Category::Dropout: {
        op.kind = OpKind::Dropout;
        const double elements = elementsOf(x);
        op.flops_fwd = kDropoutFlops * elements;
        op.flops_bwd_input = elements;
        if (op.outputs.size() > 1)
            op.saved = {op.outputs[1]};
        break;
    }
    default: {
        op.kind = OpKind::Unknown;
        op.source_type = sourceType(*nd.proto);
        ++m_report.unknown_op_types[op.source_type];
        op.flops_fwd = outElements;
        op.flops_bwd_input = kBackwardFactor * outElements;
        for (const int in : nd.inputs)
            if (isActivation(in))
                op.saved.push_back(activationTensor(in));
        break;
    }
    }
    commit(std::move(op), n);
}

bool Importer::readsOnlySources(int n) const
{
    for (const int in : node(n).inputs) {
        if (!isActivation(in))
            continue;
        const TensorId t = value(in).tensor;
        if (t < 0
            || (static_cast<std::size_t>(t) < m_producerOp.size() && m_producerOp[static_cast<std::size_t>(t)] >= 0))
            return false;
    }
    return true;
}

int Importer::firstActivation(int n) const
{
    for (const int in : node(n).inputs)
        if (isActivation(in))
            return in;
    return -1;
}

void Importer::elementwiseCosts(Op& op, int n, double outElements)
{
    const NodeInfo& nd = node(n);
    op.flops_fwd = nd.info.flops * outElements;
    switch (nd.info.grad) {
    case Grad::Linear:
        break;
    case Grad::Product: {
        int activations = 0;
        for (const int in : nd.inputs)
            activations += isActivation(in) ? 1 : 0;
        op.flops_bwd_input = op.flops_fwd * activations;
        if (activations > 1 || !op.params.empty())
            for (const int in : nd.inputs)
                if (isActivation(in))
                    op.saved.push_back(activationTensor(in));
        if (nd.proto->op_type() == "Div" && activations == 1 && isActivation(input(n, 1)))
            op.saved = {activationTensor(input(n, 1))};
        break;
    }
    case Grad::Nonlinear:
        op.flops_bwd_input = kBackwardFactor * op.flops_fwd;
        if (const int x = firstActivation(n); x >= 0)
            op.saved = {activationTensor(x)};
        break;
    }
    if (!op.params.empty())
        op.flops_bwd_weight = outElements; // a bias or scale: its gradient is a reduction over the tokens
}

void Importer::emitMatMul(int n)
{
    const NodeInfo& nd = node(n);
    int activations = 0;
    int params = 0;
    for (const int in : nd.inputs) {
        activations += isActivation(in) ? 1 : 0;
        params += isParam(in) ? 1 : 0;
    }
    if (nd.info.category != Category::Einsum && params > 0 && activations == 1) {
        Op op = linearOp(n, out0(n));
        commit(std::move(op), n);
        return;
    }
    const OpKind kind = nd.role == AttentionRole::Score ? OpKind::AttentionScore
        : nd.role == AttentionRole::Context             ? OpKind::AttentionContext
        : params > 0 && activations == 1                ? OpKind::Linear
                                                        : OpKind::MatMul;
    Op op = baseOp(n, kind);
    const double flops = nd.info.category == Category::Einsum ? einsumFlops(n) : matmulFlops(n, out0(n));
    op.flops_fwd = flops;
    if (kind == OpKind::Linear) {
        op.flops_bwd_input = flops;
        op.flops_bwd_weight = flops;
        if (const int x = firstActivation(n); x >= 0)
            op.saved = {activationTensor(x)};
    } else {
        op.flops_bwd_input = kBackwardFactor * flops;
        op.saved = op.inputs;
    }
    commit(std::move(op), n);
}

double Importer::einsumFlops(int n) const
{
    const std::string equation = stringAttr(*node(n).proto, "equation");
    std::unordered_map<char, std::int64_t> extent;
    std::size_t operand = 0;
    std::size_t axis = 0;
    for (const char ch : equation) {
        if (ch == '-' || ch == '>')
            break;
        if (ch == ',') {
            ++operand;
            axis = 0;
            continue;
        }
        if (ch == ' ' || ch == '.')
            continue;
        const int in = input(n, operand);
        if (in < 0 || axis >= value(in).shape.size())
            return 2 * elementsOf(out0(n));
        extent[ch] = std::max(extent[ch], value(in).shape[axis]);
        ++axis;
    }
    double product = 2;
    for (const auto& [ch, d] : extent)
        product *= static_cast<double>(d);
    return product;
}

void Importer::emitConv(int n)
{
    const NodeInfo& nd = node(n);
    Op op = baseOp(n, OpKind::Conv);
    const int w = input(n, 1);
    double kernel = 1; // weight elements per output (Conv) or per input (ConvTranspose) element
    if (w >= 0)
        for (std::size_t k = 1; k < value(w).shape.size(); ++k)
            kernel *= static_cast<double>(value(w).shape[k]);
    const bool transposed = nd.info.category == Category::ConvTranspose;
    const double conv = 2 * kernel * (transposed ? elementsOf(input(n, 0)) : elementsOf(out0(n)));
    const double bias = isParam(input(n, 2)) ? elementsOf(out0(n)) : 0;
    op.flops_fwd = conv + bias;
    op.flops_bwd_input = conv;
    op.flops_bwd_weight = isParam(w) ? conv + bias : 0;
    if (const int x = firstActivation(n); x >= 0)
        op.saved = {activationTensor(x)};
    if (!isParam(w))
        op.saved = op.inputs;
    commit(std::move(op), n);
}

void Importer::emitGather(int n)
{
    const int data = input(n, 0);
    const int indices = input(n, 1);
    if (!isParam(data)) {
        Op op = baseOp(n, OpKind::Reshape);
        op.bytes_read = op.bytes_written + (indices >= 0 ? bytesOf(indices) : 0);
        commit(std::move(op), n);
        return;
    }
    // A lookup: reads the rows it gathers, not the whole table; backward scatter-adds one row per index.
    Op op = baseOp(n, OpKind::Embedding);
    op.bytes_read = (isActivation(indices) ? bytesOf(indices) : 0) + bytesOf(out0(n));
    op.flops_bwd_weight = elementsOf(out0(n));
    if (isActivation(indices))
        op.saved = {activationTensor(indices)};
    commit(std::move(op), n);
}

void Importer::emitFusedAttention(int n)
{
    const NodeInfo& nd = node(n);
    const auto& proto = *nd.proto;
    std::string scoped = scopedModule(proto.name());
    const int x = input(n, 0);
    std::int64_t heads = intAttr(proto, "num_heads", intAttr(proto, "q_num_heads", 0));
    const Shape qShape = x >= 0 ? value(x).shape : Shape();
    double flops = 0;
    std::vector<int> qkv;
    if (proto.op_type() == "Attention" && proto.domain() == "com.microsoft" && isParam(input(n, 1))
        && qShape.size() == 3) {
        // input [b, s, h_in] @ weights [h_in, q + k + v] (+ bias) -> packed q, k, v; then the core.
        const Shape& w = value(input(n, 1)).shape;
        const std::int64_t width = w.size() == 2 ? w[1] : 3 * qShape[2];
        const auto sizes = intsAttr(proto, "qkv_hidden_sizes");
        const std::int64_t qh = sizes.size() == 3 ? sizes[0] : width / 3;
        const std::int64_t vh = sizes.size() == 3 ? sizes[2] : width / 3;
        Op proj;
        proj.name = uniqueOpName(cat(proto.name().empty() ? cat("Attention_", n) : proto.name(), "/qkv_proj"));
        proj.kind = OpKind::Linear;
        proj.inputs = {activationTensor(x)};
        addParams(proj, input(n, 1));
        addParams(proj, input(n, 2));
        const TensorId packed = newTensor(proj.name + ".out", {qShape[0], qShape[1], width},
                                          mapDType(value(x).elemType, m_options.dtype), false);
        proj.outputs = {packed};
        proj.saved = proj.inputs;
        const double tokens = static_cast<double>(qShape[0]) * static_cast<double>(qShape[1]);
        const double matmul = 2 * tokens * static_cast<double>(qShape[2]) * static_cast<double>(width);
        proj.flops_fwd = matmul + tokens * static_cast<double>(width);
        proj.flops_bwd_input = matmul;
        proj.flops_bwd_weight = proj.flops_fwd;
        proj.bytes_read = bytesOf(x) + bytesOf(input(n, 1));
        proj.bytes_written = m_tensors[static_cast<std::size_t>(packed)].bytes();
        commit(std::move(proj), n, scoped.empty() ? std::string() : scoped + ".qkv_proj");
        const double s = static_cast<double>(qShape[1]);
        flops = 2 * static_cast<double>(qShape[0]) * s * s * static_cast<double>(qh + vh);

        Op core;
        core.name = uniqueOpName(proto.name().empty() ? cat("Attention_", n) : proto.name());
        core.kind = OpKind::FlashAttention;
        core.inputs = {packed};
        core.saved = {packed};
        finishAttention(core, n, flops, heads, qShape, scoped);
        return;
    }
    const int k = input(n, 1);
    const int v = input(n, 2);
    const Shape kShape = isActivation(k) ? value(k).shape : Shape();
    const Shape vShape = isActivation(v) ? value(v).shape : Shape();
    if (qShape.size() == 4) {
        // [b, heads, s, d]
        const double skv = kShape.size() == 4 ? static_cast<double>(kShape[2]) : static_cast<double>(qShape[2]);
        const double dv = vShape.size() == 4 ? static_cast<double>(vShape[3]) : static_cast<double>(qShape[3]);
        heads = qShape[1];
        flops = 2 * static_cast<double>(qShape[0]) * static_cast<double>(qShape[1]) * static_cast<double>(qShape[2])
            * skv * (static_cast<double>(qShape[3]) + dv);
    } else if (qShape.size() == 3) {
        // [b, s, hidden]; packed q/k/v when there is no separate key
        const bool packed = !isActivation(k);
        const double hq = static_cast<double>(packed ? qShape[2] / 3 : qShape[2]);
        const double skv = kShape.size() == 3 ? static_cast<double>(kShape[1]) : static_cast<double>(qShape[1]);
        const double hv = vShape.size() == 3 ? static_cast<double>(vShape[2]) : hq;
        flops = 2 * static_cast<double>(qShape[0]) * static_cast<double>(qShape[1]) * skv * (hq + hv);
    }
    Op core = baseOp(n, OpKind::FlashAttention);
    core.saved = core.inputs;
    core.bytes_read = 0;
    for (const int in : nd.inputs)
        if (isActivation(in))
            core.bytes_read += bytesOf(in);
    finishAttention(core, n, flops, heads, qShape, scoped);
}

void Importer::finishAttention(Op& core, int n, double flops, std::int64_t heads, const Shape& qShape,
                               const std::string& scoped)
{
    const NodeInfo& nd = node(n);
    if (core.outputs.empty())
        for (const int out : nd.outputs)
            if (out >= 0) {
                estimateOutputShape(n, out);
                core.outputs.push_back(activationTensor(out));
                core.bytes_written += bytesOf(out);
            }
    // The f32 log-sum-exp [b, heads, s] flash attention keeps for backward (the builder's; it also tells
    // the sharding solver the head count).
    if (heads > 0 && qShape.size() >= 3) {
        const std::int64_t s = qShape.size() == 4 ? qShape[2] : qShape[1];
        const TensorId lse = newTensor(core.name + ".lse", {qShape[0], heads, s}, DType::F32, false);
        core.outputs.push_back(lse);
        core.saved.push_back(lse);
        core.bytes_written += m_tensors[static_cast<std::size_t>(lse)].bytes();
    }
    if (!core.outputs.empty())
        core.saved.push_back(core.outputs.front());
    core.flops_fwd = flops;
    core.flops_bwd_input = kBackwardFactor * flops;
    ++m_report.attention_cores;
    std::string module = scoped;
    if (module.empty())
        module = latestProducerModule(core);
    commit(std::move(core), n, module.empty() ? "attention.core" : module + ".core");
}

} // namespace shardscape::onnx_detail
