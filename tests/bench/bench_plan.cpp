// SPDX-License-Identifier: MIT
// Planner speed on the two reference problems, full search space, default planner config:
//   llama2-70b on 128 nodes x 8 h100-sxm, global batch 1024, seq 4096   (target: under 1 s on 2 cores)
//   llama3-405b on 1,024 nodes x 8 h100-sxm, global batch 2048, seq 4096 (target: under 5 s)
// usage: bench_plan [repetitions] [threads]   (threads 0 = all cores)
#include "shardscape/model/model_source.h"
#include "shardscape/search/planner.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

using namespace shardscape;

namespace {

class Silent final : public ProgressSink
{
public:
    void progress(const std::string&, std::uint64_t, std::uint64_t) override { }
    void log(const std::string&) override { }
};

void run(const char* model, int nodes, std::int64_t globalBatch, int repetitions, int threads)
{
    BuildOptions options;
    options.seq_len = 4096;
    Problem problem;
    problem.graph = std::make_shared<const ModelGraph>(loadModel(model, options));
    problem.cluster = loadCluster("h100-sxm", nodes, 8);
    problem.global_batch = globalBatch;
    PlannerConfig config;
    config.nproc = threads;
    Silent silent;
    std::vector<double> seconds;
    PlanResult last;
    for (int r = 0; r < repetitions; ++r) {
        const auto start = std::chrono::steady_clock::now();
        last = plan(problem, config, silent);
        seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    std::sort(seconds.begin(), seconds.end());
    const double median = seconds[seconds.size() / 2];
    std::printf("%s on %d x 8 h100-sxm, global batch %lld, seq 4096: median %.3f s (min %.3f, max %.3f) over %d runs\n",
                model, nodes, static_cast<long long>(globalBatch), median, seconds.front(), seconds.back(), repetitions);
    std::printf("  candidates %llu, feasible %llu, simulated %llu -> %.0f candidates/s (enumerate %.3f s, cost %.3f s)\n",
                static_cast<unsigned long long>(last.counts.candidates_total),
                static_cast<unsigned long long>(last.counts.candidates_feasible),
                static_cast<unsigned long long>(last.counts.simulated),
                static_cast<double>(last.counts.candidates_total) / median, last.counts.enumerate_s, last.counts.cost_s);
    if (!last.top.empty())
        std::printf("  best: %s, %.3f s/step, MFU %.1f%%\n", last.top.front().config.describe().c_str(),
                    last.top.front().step_time, 100 * last.top.front().mfu);
}

} // namespace

int main(int argc, char** argv)
{
    const int repetitions = argc > 1 ? std::max(1, std::atoi(argv[1])) : 3;
    const int threads = argc > 2 ? std::max(0, std::atoi(argv[2])) : 0;
    run("llama2-70b", 128, 1024, repetitions, threads);
    run("llama3-405b", 1024, 2048, repetitions, threads);
    return 0;
}
