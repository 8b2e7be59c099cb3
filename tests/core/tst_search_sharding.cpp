// SPDX-License-Identifier: MIT
// The intra-op sharding solver and automatic layer construction.
//
// Sharding: on one transformer block the solvers must rediscover Megatron-LM's tensor-parallel plan from
// shapes and costs alone (q/k/v and up/gate column-parallel, o/down row-parallel, attention by heads, two
// all-reduces forward and two backward), the DP and the ILP must agree, memory limits and partition
// constraints must bind, and on tiny random problems both must match brute force.
//
// Layers: Alpa's clustering on GPT-2 must cut no worse than the module-based layers while meeting the
// FLOP bound, and stay fast on a long chain.
#include "test_helpers.h"

#include "shardscape/hardware/cluster.h"
#include "shardscape/model/layer_construction.h"
#include "shardscape/model/layers.h"
#include "shardscape/model/model_source.h"
#include "shardscape/search/sharding_solver.h"
#include "shardscape/support/error.h"
#include "shardscape/support/strings.h"

#include <QElapsedTimer>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <limits>
#include <random>
#include <unistd.h>

using namespace shardscape;

using shardscape::test::inputErrorOf;
using shardscape::test::writeFile;

namespace {

constexpr double kSameObjective = 1e-6; // relative
constexpr double kIlpSeconds = 20; // far above what these problems take; a safety net only
#if defined(__OPTIMIZE__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
constexpr qint64 kChainBudgetMs = 50;
#else
constexpr qint64 kChainBudgetMs = 1000; // unoptimised or instrumented builds
#endif

const CostSource& h100Costs()
{
    static const auto source = makeDatasheetCostSource(loadCluster("h100-sxm", 1, 8), CostParams {});
    return *source;
}

/** A model graph and the ops of its first transformer block. */
struct Block
{
    ModelGraph graph;
    std::vector<OpId> ops;
};

Block firstBlock(const std::string& model, std::int64_t batch, std::int64_t seq)
{
    BuildOptions options;
    options.batch = batch;
    options.seq_len = seq;
    Block block {loadModel(model, options), {}};
    for (const auto& layer : layersByModule(block.graph))
        if (layer.kind == LayerKind::Block) {
            block.ops = layer.ops;
            break;
        }
    return block;
}

/** What the test knows of Megatron's plan: op module suffix -> strategy. The solver never sees it
    (except to measure the memory of that plan for the gpt2 budget below). */
const std::vector<std::pair<std::string, ShardStrategy>>& megatronRoles()
{
    static const std::vector<std::pair<std::string, ShardStrategy>> roles {
        {"attn.c_attn", ShardStrategy::Column}, {"q_proj", ShardStrategy::Column},
        {"k_proj", ShardStrategy::Column},      {"v_proj", ShardStrategy::Column},
        {"mlp.c_fc", ShardStrategy::Column},    {"up_proj", ShardStrategy::Column},
        {"gate_proj", ShardStrategy::Column},   {"attn.c_proj", ShardStrategy::Row},
        {"o_proj", ShardStrategy::Row},         {"mlp.c_proj", ShardStrategy::Row},
        {"down_proj", ShardStrategy::Row},      {"attn.core", ShardStrategy::Heads},
    };
    return roles;
}

PartitionConstraints megatronConstraints()
{
    PartitionConstraints constraints;
    for (const auto& [module, strategy] : megatronRoles())
        constraints.rules.push_back({module, {}, {strategy}, "test"});
    return constraints;
}

int replicatedOps(const ShardingPlan& plan)
{
    return static_cast<int>(std::count_if(plan.ops.begin(), plan.ops.end(), [](const OpSharding& op) {
        return op.strategy == ShardStrategy::Replicate;
    }));
}

bool sameObjective(double a, double b)
{
    return std::fabs(a - b) <= kSameObjective * std::max(std::fabs(a), std::fabs(b));
}

QString describe(const ModelGraph& graph, const ShardingPlan& plan)
{
    QString text = QString::fromStdString(
        cat(plan.solver, " ", plan.status, " ", plan.total_time_s * 1e6, " us, ", plan.memory_bytes / 1e6, " MB:"));
    for (const auto& op : plan.ops)
        text += QString::fromStdString(cat(" ", graph.op(op.op).module, "=", strategyName(op.strategy)));
    return text;
}

/** Solves `problem` by trying every combination (tiny problems only). */
ShardingSolution bruteForce(const ShardingProblem& problem)
{
    ShardingSolution best;
    best.objective = std::numeric_limits<double>::infinity();
    std::vector<int> choice(problem.nodes.size(), 0);
    const std::function<void(std::size_t, std::int64_t)> visit = [&](std::size_t v, std::int64_t memory) {
        if (memory > problem.memory_limit)
            return;
        if (v == problem.nodes.size()) {
            const double objective = shardingObjective(problem, choice);
            if (objective < best.objective) {
                best.objective = objective;
                best.choice = choice;
                best.memory = memory;
            }
            return;
        }
        for (std::size_t i = 0; i < problem.nodes[v].time_s.size(); ++i) {
            choice[v] = static_cast<int>(i);
            visit(v + 1, memory + problem.nodes[v].memory[i]);
        }
    };
    visit(0, 0);
    best.status = best.choice.empty() ? "infeasible" : "optimal";
    return best;
}

/** Runs `call` with the process's stdout redirected to a temporary file; returns what was printed. */
template<typename Call> std::string capturedStdout(Call&& call)
{
    std::fflush(stdout);
    FILE* sink = std::tmpfile();
    const int saved = dup(fileno(stdout));
    dup2(fileno(sink), fileno(stdout));
    call();
    std::fflush(stdout);
    dup2(saved, fileno(stdout));
    close(saved);
    std::string text;
    std::rewind(sink);
    for (int c = std::fgetc(sink); c != EOF; c = std::fgetc(sink))
        text.push_back(static_cast<char>(c));
    std::fclose(sink);
    return text;
}

/** A chain of `length` identical elementwise ops: op_i reads t_i and writes t_{i+1}. */
ModelGraph chainGraph(int length)
{
    ModelGraph graph;
    graph.name = "chain";
    graph.seq_len = 16;
    graph.reserve(static_cast<std::size_t>(length) + 1, static_cast<std::size_t>(length));
    TensorId previous = graph.addTensor({"t0", {1, 16, 64}, DType::BF16, false, false});
    for (int i = 0; i < length; ++i) {
        const TensorId next = graph.addTensor({cat("t", i + 1), {1, 16, 64}, DType::BF16, false, false});
        Op op;
        op.name = cat("op", i);
        op.module = cat("chain.", i);
        op.kind = OpKind::Elementwise;
        op.inputs = {previous};
        op.outputs = {next};
        op.flops_fwd = 1e6;
        graph.addOp(std::move(op));
        previous = next;
    }
    return graph;
}

} // namespace

