// SPDX-License-Identifier: MIT
// The importer's values: collected from the graph, tied initializers merged, nodes put in order and
// classified as activations, statics (folded) or weights.
#include "onnx_importer.h"
#include "shardscape/support/error.h"
#include "shardscape/support/strings.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace shardscape::onnx_detail {

// --- values --------------------------------------------------------------------------------------------

int Importer::valueIndex(const std::string& name)
{
    const auto [it, inserted] = m_valueIndex.try_emplace(name, static_cast<int>(m_values.size()));
    if (inserted) {
        m_values.emplace_back();
        m_values.back().name = it->first;
    }
    return it->second;
}

int Importer::findValue(std::string_view name) const
{
    const auto it = m_valueIndex.find(name);
    return it == m_valueIndex.end() ? -1 : it->second;
}

void Importer::setType(Value& v, const onnx::TypeProto& type)
{
    if (!type.has_tensor_type())
        return;
    const auto& tt = type.tensor_type();
    if (tt.elem_type() != 0)
        v.elemType = tt.elem_type();
    if (!tt.has_shape() || v.shapeKnown)
        return;
    Shape shape;
    bool known = true;
    for (const auto& dim : tt.shape().dim()) {
        if (dim.has_dim_value()) {
            shape.push_back(dim.dim_value());
        } else if (dim.has_dim_param()) {
            if (const auto it = m_report.symbolic_dims.find(dim.dim_param()); it != m_report.symbolic_dims.end())
                shape.push_back(it->second);
            else
                known = false;
        } else {
            known = false;
        }
    }
    if (known) {
        v.shape = std::move(shape);
        v.shapeKnown = true;
    } else if (!v.shapeKnown) {
        v.shape = std::move(shape); // partial: filled in from the producer if it can be
    }
}

