// SPDX-License-Identifier: MIT
// Calibrating a profile on training logs: the three frameworks' log lines (real Megatron-LM logs of Shardscape's
// exports run on an H200, public Megatron-LM and Megatron-DeepSpeed logs, generated torchtitan and DeepSpeed lines),
// the calibration in the profile file, the calibrated cost source against closed forms, and the fit itself: a real
// run imported alone lands within 3% of its measured step, known scales are recovered from logs generated with them,
// and nothing is written on bad input or a dry run.
#include "shardscape/cost/cost_model.h"
#include "shardscape/hardware/cluster.h"
#include "shardscape/model/hf_config.h"
#include "shardscape/model/model_source.h"
#include "shardscape/profile/profile.h"
#include "shardscape/profile/profile_cost_source.h"
#include "shardscape/profile/training_log.h"
#include "shardscape/search/log_calibration.h"
#include "shardscape/support/error.h"
#include "shardscape/support/json_file.h"
#include "shardscape/support/strings.h"
#include "shardscape/support/units.h"
#include "test_helpers.h"

#include <QTemporaryDir>
#include <QTest>
#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

using namespace shardscape;
using shardscape::test::inputErrorOf;
using shardscape::test::writeFile;

namespace {

const std::string kLogs = std::string(SHARDSCAPE_SOURCE_DIR) + "/tests/data/training_logs/";
const std::string kH200 = kLogs + "h200-megatron/";
const std::string kPublic = kLogs + "public/";

/** A cost source with round numbers, to check the calibrated one against closed forms. */
class FixedSource final : public CostSource
{
public:
    std::string name() const override { return "fixed"; }
    double matmulTime(double, double, double, DType) const override { return 1e-3; }
    double attentionTime(double, DType) const override { return 2e-3; }
    double memoryTime(double) const override { return 1e-6; }
    double collectiveTime(Collective, double, const GroupShape&) const override { return 4e-3; }
    double p2pTime(double, bool) const override { return 5e-3; }
    double minKernelTime() const override { return 1e-6; }
};

LogImportRequest h200Request(const std::filesystem::path& dir, std::vector<std::string> logs)
{
    LogImportRequest r;
    for (const auto& log : logs)
        r.runs.push_back({kH200 + log, {}});
    r.model = kH200 + "llama3.2-1b.json";
    r.cluster = "h200";
    r.profile_dir = dir;
    r.tool = "tst_profile_logs";
    return r;
}

} // namespace

class TestProfileLogs : public QObject
{
    Q_OBJECT

private slots:
    void megatronLogOfAnExportRun()
    {
        // tests/data/training_logs/h200-megatron/a-mb2-s2k.log: iterations 1, 5, ..., 30; the later half is 15..30.
        const TrainingLog log = readTrainingLog(kH200 + "a-mb2-s2k.log");
        QCOMPARE(log.format, TrainingLogFormat::Megatron);
        QCOMPARE(log.steps.size(), std::size_t {7});
        QCOMPARE(log.steadySteps().size(), std::size_t {4});
        QCOMPARE(log.steadySteps().front().step, std::int64_t {15});
        // median of 1314.8, 1312.0, 1315.1, 1310.0 ms
        QCOMPARE(log.stepTime(16, 2048, 1), (1312.0 + 1314.8) / 2 / 1e3);
        // "max reserved: 41074.00" MB (2^20 bytes), the larger of the two memory lines
        QCOMPARE(log.peak_kind, std::string("reserved"));
        QCOMPARE(log.peak_bytes, 41074.0 * 1024 * 1024);
        QCOMPARE(log.world_size, std::int64_t {1});
        const std::string script = megatronScriptFromArguments(log);
        QVERIFY(script.find("--nproc-per-node 1 pretrain_gpt.py") != std::string::npos);
        QVERIFY(script.find("--num-query-groups 8") != std::string::npos);
        QVERIFY(script.find("--micro-batch-size 2") != std::string::npos);
        QVERIFY(script.find("--swiglu") != std::string::npos);
        QVERIFY(script.find("--fp8") == std::string::npos); // fp8 None: its recipe default is not a choice
        // The run had no Transformer Engine: the local layer spec, and the torch softmax fallback.
        QVERIFY(script.find("--transformer-impl local") != std::string::npos);
        QVERIFY(script.find("--no-masked-softmax-fusion") != std::string::npos);
    }

