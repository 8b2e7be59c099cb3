// SPDX-License-Identifier: MIT
// The charts against the core's numbers: memory bars equal each stage's breakdown in GB with the
// limit line at the memory limit, the Pareto series hold every candidate, the bubble curve and the
// stage balance bars equal the evaluations; labels are not truncated and exports are written.
#include "charts/bubble_chart.h"
#include "charts/memory_chart.h"
#include "charts/pareto_chart.h"
#include "charts/stage_balance_chart.h"

#include "shardscape/cost/cost_model.h"
#include "shardscape/hardware/cluster.h"
#include "shardscape/model/model_source.h"

#include <QAreaSeries>
#include <QBarCategoryAxis>
#include <QBarSet>
#include <QFile>
#include <QFileInfo>
#include <QImage>
#include <QLegend>
#include <QLineSeries>
#include <QScatterSeries>
#include <QSignalSpy>
#include <QStackedBarSeries>
#include <QTemporaryDir>
#include <QTest>
#include <QValueAxis>

#include <cmath>

using namespace shardscape;
using namespace shardscape::ui;

namespace {

constexpr double kGB = 1e9;

/** Relative comparison for values that went through float-free but rounded arithmetic. */
bool near(double a, double b)
{
    return std::abs(a - b) <= 1e-9 * std::max({1.0, std::abs(a), std::abs(b)});
}

ParallelConfig makeConfig(int tp, int pp, int dp, int microbatches, ScheduleKind schedule = ScheduleKind::OneFOneB,
                          int vpp = 1)
{
    ParallelConfig c;
    c.tp = tp;
    c.pp = pp;
    c.dp = dp;
    c.vpp = vpp;
    c.micro_batch = 1;
    c.num_microbatches = microbatches;
    c.schedule = schedule;
    return c;
}

} // namespace

class TestCharts : public QObject
{
    Q_OBJECT

private:
    std::shared_ptr<const CostModel> m_model;
    std::vector<Evaluation> m_feasible;
    std::vector<Evaluation> m_infeasible;

    Evaluation evaluate(const ParallelConfig& config) const
    {
        Workload workload;
        workload.global_batch = config.globalBatch();
        workload.seq_len = 4096;
        return m_model->evaluate(config, workload);
    }

private Q_SLOTS:
    void initTestCase()
    {
        BuildOptions build;
        build.seq_len = 4096;
        auto graph = std::make_shared<const ModelGraph>(loadModel("llama2-7b", build));
        m_model = std::make_shared<const CostModel>(graph, loadCluster("h100-sxm", 1, 8));
        // A spread of shapes on one 8-GPU node: some fit, GPipe with many micro-batches does not.
        const std::vector<ParallelConfig> configs {
            makeConfig(2, 4, 1, 8),
            makeConfig(1, 4, 2, 8, ScheduleKind::ZeroBubbleH1),
            makeConfig(1, 4, 2, 8, ScheduleKind::Interleaved1F1B, 2),
            makeConfig(2, 2, 2, 16),
            makeConfig(4, 2, 1, 8),
            makeConfig(8, 1, 1, 4),
            makeConfig(1, 8, 1, 64, ScheduleKind::GPipe),
            makeConfig(1, 2, 4, 32, ScheduleKind::GPipe),
        };
        for (const auto& config : configs) {
            Evaluation e = evaluate(config);
            (e.feasible ? m_feasible : m_infeasible).push_back(std::move(e));
        }
        QVERIFY(m_feasible.size() >= 3);
        QVERIFY(!m_infeasible.empty());
    }

    void memoryBarsEqualBreakdown_data()
    {
        QTest::addColumn<int>("which");
        QTest::addColumn<bool>("feasible");
        for (int i = 0; i < 3; ++i)
            QTest::addRow("feasible %d", i) << i << true;
        QTest::addRow("infeasible 0") << 0 << false;
    }

