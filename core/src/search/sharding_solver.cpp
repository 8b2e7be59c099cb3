// SPDX-License-Identifier: MIT
// The intra-op sharding model: which strategies each op offers on a 1-D tensor-parallel group, what they
// cost, and how layouts change between ops. Both solvers (sharding_dp.cpp, sharding_ilp.cpp) see only the
// abstract ShardingProblem built here.
//
// Layouts of an activation on the group: R (replicated), T (split along the leading, token dims: batch x
// sequence; the batch for [b, heads, s, s] tensors), F (split along the feature dim: the last one; heads
// for [b, heads, s, s]) and P (a partial sum: every device holds a full-size addend).
//
// Strategies (forward layouts of inputs -> outputs; the gradient each input gets back in brackets):
//   ops with a 2-D weight [in, out] (Linear, MoeRouter)
//     replicate  R -> R [R]        every device computes the same whole weight gradient: nothing to reduce
//     batch      T -> T [T]        weight replicated: its gradient is all-reduced over the group
//     column     R -> F [P]        weight (and bias) split by out features
//     row        F -> P [F]        weight split by in features; the output gradient must be replicated
//   attention (FlashAttention, AttentionScore, AttentionContext)
//     replicate, heads (F -> F [F], whole heads per device), batch (T -> T, when batch % tp == 0)
//   Embedding  replicate; batch (T out, table all-reduced); row (vocab split, P out); column (hidden split)
//   Loss       replicate; batch (T logits); column (vocab-parallel cross-entropy: 3 small all-reduces)
//   MoeExperts replicate; batch; column (each expert's matrices split, P out)
//   Norm       replicate; batch (never the hidden dim: a norm reduces over it)
//   Elementwise, Dropout, Reshape, Softmax: follow their input: replicate, batch, column (F; "heads" on
//              [b, heads, s, s]); Softmax takes F only on [b, heads, s, s] (it reduces over the last dim)
//   MatMul, Conv, Unknown: replicate, batch
// Splits need the dim to be at least tp (uneven splits are padded, as Megatron pads the vocabulary);
// heads and attention batch splits must divide exactly.
//
// Resharding (bytes B of the whole tensor): R->T/F free (a slice); T/F->R all-gather; T<->F all-to-all
// of the B/tp each device holds; P->R all-reduce; P->T/F reduce-scatter. Each edge pays the forward
// conversion (producer layout -> consumer layout) and the backward one (the consumer's gradient
// contribution -> the layout the producer's backward needs: its output layout, R for a P output). A
// tensor read by several ops goes through a fan-out node that chooses the layout it is held in and the
// layout its gradient is summed in (P allowed: partial contributions add up locally and are reduced once,
// as Megatron reduces q/k/v's input gradient once).
//
// Compute (roofline through the CostSource, on one device's share): GEMMs with their per-device [m, k] x
// [k, n] for the forward, input-gradient and weight-gradient passes; flash attention by FLOPs (backward
// x 2.5 of the forward's); memory-bound ops by their bytes, backward 1.5x when they have one. Tensors that
// come from outside the op set arrive in whatever layout their reader wants, free.
//
// Memory: parameters (x param_memory_factor) where first used (a tied weight counts once, split as its
// first user splits it), and each saved activation once, in the layout its producer holds it (inputs from
// outside the op set: in the layout their first saver reads). A consumer that reads a gathered copy of a
// tensor it saves keeps only the held shard and gathers it again in backward, as Megatron's sequence
// parallelism does; that re-gather overlaps with the input-gradient GEMM there and is not charged here.
#include "shardscape/search/sharding_solver.h"

#include "shardscape/cost/layer_cost.h"
#include "shardscape/support/error.h"
#include "shardscape/support/json_fields.h"
#include "shardscape/support/json_file.h"
#include "shardscape/support/strings.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <unordered_map>