    void publicMegatronLogWithTokenizerVocabulary()
    {
        // liguodongiot/llm-action model_train.md, GPT-2 345M dp4 (tests/data/training_logs/public/README.md).
        const TrainingLog log = readTrainingLog(kPublic + "megatron-gpt345m-a800x4-dp4.log");
        QCOMPARE(log.world_size, std::int64_t {4});
        QCOMPARE(log.padded_vocab, std::int64_t {50304});
        QVERIFY(megatronScriptFromArguments(log).find("--vocab-size 50304") != std::string::npos);
        QCOMPARE(log.peak_kind, std::string("reserved"));
    }

    void megatronDeepSpeedLogIsTimedByMegatron()
    {
        // The log has DeepSpeed's pipeline "iter time (s)" lines beside Megatron's: Megatron's loop times the step.
        const TrainingLog log = readTrainingLog(kPublic + "megatron-deepspeed-llama1.3b-a800x8-tp2pp2dp2.log");
        QCOMPARE(log.format, TrainingLogFormat::Megatron);
        for (const auto& step : log.steps)
            QVERIFY(step.seconds_per_step > 0);
    }

    void torchtitanTpsWithColoursAndRankPrefix()
    {
        // torchtitan/components/metrics.py's line, coloured, behind torchrun's "[rank0]:"; step 1 logs warm-up.
        const std::string text
            = "[rank0]:[titan] 2026-11-27 10:00:00 - root - INFO - \x1b[31mstep:  1  \x1b[32mloss: "
              "12.0  \x1b[38;2;180;60;0mmemory: 30.00GiB(21.45%)  \x1b[34mtps: 1,000  \x1b[36mtflops: "
              "10.00  \x1b[35mmfu: 1.00%\x1b[39m\n"
              "[rank0]:[titan] ... - step: 10  loss: 9.0  grad_norm: 1.2  memory: 49.50GiB(35.40%)  "
              "tps: 8,000  tflops: 380.00  mfu: 38.40%\n"
              "[rank0]:[titan] ... - step: 20  loss: 8.0  grad_norm: 1.1  memory: 49.59GiB(35.46%)  "
              "tps: 8,192  tflops: 390.00  mfu: 39.40%\n"
              "[rank0]:[titan] ... - validate step: 20  loss: 8.1  memory: 60.00GiB(40%)  tps: 90,000\n";
        const TrainingLog log = parseTrainingLog(text, "titan.log");
        QCOMPARE(log.format, TrainingLogFormat::Torchtitan);
        QCOMPARE(log.steps.size(), std::size_t {3}); // the validation line is not a training step
        // the later half is step 10 and 20: 8 x 8192 tokens over 8 GPUs at 8,000 and 8,192 tokens/s per GPU
        const double expected = (8.0 * 8192 / (8000.0 * 8) + 8.0 * 8192 / (8192.0 * 8)) / 2;
        QVERIFY(std::fabs(log.stepTime(8, 8192, 8) - expected) < 1e-12);
        QCOMPARE(log.peak_bytes, 49.59 * 1024 * 1024 * 1024);
        QCOMPARE(log.peak_kind, std::string("reserved"));
        QVERIFY(inputErrorOf([&] { log.stepTime(0, 8192, 8); }).find("global batch") != std::string::npos);
    }