    void memoryBarsEqualBreakdown()
    {
        QFETCH(int, which);
        QFETCH(bool, feasible);
        const Evaluation& e = (feasible ? m_feasible : m_infeasible)[static_cast<std::size_t>(which)];
        MemoryChart chart;
        chart.setEvaluation(e);

        const QList<QBarSet*> sets = chart.barSets();
        QCOMPARE(sets.size(), 6);
        const QStringList labels {"weights", "gradients", "optimizer", "activations", "transient", "reserve"};
        for (int k = 0; k < sets.size(); ++k)
            QCOMPARE(sets[k]->label(), labels[k]);
        QCOMPARE(chart.stageCount(), static_cast<int>(e.stages.size()));
        QCOMPARE(chart.stageLabels().front(), QStringLiteral("0"));
        for (std::size_t i = 0; i < e.stages.size(); ++i) {
            const MemoryBreakdown& m = e.stages[i].memory;
            const std::array<double, 6> expected {m.weights,     m.gradients, m.optimizer,
                                                  m.activations, m.transient, m.reserve};
            for (int k = 0; k < 6; ++k) {
                const double bar = sets[k]->at(static_cast<int>(i));
                QVERIFY2(near(bar, expected[static_cast<std::size_t>(k)] / kGB),
                         qPrintable(QStringLiteral("stage %1 %2: %3 vs %4")
                                        .arg(i)
                                        .arg(labels[k])
                                        .arg(bar)
                                        .arg(expected[static_cast<std::size_t>(k)] / kGB)));
            }
        }

        // The limit line: flat at memory_limit_bytes / 1e9 across every stage.
        QVERIFY(e.memory_limit_bytes > 0);
        QCOMPARE(chart.limitGB(), e.memory_limit_bytes / kGB);
        const QList<QPointF> line = chart.limitSeries()->points();
        QCOMPARE(line.size(), 2);
        for (const QPointF& p : line)
            QCOMPARE(p.y(), e.memory_limit_bytes / kGB);
        QCOMPARE(line.front().x(), -0.5);
        QCOMPARE(line.back().x(), static_cast<double>(e.stages.size()) - 0.5);
        // Nothing drawn above the axis: the tallest stack and the limit both fit.
        QVERIFY(chart.valueAxis()->max() >= e.peakMemory() / kGB);
        QVERIFY(chart.valueAxis()->max() >= e.memory_limit_bytes / kGB);
        QVERIFY(chart.chart()->title().contains(QString::fromStdString(e.config.describe())));

        // The shaded band of the predicted peak's range, across every stage, inside the axis.
        QVERIFY(e.peak_memory_range.high > 0);
        QVERIFY(chart.peakRangeSeries()->isVisible());
        QCOMPARE(chart.peakRangeGB().first, e.peak_memory_range.low / kGB);
        QCOMPARE(chart.peakRangeGB().second, e.peak_memory_range.high / kGB);
        const QList<QPointF> upper = chart.peakRangeSeries()->upperSeries()->points();
        const QList<QPointF> lower = chart.peakRangeSeries()->lowerSeries()->points();
        QCOMPARE(upper.size(), 2);
        QCOMPARE(lower.size(), 2);
        QCOMPARE(upper.front().x(), -0.5);
        QCOMPARE(upper.back().x(), static_cast<double>(e.stages.size()) - 0.5);
        QCOMPARE(upper.front().y(), e.peak_memory_range.high / kGB);
        QCOMPARE(lower.back().y(), e.peak_memory_range.low / kGB);
        QVERIFY(chart.valueAxis()->max() >= e.peak_memory_range.high / kGB);
        chart.clear();
        QVERIFY(!chart.peakRangeSeries()->isVisible());
        QCOMPARE(chart.peakRangeSeries()->upperSeries()->count(), 0);
    }

