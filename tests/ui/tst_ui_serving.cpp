// SPDX-License-Identifier: MIT
// The app's inference mode on the offscreen platform: the planner panel's serving rows become the request, the
// window's plan matches the core's planServing, the table, the Pareto chart and the memory chart show the engine's
// numbers (KV cache against the closed form), a tight TPOT bound changes the chosen TP, and the exports write what
// the engines launch while the training exporters refuse a serving plan.
#include "jobs/serving_job.h"
#include "widgets/main_window.h"
#include "widgets/planner_panel.h"
#include "widgets/serving_view.h"

#if __has_include("charts/serving_pareto_chart.h")
#include "charts/memory_chart.h"
#include "charts/serving_pareto_chart.h"
#define HAVE_SERVING_CHARTS 1
#endif

#include "shardscape/hardware/cluster.h"
#include "shardscape/model/model_source.h"
#include "shardscape/plan/serving_plan.h"

#include <QApplication>
#include <QBarSet>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFile>
#include <QLineSeries>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QScatterSeries>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>

#include <nlohmann/json.hpp>

using namespace shardscape;
using namespace shardscape::ui;

namespace {

constexpr int kPlanTimeoutMs = 60'000;

void closeMessageBoxes()
{
    for (QWidget* w : QApplication::topLevelWidgets())
        if (auto* box = qobject_cast<QMessageBox*>(w))
            box->close();
}

/** A window in inference mode planning llama3-70b on one node of 8 H100, shown once planned. */
std::unique_ptr<MainWindow> servingWindow(const QString& model = QStringLiteral("llama3-70b"), int gpus = 8)
{
    MainWindowOptions options;
    options.use_settings = false;
    options.plan_on_start = false;
    options.inference = true;
    options.model = model;
    options.cluster = QStringLiteral("h100-sxm");
    options.nodes = 1;
    options.gpus_per_node = gpus;
    return std::make_unique<MainWindow>(options);
}

bool planAndWait(MainWindow& window)
{
    QSignalSpy shown(&window, &MainWindow::planShown);
    window.plan();
    return shown.wait(kPlanTimeoutMs);
}

ServingPlanResult corePlan(const PlanRequest& request)
{
    NullProgress progress;
    return planServing(loadModel(request.model_spec, BuildOptions {}),
                       loadCluster(request.cluster_spec, request.nodes, request.gpus_per_node), request.config,
                       progress);
}

QString readAll(const QString& path)
{
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? QString::fromUtf8(file.readAll()) : QString();
}

} // namespace

class TestUiServing : public QObject
{
    Q_OBJECT

private slots:
    void initTestCase();
    void cleanup() { closeMessageBoxes(); }
    void plannerPanelWritesTheServingRequest();
    void windowPlanMatchesCore();
    void chartsShowTheKvCacheAndTheFront();
    void tightTpotChangesTheChosenTp();
    void exportsForTheEngines();
    void nothingServesSaysWhy();
    void switchingBackShowsTraining();

private:
    QTemporaryDir m_dir;
};

void TestUiServing::initTestCase()
{
    QStandardPaths::setTestModeEnabled(true);
    QVERIFY(m_dir.isValid());
}