namespace shardscape {

std::string_view strategyName(ShardStrategy strategy)
{
    switch (strategy) {
    case ShardStrategy::Replicate:
        return "replicate";
    case ShardStrategy::Batch:
        return "batch";
    case ShardStrategy::Column:
        return "column";
    case ShardStrategy::Row:
        return "row";
    case ShardStrategy::Heads:
        break;
    }
    return "heads";
}

std::optional<ShardStrategy> parseShardStrategy(std::string_view name)
{
    for (int i = 0; i < kShardStrategyCount; ++i)
        if (strategyName(static_cast<ShardStrategy>(i)) == name)
            return static_cast<ShardStrategy>(i);
    return std::nullopt;
}

// --- partition constraints --------------------------------------------------------------------------

namespace {

constexpr std::string_view kConstraintsSchema = "shardscape.partition_constraints/1";

std::vector<std::string> strategyNames()
{
    std::vector<std::string> names;
    for (int i = 0; i < kShardStrategyCount; ++i)
        names.emplace_back(strategyName(static_cast<ShardStrategy>(i)));
    return names;
}

} // namespace

PartitionConstraints partitionConstraintsFromJson(const nlohmann::json& doc, std::string_view origin)
{
    JsonFields fields(doc, std::string(origin));
    if (const auto schema = fields.optString("schema"); schema && *schema != kConstraintsSchema)
        fields.fail("schema", cat("unknown schema '", *schema, "'"), cat("use \"", kConstraintsSchema, "\""));
    const auto& entries = fields.array("constraints", true);
    fields.checkNoUnknownKeys();

    PartitionConstraints constraints;
    for (std::size_t i = 0; i < entries.size(); ++i) {
        const std::string where = cat("constraints[", i, "]");
        JsonFields entry(entries[i], std::string(origin), where);
        PartitionRule rule;
        rule.origin = cat(origin, ": ", where);
        rule.module = entry.optString("module").value_or("");
        rule.op = entry.optString("op").value_or("");
        if (rule.module.empty() == rule.op.empty())
            throw InputError(cat(rule.origin, ": give exactly one non-empty \"module\" or \"op\""),
                             "\"module\" is a module-path suffix such as \"mlp\", \"op\" an exact op name");
        const auto& allowed = entry.array("allowed", true);
        entry.checkNoUnknownKeys();
        if (allowed.empty())
            throw InputError(cat(rule.origin, ".allowed: the list is empty"),
                             cat("name at least one of ", join(strategyNames())));
        for (std::size_t k = 0; k < allowed.size(); ++k) {
            const auto& item = allowed[k];
            if (!item.is_string())
                throw InputError(
                    cat(rule.origin, ".allowed[", k, "]: expected a strategy name, got ", describeJson(item)));
            const auto name = item.get<std::string>();
            const auto strategy = parseShardStrategy(name);
            if (!strategy)
                throw InputError(cat(rule.origin, ".allowed[", k, "]: unknown strategy '", name, "'"),
                                 cat("use one of ", join(strategyNames())));
            if (std::find(rule.allowed.begin(), rule.allowed.end(), *strategy) != rule.allowed.end())
                throw InputError(cat(rule.origin, ".allowed[", k, "]: '", name, "' is listed twice"));
            rule.allowed.push_back(*strategy);
        }
        constraints.rules.push_back(std::move(rule));
    }
    return constraints;
}

PartitionConstraints loadPartitionConstraints(const std::filesystem::path& path)
{
    return partitionConstraintsFromJson(readJsonFile(path), path.string());
}

void ShardingOptions::validate() const
{
    if (tp < 1 || tp > 4096)
        throw InputError(cat("sharding: tp must be in 1..4096, got ", tp));
    if (tp_per_node < 0)
        throw InputError(cat("sharding: tp_per_node must be >= 0, got ", tp_per_node));
    if (!(memory_limit_bytes > 0))
        throw InputError(cat("sharding: memory_limit_bytes must be > 0, got ", memory_limit_bytes),
                         "give the per-device memory in bytes (infinity for no limit)");
    if (solver != "dp" && solver != "ilp")
        throw InputError(cat("sharding: unknown solver '", solver, "'"), "use \"dp\" or \"ilp\"");
    if (!(time_limit_s > 0))
        throw InputError(cat("sharding: time_limit_s must be > 0, got ", time_limit_s));
    if (!std::isfinite(memory_granularity))
        throw InputError("sharding: memory_granularity must be finite");
    if (!(ignore_small_tensor_threshold >= 0) || !std::isfinite(ignore_small_tensor_threshold))
        throw InputError(
            cat("sharding: ignore_small_tensor_threshold must be >= 0, got ", ignore_small_tensor_threshold));
    if (!(param_memory_factor >= 0) || !std::isfinite(param_memory_factor))
        throw InputError(cat("sharding: param_memory_factor must be >= 0, got ", param_memory_factor));
}

int ShardingPlan::count(Collective kind, bool backward) const
{
    return static_cast<int>(std::count_if(collectives.begin(), collectives.end(), [&](const ShardingCollective& c) {
        return c.kind == kind && c.backward == backward;
    }));
}

const OpSharding* ShardingPlan::find(OpId op) const
{
    for (const auto& entry : ops)
        if (entry.op == op)
            return &entry;
    return nullptr;
}

// --- the model ----------------------------------------------------------------------------------------

namespace {

enum class Layout : std::uint8_t
{
    R,
    T,
    F,
    P
};

/** One way to run a node: layouts at its ports, its time and its memory. */
struct Choice
{
    ShardStrategy strategy = ShardStrategy::Replicate;
    std::vector<Layout> in; ///< per input slot: the layout the node reads
    std::vector<Layout> inGrad; ///< per input slot: the layout of the gradient it sends back
    std::vector<Layout> out; ///< per output slot: the layout it produces
    std::vector<Layout> outGrad; ///< per output slot: the layout its backward needs the gradient in
    double compute_s = 0;
    double comm_s = 0;
    double memory_bytes = 0;
    std::vector<ShardingCollective> collectives; ///< inside the node (weight gradients, loss)
};

/** An op, or a fan-out of one tensor to several readers (op == -1). */
struct Node
{
    OpId op = -1;
    TensorId tensor = -1; ///< fan-out nodes only
    std::vector<Choice> choices;
};

/** A tensor flowing from an output slot of one node to an input slot of another. */
struct TensorEdge
{
    int from = 0;
    int fromSlot = 0;
    int to = 0;
    int toSlot = 0;
    TensorId tensor = -1;
};

struct Conversion
{
    Collective kind = Collective::AllReduce;
    double bytes = 0;
    double time = 0;
};

bool hasGradient(DType dtype)
{
    return dtype == DType::F64 || dtype == DType::F32 || dtype == DType::TF32 || dtype == DType::F16
        || dtype == DType::BF16 || dtype == DType::FP8;
}

double product(const std::vector<std::int64_t>& shape, std::size_t begin, std::size_t end)
{
    double p = 1;
    for (std::size_t i = begin; i < end && i < shape.size(); ++i)
        p *= static_cast<double>(shape[i]);
    return p;
}

/** Builds the abstract problem from the graph and turns a solution back into a plan. */
class ShardingModel
{
public:
    ShardingModel(const ModelGraph& graph, const std::vector<OpId>& ops, const CostSource& costs,
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

    const std::string& infeasibleReason() const { return m_reason; }

    ShardingProblem problem() const
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
        p.memory_limit
            = limit >= static_cast<double>(p.memory_limit) ? p.memory_limit : static_cast<std::int64_t>(limit);
        return p;
    }