void Importer::collectValues()
{
    const auto& graph = m_model.graph();
    m_report.nodes = graph.node_size();
    m_values.reserve(static_cast<std::size_t>(graph.node_size()) * 2
                     + static_cast<std::size_t>(graph.initializer_size()) + 16);
    m_valueIndex.reserve(m_values.capacity());

    m_inits.reserve(static_cast<std::size_t>(graph.initializer_size()));
    for (const auto& t : graph.initializer()) {
        const int vi = valueIndex(t.name());
        Value& v = m_values[static_cast<std::size_t>(vi)];
        const int index = static_cast<int>(m_inits.size());
        m_inits.push_back({&t, index, -1});
        v.elemType = t.data_type();
        v.shape.assign(t.dims().begin(), t.dims().end());
        v.shapeKnown = true;
        if (v.kind != ValueKind::Undefined) {
            // The same name twice: one tensor, however many times it is listed.
            m_inits.back().canonical = v.roots.empty() ? index : v.roots.front();
            ++m_report.tied_initializers_merged;
            continue;
        }
        if (isFloatType(t.data_type()) && elementCount(v.shape) >= 2) {
            v.kind = ValueKind::Param;
            v.roots = {index};
        } else {
            v.kind = ValueKind::Static;
        }
    }
    for (const auto& s : graph.sparse_initializer()) {
        const int vi = valueIndex(s.values().name());
        Value& v = m_values[static_cast<std::size_t>(vi)];
        if (v.kind != ValueKind::Undefined)
            continue;
        v.elemType = s.values().data_type();
        v.shape.assign(s.dims().begin(), s.dims().end());
        v.shapeKnown = true;
        v.kind = ValueKind::Static;
    }
    for (const auto& in : graph.input()) {
        const int vi = valueIndex(in.name());
        Value& v = m_values[static_cast<std::size_t>(vi)];
        if (v.kind == ValueKind::Undefined)
            v.kind = ValueKind::Activation;
        setType(v, in.type());
    }
    for (const auto& info : graph.value_info())
        setType(m_values[static_cast<std::size_t>(valueIndex(info.name()))], info.type());
    for (const auto& out : graph.output()) {
        Value& v = m_values[static_cast<std::size_t>(valueIndex(out.name()))];
        setType(v, out.type());
        v.graphOutput = true;
    }

    m_nodes.resize(static_cast<std::size_t>(graph.node_size()));
    for (int n = 0; n < graph.node_size(); ++n) {
        const auto& node = graph.node(n);
        NodeInfo& info = m_nodes[static_cast<std::size_t>(n)];
        info.proto = &node;
        info.info = opTypeInfo(node);
        for (const auto& out : node.output()) {
            if (out.empty()) {
                info.outputs.push_back(-1);
                continue;
            }
            const int vi = valueIndex(out);
            Value& v = m_values[static_cast<std::size_t>(vi)];
            if (v.producer >= 0 || v.kind != ValueKind::Undefined)
                throw InputError(cat(m_origin, ": value '", out, "' is defined twice (by node '", nodeName(n), "')"),
                                 "every ONNX value must have one producer");
            v.producer = n;
            info.outputs.push_back(vi);
        }
    }
    for (int n = 0; n < graph.node_size(); ++n) {
        NodeInfo& info = m_nodes[static_cast<std::size_t>(n)];
        for (const auto& in : info.proto->input()) {
            if (in.empty()) {
                info.inputs.push_back(-1);
                continue;
            }
            const int vi = findValue(in);
            if (vi < 0
                || (m_values[static_cast<std::size_t>(vi)].producer < 0
                    && m_values[static_cast<std::size_t>(vi)].kind == ValueKind::Undefined))
                throw InputError(cat(m_origin, ": node '", nodeName(n), "' reads '", in,
                                     "', which no node, input or initializer defines"),
                                 "is the model complete? Subgraph-scoped names are not supported");
            info.inputs.push_back(vi);
        }
    }
    // Consumers of every value, in node order, as one flat array (100,000-node models: no small vectors).
    m_consumerStart.assign(m_values.size() + 1, 0);
    for (const auto& info : m_nodes)
        for (const int in : info.inputs)
            if (in >= 0)
                ++m_consumerStart[static_cast<std::size_t>(in) + 1];
    for (std::size_t v = 0; v < m_values.size(); ++v)
        m_consumerStart[v + 1] += m_consumerStart[v];
    m_consumerList.resize(static_cast<std::size_t>(m_consumerStart.back()));
    std::vector<int> fill(m_consumerStart.begin(), m_consumerStart.end() - 1);
    for (int n = 0; n < static_cast<int>(m_nodes.size()); ++n)
        for (const int in : m_nodes[static_cast<std::size_t>(n)].inputs)
            if (in >= 0)
                m_consumerList[static_cast<std::size_t>(fill[static_cast<std::size_t>(in)]++)] = n;
}

std::span<const int> Importer::consumers(int v) const
{
    const auto begin = static_cast<std::size_t>(m_consumerStart[static_cast<std::size_t>(v)]);
    const auto end = static_cast<std::size_t>(m_consumerStart[static_cast<std::size_t>(v) + 1]);
    return {m_consumerList.data() + begin, end - begin};
}

std::string Importer::nodeName(int n) const
{
    const auto& node = m_model.graph().node(n);
    if (!node.name().empty())
        return node.name();
    return node.output_size() > 0 && !node.output(0).empty() ? cat(node.op_type(), " -> ", node.output(0))
                                                             : cat(node.op_type(), " #", n);
}

// --- tied initializers -----------------------------------------------------------------------------------

std::string Importer::externalKey(const onnx::TensorProto& t)
{
    std::string location, offset = "0", length;
    for (const auto& e : t.external_data()) {
        if (e.key() == "location")
            location = e.value();
        else if (e.key() == "offset")
            offset = e.value();
        else if (e.key() == "length")
            length = e.value();
    }
    return location.empty() ? std::string() : location + '\n' + offset + '\n' + length;
}