    void paretoSeriesHoldEveryCandidate()
    {
        ParetoChart chart;
        const int selected = 1;
        chart.setCandidates(m_feasible, m_infeasible, selected);
        QCOMPARE(chart.feasibleSeries()->count(), static_cast<int>(m_feasible.size()));
        QCOMPARE(chart.infeasibleSeries()->count(), static_cast<int>(m_infeasible.size()));
        for (std::size_t i = 0; i < m_feasible.size(); ++i) {
            const QPointF p = chart.feasibleSeries()->at(static_cast<int>(i));
            QCOMPARE(p.x(), m_feasible[i].step_time);
            QVERIFY(near(p.y(), m_feasible[i].peakMemory() / kGB));
        }
        for (std::size_t i = 0; i < m_infeasible.size(); ++i)
            QCOMPARE(chart.infeasibleSeries()->at(static_cast<int>(i)).x(), m_infeasible[i].step_time);

        // Each kind has its own legend swatch: the front is not drawn in the feasible points' colour, and the
        // legend shows the series' own shapes.
        QVERIFY(chart.frontSeries()->pen().color() != chart.feasibleSeries()->color());
        QCOMPARE(chart.chart()->legend()->markerShape(), QLegend::MarkerShapeFromSeries);

        // The selected candidate is ringed.
        QCOMPARE(chart.selectedIndex(), selected);
        QCOMPARE(chart.selectedSeries()->count(), 1);
        QCOMPARE(chart.selectedSeries()->at(0), chart.feasibleSeries()->at(selected));
        chart.setSelectedIndex(0);
        QCOMPARE(chart.selectedSeries()->at(0), chart.feasibleSeries()->at(0));
        chart.setSelectedIndex(-1);
        QCOMPARE(chart.selectedSeries()->count(), 0);

        // The front: feasible points none of which another feasible point beats on both axes.
        const QList<QPointF> front = chart.frontSeries()->points();
        QVERIFY(!front.isEmpty());
        for (const QPointF& f : front) {
            QVERIFY(chart.feasibleSeries()->points().contains(f));
            for (const QPointF& p : chart.feasibleSeries()->points())
                QVERIFY(!(p.x() < f.x() && p.y() < f.y()));
        }
        // The memory limit, dashed.
        QCOMPARE(chart.limitSeries()->count(), 2);
        QCOMPARE(chart.limitSeries()->at(0).y(), m_feasible.front().memory_limit_bytes / kGB);
    }

    void paretoLeavesOutCandidatesWithoutStepTime()
    {
        std::vector<Evaluation> infeasible = m_infeasible;
        Evaluation structural; // rejected before costing: no step time to plot
        structural.reason = "tp 3 does not divide 32 heads";
        infeasible.push_back(structural);
        ParetoChart chart;
        chart.setCandidates(m_feasible, infeasible, 0);
        QCOMPARE(chart.infeasibleSeries()->count(), static_cast<int>(m_infeasible.size()));
        chart.clear();
        QCOMPARE(chart.feasibleSeries()->count(), 0);
        QCOMPARE(chart.infeasibleSeries()->count(), 0);
        QCOMPARE(chart.selectedSeries()->count(), 0);
    }

    void paretoClickSelects()
    {
        ParetoChart chart;
        chart.resize(1280, 800);
        chart.setCandidates(m_feasible, m_infeasible, 0);
        chart.show();
        QVERIFY(QTest::qWaitForWindowExposed(&chart));
        QSignalSpy spy(&chart, &ParetoChart::candidateClicked);
        const int target = static_cast<int>(m_feasible.size()) - 1;
        const QPointF scene = chart.chart()->mapToPosition(chart.feasibleSeries()->at(target), chart.feasibleSeries());
        const QPoint pos = chart.mapFromScene(scene);
        QTest::mouseClick(chart.viewport(), Qt::LeftButton, Qt::NoModifier, pos);
        QCOMPARE(spy.count(), 1);
        QCOMPARE(spy.front().front().toInt(), target);
    }

    void bubbleAxisLabelsStayDistinctOnFlatCurves()
    {
        // Axis labels are the ticks printed with the label format: six ticks over [0, top] must print six
        // different strings, on a flat 0-1% curve as on a steep one.
        for (const double ratio : {0.002, 0.03, 0.3, 0.9}) { // a share of the step: below 1
            BubbleChart bubble;
            bubble.setCurve({{4, ratio}, {8, ratio / 2}}, 8);
            const auto axes = bubble.chart()->axes(Qt::Vertical);
            QCOMPARE(axes.size(), 1);
            const auto* axis = qobject_cast<const QValueAxis*>(axes.front());
            QVERIFY(axis);
            QVERIFY(axis->max() >= ratio * 100);
            QStringList labels;
            for (int i = 0; i < axis->tickCount(); ++i) {
                const double tick = axis->min() + (axis->max() - axis->min()) * i / (axis->tickCount() - 1);
                labels << QString::asprintf(axis->labelFormat().toLatin1().constData(), tick);
            }
            labels.removeDuplicates();
            QCOMPARE(labels.size(), axis->tickCount());
        }
    }