    /** Smallest memory any plan needs (every node at its smallest choice), bytes. */
    double minimumMemory() const
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

    void fill(ShardingPlan& plan, const std::vector<int>& choice) const
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

    std::string nodeName(int v) const
    {
        const auto& node = m_nodes[static_cast<std::size_t>(v)];
        return node.op >= 0 ? m_graph.op(node.op).name : cat(m_graph.tensor(node.tensor).name, " (fan-out)");
    }

private:
    // --- tensors ---

    double bytes(TensorId t) const { return m_graph.tensor(t).bytes(); }
    const std::vector<std::int64_t>& shape(TensorId t) const { return m_graph.tensor(t).shape; }
    bool small(TensorId t) const { return bytes(t) < m_options.ignore_small_tensor_threshold; }

    /** Size of the dim a T split divides: the batch of [b, heads, s, s], otherwise all dims but the last
        (all dims of integer token ids [b, s]). */
    double tokenDim(TensorId t) const
    {
        const auto& s = shape(t);
        if (s.size() == 4)
            return static_cast<double>(s[0]);
        if (!hasGradient(m_graph.tensor(t).dtype) && s.size() == 2)
            return product(s, 0, 2);
        return s.size() >= 2 ? product(s, 0, s.size() - 1) : static_cast<double>(s.empty() ? 1 : s[0]);
    }
    /** Size of the dim an F split divides: the heads of [b, heads, s, s], otherwise the last. */
    double featureDim(TensorId t) const
    {
        const auto& s = shape(t);
        if (s.size() == 4)
            return static_cast<double>(s[1]);
        return s.empty() ? 1 : static_cast<double>(s.back());
    }
    double splitFactor(double dim) const { return std::ceil(dim / m_tp) / dim; }

    bool valid(TensorId t, Layout layout) const
    {
        switch (layout) {
        case Layout::R:
            return true;
        case Layout::P:
            return !small(t) && m_tp > 1;
        case Layout::T:
            return !small(t) && m_tp > 1 && tokenDim(t) >= m_tp;
        case Layout::F:
            break;
        }
        return !small(t) && m_tp > 1 && featureDim(t) >= m_tp;
    }

    /** Share of the whole tensor one device holds. */
    double factor(TensorId t, Layout layout) const
    {
        switch (layout) {
        case Layout::R:
        case Layout::P:
            return 1;
        case Layout::T:
            return splitFactor(tokenDim(t));
        case Layout::F:
            break;
        }
        return splitFactor(featureDim(t));
    }