bool Importer::transposedEqual(const onnx::TensorProto& a, const onnx::TensorProto& b)
{
    const auto rows = static_cast<std::size_t>(a.dims(0));
    const auto cols = static_cast<std::size_t>(a.dims(1));
    const std::string& x = a.raw_data();
    const std::string& y = b.raw_data();
    if (rows * cols == 0 || x.size() != y.size() || x.size() % (rows * cols) != 0)
        return false;
    const std::size_t e = x.size() / (rows * cols);
    for (std::size_t i = 0; i < rows; ++i)
        for (std::size_t j = 0; j < cols; ++j)
            if (std::memcmp(x.data() + (i * cols + j) * e, y.data() + (j * rows + i) * e, e) != 0)
                return false;
    return true;
}

void Importer::merge(int duplicate, int keep)
{
    m_inits[static_cast<std::size_t>(duplicate)].canonical = keep;
    ++m_report.tied_initializers_merged;
}

void Importer::mergeTiedInitializers()
{
    std::unordered_map<std::string, int> byExternal;
    std::unordered_map<std::size_t, std::vector<int>> byData;
    std::map<std::tuple<int, std::int64_t, std::int64_t>, std::vector<int>> matrices;
    for (int i = 0; i < static_cast<int>(m_inits.size()); ++i) {
        const Initializer& init = m_inits[static_cast<std::size_t>(i)];
        const onnx::TensorProto& t = *init.proto;
        if (init.canonical != i || !isFloatType(t.data_type()) || t.dims_size() < 1)
            continue;
        if (const std::string key = externalKey(t); !key.empty()) {
            const auto [it, inserted]
                = byExternal.try_emplace(std::to_string(t.data_type()) + '\n' + dimsKey(t) + '\n' + key, i);
            if (!inserted)
                merge(i, it->second);
            continue;
        }
        if (t.raw_data().empty() || t.dims_size() < 2)
            continue;
        auto& candidates = byData[std::hash<std::string_view> {}(t.raw_data()) ^ std::hash<std::string> {}(dimsKey(t))];
        bool merged = false;
        for (const int other : candidates) {
            const auto& o = *m_inits[static_cast<std::size_t>(other)].proto;
            if (o.data_type() == t.data_type() && dimsKey(o) == dimsKey(t) && o.raw_data() == t.raw_data()) {
                merge(i, other);
                merged = true;
                break;
            }
        }
        if (merged)
            continue;
        candidates.push_back(i);
        if (t.dims_size() == 2 && t.dims(0) != t.dims(1))
            matrices[{t.data_type(), std::min(t.dims(0), t.dims(1)), std::max(t.dims(0), t.dims(1))}].push_back(i);
    }
    for (auto& [key, list] : matrices) {
        if (list.size() < 2 || list.size() > 32)
            continue;
        for (std::size_t a = 0; a < list.size(); ++a)
            for (std::size_t b = a + 1; b < list.size(); ++b) {
                auto& ia = m_inits[static_cast<std::size_t>(list[a])];
                auto& ib = m_inits[static_cast<std::size_t>(list[b])];
                if (ib.canonical != list[b] || ia.canonical != list[a] || ia.proto->dims(0) != ib.proto->dims(1))
                    continue;
                if (transposedEqual(*ia.proto, *ib.proto))
                    merge(list[b], list[a]);
            }
    }
    // Point every weight value at its canonical initializer.
    for (auto& v : m_values)
        if (v.kind == ValueKind::Param)
            for (auto& r : v.roots)
                r = canonical(r);
}

int Importer::canonical(int init) const
{
    while (m_inits[static_cast<std::size_t>(init)].canonical != init)
        init = m_inits[static_cast<std::size_t>(init)].canonical;
    return init;
}

std::string Importer::dimsKey(const onnx::TensorProto& t)
{
    std::string key;
    for (const auto d : t.dims())
        key += std::to_string(d) + 'x';
    return key;
}

// --- order and classification --------------------------------------------------------------------------

