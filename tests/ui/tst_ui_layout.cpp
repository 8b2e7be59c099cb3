// SPDX-License-Identifier: MIT
// The main window's layout from 1280x720 to 3840x2160 (issue 20 item 4): after planning, and after resizing back
// and forth, no control of the Inputs panel is cut or needs sideways scrolling (also while Tab walks through it),
// the candidate table's visible columns fit without a horizontal scroll bar, no dock tab's title is shortened, and
// the stage charts never write their stage numbers as "..." (64 stages included).
#include "charts/chart_base.h"
#include "charts/memory_chart.h"
#include "charts/stage_balance_chart.h"
#include "models/candidates_model.h"
#include "widgets/candidates_panel.h"
#include "widgets/main_window.h"
#include "widgets/what_if_panel.h"

#include <QAbstractAxis>
#include <QAbstractSpinBox>
#include <QApplication>
#include <QChart>
#include <QComboBox>
#include <QDockWidget>
#include <QHeaderView>
#include <QLineEdit>
#include <QScrollArea>
#include <QScrollBar>
#include <QSignalSpy>
#include <QTabBar>
#include <QTableView>
#include <QTest>

using namespace shardscape;
using namespace shardscape::ui;

namespace {

constexpr int kPlanTimeoutMs = 120'000;

/** The scroll area that holds the Inputs panel's cluster and planner options. */
QScrollArea* inputsScrollArea(MainWindow& window)
{
    auto* dock = window.findChild<QDockWidget*>(QStringLiteral("inputsDock"));
    return dock ? dock->findChild<QScrollArea*>() : nullptr;
}

/** Every input control of the scroll area that is shown, for the clipping check. */
QList<QWidget*> inputControls(QScrollArea* area)
{
    QList<QWidget*> controls;
    for (QWidget* w : area->widget()->findChildren<QWidget*>())
        if (w->isVisibleTo(area->widget())
            && (qobject_cast<QAbstractSpinBox*>(w) || qobject_cast<QComboBox*>(w)
                || (qobject_cast<QLineEdit*>(w) && !qobject_cast<QAbstractSpinBox*>(w->parentWidget())
                    && !qobject_cast<QComboBox*>(w->parentWidget()))))
            controls << w;
    return controls;
}

/** Layouts, dock separators, the table's column fit and the charts' label fits all run from the event loop. */
void pumpEvents()
{
    for (int i = 0; i < 5; ++i) {
        QApplication::processEvents();
        QTest::qWait(20);
    }
}

void settle(MainWindow& window, QSize size)
{
    window.resize(size);
    pumpEvents();
}

} // namespace

class TestUiLayout : public QObject
{
    Q_OBJECT
private slots:
    void holdsFrom1280x720To3840x2160();
    void stageNumbersNeverCollapse();
    void stageLabelsWithLayersNeverCollapse();
};

void TestUiLayout::holdsFrom1280x720To3840x2160()
{
    MainWindowOptions options;
    options.use_settings = false;
    options.model = QStringLiteral("llama2-70b");
    options.nodes = 16;
    MainWindow window(options);
    QSignalSpy selectionShown(&window, &MainWindow::selectionShown);
    window.resize(1280, 720);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QVERIFY(selectionShown.wait(kPlanTimeoutMs));

    for (const QSize size :
         {QSize(1280, 720), QSize(1920, 1080), QSize(3840, 2160), QSize(1280, 720), QSize(1600, 900)}) {
        settle(window, size);
        const QString at = QStringLiteral("%1x%2").arg(size.width()).arg(size.height());

        // Inputs: nothing to scroll sideways, every control whole, also while Tab walks through them.
        QScrollArea* area = inputsScrollArea(window);
        QVERIFY(area);
        if (area->isVisible()) {
            QVERIFY2(area->horizontalScrollBar()->maximum() == 0,
                     qPrintable(QStringLiteral("%1: the inputs scroll %2 px sideways")
                                    .arg(at)
                                    .arg(area->horizontalScrollBar()->maximum())));
            const int room = area->viewport()->width();
            const QList<QWidget*> controls = inputControls(area);
            QVERIFY(controls.size() >= 6);
            for (QWidget* control : controls) {
                const int right = control->mapTo(area->viewport(), QPoint(control->width(), 0)).x();
                QVERIFY2(right <= room + 1,
                         qPrintable(QStringLiteral("%1: %2 ends at %3 of %4 px")
                                        .arg(at,
                                             control->objectName().isEmpty()
                                                 ? QString::fromLatin1(control->metaObject()->className())
                                                 : control->objectName())
                                        .arg(right)
                                        .arg(room)));
            }
            controls.front()->setFocus(Qt::TabFocusReason);
            for (int i = 0; i < controls.size(); ++i) {
                QWidget* focused = QApplication::focusWidget();
                if (!focused || !area->widget()->isAncestorOf(focused))
                    break;
                QCOMPARE(area->horizontalScrollBar()->value(), 0);
                QTest::keyClick(focused, Qt::Key_Tab);
            }
        }

        // The candidate table: the columns shown fit; step time, MFU, peak memory and the OOM risk are among them.
        QTableView* table = window.candidatesPanel()->view();
        QVERIFY2(table->horizontalScrollBar()->maximum() == 0,
                 qPrintable(QStringLiteral("%1: the candidate table scrolls %2 px sideways (%3 columns hidden)")
                                .arg(at)
                                .arg(table->horizontalScrollBar()->maximum())
                                .arg(window.candidatesPanel()->autoHiddenColumns())));
        for (int column : {CandidatesModel::TpColumn, CandidatesModel::PpColumn, CandidatesModel::DpColumn,
                           CandidatesModel::StepTimeColumn, CandidatesModel::MfuColumn,
                           CandidatesModel::PeakMemoryColumn, CandidatesModel::OomRiskColumn})
            QVERIFY2(!table->isColumnHidden(column), qPrintable(QStringLiteral("%1: column %2").arg(at).arg(column)));
        if (size.width() >= 3840)
            QCOMPARE(window.candidatesPanel()->autoHiddenColumns(), 0);

        // Dock tabs keep their whole titles.
        for (QTabBar* bar : window.findChildren<QTabBar*>()) {
            if (!bar->isVisible() || bar->parentWidget() != &window)
                continue;
            for (int i = 0; i < bar->count(); ++i) {
                const int needed = bar->fontMetrics().horizontalAdvance(bar->tabText(i));
                QVERIFY2(bar->tabRect(i).width() >= needed,
                         qPrintable(QStringLiteral("%1: tab '%2' is %3 px for %4")
                                        .arg(at, bar->tabText(i))
                                        .arg(bar->tabRect(i).width())
                                        .arg(needed)));
            }
        }

        // No chart shortens a label to "...".
        for (ChartBase* chart : window.findChildren<ChartBase*>()) {
            if (!chart->isVisible())
                continue;
            QStringList truncated;
            for (QAbstractAxis* axis : chart->chart()->axes())
                if (axis->labelsTruncated())
                    truncated << axis->titleText();
            QVERIFY2(truncated.isEmpty(),
                     qPrintable(QStringLiteral("%1: %2 truncates labels on %3")
                                    .arg(at, chart->metaObject()->className(), truncated.join(QStringLiteral(", ")))));
        }
    }

    // A user's column choice wins over the fit, and the automatic fit comes back on request.
    settle(window, QSize(1280, 720));
    window.candidatesPanel()->setColumnChoice(CandidatesModel::TflopsColumn, true);
    QVERIFY(!window.candidatesPanel()->view()->isColumnHidden(CandidatesModel::TflopsColumn));
    window.candidatesPanel()->setColumnChoice(CandidatesModel::TpColumn, false);
    QVERIFY(window.candidatesPanel()->view()->isColumnHidden(CandidatesModel::TpColumn));
    window.candidatesPanel()->resetColumnChoices();
    QVERIFY(!window.candidatesPanel()->view()->isColumnHidden(CandidatesModel::TpColumn));
}

