// SPDX-License-Identifier: MIT
// The timeline's time-to-pixel math on its own: round trips, zoom anchored under the cursor, and
// clamping to the data range and the minimum span.
#include "timeline/time_axis.h"

#include <QTest>
#include <algorithm>
#include <cmath>
#include <limits>

using shardscape::ui::TimeAxis;

namespace {

/** Relative comparison that also works around zero: |a - b| <= tolerance * max(1, |a|, |b|). */
bool near(double a, double b, double tolerance = 1e-9)
{
    return std::abs(a - b) <= tolerance * std::max({1.0, std::abs(a), std::abs(b)});
}

} // namespace

class TestTimeAxis : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void defaultsAreUsable()
    {
        const TimeAxis axis;
        QVERIFY(axis.span() > 0);
        QVERIFY(axis.width() >= 1);
        QVERIFY(std::isfinite(axis.toX(0.5)));
    }

    void mapsEndsToEdges()
    {
        const TimeAxis axis(2.0, 6.0, 800);
        QCOMPARE(axis.toX(2.0), 0.0);
        QCOMPARE(axis.toX(6.0), 800.0);
        QCOMPARE(axis.toX(4.0), 400.0);
        QCOMPARE(axis.toTime(0), 2.0);
        QCOMPARE(axis.toTime(800), 6.0);
        QCOMPARE(axis.secondsPerPixel(), 4.0 / 800);
    }

    void roundTrip_data()
    {
        QTest::addColumn<double>("dataStart");
        QTest::addColumn<double>("dataEnd");
        QTest::addColumn<double>("width");
        QTest::addColumn<double>("visibleStart");
        QTest::addColumn<double>("visibleEnd");
        QTest::addColumn<double>("time");
        QTest::newRow("seconds") << 0.0 << 10.0 << 1000.0 << 2.0 << 7.0 << 3.25;
        QTest::newRow("milliseconds") << 0.0 << 0.750 << 1237.0 << 0.1 << 0.1005 << 0.10031;
        QTest::newRow("offset start") << 5.0 << 9.0 << 300.0 << 6.0 << 8.0 << 5.5;
        QTest::newRow("microseconds narrow") << 0.0 << 1.0 << 1920.0 << 0.5 << 0.500002 << 0.5000013;
        QTest::newRow("outside visible") << 0.0 << 100.0 << 640.0 << 10.0 << 20.0 << 80.0;
    }

    void roundTrip()
    {
        QFETCH(double, dataStart);
        QFETCH(double, dataEnd);
        QFETCH(double, width);
        QFETCH(double, visibleStart);
        QFETCH(double, visibleEnd);
        QFETCH(double, time);
        TimeAxis axis(dataStart, dataEnd, width);
        axis.setRange(visibleStart, visibleEnd);
        QVERIFY(near(axis.start(), visibleStart));
        QVERIFY(near(axis.end(), visibleEnd));
        QVERIFY2(near(axis.toTime(axis.toX(time)), time, 1e-12), qPrintable(QString::number(axis.toX(time))));
        // Pixels survive the trip to well below a pixel (doubles hold ~16 digits of an absolute time).
        for (const double x : {0.0, 1.0, width / 3, width - 1, width})
            QVERIFY2(std::abs(axis.toX(axis.toTime(x)) - x) < 1e-6, qPrintable(QString::number(x)));
        // Pixels grow with time at a constant rate.
        QVERIFY(near(axis.toX(visibleStart + axis.secondsPerPixel()) - axis.toX(visibleStart), 1.0, 1e-6));
    }

    void zoomKeepsAnchorUnderCursor_data()
    {
        QTest::addColumn<double>("factor");
        QTest::addColumn<double>("anchorX");
        QTest::newRow("in at middle") << 2.0 << 500.0;
        QTest::newRow("in at left third") << 4.0 << 333.0;
        QTest::newRow("in at right quarter") << 1.25 << 750.0;
        QTest::newRow("out at middle") << 0.5 << 500.0;
        QTest::newRow("deep in near the left edge") << 1000.0 << 12.0;
    }

    void zoomKeepsAnchorUnderCursor()
    {
        QFETCH(double, factor);
        QFETCH(double, anchorX);
        TimeAxis axis(0.0, 100.0, 1000);
        axis.setRange(40.0, 60.0); // room on both sides, so no clamping interferes
        const double anchor = axis.toTime(anchorX);
        const double oldSpan = axis.span();
        axis.zoom(factor, anchor);
        QVERIFY2(near(axis.toX(anchor), anchorX, 1e-9), qPrintable(QString::number(axis.toX(anchor))));
        QVERIFY(near(axis.span(), oldSpan / factor));
    }

    void zoomInThenOutRestores()
    {
        TimeAxis axis(0.0, 1.0, 800);
        axis.setRange(0.2, 0.6);
        const double anchor = 0.35;
        axis.zoom(8, anchor);
        axis.zoom(1.0 / 8, anchor);
        QVERIFY(near(axis.start(), 0.2));
        QVERIFY(near(axis.end(), 0.6));
    }

    void zoomInThenOutFromFitIsFit()
    {
        TimeAxis axis(0.0, 0.7379, 1143);
        for (int i = 0; i < 4; ++i)
            axis.zoom(1.41421356237, 0.3);
        QVERIFY(!axis.isFit());
        axis.zoom(std::pow(1.41421356237, -4), 0.3);
        QVERIFY(axis.isFit());
    }

    void zoomOutClampsToData()
    {
        TimeAxis axis(1.0, 3.0, 500);
        axis.setRange(2.5, 2.9);
        axis.zoom(1e-3, 2.8);
        QCOMPARE(axis.start(), 1.0);
        QCOMPARE(axis.end(), 3.0);
        QVERIFY(axis.isFit());
    }

    void zoomInStopsAtMinimumSpan()
    {
        TimeAxis axis(0.0, 1.0, 500);
        axis.setMinimumSpan(1e-6);
        axis.zoom(1e12, 0.25);
        QVERIFY(near(axis.span(), 1e-6, 1e-9));
        QVERIFY(axis.start() <= 0.25 && axis.end() >= 0.25);
        // Zooming in further changes nothing.
        const double start = axis.start();
        axis.zoom(10, 0.25);
        QCOMPARE(axis.start(), start);
    }

    void zoomNearEdgeStaysInside()
    {
        TimeAxis axis(0.0, 10.0, 1000);
        axis.setRange(0.0, 10.0);
        axis.zoom(2, 0.0);
        QCOMPARE(axis.start(), 0.0);
        QVERIFY(near(axis.end(), 5.0));
        axis.zoom(2, 10.0); // anchor outside the visible range: result still inside the data
        QVERIFY(axis.start() >= 0.0);
        QVERIFY(axis.end() <= 10.0);
        QVERIFY(near(axis.span(), 2.5));
    }

    void panMovesAndClamps()
    {
        TimeAxis axis(0.0, 10.0, 1000);
        axis.setRange(4.0, 6.0);
        axis.pan(1.5);
        QVERIFY(near(axis.start(), 5.5));
        QVERIFY(near(axis.end(), 7.5));
        axis.pan(100);
        QVERIFY(near(axis.end(), 10.0));
        QVERIFY(near(axis.span(), 2.0));
        axis.pan(-100);
        QCOMPARE(axis.start(), 0.0);
        QVERIFY(near(axis.span(), 2.0));
    }

    void setRangeClamps_data()
    {
        QTest::addColumn<double>("start");
        QTest::addColumn<double>("end");
        QTest::addColumn<double>("expectedStart");
        QTest::addColumn<double>("expectedEnd");
        QTest::newRow("inside") << 2.0 << 3.0 << 2.0 << 3.0;
        QTest::newRow("before data") << -5.0 << -3.0 << 0.0 << 2.0;
        QTest::newRow("after data") << 9.0 << 12.0 << 7.0 << 10.0;
        QTest::newRow("wider than data") << -1.0 << 20.0 << 0.0 << 10.0;
        QTest::newRow("reversed") << 6.0 << 4.0 << 4.0 << 6.0;
        QTest::newRow("narrower than minimum") << 5.0 << 5.0 << 4.999 << 5.001;
        QTest::newRow("narrow at the edge") << 10.0 << 10.0 << 9.998 << 10.0;
    }

    void setRangeClamps()
    {
        QFETCH(double, start);
        QFETCH(double, end);
        QFETCH(double, expectedStart);
        QFETCH(double, expectedEnd);
        TimeAxis axis(0.0, 10.0, 1000);
        axis.setMinimumSpan(0.002);
        axis.setRange(start, end);
        QVERIFY2(near(axis.start(), expectedStart), qPrintable(QString::number(axis.start(), 'g', 12)));
        QVERIFY2(near(axis.end(), expectedEnd), qPrintable(QString::number(axis.end(), 'g', 12)));
        QVERIFY(axis.start() >= axis.dataStart());
        QVERIFY(axis.end() <= axis.dataEnd());
    }

    void ignoresNonFiniteInput()
    {
        TimeAxis axis(0.0, 10.0, 1000);
        axis.setRange(2.0, 4.0);
        axis.setRange(std::nan(""), 5.0);
        axis.zoom(std::numeric_limits<double>::infinity(), 3.0);
        axis.zoom(0, 3.0);
        axis.pan(std::nan(""));
        QCOMPARE(axis.start(), 2.0);
        QCOMPARE(axis.end(), 4.0);
    }

    void emptyDataRangeStaysMappable()
    {
        TimeAxis axis(3.0, 3.0, 0); // an empty timeline in a not yet laid out widget
        QVERIFY(axis.span() > 0);
        QCOMPARE(axis.width(), 1.0);
        QVERIFY(std::isfinite(axis.toX(3.0)));
        QVERIFY(std::isfinite(axis.toTime(10)));
    }

    void minimumSpanCappedByData()
    {
        TimeAxis axis(0.0, 1e-6, 500);
        axis.setMinimumSpan(1.0);
        QCOMPARE(axis.minimumSpan(), 1e-6);
        axis.zoom(10, 5e-7);
        QVERIFY(axis.isFit());
    }

    void setDataRangeShowsAll()
    {
        TimeAxis axis(0.0, 10.0, 1000);
        axis.setRange(2.0, 3.0);
        axis.setDataRange(0.0, 20.0);
        QCOMPARE(axis.start(), 0.0);
        QCOMPARE(axis.end(), 20.0);
        axis.setRange(5.0, 6.0);
        axis.zoomToFit();
        QVERIFY(axis.isFit());
    }

    void resizeKeepsTimeRange()
    {
        TimeAxis axis(0.0, 10.0, 1000);
        axis.setRange(2.0, 4.0);
        axis.setWidth(500);
        QCOMPARE(axis.start(), 2.0);
        QCOMPARE(axis.end(), 4.0);
        QCOMPARE(axis.toX(4.0), 500.0);
    }
};

QTEST_APPLESS_MAIN(TestTimeAxis)
#include "tst_time_axis.moc"