    /** The collective that turns layout `a` of tensor `t` into `b` (none when local). */
    std::optional<Conversion> convert(TensorId t, Layout a, Layout b) const
    {
        if (a == b || b == Layout::P || a == Layout::R)
            return std::nullopt;
        const double whole = bytes(t);
        Conversion c;
        if (b == Layout::R) {
            c.kind = a == Layout::P ? Collective::AllReduce : Collective::AllGather;
            c.bytes = whole;
        } else if (a == Layout::P) {
            c.kind = Collective::ReduceScatter;
            c.bytes = whole;
        } else {
            // T <-> F: each device sends what it holds, split into tp pieces.
            c.kind = Collective::AllToAll;
            c.bytes = whole * factor(t, a);
        }
        c.time = m_costs.collectiveTime(c.kind, c.bytes, m_group);
        return c;
    }

    std::optional<Conversion> backward(const TensorEdge& e, const Choice& from, const Choice& to) const
    {
        if (!hasGradient(m_graph.tensor(e.tensor).dtype))
            return std::nullopt;
        return convert(e.tensor, to.inGrad[static_cast<std::size_t>(e.toSlot)],
                       from.outGrad[static_cast<std::size_t>(e.fromSlot)]);
    }

    double edgeTime(const TensorEdge& e, int i, int j) const
    {
        const auto& a = m_nodes[static_cast<std::size_t>(e.from)].choices[static_cast<std::size_t>(i)];
        const auto& b = m_nodes[static_cast<std::size_t>(e.to)].choices[static_cast<std::size_t>(j)];
        double t = 0;
        if (const auto f
            = convert(e.tensor, a.out[static_cast<std::size_t>(e.fromSlot)], b.in[static_cast<std::size_t>(e.toSlot)]))
            t += f->time;
        if (const auto g = backward(e, a, b))
            t += g->time;
        return t;
    }

    std::int64_t units(double memoryBytes) const
    {
        const double g = m_options.memory_granularity;
        if (g > 0)
            return static_cast<std::int64_t>(std::ceil(memoryBytes / g - 1e-9));
        return static_cast<std::int64_t>(std::llround(memoryBytes));
    }

    // --- the op set ---

    void selectOps(const std::vector<OpId>& ops)
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

    bool producedInside(TensorId t) const
    {
        const OpId p = m_producer[static_cast<std::size_t>(t)];
        return p >= 0 && m_inSet[static_cast<std::size_t>(p)];
    }

    // --- nodes ---

    void buildNodes()
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

    Node fanOutNode(TensorId t) const
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

    void buildEdges()
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

    TensorEdge producerEdge(TensorId t, int to, int toSlot) const
    {
        const OpId p = m_producer[static_cast<std::size_t>(t)];
        const auto& outputs = m_graph.op(p).outputs;
        const auto slot = std::find(outputs.begin(), outputs.end(), t) - outputs.begin();
        return {m_nodeOfOp.at(p), static_cast<int>(slot), to, toSlot, t};
    }

    // --- strategies of one op ---

