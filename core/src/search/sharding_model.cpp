// SPDX-License-Identifier: MIT
// The sharding model's graph: the op set, its nodes (ops and fan-outs of shared tensors) and edges, the
// abstract problem handed to a solver, and the plan made from a solution.
#include "sharding_model.h"
#include "shardscape/support/error.h"
#include "shardscape/support/strings.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

namespace shardscape::sharding_detail {

ShardingModel::ShardingModel(const ModelGraph& graph, const std::vector<OpId>& ops, const CostSource& costs,
                             const ShardingOptions& options)
    : m_graph(graph)
    , m_costs(costs)
    , m_options(options)
    , m_tp(options.tp)
    , m_group {options.tp, options.tp_per_node > 0 ? std::min(options.tp_per_node, options.tp) : options.tp}
{
    selectOps(ops);
    buildNodes();
    buildEdges();
}

ShardingProblem ShardingModel::problem() const
{
    ShardingProblem p;
    for (const auto& node : m_nodes) {
        ShardingNode n;
        for (const auto& c : node.choices) {
            n.time_s.push_back(c.compute_s + c.comm_s);
            n.memory.push_back(units(c.memory_bytes));
        }
        p.nodes.push_back(std::move(n));
    }
    std::map<std::pair<int, int>, std::size_t> pairIndex;
    for (const auto& e : m_edges) {
        const auto [it, inserted] = pairIndex.try_emplace({e.from, e.to}, p.edges.size());
        const std::size_t rows = m_nodes[static_cast<std::size_t>(e.from)].choices.size();
        const std::size_t cols = m_nodes[static_cast<std::size_t>(e.to)].choices.size();
        if (inserted)
            p.edges.push_back({e.from, e.to, std::vector<double>(rows * cols, 0.0)});
        auto& cost = p.edges[it->second].cost;
        for (std::size_t i = 0; i < rows; ++i)
            for (std::size_t j = 0; j < cols; ++j)
                cost[i * cols + j] += edgeTime(e, static_cast<int>(i), static_cast<int>(j));
    }
    const double g = m_options.memory_granularity;
    const double limit = g > 0 ? std::floor(m_options.memory_limit_bytes / g + 1e-9) : m_options.memory_limit_bytes;
    p.memory_limit = limit >= static_cast<double>(p.memory_limit) ? p.memory_limit : static_cast<std::int64_t>(limit);
    return p;
}

double ShardingModel::minimumMemory() const
{
    double total = 0;
    for (const auto& node : m_nodes) {
        double least = std::numeric_limits<double>::infinity();
        for (const auto& c : node.choices)
            least = std::min(least, c.memory_bytes);
        total += node.choices.empty() ? 0 : least;
    }
    return total;
}

void ShardingModel::fill(ShardingPlan& plan, const std::vector<int>& choice) const
{
    for (std::size_t v = 0; v < m_nodes.size(); ++v) {
        const auto& c = m_nodes[v].choices[static_cast<std::size_t>(choice[v])];
        plan.compute_s += c.compute_s;
        plan.comm_s += c.comm_s;
        plan.memory_bytes += c.memory_bytes;
        plan.collectives.insert(plan.collectives.end(), c.collectives.begin(), c.collectives.end());
        if (m_nodes[v].op >= 0) {
            const OpId id = m_nodes[v].op;
            plan.ops.push_back({id, c.strategy, m_graph.op(id).name, c.compute_s, c.comm_s, c.memory_bytes});
        }
    }
    for (const auto& e : m_edges) {
        const auto& a = m_nodes[static_cast<std::size_t>(e.from)]
                            .choices[static_cast<std::size_t>(choice[static_cast<std::size_t>(e.from)])];
        const auto& b = m_nodes[static_cast<std::size_t>(e.to)]
                            .choices[static_cast<std::size_t>(choice[static_cast<std::size_t>(e.to)])];
        const std::string& name = m_graph.tensor(e.tensor).name;
        if (const auto f = convert(e.tensor, a.out[static_cast<std::size_t>(e.fromSlot)],
                                   b.in[static_cast<std::size_t>(e.toSlot)])) {
            plan.comm_s += f->time;
            plan.collectives.push_back({f->kind, false, f->bytes, f->time, name});
        }
        if (const auto g = backward(e, a, b)) {
            plan.comm_s += g->time;
            plan.collectives.push_back({g->kind, true, g->bytes, g->time, name + " (gradient)"});
        }
    }
    plan.total_time_s = plan.compute_s + plan.comm_s;
}

std::string ShardingModel::nodeName(int v) const
{
    const auto& node = m_nodes[static_cast<std::size_t>(v)];
    return node.op >= 0 ? m_graph.op(node.op).name : cat(m_graph.tensor(node.tensor).name, " (fan-out)");
}

// --- the op set ---

void ShardingModel::selectOps(const std::vector<OpId>& ops)
{
    const auto count = m_graph.ops().size();
    m_inSet.assign(count, false);
    for (const auto id : ops) {
        if (id < 0 || static_cast<std::size_t>(id) >= count)
            throw InputError(cat("sharding: op id ", id, " is not in graph '", m_graph.name, "'"));
        if (m_inSet[static_cast<std::size_t>(id)])
            throw InputError(cat("sharding: op '", m_graph.op(id).name, "' is listed twice"));
        m_inSet[static_cast<std::size_t>(id)] = true;
    }
    for (const auto id : m_graph.topologicalOrder())
        if (m_inSet[static_cast<std::size_t>(id)])
            m_order.push_back(id);
    m_producer = m_graph.producers();

    const auto tensors = m_graph.tensors().size();
    m_readers.assign(tensors, 0);
    m_saved.assign(tensors, false);
    m_firstSaver.assign(tensors, -1);
    m_firstParamUser.assign(tensors, -1);
    for (const auto id : m_order) {
        const Op& op = m_graph.op(id);
        for (const auto t : op.inputs)
            ++m_readers[static_cast<std::size_t>(t)];
        for (const auto t : op.saved) {
            if (m_graph.tensor(t).is_param)
                continue;
            m_saved[static_cast<std::size_t>(t)] = true;
            if (m_firstSaver[static_cast<std::size_t>(t)] < 0)
                m_firstSaver[static_cast<std::size_t>(t)] = id;
        }
        for (const auto p : op.params)
            if (m_firstParamUser[static_cast<std::size_t>(p)] < 0)
                m_firstParamUser[static_cast<std::size_t>(p)] = id;
    }
}

bool ShardingModel::producedInside(TensorId t) const
{
    const OpId p = m_producer[static_cast<std::size_t>(t)];
    return p >= 0 && m_inSet[static_cast<std::size_t>(p)];
}

// --- nodes ---

void ShardingModel::buildNodes()
{
    for (const auto id : m_order) {
        Node node;
        node.op = id;
        node.choices = opChoices(id);
        if (node.choices.empty()) {
            if (m_reason.empty())
                m_reason
                    = cat("op '", m_graph.op(id).name, "': the partition constraints allow none of its strategies");
        }
        m_nodeOfOp[id] = static_cast<int>(m_nodes.size());
        m_nodes.push_back(std::move(node));
        for (const auto t : m_graph.op(id).outputs)
            if (m_readers[static_cast<std::size_t>(t)] >= 2) {
                m_fanOut[t] = static_cast<int>(m_nodes.size());
                m_nodes.push_back(fanOutNode(t));
            }
    }
}

Node ShardingModel::fanOutNode(TensorId t) const
{
    Node node;
    node.tensor = t;
    for (const Layout held : {Layout::R, Layout::T, Layout::F}) {
        if (!valid(t, held))
            continue;
        for (const Layout summed : {Layout::R, Layout::T, Layout::F, Layout::P}) {
            if (!valid(t, summed))
                continue;
            Choice c;
            c.in = {held};
            c.inGrad = {summed};
            c.out = {held};
            c.outGrad = {summed};
            node.choices.push_back(std::move(c));
        }
    }
    return node;
}

void ShardingModel::buildEdges()
{
    for (const auto id : m_order) {
        const int to = m_nodeOfOp.at(id);
        const Op& op = m_graph.op(id);
        for (std::size_t slot = 0; slot < op.inputs.size(); ++slot) {
            const TensorId t = op.inputs[slot];
            if (!producedInside(t))
                continue; // arrives from outside the op set: any layout, free
            const auto fan = m_fanOut.find(t);
            if (fan != m_fanOut.end()) {
                m_edges.push_back({fan->second, 0, to, static_cast<int>(slot), t});
                continue;
            }
            m_edges.push_back(producerEdge(t, to, static_cast<int>(slot)));
        }
    }
    for (const auto& [t, node] : m_fanOut)
        m_edges.push_back(producerEdge(t, node, 0));
    std::sort(m_edges.begin(), m_edges.end(), [](const TensorEdge& a, const TensorEdge& b) {
        return std::tie(a.to, a.toSlot, a.from) < std::tie(b.to, b.toSlot, b.from);
    });
}

TensorEdge ShardingModel::producerEdge(TensorId t, int to, int toSlot) const
{
    const OpId p = m_producer[static_cast<std::size_t>(t)];
    const auto& outputs = m_graph.op(p).outputs;
    const auto slot = std::find(outputs.begin(), outputs.end(), t) - outputs.begin();
    return {m_nodeOfOp.at(p), static_cast<int>(slot), to, toSlot, t};
}

} // namespace shardscape::sharding_detail