void TestUiLayout::stageNumbersNeverCollapse()
{
    // A 64-stage pipeline on a quarter-screen chart: every stage number that is written is whole.
    Evaluation e;
    e.feasible = true;
    e.memory_limit_bytes = 80e9;
    for (int s = 0; s < 64; ++s) {
        StageReport stage;
        stage.devices = 8;
        stage.memory.weights = 10e9;
        stage.memory.activations = 30e9 - 2e8 * s;
        e.stages.push_back(stage);
    }
    for (std::size_t s = 0; s < e.stages.size(); ++s) {
        e.stages[s].first_layer = e.stages[s].last_layer = static_cast<int>(s);
        e.stages[s].compute = 0.1 + 0.001 * static_cast<double>(s % 5);
    }
    StageBalanceChart balance;
    balance.setEvaluation(e, {});
    MemoryChart chart;
    chart.setEvaluation(e);
    for (const QSize size : {QSize(420, 300), QSize(700, 400), QSize(1600, 900)}) {
        chart.resize(size);
        chart.show();
        QVERIFY(QTest::qWaitForWindowExposed(&chart));
        pumpEvents();
        balance.resize(size);
        balance.show();
        QVERIFY(QTest::qWaitForWindowExposed(&balance));
        pumpEvents();
        QVERIFY2(!chart.labelsTruncated(), qPrintable(QStringLiteral("%1 px wide").arg(size.width())));
        QVERIFY2(!balance.labelsTruncated(), qPrintable(QStringLiteral("balance, %1 px wide").arg(size.width())));
        QVERIFY(balance.categories().size() >= 4);
        QCOMPARE(chart.stageCount(), 64);
        const QStringList written = chart.stageLabels();
        QCOMPARE(written.front(), QStringLiteral("0"));
        QVERIFY2(written.size() >= 4, qPrintable(written.join(QLatin1Char(' '))));
        if (size.width() >= 1600)
            QVERIFY2(written.size() >= 16, qPrintable(written.join(QLatin1Char(' '))));
    }
}

void TestUiLayout::stageLabelsWithLayersNeverCollapse()
{
    // Four stages of 20 blocks ("0: layers 0-20"): written on one to three lines, or as numbers, but never cut,
    // whatever the chart's width, also after it changes.
    Evaluation e;
    e.feasible = true;
    for (int s = 0; s < 4; ++s) {
        StageReport stage;
        stage.devices = 32;
        stage.first_layer = 20 * s + (s > 0 ? 1 : 0);
        stage.last_layer = 20 * s + 20;
        stage.compute = 0.25;
        e.stages.push_back(stage);
    }
    StageBalanceChart balance;
    balance.setEvaluation(e, {});
    balance.show();
    QVERIFY(QTest::qWaitForWindowExposed(&balance));
    for (const QSize size :
         {QSize(1200, 500), QSize(356, 300), QSize(480, 300), QSize(300, 260), QSize(700, 400), QSize(356, 300)}) {
        balance.resize(size);
        pumpEvents();
        pumpEvents();
        QVERIFY2(!balance.labelsTruncated(),
                 qPrintable(QStringLiteral("%1 px wide: %2").arg(size.width()).arg(balance.categories().join(" | "))));
    }
}

QTEST_MAIN(TestUiLayout)
#include "tst_ui_layout.moc"