    void deepspeedThroughputTimer()
    {
        // deepspeed/utils/timer.py ThroughputTimer.stop's line: samples/s of train_batch_size, GB = 2^30 bytes.
        const std::string text
            = "[INFO] [timer.py:260:stop] epoch=0/micro_step=20/global_step=10, RunningAvgSamplesPerSec=60.1, "
              "CurrSamplesPerSec=64.0, MemAllocated=12.5GB, MaxMemAllocated=20.25GB\n"
              "[INFO] [timer.py:260:stop] epoch=0/micro_step=40/global_step=20, RunningAvgSamplesPerSec=62.0, "
              "CurrSamplesPerSec=32.0, MemAllocated=12.5GB, MaxMemAllocated=21.5GB\n";
        const TrainingLog log = parseTrainingLog(text, "ds.log");
        QCOMPARE(log.format, TrainingLogFormat::DeepSpeed);
        QCOMPARE(log.stepTime(64, 2048, 8), 2.0); // the later half: 64 samples at 32 samples/s
        QCOMPARE(log.peak_kind, std::string("allocated"));
        QCOMPARE(log.peak_bytes, 21.5 * 1024 * 1024 * 1024);
    }

    void logsWithoutStepsAreRefused()
    {
        QVERIFY(inputErrorOf([] { parseTrainingLog("", "empty.log"); }).find("no training step") != std::string::npos);
        QVERIFY(inputErrorOf([] { parseTrainingLog("hello\nstep: x loss: y\n", "x.log"); }).find("x.log")
                != std::string::npos);
        QVERIFY(inputErrorOf([] {
                    parseTrainingLog(" iteration 5/ 10 | elapsed time per iteration (ms): -3.0 |", "neg.log");
                }).find("-3")
                != std::string::npos);
    }

    void calibratedSourceAgainstClosedForms()
    {
        ProfileCalibration c;
        c.matmul_time_scale = 2;
        c.attention_time_scale = 3;
        c.memory_time_scale = 0.5;
        c.collective_time_scale = 1.5;
        c.kernel_floor_s = 1e-5;
        c.runs.resize(2);
        const auto source = makeCalibratedCostSource(c, std::make_shared<FixedSource>());
        QCOMPARE(source->matmulTime(1, 1, 1, DType::BF16), 2e-3);
        QCOMPARE(source->attentionTime(1, DType::BF16), 6e-3);
        QCOMPARE(source->memoryTime(1), 1e-5); // 0.5 us scaled, raised to the 10 us floor
        QCOMPARE(source->collectiveTime(Collective::AllReduce, 1, GroupShape {}), 6e-3);
        QCOMPARE(source->p2pTime(1, true), 7.5e-3);
        QCOMPARE(source->minKernelTime(), 1e-5);
        QCOMPARE(source->name(), std::string("fixed, calibrated on 2 runs"));
    }

    void calibrationRoundTripsAndIsChecked()
    {
        QTemporaryDir dir;
        const std::filesystem::path file = dir.filePath("profile.json").toStdString();
        Profile p;
        p.created_utc = "2026-11-27T10:00:00Z";
        p.tool = "tst";
        p.device.name = "NVIDIA H200";
        ProfileCalibration c;
        c.matmul_time_scale = 1.25;
        c.memory_offset_bytes = -1.5e9;
        c.created_utc = "2026-11-27T10:00:00Z";
        c.runs.push_back({"a.log", "megatron", "tp1", 1.3, 0.57, 1.31, 4.3e10, "reserved"});
        p.calibration = c;
        saveProfile(file, p);
        const Profile back = loadProfile(file);
        QVERIFY(back.calibration.has_value());
        QCOMPARE(back.calibration->matmul_time_scale, 1.25);
        QCOMPARE(back.calibration->memory_offset_bytes, -1.5e9);
        QCOMPARE(back.calibration->runs.at(0).peak_kind, std::string("reserved"));

        nlohmann::json doc = toJson(p);
        doc["calibration"]["attention_time_scale"] = 100;
        doc["checksum"] = profileChecksum(doc);
        QVERIFY(inputErrorOf([&] { profileFromJson(doc, "p.json"); }).find("attention_time_scale")
                != std::string::npos);
    }

