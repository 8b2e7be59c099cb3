// SPDX-License-Identifier: MIT
// The pipeline timeline against the simulator's events, a 100,000-event paint budget, folding, zoom
// and pan with synthesized input, tooltips, and PNG/SVG export.
#include "timeline/timeline_view.h"

#include "shardscape/cost/cost_model.h"
#include "shardscape/hardware/cluster.h"
#include "shardscape/model/model_source.h"

#include <QApplication>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QImage>
#include <QPainter>
#include <QScrollBar>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QToolTip>
#include <QWheelEvent>

#include <cmath>

using namespace shardscape;
using shardscape::ui::TimelineView;

namespace {

constexpr int kSyntheticEvents = 100'000;
constexpr int kSyntheticRanks = 8;
constexpr double kPaintBudgetMs = 50;

/** A 1F1B-looking step: per rank, back-to-back compute boxes with small gaps, sends and a grad sync. */
std::shared_ptr<const SimulationResult> syntheticTimeline(int events, int ranks)
{
    auto sim = std::make_shared<SimulationResult>();
    const int perRank = events / ranks;
    const int sends = perRank / 5;
    const int syncs = 10;
    const int compute = perRank - sends - syncs;
    double end = 0;
    for (int r = 0; r < ranks; ++r) {
        double t = r * 2e-4; // the pipeline's warm-up staircase
        for (int i = 0; i < compute; ++i) {
            TimelineEvent e;
            e.rank = r;
            e.stage = r;
            e.microbatch = i / 2;
            e.kind = i % 2 == 0 ? EventKind::Forward : EventKind::Backward;
            e.start = t;
            e.duration = i % 2 == 0 ? 4e-5 : 8e-5;
            e.stream = 0;
            sim->events.push_back(e);
            t += e.duration + 1e-5;
        }
        const double computeEnd = t;
        for (int i = 0; i < sends; ++i) {
            TimelineEvent e;
            e.rank = r;
            e.stage = r;
            e.microbatch = i;
            e.kind = i % 2 == 0 ? EventKind::SendForward : EventKind::SendBackward;
            e.start = computeEnd * i / sends;
            e.duration = 5e-6;
            e.stream = 1;
            sim->events.push_back(e);
        }
        for (int i = 0; i < syncs; ++i) {
            TimelineEvent e;
            e.rank = r;
            e.stage = r;
            e.kind = i + 1 < syncs ? EventKind::GradSync : EventKind::OptimizerStep;
            e.start = computeEnd + i * 1e-3;
            e.duration = 9e-4;
            e.stream = i + 1 < syncs ? 2 : 0;
            sim->events.push_back(e);
            end = std::max(end, e.start + e.duration);
        }
        sim->busy.push_back(computeEnd);
    }
    sim->step_time = end;
    sim->pipeline_time = end;
    return sim;
}

void sendWheel(QWidget* target, QPoint pos, QPoint angleDelta, Qt::KeyboardModifiers modifiers = Qt::NoModifier)
{
    QWheelEvent event(pos, target->mapToGlobal(pos), QPoint(), angleDelta, Qt::NoButton, modifiers, Qt::NoScrollPhase,
                      false);
    QApplication::sendEvent(target, &event);
}

void sendMouse(QWidget* target, QEvent::Type type, QPoint pos, Qt::MouseButton button, Qt::MouseButtons buttons)
{
    QMouseEvent event(type, pos, target->mapToGlobal(pos), button, buttons, Qt::NoModifier);
    QApplication::sendEvent(target, &event);
}

/** Milliseconds of the slowest of `rounds` synchronous repaints. */
double slowestRepaintMs(TimelineView& view, int rounds)
{
    double slowest = 0;
    for (int i = 0; i < rounds; ++i) {
        QElapsedTimer timer;
        timer.start();
        view.viewport()->repaint();
        slowest = std::max(slowest, timer.nsecsElapsed() / 1e6);
    }
    return slowest;
}

} // namespace