void Importer::sortNodes()
{
    const std::size_t n = m_nodes.size();
    std::vector<int> pending(n, 0);
    for (std::size_t i = 0; i < n; ++i)
        for (const int in : m_nodes[i].inputs)
            if (in >= 0 && m_values[static_cast<std::size_t>(in)].producer >= 0)
                ++pending[i];
    std::vector<int> ready;
    for (std::size_t i = n; i-- > 0;)
        if (pending[i] == 0)
            ready.push_back(static_cast<int>(i));
    m_order.reserve(n);
    while (!ready.empty()) {
        const int node = ready.back();
        ready.pop_back();
        m_order.push_back(node);
        // Consumers in file order, so files already sorted keep their order.
        std::vector<int> next;
        for (const int out : m_nodes[static_cast<std::size_t>(node)].outputs)
            if (out >= 0)
                for (const int c : consumers(out))
                    if (--pending[static_cast<std::size_t>(c)] == 0)
                        next.push_back(c);
        std::sort(next.rbegin(), next.rend());
        ready.insert(ready.end(), next.begin(), next.end());
    }
    if (m_order.size() != n) {
        for (std::size_t i = 0; i < n; ++i)
            if (pending[i] > 0)
                throw InputError(
                    cat(m_origin, ": the graph has a cycle through node '", nodeName(static_cast<int>(i)), "'"),
                    "ONNX graphs must be acyclic");
    }
    m_position.assign(n, 0);
    for (std::size_t i = 0; i < n; ++i)
        m_position[static_cast<std::size_t>(m_order[i])] = static_cast<int>(i);
}

void Importer::classifyValues()
{
    for (const int n : m_order) {
        NodeInfo& node = m_nodes[static_cast<std::size_t>(n)];
        bool anyActivation = false;
        std::vector<int> roots;
        for (const int in : node.inputs) {
            if (in < 0)
                continue;
            const Value& v = m_values[static_cast<std::size_t>(in)];
            if (v.kind == ValueKind::Activation)
                anyActivation = true;
            else if (v.kind == ValueKind::Param)
                roots.insert(roots.end(), v.roots.begin(), v.roots.end());
        }
        const Category category = node.info.category;
        const bool embedding = category == Category::Gather && !node.inputs.empty() && node.inputs[0] >= 0
            && m_values[static_cast<std::size_t>(node.inputs[0])].kind == ValueKind::Param;
        node.folded = category == Category::ShapeOf || (!anyActivation && !embedding);
        if (node.folded) {
            ++m_report.folded_nodes;
            std::sort(roots.begin(), roots.end());
            roots.erase(std::unique(roots.begin(), roots.end()), roots.end());
            // Constants stay constants; anything computed from weights is a view of those weights.
            const bool param = category != Category::Source && category != Category::ShapeOf && !roots.empty();
            for (const int out : node.outputs) {
                if (out < 0)
                    continue;
                Value& v = m_values[static_cast<std::size_t>(out)];
                v.kind = param ? ValueKind::Param : ValueKind::Static;
                if (param) {
                    v.roots = roots;
                    if (!v.shapeKnown)
                        guessViewShape(node, v);
                }
            }
        } else {
            for (const int out : node.outputs)
                if (out >= 0)
                    m_values[static_cast<std::size_t>(out)].kind = ValueKind::Activation;
        }
    }
}

void Importer::guessViewShape(const NodeInfo& node, Value& v)
{
    const Value* source = nullptr;
    for (const int in : node.inputs)
        if (in >= 0 && m_values[static_cast<std::size_t>(in)].kind == ValueKind::Param)
            source = &m_values[static_cast<std::size_t>(in)];
    if (!source)
        return;
    v.shape = source->shape;
    if (node.proto->op_type() == "Transpose" && v.shape.size() == 2)
        std::swap(v.shape[0], v.shape[1]);
    v.shapeKnown = source->shapeKnown;
}

} // namespace shardscape::onnx_detail
