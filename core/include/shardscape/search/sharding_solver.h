// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/cost/cost_source.h"
#include "shardscape/model/model_graph.h"

#include <cstdint>
#include <filesystem>
#include <limits>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

namespace shardscape {

/**
 * How one op is split over a 1-D tensor-parallel group of tp devices (the intra-op solver's choices).
 * Which ones an op offers depends on its kind and shapes (core/src/search/sharding_model.h documents each):
 * ops with a 2-D weight [in, out] offer column and row, attention cores heads, norms only replicate and
 * batch, and elementwise ops follow their input's layout (batch, or column = split the last dim, or heads
 * for [b, heads, s, s] tensors).
 */
enum class ShardStrategy : std::uint8_t
{
    Replicate, ///< every device runs the whole op on whole tensors
    Batch, ///< activations split along their leading (batch x sequence) dims; weights replicated
    Column, ///< weight split by output features; output split on its last dim; input replicated
    Row, ///< weight split by input features; input split on its last dim; output a partial sum
    Heads, ///< attention split by heads (q, k, v, scores and context split by head)
};
inline constexpr int kShardStrategyCount = 5;

/** "replicate", "batch", "column", "row", "heads". */
std::string_view strategyName(ShardStrategy strategy);
std::optional<ShardStrategy> parseShardStrategy(std::string_view name);

/** One rule of a partition-constraints file: the ops it matches may only use `allowed`. */
struct PartitionRule
{
    /** Module-path suffix, matched component-wise: "mlp" matches every op inside a module "*.mlp". */
    std::string module;
    /** Exact op name (exclusive with `module`). */
    std::string op;
    std::vector<ShardStrategy> allowed;
    /** Where the rule came from, for messages: "constraints.json: constraints[2]". */
    std::string origin;
};

/** Restrictions of the strategy space. An op matched by several rules may use what all of them allow. */
struct PartitionConstraints
{
    std::vector<PartitionRule> rules;
};

/**
 * Reads a partition-constraints file (PlannerConfig::partition_constraints_path):
 *
 *     {
 *       "schema": "shardscape.partition_constraints/1",          (optional)
 *       "constraints": [
 *         {"module": "mlp.c_fc", "allowed": ["column", "replicate"]},
 *         {"op": "lm_head", "allowed": ["replicate"]}
 *       ]
 *     }
 *
 * Each entry names exactly one of "module" (a module-path suffix, component-wise) or "op" (an exact op
 * name) and a non-empty "allowed" list of strategy names without repeats. Unknown keys, unknown strategy
 * names, a wrong schema or a wrong type throw InputError naming the file and the entry ("constraints[2]").
 */
PartitionConstraints loadPartitionConstraints(const std::filesystem::path& path);
/** The same from a parsed document; `origin` names it in messages. */
PartitionConstraints partitionConstraintsFromJson(const nlohmann::json& doc, std::string_view origin);

/** Inputs of the intra-op sharding solver. */
struct ShardingOptions
{
    int tp = 1; ///< devices in the tensor-parallel group
    int tp_per_node = 0; ///< of those, how many share a node; 0 = all of them (one node)
    /** Per-device bytes for parameters (with gradients and optimizer state) plus saved activations. */
    double memory_limit_bytes = std::numeric_limits<double>::infinity();
    std::string solver = "dp"; ///< "dp" (linearised-graph DP) or "ilp" (CBC)
    double time_limit_s = 60; ///< wall-clock limit of the ILP solver, seconds
    /** Memory resolution, bytes: each op's memory is rounded up to a multiple (both solvers); <= 0 = exact. */
    double memory_granularity = 1e6;
    /** Activations smaller than this many bytes (and ops whose weight is) are kept replicated. */
    double ignore_small_tensor_threshold = 0;
    PartitionConstraints constraints;
    /** Bytes held per byte of weights: the weight, its gradient and the optimizer's resident state
        (AutoDist: 1 + 1 + opt_resident_coef = 8 for bf16 weights with Adam and fp32 master weights). */
    double param_memory_factor = 8;
    /** The DP keeps at most this many cut states per step (the best by time); more is reported in warnings. */
    std::size_t max_states = 1u << 20;