    void bubbleCurveEqualsSimulatedRatios()
    {
        // What the app computes with the core: the selected plan's bubble for several micro-batch counts.
        std::vector<std::pair<int, double>> points;
        for (const int m : {32, 4, 8, 16, 2}) // any order
            points.emplace_back(m, evaluate(makeConfig(2, 4, 1, m)).bubble_ratio);
        BubbleChart chart;
        chart.setCurve(points, 8);
        const QList<QPointF> curve = chart.curveSeries()->points();
        QCOMPARE(curve.size(), 5);
        std::sort(points.begin(), points.end());
        for (int i = 0; i < curve.size(); ++i) {
            QCOMPARE(curve[i].x(), static_cast<double>(points[static_cast<std::size_t>(i)].first));
            QVERIFY(near(curve[i].y(), points[static_cast<std::size_t>(i)].second * 100));
        }
        // More micro-batches, smaller bubble; a share of the step, so never past 100% and the axis says so.
        QVERIFY(curve.front().y() > curve.back().y());
        for (const QPointF& point : curve)
            QVERIFY(point.y() > 0 && point.y() < 100);
        QVERIFY(chart.valueAxis()->max() <= 100);
        QVERIFY2(chart.valueAxis()->titleText().contains(QStringLiteral("share of the step")),
                 qPrintable(chart.valueAxis()->titleText()));
        QCOMPARE(chart.currentSeries()->count(), 1);
        QCOMPARE(chart.currentSeries()->at(0).x(), 8.0);

        chart.setCurve(points, 6); // not among the points: nothing marked
        QCOMPARE(chart.currentSeries()->count(), 0);
        chart.clear();
        QCOMPARE(chart.curveSeries()->count(), 0);
    }

    void stageBalanceBarsEqualCompute_data()
    {
        QTest::addColumn<int>("which");
        for (int i = 0; i < 3; ++i)
            QTest::addRow("feasible %d", i) << i;
    }

    void stageBalanceBarsEqualCompute()
    {
        QFETCH(int, which);
        const Evaluation& e = m_feasible[static_cast<std::size_t>(which)];
        StageBalanceChart chart;
        chart.setEvaluation(e, m_model->layers());
        QCOMPARE(chart.barSets().size(), 1);
        const QBarSet* set = chart.barSets().front();
        QCOMPARE(set->count(), static_cast<int>(e.stages.size()));
        int slowest = 0;
        double total = 0;
        for (std::size_t i = 0; i < e.stages.size(); ++i) {
            const StageReport& s = e.stages[i];
            QVERIFY(near(set->at(static_cast<int>(i)), s.compute * 1e3));
            if (s.compute > e.stages[static_cast<std::size_t>(slowest)].compute)
                slowest = static_cast<int>(i);
            total += s.compute * 1e3;
            const QString label = chart.stageLabels()[static_cast<int>(i)];
            QVERIFY2(label.startsWith(QStringLiteral("%1: layers ").arg(i)), qPrintable(label));
            const auto& chunk = s.chunks.empty() ? std::make_pair(s.first_layer, s.last_layer) : s.chunks.front();
            QVERIFY2(label.contains(QStringLiteral("%1-%2").arg(chunk.first).arg(chunk.second)), qPrintable(label));
            QCOMPARE(label.count(QLatin1Char(',')), std::max<int>(0, static_cast<int>(s.chunks.size()) - 1));
        }
        QCOMPARE(chart.slowestStage(), slowest);
        QVERIFY(near(chart.meanSeries()->at(0).y(), total / static_cast<double>(e.stages.size())));
    }

    void noTruncatedLabels_data()
    {
        QTest::addColumn<QSize>("size");
        QTest::newRow("1280x800") << QSize(1280, 800);
        QTest::newRow("1920x1080") << QSize(1920, 1080);
        QTest::newRow("quarter of 1280x800") << QSize(620, 380);
    }