class TestSearchSharding : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void strategyNames()
    {
        for (int i = 0; i < kShardStrategyCount; ++i) {
            const auto strategy = static_cast<ShardStrategy>(i);
            QCOMPARE(parseShardStrategy(strategyName(strategy)), std::optional<ShardStrategy>(strategy));
        }
        QVERIFY(!parseShardStrategy("vocab"));
    }

    void rediscoversMegatron_data()
    {
        QTest::addColumn<QString>("model");
        QTest::addColumn<int>("tp");
        QTest::addColumn<int>("batch");
        QTest::addColumn<int>("seq");
        QTest::addColumn<bool>("boundedByMegatronMemory");
        // Llama 2 7B: 32 heads on a full H100 node, enough memory for anything.
        QTest::newRow("llama2-7b tp8") << "llama2-7b" << 8 << 1 << 2048 << false;
        // GPT-2 has 12 heads, so tp=8 cannot split its attention (nor can Megatron): tp=4. Its 768-wide
        // GEMMs are so short that every op runs near the 4 us kernel floor, so on this cost model a
        // replicated op is as fast as a split one and all-reduces only cost: with memory to spare the
        // solver (rightly) replicates. Megatron's plan is the fastest only once weights must be split:
        // the test gives 15% more memory than that plan needs (from about 5% to 20% it is the optimum).
        QTest::newRow("gpt2 tp4") << "gpt2" << 4 << 1 << 512 << true;
    }

    void rediscoversMegatron()
    {
        QFETCH(QString, model);
        QFETCH(int, tp);
        QFETCH(int, batch);
        QFETCH(int, seq);
        QFETCH(bool, boundedByMegatronMemory);
        const Block block = firstBlock(model.toStdString(), batch, seq);
        QVERIFY(!block.ops.empty());

        ShardingOptions options;
        options.tp = tp;
        options.time_limit_s = kIlpSeconds;
        options.memory_granularity = 1e5;
        if (boundedByMegatronMemory) {
            ShardingOptions megatron = options;
            megatron.constraints = megatronConstraints();
            const ShardingPlan reference = solveSharding(block.graph, block.ops, h100Costs(), megatron);
            QVERIFY(reference.feasible);
            options.memory_limit_bytes = 1.15 * reference.memory_bytes;
        }

        std::vector<ShardingPlan> plans;
        for (const std::string solver : {"dp", "ilp"}) {
            options.solver = solver;
            const ShardingPlan plan = solveSharding(block.graph, block.ops, h100Costs(), options);
            QVERIFY2(plan.feasible, qPrintable(describe(block.graph, plan)));
            QCOMPARE(plan.status, std::string("optimal"));
            QCOMPARE(plan.ops.size(), block.ops.size());
            int matched = 0;
            for (const auto& op : plan.ops) {
                const std::string& module = block.graph.op(op.op).module;
                for (const auto& [suffix, strategy] : megatronRoles())
                    if (endsWith(module, suffix)) {
                        ++matched;
                        QVERIFY2(op.strategy == strategy,
                                 qPrintable(QString::fromStdString(cat(module, ": ", strategyName(op.strategy),
                                                                       ", Megatron uses ", strategyName(strategy)))
                                            + "\n" + describe(block.graph, plan)));
                    }
            }
            QCOMPARE(matched, model == "gpt2" ? 5 : 8);
            QVERIFY2(plan.count(Collective::AllReduce, false) == 2, qPrintable(describe(block.graph, plan)));
            QCOMPARE(plan.count(Collective::AllReduce, true), 2);
            QCOMPARE(plan.count(Collective::AllGather, false) + plan.count(Collective::ReduceScatter, false)
                         + plan.count(Collective::AllToAll, false),
                     0);
            QVERIFY(plan.memory_bytes <= options.memory_limit_bytes);
            QVERIFY(std::fabs(plan.total_time_s - (plan.compute_s + plan.comm_s)) <= 1e-12 * plan.total_time_s);
            plans.push_back(plan);
        }
        QVERIFY2(sameObjective(plans[0].total_time_s, plans[1].total_time_s),
                 qPrintable(describe(block.graph, plans[0]) + "\n" + describe(block.graph, plans[1])));
    }

    void unfusedAttentionGemmsStreamTheScores()
    {
        // GPT-2 small with eager attention at micro-batch 2, sequence 1024: QK^T writes 2 x 12 x 1024^2 scores and
        // PV reads them back. With head_dim 64 that traffic bounds both GEMMs on an H100: each streams q (or v),
        // k (or its output) and the scores, (2 b s h + b a s^2) x 2 bytes, once forward and twice in backward,
        // split by the heads under TP 2.
        QTemporaryDir dir;
        const std::string config = dir.filePath("config.json").toStdString();
        writeFile(config, R"({"model_type": "gpt2", "n_embd": 768, "n_layer": 2, "n_head": 12, "n_positions": 1024,
                              "vocab_size": 50257, "_attn_implementation": "eager"})");
        constexpr double b = 2, s = 1024, h = 768, a = 12;
        const Block block = firstBlock(config, 2, 1024);
        ShardingOptions options;
        options.tp = 2;
        options.time_limit_s = kIlpSeconds;
        const ShardingPlan plan = solveSharding(block.graph, block.ops, h100Costs(), options);
        QVERIFY(plan.feasible);
        int checked = 0;
        for (const auto& op : plan.ops) {
            const OpKind kind = block.graph.op(op.op).kind;
            if (kind != OpKind::AttentionScore && kind != OpKind::AttentionContext)
                continue;
            const double share = op.strategy == ShardStrategy::Replicate ? 1.0 : 0.5;
            const double bytes = (2 * b * s * h + b * a * s * s) * 2 * share;
            const double expected = h100Costs().memoryTime(bytes) + h100Costs().memoryTime(2 * bytes);
            QVERIFY2(
                std::fabs(op.compute_s - expected) <= 1e-9 * expected,
                qPrintable(QString("%1: %2 s, expected %3 s").arg(op.name.c_str()).arg(op.compute_s).arg(expected)));
            ++checked;
        }
        QCOMPARE(checked, 2);
    }

    void tightMemoryForcesMoreSharding_data()
    {
        QTest::addColumn<double>("granularity");
        QTest::newRow("1 MB steps") << 1e6;
        QTest::newRow("exact bytes") << 0.0;
    }

    void tightMemoryForcesMoreSharding()
    {
        QFETCH(double, granularity);
        const Block block = firstBlock("llama2-7b", 1, 2048);
        ShardingOptions options;
        options.tp = 8;
        options.memory_granularity = granularity;
        options.time_limit_s = kIlpSeconds;
        const ShardingPlan free = solveSharding(block.graph, block.ops, h100Costs(), options);
        QVERIFY(free.feasible);

        options.memory_limit_bytes = 0.9 * free.memory_bytes;
        std::vector<ShardingPlan> plans;
        for (const std::string solver : {"dp", "ilp"}) {
            options.solver = solver;
            const ShardingPlan plan = solveSharding(block.graph, block.ops, h100Costs(), options);
            QVERIFY2(plan.feasible, qPrintable(describe(block.graph, plan)));
            QCOMPARE(plan.status, std::string("optimal"));
            QVERIFY(plan.memory_bytes <= options.memory_limit_bytes);
            QVERIFY2(replicatedOps(plan) < replicatedOps(free),
                     qPrintable(describe(block.graph, free) + "\n" + describe(block.graph, plan)));
            QVERIFY(plan.total_time_s >= free.total_time_s);
            plans.push_back(plan);
        }
        QVERIFY(sameObjective(plans[0].total_time_s, plans[1].total_time_s));
    }

    void impossibleMemoryIsInfeasible()
    {
        const Block block = firstBlock("llama2-7b", 1, 2048);
        ShardingOptions options;
        options.tp = 8;
        options.time_limit_s = kIlpSeconds;
        options.memory_limit_bytes = 1e6;
        for (const std::string solver : {"dp", "ilp"}) {
            options.solver = solver;
            const ShardingPlan plan = solveSharding(block.graph, block.ops, h100Costs(), options);
            QVERIFY(!plan.feasible);
            QCOMPARE(plan.status, std::string("infeasible"));
            QVERIFY(plan.ops.empty());
            QVERIFY2(plan.reason.find("fits 1.00 MB") != std::string::npos, plan.reason.c_str());
        }
    }

    void constraintsAreHonoured()
    {
        const Block block = firstBlock("llama2-7b", 1, 2048);
        ShardingOptions options;
        options.tp = 8;
        options.time_limit_s = kIlpSeconds;
        const ShardingPlan free = solveSharding(block.graph, block.ops, h100Costs(), options);

        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const std::string path = dir.path().toStdString() + "/no-column-mlp.json";
        writeFile(path, R"({"schema": "shardscape.partition_constraints/1",
                            "constraints": [{"module": "mlp", "allowed": ["replicate", "batch", "row"]},
                                            {"op": "model.layers.0.self_attn.o_proj", "allowed": ["row"]}]})");
        options.constraints = loadPartitionConstraints(path);
        QCOMPARE(options.constraints.rules.size(), std::size_t(2));
        std::vector<ShardingPlan> plans;
        for (const std::string solver : {"dp", "ilp"}) {
            options.solver = solver;
            const ShardingPlan plan = solveSharding(block.graph, block.ops, h100Costs(), options);
            QVERIFY2(plan.feasible, qPrintable(describe(block.graph, plan)));
            for (const auto& op : plan.ops) {
                const std::string& module = block.graph.op(op.op).module;
                if (module.find(".mlp.") != std::string::npos)
                    QVERIFY2(op.strategy != ShardStrategy::Column, module.c_str());
                if (endsWith(module, "o_proj"))
                    QVERIFY(op.strategy == ShardStrategy::Row);
            }
            QVERIFY(plan.total_time_s > free.total_time_s);
            plans.push_back(plan);
        }
        QVERIFY(sameObjective(plans[0].total_time_s, plans[1].total_time_s));

        // A constraint that leaves an op nothing: infeasible, naming the op.
        options.constraints.rules = {{"", "model.layers.0.input_layernorm", {ShardStrategy::Column}, "test"}};
        const ShardingPlan none = solveSharding(block.graph, block.ops, h100Costs(), options);
        QVERIFY(!none.feasible);
        QVERIFY(none.reason.find("input_layernorm") != std::string::npos);
    }

    void constraintFilesAreValidated_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("expected");
        QTest::newRow("unknown strategy") << R"({"constraints": [{"module": "mlp", "allowed": ["column"]},
                                                  {"module": "attn", "allowed": ["heads", "vocab"]}]})"
                                          << "constraints[1].allowed[1]: unknown strategy 'vocab'";
        QTest::newRow("both module and op") << R"({"constraints": [{"module": "mlp", "op": "x", "allowed": ["row"]}]})"
                                            << "constraints[0]: give exactly one";
        QTest::newRow("neither") << R"({"constraints": [{"allowed": ["row"]}]})"
                                 << "constraints[0]: give exactly one";
        QTest::newRow("empty allowed") << R"({"constraints": [{"op": "x", "allowed": []}]})"
                                       << "constraints[0].allowed: the list is empty";
        QTest::newRow("repeated") << R"({"constraints": [{"op": "x", "allowed": ["row", "row"]}]})"
                                  << "listed twice";
        QTest::newRow("not a name") << R"({"constraints": [{"op": "x", "allowed": [3]}]})"
                                    << "constraints[0].allowed[0]: expected a strategy name";
        QTest::newRow("unknown key") << R"({"constraints": [{"op": "x", "allowed": ["row"], "alowed": 1}]})"
                                     << "alowed";
        QTest::newRow("wrong schema") << R"({"schema": "nnscaler", "constraints": []})"
                                      << "unknown schema";
        QTest::newRow("no list") << R"({"rules": []})"
                                 << "constraints";
        QTest::newRow("not json") << R"({"constraints": [)"
                                  << ".json:";
    }

    void constraintFilesAreValidated()
    {
        QFETCH(QString, text);
        QFETCH(QString, expected);
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const std::string path = dir.path().toStdString() + "/constraints.json";
        writeFile(path, text.toStdString());
        const std::string message = inputErrorOf([&] { loadPartitionConstraints(path); });
        QVERIFY2(message.find(expected.toStdString()) != std::string::npos, message.c_str());
        QVERIFY2(message.find("constraints.json") != std::string::npos, message.c_str());
    }

    void badOptionsAreInputErrors()
    {
        const Block block = firstBlock("gpt2", 1, 128);
        ShardingOptions options;
        options.solver = "greedy";
        QVERIFY(inputErrorOf([&] { solveSharding(block.graph, block.ops, h100Costs(), options); }).find("greedy")
                != std::string::npos);
        options = {};
        options.tp = 0;
        QVERIFY(inputErrorOf([&] { solveSharding(block.graph, block.ops, h100Costs(), options); }).find("tp")
                != std::string::npos);
        options = {};
        QVERIFY(inputErrorOf([&] {
                    solveSharding(block.graph, {block.ops[0], block.ops[0]}, h100Costs(), options);
                }).find("twice")
                != std::string::npos);
        // tp = 1: everything replicated, no communication.
        const ShardingPlan single = solveSharding(block.graph, block.ops, h100Costs(), options);
        QVERIFY(single.feasible);
        QCOMPARE(replicatedOps(single), static_cast<int>(block.ops.size()));
        QVERIFY(single.collectives.empty());
    }

    void ilpPrintsNothing()
    {
        // A binding memory limit makes CBC branch and cut (its clique cut generator prints by default).
        const Block block = firstBlock("llama2-7b", 1, 2048);
        ShardingOptions options;
        options.tp = 8;
        options.time_limit_s = kIlpSeconds;
        const double free = solveSharding(block.graph, block.ops, h100Costs(), options).memory_bytes;
        options.solver = "ilp";
        for (const double share : {0.95, 0.5}) {
            options.memory_limit_bytes = share * free;
            ShardingPlan plan;
            const std::string printed
                = capturedStdout([&] { plan = solveSharding(block.graph, block.ops, h100Costs(), options); });
            QCOMPARE(plan.feasible, share > 0.9);
            QVERIFY2(printed.empty(), printed.c_str());
        }
    }

    void randomProblemsMatchBruteForce()
    {
        std::mt19937 random(20240611);
        std::uniform_real_distribution<double> time(0.0, 1e-3);
        std::uniform_int_distribution<int> memory(0, 9);
        int feasible = 0, infeasible = 0;
        const std::string printed = capturedStdout([&] {
            for (int trial = 0; trial < 150; ++trial) {
                ShardingProblem problem;
                const int n = 2 + trial % 5; // 2..6 nodes
                for (int v = 0; v < n; ++v) {
                    ShardingNode node;
                    const int choices = 2 + static_cast<int>(random() % 2);
                    for (int i = 0; i < choices; ++i) {
                        node.time_s.push_back(time(random));
                        node.memory.push_back(memory(random));
                    }
                    problem.nodes.push_back(node);
                }
                for (int u = 0; u < n; ++u)
                    for (int v = u + 1; v < n; ++v)
                        if (random() % 2 == 0) {
                            ShardingEdge edge {u, v, {}};
                            for (std::size_t k = 0; k < problem.nodes[static_cast<std::size_t>(u)].time_s.size()
                                     * problem.nodes[static_cast<std::size_t>(v)].time_s.size();
                                 ++k)
                                edge.cost.push_back(random() % 3 == 0 ? 0.0 : time(random));
                            problem.edges.push_back(std::move(edge));
                        }
                if (trial % 3 != 0)
                    problem.memory_limit = static_cast<std::int64_t>(random() % static_cast<unsigned>(5 * n));

                const ShardingSolution expected = bruteForce(problem);
                const ShardingSolution dp = solveShardingDp(problem, 1u << 20);
                const ShardingSolution ilp = solveShardingIlp(problem, kIlpSeconds);
                const QString where = QString("trial %1").arg(trial);
                QCOMPARE(dp.status, expected.status);
                QCOMPARE(ilp.status, expected.status);
                if (expected.choice.empty()) {
                    ++infeasible;
                    continue;
                }
                ++feasible;
                QVERIFY2(sameObjective(dp.objective, expected.objective), qPrintable(where));
                QVERIFY2(sameObjective(ilp.objective, expected.objective), qPrintable(where));
                QVERIFY2(dp.memory <= problem.memory_limit && ilp.memory <= problem.memory_limit, qPrintable(where));
            }
        });
        QVERIFY2(printed.empty(), printed.c_str());
        QVERIFY(feasible > 50);
        QVERIFY(infeasible > 5);
    }

    void stateCapWarns()
    {
        const Block block = firstBlock("llama2-7b", 1, 2048);
        ShardingOptions options;
        options.tp = 8;
        options.max_states = 4;
        const ShardingPlan plan = solveSharding(block.graph, block.ops, h100Costs(), options);
        QVERIFY(plan.feasible);
        QCOMPARE(plan.status, std::string("state cap, best found"));
        QCOMPARE(plan.warnings.size(), std::size_t(2));
        QVERIFY(plan.warnings[1].find("model.layers.0.") != std::string::npos);
    }

    void cancelStopsAtOnce()
    {
        const Block block = firstBlock("llama2-7b", 1, 2048);
        std::stop_source source;
        source.request_stop();
        ShardingOptions options;
        options.tp = 8;
        for (const std::string solver : {"dp", "ilp"}) {
            options.solver = solver;
            const ShardingPlan plan = solveSharding(block.graph, block.ops, h100Costs(), options, source.get_token());
            QCOMPARE(plan.status, std::string("cancelled"));
            QVERIFY(!plan.feasible);
        }
    }

    // --- automatic layer construction ---------------------------------------------------------------

    void gpt2LayersBalanceAndCut()
    {
        const ModelGraph graph = loadModel("gpt2", BuildOptions {});
        const auto byModule = layersByModule(graph);
        QCOMPARE(byModule.size(), std::size_t(14));
        const LayerConstruction built = constructLayersDetailed(graph, 14);
        QCOMPARE(built.layers.size(), std::size_t(14));

        // Every op once, in topological order.
        std::vector<OpId> ops;
        for (const auto& layer : built.layers) {
            QVERIFY(!layer.ops.empty());
            ops.insert(ops.end(), layer.ops.begin(), layer.ops.end());
        }
        QCOMPARE(ops, graph.topologicalOrder());

        double total = 0, heaviestOp = 0, params = 0;
        for (const auto& op : graph.ops()) {
            total += op.flops_fwd + op.flops_bwd_input + op.flops_bwd_weight;
            heaviestOp = std::max(heaviestOp, op.flops_fwd + op.flops_bwd_input + op.flops_bwd_weight);
        }
        const double average = total / 14;
        // The LM head alone is over 1.5x the average layer: eps is doubled until it fits, and no further.
        QVERIFY(built.eps >= 0.5);
        if (built.eps > 0.5)
            QVERIFY(heaviestOp > (1 + built.eps / 2) * average);
        double maxInput = 0, maxInputByModule = 0;
        for (const auto& layer : built.layers) {
            QVERIFY2(layer.flops_fwd + layer.flops_bwd <= (1 + built.eps) * average * (1 + 1e-9), layer.name.c_str());
            maxInput = std::max(maxInput, layer.input_bytes);
            params += layer.params;
        }
        for (const auto& layer : byModule)
            maxInputByModule = std::max(maxInputByModule, layer.input_bytes);
        QCOMPARE(maxInput, built.max_input_bytes);
        QVERIFY(maxInput <= maxInputByModule);
        QCOMPARE(params, graph.paramCount());
        QCOMPARE(built.layers.front().kind, LayerKind::Embedding);
        QCOMPARE(built.layers.back().kind, LayerKind::Head);

        // A layer count that the balance bound allows without relaxing: eps stays as asked.
        const LayerConstruction two = constructLayersDetailed(graph, 2, 1.0);
        QCOMPARE(two.eps, 1.0);
    }

    void chainLayersAreFastAndEven()
    {
        const ModelGraph graph = chainGraph(1000);
        QElapsedTimer timer;
        timer.start();
        const LayerConstruction built = constructLayersDetailed(graph, 10);
        const auto elapsedMs = timer.elapsed();
        QVERIFY2(elapsedMs < kChainBudgetMs, qPrintable(QString("%1 ms").arg(elapsedMs)));
        QCOMPARE(built.layers.size(), std::size_t(10));
        QCOMPARE(built.eps, 0.5);
        // Every cut receives one tensor; the variance tie-break makes the layers equal.
        QCOMPARE(built.max_input_bytes, 16.0 * 64 * 2);
        for (const auto& layer : built.layers)
            QCOMPARE(layer.ops.size(), std::size_t(100));
        QCOMPARE(built.layers[3].name, std::string("chain#4"));
    }

    void layerNumOutOfRange()
    {
        const ModelGraph graph = chainGraph(5);
        QVERIFY(inputErrorOf([&] { constructLayers(graph, 0); }).find("1..5") != std::string::npos);
        QVERIFY(inputErrorOf([&] { constructLayers(graph, 6); }).find("got 6") != std::string::npos);
        QVERIFY(inputErrorOf([&] { constructLayers(graph, 2, -1); }).find("eps") != std::string::npos);
        QCOMPARE(constructLayers(graph, 5).size(), std::size_t(5));
        QCOMPARE(constructLayers(graph, 1).front().ops.size(), std::size_t(5));
    }
};

QTEST_APPLESS_MAIN(TestSearchSharding)
#include "tst_search_sharding.moc"