    void realRunImportedAloneLandsWithinThreePercent()
    {
        // The bar: importing a log moves that run's prediction within 3% of its measured step time.
        for (const char* log : {"a-mb2-s2k.log", "c-mb2-s2k-full.log", "d-mb1-s4k.log"}) {
            QTemporaryDir dir; // a fresh profile each: "before" is then the datasheet's prediction
            const LogImportResult r = importTrainingLogs(h200Request(dir.path().toStdString(), {log}));
            QCOMPARE(r.runs.size(), std::size_t {1});
            const LogRunReport& run = r.runs.front();
            QVERIFY2(std::fabs(run.predicted_step_s / run.measured_step_s - 1) > 0.3, log); // far off before
            QVERIFY2(std::fabs(run.calibrated_step_s / run.measured_step_s - 1) < 0.03, log);
            QCOMPARE(run.held_out_step_s, 0.0); // one run: nothing to leave out
        }
    }

    void severalRunsAreFittedTogetherAndLeftOut()
    {
        QTemporaryDir dir;
        const LogImportResult r = importTrainingLogs(
            h200Request(dir.path().toStdString(), {"a-mb2-s2k.log", "c-mb2-s2k-full.log", "d-mb1-s4k.log"}));
        QVERIFY(r.written);
        for (const auto& run : r.runs) {
            QVERIFY(std::fabs(run.calibrated_step_s / run.measured_step_s - 1) < 0.03);
            QVERIFY(run.held_out_step_s > 0);
        }
        // The runs used Megatron-Core's local layer (--transformer-impl local in the dump), whose attention keeps
        // the s x s probabilities: the prediction builds it so, with no flash kernel for the attention scale to
        // stretch (it hit its x20 cap when these runs were costed with flash attention) and no peak left for an
        // offset to fill (+8.6 GB then). Without recomputation the datasheet's peak is within 5% of the measured.
        QCOMPARE(r.calibration.attention_time_scale, 1.0);
        QVERIFY(std::fabs(r.calibration.memory_offset_bytes) < 1e9);
        for (const auto& run : r.runs)
            if (run.log != "c-mb2-s2k-full.log")
                QVERIFY2(std::fabs(run.predicted_peak_bytes / run.measured_peak_bytes - 1) < 0.05, run.log.c_str());
        QVERIFY(std::fabs(std::log(r.calibration.matmul_time_scale)) < std::log(1.5));
        // The fit says which layer its scales came from: they also carry that layer's other unfused kernels.
        QVERIFY(std::any_of(r.notes.begin(), r.notes.end(), [](const std::string& n) {
            return n.find("Megatron-Core's local layer") != std::string::npos;
        }));
        // One GPU: no communication in any run, so its scale is not fitted.
        QCOMPARE(r.calibration.collective_time_scale, 1.0);
        // The profile now carries it, and the planner's cost source uses it.
        const Profile saved = loadProfile(r.file);
        QVERIFY(saved.calibration.has_value());
        QCOMPARE(saved.calibration->runs.size(), std::size_t {3});
        ProfileRequest request;
        request.profile_dir = dir.path().toStdString();
        Cluster cluster = loadCluster("h200", 1, 1);
        const CostSourceChoice choice = chooseCostSource(cluster, CostParams {}, request);
        QVERIFY(choice.source->name().find("calibrated on 3 runs") != std::string::npos);
        QCOMPARE(choice.calibrated_memory_bytes, saved.calibration->memory_offset_bytes);
    }

