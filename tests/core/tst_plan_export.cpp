// SPDX-License-Identifier: MIT
// Exporters and re-import: golden files for every target on two plans (llama2-7b tp2 pp2 dp2 ZeRO-1 selective 1F1B;
// llama2-70b tp8 pp4 vpp2 SP interleaved full recompute ZeRO-3 with uneven stages), round trips
// export -> importJobConfig -> the same parallel configuration wherever the target can express it, the plan JSON
// round trip, `bash -n` on the scripts, the DeepSpeed batch identity, Python's tomllib on the TOML, the notes for
// what a target cannot express, and malformed input rejected with the file and line named.
// SHARDSCAPE_UPDATE_GOLDEN=1 rewrites the golden files from the current output (then read the diff!).
#include "test_helpers.h"

#include "shardscape/cost/cost_model.h"
#include "shardscape/model/model_source.h"
#include "shardscape/plan/config_import.h"
#include "shardscape/plan/exporters.h"
#include "shardscape/plan/plan_file.h"
#include "shardscape/support/error.h"
#include "shardscape/support/strings.h"

#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

using namespace shardscape;
using nlohmann::json;

using shardscape::test::inputErrorOf;

namespace {

const std::filesystem::path kGoldenDir = std::filesystem::path(SHARDSCAPE_SOURCE_DIR) / "tests/data/export";

/** A plan as the exporters get it, with the model and cost model it was made on. */
struct PlanCase
{
    std::shared_ptr<const ModelGraph> graph;
    std::unique_ptr<CostModel> model;
    Evaluation evaluation;
    json doc; ///< planToJson
    LoadedPlan plan; ///< planFromJson(doc)
};

std::unique_ptr<PlanCase> makeCase(const std::string& preset, int nodes, const ParallelConfig& config,
                                   std::int64_t seqLen = 4096)
{
    auto c = std::make_unique<PlanCase>();
    BuildOptions build;
    build.batch = config.micro_batch;
    build.seq_len = seqLen;
    c->graph = std::make_shared<const ModelGraph>(loadModel(preset, build));
    c->model = std::make_unique<CostModel>(c->graph, loadCluster("h100-sxm", nodes, 8));
    Workload workload;
    workload.global_batch = config.globalBatch();
    workload.seq_len = seqLen;
    EvaluateOptions options;
    options.record_timeline = true;
    options.require_full_cluster = false;
    c->evaluation = c->model->evaluate(config, workload, options);
    PlanFileContext context;
    context.global_batch = config.globalBatch();
    context.seq_len = seqLen;
    context.model_name = preset;
    context.model_spec = preset;
    context.created_by = "tst_plan_export";
    context.version = "test";
    c->doc = planToJson(c->evaluation, *c->model, context);
    c->plan = planFromJson(c->doc, preset);
    return c;
}

ParallelConfig llama7bConfig()
{
    ParallelConfig c;
    c.tp = 2;
    c.pp = 2;
    c.dp = 2;
    c.micro_batch = 1;
    c.num_microbatches = 8;
    c.zero_stage = 1;
    c.recompute = RecomputeKind::Selective;
    c.schedule = ScheduleKind::OneFOneB;
    return c;
}

ParallelConfig llama70bConfig()
{
    ParallelConfig c;
    c.tp = 8;
    c.pp = 4;
    c.vpp = 2;
    c.dp = 2;
    c.micro_batch = 1;
    c.num_microbatches = 8;
    c.zero_stage = 3;
    c.sequence_parallel = true;
    c.recompute = RecomputeKind::Full;
    c.schedule = ScheduleKind::Interleaved1F1B;
    // Ranks 0 and 3 carry 9 blocks per chunk (plus the embedding / the head), ranks 1 and 2 carry 11.
    c.stage_layers = {10, 11, 11, 9, 9, 11, 11, 10};
    return c;
}

/** The two golden plans, built once. */
const PlanCase& planCase(const std::string& name)
{
    static std::map<std::string, std::unique_ptr<PlanCase>> cases;
    auto& slot = cases[name];
    if (!slot)
        slot = name == "llama2-7b" ? makeCase("llama2-7b", 1, llama7bConfig())
                                   : makeCase("llama2-70b", 8, llama70bConfig());
    return *slot;
}

std::string goldenName(const std::string& plan, ExportTarget target, const std::string& version = "v0.2")
{
    const std::string kind = target == ExportTarget::Json ? ".plan"
        : target == ExportTarget::ChromeTrace             ? ".trace"
        : target == ExportTarget::Dump                    ? ""
                                                          : "." + std::string(exportTargetName(target));
    return plan + kind + std::string(exportTargetSuffix(target, version));
}

std::string readFile(const std::filesystem::path& path)
{
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

void writeFile(const std::filesystem::path& path, const std::string& text)
{
    std::ofstream out(path, std::ios::binary);
    out << text;
}

/** The predicted numbers belong to the cost model, not to the exporters: a "Predicted:" line keeps its words only. */
std::string normalizeText(const std::string& text)
{
    static const std::regex predicted("Predicted:[^\\n\"]*");
    static const std::regex number("[0-9]+(\\.[0-9]+)?");
    std::string out;
    std::size_t last = 0;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), predicted); it != std::sregex_iterator(); ++it) {
        out += text.substr(last, static_cast<std::size_t>(it->position()) - last);
        out += std::regex_replace(it->str(), number, "#");
        last = static_cast<std::size_t>(it->position() + it->length());
    }
    return out + text.substr(last);
}

/** Same for JSON: every non-integer number is a prediction or a timing. */
json normalizeJson(json doc)
{
    if (doc.is_number_float())
        return 0.0;
    if (doc.is_string())
        return normalizeText(doc.get<std::string>());
    if (doc.is_array() || doc.is_object())
        for (auto& item : doc)
            item = normalizeJson(item);
    return doc;
}

bool isJsonTarget(ExportTarget target)
{
    return target == ExportTarget::Json || target == ExportTarget::DeepSpeed || target == ExportTarget::ChromeTrace;
}

/** The first line where two texts differ, for a readable failure. */
std::string firstDifference(const std::string& a, const std::string& b)
{
    std::istringstream ia(a);
    std::istringstream ib(b);
    std::string la;
    std::string lb;
    for (int line = 1;; ++line) {
        const bool ea = !std::getline(ia, la);
        const bool eb = !std::getline(ib, lb);
        if (ea && eb)
            return "(no difference)";
        if (ea || eb || la != lb)
            return "line " + std::to_string(line) + ":\n  golden: " + (ea ? "<end>" : la)
                + "\n  actual: " + (eb ? "<end>" : lb);
    }
}

/** torchtitan's TOML release: the one the importer reads back (main's Python configs are checked against their
    schema in tst_plan_export_schema). */
ExportOptions tomlRelease()
{
    ExportOptions options;
    options.framework_version = "v0.2";
    return options;
}

/** The export of a golden plan; torchtitan as v0.2 TOML unless `version` names another release. */
ExportResult exportCase(const std::string& name, ExportTarget target, const std::string& version = {})
{
    const PlanCase& c = planCase(name);
    ExportOptions options;
    options.framework_version = version.empty() && target == ExportTarget::Torchtitan ? "v0.2" : version;
    return exportPlan(target, c.plan, *c.graph, c.plan.cluster,
                      target == ExportTarget::ChromeTrace ? c.evaluation.simulation.get() : nullptr, options);
}

/** Whether the framework of `target` runs the golden plan (else its export is refused: refusedWhereTheFrameworkCannot).
 */
bool exported(const std::string& plan, ExportTarget target)
{
    return !(plan == "llama2-7b" && target == ExportTarget::Torchtitan) // ZeRO-1: FSDP2 is ZeRO-2/3
        && !(plan == "llama2-70b" && target == ExportTarget::DeepSpeed); // interleaved, ZeRO-3 under PP
}

