// SPDX-License-Identifier: MIT
// Emission: tensors, an op's inputs, weights and default traffic, output shapes inference missed, and the
// module each op belongs to; then the graph.
#include "onnx_importer.h"
#include "shardscape/support/error.h"
#include "shardscape/support/strings.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace shardscape::onnx_detail {

// --- emission ------------------------------------------------------------------------------------------

double Importer::bytesOf(int v) const
{
    const Value& val = value(v);
    return elementCount(val.shape) * dtypeBytes(mapDType(val.elemType, m_options.dtype));
}

TensorId Importer::newTensor(std::string name, Shape shape, DType dtype, bool isParam)
{
    for (auto& d : shape)
        if (d < 1) {
            ++m_zeroDims;
            d = 1;
        }
    const double elements = elementCount(shape);
    if (elements > kMaxTensorElements)
        throw InputError(cat(m_origin, ": tensor '", name, "' would have ", elements, " elements"),
                         "bind smaller symbolic dimensions (batch, sequence)");
    Tensor t;
    t.name = std::move(name);
    t.shape = std::move(shape);
    t.dtype = dtype;
    t.is_param = isParam;
    m_tensors.push_back(std::move(t));
    return static_cast<TensorId>(m_tensors.size() - 1);
}

TensorId Importer::activationTensor(int v)
{
    Value& val = m_values[static_cast<std::size_t>(v)];
    if (val.tensor < 0) {
        if (!val.shapeKnown) {
            ++m_report.unknown_shapes;
            val.shape.clear();
            val.shapeKnown = true;
        }
        val.tensor = newTensor(std::string(val.name), val.shape, mapDType(val.elemType, m_options.dtype), false);
    }
    return val.tensor;
}

TensorId Importer::paramTensor(int init)
{
    Initializer& i = m_inits[static_cast<std::size_t>(canonical(init))];
    if (i.tensor < 0)
        i.tensor = newTensor(i.proto->name(), Shape(i.proto->dims().begin(), i.proto->dims().end()),
                             mapDType(i.proto->data_type(), m_options.dtype), true);
    return i.tensor;
}

void Importer::addParams(Op& op, int v)
{
    if (!isParam(v))
        return;
    for (const int r : value(v).roots) {
        const TensorId t = paramTensor(r);
        if (std::find(op.params.begin(), op.params.end(), t) == op.params.end())
            op.params.push_back(t);
    }
}

std::string Importer::uniqueOpName(std::string name)
{
    if (name.empty())
        name = "op";
    if (m_opNames.insert(name).second)
        return name;
    for (int k = 2;; ++k) {
        std::string candidate = cat(name, "#", k);
        if (m_opNames.insert(candidate).second)
            return candidate;
    }
}

Shape Importer::matMulShape(const Shape& a, const Shape& b)
{
    const Shape left = a.size() == 1 ? Shape {1, a[0]} : a;
    const Shape right = b.size() == 1 ? Shape {b[0], 1} : b;
    const std::size_t batch = std::max(left.size(), right.size()) - 2;
    Shape out(batch, 1);
    for (const Shape* operand : {&left, &right})
        for (std::size_t k = 0; k + 2 < operand->size(); ++k) {
            auto& d = out[batch - (operand->size() - 2) + k];
            d = std::max(d, (*operand)[k]);
        }
    if (a.size() > 1)
        out.push_back(left[left.size() - 2]);
    if (b.size() > 1)
        out.push_back(right.back());
    return out;
}

