// SPDX-License-Identifier: MIT
// Guards the calibration of the datasheet cost model (tests/bench/calibration_results.md): a handful of published,
// measured training runs from tests/data/published_configs.json must be predicted within 25% in the row's own
// throughput metric. One row per kind of evidence: Megatron SC'21 3D parallelism on A100 (unfused attention,
// interleaved schedule), Megatron-Core on H100 (SP, distributed optimizer), BLOOM's 250k-vocabulary pipeline,
// torchtitan FSDP2 with per-layer selective AC, and llm-foundry FSDP at long context on H100 and at 128 A100s.
#include "../bench/calibration_rows.h"
#include "../bench/memory_peak_rows.h"

#include <QTest>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <vector>

using namespace shardscape;
using namespace shardscape::calibration;

class TestCalibration : public QObject
{
    Q_OBJECT

private:
    std::vector<nlohmann::json> m_rows;
    std::vector<nlohmann::json> m_peakRows; ///< tests/data/measured_peaks.json

    static const nlohmann::json* find(const std::vector<nlohmann::json>& rows, const std::string& id)
    {
        for (const auto& r : rows)
            if (r.value("id", std::string()) == id)
                return &r;
        return nullptr;
    }
    const nlohmann::json* row(const std::string& id) const { return find(m_rows, id); }

private slots:
    void initTestCase()
    {
        m_rows = loadRows(std::string(SHARDSCAPE_SOURCE_DIR) + "/tests/data/published_configs.json");
        // ../shared/data 103, Korthikanti et al. 8, BigScience tr11 19, Lambda's GPT-NeoX benchmark 1, torchtitan's
        // June 2025 async-TP benchmark 12, Trainy's H200 benchmark 2
        QCOMPARE(m_rows.size(), std::size_t(162));
        m_peakRows = loadRows(std::string(SHARDSCAPE_SOURCE_DIR) + "/tests/data/measured_peaks.json");
    }

    void predictsPublishedThroughput_data()
    {
        QTest::addColumn<QString>("id");
        QTest::newRow("sc21 145.6B tp8 pp8 interleaved, A100") << QString("ptdp_t1_145.6B");
        QTest::newRow("megatron-core 7.1B tp2 sp, H100") << QString("megatron_readme_h100_7.1B");
        QTest::newRow("bloom 176B tp4 pp12") << QString("bloom_176b");
        // One micro-batch per pipeline: the fill, the drain and the end-of-step collectives over Omni-Path, costed
        // at the fabric's measured all-reduce rate (42% too fast at its line rate).
        QTest::newRow("bloom 176B ramp-up, GBS 16") << QString("bloom_176b_gbs16_mbs2");
        QTest::newRow("torchtitan llama3 8B fsdp per-layer AC, A100")
            << QString("torchtitan_doc_llama3_8B_64a100_perlayer");
        QTest::newRow("mpt 7B seq 65536 fsdp, H100") << QString("mpt_7b_h100_80gb_8gpu_seq65536_amp_bf16_mb1");
        QTest::newRow("mpt 13B 128 GPUs fsdp, A100-40GB") << QString("mpt_13b_a100_40gb_128gpu_seq2048_bf16_mb16");
        // The framework switches: TP-communication and parameter-gather overlap, Float8 linears with async TP.
        QTest::newRow("megatron-core 119B tp8 pp4 --tp-comm-overlap, H100") << QString("megatron_readme_h100_119B");
        QTest::newRow("torchtitan 405B float8 + async TP, H100")
            << QString("torchtitan_doc_405B_128h100_float8_asynctp");
        QTest::newRow("torchtitan 70B 2D float8 + async TP, H100")
            << QString("torchtitan_h100_202412_70B_t4_2d_asynctp");
        // GPT-NeoX's own code path (DeepSpeed pipeline engine, fp16 ZeRO-1, full checkpointing) on one A100-40GB
        // node, added after the model was built: GPT-NeoX-20B's production figure is the only series off by more
        // than 10%, and this run of the same 20B.yml isolates the per-node part of it.
        QTest::newRow("gpt-neox 20B.yml at hidden 4096, 8x A100-40GB") << QString("gpt_neox_lambda_h4096_1node");
    }

