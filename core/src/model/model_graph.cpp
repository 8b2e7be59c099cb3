// SPDX-License-Identifier: MIT
#include "shardscape/model/model_graph.h"

#include "shardscape/support/error.h"
#include "shardscape/support/strings.h"

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/depth_first_search.hpp>
#include <boost/graph/topological_sort.hpp>
#include <iterator>

namespace shardscape {

std::int64_t Tensor::elements() const
{
    std::int64_t n = 1;
    for (const auto d : shape)
        n *= d;
    return n;
}

double Tensor::bytes() const
{
    double n = 1;
    for (const auto d : shape)
        n *= static_cast<double>(d);
    return n * dtypeBytes(dtype);
}

void ModelGraph::reserve(std::size_t tensors, std::size_t ops)
{
    m_tensors.reserve(tensors);
    m_tensorByName.reserve(tensors);
    m_ops.reserve(ops);
    m_opByName.reserve(ops);
}

namespace {

/** Names end up in plan files, traces and fingerprints (JSON), which must be UTF-8: refuse others at the door. */
void requireUtf8(std::string_view owner, std::string_view what, std::string_view text)
{
    if (!isValidUtf8(text))
        throw InputError(cat(what, " '", escapeInvalidUtf8(owner), "' has a name that is not valid UTF-8",
                             owner == text ? "" : cat(": '", escapeInvalidUtf8(text), "'")),
                         "names must be UTF-8 text: re-export the model or fix the name");
}

} // namespace

TensorId ModelGraph::addTensor(Tensor tensor)
{
    if (tensor.name.empty())
        throw InputError(cat("tensor #", m_tensors.size(), " has an empty name"), "give every tensor a unique name");
    requireUtf8(tensor.name, "tensor", tensor.name);
    for (const auto d : tensor.shape)
        if (d <= 0)
            throw InputError(cat("tensor '", tensor.name, "' has a non-positive dimension (", d, ")"),
                             "every dimension must be at least 1");
    // Counted in double: the int64 product of a few large dimensions can overflow. The builders refuse the same size.
    double elements = 1;
    for (const auto d : tensor.shape)
        elements *= static_cast<double>(d);
    if (elements > kMaxGraphTensorElements)
        throw InputError(
            cat("tensor '", tensor.name, "' has ", elements, " elements, over the limit of ", kMaxGraphTensorElements),
            "no real model has a tensor that large: check its shape");
    const auto id = static_cast<TensorId>(m_tensors.size());
    if (!m_tensorByName.emplace(tensor.name, id).second)
        throw InputError(cat("duplicate tensor name '", tensor.name, "'"), "tensor names must be unique");
    m_tensors.push_back(std::move(tensor));
    return id;
}

OpId ModelGraph::addOp(Op op)
{
    if (op.name.empty())
        throw InputError(cat("op #", m_ops.size(), " has an empty name"), "give every op a unique name");
    requireUtf8(op.name, "op", op.name);
    requireUtf8(op.name, "the module of op", op.module);
    requireUtf8(op.name, "the source type of op", op.source_type);
    const auto checkIds = [&](const std::vector<TensorId>& ids, const char* role) {
        for (const auto id : ids)
            if (id < 0 || static_cast<std::size_t>(id) >= m_tensors.size())
                throw InputError(cat("op '", op.name, "' refers to a missing ", role, " tensor #", id));
    };
    checkIds(op.inputs, "input");
    checkIds(op.outputs, "output");
    checkIds(op.params, "parameter");
    checkIds(op.saved, "saved");
    for (const auto id : op.params)
        if (!m_tensors[static_cast<std::size_t>(id)].is_param)
            throw InputError(cat("op '", op.name, "' uses '", m_tensors[static_cast<std::size_t>(id)].name,
                                 "' as a parameter but it is not marked as one"),
                             "set \"param\": true on that tensor");
    for (const double v : {op.flops_fwd, op.flops_bwd_input, op.flops_bwd_weight, op.bytes_read, op.bytes_written})
        if (!(v >= 0) || v > 1e30)
            throw InputError(cat("op '", op.name, "' has a cost that is negative, NaN or absurd (", v, ")"),
                             "FLOPs and bytes must be finite and >= 0");
    const auto id = static_cast<OpId>(m_ops.size());
    if (!m_opByName.emplace(op.name, id).second)
        throw InputError(cat("duplicate op name '", op.name, "'"), "op names must be unique");
    m_ops.push_back(std::move(op));
    return id;
}

std::optional<TensorId> ModelGraph::findTensor(const std::string& tensorName) const
{
    const auto it = m_tensorByName.find(tensorName);
    return it == m_tensorByName.end() ? std::nullopt : std::optional<TensorId>(it->second);
}

std::optional<OpId> ModelGraph::findOp(const std::string& opName) const
{
    const auto it = m_opByName.find(opName);
    return it == m_opByName.end() ? std::nullopt : std::optional<OpId>(it->second);
}

double ModelGraph::paramCount() const
{
    double total = 0;
    for (const auto& t : m_tensors)
        if (t.is_param)
            total += static_cast<double>(t.elements());
    return total;
}

double ModelGraph::activeParamCount() const
{
    // Experts' weights count at top_k / num_experts: only that share of them touches a given token.
    std::vector<double> share(m_tensors.size(), 0.0);
    for (const auto& t : m_tensors)
        if (t.is_param)
            share[static_cast<std::size_t>(&t - m_tensors.data())] = 1.0;
    for (const auto& op : m_ops) {
        if (op.kind != OpKind::MoeExperts || op.num_experts <= 0)
            continue;
        const double fraction = static_cast<double>(op.top_k) / static_cast<double>(op.num_experts);
        for (const auto p : op.params)
            share[static_cast<std::size_t>(p)] = std::min(share[static_cast<std::size_t>(p)], fraction);
    }
    double total = 0;
    for (std::size_t i = 0; i < m_tensors.size(); ++i)
        total += share[i] * static_cast<double>(m_tensors[i].elements());
    return total;
}

double ModelGraph::forwardFlops() const
{
    double total = 0;
    for (const auto& op : m_ops)
        total += op.flops_fwd;
    return total;
}

std::vector<OpId> ModelGraph::producers() const
{
    std::vector<OpId> producer(m_tensors.size(), -1);
    for (std::size_t i = 0; i < m_ops.size(); ++i) {
        for (const auto out : m_ops[i].outputs) {
            auto& slot = producer[static_cast<std::size_t>(out)];
            if (slot >= 0)
                throw InputError(cat("tensor '", m_tensors[static_cast<std::size_t>(out)].name,
                                     "' is produced by two ops ('", m_ops[static_cast<std::size_t>(slot)].name,
                                     "' and '", m_ops[i].name, "')"),
                                 "each activation must have a single producer");
            if (m_tensors[static_cast<std::size_t>(out)].is_param)
                throw InputError(cat("op '", m_ops[i].name, "' writes the parameter '",
                                     m_tensors[static_cast<std::size_t>(out)].name, "'"),
                                 "parameters are inputs only");
            slot = static_cast<OpId>(i);
        }
    }
    return producer;
}

namespace {

using Dag = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;
using Vertex = boost::graph_traits<Dag>::vertex_descriptor;
using Edge = boost::graph_traits<Dag>::edge_descriptor;

/** Records the DFS tree and the first back edge, which closes a cycle. */
class CycleFinder : public boost::default_dfs_visitor
{
public:
    CycleFinder(std::vector<Vertex>& parent, std::optional<std::pair<Vertex, Vertex>>& backEdge)
        : m_parent(parent)
        , m_backEdge(backEdge)
    {
    }
    void tree_edge(Edge e, const Dag& g) const { m_parent[boost::target(e, g)] = boost::source(e, g); }
    void back_edge(Edge e, const Dag& g) const
    {
        if (!m_backEdge)
            m_backEdge = std::make_pair(boost::source(e, g), boost::target(e, g));
    }

private:
    std::vector<Vertex>& m_parent;
    std::optional<std::pair<Vertex, Vertex>>& m_backEdge;
};

} // namespace

std::vector<OpId> ModelGraph::topologicalOrder() const
{
    const auto producer = producers();
    Dag dag(m_ops.size());
    for (std::size_t i = 0; i < m_ops.size(); ++i)
        for (const auto in : m_ops[i].inputs)
            if (const auto from = producer[static_cast<std::size_t>(in)]; from >= 0)
                boost::add_edge(static_cast<Vertex>(from), static_cast<Vertex>(i), dag);

    std::vector<Vertex> reversed;
    reversed.reserve(m_ops.size());
    try {
        boost::topological_sort(dag, std::back_inserter(reversed));
    } catch (const boost::not_a_dag&) {
        std::vector<Vertex> parent(m_ops.size(), static_cast<Vertex>(-1));
        std::optional<std::pair<Vertex, Vertex>> backEdge;
        boost::depth_first_search(dag, boost::visitor(CycleFinder(parent, backEdge)));
        std::vector<std::string> cycle;
        if (backEdge) {
            // The back edge u -> v closes v -> ... -> u along the DFS tree.
            for (Vertex v = backEdge->first; v != backEdge->second && cycle.size() < m_ops.size(); v = parent[v])
                cycle.push_back(m_ops[v].name);
            cycle.push_back(m_ops[backEdge->second].name);
            std::reverse(cycle.begin(), cycle.end());
            cycle.push_back(m_ops[backEdge->second].name);
        }
        if (cycle.size() > 8)
            cycle.erase(cycle.begin() + 4, cycle.end() - 3), cycle.insert(cycle.begin() + 4, "...");
        throw InputError(cat("the op graph has a cycle: ", join(cycle, " -> ")),
                         "a forward graph must be acyclic; check those ops' inputs and outputs");
    }
    std::vector<OpId> order;
    order.reserve(reversed.size());
    for (auto it = reversed.rbegin(); it != reversed.rend(); ++it)
        order.push_back(static_cast<OpId>(*it));
    return order;
}

} // namespace shardscape