void Importer::estimateOutputShape(int n, int out)
{
    Value& v = m_values[static_cast<std::size_t>(out)];
    if (v.shapeKnown)
        return;
    const NodeInfo& nd = node(n);
    std::vector<const Shape*> ins;
    for (const int in : nd.inputs)
        if (in >= 0 && value(in).shapeKnown && value(in).kind != ValueKind::Undefined)
            ins.push_back(&value(in).shape);
    if (v.elemType == 0)
        for (const int in : nd.inputs)
            if (in >= 0 && value(in).elemType != 0) {
                v.elemType = value(in).elemType;
                break;
            }
    std::optional<Shape> shape;
    const Category c = nd.info.category;
    // The two operands themselves (ins skips unknown inputs, so its first two need not be inputs 0 and 1).
    const auto operand = [&](std::size_t k) -> const Shape* {
        if (nd.inputs.size() <= k || nd.inputs[k] < 0)
            return nullptr;
        const Value& in = value(nd.inputs[k]);
        return in.shapeKnown && in.kind != ValueKind::Undefined ? &in.shape : nullptr;
    };
    const Shape* a = operand(0);
    const Shape* b = operand(1);
    if (c == Category::MatMul && a && b && !a->empty() && !b->empty()) {
        shape = matMulShape(*a, *b);
    } else if (c == Category::Gemm && a && b && a->size() == 2 && b->size() == 2) {
        const bool ta = intAttr(*nd.proto, "transA", 0) != 0;
        const bool tb = intAttr(*nd.proto, "transB", 0) != 0;
        shape = Shape {ta ? (*a)[1] : (*a)[0], tb ? (*b)[0] : (*b)[1]};
    } else if (c == Category::Attention && !ins.empty()) {
        Shape s = *ins[0];
        if (nd.proto->op_type() == "Attention" && nd.proto->domain() == "com.microsoft" && ins.size() >= 2
            && ins[1]->size() == 2 && !s.empty()) {
            const auto sizes = intsAttr(*nd.proto, "qkv_hidden_sizes");
            s.back() = sizes.size() == 3 ? sizes[2] : (*ins[1])[1] / 3;
        }
        shape = s;
    } else if (c == Category::Elementwise && !ins.empty()) {
        Shape s;
        for (const Shape* in : ins) {
            if (in->size() > s.size())
                s.insert(s.begin(), in->size() - s.size(), 1);
            for (std::size_t k = 0; k < in->size(); ++k) {
                auto& d = s[s.size() - in->size() + k];
                d = std::max(d, (*in)[k]);
            }
        }
        shape = s;
    }
    if (!shape && nd.proto->op_type() == "Transpose" && !ins.empty()) {
        const auto perm = intsAttr(*nd.proto, "perm");
        Shape s(ins[0]->rbegin(), ins[0]->rend());
        if (perm.size() == ins[0]->size()) {
            for (std::size_t k = 0; k < perm.size(); ++k)
                if (perm[k] >= 0 && static_cast<std::size_t>(perm[k]) < ins[0]->size())
                    s[k] = (*ins[0])[static_cast<std::size_t>(perm[k])];
        }
        shape = s;
    }
    if (!shape && !ins.empty()
        && (c == Category::Norm || c == Category::Softmax || c == Category::Dropout || c == Category::Unknown
            || nd.proto->op_type() == "Identity" || nd.proto->op_type() == "Cast"))
        shape = *ins[0];
    if (shape) {
        v.shape = std::move(*shape);
        v.shapeKnown = true;
        ++m_report.estimated_shapes;
    }
}

Op Importer::baseOp(int n, OpKind kind, std::string name)
{
    const NodeInfo& nd = node(n);
    Op op;
    op.name
        = uniqueOpName(name.empty() ? (nd.proto->name().empty() ? cat(nd.proto->op_type(), "_", n) : nd.proto->name())
                                    : std::move(name));
    op.kind = kind;
    for (const int in : nd.inputs) {
        if (in < 0)
            continue;
        if (isActivation(in)) {
            const TensorId t = activationTensor(in);
            if (std::find(op.inputs.begin(), op.inputs.end(), t) == op.inputs.end()) {
                op.inputs.push_back(t);
                op.bytes_read += bytesOf(in);
            }
        } else if (isParam(in)) {
            addParams(op, in);
            op.bytes_read += bytesOf(in);
        } else if (isStatic(in) && value(in).shapeKnown) {
            op.bytes_read += bytesOf(in); // masks, rotary tables: read like any operand
        }
    }
    for (const int out : nd.outputs) {
        if (out < 0)
            continue;
        estimateOutputShape(n, out);
        op.outputs.push_back(activationTensor(out));
        op.bytes_written += bytesOf(out);
    }
    return op;
}