    void knownScalesAreRecoveredFromGeneratedLogs()
    {
        // Logs generated from the engine's own prediction under known scales: the fit must find those scales
        // (matmul and attention separate because the runs differ in sequence length, hence attention share).
        QTemporaryDir dir;
        const std::filesystem::path root = dir.path().toStdString();
        ProfileCalibration truth;
        truth.matmul_time_scale = 1.3;
        truth.attention_time_scale = 2.0;
        LogImportRequest request = h200Request(root / "profile", {});
        const Cluster cluster = loadCluster("h200", 1, 1);
        Profile empty;
        empty.device.name = cluster.device.name;
        const auto base = makeProfileCostSource(std::make_shared<const Profile>(empty),
                                                makeDatasheetCostSource(cluster, CostParams {}));
        int index = 0;
        for (const std::int64_t seq : {1024, 4096, 16384}) {
            BuildOptions build;
            build.seq_len = seq;
            const auto graph = std::make_shared<const ModelGraph>(loadModel(kH200 + "llama3.2-1b.json", build));
            const CostModel model(graph, cluster, CostParams {}, makeCalibratedCostSource(truth, base));
            ParallelConfig c;
            c.micro_batch = 1;
            c.num_microbatches = 8;
            c.framework = Framework::MegatronCore;
            Workload w;
            w.global_batch = 8;
            w.seq_len = seq;
            w.memory_limit_bytes = 1e30;
            EvaluateOptions options;
            options.require_full_cluster = false;
            const double step = model.evaluate(c, w, options).step_time;
            const std::string name = cat("gen", index++);
            writeFile(root / (name + ".log"),
                      cat(" iteration       10/ 20 | elapsed time per iteration (ms): ", step * 1e3, " |\n"));
            writeFile(root / (name + ".sh"),
                      cat("torchrun --nnodes 1 --nproc-per-node 1 pretrain_gpt.py --tensor-model-parallel-size 1 "
                          "--micro-batch-size 1 --global-batch-size 8 --seq-length ",
                          seq, " --num-layers 16 --hidden-size 2048 --num-attention-heads 32\n"));
            request.runs.push_back({root / (name + ".log"), root / (name + ".sh")});
        }
        const LogImportResult r = importTrainingLogs(request);
        QVERIFY(std::none_of(r.notes.begin(), r.notes.end(),
                             [](const std::string& n) { return n.find("local layer") != std::string::npos; }));
        QVERIFY2(std::fabs(r.calibration.matmul_time_scale / 1.3 - 1) < 0.05,
                 cat(r.calibration.matmul_time_scale).c_str());
        QVERIFY2(std::fabs(r.calibration.attention_time_scale / 2.0 - 1) < 0.10,
                 cat(r.calibration.attention_time_scale).c_str());
        for (const auto& run : r.runs)
            QVERIFY(std::fabs(run.held_out_step_s / run.measured_step_s - 1) < 0.05);
    }

    void badInputLeavesTheProfileUntouched()
    {
        QTemporaryDir dir;
        const std::filesystem::path profileDir = dir.path().toStdString();
        LogImportRequest ok = h200Request(profileDir, {"a-mb2-s2k.log"});
        ok.dry_run = true;
        const LogImportResult dry = importTrainingLogs(ok);
        QVERIFY(!dry.written);
        QVERIFY(!std::filesystem::exists(profileDir / "profile.json"));

        writeFile(profileDir / "empty.log", "nothing here\n");
        LogImportRequest bad = h200Request(profileDir, {"a-mb2-s2k.log"});
        bad.runs.push_back({profileDir / "empty.log", {}});
        QVERIFY(inputErrorOf([&] { importTrainingLogs(bad); }).find("empty.log") != std::string::npos);
        QVERIFY(!std::filesystem::exists(profileDir / "profile.json"));

        // A log with steps but no argument dump needs its job config.
        writeFile(profileDir / "bare.log", " iteration 5/ 10 | elapsed time per iteration (ms): 100.0 |\n");
        LogImportRequest bare = h200Request(profileDir, {});
        bare.runs.push_back({profileDir / "bare.log", {}});
        QVERIFY(inputErrorOf([&] { importTrainingLogs(bare); }).find("no job config") != std::string::npos);

        LogImportRequest noCluster = h200Request(profileDir, {"a-mb2-s2k.log"});
        noCluster.cluster.clear();
        QVERIFY(inputErrorOf([&] { importTrainingLogs(noCluster); }).find("cluster") != std::string::npos);
    }
};

QTEST_APPLESS_MAIN(TestProfileLogs)
#include "tst_profile_logs.moc"
