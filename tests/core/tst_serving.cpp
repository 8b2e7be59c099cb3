// SPDX-License-Identifier: MIT
// Inference planning against closed forms: KV bytes per token = 2 x layers x kv_heads x head_dim x dtype bytes (MLA:
// the latent and the rotary key), weights by storage format, decode steps no faster than their HBM reads, the KV pool
// arithmetic, and the planner's choices under latency bounds.
#include "shardscape/cost/serving.h"
#include "shardscape/model/model_source.h"
#include "shardscape/plan/serving_plan.h"
#include "shardscape/search/planner_config.h"
#include "shardscape/search/serving_planner.h"
#include "shardscape/support/error.h"
#include "shardscape/support/units.h"

#include <nlohmann/json.hpp>

#include <QTest>
#include <cmath>

using namespace shardscape;

namespace {

class QuietProgress final : public ProgressSink
{
public:
    void progress(const std::string&, std::uint64_t, std::uint64_t) override { }
    void log(const std::string&) override { }
};

ServingModel servingModel(const std::string& preset)
{
    return ServingModel::fromGraph(loadModel(preset, BuildOptions {}));
}

ServingEstimate estimate(const ServingModel& model, const Cluster& cluster, const ServingParallel& parallel,
                         const ServingRequest& request)
{
    const CostParams params;
    const auto costs = makeDatasheetCostSource(cluster, params);
    return estimateServing(model, cluster, *costs, params, parallel, request);
}

PlannerConfig servingConfig()
{
    PlannerConfig config;
    config.is_train = false;
    config.input_len = 1024;
    config.output_len = 1024;
    config.use_profile = false;
    return config;
}

} // namespace