void Importer::emitAll()
{
    m_ops.reserve(m_nodes.size());
    for (const auto& in : m_model.graph().input()) {
        const int v = findValue(in.name());
        if (v >= 0 && isActivation(v))
            activationTensor(v);
    }
    for (const int n : m_order) {
        const NodeInfo& nd = node(n);
        if (nd.folded)
            continue;
        if (nd.group >= 0) {
            if (m_groups[static_cast<std::size_t>(nd.group)].final == n)
                emitGroup(m_groups[static_cast<std::size_t>(nd.group)]);
            continue;
        }
        emitNode(n);
    }
    if (m_zeroDims > 0)
        m_report.warnings.push_back(cat(m_zeroDims, " tensor dimensions of size 0 or less counted as 1"));
    if (m_report.unknown_shapes > 0)
        m_report.warnings.push_back(cat(m_report.unknown_shapes,
                                        " values have no known shape (counted as one element): their ops' "
                                        "costs are underestimated"));
    for (const auto& [type, count] : m_report.unknown_op_types)
        m_report.warnings.push_back(cat("unknown op type '", type, "' (", count, count == 1 ? " node" : " nodes",
                                        ") kept as a memory-bound op"));
}

void Importer::commit(Op op, int n, std::string module)
{
    if (module.empty())
        module = moduleFor(op, n);
    if (node(n).attention >= 0)
        module = attentionModule(node(n).attention, module);
    op.module = module;
    const auto id = static_cast<OpId>(m_ops.size());
    for (const auto t : op.outputs)
        if (static_cast<std::size_t>(t) >= m_producerOp.size())
            m_producerOp.resize(static_cast<std::size_t>(t) + 1, -1);
    for (const auto t : op.outputs)
        m_producerOp[static_cast<std::size_t>(t)] = id;
    m_ops.push_back(std::move(op));
}

std::string Importer::moduleFor(const Op& op, int n) const
{
    if (std::string scoped = scopedModule(node(n).proto->name()); !scoped.empty())
        return scoped;
    for (const auto p : op.params)
        if (std::string m = weightModule(m_tensors[static_cast<std::size_t>(p)].name); !m.empty())
            return m;
    return latestProducerModule(op);
}

std::string Importer::latestProducerModule(const Op& op) const
{
    OpId latest = -1;
    for (const auto t : op.inputs)
        if (static_cast<std::size_t>(t) < m_producerOp.size())
            if (const OpId p = m_producerOp[static_cast<std::size_t>(t)];
                p > latest && !m_ops[static_cast<std::size_t>(p)].module.empty())
                latest = p;
    return latest >= 0 ? m_ops[static_cast<std::size_t>(latest)].module : std::string();
}

std::string Importer::moduleOfValue(int v) const
{
    const TensorId t = value(v).tensor;
    if (t < 0 || static_cast<std::size_t>(t) >= m_producerOp.size() || m_producerOp[static_cast<std::size_t>(t)] < 0)
        return {};
    return m_ops[static_cast<std::size_t>(m_producerOp[static_cast<std::size_t>(t)])].module;
}

std::string Importer::attentionModule(int a, const std::string& fallback)
{
    Attention& att = m_attention[static_cast<std::size_t>(a)];
    if (!att.module.empty())
        return att.module;
    std::string base = scopedModule(node(att.score).proto->name());
    if (base.empty()) {
        std::vector<std::string> modules;
        for (int in : node(att.score).inputs) {
            // Step over a pre-scaling node that is part of the core.
            const int p = value(in).producer;
            if (p >= 0 && node(p).attention == a)
                for (const int pin : node(p).inputs)
                    if (isActivation(pin))
                        in = pin;
            if (isActivation(in))
                modules.push_back(moduleOfValue(in));
        }
        if (modules.size() == 2 && !modules[0].empty() && !modules[1].empty()) {
            base = commonModule(modules[0], modules[1]);
            if (modules[0] == modules[1]) // one fused projection (GPT-2's c_attn): its parent
                base = parentModule(base);
        }
        if (base.empty())
            base = !modules.empty() && !modules[0].empty() ? modules[0] : fallback;
    }
    att.module = base.empty() ? "attention.core" : base + ".core";
    return att.module;
}