    /** Throws InputError naming the field when a value is out of range. */
    void validate() const;
};

/** The strategy chosen for one op and what it costs on one device. */
struct OpSharding
{
    OpId op = -1;
    ShardStrategy strategy = ShardStrategy::Replicate;
    std::string name; ///< the op's name
    double compute_s = 0; ///< forward + backward compute seconds
    double comm_s = 0; ///< collectives inside the op (weight-gradient all-reduces, vocab-parallel loss), seconds
    double memory_bytes = 0; ///< parameters (x param_memory_factor) and saved activations it accounts for
};

/** One collective of the plan, for one micro-batch. */
struct ShardingCollective
{
    Collective kind = Collective::AllReduce;
    bool backward = false;
    double bytes = 0; ///< the whole buffer (as CostSource::collectiveTime takes it)
    double time_s = 0;
    std::string tensor; ///< the activation (or "<op> weight gradients") it moves
};

/**
 * The solver's answer. Times are for one micro-batch, forward and backward, on one device; weight-gradient
 * all-reduces are counted with every micro-batch (an upper bound under gradient accumulation).
 */
struct ShardingPlan
{
    std::vector<OpSharding> ops; ///< in topological order
    double total_time_s = 0; ///< compute_s + comm_s: the objective
    double compute_s = 0;
    double comm_s = 0; ///< resharding between ops and collectives inside ops
    double memory_bytes = 0; ///< per device, exact (not rounded to the granularity)
    std::vector<ShardingCollective> collectives;
    std::string solver; ///< "dp" or "ilp"
    /** "optimal", "time limit, best found", "time limit, no solution", "infeasible", "cancelled",
        "state cap, best found" (the DP pruned states), "solver error". */
    std::string status;
    bool feasible = false; ///< a plan is present (ops filled)
    std::string reason; ///< why there is no plan (infeasible), empty otherwise
    std::uint64_t states_explored = 0; ///< DP: cut states visited; ILP: branch-and-bound nodes
    double solve_s = 0; ///< wall-clock seconds spent solving
    std::vector<std::string> warnings;

    /** Number of collectives of `kind` in the forward (or backward) pass. */
    int count(Collective kind, bool backward) const;
    /** The entry of `op`, or nullptr when it is not in the plan. */
    const OpSharding* find(OpId op) const;
};

/**
 * Chooses a sharding strategy for every op of `ops` (any subset of the graph: a layer, a stage, all) on
 * a tp group, minimising compute + communication time (forward and backward, one micro-batch) subject to
 * the per-device memory limit. Tensors produced outside `ops` arrive in whatever layout the consumer wants
 * at no cost (a boundary condition). The solver reads only kinds, shapes, FLOPs and bytes, never the
 * builders' Megatron annotations (Op::tp_role, Tensor::tp_sharded).
 *
 * Memory: the sum over the ops of their parameters and saved activations, which is the training peak at
 * the forward/backward turn (every saved activation is alive there); transient buffers are not counted.
 * An infeasible limit gives a plan with `feasible` false and a reason; bad options throw InputError.
 * Returns early (status "cancelled") when `stop` is requested.
 */
ShardingPlan solveSharding(const ModelGraph& graph, const std::vector<OpId>& ops, const CostSource& costs,
                           const ShardingOptions& options, std::stop_token stop = {});

// --- the abstract problem both solvers work on (exposed for tests and benchmarks) ----------------

/** One node of an abstract sharding problem: its choices' times and memories. */
struct ShardingNode
{
    std::vector<double> time_s; ///< per choice
    std::vector<std::int64_t> memory; ///< per choice, in units of the memory granularity
};

/** Pairwise cost between two nodes' choices: cost[i * |to| + j] for from-choice i and to-choice j. */
struct ShardingEdge
{
    int from = 0; ///< from < to: nodes are in a linear (topological) order
    int to = 0;
    std::vector<double> cost;
};

/** min sum(node times) + sum(edge costs) s.t. sum(memories) <= memory_limit. */
struct ShardingProblem
{
    std::vector<ShardingNode> nodes;
    std::vector<ShardingEdge> edges;
    std::int64_t memory_limit = std::numeric_limits<std::int64_t>::max() / 4;
};

/** A solution of a ShardingProblem. */
struct ShardingSolution
{
    std::vector<int> choice; ///< per node; empty when none was found
    double objective = 0;
    std::int64_t memory = 0;
    std::string status; ///< as ShardingPlan::status
    std::uint64_t states_explored = 0;
    std::vector<std::string> warnings;
    /** DP only: when the state cap was hit, the nodes of the crowded cut with the most distinct choices
        first (at most 10): the ones a partition constraint would help most. */
    std::vector<int> crowded_nodes;
};

/** Linearised-graph DP with (memory, time) Pareto lists per cut state (nnScaler's SPMD solver). */
ShardingSolution solveShardingDp(const ShardingProblem& problem, std::size_t maxStates, std::stop_token stop = {});
/** One-hot ILP with linearised edge variables, solved by COIN-OR CBC (Alpa's formulation). */
ShardingSolution solveShardingIlp(const ShardingProblem& problem, double timeLimitSeconds, std::stop_token stop = {});
/** The objective and memory of `choice` (checks sizes; throws std::invalid_argument when they mismatch). */
double shardingObjective(const ShardingProblem& problem, const std::vector<int>& choice);

} // namespace shardscape