class TestServing : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void kvBytesPerTokenIsTheClosedForm()
    {
        // Llama 3 70B: 80 layers x 8 KV heads x 128 x 2 (K and V) x 2 bytes = 327,680 bytes per token.
        const ServingModel llama = servingModel("llama3-70b");
        QCOMPARE(llama.kvBytesPerToken(DType::BF16), 2.0 * 80 * 8 * 128 * 2);
        QCOMPARE(llama.kvBytesPerToken(DType::FP8), 2.0 * 80 * 8 * 128 * 1);
        // DeepSeek-V3's MLA caches kv_lora_rank 512 + qk_rope_head_dim 64 per layer, 61 layers.
        const ServingModel deepseek = servingModel("deepseek-v3");
        QVERIFY(deepseek.mla);
        QCOMPARE(deepseek.kvBytesPerToken(DType::BF16), 61.0 * (512 + 64) * 2);
    }

    void kvSplitsOverTpAndReplicatesPastKvHeads()
    {
        const ServingModel llama = servingModel("llama3-70b");
        const Cluster cluster = loadCluster("h100-sxm", 1, 8);
        ServingRequest request;
        request.concurrency = 1;
        const double whole = llama.kvBytesPerToken(DType::BF16);
        QCOMPARE(estimate(llama, cluster, {4, 1, 1, 1}, request).kv_bytes_per_token, whole / 4);
        QCOMPARE(estimate(llama, cluster, {8, 1, 1, 1}, request).kv_bytes_per_token, whole / 8);
        // MLA's latent is not split by heads: every TP rank holds all of it.
        const ServingModel deepseek = servingModel("deepseek-v3");
        request.weight_format = WeightFormat::FP8;
        const Cluster h200 = loadCluster("h200", 1, 8);
        QCOMPARE(estimate(deepseek, h200, {8, 1, 1, 1}, request).kv_bytes_per_token,
                 deepseek.kvBytesPerToken(DType::BF16));
    }

    void weightsFollowTheStorageFormat()
    {
        const ServingModel llama = servingModel("llama3-8b");
        const Cluster cluster = loadCluster("h100-sxm", 1, 1);
        ServingRequest request;
        request.concurrency = 1;
        const double bf16 = estimate(llama, cluster, {1, 1, 1, 1}, request).memory.weights;
        QVERIFY(std::fabs(bf16 - 2 * llama.params) / bf16 < 1e-9);
        request.weight_format = WeightFormat::INT4;
        const double int4 = estimate(llama, cluster, {1, 1, 1, 1}, request).memory.weights;
        // The linear layers shrink to 4.25 bits; the embedding and the head stay bf16.
        const double embeddings = 2 * 2.0 * 128256 * 4096;
        QVERIFY(std::fabs(int4 - (embeddings + (bf16 - embeddings) * 4.25 / 16)) / int4 < 0.01);
    }

    void decodeIsNoFasterThanItsHbmReads()
    {
        // One sequence: every weight and every cached token is read once per step.
        for (const char* preset : {"llama3-8b", "llama3-70b", "mixtral-8x7b"}) {
            const ServingModel model = servingModel(preset);
            const Cluster cluster = loadCluster("h100-sxm", 1, 8);
            ServingRequest request;
            request.concurrency = 1;
            const ServingEstimate e = estimate(model, cluster, {8, 1, 1, 1}, request);
            QVERIFY2(e.feasible, e.reason.c_str());
            const double bytes = e.memory.weights * (model.isMoe() ? 0 : 1)
                + e.kv_bytes_per_token * static_cast<double>(request.input_len);
            QVERIFY2(e.tpot_s >= bytes / cluster.device.hbm_bandwidth, preset);
            // And at most a few times slower: it stays memory-bound at batch 1.
            QVERIFY2(e.decode.weights <= 2 * e.memory.weights / (0.5 * cluster.device.hbm_bandwidth), preset);
        }
    }

    void kvPoolAndMaxConcurrencyFollowTheMemorySplit()
    {
        const ServingModel llama = servingModel("llama3-70b");
        const Cluster cluster = loadCluster("h100-sxm", 1, 8);
        ServingRequest request;
        request.input_len = 3000;
        request.output_len = 3000;
        const ServingEstimate e = estimate(llama, cluster, {8, 1, 1, 1}, request);
        QVERIFY2(e.feasible, e.reason.c_str());
        const ServingMemory& m = e.memory;
        // vLLM: utilization x memory = weights + activations + non-torch reserve + KV pool.
        QVERIFY(std::fabs(0.9 * m.capacity - (m.weights + m.activations + 1.5 * units::kGiB + m.kv_pool)) < 1e3);
        // Whole 16-token blocks: 6000 tokens take 375 blocks.
        const double perSequence = e.kv_bytes_per_token * 6000;
        QCOMPARE(e.max_concurrency, static_cast<int>(std::floor(m.kv_pool / perSequence)));
        // fp8 KV doubles it (within one sequence's rounding).
        request.kv_dtype = DType::FP8;
        const ServingEstimate fp8 = estimate(llama, cluster, {8, 1, 1, 1}, request);
        QVERIFY(std::abs(fp8.max_concurrency - 2 * e.max_concurrency) <= 1);
        // "max" uses every sequence the pool holds when no bound stops it.
        QCOMPARE(e.concurrency, e.max_concurrency);
    }

    void throughputRisesAndLatencyGrowsWithTheBatch()
    {
        const ServingModel llama = servingModel("llama3-8b");
        const Cluster cluster = loadCluster("h100-sxm", 1, 1);
        ServingRequest request;
        const ServingEstimate e = estimate(llama, cluster, {1, 1, 1, 1}, request);
        QVERIFY(e.curve.size() >= 5);
        for (std::size_t i = 1; i < e.curve.size(); ++i) {
            QVERIFY(e.curve[i].tpot_s >= e.curve[i - 1].tpot_s);
            QVERIFY(e.curve[i].output_tokens_per_s >= e.curve[i - 1].output_tokens_per_s * 0.99);
        }
        // Little's law over one request's life.
        const auto& p = e.curve.back();
        const double life = p.ttft_s + (static_cast<double>(request.output_len) - 1) * p.tpot_s;
        QVERIFY(std::fabs(p.output_tokens_per_s - p.concurrency * request.output_len / life)
                < 1e-6 * p.output_tokens_per_s);
    }

    void longPromptsQueueForPrefill()
    {
        // NVIDIA NIM's Llama 3.3 70B FP8 on 2 H100 at 5000 in / 500 out: one prompt's prefill is hundreds of ms, so
        // at 50 requests in flight prompts wait for one another (measured TTFT 407 ms alone, 835 ms at 50).
        const ServingModel llama = servingModel("llama3-70b");
        const Cluster cluster = loadCluster("h100-sxm", 1, 2);
        ServingRequest request;
        request.input_len = 5000;
        request.output_len = 500;
        request.weight_format = WeightFormat::FP8;
        request.kv_dtype = DType::FP8;
        request.concurrency = 1;
        const ServingEstimate alone = estimate(llama, cluster, {2, 1, 1, 1}, request);
        request.concurrency = 50;
        const ServingEstimate loaded = estimate(llama, cluster, {2, 1, 1, 1}, request);
        QVERIFY(alone.feasible && loaded.feasible);
        // Pollaczek-Khinchine for deterministic service S (the prompt alone) and the closed loop's arrival rate.
        const double service = alone.ttft_s;
        const double life = loaded.ttft_s + (request.output_len - 1) * loaded.tpot_s;
        const double rho = 50 / life * service;
        QVERIFY(rho > 0.3 && rho < 1);
        const double queue = rho * service / (2 * (1 - rho));
        // What is left is the prompt's own prefill, slowed by the decodes sharing its step, never faster than alone.
        const double ownPrefill = loaded.ttft_s - queue;
        QVERIFY2(ownPrefill >= service * 0.999 && ownPrefill < 1.5 * service,
                 qPrintable(QStringLiteral("own %1 s, alone %2 s").arg(ownPrefill).arg(service)));
        // Short prompts barely queue: at 128 tokens the same load adds well under a tenth of the prefill.
        request.input_len = 128;
        const ServingEstimate shortPrompts = estimate(llama, cluster, {2, 1, 1, 1}, request);
        request.concurrency = 1;
        const ServingEstimate shortAlone = estimate(llama, cluster, {2, 1, 1, 1}, request);
        const double shortLife = shortPrompts.ttft_s + (request.output_len - 1) * shortPrompts.tpot_s;
        const double shortRho = 50 / shortLife * shortAlone.ttft_s;
        QVERIFY(shortRho / (2 * (1 - shortRho)) < 0.1);
        QVERIFY(rho / (2 * (1 - rho)) > 0.4); // the long prompts' queue: over 40% of a prefill
    }

    void arrivalsWaitOutLongStepsMoreOften()
    {
        // Renewal theory for the step an arrival waits out: E[S^2] / (2 E[S]) over a two-point distribution of steps.
        const double mean = 0.030;
        const double chunk = 0.380;
        const double f = 0.05;
        const double shortStep = (mean - f * chunk) / (1 - f);
        const double closedForm = (f * chunk * chunk + (1 - f) * shortStep * shortStep) / (2 * mean);
        QVERIFY(std::abs(meanResidualStep(mean, chunk, f) - closedForm) < 1e-12);
        QVERIFY(closedForm > 8 * mean / 2); // the rare long steps dominate: 122 ms, not 15 ms
        // Without chunks, or with every step carrying one, the steps are alike: half a step.
        QCOMPARE(meanResidualStep(mean, chunk, 0), mean / 2);
        QCOMPARE(meanResidualStep(mean, mean, 0.3), mean / 2);
        // Never below half the mean (Jensen), and growing with the chunk's length at a fixed mean.
        double last = mean / 2;
        for (const double c : {0.040, 0.080, 0.160, 0.320, 0.500}) {
            const double w = meanResidualStep(mean, c, 0.05);
            QVERIFY(w >= last);
            last = w;
        }
    }

    void badShapesAreRefusedWithTheirReason()
    {
        const ServingModel llama = servingModel("llama3-70b");
        const Cluster cluster = loadCluster("h100-sxm", 1, 8);
        QVERIFY(servingParallelError(llama, cluster, {3, 1, 1, 1}).find("heads") != std::string::npos);
        QVERIFY(servingParallelError(llama, cluster, {8, 2, 1, 1}).find("cluster has 8") != std::string::npos);
        QVERIFY(servingParallelError(llama, cluster, {4, 1, 4, 1}).find("dense") != std::string::npos);
        const ServingModel mixtral = servingModel("mixtral-8x7b");
        QVERIFY(servingParallelError(mixtral, cluster, {2, 1, 4, 2}).find("tp x dp") == std::string::npos);
        QVERIFY(servingParallelError(mixtral, cluster, {2, 1, 2, 2}).find("tp x dp = 4") != std::string::npos);
        // Too long a context for the model.
        ServingRequest request;
        request.input_len = 8000;
        request.output_len = 1000;
        QVERIFY(estimate(llama, cluster, {8, 1, 1, 1}, request).reason.find("positions") != std::string::npos);
        // Weights that leave no KV room: the reason gives both sizes.
        const ServingEstimate tight = estimate(llama, cluster, {1, 1, 1, 1}, ServingRequest {});
        QVERIFY(!tight.feasible);
        QVERIFY(tight.reason.find("weights take 141") != std::string::npos);
        ServingRequest bad;
        bad.input_len = 0;
        QVERIFY_THROWS_EXCEPTION(InputError, estimate(llama, cluster, {8, 1, 1, 1}, bad));
    }

    void llama70bServesOnOneH100NodeAndABoundChangesTp()
    {
        const auto graph = loadModel("llama3-70b", BuildOptions {});
        const Cluster cluster = loadCluster("h100-sxm", 1, 8);
        QuietProgress progress;
        PlannerConfig config = servingConfig();
        const ServingPlanResult free = planServing(graph, cluster, config, progress);
        QVERIFY(!free.top.empty());
        QVERIFY(free.counts.elapsed_s < 0.2);
        QVERIFY(free.log.back().find("elapsed") != std::string::npos);
        const auto selected = std::find_if(free.log.begin(), free.log.end(), [](const std::string& line) {
            return line.find("selected configuration") != std::string::npos;
        });
        QVERIFY(selected != free.log.end() && selected->find("train : false") != std::string::npos);
        config.max_tpot_ms = 20;
        const ServingPlanResult bounded = planServing(graph, cluster, config, progress);
        QVERIFY(!bounded.top.empty());
        QVERIFY(bounded.top.front().tpot_s * 1e3 <= 20);
        QVERIFY(bounded.top.front().parallel.tp != free.top.front().parallel.tp
                || bounded.top.front().parallel.pp != free.top.front().parallel.pp);
        QCOMPARE(bounded.top.front().parallel.tp, 8);
        // A bound nothing meets leaves no candidate, each rejected with the bound in its reason.
        config.max_tpot_ms = 1;
        const ServingPlanResult impossible = planServing(graph, cluster, config, progress);
        QVERIFY(impossible.top.empty());
        QVERIFY(impossible.infeasible.front().reason.find("max_tpot_ms") != std::string::npos);
    }

    void plannerKeysAndPlanFilesRoundTrip()
    {
        const nlohmann::json doc {{"is_train", false}, {"input_len", 2048},     {"output_len", 128},
                                  {"concurrency", 64}, {"weight_dtype", "fp8"}, {"kv_cache_dtype", "fp8"},
                                  {"max_tpot_ms", 40}};
        const PlannerConfig config = plannerConfigFromJson(doc, "serve.json");
        QCOMPARE(config.concurrency, 64);
        QVERIFY(config.weight_dtype == WeightFormat::FP8);
        QVERIFY(config.kv_cache_dtype == DType::FP8);
        for (const auto& [key, value] :
             std::vector<std::pair<std::string, nlohmann::json>> {{"concurrency", "lots"},
                                                                  {"concurrency", 0},
                                                                  {"weight_dtype", "int3"},
                                                                  {"kv_cache_dtype", "int8"},
                                                                  {"serving_framework", "tgi"},
                                                                  {"memory_fraction", 1.5}}) {
            nlohmann::json bad = doc;
            bad[key] = value;
            try {
                plannerConfigFromJson(bad, "serve.json");
                QFAIL(("accepted " + key).c_str());
            } catch (const InputError& e) {
                QVERIFY2(std::string(e.what()).find(key) != std::string::npos, e.what());
            }
        }
        const ServingRequest request = config.servingRequest();
        const ServingRequest back = servingRequestFromJson(servingRequestJson(request), "memory");
        QCOMPARE(back.input_len, request.input_len);
        QCOMPARE(back.concurrency, request.concurrency);
        QVERIFY(back.weight_format == request.weight_format && back.kv_dtype == request.kv_dtype);
        QCOMPARE(back.max_tpot_ms, request.max_tpot_ms);
    }
};

QTEST_GUILESS_MAIN(TestServing)
#include "tst_serving.moc"