    std::vector<Choice> opChoices(OpId id) const
    {
        const Op& op = m_graph.op(id);
        std::vector<Choice> candidates;
        const auto add
            = [&](ShardStrategy s, std::vector<Layout> in, std::vector<Layout> inGrad, std::vector<Layout> out) {
                  Choice c;
                  c.strategy = s;
                  c.in = std::move(in);
                  c.inGrad = std::move(inGrad);
                  c.out = std::move(out);
                  candidates.push_back(std::move(c));
              };
        const std::size_t nIn = op.inputs.size();
        const std::size_t nOut = op.outputs.size();
        const auto all = [](std::size_t n, Layout l) { return std::vector<Layout>(n, l); };

        add(ShardStrategy::Replicate, all(nIn, Layout::R), all(nIn, Layout::R), all(nOut, Layout::R));
        if (m_tp > 1) {
            switch (op.kind) {
            case OpKind::Linear:
            case OpKind::MoeRouter:
                if (weightMatrix(op)) {
                    add(ShardStrategy::Batch, all(nIn, Layout::T), all(nIn, Layout::T), all(nOut, Layout::T));
                    add(ShardStrategy::Column, all(nIn, Layout::R), all(nIn, Layout::P), all(nOut, Layout::F));
                    add(ShardStrategy::Row, all(nIn, Layout::F), all(nIn, Layout::F), all(nOut, Layout::P));
                } else {
                    addBatch(op, add);
                }
                break;
            case OpKind::FlashAttention:
            case OpKind::AttentionScore:
            case OpKind::AttentionContext:
                if (headsDivide(op))
                    add(ShardStrategy::Heads, all(nIn, Layout::F), all(nIn, Layout::F), all(nOut, Layout::F));
                if (static_cast<double>(m_graph.batch) >= m_tp && m_graph.batch % m_tp == 0)
                    add(ShardStrategy::Batch, all(nIn, Layout::T), all(nIn, Layout::T), all(nOut, Layout::T));
                break;
            case OpKind::Embedding:
                add(ShardStrategy::Batch, all(nIn, Layout::T), all(nIn, Layout::T), all(nOut, Layout::T));
                if (!op.params.empty()) {
                    add(ShardStrategy::Row, all(nIn, Layout::R), all(nIn, Layout::R), all(nOut, Layout::P));
                    add(ShardStrategy::Column, all(nIn, Layout::R), all(nIn, Layout::R), all(nOut, Layout::F));
                }
                break;
            case OpKind::Loss:
                add(ShardStrategy::Batch, all(nIn, Layout::T), all(nIn, Layout::T), all(nOut, Layout::R));
                if (nIn >= 1) {
                    auto in = all(nIn, Layout::R);
                    in[0] = Layout::F;
                    add(ShardStrategy::Column, in, in, all(nOut, Layout::R));
                }
                break;
            case OpKind::MoeExperts: {
                add(ShardStrategy::Batch, all(nIn, Layout::T), all(nIn, Layout::T), all(nOut, Layout::T));
                // Expert tensor parallelism: tokens dispatched on every device, each expert's ffn split.
                auto out = all(nOut, Layout::F);
                if (nOut >= 1)
                    out[0] = Layout::P;
                if (nOut >= 2)
                    out[1] = Layout::R; // the dispatched tokens
                add(ShardStrategy::Column, all(nIn, Layout::R), all(nIn, Layout::P), out);
                break;
            }
            case OpKind::Norm:
                add(ShardStrategy::Batch, all(nIn, Layout::T), all(nIn, Layout::T), all(nOut, Layout::T));
                break;
            case OpKind::Softmax:
            case OpKind::Elementwise:
            case OpKind::Dropout:
            case OpKind::Reshape:
                addFollow(op, Layout::T, add);
                if (op.kind != OpKind::Softmax || (nIn >= 1 && shape(op.inputs[0]).size() == 4))
                    addFollow(op, Layout::F, add);
                break;
            case OpKind::MatMul:
            case OpKind::Conv:
            case OpKind::Unknown:
                addBatch(op, add);
                break;
            }
        }

        std::vector<Choice> choices;
        for (auto& c : candidates) {
            if (!allowed(op, c.strategy) || !layoutsValid(op, c) || !weightsMaySplit(op, c.strategy))
                continue;
            c.outGrad.resize(c.out.size());
            for (std::size_t i = 0; i < c.out.size(); ++i)
                c.outGrad[i] = c.out[i] == Layout::P ? Layout::R : c.out[i];
            cost(id, c);
            choices.push_back(std::move(c));
        }
        return choices;
    }

    template<typename Add> void addBatch(const Op& op, const Add& add) const
    {
        // Generic ops: split the leading dims of everything; a 2-D second operand stays whole (its
        // gradient is then a partial sum).
        std::vector<Layout> in(op.inputs.size(), Layout::T);
        std::vector<Layout> grad(op.inputs.size(), Layout::T);
        for (std::size_t i = 1; i < op.inputs.size(); ++i)
            if (shape(op.inputs[i]).size() < 3) {
                in[i] = Layout::R;
                grad[i] = Layout::P;
            }
        add(ShardStrategy::Batch, in, grad, std::vector<Layout>(op.outputs.size(), Layout::T));
    }

    /** Elementwise-like ops keep their input's layout; broadcast inputs stay whole unless they share the split dim. */
    template<typename Add> void addFollow(const Op& op, Layout layout, const Add& add) const
    {
        if (op.outputs.empty())
            return;
        const auto& outShape = shape(op.outputs[0]);
        std::vector<Layout> in;
        for (const auto t : op.inputs) {
            const auto& s = shape(t);
            if (s == outShape || op.kind == OpKind::Reshape)
                in.push_back(layout);
            else if (layout == Layout::F && !s.empty() && s.size() == outShape.size() && s.back() == outShape.back())
                in.push_back(Layout::F);
            else
                in.push_back(Layout::R);
        }
        // A replicated broadcast input's gradient is summed over the split: a partial sum.
        std::vector<Layout> grad = in;
        for (auto& g : grad)
            if (g == Layout::R)
                g = Layout::P;
        const bool heads = layout == Layout::F && outShape.size() == 4;
        add(layout == Layout::T ? ShardStrategy::Batch : (heads ? ShardStrategy::Heads : ShardStrategy::Column), in,
            grad, std::vector<Layout>(op.outputs.size(), layout));
    }

