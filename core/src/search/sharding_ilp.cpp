// SPDX-License-Identifier: MIT
// Alpa's intra-op ILP (alpa/shard_parallel/auto_sharding.py, paper section 4) solved with COIN-OR CBC:
// one-hot binaries s_v per node, edge variables e_uv linearising s_u^T R_uv s_v, and the memory constraint.
#include "shardscape/search/sharding_solver.h"

#include "shardscape/support/strings.h"

// CbcCutGenerator.hpp needs CbcModel.hpp (and CbcNode) declared first.
#include <CbcModel.hpp>

#include <CbcCutGenerator.hpp>
#include <CbcEventHandler.hpp>
#include <CbcHeuristic.hpp>
#include <CbcHeuristicFPump.hpp>
#include <CglClique.hpp>
#include <CglGomory.hpp>
#include <CglKnapsackCover.hpp>
#include <CglProbing.hpp>
#include <CoinPackedMatrix.hpp>
#include <OsiClpSolverInterface.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <mutex>

namespace shardscape {

namespace {

// CBC's tolerances are absolute (1e-7 and the like): objectives in microseconds keep them meaningful.
constexpr double kObjectiveScale = 1e6;

/** Stops branch-and-bound when the caller's stop_token fires. */
class StopHandler final : public CbcEventHandler
{
public:
    explicit StopHandler(std::stop_token token)
        : m_stop(std::move(token))
    {
    }
    CbcAction event(CbcEvent) override { return m_stop.stop_requested() ? stop : noAction; }
    CbcEventHandler* clone() const override { return new StopHandler(*this); }

private:
    std::stop_token m_stop;
};

/** CBC does not promise that models in different threads of one process are independent (its cut
    generators and message tables were written for one solve per process): one solve at a time. */
std::mutex& cbcMutex()
{
    static std::mutex mutex;
    return mutex;
}

/** Column indices of the model: one binary per (node, choice), one continuous per (edge, choice pair). */
struct Columns
{
    std::vector<int> nodeStart; ///< first column of each node
    std::vector<int> edgeStart; ///< first column of each edge
    int count = 0;
};

} // namespace

ShardingSolution solveShardingIlp(const ShardingProblem& problem, double timeLimitSeconds, std::stop_token stop)
{
    ShardingSolution solution;
    const auto n = problem.nodes.size();
    if (n == 0) {
        solution.status = "optimal";
        return solution;
    }
    for (const auto& e : problem.edges)
        if (e.from < 0 || e.from >= e.to || static_cast<std::size_t>(e.to) >= n)
            throw std::invalid_argument(cat("sharding problem: edge ", e.from, " -> ", e.to, " is not forward"));
    const auto choicesOf
        = [&](int v) { return static_cast<int>(problem.nodes[static_cast<std::size_t>(v)].time_s.size()); };

    // The memory lower bound settles hopeless limits without building the model.
    std::int64_t memoryMin = 0;
    for (const auto& node : problem.nodes) {
        if (node.time_s.empty() || node.time_s.size() != node.memory.size())
            throw std::invalid_argument("sharding problem: a node has no choices or mismatched sizes");
        memoryMin += *std::min_element(node.memory.begin(), node.memory.end());
    }
    if (memoryMin > problem.memory_limit) {
        solution.status = "infeasible";
        return solution;
    }

    Columns cols;
    std::vector<double> objective;
    for (std::size_t v = 0; v < n; ++v) {
        cols.nodeStart.push_back(cols.count);
        for (const double t : problem.nodes[v].time_s)
            objective.push_back(t * kObjectiveScale);
        cols.count += choicesOf(static_cast<int>(v));
    }
    for (const auto& e : problem.edges) {
        cols.edgeStart.push_back(cols.count);
        for (const double c : e.cost)
            objective.push_back(c * kObjectiveScale);
        cols.count += static_cast<int>(e.cost.size());
    }

    CoinPackedMatrix matrix(false, 0, 0);
    matrix.setDimensions(0, cols.count);
    std::vector<double> rowLower;
    std::vector<double> rowUpper;
    const auto addRow = [&](const std::vector<int>& index, const std::vector<double>& value, double lo, double hi) {
        matrix.appendRow(static_cast<int>(index.size()), index.data(), value.data());
        rowLower.push_back(lo);
        rowUpper.push_back(hi);
    };
    std::vector<int> index;
    std::vector<double> value;
    // One choice per node.
    for (std::size_t v = 0; v < n; ++v) {
        index.clear();
        value.clear();
        for (int i = 0; i < choicesOf(static_cast<int>(v)); ++i) {
            index.push_back(cols.nodeStart[v] + i);
            value.push_back(1);
        }
        addRow(index, value, 1, 1);
    }
    // Edge variables: rows sum to the source's one-hot, columns to the target's. With both marginals
    // one-hot the only feasible point is the chosen pair, so the edge variables can stay continuous.
    for (std::size_t e = 0; e < problem.edges.size(); ++e) {
        const auto& edge = problem.edges[e];
        const int rows = choicesOf(edge.from);
        const int columns = choicesOf(edge.to);
        for (int i = 0; i < rows; ++i) {
            index.assign(1, cols.nodeStart[static_cast<std::size_t>(edge.from)] + i);
            value.assign(1, -1);
            for (int j = 0; j < columns; ++j) {
                index.push_back(cols.edgeStart[e] + i * columns + j);
                value.push_back(1);
            }
            addRow(index, value, 0, 0);
        }
        for (int j = 0; j < columns; ++j) {
            index.assign(1, cols.nodeStart[static_cast<std::size_t>(edge.to)] + j);
            value.assign(1, -1);
            for (int i = 0; i < rows; ++i) {
                index.push_back(cols.edgeStart[e] + i * columns + j);
                value.push_back(1);
            }
            addRow(index, value, 0, 0);
        }
    }
    // Memory: the per-choice memories are integers (granularity units), so any violation is at least 1.
    std::int64_t memoryMax = 0;
    for (const auto& node : problem.nodes)
        memoryMax += *std::max_element(node.memory.begin(), node.memory.end());
    if (memoryMax > problem.memory_limit) {
        index.clear();
        value.clear();
        for (std::size_t v = 0; v < n; ++v)
            for (int i = 0; i < choicesOf(static_cast<int>(v)); ++i) {
                index.push_back(cols.nodeStart[v] + i);
                value.push_back(static_cast<double>(problem.nodes[v].memory[static_cast<std::size_t>(i)]));
            }
        addRow(index, value, -COIN_DBL_MAX, static_cast<double>(problem.memory_limit));
    }

    std::vector<double> columnLower(static_cast<std::size_t>(cols.count), 0.0);
    std::vector<double> columnUpper(static_cast<std::size_t>(cols.count), 1.0);
    const std::lock_guard lock(cbcMutex());
    OsiClpSolverInterface solver;
    solver.messageHandler()->setLogLevel(0);
    solver.getModelPtr()->messageHandler()->setLogLevel(0);
    solver.setHintParam(OsiDoReducePrint, true, OsiHintTry);
    solver.loadProblem(matrix, columnLower.data(), columnUpper.data(), objective.data(), rowLower.data(),
                       rowUpper.data());
    const int nodeColumns = cols.edgeStart.empty() ? cols.count : cols.edgeStart.front();
    for (int c = 0; c < nodeColumns; ++c)
        solver.setInteger(c);

    CbcModel model(solver);
    model.setLogLevel(0);
    model.messageHandler()->setLogLevel(0);
    model.solver()->messageHandler()->setLogLevel(0);
    model.setUseElapsedTime(true); // the limit is wall-clock seconds, not CPU seconds
    model.setMaximumSeconds(std::max(timeLimitSeconds, 0.01));
    model.setAllowableGap(1e-9);
    model.setAllowableFractionGap(1e-12);
    model.setAllowablePercentageGap(1e-10);
    CglProbing probing;
    probing.setUsingObjective(1);
    probing.setMaxPass(3);
    probing.setMaxProbe(100);
    probing.setMaxLook(50);
    model.addCutGenerator(&probing, -1, "Probing");
    CglGomory gomory;
    model.addCutGenerator(&gomory, -1, "Gomory");
    CglKnapsackCover knapsack;
    model.addCutGenerator(&knapsack, -1, "KnapsackCover");
    CglClique clique;
    clique.setStarCliqueReport(false); // both reports print to stdout
    clique.setRowCliqueReport(false);
    model.addCutGenerator(&clique, -1, "Clique");
    CbcRounding rounding(model);
    model.addHeuristic(&rounding);
    CbcHeuristicFPump pump(model);
    model.addHeuristic(&pump);
    for (int g = 0; g < model.numberCutGenerators(); ++g)
        model.cutGenerator(g)->setTiming(false);
    StopHandler handler(stop);
    model.passInEventHandler(&handler);

    model.branchAndBound();
    solution.states_explored = static_cast<std::uint64_t>(std::max(model.getNodeCount(), 0));

    const double* best = model.bestSolution();
    const bool stopped = stop.stop_requested();
    if (model.isProvenInfeasible() && !best)
        solution.status = "infeasible";
    else if (model.isProvenOptimal() && best)
        solution.status = "optimal";
    else if (stopped)
        solution.status = "cancelled";
    else if (model.isSecondsLimitReached())
        solution.status = best ? "time limit, best found" : "time limit, no solution";
    else if (!best)
        solution.status = "infeasible";
    else
        solution.status = "solver error";
    if (!best || solution.status == "cancelled")
        return solution;

    solution.choice.assign(n, 0);
    for (std::size_t v = 0; v < n; ++v) {
        int chosen = 0;
        double top = -1;
        for (int i = 0; i < choicesOf(static_cast<int>(v)); ++i)
            if (best[cols.nodeStart[v] + i] > top) {
                top = best[cols.nodeStart[v] + i];
                chosen = i;
            }
        solution.choice[v] = chosen;
        solution.memory += problem.nodes[v].memory[static_cast<std::size_t>(chosen)];
    }
    solution.objective = shardingObjective(problem, solution.choice);
    return solution;
}

} // namespace shardscape