void Importer::emitGroup(const Group& g)
{
    const int last = g.final;
    const std::string scoped = scopedModule(node(last).proto->name());
    Op op;
    if (g.kind == OpKind::Norm) {
        const int x = g.input;
        op.kind = OpKind::Norm;
        op.inputs = {activationTensor(x)};
        for (const int p : g.paramValues)
            addParams(op, p);
        estimateOutputShape(last, out0(last));
        op.outputs = {activationTensor(out0(last))};
        op.saved = op.inputs;
        const double n = elementsOf(x);
        op.flops_fwd = kNormFlops * n;
        op.flops_bwd_input = kBackwardFactor * kNormFlops * n;
        op.flops_bwd_weight = op.params.empty() ? 0 : kNormWeightGradFlops * n;
        op.bytes_read = bytesOf(x);
        for (const int p : g.paramValues)
            op.bytes_read += bytesOf(p);
        op.bytes_written = bytesOf(out0(last));
    } else if (g.kind == OpKind::Linear) {
        const int mm = g.nodes.front();
        op = linearOp(mm, out0(last));
        for (const int p : g.paramValues) {
            addParams(op, p);
            op.bytes_read += bytesOf(p);
        }
        const double bias = elementsOf(out0(last));
        op.flops_fwd += bias;
        op.flops_bwd_weight += bias;
    } else {
        // LogSoftmax + NegativeLogLikelihoodLoss: the logits and the targets in, the loss out.
        op.kind = OpKind::Loss;
        op.name = uniqueOpName(node(last).proto->name().empty() ? cat("loss_", last) : node(last).proto->name());
        op.inputs = {activationTensor(g.input)};
        op.bytes_read = bytesOf(g.input);
        for (std::size_t i = 1; i < node(last).inputs.size(); ++i)
            if (const int in = node(last).inputs[i]; isActivation(in)) {
                op.inputs.push_back(activationTensor(in));
                op.bytes_read += bytesOf(in);
            }
        for (const int out : node(last).outputs)
            if (out >= 0) {
                estimateOutputShape(last, out);
                op.outputs.push_back(activationTensor(out));
                op.bytes_written += bytesOf(out);
            }
        lossCosts(op, g.input);
    }
    const std::string module = !scoped.empty() ? scoped : moduleFor(op, last);
    if (op.name.empty()) // a norm chain: named after its module, as the builder names its norms
        op.name = uniqueOpName(!module.empty() ? module : cat(opKindName(g.kind), "_", g.nodes.front()));
    commit(std::move(op), last, module);
}

// --- modules and the graph -------------------------------------------------------------------------------

void Importer::resolveEmptyModules()
{
    std::vector<OpId> firstConsumer(m_tensors.size(), -1);
    for (std::size_t i = m_ops.size(); i-- > 0;)
        for (const auto t : m_ops[i].inputs)
            firstConsumer[static_cast<std::size_t>(t)] = static_cast<OpId>(i);
    for (std::size_t i = m_ops.size(); i-- > 0;) {
        Op& op = m_ops[i];
        if (!op.module.empty())
            continue;
        for (const auto t : op.outputs) {
            const OpId c = firstConsumer[static_cast<std::size_t>(t)];
            if (c >= 0 && !m_ops[static_cast<std::size_t>(c)].module.empty()) {
                op.module = m_ops[static_cast<std::size_t>(c)].module;
                break;
            }
        }
    }
}

ModelGraph Importer::build()
{
    ModelGraph graph;
    graph.name = escapeInvalidUtf8(
        std::filesystem::path(m_origin).stem().string()); // a label: a non-UTF-8 file name is escaped
    graph.batch = m_graphBatch;
    graph.seq_len = m_graphSeq;
    graph.dtype = m_options.dtype;
    graph.reserve(m_tensors.size(), m_ops.size());
    for (auto& t : m_tensors)
        graph.addTensor(std::move(t));
    for (auto& op : m_ops)
        graph.addOp(std::move(op));
    return graph;
}

} // namespace shardscape::onnx_detail