    /**
     * The GPT-NeoX metric is the FLOP count its get_flops logged (6N + 60shl per token, N every parameter): the
     * graph's parameter count must make Lambda's measured 6.381 samples/s the 127.2 TFLOP/s/GPU it logged beside it.
     */
    void gptNeoxFlopCountReproducesTheLoggedFigure()
    {
        const nlohmann::json* r = row("gpt_neox_lambda_h4096_1node");
        QVERIFY(r);
        const Case c = makeCase(*r);
        QVERIFY2(c.simulable, c.reason.c_str());
        QCOMPARE(c.metric, Metric::TflopsNeox2021);
        const Prediction p = predict(c);
        const double samplesPerSecond = r->at("samples_per_sec").get<double>();
        const double s = static_cast<double>(c.seq_len);
        const double perToken = 6 * p.model_params + 60 * s * c.shape.hidden * static_cast<double>(c.shape.num_layers);
        const double tflops = samplesPerSecond * s * perToken / c.gpus / 1e12;
        qInfo("N = %.4g, %.3f samples/s -> %.2f TFLOP/s/GPU (logged %.1f)", p.model_params, samplesPerSecond, tflops,
              c.published);
        QVERIFY2(std::abs(tflops / c.published - 1) <= 0.005, qPrintable(QString::number(tflops)));
    }

    void predictsPublishedThroughput()
    {
        QFETCH(QString, id);
        const nlohmann::json* r = row(id.toStdString());
        QVERIFY2(r, qPrintable("no row " + id));
        const Case c = makeCase(*r);
        QVERIFY2(c.simulable, c.reason.c_str());
        const Prediction p = predict(c);
        const std::string detail
            = cat(c.id, ": published ", c.published, ", predicted ", fixed(p.value, 4), " ", metricName(c.metric), " (",
                  fixed(100 * p.relative_error, 1), "%), ", c.config.describe());
        qInfo("%s", detail.c_str());
        QVERIFY2(std::isfinite(p.value) && p.value > 0, detail.c_str());
        QVERIFY2(std::abs(p.relative_error) <= 0.25, detail.c_str());
    }

    /**
     * NVIDIA's own FP8 runs on DGX-H100, added after the model was built and never fitted: NeMo 24.07's pre-training
     * table (docs/source/performance/performance_summary.md) and NeMo 24.03's long-sequence table
     * (performance_long_sequence.md: Llama 2 7B from 4k to 1M tokens, CP up to 32). Megatron-Core with Transformer
     * Engine, whose attention is cuDNN's fused kernel on Hopper (1.6x FlashAttention-2 in the FlashAttention-3
     * paper's measurements), whose LayerNormLinear writes the FP8 input from the norm kernel, and whose FP8 weights
     * are cast once per step. Without those three the engine predicted the first table 17-23% too slow and the second
     * 19% at 4k growing to 35-39% from 64k: error class 3.
     */
    void nemoFp8RunsOnH100_data()
    {
        QTest::addColumn<QString>("id");
        for (const auto& r : m_rows)
            if (r.value("series", "") == "nemo_performance_summary_h100_2024_07"
                || r.value("series", "") == "nemo_long_context_h100_2024_03")
                QTest::newRow(r.at("id").get<std::string>().c_str()) << QString::fromStdString(r.at("id"));
    }

    void nemoFp8RunsOnH100()
    {
        QFETCH(QString, id);
        const nlohmann::json* r = row(id.toStdString());
        QVERIFY(r);
        const Case c = makeCase(*r);
        QVERIFY2(c.simulable, c.reason.c_str());
        const Prediction p = predict(c);
        qInfo("%s: published %.0f, predicted %.0f tokens/s/GPU (%+.1f%%)", qPrintable(id), c.published, p.value,
              100 * p.relative_error);
        QVERIFY2(std::abs(p.relative_error) <= 0.08, qPrintable(QString::number(p.relative_error)));
    }

