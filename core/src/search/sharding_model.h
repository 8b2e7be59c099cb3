// SPDX-License-Identifier: MIT
// The intra-op sharding model (sharding_model.cpp, sharding_strategies.cpp, sharding_costs.cpp): which strategies
// each op offers on a 1-D tensor-parallel group, what they cost, and how layouts change between ops. Both solvers
// (sharding_dp.cpp, sharding_ilp.cpp) see only the abstract ShardingProblem built here.
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

#pragma once

#include "shardscape/search/sharding_solver.h"

#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace shardscape::sharding_detail {

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

/** Builds the abstract problem from the graph and turns a solution back into a plan. */
class ShardingModel
{
public:
    ShardingModel(const ModelGraph& graph, const std::vector<OpId>& ops, const CostSource& costs,
                  const ShardingOptions& options);
    const std::string& infeasibleReason() const { return m_reason; }
    ShardingProblem problem() const;

    /** Smallest memory any plan needs (every node at its smallest choice), bytes. */
    double minimumMemory() const;
    void fill(ShardingPlan& plan, const std::vector<int>& choice) const;
    std::string nodeName(int v) const;

private:
    // --- tensors ---

    double bytes(TensorId t) const { return m_graph.tensor(t).bytes(); }
    const std::vector<std::int64_t>& shape(TensorId t) const { return m_graph.tensor(t).shape; }
    bool small(TensorId t) const { return bytes(t) < m_options.ignore_small_tensor_threshold; }

    /** Size of the dim a T split divides: the batch of [b, heads, s, s], otherwise all dims but the last
        (all dims of integer token ids [b, s]). */
    double tokenDim(TensorId t) const;

    /** Size of the dim an F split divides: the heads of [b, heads, s, s], otherwise the last. */
    double featureDim(TensorId t) const;
    double splitFactor(double dim) const { return std::ceil(dim / m_tp) / dim; }
    bool valid(TensorId t, Layout layout) const;

    /** Share of the whole tensor one device holds. */
    double factor(TensorId t, Layout layout) const;

    /** The collective that turns layout `a` of tensor `t` into `b` (none when local). */
    std::optional<Conversion> convert(TensorId t, Layout a, Layout b) const;
    std::optional<Conversion> backward(const TensorEdge& e, const Choice& from, const Choice& to) const;
    double edgeTime(const TensorEdge& e, int i, int j) const;
    std::int64_t units(double memoryBytes) const;

    // --- the op set ---

    void selectOps(const std::vector<OpId>& ops);
    bool producedInside(TensorId t) const;

    // --- nodes ---

    void buildNodes();
    Node fanOutNode(TensorId t) const;
    void buildEdges();
    TensorEdge producerEdge(TensorId t, int to, int toSlot) const;

    // --- strategies of one op ---

    std::vector<Choice> opChoices(OpId id) const;
    template<typename Add> void addBatch(const Op& op, const Add& add) const;

    /** Elementwise-like ops keep their input's layout; broadcast inputs stay whole unless they share the split dim. */
    template<typename Add> void addFollow(const Op& op, Layout layout, const Add& add) const;

    /** A Linear's 2-D weight and its [.., in] -> [.., out] shapes; null when the op is not a plain matmul. */
    const Tensor* weightMatrix(const Op& op) const;

    /** Attention heads (and key/value heads) divide by tp. Heads come from the shapes: the [b, heads, s]
        log-sum-exp or the [b, heads, s, s] scores. */
    bool headsDivide(const Op& op) const;
    bool layoutsValid(const Op& op, const Choice& c) const;
    bool allowed(const Op& op, ShardStrategy s) const;

    /** Share of parameter `p` one device holds under `s`. */
    double paramFactor(const Op& op, TensorId p, ShardStrategy s) const;

    /** Ops whose weight is under the small-tensor threshold keep it whole. */
    bool weightsMaySplit(const Op& op, ShardStrategy s) const;

    // --- costs of one choice ---

    void cost(OpId id, Choice& c) const;

    /** Forward, input-gradient and weight-gradient GEMMs of [m x k] @ [k x n] on one device. */
    double gemmPasses(const Op& op, double m, double n, double k, DType dtype) const;
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

} // namespace shardscape::sharding_detail