class TestTimeline : public QObject
{
    Q_OBJECT

private:
    std::shared_ptr<const SimulationResult> m_real;

private Q_SLOTS:
    void initTestCase()
    {
        BuildOptions build;
        build.seq_len = 4096;
        auto graph = std::make_shared<const ModelGraph>(loadModel("llama2-7b", build));
        const CostModel model(graph, loadCluster("h100-sxm", 1, 8));
        ParallelConfig config;
        config.tp = 2;
        config.pp = 4;
        config.dp = 1;
        config.micro_batch = 1;
        config.num_microbatches = 8;
        Workload workload;
        workload.global_batch = 8;
        workload.seq_len = 4096;
        EvaluateOptions options;
        options.record_timeline = true;
        const Evaluation e = model.evaluate(config, workload, options);
        QVERIFY2(e.simulation, e.reason.c_str());
        QVERIFY(!e.simulation->events.empty());
        m_real = e.simulation;
    }

    void eventCountMatchesSimulation()
    {
        TimelineView view;
        QCOMPARE(view.eventCount(), 0);
        view.resize(1280, 600);
        view.setTimeline(m_real, QStringLiteral("llama2-7b tp2 pp4"));
        QCOMPARE(view.eventCount(), static_cast<int>(m_real->events.size()));
        QCOMPARE(view.title(), QStringLiteral("llama2-7b tp2 pp4"));
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        view.viewport()->repaint();
        QVERIFY(view.paintedItemCount() > 0);
        QVERIFY(view.paintedItemCount() <= view.eventCount());
        // Fitted: the axis spans the whole step.
        QCOMPARE(view.axis().start(), 0.0);
        QVERIFY(view.axis().end() >= m_real->step_time);
    }

    void everyEventDrawnWhenWideEnough()
    {
        // 32 compute events of a real 1F1B step on a wide view: nothing folds, every event is a box.
        auto sim = std::make_shared<SimulationResult>();
        for (int i = 0; i < 32; ++i) {
            TimelineEvent e;
            e.start = i * 0.01;
            e.duration = 0.009;
            e.microbatch = i;
            e.kind = i % 2 ? EventKind::Backward : EventKind::Forward;
            sim->events.push_back(e);
        }
        sim->step_time = 0.32;
        sim->pipeline_time = 0.32;
        TimelineView view;
        view.resize(1280, 400);
        view.setTimeline(sim, QString());
        QImage image(view.viewport()->size(), QImage::Format_ARGB32_Premultiplied);
        view.viewport()->render(&image);
        QCOMPARE(view.paintedItemCount(), 32);
        QCOMPARE(view.paintedFoldCount(), 0);
        // Zoomed onto two events, only those (and the neighbours reaching into view) are drawn.
        view.setVisibleRange(0.1005, 0.1195);
        view.viewport()->render(&image);
        QVERIFY2(view.paintedItemCount() >= 2 && view.paintedItemCount() <= 3,
                 qPrintable(QString::number(view.paintedItemCount())));
    }

    void hundredThousandEventsPaintFastAndFold()
    {
        const auto sim = syntheticTimeline(kSyntheticEvents, kSyntheticRanks);
        QCOMPARE(static_cast<int>(sim->events.size()), kSyntheticEvents);
        TimelineView view;
        view.resize(1280, 800);
        view.setTimeline(sim, QStringLiteral("synthetic 100k"));
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        QCOMPARE(view.eventCount(), kSyntheticEvents);

        const double fitted = slowestRepaintMs(view, 10);
        qInfo("100k events, zoomed to fit: slowest repaint %.2f ms, %d items (%d folded marks)", fitted,
              view.paintedItemCount(), view.paintedFoldCount());
        QVERIFY2(fitted < kPaintBudgetMs, qPrintable(QString::number(fitted)));
        QVERIFY2(view.paintedItemCount() < kSyntheticEvents / 50, qPrintable(QString::number(view.paintedItemCount())));
        QVERIFY(view.paintedFoldCount() > 0);

        // Rendering into an image (what export does) is within budget too.
        QImage image(view.viewport()->size(), QImage::Format_ARGB32_Premultiplied);
        QElapsedTimer timer;
        timer.start();
        view.viewport()->render(&image);
        const double rendered = timer.nsecsElapsed() / 1e6;
        qInfo("100k events, render into QImage: %.2f ms", rendered);
        QVERIFY(rendered < kPaintBudgetMs);

        // Zoomed in to a few milliseconds: few events, drawn as boxes, culled to the view.
        view.setVisibleRange(0.3, 0.302);
        const double zoomed = slowestRepaintMs(view, 10);
        qInfo("100k events, 2 ms visible: slowest repaint %.2f ms, %d items", zoomed, view.paintedItemCount());
        QVERIFY(zoomed < kPaintBudgetMs);
        QVERIFY(view.paintedItemCount() > 0);
        QVERIFY(view.paintedItemCount() < 400);
        QCOMPARE(view.paintedFoldCount(), 0);

        // Half way: a mix; still far below one item per event.
        view.setVisibleRange(0.1, 0.3);
        const double middle = slowestRepaintMs(view, 10);
        qInfo("100k events, 200 ms visible: slowest repaint %.2f ms, %d items", middle, view.paintedItemCount());
        QVERIFY(middle < kPaintBudgetMs);
    }