    /**
     * torchtitan's June 2025 async-TP benchmark (benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md): the same
     * 2D runs with vanilla and async TP, in bf16 and two float8 recipes. Whatever the absolute error, the gains must
     * follow: async TP fuses only collective + matmul pairs it can pattern-match (no backward reduce-scatter of a
     * gradient summed over Q, K, V or gate, up; no gather that a rowwise cast separates from its GEMM), tensorwise
     * float8 TP gathers 1-byte casts of the sequence shard, and FP8 GEMMs lose more than bf16 ones at the small
     * dimensions TP 8 leaves (wk and wv: 128 columns). Costing every collective as overlapped and FP8 at a flat 2x,
     * async TP came out 20-24% faster against the published 4-16%, and rowwise float8 x1.12 and x1.00 of bf16
     * where the runs got x1.004 (70B) and x0.847 (8B). The bound is 8%: the 8B runs use torchtitan's per-op
     * checkpointing, which gathers each block's two column inputs again in backward (session 24). That gather is
     * 1 byte under tensorwise float8 TP and 2 bytes in bf16, so it moved the predicted 8B tensorwise / bf16 gain
     * from x1.211 to x1.245 (published x1.160) while it brought the bf16 row itself closer.
     */
    void asyncTpAndFloat8GainsAgainstTorchtitan2025_data()
    {
        QTest::addColumn<QString>("faster");
        QTest::addColumn<QString>("baseline");
        for (const char* size : {"70B", "8B"}) {
            for (const char* recipe : {"bf16", "tensorwise", "rowwise"})
                QTest::newRow(cat(size, " ", recipe, " async / vanilla").c_str())
                    << QString::fromStdString(cat("torchtitan_h100_202506_", size, "_", recipe, "_asynctp"))
                    << QString::fromStdString(cat("torchtitan_h100_202506_", size, "_", recipe, "_vanilla"));
            for (const char* recipe : {"tensorwise", "rowwise"})
                QTest::newRow(cat(size, " ", recipe, " / bf16, vanilla TP").c_str())
                    << QString::fromStdString(cat("torchtitan_h100_202506_", size, "_", recipe, "_vanilla"))
                    << QString::fromStdString(cat("torchtitan_h100_202506_", size, "_bf16_vanilla"));
        }
    }

    void asyncTpAndFloat8GainsAgainstTorchtitan2025()
    {
        QFETCH(QString, faster);
        QFETCH(QString, baseline);
        double published[2] = {0, 0}, predicted[2] = {0, 0};
        int k = 0;
        for (const QString& id : {faster, baseline}) {
            const nlohmann::json* r = row(id.toStdString());
            QVERIFY2(r, qPrintable("no row " + id));
            const Case c = makeCase(*r);
            QVERIFY2(c.simulable, c.reason.c_str());
            published[k] = c.published;
            predicted[k++] = predict(c).value;
        }
        const double gainPublished = published[0] / published[1];
        const double gainPredicted = predicted[0] / predicted[1];
        qInfo("%s over %s: published x%.3f, predicted x%.3f", qPrintable(faster), qPrintable(baseline), gainPublished,
              gainPredicted);
        QVERIFY2(std::abs(gainPredicted / gainPublished - 1) <= 0.08, qPrintable(QString::number(gainPredicted)));
    }

    /**
     * Korthikanti et al. Table 5 (arXiv:2205.05198): full recomputation without SP against SP + selective
     * recomputation on the same models. Megatron runs the column-parallel backward all-reduce beside the wgrad
     * GEMM; charging it in full priced the full-recomputation runs 10-14% too slow (error class 5).
     */
    void fullAndSelectiveRecomputeAgainstKorthikanti_data()
    {
        QTest::addColumn<QString>("model");
        for (const char* model : {"22B", "175B", "530B", "1T"})
            QTest::newRow(model) << QString(model);
    }