void TestUiServing::plannerPanelWritesTheServingRequest()
{
    PlannerPanel panel;
    panel.show();
    auto* globalBatch = panel.findChild<QSpinBox*>(QStringLiteral("global_batch"));
    auto* inputLen = panel.findChild<QSpinBox*>(QStringLiteral("input_len"));
    QVERIFY(globalBatch && inputLen);
    QVERIFY(globalBatch->isVisible());
    QVERIFY(!inputLen->isVisible());

    QSignalSpy modeChanged(&panel, &PlannerPanel::modeChanged);
    panel.setInference(true);
    QCOMPARE(modeChanged.count(), 1);
    QCOMPARE(modeChanged.at(0).at(0).toBool(), true);
    QVERIFY(!globalBatch->isVisible()); // training rows give way to the serving request
    QVERIFY(inputLen->isVisible());

    inputLen->setValue(2048);
    panel.findChild<QSpinBox*>(QStringLiteral("output_len"))->setValue(512);
    panel.findChild<QSpinBox*>(QStringLiteral("concurrency"))->setValue(64);
    panel.findChild<QComboBox*>(QStringLiteral("weight_dtype"))->setCurrentText(QStringLiteral("fp8"));
    panel.findChild<QComboBox*>(QStringLiteral("kv_cache_dtype"))->setCurrentText(QStringLiteral("fp8"));
    panel.findChild<QDoubleSpinBox*>(QStringLiteral("max_ttft_ms"))->setValue(500);
    panel.setMaxTpotMs(30);
    panel.findChild<QComboBox*>(QStringLiteral("serving_framework"))->setCurrentText(QStringLiteral("sglang"));
    panel.findChild<QDoubleSpinBox*>(QStringLiteral("memory_fraction"))->setValue(0.85);

    PlanRequest request;
    panel.applyTo(request);
    const PlannerConfig& c = request.config;
    QVERIFY(!c.is_train);
    QCOMPARE(c.input_len, std::int64_t(2048));
    QCOMPARE(c.output_len, std::int64_t(512));
    QCOMPARE(c.concurrency, 64);
    QCOMPARE(int(c.weight_dtype), int(WeightFormat::FP8));
    QCOMPARE(int(c.kv_cache_dtype), int(DType::FP8));
    QCOMPARE(c.max_ttft_ms, 500.0);
    QCOMPARE(c.max_tpot_ms, 30.0);
    QCOMPARE(int(c.serving_framework), int(ServingFramework::Sglang));
    QCOMPARE(c.memory_fraction, 0.85);
    c.validate();
    c.servingRequest().validate();

    // The lowest concurrency means "max": the planner sizes it.
    panel.findChild<QSpinBox*>(QStringLiteral("concurrency"))->setValue(0);
    panel.applyTo(request);
    QCOMPARE(request.config.concurrency, 0);
}

void TestUiServing::windowPlanMatchesCore()
{
    auto window = servingWindow();
    window->show();
    QVERIFY(window->isServingShown());
    QVERIFY(planAndWait(*window));
    const auto& shown = window->currentServing();
    QVERIFY(shown && !shown->top.empty());

    const ServingPlanResult core = corePlan(window->currentRequest());
    QCOMPARE(shown->top.size(), core.top.size());
    for (std::size_t i = 0; i < core.top.size(); ++i) {
        QCOMPARE(shown->top[i].parallel.describe(), core.top[i].parallel.describe());
        QCOMPARE(shown->top[i].output_tokens_per_s, core.top[i].output_tokens_per_s);
    }

    // The table: the best first, its numbers as the engine gave them.
    const ServingView* view = window->servingView();
    const QTableWidget* table = view->table();
    QCOMPARE(table->rowCount(), int(core.top.size() + core.infeasible.size()));
    QCOMPARE(view->selectedRow(), 0);
    const ServingEstimate& best = core.top.front();
    QCOMPARE(table->item(0, 1)->text(), QString::fromStdString(best.parallel.describe()));
    QCOMPARE(table->item(0, 5)->data(Qt::DisplayRole).toLongLong(), qRound64(best.ttft_s * 1e3));
    QCOMPARE(table->item(0, 6)->text(), QString::number(best.tpot_s * 1e3, 'f', 1));
    QCOMPARE(table->item(0, 7)->data(Qt::DisplayRole).toLongLong(), qRound64(best.output_tokens_per_s));
    QVERIFY(best.ttft_s > 0 && best.tpot_s > 0 && best.output_tokens_per_s > 0);

    // The MoAI log line of the chosen deployment says it is not a training job.
    auto* log = window->findChild<QPlainTextEdit*>();
    bool trainFalse = false;
    for (auto* edit : window->findChildren<QPlainTextEdit*>())
        trainFalse = trainFalse || edit->toPlainText().contains(QStringLiteral("train : false"));
    QVERIFY(log);
    QVERIFY(trainFalse);
}