    void wheelZoomsAroundCursor()
    {
        TimelineView view;
        view.resize(1280, 600);
        view.setTimeline(m_real, QString());
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        const double fitSpan = view.axis().span();
        const QPoint cursor(view.plotLeft() + 400, view.lanesTop() + 10);
        const double anchor = view.axis().toTime(400);

        sendWheel(view.viewport(), cursor, QPoint(0, 120));
        QVERIFY2(view.axis().span() < fitSpan / 1.3, qPrintable(QString::number(view.axis().span() / fitSpan)));
        QVERIFY(std::abs(view.axis().toTime(400) - anchor) < 1e-9 * fitSpan);

        sendWheel(view.viewport(), cursor, QPoint(0, 3 * 120));
        const double zoomedSpan = view.axis().span();
        QVERIFY(std::abs(zoomedSpan - fitSpan / 4) < 1e-9 * fitSpan); // four notches of sqrt(2)
        QVERIFY(std::abs(view.axis().toTime(400) - anchor) < 1e-9 * fitSpan);
        QVERIFY(view.horizontalScrollBar()->maximum() > 0);

        // Back out the same amount: the fit again.
        sendWheel(view.viewport(), cursor, QPoint(0, -4 * 120));
        QVERIFY(std::abs(view.axis().span() - fitSpan) < 1e-9 * fitSpan);
        QVERIFY(view.axis().isFit());
        // Out beyond the fit: clamped.
        sendWheel(view.viewport(), cursor, QPoint(0, -120));
        QVERIFY(view.axis().isFit());
    }

    void dragPansAndDoubleClickFits()
    {
        TimelineView view;
        view.resize(1280, 600);
        view.setTimeline(m_real, QString());
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        const double step = m_real->step_time;
        view.setVisibleRange(0.4 * step, 0.6 * step);
        const double start = view.axis().start();
        const double secondsPerPixel = view.axis().secondsPerPixel();
        QSignalSpy spy(&view, &TimelineView::visibleRangeChanged);

        const QPoint from(view.plotLeft() + 600, view.lanesTop() + 20);
        const QPoint to = from - QPoint(150, 0);
        sendMouse(view.viewport(), QEvent::MouseButtonPress, from, Qt::LeftButton, Qt::LeftButton);
        sendMouse(view.viewport(), QEvent::MouseMove, from - QPoint(50, 0), Qt::NoButton, Qt::LeftButton);
        sendMouse(view.viewport(), QEvent::MouseMove, to, Qt::NoButton, Qt::LeftButton);
        sendMouse(view.viewport(), QEvent::MouseButtonRelease, to, Qt::LeftButton, Qt::NoButton);
        // Dragging left by 150 px shows 150 px worth of later time; the zoom is unchanged.
        QVERIFY2(std::abs(view.axis().start() - (start + 150 * secondsPerPixel)) < 1e-9,
                 qPrintable(QString::number((view.axis().start() - start) / secondsPerPixel)));
        QVERIFY(std::abs(view.axis().secondsPerPixel() - secondsPerPixel) < 1e-12);
        QVERIFY(spy.count() >= 2);

        // A long drag to the right stops at the start of the data.
        sendMouse(view.viewport(), QEvent::MouseButtonPress, from, Qt::LeftButton, Qt::LeftButton);
        sendMouse(view.viewport(), QEvent::MouseMove, from + QPoint(5000, 0), Qt::NoButton, Qt::LeftButton);
        sendMouse(view.viewport(), QEvent::MouseButtonRelease, from + QPoint(5000, 0), Qt::LeftButton, Qt::NoButton);
        QCOMPARE(view.axis().start(), 0.0);
        QVERIFY(!view.axis().isFit());

        sendMouse(view.viewport(), QEvent::MouseButtonDblClick, from, Qt::LeftButton, Qt::LeftButton);
        QVERIFY(view.axis().isFit());
    }

