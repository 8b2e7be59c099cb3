// SPDX-License-Identifier: MIT
// The linearised-graph DP of nnScaler's SPMD solver (nnscaler/autodist/dp_solver.cpp): nodes are visited in
// a topological order; the state is the choice of every node whose output is still needed later (the
// "cut"), and each state keeps a Pareto list of (memory, time) so that the memory limit is exact.
#include "shardscape/search/sharding_solver.h"

#include "shardscape/support/strings.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <unordered_map>

namespace shardscape {

namespace {

/** A point of a state's Pareto list; `arena` indexes the step's back-pointers. */
struct Frontier
{
    std::int64_t memory = 0;
    double time = 0;
    std::int32_t arena = -1;
};

/** A candidate before the Pareto filter. */
struct Candidate
{
    std::int64_t memory = 0;
    double time = 0;
    std::int32_t parent = -1;
    std::int32_t choice = 0;
};

struct BackPointer
{
    std::int32_t parent = -1;
    std::int32_t choice = 0;
};

struct State
{
    std::string key; ///< one byte per cut node: the class of its choice
    std::vector<Frontier> frontier; ///< memory ascending, time strictly descending
};

void checkProblem(const ShardingProblem& problem)
{
    const auto n = static_cast<int>(problem.nodes.size());
    for (int v = 0; v < n; ++v) {
        const auto& node = problem.nodes[static_cast<std::size_t>(v)];
        if (node.time_s.empty() || node.time_s.size() != node.memory.size())
            throw std::invalid_argument(cat("sharding problem: node ", v, " has no choices or mismatched sizes"));
        if (node.time_s.size() > 255)
            throw std::invalid_argument(cat("sharding problem: node ", v, " has more than 255 choices"));
    }
    for (const auto& e : problem.edges) {
        if (e.from < 0 || e.to >= n || e.from >= e.to)
            throw std::invalid_argument(cat("sharding problem: edge ", e.from, " -> ", e.to, " is not forward"));
        const auto rows = problem.nodes[static_cast<std::size_t>(e.from)].time_s.size();
        const auto cols = problem.nodes[static_cast<std::size_t>(e.to)].time_s.size();
        if (e.cost.size() != rows * cols)
            throw std::invalid_argument(cat("sharding problem: edge ", e.from, " -> ", e.to, " has ", e.cost.size(),
                                            " costs for ", rows, " x ", cols, " choices"));
    }
}

/**
 * Choices of a node that look the same to every later node (equal rows in all its outgoing edges) share a
 * class; the state stores classes, so such choices merge into one state.
 */
void classify(const ShardingProblem& problem, const std::vector<std::vector<int>>& outEdges,
              std::vector<std::vector<std::uint8_t>>& classOf, std::vector<std::vector<int>>& representative)
{
    const std::size_t n = problem.nodes.size();
    classOf.assign(n, {});
    representative.assign(n, {});
    for (std::size_t u = 0; u < n; ++u) {
        const std::size_t choices = problem.nodes[u].time_s.size();
        std::vector<std::vector<double>> signature(choices);
        for (std::size_t i = 0; i < choices; ++i)
            for (const int e : outEdges[u]) {
                const auto& edge = problem.edges[static_cast<std::size_t>(e)];
                const std::size_t cols = problem.nodes[static_cast<std::size_t>(edge.to)].time_s.size();
                signature[i].insert(signature[i].end(), edge.cost.begin() + static_cast<std::ptrdiff_t>(i * cols),
                                    edge.cost.begin() + static_cast<std::ptrdiff_t>((i + 1) * cols));
            }
        classOf[u].resize(choices);
        for (std::size_t i = 0; i < choices; ++i) {
            std::size_t c = 0;
            while (c < representative[u].size()
                   && signature[static_cast<std::size_t>(representative[u][c])] != signature[i])
                ++c;
            if (c == representative[u].size())
                representative[u].push_back(static_cast<int>(i));
            classOf[u][i] = static_cast<std::uint8_t>(c);
        }
    }
}

/** Sorts candidates by (memory, time) and keeps the Pareto-optimal ones (first of equals wins). */
void paretoFilter(std::vector<Candidate>& candidates)
{
    std::stable_sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
        return a.memory != b.memory ? a.memory < b.memory : a.time < b.time;
    });
    std::size_t kept = 0;
    double best = std::numeric_limits<double>::infinity();
    for (const auto& c : candidates)
        if (c.time < best) {
            best = c.time;
            candidates[kept++] = c;
        }
    candidates.resize(kept);
}

} // namespace