void TestUiServing::chartsShowTheKvCacheAndTheFront()
{
#ifndef HAVE_SERVING_CHARTS
    QSKIP("the charts are not part of this build");
#else
    auto window = servingWindow();
    window->show();
    QVERIFY(planAndWait(*window));
    const ServingEstimate& best = window->currentServing()->top.front();
    const MemoryChart* memory = window->servingView()->memoryChart();
    const auto sets = memory->barSets();
    QCOMPARE(sets.size(), 5);
    double stacked = 0;
    for (const QBarSet* set : sets)
        stacked += set->at(0);
    // The engine's split fills the GPU: weights + KV pool + activations + reserve = the limit.
    QVERIFY(std::abs(stacked - memory->limitGB()) < 1e-6 * memory->limitGB());
    QCOMPARE(memory->limitGB(), best.memory.capacity / 1e9);
    // KV cache in use, closed form: 2 x layers x kv_heads x head_dim x 2 bytes per token, over tp and the stage's
    // share of the layers (llama3-70b: 80 layers, 8 KV heads of 128), times the sequences per replica at full context.
    const double layersPerStage = 80.0 / best.parallel.pp;
    const double bytesPerToken = 2 * layersPerStage * 8 * 128 * 2 / best.parallel.tp;
    QVERIFY(std::abs(best.kv_bytes_per_token - bytesPerToken) < 1e-9 * bytesPerToken);
    const double sequences = std::ceil(double(best.concurrency) / best.parallel.dp);
    const double kvGB = sequences * (1024 + 256) * bytesPerToken / 1e9;
    QVERIFY2(std::abs(sets[1]->at(0) - kvGB) < 1e-6 * kvGB,
             qPrintable(QStringLiteral("%1 vs %2").arg(sets[1]->at(0)).arg(kvGB)));
    QCOMPARE(sets[0]->at(0), best.memory.weights / 1e9);

    const ServingParetoChart* pareto = window->servingView()->paretoChart();
    QCOMPARE(pareto->deploymentSeries()->count(), int(window->currentServing()->top.size()));
    QCOMPARE(pareto->selectedIndex(), 0);
    QCOMPARE(pareto->curveSeries()->count(), int(best.curve.size()));
    // The front: faster to the left, and each point more throughput than every faster one.
    const auto front = pareto->frontSeries()->points();
    QVERIFY(front.size() >= 2);
    for (int i = 1; i < front.size(); ++i) {
        QVERIFY(front[i].x() >= front[i - 1].x());
        QVERIFY(front[i].y() > front[i - 1].y());
    }
    QVERIFY(!pareto->boundSeries()->isVisible());

    // Selecting another row moves the ring and the memory chart with it.
    window->servingView()->selectRow(1);
    QCOMPARE(pareto->selectedIndex(), 1);
    QCOMPARE(memory->barSets()[0]->at(0), window->currentServing()->top[1].memory.weights / 1e9);
#endif
}

void TestUiServing::tightTpotChangesTheChosenTp()
{
    auto window = servingWindow();
    window->show();
    QVERIFY(planAndWait(*window));
    const ServingEstimate loose = window->currentServing()->top.front();

    // A bound tighter than the loose choice's TPOT: the planner must move to more tensor parallelism.
    window->plannerPanel()->setMaxTpotMs(20);
    QVERIFY(planAndWait(*window));
    const auto& tight = window->currentServing();
    QVERIFY(!tight->top.empty());
    const ServingEstimate& chosen = tight->top.front();
    QVERIFY(loose.tpot_s * 1e3 > 20);
    QVERIFY(chosen.tpot_s * 1e3 <= 20);
    QVERIFY2(chosen.parallel.tp != loose.parallel.tp,
             qPrintable(QString::fromStdString(loose.parallel.describe() + " / " + chosen.parallel.describe())));
    QCOMPARE(window->servingView()->table()->item(0, 1)->text(), QString::fromStdString(chosen.parallel.describe()));
#ifdef HAVE_SERVING_CHARTS
    const QLineSeries* bound = window->servingView()->paretoChart()->boundSeries();
    QVERIFY(bound->isVisible());
    QCOMPARE(bound->at(0).x(), 20.0);
#endif
}