    void fullAndSelectiveRecomputeAgainstKorthikanti()
    {
        QFETCH(QString, model);
        double seconds[2] = {0, 0};
        int k = 0;
        for (const char* mode : {"full", "selective"}) {
            const nlohmann::json* r = row(cat("korthikanti_t5_", model.toStdString(), "_", mode));
            QVERIFY(r);
            const Case c = makeCase(*r);
            QVERIFY2(c.simulable, c.reason.c_str());
            const Prediction p = predict(c);
            qInfo("%s: published %.2f s, predicted %.2f s (%+.1f%%)", c.id.c_str(), c.published, p.value,
                  100 * p.relative_error);
            QVERIFY2(std::abs(p.relative_error) <= 0.10, c.id.c_str());
            seconds[k++] = p.value;
        }
        // The cost of recomputing everything: the paper's 1.29-1.32x, predicted within 8% of it.
        const double published
            = row(cat("korthikanti_t5_", model.toStdString(), "_full"))->at("seconds_per_iteration").get<double>()
            / row(cat("korthikanti_t5_", model.toStdString(), "_selective"))->at("seconds_per_iteration").get<double>();
        QVERIFY2(std::abs(seconds[0] / seconds[1] / published - 1) <= 0.08,
                 qPrintable(QString("full / selective %1 against %2").arg(seconds[0] / seconds[1]).arg(published)));
    }

    /**
     * The measured-peak set (tests/data/measured_peaks.json, each row with its source): issue 14's bar is a median
     * peak error of at most 10% and no run that ran predicted out of memory.
     */
    void measuredPeaksOfRunsThatRanFit()
    {
        std::vector<double> errors;
        for (const auto& r : m_peakRows) {
            const memory_peaks::PeakCase pc = memory_peaks::makePeakCase(r);
            if (!pc.c.simulable || !pc.ran)
                continue;
            const memory_peaks::PeakPrediction p = memory_peaks::predictPeak(pc);
            QVERIFY2(p.predicted_fit, qPrintable(QString::fromStdString(pc.id) + " ran but is predicted to OOM"));
            errors.push_back(std::abs(p.relative_error));
        }
        QCOMPARE(errors.size(), std::size_t(52));
        std::nth_element(errors.begin(), errors.begin() + errors.size() / 2, errors.end());
        QVERIFY2(errors[errors.size() / 2] <= 0.10, qPrintable(QString::number(errors[errors.size() / 2])));
    }

    /**
     * torchtune's README table "Optimization flags" (Llama 3.2 3B, one A100, cumulative rows): each technique lowers
     * the peak, and the model follows when it runs what the recipe runs. Compiling adds fused blocks and a compiled
     * loss on fp32 logits, chunked cross-entropy a compiled loss on bf16 chunks, and activation checkpointing leaves
     * the gradients, which the recipe frees each step, as the peak. Before session 24 the model saw no change from
     * compile and skipped the last two rows.
     */
    void torchtuneOptimizationFlags()
    {
        double previous = 0;
        for (const char* id : {"ttune_l32_3b_a100_packed", "ttune_l32_3b_a100_compile", "ttune_l32_3b_a100_chunked_ce",
                               "ttune_l32_3b_a100_ac"}) {
            const nlohmann::json* r = find(m_peakRows, id);
            QVERIFY2(r, id);
            const memory_peaks::PeakCase pc = memory_peaks::makePeakCase(*r);
            QVERIFY2(pc.c.simulable, pc.c.reason.c_str());
            const memory_peaks::PeakPrediction p = memory_peaks::predictPeak(pc);
            qInfo("%s: measured %.1f GiB, predicted %.1f GiB", id, pc.measured_bytes / units::kGiB,
                  p.predicted_bytes / units::kGiB);
            QVERIFY2(std::abs(p.relative_error) <= 0.10, qPrintable(QString::number(p.relative_error)));
            if (previous > 0)
                QVERIFY2(p.predicted_bytes < previous, id);
            previous = p.predicted_bytes;
        }
    }

    /** The rule that rows without a stated FLOP count or batch are listed, not guessed. */
    void listsRowsItCannotSimulate()
    {
        const nlohmann::json* r = row("opt_175b");
        QVERIFY(r);
        const Case c = makeCase(*r);
        QVERIFY(!c.simulable);
        QVERIFY2(c.reason.find("global_batch_size") != std::string::npos, c.reason.c_str());
    }
};

QTEST_APPLESS_MAIN(TestCalibration)
#include "tst_calibration.moc"