ShardingSolution solveShardingDp(const ShardingProblem& problem, std::size_t maxStates, std::stop_token stop)
{
    checkProblem(problem);
    ShardingSolution solution;
    const auto n = static_cast<int>(problem.nodes.size());
    const auto& nodes = problem.nodes;
    if (n == 0) {
        solution.status = "optimal";
        return solution;
    }
    maxStates = std::max<std::size_t>(maxStates, 1);

    std::vector<std::vector<int>> inEdges(static_cast<std::size_t>(n));
    std::vector<std::vector<int>> outEdges(static_cast<std::size_t>(n));
    std::vector<int> lastUse(static_cast<std::size_t>(n), -1);
    for (std::size_t e = 0; e < problem.edges.size(); ++e) {
        const auto& edge = problem.edges[e];
        inEdges[static_cast<std::size_t>(edge.to)].push_back(static_cast<int>(e));
        outEdges[static_cast<std::size_t>(edge.from)].push_back(static_cast<int>(e));
        lastUse[static_cast<std::size_t>(edge.from)] = std::max(lastUse[static_cast<std::size_t>(edge.from)], edge.to);
    }
    std::vector<std::vector<std::uint8_t>> classOf;
    std::vector<std::vector<int>> representative;
    classify(problem, outEdges, classOf, representative);

    // Smallest memory the remaining nodes need: prunes entries that can no longer fit.
    std::vector<std::int64_t> memoryAfter(static_cast<std::size_t>(n) + 1, 0);
    for (int v = n - 1; v >= 0; --v) {
        const auto& m = nodes[static_cast<std::size_t>(v)].memory;
        memoryAfter[static_cast<std::size_t>(v)]
            = memoryAfter[static_cast<std::size_t>(v) + 1] + *std::min_element(m.begin(), m.end());
    }
    if (memoryAfter[0] > problem.memory_limit) {
        solution.status = "infeasible";
        return solution;
    }

    std::vector<State> states(1);
    states[0].frontier.push_back({0, 0.0, -1});
    std::vector<int> cut;
    std::vector<std::vector<BackPointer>> arena(static_cast<std::size_t>(n));
    bool capped = false;

    for (int k = 0; k < n; ++k) {
        if (stop.stop_requested()) {
            solution.status = "cancelled";
            return solution;
        }
        const auto& node = nodes[static_cast<std::size_t>(k)];
        const std::size_t choices = node.time_s.size();

        // Where each predecessor sits in the state key.
        struct Incoming
        {
            const ShardingEdge* edge;
            std::size_t position;
            int from;
        };
        std::vector<Incoming> incoming;
        for (const int e : inEdges[static_cast<std::size_t>(k)]) {
            const auto& edge = problem.edges[static_cast<std::size_t>(e)];
            const auto it = std::find(cut.begin(), cut.end(), edge.from);
            incoming.push_back({&edge, static_cast<std::size_t>(it - cut.begin()), edge.from});
        }
        std::vector<std::size_t> keep;
        std::vector<int> nextCut;
        for (std::size_t i = 0; i < cut.size(); ++i)
            if (lastUse[static_cast<std::size_t>(cut[i])] > k) {
                keep.push_back(i);
                nextCut.push_back(cut[i]);
            }
        const bool staysLive = lastUse[static_cast<std::size_t>(k)] > k;
        if (staysLive)
            nextCut.push_back(k);

        std::unordered_map<std::string, std::size_t> index;
        std::vector<std::string> nextKeys;
        std::vector<std::vector<Candidate>> candidates;
        const std::int64_t budget = problem.memory_limit - memoryAfter[static_cast<std::size_t>(k) + 1];
        std::string key;
        for (const auto& state : states) {
            key.clear();
            for (const auto i : keep)
                key.push_back(state.key[i]);
            for (std::size_t j = 0; j < choices; ++j) {
                double add = node.time_s[j];
                for (const auto& in : incoming) {
                    const auto cls = static_cast<std::uint8_t>(state.key[in.position]);
                    const auto from = static_cast<std::size_t>(representative[static_cast<std::size_t>(in.from)][cls]);
                    add += in.edge->cost[from * choices + j];
                }
                const std::int64_t memoryAdd = node.memory[j];
                std::string nextKey = key;
                if (staysLive)
                    nextKey.push_back(static_cast<char>(classOf[static_cast<std::size_t>(k)][j]));
                auto [it, inserted] = index.try_emplace(nextKey, nextKeys.size());
                if (inserted) {
                    nextKeys.push_back(std::move(nextKey));
                    candidates.emplace_back();
                }
                auto& bucket = candidates[it->second];
                for (const auto& entry : state.frontier) {
                    const std::int64_t memory = entry.memory + memoryAdd;
                    if (memory > budget)
                        break; // the frontier is sorted by memory
                    bucket.push_back({memory, entry.time + add, entry.arena, static_cast<std::int32_t>(j)});
                }
            }
        }

        std::vector<State> next;
        next.reserve(nextKeys.size());
        for (std::size_t s = 0; s < nextKeys.size(); ++s) {
            auto& bucket = candidates[s];
            if (bucket.empty())
                continue;
            paretoFilter(bucket);
            State state;
            state.key = std::move(nextKeys[s]);
            state.frontier.reserve(bucket.size());
            auto& backPointers = arena[static_cast<std::size_t>(k)];
            for (const auto& c : bucket) {
                state.frontier.push_back({c.memory, c.time, static_cast<std::int32_t>(backPointers.size())});
                backPointers.push_back({c.parent, c.choice});
            }
            next.push_back(std::move(state));
        }
        if (next.empty()) {
            solution.status = "infeasible";
            solution.states_explored += states.size();
            return solution;
        }
        if (next.size() > maxStates) {
            // Keep the states whose fastest entry is fastest; the result is then a heuristic.
            std::nth_element(
                next.begin(), next.begin() + static_cast<std::ptrdiff_t>(maxStates), next.end(),
                [](const State& a, const State& b) { return a.frontier.back().time < b.frontier.back().time; });
            if (!capped) {
                capped = true;
                solution.warnings.push_back(cat("DP state cap: ", next.size(), " cut states at node ", k, " (cap ",
                                                maxStates, "); kept the fastest, the plan may not be optimal"));
                std::vector<int> crowded = nextCut;
                std::stable_sort(crowded.begin(), crowded.end(), [&](int a, int b) {
                    return representative[static_cast<std::size_t>(a)].size()
                        > representative[static_cast<std::size_t>(b)].size();
                });
                crowded.resize(std::min<std::size_t>(crowded.size(), 10));
                solution.crowded_nodes = std::move(crowded);
            }
            next.resize(maxStates);
        }
        solution.states_explored += next.size();
        states = std::move(next);
        cut = std::move(nextCut);
    }

    // The cut is empty at the end: one state, whose fastest entry is the answer.
    const Frontier* best = nullptr;
    for (const auto& state : states)
        for (const auto& entry : state.frontier)
            if (!best || entry.time < best->time)
                best = &entry;
    solution.choice.assign(static_cast<std::size_t>(n), 0);
    std::int32_t at = best->arena;
    for (int k = n - 1; k >= 0; --k) {
        const auto& back = arena[static_cast<std::size_t>(k)][static_cast<std::size_t>(at)];
        solution.choice[static_cast<std::size_t>(k)] = back.choice;
        at = back.parent;
    }
    solution.objective = shardingObjective(problem, solution.choice);
    solution.memory = best->memory;
    solution.status = capped ? "state cap, best found" : "optimal";
    return solution;
}

double shardingObjective(const ShardingProblem& problem, const std::vector<int>& choice)
{
    if (choice.size() != problem.nodes.size())
        throw std::invalid_argument("sharding objective: one choice per node expected");
    double total = 0;
    for (std::size_t v = 0; v < choice.size(); ++v) {
        const auto& times = problem.nodes[v].time_s;
        if (choice[v] < 0 || static_cast<std::size_t>(choice[v]) >= times.size())
            throw std::invalid_argument(cat("sharding objective: choice ", choice[v], " of node ", v, " out of range"));
        total += times[static_cast<std::size_t>(choice[v])];
    }
    for (const auto& e : problem.edges) {
        const std::size_t cols = problem.nodes[static_cast<std::size_t>(e.to)].time_s.size();
        total += e.cost[static_cast<std::size_t>(choice[static_cast<std::size_t>(e.from)]) * cols
                        + static_cast<std::size_t>(choice[static_cast<std::size_t>(e.to)])];
    }
    return total;
}

} // namespace shardscape