/** Runs a program; returns its exit code (-1 when it could not start) and its output. */
int run(const QString& program, const QStringList& arguments, QByteArray* output = nullptr)
{
    QProcess process;
    process.setProcessChannelMode(QProcess::MergedChannels);
    process.start(program, arguments);
    if (!process.waitForStarted(10'000))
        return -1;
    process.waitForFinished(60'000);
    if (output)
        *output = process.readAll();
    return process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -1;
}

/**
 * What a target can express of a configuration: the configuration its export reads back as. The differences
 * are exactly the notes the exporters write (tested in notesSayWhatIsLost).
 */
ParallelConfig representable(ExportTarget target, const LoadedPlan& plan)
{
    ParallelConfig c = plan.config;
    c.stage_layers = plan.resolved_stage_layers;
    if (c.pp * c.vpp == 1)
        c.stage_layers.clear(); // one chunk holds everything: there is no split to write
    switch (target) {
    case ExportTarget::Torchtitan:
        c.sequence_parallel = c.tp > 1; // TP always shards the sequence
        if (c.dp * c.cp == 1)
            c.zero_stage = 0; // nothing to shard over
        else if (c.zero_stage == 1 || c.zero_stage == 2 || (c.zero_stage == 0 && (c.tp > 1 || c.pp > 1 || c.cp > 1)))
            c.zero_stage = 2; // FSDP2 without resharding after forward
        if (c.schedule == ScheduleKind::ZeroBubbleH1)
            c.schedule = ScheduleKind::OneFOneB;
        if (c.recompute == RecomputeKind::Modules)
            c.recompute = RecomputeKind::Selective; // per-op SAC
        break;
    case ExportTarget::Megatron:
        if (c.dp * c.cp == 1)
            c.zero_stage = 0; // nothing to shard over
        if (c.schedule == ScheduleKind::GPipe || c.schedule == ScheduleKind::ZeroBubbleH1)
            c.schedule = ScheduleKind::OneFOneB;
        break;
    case ExportTarget::DeepSpeed:
        c.sequence_parallel = false;
        c.vpp = 1;
        if (c.pp > 1) {
            c.schedule = ScheduleKind::OneFOneB;
            c.zero_stage = std::min(c.zero_stage, 1);
        }
        c.recompute = c.recompute == RecomputeKind::Full && c.pp > 1 ? RecomputeKind::Full : RecomputeKind::None;
        break; // the split is decided in code; _shardscape_layout records it
    default:
        break;
    }
    return c;
}

/** More plan shapes for the round trips: pure DP, CP, ZB-H1 with an uneven split, GPipe with module recompute,
    and Mixtral with expert parallelism. */
const std::vector<std::pair<std::string, ParallelConfig>>& variantConfigs()
{
    static const std::vector<std::pair<std::string, ParallelConfig>> configs = [] {
        std::vector<std::pair<std::string, ParallelConfig>> out;
        ParallelConfig dp;
        dp.dp = 8;
        dp.num_microbatches = 4;
        out.emplace_back("llama2-7b", dp);

        ParallelConfig cp;
        cp.tp = 2;
        cp.cp = 2;
        cp.dp = 2;
        cp.num_microbatches = 8;
        cp.zero_stage = 3;
        cp.sequence_parallel = true;
        cp.recompute = RecomputeKind::Full;
        out.emplace_back("llama2-7b", cp);

        ParallelConfig zb;
        zb.pp = 4;
        zb.dp = 2;
        zb.micro_batch = 2;
        zb.num_microbatches = 8;
        zb.schedule = ScheduleKind::ZeroBubbleH1;
        zb.stage_layers = {9, 8, 8, 9};
        zb.zero_stage = 1;
        out.emplace_back("llama2-7b", zb);

        ParallelConfig gpipe;
        gpipe.tp = 4;
        gpipe.pp = 2;
        gpipe.num_microbatches = 8;
        gpipe.schedule = ScheduleKind::GPipe;
        gpipe.recompute = RecomputeKind::Modules;
        gpipe.recompute_modules = {"mlp"};
        out.emplace_back("llama2-7b", gpipe);

        ParallelConfig moe;
        moe.tp = 2;
        moe.dp = 4;
        moe.ep = 4;
        moe.num_microbatches = 2;
        moe.zero_stage = 1;
        moe.sequence_parallel = true;
        out.emplace_back("mixtral-8x7b", moe);
        return out;
    }();
    return configs;
}

std::filesystem::path writeExport(const QTemporaryDir& dir, const std::string& name, ExportTarget target,
                                  const std::string& text)
{
    const std::filesystem::path path
        = std::filesystem::path(dir.path().toStdString()) / (name + std::string(exportTargetSuffix(target)));
    writeFile(path, text);
    return path;
}

/** A Megatron export written to a temporary script and read back by the importer. */
ImportedConfig reimportMegatron(const std::string& text, const ModelGraph& graph)
{
    QTemporaryDir dir;
    if (!dir.isValid())
        throw std::runtime_error("no temporary directory");
    ImportOptions options;
    options.num_layers = static_cast<int>(graph.transformer->num_layers);
    return importJobConfig(writeExport(dir, "job", ExportTarget::Megatron, text), options);
}

std::filesystem::path writeText(const QTemporaryDir& dir, const std::string& fileName, const std::string& text)
{
    const std::filesystem::path path = std::filesystem::path(dir.path().toStdString()) / fileName;
    writeFile(path, text);
    return path;
}

} // namespace

class TestPlanExport : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase()
    {
        for (const char* name : {"llama2-7b", "llama2-70b"}) {
            const PlanCase& c = planCase(name);
            QVERIFY2(c.evaluation.feasible, c.evaluation.reason.c_str());
            QVERIFY(c.evaluation.simulation && !c.evaluation.simulation->events.empty());
        }
        QCOMPARE(planCase("llama2-70b").plan.resolved_stage_layers, llama70bConfig().stage_layers);
    }

    void targetNames()
    {
        QCOMPARE(exportTargets().size(), std::size_t {7});
        for (const auto target : exportTargets())
            QCOMPARE(parseExportTarget(exportTargetName(target)), std::optional<ExportTarget>(target));
        QCOMPARE(parseExportTarget("yaml"), std::optional<ExportTarget>());
        QCOMPARE(std::string(exportTargetName(ExportTarget::ChromeTrace)), std::string("chrome-trace"));
    }

    void goldens_data()
    {
        QTest::addColumn<QString>("plan");
        QTest::addColumn<int>("target");
        QTest::addColumn<QString>("version");
        for (const char* plan : {"llama2-7b", "llama2-70b"}) {
            for (const auto target : exportTargets())
                if (exported(plan, target))
                    QTest::newRow(goldenName(plan, target).c_str()) << QString(plan) << static_cast<int>(target) << "";
            if (exported(plan, ExportTarget::Torchtitan)) // main's Python config beside the v0.2 TOML
                QTest::newRow(goldenName(plan, ExportTarget::Torchtitan, "main").c_str())
                    << QString(plan) << static_cast<int>(ExportTarget::Torchtitan) << "main";
        }
    }
    void goldens()
    {
        QFETCH(QString, plan);
        QFETCH(int, target);
        QFETCH(QString, version);
        const auto t = static_cast<ExportTarget>(target);
        const std::string name = plan.toStdString();
        const ExportResult result = exportCase(name, t, version.toStdString());
        const std::filesystem::path golden
            = kGoldenDir / goldenName(name, t, version.isEmpty() ? "v0.2" : version.toStdString());
        if (qEnvironmentVariableIsSet("SHARDSCAPE_UPDATE_GOLDEN")) {
            std::filesystem::create_directories(kGoldenDir);
            writeFile(golden, result.text);
        }
        QVERIFY2(std::filesystem::exists(golden), golden.c_str());
        const std::string expected = readFile(golden);
        if (isJsonTarget(t)) {
            const json actualDoc = normalizeJson(json::parse(result.text));
            const json expectedDoc = normalizeJson(json::parse(expected));
            QVERIFY2(actualDoc == expectedDoc, firstDifference(expectedDoc.dump(1), actualDoc.dump(1)).c_str());
        } else {
            const std::string a = normalizeText(result.text);
            const std::string e = normalizeText(expected);
            QVERIFY2(a == e, firstDifference(e, a).c_str());
        }
        // Every text names Shardscape, the model, the cluster and the predicted step time and MFU.
        if (t != ExportTarget::Json) {
            QVERIFY(result.text.find("Shardscape") != std::string::npos);
            QVERIFY(result.text.find(name) != std::string::npos);
            QVERIFY(result.text.find("h100-sxm") != std::string::npos);
            QVERIFY(result.text.find("step time") != std::string::npos);
            QVERIFY(result.text.find("MFU") != std::string::npos);
        }
    }

    void planJsonRoundTrip_data()
    {
        QTest::addColumn<QString>("plan");
        QTest::newRow("llama2-7b") << "llama2-7b";
        QTest::newRow("llama2-70b") << "llama2-70b";
    }
    void planJsonRoundTrip()
    {
        QFETCH(QString, plan);
        const PlanCase& c = planCase(plan.toStdString());
        const ExportResult result = exportCase(plan.toStdString(), ExportTarget::Json);
        QVERIFY2(result.notes.empty(), result.notes.empty() ? "" : result.notes.front().c_str());
        // Re-simulated and written again: the same document to the bit, and it loads.
        const json doc = json::parse(result.text);
        QVERIFY2(doc == c.doc, firstDifference(c.doc.dump(1), doc.dump(1)).c_str());
        const LoadedPlan again = planFromJson(doc, "export");
        QCOMPARE(again.config.describe(), c.plan.config.describe());
        QCOMPARE(again.resolved_stage_layers, c.plan.resolved_stage_layers);
        QVERIFY(again.metrics.step_time_s == c.plan.metrics.step_time_s);
    }

    void roundTrip_data()
    {
        QTest::addColumn<QString>("plan");
        QTest::addColumn<int>("target");
        for (const char* plan : {"llama2-7b", "llama2-70b"})
            for (const auto target : {ExportTarget::Torchtitan, ExportTarget::Megatron, ExportTarget::DeepSpeed})
                if (exported(plan, target))
                    QTest::newRow(goldenName(plan, target).c_str()) << QString(plan) << static_cast<int>(target);
    }
    void roundTrip()
    {
        QFETCH(QString, plan);
        QFETCH(int, target);
        const auto t = static_cast<ExportTarget>(target);
        const PlanCase& c = planCase(plan.toStdString());
        const ExportResult result = exportCase(plan.toStdString(), t);
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const auto path = writeExport(dir, "job", t, result.text);
        ImportOptions options;
        options.num_layers = static_cast<int>(c.graph->transformer->num_layers);
        const ImportedConfig imported = importJobConfig(path, options);

        const ParallelConfig expected = representable(t, c.plan);
        const ParallelConfig& got = imported.config;
        QCOMPARE(got.tp, expected.tp);
        QCOMPARE(got.pp, expected.pp);
        QCOMPARE(got.dp, expected.dp);
        QCOMPARE(got.cp, expected.cp);
        QCOMPARE(got.ep, expected.ep);
        QCOMPARE(got.vpp, expected.vpp);
        QCOMPARE(got.micro_batch, expected.micro_batch);
        QCOMPARE(got.num_microbatches, expected.num_microbatches);
        QCOMPARE(got.zero_stage, expected.zero_stage);
        QCOMPARE(got.sequence_parallel, expected.sequence_parallel);
        QCOMPARE(recomputeName(got.recompute), recomputeName(expected.recompute));
        QCOMPARE(scheduleName(got.schedule), scheduleName(expected.schedule));
        QCOMPARE(got.stage_layers, expected.stage_layers);
        QCOMPARE(imported.global_batch, c.plan.global_batch);
        QCOMPARE(got.globalBatch(), c.plan.global_batch);
        if (t != ExportTarget::DeepSpeed)
            QCOMPARE(imported.seq_len, c.plan.seq_len);
        // The importer names the framework the file is for, unless its profile cannot run the file as written.
        const Framework framework = t == ExportTarget::Torchtitan ? Framework::Torchtitan
            : t == ExportTarget::Megatron                         ? Framework::MegatronCore
                                                                  : Framework::DeepSpeed;
        if (got.framework == Framework::Generic) {
            QVERIFY(std::any_of(imported.warnings.begin(), imported.warnings.end(), [](const std::string& w) {
                return w.find("profile does not run this configuration") != std::string::npos;
            }));
        } else {
            QCOMPARE(int(got.framework), int(framework));
            QVERIFY(frameworkRestriction(frameworkProfile(framework), got).empty());
        }
        if (t == ExportTarget::Megatron) {
            // The script carries the model's shape and the launch shape.
            QVERIFY(imported.model.has_value());
            const TransformerShape& m = *imported.model;
            const TransformerShape& shape = *c.graph->transformer;
            QCOMPARE(m.num_layers, shape.num_layers);
            QCOMPARE(m.hidden, shape.hidden);
            QCOMPARE(m.num_heads, shape.num_heads);
            QCOMPARE(m.num_kv_heads, shape.num_kv_heads);
            QCOMPARE(m.head_dim, shape.head_dim);
            QCOMPARE(m.ffn_hidden, shape.ffn_hidden);
            QCOMPARE(m.vocab, shape.vocab);
            QCOMPARE(m.gated_mlp, shape.gated_mlp);
            QCOMPARE(m.tied_embeddings, shape.tied_embeddings);
            QCOMPARE(m.norm, shape.norm);
            QCOMPARE(imported.nodes * imported.gpus_per_node, c.plan.config.worldSize());
        }
    }

    void frameworkSwitchesSurviveExportAndImport_data()
    {
        QTest::addColumn<int>("target");
        QTest::addColumn<bool>("rowwise");
        QTest::newRow("megatron") << static_cast<int>(ExportTarget::Megatron) << false;
        QTest::newRow("torchtitan") << static_cast<int>(ExportTarget::Torchtitan) << false;
        QTest::newRow("torchtitan rowwise") << static_cast<int>(ExportTarget::Torchtitan) << true;
    }
    void frameworkSwitchesSurviveExportAndImport()
    {
        QFETCH(int, target);
        QFETCH(bool, rowwise);
        const auto t = static_cast<ExportTarget>(target);
        ParallelConfig config = llama7bConfig();
        config.sequence_parallel = true;
        config.tp_comm_overlap = true;
        config.overlap_param_gather = true;
        config.fp8_linears = true;
        config.fp8_recipe = rowwise ? Float8Recipe::Rowwise : Float8Recipe::Tensorwise;
        if (t == ExportTarget::Torchtitan) {
            config.zero_stage = 3; // FSDP2, which prefetches its own gathers
            config.overlap_param_gather = false;
        }
        const auto c = makeCase("llama2-7b", 1, config);
        QVERIFY2(c->evaluation.feasible, c->evaluation.reason.c_str());
        QVERIFY(c->plan.config.tp_comm_overlap && c->plan.config.fp8_linears);
        const ExportResult result = exportPlan(t, c->plan, *c->graph, c->plan.cluster, nullptr,
                                               t == ExportTarget::Torchtitan ? tomlRelease() : ExportOptions {});
        if (t == ExportTarget::Megatron) {
            for (const char* flag :
                 {"--tp-comm-overlap", "--overlap-param-gather", "--fp8-format hybrid", "--fp8-recipe tensorwise"})
                QVERIFY2(result.text.find(flag) != std::string::npos, flag);
        } else {
            for (const char* key : {"enable_async_tensor_parallel = true", "quantize.linear.float8", "[compile]"})
                QVERIFY2(result.text.find(key) != std::string::npos, key);
            // torchtitan's float8 converter asserts FSDP's float8 all-gather is off when a recipe_name is given.
            QCOMPARE(result.text.find("recipe_name = \"rowwise\"") != std::string::npos, rowwise);
            if (rowwise)
                QVERIFY(result.text.find("enable_fsdp_float8_all_gather = false") != std::string::npos);
        }
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        ImportOptions options;
        options.num_layers = static_cast<int>(c->graph->transformer->num_layers);
        const ImportedConfig imported = importJobConfig(writeExport(dir, "job", t, result.text), options);
        QVERIFY(imported.config.tp_comm_overlap);
        QVERIFY(imported.config.fp8_linears);
        QCOMPARE(imported.config.fp8_recipe, config.fp8_recipe);
        for (const auto& warning : imported.warnings)
            QVERIFY2(warning.find("recipe") == std::string::npos, warning.c_str());
        // FSDP2 prefetches its own gathers: torchtitan has no parameter-gather switch to carry.
        QCOMPARE(imported.config.overlap_param_gather, t == ExportTarget::Megatron);
    }

    void vSchedulesRoundTripThroughTorchtitan_data()
    {
        QTest::addColumn<int>("kind");
        QTest::addColumn<QString>("name");
        QTest::newRow("zb-v") << static_cast<int>(ScheduleKind::ZeroBubbleV) << QStringLiteral("ZBVZeroBubble");
        QTest::newRow("dualpipev") << static_cast<int>(ScheduleKind::DualPipeV) << QStringLiteral("DualPipeV");
    }
    void vSchedulesRoundTripThroughTorchtitan()
    {
        // torchtitan v0.2.x runs PyTorch's ScheduleZBVZeroBubble and ScheduleDualPipeV: two stages per rank in a V.
        QFETCH(int, kind);
        QFETCH(QString, name);
        ParallelConfig config = llama7bConfig();
        config.vpp = 2;
        config.schedule = static_cast<ScheduleKind>(kind);
        config.zero_stage = 3;
        config.framework = Framework::Torchtitan;
        const auto c = makeCase("llama2-7b", 1, config);
        QVERIFY2(c->evaluation.feasible, c->evaluation.reason.c_str());
        const ExportResult result
            = exportPlan(ExportTarget::Torchtitan, c->plan, *c->graph, c->plan.cluster, nullptr, tomlRelease());
        const std::string line = "pipeline_parallel_schedule = \"" + name.toStdString() + "\"";
        QVERIFY2(result.text.find(line) != std::string::npos, result.text.c_str());
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        ImportOptions options;
        options.num_layers = static_cast<int>(c->graph->transformer->num_layers);
        const ImportedConfig imported
            = importJobConfig(writeExport(dir, "job", ExportTarget::Torchtitan, result.text), options);
        QCOMPARE(static_cast<int>(imported.config.schedule), kind);
        QCOMPARE(imported.config.vpp, 2);
        // The stage split survives: virtual stage v's layers, read off the rank that runs it.
        std::vector<int> expected;
        for (int v = 0; v < 2 * config.pp; ++v) {
            const int rank = stageRank(config.schedule, config.pp, v);
            const auto& chunks = c->evaluation.stages[static_cast<std::size_t>(rank)].chunks;
            const auto& chunk = chunks[v < config.pp ? 0 : 1];
            expected.push_back(chunk.second - chunk.first + 1);
        }
        QCOMPARE(imported.config.stage_layers, expected);
        // Megatron runs neither: the framework's limits name the schedules it has.
        config.framework = Framework::MegatronCore;
        config.zero_stage = 1;
        const std::string why = frameworkRestriction(frameworkProfile(config.framework), config);
        QVERIFY2(why.find("pipeline schedule") != std::string::npos, why.c_str());
    }

    void dualPipePlanRoundTripsAndIsRefusedByTorchtitan()
    {
        // Bidirectional DualPipe over 4 ranks: each rank runs model stage r one way and stage 3 - r the other, so
        // the plan lists two chunks per rank that together cover the model twice, and its stage split has pp entries.
        ParallelConfig config = llama7bConfig();
        config.pp = 4;
        config.vpp = 2;
        config.dp = 1;
        config.schedule = ScheduleKind::DualPipe;
        const auto c = makeCase("llama2-7b", 1, config);
        QVERIFY2(c->evaluation.feasible, c->evaluation.reason.c_str());
        QCOMPARE(static_cast<int>(c->plan.resolved_stage_layers.size()), config.pp);
        int layers = 0;
        for (const int n : c->plan.resolved_stage_layers)
            layers += n;
        QCOMPARE(layers, static_cast<int>(c->model->layers().size()));
        for (int r = 0; r < config.pp; ++r) {
            const auto& chunks = c->evaluation.stages[static_cast<std::size_t>(r)].chunks;
            QCOMPARE(static_cast<int>(chunks.size()), 2);
            const auto& mirrored = c->evaluation.stages[static_cast<std::size_t>(config.pp - 1 - r)].chunks;
            QCOMPARE(chunks[0], mirrored[1]); // rank r's forward stage is its mirror rank's reverse stage
        }
        // The plan file reads back as it was written, pinned split included.
        const LoadedPlan again = planFromJson(c->doc, "export");
        QCOMPARE(static_cast<int>(again.config.schedule), static_cast<int>(ScheduleKind::DualPipe));
        QCOMPARE(again.resolved_stage_layers, c->plan.resolved_stage_layers);
        // torch.distributed.pipelining has no bidirectional schedule: torchtitan plans refuse it.
        config.framework = Framework::Torchtitan;
        config.zero_stage = 3;
        const std::string why = frameworkRestriction(frameworkProfile(config.framework), config);
        QVERIFY2(why.find("pipeline schedule") != std::string::npos, why.c_str());
    }

    void expertAllToAllOverlapRoundTrips()
    {
        // A Megatron export of an MoE plan with the all-to-all overlap and whole experts (etp 1 under tp 2) carries
        // Megatron's flags for both, and the importer turns them back into the plan's settings.
        ParallelConfig config;
        config.tp = 2;
        config.sequence_parallel = true;
        config.etp = 1;
        config.dp = 16;
        config.ep = 8;
        config.num_microbatches = 2;
        config.zero_stage = 1;
        config.recompute = RecomputeKind::Selective; // Megatron refuses the overlap with full recomputation
        config.framework = Framework::MegatronCore;
        config.moe_a2a_overlap = true;
        config.moe_capacity_factor = 1.25;
        const auto c = makeCase("qwen3-30b-a3b", 4, config);
        QVERIFY2(c->evaluation.feasible, c->evaluation.reason.c_str());
        const ExportResult result = exportPlan(ExportTarget::Megatron, c->plan, *c->graph, c->plan.cluster, nullptr);
        for (const char* flag : {"--overlap-moe-expert-parallel-comm", "--delay-wgrad-compute",
                                 "--expert-tensor-parallel-size 1", "--moe-expert-capacity-factor 1.25"})
            QVERIFY2(result.text.find(flag) != std::string::npos, flag);
        const ImportedConfig imported = reimportMegatron(result.text, *c->graph);
        QVERIFY(imported.config.moe_a2a_overlap);
        QCOMPARE(imported.config.moe_capacity_factor, 1.25);
        QCOMPARE(imported.config.ep, 8);
        QCOMPARE(imported.config.expertTp(), 1);
    }

    void megatronExportCarriesLatentAttentionAndExperts()
    {
        // DeepSeek-V3 as Megatron builds it: MLA's ranks and head dims, 256 routed experts of 2,048 with one shared
        // expert, and three dense layers before the MoE ones.
        ParallelConfig config;
        config.pp = 16;
        config.dp = 128;
        config.ep = 64;
        config.num_microbatches = 16;
        config.zero_stage = 1;
        config.recompute = RecomputeKind::Full;
        config.framework = Framework::MegatronCore;
        config.moe_shared_expert_overlap = true;
        const auto c = makeCase("deepseek-v3", 256, config);
        const ExportResult result = exportPlan(ExportTarget::Megatron, c->plan, *c->graph, c->plan.cluster, nullptr);
        for (const char* flag :
             {"--moe-shared-expert-overlap", "--multi-latent-attention", "--q-lora-rank 1536", "--kv-lora-rank 512",
              "--qk-head-dim 128", "--qk-pos-emb-head-dim 64", "--v-head-dim 128", "--num-experts 256",
              "--moe-router-topk 8", "--moe-ffn-hidden-size 2048", "--ffn-hidden-size 18432",
              "--moe-shared-expert-intermediate-size 2048", "--moe-layer-freq '[0,0,0,1,1", "--moe-grouped-gemm",
              "--disable-bias-linear"})
            QVERIFY2(result.text.find(flag) != std::string::npos, flag);
        const ImportedConfig imported = reimportMegatron(result.text, *c->graph);
        QVERIFY(imported.config.moe_shared_expert_overlap);
    }

    void megatronExportOfGptNeoxKeepsItsBiases()
    {
        // GPT-NeoX has biases on every linear (Megatron's default), untied embeddings and rotary; its parallel
        // residual has no Megatron-Core flag, which the export says rather than leaving out silently.
        ParallelConfig config;
        config.tp = 2;
        config.pp = 4;
        config.num_microbatches = 8;
        config.zero_stage = 1;
        config.recompute = RecomputeKind::Full;
        config.framework = Framework::MegatronCore;
        const auto c = makeCase("gpt-neox-20b", 8, config);
        QVERIFY2(c->evaluation.feasible, c->evaluation.reason.c_str());
        const ExportResult result = exportPlan(ExportTarget::Megatron, c->plan, *c->graph, c->plan.cluster, nullptr);
        for (const char* flag :
             {"--normalization LayerNorm", "--position-embedding-type rope", "--rotary-base 10000",
              "--untie-embeddings-and-output-weights", "--ffn-hidden-size 24576", "parallel residual"})
            QVERIFY2(result.text.find(flag) != std::string::npos, flag);
        QVERIFY(result.text.find("--disable-bias-linear") == std::string::npos);
        QVERIFY(result.text.find("--swiglu") == std::string::npos);
    }

    void torchtitanRefusesArchitecturesItHasNoModelFor()
    {
        // A GPT-NeoX plan as torchtitan would run it (FSDP2) still has no torchtitan model to run: the export is
        // refused with the cause rather than written with an import of a torchtitan.models package that does not
        // exist. Megatron and DeepSpeed take the same plan.
        ParallelConfig config;
        config.tp = 2;
        config.dp = 4;
        config.num_microbatches = 2;
        config.zero_stage = 3;
        const auto c = makeCase("gpt-neox-20b", 1, config, 2048);
        for (const std::string version : {"main", "v0.2"}) {
            ExportOptions options;
            options.framework_version = version;
            const std::string error = test::inputErrorOf(
                [&] { exportPlan(ExportTarget::Torchtitan, c->plan, *c->graph, c->plan.cluster, nullptr, options); });
            QVERIFY2(error.find(
                         cat("cannot export this plan for torchtitan: torchtitan ", version, " has no gpt_neox model"))
                         != std::string::npos,
                     error.c_str());
            QVERIFY2(error.find("--format megatron or --format deepspeed") != std::string::npos, error.c_str());
        }
        QVERIFY(!exportPlan(ExportTarget::DeepSpeed, c->plan, *c->graph, c->plan.cluster).text.empty());
    }

    void exportsNameTheFrameworkProfile_data()
    {
        QTest::addColumn<int>("target");
        QTest::addColumn<int>("framework");
        QTest::newRow("megatron") << static_cast<int>(ExportTarget::Megatron) << int(Framework::MegatronCore);
        QTest::newRow("torchtitan") << static_cast<int>(ExportTarget::Torchtitan) << int(Framework::Torchtitan);
        QTest::newRow("deepspeed") << static_cast<int>(ExportTarget::DeepSpeed) << int(Framework::DeepSpeed);
    }
    void exportsNameTheFrameworkProfile()
    {
        QFETCH(int, target);
        QFETCH(int, framework);
        const auto t = static_cast<ExportTarget>(target);
        const std::string name(frameworkName(static_cast<Framework>(framework)));
        const PlanCase& golden = planCase("llama2-7b");
        PlanCase c {golden.graph, nullptr, {}, golden.doc, golden.plan};
        if (t == ExportTarget::Torchtitan) {
            // The plan is ZeRO-1, which torchtitan (FSDP2 only) cannot run: refused with the reason.
            const std::string error = test::inputErrorOf([&] { exportPlan(t, c.plan, *c.graph, c.plan.cluster); });
            QVERIFY2(error.find("cannot export this plan for torchtitan: torchtitan runs ZeRO stages 2, 3 only")
                         != std::string::npos,
                     error.c_str());
            c.plan.config.zero_stage = 3;
        }
        // A generic plan: the target's profile is named, nothing is wrong.
        std::string text = exportPlan(t, c.plan, *c.graph, c.plan.cluster).text;
        QVERIFY2(text.find("Framework profile: " + name + " (") != std::string::npos, text.c_str());
        QVERIFY(text.find("WARNING: the plan was made for") == std::string::npos);

        // A plan for this very framework: no warning either.
        LoadedPlan same = c.plan;
        same.config.framework = static_cast<Framework>(framework);
        text = exportPlan(t, same, *c.graph, c.plan.cluster).text;
        QVERIFY2(text.find("the plan was made for it") != std::string::npos, text.c_str());
        QVERIFY(text.find("WARNING: the plan was made for") == std::string::npos);

        // A plan for another named framework still exports, with a warning line.
        LoadedPlan other = c.plan;
        other.config.framework = t == ExportTarget::Megatron ? Framework::Torchtitan : Framework::MegatronCore;
        const ExportResult result = exportPlan(t, other, *c.graph, c.plan.cluster);
        const std::string warning
            = cat("WARNING: the plan was made for ", frameworkName(other.config.framework), ", not ", name);
        QVERIFY2(result.text.find(warning) != std::string::npos, result.text.c_str());
        if (t != ExportTarget::DeepSpeed) // a comment line in the scripts and the TOML
            QVERIFY(result.text.find("# " + warning) != std::string::npos);
        else
            QVERIFY(json::parse(result.text)["_comment"].dump().find(warning) != std::string::npos);
    }

    void importersSetTheFramework()
    {
        QTemporaryDir dir;
        ImportOptions options;
        options.world_size = 16;
        // torchtitan with FSDP: its own profile.
        const std::string fsdp = "[training]\nlocal_batch_size = 4\nseq_len = 4096\n[parallelism]\n"
                                 "data_parallel_shard_degree = -1\ntensor_parallel_degree = 2\n";
        ImportedConfig imported = importJobConfig(writeText(dir, "fsdp.toml", fsdp), options);
        QCOMPARE(int(imported.config.framework), int(Framework::Torchtitan));
        QVERIFY(imported.config.describe().find("[torchtitan]") != std::string::npos);
        // torchtitan with DDP only keeps fp32 weights, which its profile does not model: generic, with a warning.
        const std::string ddp = "[training]\nlocal_batch_size = 4\nseq_len = 4096\n[parallelism]\n"
                                "data_parallel_replicate_degree = 16\ndata_parallel_shard_degree = 1\n";
        imported = importJobConfig(writeText(dir, "ddp.toml", ddp), options);
        QCOMPARE(imported.config.zero_stage, 0);
        QCOMPARE(int(imported.config.framework), int(Framework::Generic));
        QVERIFY(std::any_of(imported.warnings.begin(), imported.warnings.end(), [](const std::string& w) {
            return w.find("the torchtitan profile does not run this configuration") != std::string::npos
                && w.find("simulated with the generic profile") != std::string::npos;
        }));
        // DeepSpeed JSON.
        imported
            = importJobConfig(writeText(dir, "ds.json", R"({"train_batch_size": 64, "train_micro_batch_size_per_gpu": 1,
                                          "zero_optimization": {"stage": 2}})"),
                              options);
        QCOMPARE(int(imported.config.framework), int(Framework::DeepSpeed));
        // DeepSpeed's pipeline with ZeRO-2: DeepSpeed refuses it; simulated as written under the generic profile.
        imported = importJobConfig(writeText(dir, "ds_pipe.json", R"({"train_batch_size": 64,
            "train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 2}, "pipeline": {"stages": 2}})"),
                                   options);
        QCOMPARE(imported.config.pp, 2);
        QCOMPARE(int(imported.config.framework), int(Framework::Generic));
        // A Megatron-LM script: Megatron-Core.
        imported = importJobConfig(writeText(dir, "train.sh",
                                             "torchrun --nproc-per-node 8 --nnodes 2 pretrain_gpt.py "
                                             "--tensor-model-parallel-size 2 --micro-batch-size 1 "
                                             "--global-batch-size 64 --seq-length 4096\n"),
                                   options);
        QCOMPARE(int(imported.config.framework), int(Framework::MegatronCore));
        // A plan file keeps the plan's own.
        json doc = planCase("llama2-70b").doc;
        doc["config"]["framework"] = "nemo";
        imported = importJobConfig(writeText(dir, "plan.json", doc.dump()), options);
        QCOMPARE(int(imported.config.framework), int(Framework::NeMo));
    }

    void scriptsPassBashSyntaxCheck_data()
    {
        QTest::addColumn<QString>("plan");
        QTest::addColumn<int>("target");
        for (const char* plan : {"llama2-7b", "llama2-70b"})
            for (const auto target : {ExportTarget::Megatron, ExportTarget::Torchrun})
                QTest::newRow(goldenName(plan, target).c_str()) << QString(plan) << static_cast<int>(target);
    }
    void scriptsPassBashSyntaxCheck()
    {
        QFETCH(QString, plan);
        QFETCH(int, target);
        if (!QFile::exists("/bin/bash"))
            QSKIP("/bin/bash is not installed");
        QTemporaryDir dir;
        const auto t = static_cast<ExportTarget>(target);
        const auto path = writeExport(dir, "launch", t, exportCase(plan.toStdString(), t).text);
        QByteArray output;
        QCOMPARE(run("/bin/bash", {"-n", QString::fromStdString(path.string())}, &output), 0);
        QVERIFY2(output.isEmpty(), output.constData());
    }

    void deepSpeedBatchIdentity()
    {
        // runtime/config.py asserts train_batch_size = micro x accumulation x DeepSpeed's data-parallel size, which
        // counts every rank but the pipeline's unless the model code gives it the TP groups. With TP the export
        // leaves train_batch_size to DeepSpeed; without, it writes the identity.
        const PlanCase& c = planCase("llama2-7b");
        json doc = json::parse(exportCase("llama2-7b", ExportTarget::DeepSpeed).text);
        QVERIFY(!doc.contains("train_batch_size"));
        const std::int64_t micro = doc.at("train_micro_batch_size_per_gpu");
        const std::int64_t accumulation = doc.at("gradient_accumulation_steps");
        QCOMPARE(micro * accumulation * c.plan.config.dp, c.plan.global_batch);
        QCOMPARE(doc.at("bf16").at("enabled").get<bool>(), true);
        // DeepSpeed reads no pipeline.stages / partition: the layout goes to a key it ignores, for the reader and
        // the importer; AutoTP is not switched on under a pipeline.
        QVERIFY(!doc.at("pipeline").contains("stages") && !doc.at("pipeline").contains("partition"));
        QCOMPARE(doc.at("_shardscape_layout").at("pipeline_stages").get<int>(), c.plan.config.pp);
        QVERIFY(!doc.contains("tensor_parallel"));

        // Pure data parallelism: the whole triple, as DeepSpeed asserts it.
        ParallelConfig dp;
        dp.dp = 8;
        dp.num_microbatches = 4;
        const auto plain = makeCase("llama2-7b", 1, dp, 2048);
        doc = json::parse(exportPlan(ExportTarget::DeepSpeed, plain->plan, *plain->graph, plain->plan.cluster).text);
        QCOMPARE(doc.at("train_batch_size").get<std::int64_t>(), std::int64_t {32});
        QCOMPARE(doc.at("train_micro_batch_size_per_gpu").get<std::int64_t>()
                     * doc.at("gradient_accumulation_steps").get<std::int64_t>() * 8,
                 std::int64_t {32});

        // TP without a pipeline: AutoTP, and DeepSpeed derives the batch (it counts every rank under AutoTP).
        ParallelConfig tp;
        tp.tp = 2;
        tp.dp = 4;
        tp.num_microbatches = 2;
        const auto autotp = makeCase("llama2-7b", 1, tp, 2048);
        doc = json::parse(exportPlan(ExportTarget::DeepSpeed, autotp->plan, *autotp->graph, autotp->plan.cluster).text);
        QCOMPARE(doc.at("tensor_parallel").at("autotp_size").get<int>(), 2);
        QVERIFY(!doc.contains("train_batch_size"));
    }

    void refusedWhereTheFrameworkCannotRun()
    {
        // The frameworks' own start-up checks: torchtitan has no ZeRO-1, DeepSpeed's pipeline engine no interleaving.
        const std::string titan = test::inputErrorOf([] { exportCase("llama2-7b", ExportTarget::Torchtitan); });
        QVERIFY2(titan.find("torchtitan runs ZeRO stages 2, 3 only") != std::string::npos, titan.c_str());
        QVERIFY2(titan.find("plan --framework torchtitan") != std::string::npos, titan.c_str());
        const std::string deepspeed = test::inputErrorOf([] { exportCase("llama2-70b", ExportTarget::DeepSpeed); });
        QVERIFY2(deepspeed.find("deepspeed has no interleaved pipeline schedule") != std::string::npos,
                 deepspeed.c_str());
        // torchtitan v0.2 trains TP/PP plans without FSDP in float32; main applies FSDP at any degree.
        ParallelConfig single;
        single.tp = 8;
        single.zero_stage = 3;
        single.num_microbatches = 1;
        const auto c = makeCase("llama2-7b", 1, single, 2048);
        const std::string v02 = test::inputErrorOf(
            [&] { exportPlan(ExportTarget::Torchtitan, c->plan, *c->graph, c->plan.cluster, nullptr, tomlRelease()); });
        QVERIFY2(v02.find("float32") != std::string::npos, v02.c_str());
        QVERIFY(exportPlan(ExportTarget::Torchtitan, c->plan, *c->graph, c->plan.cluster).text.find("shardscape_plan")
                != std::string::npos);
        // Async TP without torch.compile raises at torchtitan's start-up, in both releases.
        LoadedPlan eager = c->plan;
        eager.config.sequence_parallel = true;
        eager.config.tp_comm_overlap = true;
        eager.config.eager_kernels = true;
        for (const char* version : {"main", "v0.2"}) {
            ExportOptions options;
            options.framework_version = version;
            const std::string error = test::inputErrorOf(
                [&] { exportPlan(ExportTarget::Torchtitan, eager, *c->graph, c->plan.cluster, nullptr, options); });
            QVERIFY2(error.find("async TP needs torch.compile") != std::string::npos, error.c_str());
        }
        // PyTorch's Schedule1F1B raises with fewer micro-batches than stages.
        LoadedPlan few = planCase("llama2-70b").plan;
        few.config.vpp = 1;
        few.config.schedule = ScheduleKind::OneFOneB;
        few.config.num_microbatches = 2;
        const std::string stages = test::inputErrorOf([&] {
            exportPlan(ExportTarget::Torchtitan, few, *planCase("llama2-70b").graph, few.cluster, nullptr,
                       tomlRelease());
        });
        QVERIFY2(stages.find("fewer micro-batches (2) than stages (4)") != std::string::npos, stages.c_str());
    }

    void fileNamesAreWhatTheLauncherRuns()
    {
        // The torchrun launcher runs the torchtitan config of its release from the file name the exports (and the
        // desktop app's save dialogs) suggest.
        for (const char* version : {"main", "v0.2"}) {
            const std::string config = exportDefaultFileName(ExportTarget::Torchtitan, version);
            QCOMPARE(std::filesystem::path(config).extension().string(),
                     std::string(exportTargetSuffix(ExportTarget::Torchtitan, version)));
            const std::string launcher = exportCase("llama2-70b", ExportTarget::Torchrun, version).text;
            QVERIFY2(launcher.find("CONFIG=${CONFIG:-$(dirname \"$0\")/" + config + "}") != std::string::npos,
                     launcher.c_str());
        }
        QCOMPARE(exportDefaultFileName(ExportTarget::Torchtitan), std::string("plan_config.py"));
        QCOMPARE(exportDefaultFileName(ExportTarget::Torchrun), std::string("launch.sh"));
        QCOMPARE(exportDefaultFileName(ExportTarget::Dump), std::string("plan.dump"));
        QCOMPARE(exportDefaultFileName(ExportTarget::DeepSpeed), std::string("ds_config.json"));
    }

    void tomlParsesWithTomllib_data()
    {
        QTest::addColumn<QString>("plan");
        QTest::newRow("llama2-70b") << "llama2-70b";
    }
    void tomlParsesWithTomllib()
    {
        QFETCH(QString, plan);
        const QString python = QStandardPaths::findExecutable("python3");
        if (python.isEmpty())
            QSKIP("python3 is not installed");
        QByteArray output;
        if (run(python, {"-c", "import tomllib"}, &output) != 0)
            QSKIP("python3 has no tomllib (3.11 or later)");
        const PlanCase& c = planCase(plan.toStdString());
        QTemporaryDir dir;
        const auto path = writeExport(dir, "job", ExportTarget::Torchtitan,
                                      exportCase(plan.toStdString(), ExportTarget::Torchtitan).text);
        const QString program = "import json, sys, tomllib; print(json.dumps(tomllib.load(open(sys.argv[1], 'rb'))))";
        QCOMPARE(run(python, {"-c", program, QString::fromStdString(path.string())}, &output), 0);
        const json doc = json::parse(output.toStdString());

        // Degrees multiply to the world size; batches follow torchtitan's arithmetic.
        const json& p = doc.at("parallelism");
        const ParallelConfig& config = c.plan.config;
        const int replicate = p.at("data_parallel_replicate_degree");
        const int shard = p.at("data_parallel_shard_degree");
        QCOMPARE(replicate * shard * p.at("tensor_parallel_degree").get<int>()
                     * p.at("pipeline_parallel_degree").get<int>() * p.at("context_parallel_degree").get<int>(),
                 config.worldSize());
        const json& training = doc.at("training");
        const std::int64_t local = training.at("local_batch_size");
        const std::int64_t global = training.at("global_batch_size");
        QCOMPARE(global, c.plan.global_batch);
        QCOMPARE(global % (local * replicate * shard), std::int64_t {0});
        QCOMPARE(training.at("seq_len").get<std::int64_t>(), c.plan.seq_len);
        // One schedule per step: the pipeline's micro-batches are local / microbatch size.
        QCOMPARE(local / p.at("pipeline_parallel_microbatch_size").get<std::int64_t>(),
                 std::int64_t {config.num_microbatches});
        const json& parts = p.at("module_fqns_per_model_part");
        QCOMPARE(static_cast<int>(parts.size()), config.pp * config.vpp);
        QCOMPARE(parts.front().front().get<std::string>(), std::string("tok_embeddings"));
        QCOMPARE(parts.back().back().get<std::string>(), std::string("output"));
        int blocks = 0;
        for (const auto& part : parts)
            for (const auto& fqn : part)
                blocks += fqn.get<std::string>().rfind("layers.", 0) == 0 ? 1 : 0;
        QCOMPARE(blocks, static_cast<int>(c.graph->transformer->num_layers));
    }

    void pythonConfigParses()
    {
        // torchtitan main imports the config module: it must be Python (ast.parse is the parser's own check).
        const QString python = QStandardPaths::findExecutable("python3");
        if (python.isEmpty())
            QSKIP("python3 is not installed");
        QTemporaryDir dir;
        const auto path
            = writeText(dir, "plan_config.py", exportCase("llama2-70b", ExportTarget::Torchtitan, "main").text);
        QByteArray output;
        QCOMPARE(
            run(python,
                {"-c", "import ast, sys; ast.parse(open(sys.argv[1]).read())", QString::fromStdString(path.string())},
                &output),
            0);
        QVERIFY2(output.isEmpty(), output.constData());
    }

    void notesSayWhatIsLost_data()
    {
        QTest::addColumn<QString>("plan");
        QTest::addColumn<int>("target");
        QTest::addColumn<QString>("expected");
        const auto row = [](const char* tag, const char* plan, ExportTarget target, const char* expected) {
            QTest::newRow(tag) << QString(plan) << static_cast<int>(target) << QString(expected);
        };
        row("torchtitan flavor", "llama2-70b", ExportTarget::Torchtitan, "no built-in flavor for llama2-70b");
        row("deepspeed pipeline", "llama2-7b", ExportTarget::DeepSpeed, "PipelineModule(layers, num_stages=2");
        row("deepspeed batch", "llama2-7b", ExportTarget::DeepSpeed, "train_batch_size is left to DeepSpeed");
        row("deepspeed selective", "llama2-7b", ExportTarget::DeepSpeed, "must be coded in the model");
        row("megatron fsdp", "llama2-70b", ExportTarget::Megatron, "Megatron-FSDP");
    }
    void notesSayWhatIsLost()
    {
        QFETCH(QString, plan);
        QFETCH(int, target);
        QFETCH(QString, expected);
        const ExportResult result = exportCase(plan.toStdString(), static_cast<ExportTarget>(target));
        bool found = false;
        for (const auto& note : result.notes)
            found = found || note.find(expected.toStdString()) != std::string::npos;
        QVERIFY2(found, qPrintable("no note says '" + expected + "'"));
        // The notes are in the text too (comments, or DeepSpeed's _comment).
        QVERIFY(result.text.find(expected.toStdString()) != std::string::npos);
    }

    void exactTargetsHaveNoNotes()
    {
        // Megatron expresses the 7b plan completely.
        QCOMPARE(exportCase("llama2-7b", ExportTarget::Megatron).notes, std::vector<std::string> {});
        QCOMPARE(exportCase("llama2-7b", ExportTarget::Torchrun).notes, std::vector<std::string> {});
    }

    void variants_data()
    {
        QTest::addColumn<QString>("preset");
        QTest::addColumn<int>("target");
        QTest::addColumn<int>("variant");
        for (int v = 0; v < static_cast<int>(variantConfigs().size()); ++v)
            for (const auto target : {ExportTarget::Torchtitan, ExportTarget::Megatron, ExportTarget::DeepSpeed})
                QTest::newRow(
                    cat(variantConfigs()[static_cast<std::size_t>(v)].first, " ", exportTargetName(target)).c_str())
                    << QString::fromStdString(variantConfigs()[static_cast<std::size_t>(v)].first)
                    << static_cast<int>(target) << v;
    }
    void variants()
    {
        // Other shapes of plans: every field that a target can express reads back; the rest is in the notes.
        QFETCH(QString, preset);
        QFETCH(int, target);
        QFETCH(int, variant);
        const auto t = static_cast<ExportTarget>(target);
        const ParallelConfig& config = variantConfigs()[static_cast<std::size_t>(variant)].second;
        static std::map<int, std::unique_ptr<PlanCase>> cases;
        auto& slot = cases[variant];
        if (!slot)
            slot = makeCase(preset.toStdString(), 1, config, 2048);
        const PlanCase& c = *slot;
        const Framework framework = t == ExportTarget::Torchtitan ? Framework::Torchtitan
            : t == ExportTarget::Megatron                         ? Framework::MegatronCore
                                                                  : Framework::DeepSpeed;
        ParallelConfig asWritten = c.plan.config;
        asWritten.framework_version = t == ExportTarget::Torchtitan ? "v0.2" : "";
        if (const std::string why = frameworkRestriction(frameworkProfile(framework), asWritten); !why.empty()) {
            // What the framework cannot run is refused with its reason, not written as something else.
            const std::string error = test::inputErrorOf([&] {
                exportPlan(t, c.plan, *c.graph, c.plan.cluster, nullptr,
                           t == ExportTarget::Torchtitan ? tomlRelease() : ExportOptions {});
            });
            QVERIFY2(error.find(why) != std::string::npos, error.c_str());
            return;
        }
        const ExportResult result = exportPlan(t, c.plan, *c.graph, c.plan.cluster, nullptr,
                                               t == ExportTarget::Torchtitan ? tomlRelease() : ExportOptions {});
        QTemporaryDir dir;
        ImportOptions options;
        options.num_layers = static_cast<int>(c.graph->transformer->num_layers);
        const ImportedConfig imported = importJobConfig(writeExport(dir, "job", t, result.text), options);
        const ParallelConfig expected = representable(t, c.plan);
        const ParallelConfig& got = imported.config;
        QCOMPARE(got.tp, expected.tp);
        QCOMPARE(got.pp, expected.pp);
        QCOMPARE(got.dp, expected.dp);
        QCOMPARE(got.cp, t == ExportTarget::DeepSpeed ? 1 : expected.cp);
        QCOMPARE(got.ep, t == ExportTarget::DeepSpeed ? 1 : expected.ep);
        QCOMPARE(got.vpp, expected.vpp);
        QCOMPARE(got.micro_batch, expected.micro_batch);
        QCOMPARE(got.num_microbatches, expected.num_microbatches);
        QCOMPARE(got.zero_stage, expected.zero_stage);
        QCOMPARE(got.sequence_parallel, expected.sequence_parallel);
        QCOMPARE(recomputeName(got.recompute), recomputeName(expected.recompute));
        QCOMPARE(scheduleName(got.schedule), scheduleName(expected.schedule));
        QCOMPARE(got.stage_layers, expected.stage_layers);
        if (t != ExportTarget::DeepSpeed) {
            QCOMPARE(got.cp, c.plan.config.cp);
            QCOMPARE(got.ep, c.plan.config.ep);
        }
    }

    void megatronSplitFlags()
    {
        // Uneven first/last ranks with VPP: Megatron's first/last flags and the virtual stage count.
        const std::string script = exportCase("llama2-70b", ExportTarget::Megatron).text;
        QVERIFY(script.find("--decoder-first-pipeline-num-layers 18 \\") != std::string::npos);
        QVERIFY(script.find("--decoder-last-pipeline-num-layers 18 \\") != std::string::npos);
        QVERIFY(script.find("--num-virtual-stages-per-pipeline-rank 2 \\") != std::string::npos);
        QVERIFY(script.find("--num-layers-per-virtual-pipeline-stage") == std::string::npos);
        QVERIFY(script.find("--sequence-parallel \\") != std::string::npos);
        QVERIFY(script.find("--recompute-granularity full \\\n    --recompute-method uniform \\\n    "
                            "--recompute-num-layers 1 \\")
                != std::string::npos);
        QVERIFY(script.find("NNODES=${NNODES:-8}") != std::string::npos);
        // 32000 / TP 8 = 4000 is not a multiple of 128: a divisor that keeps the vocabulary unpadded.
        QVERIFY(script.find("--make-vocab-size-divisible-by 32 \\") != std::string::npos);
    }

    // ---- import of hand-written configs ----------------------------------------------------------------------

    void importMegatronExampleScript()
    {
        // In the style of Megatron-LM's examples: variables, arrays, word splitting and a layout.
        const std::string script = R"(#!/bin/bash
export CUDA_DEVICE_MAX_CONNECTIONS=1
GPUS_PER_NODE=8
NUM_NODES=${NUM_NODES:-2}
DISTRIBUTED_ARGS=(
    --nproc_per_node $GPUS_PER_NODE
    --nnodes $NUM_NODES   # two nodes
)
GPT_MODEL_ARGS=(
    --num-layers 8
    --hidden-size 1024 --num-attention-heads 16
    --seq-length 2048 --max-position-embeddings 2048
)
PARALLEL="--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2"
torchrun ${DISTRIBUTED_ARGS[@]} pretrain_gpt.py \
    "${GPT_MODEL_ARGS[@]}" $PARALLEL \
    --pipeline-model-parallel-layout "Ett|(tt|)*2ttL" \
    --micro-batch-size 2 --global-batch-size=64 \
    --recompute-activations \
    --use-distributed-optimizer --num-distributed-optimizer-instances 2
)";
        QTemporaryDir dir;
        const ImportedConfig imported = importJobConfig(writeText(dir, "train.sh", script));
        const ParallelConfig& c = imported.config;
        QCOMPARE(imported.format, std::string("megatron"));
        QCOMPARE(imported.nodes, 2);
        QCOMPARE(imported.gpus_per_node, 8);
        QCOMPARE(c.tp, 2);
        QCOMPARE(c.pp, 2);
        QCOMPARE(c.dp, 4);
        QCOMPARE(c.vpp, 2);
        QCOMPARE(c.micro_batch, 2);
        QCOMPARE(c.num_microbatches, 8); // 64 / (2 x 4)
        QCOMPARE(c.zero_stage, 1);
        QCOMPARE(c.zero_ngroups, 2);
        QCOMPARE(c.recompute, RecomputeKind::Selective);
        QCOMPARE(c.schedule, ScheduleKind::Interleaved1F1B);
        // "Ett|tt|tt|ttL": two blocks per virtual stage, the embedding on the first and the head on the last.
        QCOMPARE(c.stage_layers, (std::vector<int> {3, 2, 2, 3}));
        QCOMPARE(imported.seq_len, std::int64_t {2048});
        QVERIFY(imported.model.has_value());
        QCOMPARE(imported.model->ffn_hidden, std::int64_t {4096}); // Megatron's default 4h
        QCOMPARE(int(c.framework), int(Framework::MegatronCore));
    }

    void importMegatronLocalTransformerImpl()
    {
        // --transformer-impl local: Megatron-Core's local layer spec, whose DotProductAttention materialises the
        // s x s scores; --no-masked-softmax-fusion sends them through the torch masked_fill_ + softmax fallback.
        const std::string base = "torchrun --nnodes 1 --nproc-per-node 1 pretrain_gpt.py --num-layers 2 "
                                 "--hidden-size 256 --num-attention-heads 4 --seq-length 512 "
                                 "--micro-batch-size 1 --global-batch-size 4";
        QTemporaryDir dir;
        const auto model = [&](const std::string& extra) {
            return importJobConfig(writeText(dir, "train.sh", base + extra)).model.value();
        };
        const TransformerShape te = model("");
        QVERIFY(te.flash_attention && te.masked_softmax_fusion);
        QVERIFY(model(" --transformer-impl transformer_engine").flash_attention);
        const TransformerShape local = model(" --transformer-impl local");
        QVERIFY(!local.flash_attention && !local.hf_eager_attention && local.masked_softmax_fusion);
        const TransformerShape unfusedSoftmax = model(" --transformer-impl local --no-masked-softmax-fusion");
        QVERIFY(!unfusedSoftmax.flash_attention && !unfusedSoftmax.masked_softmax_fusion);
        const std::string error
            = test::inputErrorOf([&] { importJobConfig(writeText(dir, "bad.sh", base + " --transformer-impl te")); });
        QVERIFY2(error.find("--transformer-impl") != std::string::npos && error.find("'te'") != std::string::npos
                     && error.find("local") != std::string::npos,
                 error.c_str());
    }

    void importMegatronFirstLastBf16Layers()
    {
        // Megatron-Bridge's FP8-CS recipe keeps the first and last decoder layers in BF16 (1 each by default,
        // transformer_config.py); the import carries the counts, and Megatron refuses them under delayed scaling.
        const std::string base = "torchrun --nnodes 1 --nproc-per-node 8 pretrain_gpt.py --num-layers 8 "
                                 "--hidden-size 256 --num-attention-heads 4 "
                                 "--seq-length 512 --micro-batch-size 1 --global-batch-size 16 --fp8-format hybrid "
                                 "--first-last-layers-bf16 --num-layers-at-end-in-bf16 2 ";
        QTemporaryDir dir;
        const ImportedConfig imported = importJobConfig(writeText(dir, "train.sh", base + "--fp8-recipe tensorwise"));
        QVERIFY(imported.config.fp8_linears);
        QCOMPARE(imported.config.fp8_bf16_first_layers, 1);
        QCOMPARE(imported.config.fp8_bf16_last_layers, 2);
        QVERIFY(std::none_of(imported.warnings.begin(), imported.warnings.end(),
                             [](const std::string& w) { return w.find("bf16") != std::string::npos; }));
        const std::string error = test::inputErrorOf([&] { importJobConfig(writeText(dir, "delayed.sh", base)); });
        QVERIFY2(error.find("delayed scaling") != std::string::npos, error.c_str());
        QVERIFY2(error.find("--fp8-recipe tensorwise") != std::string::npos, error.c_str());
    }

    void megatronExportKeepsBf16FirstAndLastLayers()
    {
        // With the 16-bit gradient reduce Megatron-Bridge's performance recipes use (ddp.grad_reduce_in_fp32 False).
        ParallelConfig config;
        config.tp = 2;
        config.dp = 4;
        config.num_microbatches = 2;
        config.zero_stage = 1;
        config.sequence_parallel = true;
        config.fp8_linears = true;
        config.fp8_bf16_first_layers = 1;
        config.fp8_bf16_last_layers = 1;
        config.grad_reduce_bf16 = true;
        config.fp8_param_gather = true;
        config.framework = Framework::MegatronCore;
        const auto c = makeCase("llama3-8b", 1, config);
        QVERIFY2(c->evaluation.feasible, c->evaluation.reason.c_str());
        const ExportResult result = exportPlan(ExportTarget::Megatron, c->plan, *c->graph, c->plan.cluster, nullptr);
        for (const char* flag :
             {"--fp8-recipe tensorwise", "--first-last-layers-bf16", "--num-layers-at-start-in-bf16 1",
              "--num-layers-at-end-in-bf16 1", "--grad-reduce-in-bf16", "--fp8-param-gather"})
            QVERIFY2(result.text.find(flag) != std::string::npos, flag);
        const ImportedConfig imported = reimportMegatron(result.text, *c->graph);
        QCOMPARE(imported.config.fp8_bf16_first_layers, 1);
        QCOMPARE(imported.config.fp8_bf16_last_layers, 1);
        QVERIFY(imported.config.grad_reduce_bf16);
        QVERIFY(imported.config.fp8_param_gather);
        QCOMPARE(imported.config.describe(), c->plan.config.describe());
    }

    void importMegatronBlockRecompute()
    {
        // --recompute-method block: each model chunk recomputes its first n layers whole (megatron/core/recompute.py);
        // uniform recomputes every layer.
        const std::string base = "torchrun --nnodes 1 --nproc-per-node 8 pretrain_gpt.py --num-layers 8 "
                                 "--hidden-size 256 --num-attention-heads 4 --seq-length 512 "
                                 "--micro-batch-size 1 --global-batch-size 16 --recompute-granularity full ";
        QTemporaryDir dir;
        const auto config = [&](const std::string& extra) {
            return importJobConfig(writeText(dir, "train.sh", base + extra)).config;
        };
        const ParallelConfig one = config("--recompute-method block --recompute-num-layers 3");
        QCOMPARE(one.recompute, RecomputeKind::Modules);
        QCOMPARE(one.recompute_modules, (std::vector<std::string> {"0", "1", "2"}));
        // pp 2 x vpp 2: four chunks of two layers in layer order, the first of each recomputed.
        const ParallelConfig chunks = config("--recompute-method block --recompute-num-layers 1 "
                                             "--pipeline-model-parallel-size 2 "
                                             "--num-layers-per-virtual-pipeline-stage 2");
        QCOMPARE(chunks.recompute, RecomputeKind::Modules);
        QCOMPARE(chunks.recompute_modules, (std::vector<std::string> {"0", "2", "4", "6"}));
        QCOMPARE(config("--recompute-method block --recompute-num-layers 8").recompute, RecomputeKind::Full);
        QCOMPARE(config("--recompute-method uniform --recompute-num-layers 2").recompute, RecomputeKind::Full);
        QCOMPARE(config("").recompute, RecomputeKind::Full);
        const std::string error = test::inputErrorOf(
            [&] { importJobConfig(writeText(dir, "bad.sh", base + "--recompute-method blocks")); });
        QVERIFY2(error.find("--recompute-method") != std::string::npos && error.find("'blocks'") != std::string::npos,
                 error.c_str());

        // The recomputed blocks cost that share of full recomputation's time: 3 of 8 identical blocks.
        const auto recomputeSeconds = [](const ParallelConfig& planned) {
            const auto c = makeCase("llama2-7b", 1, planned, 2048);
            return c->evaluation.time.recompute;
        };
        ParallelConfig full;
        full.dp = 8;
        full.num_microbatches = 2;
        full.recompute = RecomputeKind::Full;
        ParallelConfig block = full;
        block.recompute = RecomputeKind::Modules;
        for (int i = 0; i < 12; ++i)
            block.recompute_modules.push_back(std::to_string(i));
        QVERIFY(recomputeSeconds(full) > 0);
        QVERIFY(std::fabs(recomputeSeconds(block) / (recomputeSeconds(full) * 12 / 32) - 1) < 1e-9);

        // Megatron's export writes the block method back, and says so when the blocks are not a chunk prefix.
        const auto exported = [](const ParallelConfig& planned) {
            const auto c = makeCase("llama2-7b", 1, planned, 2048);
            return exportPlan(ExportTarget::Megatron, c->plan, *c->graph, c->plan.cluster);
        };
        const ExportResult prefix = exported(block);
        QVERIFY(prefix.text.find("--recompute-granularity full \\\n    --recompute-method block \\\n    "
                                 "--recompute-num-layers 12 \\")
                != std::string::npos);
        QCOMPARE(reimportMegatron(prefix.text, *makeCase("llama2-7b", 1, block, 2048)->graph).config.recompute_modules,
                 block.recompute_modules);
        ParallelConfig scattered = block;
        scattered.recompute_modules = {"3", "5"};
        const ExportResult notPrefix = exported(scattered);
        QVERIFY(notPrefix.text.find("--recompute-granularity") == std::string::npos);
        QVERIFY(notPrefix.text.find("not the first n decoder layers of every model chunk") != std::string::npos);
    }

    void importTorchtitanDefaults()
    {
        // No module_fqns_per_model_part: torchtitan's own split, weighting the embedding and head as a layer each.
        const std::string toml = R"([model]
name = "llama3"
flavor = "8B"
[training]
local_batch_size = 8
global_batch_size = 64
seq_len = 8192
[parallelism]
data_parallel_shard_degree = -1
tensor_parallel_degree = 2
pipeline_parallel_degree = 2
pipeline_parallel_microbatch_size = 2
[activation_checkpoint]
mode = "full"
)";
        QTemporaryDir dir;
        ImportOptions options;
        options.world_size = 16;
        const ImportedConfig imported = importJobConfig(writeText(dir, "job.toml", toml), options);
        const ParallelConfig& c = imported.config;
        QCOMPARE(imported.model_name, std::string("llama3 8B"));
        QCOMPARE(c.dp, 4); // 16 / (2 x 2)
        QCOMPARE(c.zero_stage, 2); // FSDP with "default" resharding keeps parameters with PP
        QCOMPARE(c.micro_batch, 2);
        QCOMPARE(c.num_microbatches, 8); // (8 / 2) x accumulation 64 / (8 x 4) = 2
        QCOMPARE(c.stage_layers, (std::vector<int> {17, 17})); // 32 blocks + 2 over 2 stages
        QCOMPARE(c.recompute, RecomputeKind::Full);
        QVERIFY(c.sequence_parallel);
        QCOMPARE(imported.global_batch, std::int64_t {64});
        QVERIFY(!imported.warnings.empty()); // -1 resolved, accumulation with PP
        QCOMPARE(int(c.framework), int(Framework::Torchtitan));
    }

    void importTorchtitanLayerSac()
    {
        // selective_ac_option = k: each pipeline rank checkpoints every k-th block it builds, counting over its
        // stages in order (torchtitan v0.2.0 _apply_layer_sac, pipeline_module_split).
        const auto tomlWith = [](const std::string& parallelism, const std::string& option) {
            return cat("[model]\nname = \"llama3\"\nflavor = \"8B\"\n[training]\nlocal_batch_size = 8\n"
                       "global_batch_size = 64\nseq_len = 8192\n[parallelism]\ndata_parallel_shard_degree = -1\n",
                       parallelism, "[activation_checkpoint]\nmode = \"selective\"\nselective_ac_option = \"", option,
                       "\"\n");
        };
        QTemporaryDir dir;
        ImportOptions options;
        options.world_size = 8;
        const auto imported = [&](const std::string& parallelism, const std::string& option) {
            return importJobConfig(writeText(dir, "job.toml", tomlWith(parallelism, option)), options);
        };
        std::vector<std::string> odd;
        for (int i = 1; i < 32; i += 2)
            odd.push_back(std::to_string(i));
        const ImportedConfig every2 = imported("", "2");
        QCOMPARE(every2.config.recompute, RecomputeKind::Modules);
        QCOMPARE(every2.config.recompute_modules, odd); // the 2nd, 4th, ... block
        QCOMPARE(recomputeLabel(every2.config), std::string("1 in 2 blocks"));
        QVERIFY(every2.warnings.empty() || every2.warnings.front().find("th block") == std::string::npos);
        QCOMPARE(imported("", "1").config.recompute, RecomputeKind::Full);
        // Interleaved over 2 ranks, 4 stages of 8 blocks: rank 0 builds stages 0 and 2 (blocks 0-7, 16-23), rank 1
        // stages 1 and 3 (8-15, 24-31); every 3rd of each rank's 16.
        const ImportedConfig looped
            = imported("pipeline_parallel_degree = 2\npipeline_parallel_schedule = \"Interleaved1F1B\"\n"
                       "pipeline_parallel_layers_per_stage = 8\npipeline_parallel_first_stage_less_layers = 0\n"
                       "pipeline_parallel_last_stage_less_layers = 0\npipeline_parallel_microbatch_size = 1\n",
                       "3");
        QCOMPARE(looped.config.vpp, 2);
        QCOMPARE(looped.config.recompute_modules,
                 (std::vector<std::string> {"2", "5", "10", "13", "16", "19", "22", "24", "27", "30"}));

        // Half the blocks cost half of full recomputation's time, and the export writes the option back.
        ParallelConfig full = every2.config;
        full.recompute = RecomputeKind::Full;
        full.recompute_modules.clear();
        const auto c = makeCase("llama3-8b", 1, every2.config, 2048);
        const auto f = makeCase("llama3-8b", 1, full, 2048);
        QVERIFY(f->evaluation.time.recompute > 0);
        QVERIFY(std::fabs(c->evaluation.time.recompute / (f->evaluation.time.recompute / 2) - 1) < 1e-9);
        ExportOptions v02;
        v02.framework_version = "v0.2";
        const ExportResult exported
            = exportPlan(ExportTarget::Torchtitan, c->plan, *c->graph, c->plan.cluster, nullptr, v02);
        QVERIFY2(exported.text.find("selective_ac_option = \"2\"") != std::string::npos, exported.text.c_str());
        const ImportedConfig back = importJobConfig(writeExport(dir, "back", ExportTarget::Torchtitan, exported.text));
        QCOMPARE(back.config.recompute_modules, odd);
        // torchtitan main has per-op SAC only: full checkpointing, with a note.
        ExportOptions main;
        main.framework_version = "main";
        const ExportResult onMain
            = exportPlan(ExportTarget::Torchtitan, c->plan, *c->graph, c->plan.cluster, nullptr, main);
        QVERIFY(onMain.text.find("FullAC.Config()") != std::string::npos);
        QVERIFY(std::any_of(onMain.notes.begin(), onMain.notes.end(), [](const std::string& n) {
            return n.find("torchtitan main has no per-block checkpointing") != std::string::npos;
        }));
        // A block set that is not every k-th: full checkpointing, with a note.
        ParallelConfig scattered = every2.config;
        scattered.recompute_modules = {"0", "1"};
        const auto s = makeCase("llama3-8b", 1, scattered, 2048);
        const ExportResult notEvery
            = exportPlan(ExportTarget::Torchtitan, s->plan, *s->graph, s->plan.cluster, nullptr, v02);
        QVERIFY(notEvery.text.find("mode = \"full\"") != std::string::npos);
        QVERIFY(std::any_of(notEvery.notes.begin(), notEvery.notes.end(), [](const std::string& n) {
            return n.find("no such set: written as full checkpointing") != std::string::npos;
        }));
    }

    void importTorchtitanWarnsOfAnEagerLoss()
    {
        // [compile] components without "loss": torchtitan runs the loss eagerly, which the simulation (compiled
        // model, compiled loss) would under-cost by about 8 B per logit. The import says so; the default list and
        // an explicit one with both components say nothing about it.
        const std::string base = R"([model]
name = "llama3"
flavor = "8B"
[training]
local_batch_size = 1
global_batch_size = 8
seq_len = 8192
[parallelism]
data_parallel_shard_degree = 8
[compile]
enable = true
)";
        const auto warningsFor = [&](const std::string& extra) {
            QTemporaryDir dir;
            ImportOptions options;
            options.world_size = 8;
            return importJobConfig(writeText(dir, "job.toml", base + extra), options).warnings;
        };
        const auto mentionsLoss = [](const std::vector<std::string>& warnings) {
            return std::any_of(warnings.begin(), warnings.end(),
                               [](const std::string& w) { return w.find("leave out \"loss\"") != std::string::npos; });
        };
        QVERIFY(!mentionsLoss(warningsFor("")));
        QVERIFY(!mentionsLoss(warningsFor("components = [\"model\", \"loss\"]\n")));
        QVERIFY(mentionsLoss(warningsFor("components = [\"model\"]\n")));
    }

    void importDeepSpeedInfersTheThird()
    {
        QTemporaryDir dir;
        ImportOptions options;
        options.world_size = 32;
        const ImportedConfig imported = importJobConfig(
            writeText(
                dir, "ds.json",
                R"({"train_batch_size": 256, "train_micro_batch_size_per_gpu": 2, "zero_optimization": {"stage": 3}})"),
            options);
        QCOMPARE(imported.config.dp, 32);
        QCOMPARE(imported.config.num_microbatches, 4);
        QCOMPARE(imported.config.zero_stage, 3);
        QCOMPARE(int(imported.config.framework), int(Framework::DeepSpeed));
    }

    void importDeepSpeedWarnsOfWholeTensorPipelineSends()
    {
        QTemporaryDir dir;
        ImportOptions options;
        options.world_size = 32;
        const auto warningsFor = [&](const std::string& pipeline) {
            return importJobConfig(writeText(dir, "ds.json",
                                             R"({"train_batch_size": 256, "train_micro_batch_size_per_gpu": 2,
                                                 "pipeline": {)"
                                                 + pipeline + "}}"),
                                   options)
                .warnings;
        };
        const auto mentions = [](const std::vector<std::string>& warnings, const std::string& key) {
            return std::any_of(warnings.begin(), warnings.end(),
                               [&](const std::string& w) { return w.find(key + " is false") != std::string::npos; });
        };
        QVERIFY(!mentions(warningsFor(R"("pipe_partitioned": true)"), "pipeline.pipe_partitioned"));
        QVERIFY(mentions(warningsFor(R"("pipe_partitioned": false)"), "pipeline.pipe_partitioned"));
        QVERIFY(mentions(warningsFor(R"("grad_partitioned": false)"), "pipeline.grad_partitioned"));
        QVERIFY(!mentions(warningsFor(R"("grad_partitioned": false)"), "pipeline.pipe_partitioned"));
    }

    void malformedInputNamesFileAndLine_data()
    {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("expected");
        QTest::newRow("toml syntax") << "job.toml"
                                     << "[parallelism]\ntensor_parallel_degree = = 2\n"
                                     << "job.toml:2:[0-9]+: malformed TOML";
        QTest::newRow("toml type") << "job.toml"
                                   << "[training]\nlocal_batch_size = 1\n[parallelism]\n"
                                      "tensor_parallel_degree = \"two\"\n"
                                   << "job.toml:4: parallelism.tensor_parallel_degree: expected an integer, got a "
                                      "string";
        QTest::newRow("toml schedule") << "job.toml"
                                       << "[parallelism]\ndata_parallel_shard_degree = 1\npipeline_parallel_degree = "
                                          "2\npipeline_parallel_schedule = \"Looped1F1B\"\n"
                                       << "job.toml:4: parallelism.pipeline_parallel_schedule: unknown schedule "
                                          "'Looped1F1B'";
        QTest::newRow("toml accumulation") << "job.toml"
                                           << "[training]\nlocal_batch_size = 3\nglobal_batch_size = 16\n"
                                              "[parallelism]\ndata_parallel_shard_degree = 2\n"
                                           << "job.toml:3: training.global_batch_size: value 16 is not a multiple";
        QTest::newRow("megatron integer") << "train.sh"
                                          << "torchrun --nnodes 1 --nproc-per-node 8 pretrain_gpt.py \\\n"
                                             "  --micro-batch-size 1 \\\n  --tensor-model-parallel-size two\n"
                                          << "train.sh:3: --tensor-model-parallel-size: 'two' is not an integer";
        QTest::newRow("megatron variable") << "train.sh"
                                           << "torchrun --nnodes 1 --nproc-per-node 8 pretrain_gpt.py \\\n"
                                              "  --micro-batch-size $MBS\n"
                                           << "train.sh:2: --micro-batch-size: '\\$MBS' is not an integer";
        QTest::newRow("megatron batch") << "train.sh"
                                        << "torchrun --nnodes 1 --nproc-per-node 8 pretrain_gpt.py \\\n"
                                           "  --micro-batch-size 1 --global-batch-size 10 \\\n"
                                           "  --tensor-model-parallel-size 2\n"
                                        << "train.sh:2: --global-batch-size: value 10 is not a multiple of micro-batch "
                                           "x DP = 1 x 4";
        QTest::newRow("megatron split")
            << "train.sh"
            << "torchrun --nnodes 1 --nproc-per-node 8 pretrain_gpt.py --micro-batch-size 1 "
               "--num-layers 30 --pipeline-model-parallel-size 4\n"
            << "train.sh:1: --num-layers: 30 layers do not divide into pp x vpp = 4";
        QTest::newRow("megatron world") << "train.sh"
                                        << "python pretrain_gpt.py --micro-batch-size 1\n"
                                        << "world size is unknown";
        QTest::newRow("megatron quote") << "train.sh"
                                        << "torchrun pretrain_gpt.py --lr '3e-4\n"
                                        << "train.sh:1: unterminated";
        QTest::newRow("not megatron") << "train.sh"
                                      << "echo hello\n"
                                      << "no pretrain_gpt.py command";
        QTest::newRow("deepspeed batch") << "ds.json"
                                         << R"({"train_batch_size": 10, "train_micro_batch_size_per_gpu": 4,
                                               "gradient_accumulation_steps": 1})"
                                         << "ds.json: train_batch_size: value 10 is not a multiple";
        QTest::newRow("deepspeed json") << "ds.json"
                                        << "{\"train_batch_size\": 8,\n\"zero\": }\n"
                                        << "ds.json:2:[0-9]+: ";
        QTest::newRow("empty") << "job.toml"
                               << "\n"
                               << "job.toml: the file is empty";
    }
    void malformedInputNamesFileAndLine()
    {
        QFETCH(QString, file);
        QFETCH(QString, text);
        QFETCH(QString, expected);
        QTemporaryDir dir;
        const auto path = writeText(dir, file.toStdString(), text.toStdString());
        const std::string message = inputErrorOf([&] { importJobConfig(path); });
        QVERIFY2(std::regex_search(message, std::regex(expected.toStdString())), message.c_str());
        QVERIFY2(message.find(path.string()) != std::string::npos, message.c_str());
    }

    void exportRefusesAnotherModel()
    {
        // The plan's layers do not match gpt2's: re-simulating targets say so instead of writing something wrong.
        const PlanCase& c = planCase("llama2-7b");
        BuildOptions build;
        build.seq_len = 1024;
        const ModelGraph gpt2 = loadModel("gpt2", build);
        QVERIFY(inputErrorOf([&] { exportPlan(ExportTarget::Json, c.plan, gpt2, c.plan.cluster); }).find("seq_len")
                != std::string::npos);
    }
};

QTEST_APPLESS_MAIN(TestPlanExport)
#include "tst_plan_export.moc"