    /** A Linear's 2-D weight and its [.., in] -> [.., out] shapes; null when the op is not a plain matmul. */
    const Tensor* weightMatrix(const Op& op) const
    {
        if (op.params.empty() || op.inputs.empty() || op.outputs.empty())
            return nullptr;
        const Tensor& w = m_graph.tensor(op.params[0]);
        // An operand whose shape the importer could not infer has no last dimension to match.
        if (w.shape.size() != 2 || shape(op.inputs[0]).empty() || shape(op.outputs[0]).empty())
            return nullptr;
        const auto in = shape(op.inputs[0]).back();
        const auto out = shape(op.outputs[0]).back();
        const bool straight = w.shape[0] == in && w.shape[1] == out;
        const bool transposed = w.shape[0] == out && w.shape[1] == in; // a tied embedding used as the head
        return straight || transposed ? &w : nullptr;
    }

    /** Attention heads (and key/value heads) divide by tp. Heads come from the shapes: the [b, heads, s]
        log-sum-exp or the [b, heads, s, s] scores. */
    bool headsDivide(const Op& op) const
    {
        std::int64_t heads = 0;
        for (const auto t : op.outputs)
            if (shape(t).size() == 4
                || (op.kind == OpKind::FlashAttention && shape(t).size() == 3 && t != op.outputs[0]))
                heads = shape(t)[1];
        for (const auto t : op.inputs)
            if (shape(t).size() == 4)
                heads = shape(t)[1];
        if (heads <= 0 && m_graph.transformer)
            heads = m_graph.transformer->num_heads;
        if (heads <= 0 || heads % m_tp != 0)
            return false;
        // [b, s, heads x head_dim] operands: whole heads per device, for grouped key/value heads too.
        std::int64_t headDim = 0;
        for (const auto t : op.outputs)
            if (shape(t).size() == 3 && t == op.outputs[0] && op.kind != OpKind::AttentionScore)
                headDim = shape(t).back() / heads;
        if (headDim <= 0 && !op.inputs.empty() && shape(op.inputs[0]).size() == 3)
            headDim = shape(op.inputs[0]).back() / heads;
        for (const auto t : op.inputs) {
            const auto& s = shape(t);
            if (s.size() != 3)
                continue;
            if (headDim <= 0 || s.back() % headDim != 0 || (s.back() / headDim) % m_tp != 0)
                return false;
        }
        return true;
    }

    bool layoutsValid(const Op& op, const Choice& c) const
    {
        for (std::size_t i = 0; i < op.inputs.size(); ++i)
            if (!valid(op.inputs[i], c.in[i]) || (c.inGrad[i] != Layout::P && !valid(op.inputs[i], c.inGrad[i])))
                return false;
        for (std::size_t i = 0; i < op.outputs.size(); ++i)
            if (!valid(op.outputs[i], c.out[i]))
                return false;
        return true;
    }

    bool allowed(const Op& op, ShardStrategy s) const
    {
        for (const auto& rule : m_options.constraints.rules) {
            const bool matches
                = !rule.op.empty() ? rule.op == op.name : !matchedModule(op.module, {rule.module}).empty();
            if (matches && std::find(rule.allowed.begin(), rule.allowed.end(), s) == rule.allowed.end())
                return false;
        }
        return true;
    }

    /** Share of parameter `p` one device holds under `s`. */
    double paramFactor(const Op& op, TensorId p, ShardStrategy s) const
    {
        const Tensor& w = m_graph.tensor(p);
        const bool main = p == op.params.front();
        switch (op.kind) {
        case OpKind::Linear:
        case OpKind::MoeRouter: {
            if (op.inputs.empty() || op.outputs.empty() || shape(op.inputs[0]).empty() || shape(op.outputs[0]).empty())
                return 1;
            const double in = static_cast<double>(shape(op.inputs[0]).back());
            const double out = static_cast<double>(shape(op.outputs[0]).back());
            if (s == ShardStrategy::Column)
                return splitFactor(out); // weight and bias
            if (s == ShardStrategy::Row && main)
                return splitFactor(in);
            return 1;
        }
        case OpKind::Embedding:
            if (w.shape.size() == 2 && s == ShardStrategy::Row)
                return splitFactor(static_cast<double>(w.shape[0]));
            if (w.shape.size() == 2 && s == ShardStrategy::Column)
                return splitFactor(static_cast<double>(w.shape[1]));
            return 1;
        case OpKind::MoeExperts:
            // Stacked expert weights [E, h, f] and [E, f, h]: column splits every expert's ffn dim.
            return s == ShardStrategy::Column ? splitFactor(static_cast<double>(shape(op.params.front()).back())) : 1;
        default:
            return 1;
        }
    }

