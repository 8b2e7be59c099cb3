// SPDX-License-Identifier: MIT
// Issue evidence: the planner's plan is never worse than a configuration people actually ran. For every row of
// the calibration set that converts to a configuration (tests/bench/calibration_rows.h), this simulates the
// published configuration and plans the same model, cluster and global batch with the default planner config,
// then compares predicted throughput (tokens/s). Both use the same cost model, so the comparison is fair.
// usage: bench_plan_vs_published [published_configs.json]
#include "calibration_rows.h"

#include "shardscape/search/planner.h"

#include <cstdio>

using namespace shardscape;
using namespace shardscape::calibration;

namespace {

class Silent final : public ProgressSink
{
public:
    void progress(const std::string&, std::uint64_t, std::uint64_t) override { }
    void log(const std::string&) override { }
};

} // namespace

int main(int argc, char** argv)
{
    const std::string path = argc > 1 ? argv[1] : SHARDSCAPE_SOURCE_DIR "/tests/data/published_configs.json";
    int compared = 0, atLeast = 0, skipped = 0;
    double worst = 1e300;
    std::printf("%-48s %6s  %-44s %12s %12s %8s  %s\n", "row", "GPUs", "published config", "given tok/s", "plan tok/s",
                "ratio", "plan");
    for (const auto& row : loadRows(path)) {
        const Case c = makeCase(row);
        if (!c.simulable || c.gpus % c.gpus_per_node != 0) {
            ++skipped;
            continue;
        }
        const auto modelOwner = makeCostModel(c);
        const CostModel& model = *modelOwner;
        Workload workload;
        workload.global_batch = c.global_batch;
        workload.seq_len = c.seq_len;
        // The row's own GPU memory (the 96 GB H100s of torchtitan's benchmarks are not the preset's 80 GB).
        workload.memory_limit_bytes = c.memory_bytes;
        const Evaluation given = model.evaluate(c.config, workload);
        if (!given.feasible) {
            std::printf("%-48s %6d  %-44s  published configuration does not fit in the model: %s\n", c.id.c_str(),
                        c.gpus, c.config.describe().c_str(), given.reason.c_str());
            ++skipped;
            continue;
        }
        Problem problem;
        problem.graph = std::make_shared<const ModelGraph>(model.graph());
        problem.cluster = model.cluster();
        problem.global_batch = c.global_batch;
        Silent silent;
        // The planner searches with the same framework features the published job ran with.
        PlannerConfig config;
        config.tp_comm_overlap = c.config.tp_comm_overlap;
        config.overlap_param_gather = c.config.overlap_param_gather;
        config.fp8_linears = c.config.fp8_linears;
        config.fp8_param_gather = c.config.fp8_param_gather;
        config.grad_reduce_bf16 = c.config.grad_reduce_bf16;
        config.memory_constraint = c.memory_bytes / 1e9;
        config.eager_kernels = c.config.eager_kernels;
        config.framework = c.config.framework; // the same framework profile prices both
        const PlanResult result = plan(problem, config, silent);
        if (result.top.empty()) {
            std::printf("%-48s %6d  %-44s %12.0f %12s  planner found nothing\n", c.id.c_str(), c.gpus,
                        c.config.describe().c_str(), given.tokens_per_s, "-");
            ++compared;
            continue;
        }
        const Evaluation& best = result.top.front();
        const double ratio = best.tokens_per_s / given.tokens_per_s;
        worst = std::min(worst, ratio);
        ++compared;
        atLeast += ratio >= 1 - 1e-9 ? 1 : 0;
        std::printf("%-48s %6d  %-44s %12.0f %12.0f %8.3f  %s\n", c.id.c_str(), c.gpus, c.config.describe().c_str(),
                    given.tokens_per_s, best.tokens_per_s, ratio, best.config.describe().c_str());
    }
    std::printf("\n%d rows compared, %d skipped; plan >= published configuration in %d of %d (worst ratio %.3f)\n",
                compared, skipped, atLeast, compared, worst);
    return atLeast == compared ? 0 : 1;
}