    void keyboardZoomsAndPans()
    {
        TimelineView view;
        view.resize(1000, 500);
        view.setTimeline(m_real, QString());
        const double fitSpan = view.axis().span();
        QTest::keyClick(&view, Qt::Key_Plus);
        QVERIFY(std::abs(view.axis().span() - fitSpan / 2) < 1e-9 * fitSpan);
        const double start = view.axis().start();
        QTest::keyClick(&view, Qt::Key_Right);
        QVERIFY(view.axis().start() > start);
        QTest::keyClick(&view, Qt::Key_Home);
        QVERIFY(view.axis().isFit());
    }

    void tooltipDescribesEvent()
    {
        // One forward box of micro-batch 3 on rank 0, 10 ms to 30 ms.
        auto sim = std::make_shared<SimulationResult>();
        TimelineEvent e;
        e.start = 0.010;
        e.duration = 0.020;
        e.stage = 2;
        e.microbatch = 3;
        e.kind = EventKind::Forward;
        sim->events.push_back(e);
        sim->step_time = 0.04;
        sim->pipeline_time = 0.04;
        TimelineView view;
        view.resize(1000, 400);
        view.setTimeline(sim, QString());
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        const int x = view.plotLeft() + static_cast<int>(view.axis().toX(0.020));
        const QPoint pos(x, view.lanesTop() + 8);
        QHelpEvent help(QEvent::ToolTip, pos, view.viewport()->mapToGlobal(pos));
        QApplication::sendEvent(view.viewport(), &help);
        const QString text = QToolTip::text();
        QVERIFY2(text.contains(QStringLiteral("forward")), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("micro-batch 3")), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("stage 2")), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("start 10.000 ms")), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("duration 20.000 ms")), qPrintable(text));

        // Over the bubble after the box: nothing.
        const int idleX = view.plotLeft() + static_cast<int>(view.axis().toX(0.036));
        QHelpEvent idle(QEvent::ToolTip, QPoint(idleX, pos.y()), view.viewport()->mapToGlobal(QPoint(idleX, pos.y())));
        QApplication::sendEvent(view.viewport(), &idle);
        QTRY_VERIFY(!QToolTip::isVisible());
    }

    void exportsPngAndSvg()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        TimelineView view;
        view.resize(1280, 800);
        view.setTimeline(m_real, QStringLiteral("llama2-7b tp2 pp4 (export)"));
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));

        const QString png = dir.filePath(QStringLiteral("timeline.png"));
        QVERIFY(view.exportImage(png));
        QImage image(png);
        QVERIFY(!image.isNull());
        // Every rank (all of the content height, not the scrolled-to part), a slide's width, at twice the pixels.
        QCOMPARE(image.width(), 2 * std::max(view.viewport()->width(), TimelineView::kExportMinWidth));
        QVERIFY(image.height() >= 2 * view.contentHeight());
        QVERIFY(QFileInfo(png).size() > 1000);

        const QString svg = dir.filePath(QStringLiteral("timeline.svg"));
        QVERIFY(view.exportImage(svg));
        QFile file(svg);
        QVERIFY(file.open(QIODevice::ReadOnly));
        const QByteArray contents = file.readAll();
        QVERIFY(contents.size() > 1000);
        QVERIFY(contents.contains("<svg"));
        QVERIFY(contents.contains("rank 3"));

        QVERIFY(!view.exportImage(dir.filePath(QStringLiteral("timeline.unknown"))));
    }

    void clearShowsNothing()
    {
        TimelineView view;
        view.resize(800, 400);
        view.setTimeline(m_real, QString());
        view.clear();
        QCOMPARE(view.eventCount(), 0);
        QImage image(view.viewport()->size(), QImage::Format_ARGB32_Premultiplied);
        view.viewport()->render(&image);
        QCOMPARE(view.paintedItemCount(), 0);
        // And an empty result (record_events off) is not an error either.
        view.setTimeline(std::make_shared<SimulationResult>(), QStringLiteral("no events"));
        view.viewport()->render(&image);
        QCOMPARE(view.eventCount(), 0);
        QCOMPARE(view.paintedItemCount(), 0);
    }
};

QTEST_MAIN(TestTimeline)
#include "tst_timeline.moc"