    /** Ops whose weight is under the small-tensor threshold keep it whole. */
    bool weightsMaySplit(const Op& op, ShardStrategy s) const
    {
        if (op.params.empty() || m_options.ignore_small_tensor_threshold <= 0)
            return true;
        double largest = 0;
        for (const auto p : op.params)
            largest = std::max(largest, bytes(p));
        if (largest >= m_options.ignore_small_tensor_threshold)
            return true;
        for (const auto p : op.params)
            if (paramFactor(op, p, s) < 1)
                return false;
        return true;
    }

    // --- costs of one choice ---

    void cost(OpId id, Choice& c) const
    {
        const Op& op = m_graph.op(id);
        const DType dtype = m_graph.dtype;
        const bool split = c.strategy != ShardStrategy::Replicate;
        const double share = split ? 1.0 / m_tp : 1.0;

        if ((op.kind == OpKind::Linear || op.kind == OpKind::MoeRouter) && weightMatrix(op)) {
            double k = static_cast<double>(shape(op.inputs[0]).back());
            double n = static_cast<double>(shape(op.outputs[0]).back());
            double m = static_cast<double>(m_graph.tensor(op.inputs[0]).elements()) / k;
            if (c.strategy == ShardStrategy::Batch)
                m *= factor(op.inputs[0], Layout::T);
            else if (c.strategy == ShardStrategy::Column)
                n *= splitFactor(n);
            else if (c.strategy == ShardStrategy::Row)
                k *= splitFactor(k);
            c.compute_s = gemmPasses(op, m, n, k, dtype);
        } else if (op.kind == OpKind::FlashAttention) {
            // Flash backward recomputes the scores: five GEMM passes to the forward's two (x 1.25 of 2x).
            c.compute_s = m_costs.attentionTime(op.flops_fwd * share, dtype)
                + m_costs.attentionTime(op.flops_bwd_input * share * 1.25, dtype);
        } else if ((op.kind == OpKind::AttentionScore || op.kind == OpKind::AttentionContext
                    || op.kind == OpKind::MatMul || op.kind == OpKind::MoeExperts || op.kind == OpKind::Conv)
                   && op.flops_fwd > 0) {
            double n = 1024, k = 1024;
            if (!op.params.empty() && shape(op.params[0]).size() >= 2) {
                const auto& w = shape(op.params[0]);
                k = static_cast<double>(w[w.size() - 2]);
                n = static_cast<double>(w.back());
            } else if (!op.outputs.empty() && shape(op.outputs[0]).size() >= 2) {
                // Activation @ activation (attention scores or context): batched GEMMs.
                const auto& o = shape(op.outputs[0]);
                n = static_cast<double>(o.back());
                k = static_cast<double>(o[o.size() - 2]);
            }
            double m = op.flops_fwd / (2 * n * k);
            if (c.strategy == ShardStrategy::Column)
                n *= splitFactor(n);
            else
                m *= share;
            c.compute_s = gemmPasses(op, m, n, k, dtype);
        } else {
            // Memory-bound: every device streams its share; a partial-sum output is written whole.
            const bool partialOut = std::find(c.out.begin(), c.out.end(), Layout::P) != c.out.end();
            const double moved = op.bytes_read * share + op.bytes_written * (partialOut ? 1.0 : share);
            c.compute_s = m_costs.memoryTime(moved);
            // Backward reads the saved input and the output gradient and writes the input gradient.
            if (op.flops_bwd_input + op.flops_bwd_weight > 0)
                c.compute_s += m_costs.memoryTime(1.5 * moved);
        }

        // Collectives inside the op.
        if (c.strategy == ShardStrategy::Batch && !op.params.empty()) {
            // Weights replicated while the tokens are split: each device holds a partial weight gradient.
            double gradBytes = 0;
            for (const auto p : op.params)
                gradBytes += bytes(p);
            const double t = m_costs.collectiveTime(Collective::AllReduce, gradBytes, m_group);
            c.comm_s += t;
            c.collectives.push_back({Collective::AllReduce, true, gradBytes, t, op.name + " weight gradients"});
        }
        if (op.kind == OpKind::Loss && c.strategy == ShardStrategy::Column && !op.inputs.empty()) {
            // Vocab-parallel cross-entropy: max, sum of exponentials and target logit, fp32 per token.
            const double tokens = tokenDim(op.inputs[0]);
            const double t = m_costs.collectiveTime(Collective::AllReduce, 4 * tokens, m_group);
            for (int i = 0; i < 3; ++i) {
                c.comm_s += t;
                c.collectives.push_back(
                    {Collective::AllReduce, false, 4 * tokens, t, op.name + " vocab-parallel softmax"});
            }
        }

        // Memory: parameters first used here, and saved activations charged once.
        for (const auto p : op.params)
            if (m_firstParamUser[static_cast<std::size_t>(p)] == id)
                c.memory_bytes += bytes(p) * paramFactor(op, p, c.strategy) * m_options.param_memory_factor;
        for (std::size_t i = 0; i < op.outputs.size(); ++i)
            if (m_saved[static_cast<std::size_t>(op.outputs[i])])
                c.memory_bytes += bytes(op.outputs[i]) * factor(op.outputs[i], c.out[i]);
        for (std::size_t i = 0; i < op.inputs.size(); ++i) {
            const TensorId t = op.inputs[i];
            if (!producedInside(t) && m_firstSaver[static_cast<std::size_t>(t)] == id
                && std::find(op.inputs.begin(), op.inputs.begin() + static_cast<std::ptrdiff_t>(i), t)
                    == op.inputs.begin() + static_cast<std::ptrdiff_t>(i))
                c.memory_bytes += bytes(t) * factor(t, c.in[i]);
        }
    }