void TestUiServing::exportsForTheEngines()
{
    auto window = servingWindow();
    window->show();
    QVERIFY(planAndWait(*window));
    const ServingEstimate& best = window->currentServing()->top.front();

    const QString vllm = m_dir.filePath(QStringLiteral("vllm.sh"));
    QVERIFY(window->exportServing(ServingExportTarget::Vllm, vllm));
    const QString vllmText = readAll(vllm);
    QVERIFY2(vllmText.contains(QStringLiteral("vllm serve")), qPrintable(vllmText.left(400)));
    QVERIFY(vllmText.contains(QStringLiteral("--tensor-parallel-size %1").arg(best.parallel.tp)));
    if (best.parallel.pp > 1)
        QVERIFY(vllmText.contains(QStringLiteral("--pipeline-parallel-size %1").arg(best.parallel.pp)));

    const QString sglang = m_dir.filePath(QStringLiteral("sglang.sh"));
    QVERIFY(window->exportServing(ServingExportTarget::Sglang, sglang) == false);
    QVERIFY2(window->lastError().contains(QStringLiteral("vllm")), qPrintable(window->lastError()));
    QVERIFY(!QFile::exists(sglang)); // a plan for vLLM is refused for SGLang, and nothing is written
    closeMessageBoxes();

    const QString planPath = m_dir.filePath(QStringLiteral("serving-plan.json"));
    QVERIFY(window->exportPlan(planPath));
    const LoadedServingPlan loaded
        = servingPlanFromJson(nlohmann::json::parse(readAll(planPath).toStdString()), "test");
    QCOMPARE(loaded.parallel.describe(), best.parallel.describe());
    QCOMPARE(loaded.concurrency, best.concurrency);
    const QString resultPath = m_dir.filePath(QStringLiteral("serving-result.json"));
    QVERIFY(window->exportResult(resultPath));
    const auto result = nlohmann::json::parse(readAll(resultPath).toStdString());
    QCOMPARE(result["mode"].get<std::string>(), std::string("inference"));
    QCOMPARE(result["candidates"].size(),
             window->currentServing()->top.size() + window->currentServing()->infeasible.size());

    // A training exporter refuses a serving plan, says why, and writes nothing.
    const QString titan = m_dir.filePath(QStringLiteral("titan.toml"));
    QVERIFY(!window->exportForTarget(ExportTarget::Torchtitan, titan));
    QVERIFY(window->lastError().contains(QStringLiteral("serving deployment")));
    QVERIFY(!QFile::exists(titan));
}

void TestUiServing::nothingServesSaysWhy()
{
    auto window = servingWindow(QStringLiteral("llama3-70b"), 1); // 141 GB of bf16 weights on one 80 GB GPU
    window->show();
    QSignalSpy errors(window.get(), &MainWindow::errorShown);
    QVERIFY(planAndWait(*window));
    QVERIFY(window->currentServing()->top.empty());
    QCOMPARE(errors.count(), 1);
    const QString message = errors.at(0).at(0).toString();
    QVERIFY2(message.contains(QStringLiteral("cannot be served")) && message.contains(QStringLiteral("weights")),
             qPrintable(message));
    const QTableWidget* table = window->servingView()->table();
    QVERIFY(table->rowCount() >= 1);
    QVERIFY(!window->servingView()->isFeasibleRow(0));
    QVERIFY(table->item(0, 10)->text().contains(QStringLiteral("weights")));
    QVERIFY(!window->exportServing(ServingExportTarget::Vllm, m_dir.filePath(QStringLiteral("none.sh"))));
    QVERIFY(!QFile::exists(m_dir.filePath(QStringLiteral("none.sh"))));
}

void TestUiServing::switchingBackShowsTraining()
{
    auto window = servingWindow();
    window->show();
    QVERIFY(window->isServingShown());
    window->plannerPanel()->setInference(false);
    QVERIFY(!window->isServingShown());
    QVERIFY(window->currentRequest().config.is_train);
    QVERIFY(!window->exportServing(ServingExportTarget::Vllm, m_dir.filePath(QStringLiteral("t.sh"))));
    QVERIFY(window->lastError().contains(QStringLiteral("training plan")));
}

QTEST_MAIN(TestUiServing)
#include "tst_ui_serving.moc"