    void noTruncatedLabels()
    {
        QFETCH(QSize, size);
        MemoryChart memory;
        memory.setEvaluation(m_feasible.front());
        ParetoChart pareto;
        pareto.setCandidates(m_feasible, m_infeasible, 0);
        BubbleChart bubble;
        bubble.setCurve({{1, 3.0}, {2, 1.5}, {4, 0.75}, {8, 0.375}, {16, 0.19}}, 8);
        StageBalanceChart balance;
        balance.setEvaluation(m_infeasible.front(), m_model->layers()); // the pp8 one
        // Sixteen stages with long layer ranges: labels must step down to fit rather than be cut.
        Evaluation sixteen;
        for (int i = 0; i < 16; ++i) {
            StageReport stage;
            stage.first_layer = 2 * i + 1;
            stage.last_layer = 2 * i + 2;
            stage.compute = 0.02 + 0.001 * i;
            sixteen.stages.push_back(stage);
        }
        StageBalanceChart balance16;
        balance16.setEvaluation(sixteen, {});
        for (ChartBase* chart : std::initializer_list<ChartBase*> {&memory, &pareto, &bubble, &balance, &balance16}) {
            chart->resize(size);
            chart->show();
            QVERIFY(QTest::qWaitForWindowExposed(chart));
            QTRY_VERIFY2(!chart->labelsTruncated(), chart->metaObject()->className());
        }
        QCOMPARE(balance16.stageLabels().front(), QStringLiteral("0: layers 1-2"));
    }

    void exportsPngAndSvg()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        MemoryChart memory;
        memory.setEvaluation(m_feasible.front());
        ParetoChart pareto;
        pareto.setCandidates(m_feasible, m_infeasible, 0);
        BubbleChart bubble;
        bubble.setCurve({{2, 1.5}, {4, 0.75}, {8, 0.375}}, 4);
        StageBalanceChart balance;
        balance.setEvaluation(m_feasible.front(), m_model->layers());
        int n = 0;
        for (ChartBase* chart : std::initializer_list<ChartBase*> {&memory, &pareto, &bubble, &balance}) {
            chart->resize(439, 289); // a dock's size: the export is a slide's whatever it is
            chart->show();
            QVERIFY(QTest::qWaitForWindowExposed(chart));
            const QString png = dir.filePath(QStringLiteral("chart%1.png").arg(n));
            const QString svg = dir.filePath(QStringLiteral("chart%1.svg").arg(n));
            ++n;
            const QSizeF before = chart->chart()->size();
            QVERIFY(chart->exportImage(png));
            QVERIFY(chart->exportImage(svg));
            const QImage image(png);
            QVERIFY(!image.isNull());
            QCOMPARE(image.size(), QSize(2 * ChartBase::kExportWidth, 2 * ChartBase::kExportHeight));
            QCOMPARE(chart->chart()->size(), before); // laid out again for the widget
            QVERIFY(QFileInfo(png).size() > 1000);
            QFile file(svg);
            QVERIFY(file.open(QIODevice::ReadOnly));
            const QByteArray contents = file.readAll();
            QVERIFY(contents.size() > 1000);
            QVERIFY(contents.contains("<svg"));
            QVERIFY(!chart->exportImage(dir.filePath(QStringLiteral("chart.unknown"))));
        }
    }

    void clearEmptiesEveryChart()
    {
        MemoryChart memory;
        memory.setEvaluation(m_feasible.front());
        memory.clear();
        QVERIFY(memory.barSets().isEmpty());
        QCOMPARE(memory.limitSeries()->count(), 0);
        QCOMPARE(memory.limitGB(), 0.0);
        StageBalanceChart balance;
        balance.setEvaluation(m_feasible.front(), m_model->layers());
        balance.clear();
        QVERIFY(balance.barSets().isEmpty());
        QCOMPARE(balance.slowestStage(), -1);
        // An evaluation without stages (rejected before costing) leaves the charts empty, not broken.
        Evaluation rejected;
        memory.setEvaluation(rejected);
        balance.setEvaluation(rejected, {});
        QCOMPARE(memory.stageCount(), 0);
        QVERIFY(memory.stageLabels().isEmpty());
        QVERIFY(balance.barSets().isEmpty());
    }
};

QTEST_MAIN(TestCharts)
#include "tst_charts.moc"