    /** Forward, input-gradient and weight-gradient GEMMs of [m x k] @ [k x n] on one device. */
    double gemmPasses(const Op& op, double m, double n, double k, DType dtype) const
    {
        if (op.flops_fwd <= 0)
            return 0;
        double t = m_costs.matmulTime(m, n, k, dtype);
        if (op.flops_bwd_input > 0)
            t += m_costs.matmulTime(m, k, n, dtype) * op.flops_bwd_input / op.flops_fwd;
        if (op.flops_bwd_weight > 0)
            t += m_costs.matmulTime(k, n, m, dtype) * op.flops_bwd_weight / op.flops_fwd;
        return t;
    }

    const ModelGraph& m_graph;
    const CostSource& m_costs;
    const ShardingOptions& m_options;
    int m_tp;
    GroupShape m_group;
    std::vector<bool> m_inSet;
    std::vector<OpId> m_order;
    std::vector<OpId> m_producer;
    std::vector<int> m_readers; ///< per tensor: input slots reading it inside the op set
    std::vector<bool> m_saved; ///< per tensor: some op of the set saves it for backward
    std::vector<OpId> m_firstSaver;
    std::vector<OpId> m_firstParamUser;
    std::vector<Node> m_nodes;
    std::vector<TensorEdge> m_edges;
    std::unordered_map<OpId, int> m_nodeOfOp;
    std::map<TensorId, int> m_fanOut;
    std::string m_reason;
};

} // namespace

ShardingPlan solveSharding(const ModelGraph& graph, const std::vector<OpId>& ops, const CostSource& costs,
                           const ShardingOptions& options, std::stop_token stop)
{
    options.validate();
    const auto start = std::chrono::steady_clock::now();
    ShardingPlan plan;
    plan.solver = options.solver;
    const ShardingModel model(graph, ops, costs, options);
    const auto finish = [&](ShardingPlan& p) -> ShardingPlan& {
        p.solve_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        return p;
    };
    if (!model.infeasibleReason().empty()) {
        plan.status = "infeasible";
        plan.reason = model.infeasibleReason();
        return finish(plan);
    }
    const ShardingProblem problem = model.problem();
    ShardingSolution solution = options.solver == "ilp" ? solveShardingIlp(problem, options.time_limit_s, stop)
                                                        : solveShardingDp(problem, options.max_states, stop);
    plan.status = solution.status;
    plan.states_explored = solution.states_explored;
    plan.warnings = std::move(solution.warnings);
    if (!solution.crowded_nodes.empty()) {
        std::vector<std::string> names;
        for (const int v : solution.crowded_nodes)
            names.push_back(model.nodeName(v));
        plan.warnings.push_back(cat("ops that widen the DP state most (constrain them to shrink it): ", join(names)));
    }
    const bool solved = solution.choice.size() == problem.nodes.size()
        && (solution.status == "optimal" || solution.status == "time limit, best found"
            || solution.status == "state cap, best found");
    if (!solved) {
        if (plan.status == "infeasible")
            plan.reason = cat("no sharding on tp=", options.tp, " fits ", humanBytes(options.memory_limit_bytes),
                              " per device: the ops need at least ", humanBytes(model.minimumMemory()),
                              " (every op at its smallest), and edges or rounding to ",
                              humanBytes(std::max(options.memory_granularity, 0.0)), " may need more");
        else
            plan.reason = cat("the ", options.solver, " solver stopped without a plan (", plan.status, ")");
        return finish(plan);
    }
    model.fill(plan, solution.choice);
    plan.feasible = true;
    return finish(plan);
}

} // namespace shardscape
