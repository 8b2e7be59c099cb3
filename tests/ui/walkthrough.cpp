// SPDX-License-Identifier: MIT
// A new user's eight tasks in the desktop app, driven through its widgets as a user would (typing into the fields
// found by their labels, clicking buttons by their text, keyboard shortcuts) and photographed after each:
//   1 launch (the embedded default plans at once)    5 read the views (another candidate, the chart tabs)
//   2 load an HF config.json, then an ONNX export    6 what-if and compare
//   3 set cluster, memory limit, stages and a pivot  7 export for a framework
//   4 plan                                           8 bad input, then resize and keyboard
// Each step checks what the user would check and exits 1 with the reason when it does not hold. Run it under Xvfb
// (tests/ui/walkthrough.sh) to photograph the real X11 window, message boxes included; on the offscreen platform the
// photographs are the window's own rendering.
//
//   shardscape_walkthrough --size WxH --out DIR
#include "models/candidates_model.h"
#include "models/layers_model.h"
#include "widgets/candidates_panel.h"
#include "widgets/compare_widget.h"
#include "widgets/main_window.h"
#include "widgets/model_panel.h"
#include "widgets/what_if_panel.h"

#include <QAbstractButton>
#include <QAbstractSpinBox>
#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QDockWidget>
#include <QElapsedTimer>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QScreen>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTabBar>
#include <QTabWidget>
#include <QTableView>
#include <QTest>

#include <cstdio>
#include <cstdlib>

using namespace shardscape;
using namespace shardscape::ui;

namespace {

constexpr int kTimeoutMs = 120'000;

[[noreturn]] void fail(const QString& step, const QString& why)
{
    std::fprintf(stderr, "walkthrough: %s: %s\n", qPrintable(step), qPrintable(why));
    std::exit(1);
}

/** Lets layouts, repaints and the views' queued updates happen, as a user's eye would wait. */
void settle(int ms = 300)
{
    QElapsedTimer t;
    t.start();
    while (t.elapsed() < ms)
        QApplication::processEvents(QEventLoop::AllEvents, 20);
}

QString plainText(QString text)
{
    return text.remove(QLatin1Char('&')).remove(QLatin1Char(':')).trimmed();
}

/** The field a form labels `label` (the label's buddy), as a user finds it. */
QWidget* fieldLabelled(QWidget* root, const QString& label)
{
    for (QLabel* l : root->findChildren<QLabel*>())
        if (l->buddy() && l->isVisible() && plainText(l->text()) == label)
            return l->buddy();
    return nullptr;
}

QAbstractButton* buttonNamed(QWidget* root, const QString& text)
{
    for (QAbstractButton* b : root->findChildren<QAbstractButton*>())
        if (b->isVisible() && plainText(b->text()) == text)
            return b;
    return nullptr;
}

/** Selects what a field holds and types `text` over it, then Tab, as a user edits a spin box. */
void typeInto(const QString& step, QWidget* root, const QString& label, const QString& text)
{
    QWidget* field = fieldLabelled(root, label);
    if (!field)
        fail(step, QStringLiteral("no field labelled '%1' on screen").arg(label));
    field->setFocus(Qt::MouseFocusReason);
    QTest::keyClick(field, Qt::Key_A, Qt::ControlModifier);
    QTest::keyClicks(field, text);
    QTest::keyClick(field, Qt::Key_Tab);
}

void click(const QString& step, QWidget* root, const QString& text)
{
    QAbstractButton* button = buttonNamed(root, text);
    if (!button)
        fail(step, QStringLiteral("no button '%1' on screen").arg(text));
    if (!button->isEnabled())
        fail(step, QStringLiteral("the button '%1' is disabled").arg(text));
    QTest::mouseClick(button, Qt::LeftButton);
}

/** Gives the window the keyboard (shortcuts are window-wide): under Xvfb there is no window manager to do it. */
void focusWindow(const QString& step, QWidget& window)
{
    window.activateWindow();
    if (!QTest::qWaitForWindowActive(&window))
        fail(step, QStringLiteral("the window did not get the keyboard focus"));
}

/** Brings a dock to the front, as clicking its tab does, and returns it (the window when there is none). */
QWidget* raiseDock(MainWindow& window, const char* name)
{
    auto* dock = window.findChild<QDockWidget*>(QLatin1String(name));
    if (!dock)
        return &window;
    dock->show();
    dock->raise();
    settle(100);
    return dock;
}

/** Runs the event loop until `done` holds; the step fails after kTimeoutMs. */
template<typename Condition> void waitUntil(const QString& step, const QString& what, Condition done)
{
    QElapsedTimer t;
    t.start();
    while (!done()) {
        if (t.elapsed() > kTimeoutMs)
            fail(step, QStringLiteral("%1 did not happen within %2 s").arg(what).arg(kTimeoutMs / 1000));
        QApplication::processEvents(QEventLoop::AllEvents, 20);
    }
}

template<typename Signal> void waitFor(const QString& step, MainWindow& window, Signal signal)
{
    QSignalSpy spy(&window, signal);
    if (!spy.wait(kTimeoutMs))
        fail(step,
             QStringLiteral("nothing was shown within %1 s (last error: %2)")
                 .arg(kTimeoutMs / 1000)
                 .arg(window.lastError()));
}

class Camera
{
public:
    Camera(QString dir, QString size)
        : m_dir(std::move(dir))
        , m_size(std::move(size))
    {
    }
    /** The window as the screen shows it (with any message box over it) on X11; its own rendering elsewhere. */
    void shoot(MainWindow& window, const QString& name)
    {
        settle();
        QPixmap pixmap;
        if (QGuiApplication::platformName() == QLatin1String("xcb"))
            pixmap = window.screen()->grabWindow(0, window.x(), window.y(), window.width(), window.height());
        else
            pixmap = window.grab();
        const QString path = QDir(m_dir).filePath(QStringLiteral("%1-%2.png").arg(m_size, name));
        if (pixmap.isNull() || !pixmap.save(path))
            fail(name, QStringLiteral("cannot write %1").arg(path));
        std::printf("  %s\n", qPrintable(path));
    }

private:
    QString m_dir;
    QString m_size;
};

} // namespace

int main(int argc, char** argv)
{
    QApplication app(argc, argv);
    QStandardPaths::setTestModeEnabled(true); // the user's own settings and recent files stay untouched
    QCoreApplication::setOrganizationName(QStringLiteral("ShardscapeWalkthrough"));
    QCoreApplication::setApplicationName(QStringLiteral("walkthrough"));
    QSettings().clear();
    QString size = QStringLiteral("1280x720");
    QString out = QStringLiteral("walkthrough");
    const QStringList args = app.arguments();
    for (qsizetype i = 1; i + 1 < args.size(); ++i) {
        if (args[i] == QLatin1String("--size"))
            size = args[i + 1];
        else if (args[i] == QLatin1String("--out"))
            out = args[i + 1];
    }
    const QStringList wh = size.split(QLatin1Char('x'));
    if (wh.size() != 2 || wh[0].toInt() < 640 || wh[1].toInt() < 480)
        fail(QStringLiteral("arguments"), QStringLiteral("--size must be WxH, at least 640x480 (got %1)").arg(size));
    if (!QDir().mkpath(out))
        fail(QStringLiteral("arguments"), QStringLiteral("cannot create %1").arg(out));
    const QString source = QStringLiteral(SHARDSCAPE_SOURCE_DIR);
    Camera camera(out, size);
    std::printf("walkthrough at %s on the %s platform\n", qPrintable(size),
                qPrintable(QGuiApplication::platformName()));

    // 1. Launch: the embedded default model plans at once.
    QString step = QStringLiteral("1 launch");
    MainWindowOptions options;
    options.use_settings = false;
    MainWindow window(options);
    QSignalSpy firstSelection(&window, &MainWindow::selectionShown);
    window.move(0, 0);
    window.resize(wh[0].toInt(), wh[1].toInt());
    window.show();
    if (!firstSelection.wait(kTimeoutMs))
        fail(step, QStringLiteral("the default plan was not shown: %1").arg(window.lastError()));
    if (!window.currentResult() || window.currentResult()->top.empty())
        fail(step, QStringLiteral("the default plan has no feasible candidate"));
    camera.shoot(window, QStringLiteral("1-launch"));

    // 2. Load a Hugging Face config.json, plan it; then a PyTorch ONNX export.
    step = QStringLiteral("2 load HF config");
    window.openModelFile(source + QStringLiteral("/resources/models/llama3-8b.json"));
    LayersModel* layers = window.modelPanel()->layersModel();
    waitUntil(step, QStringLiteral("loading the config"), [&] {
        return layers->overview()
            && QString::fromStdString(layers->overview()->spec).endsWith(QStringLiteral("llama3-8b.json"));
    });
    raiseDock(window, "inputsDock");
    click(step, &window, QStringLiteral("Plan"));
    waitFor(step, window, &MainWindow::selectionShown);
    if (!window.windowTitle().contains(QStringLiteral("llama")))
        fail(step, QStringLiteral("the title names another model: %1").arg(window.windowTitle()));
    camera.shoot(window, QStringLiteral("2a-load-hf-config"));

    step = QStringLiteral("2 load ONNX");
    const QString onnx = source + QStringLiteral("/tests/data/onnx/llama_5block.onnx");
    window.openModelFile(onnx);
    waitUntil(step, QStringLiteral("loading the ONNX file"),
              [&] { return layers->overview() && QString::fromStdString(layers->overview()->spec) == onnx; });
    click(step, &window, QStringLiteral("Plan"));
    waitFor(step, window, &MainWindow::selectionShown);
    camera.shoot(window, QStringLiteral("2b-load-onnx"));

    // 3. A preset, the cluster, the memory limit, the stage count and a pipeline pivot, typed into the fields.
    step = QStringLiteral("3 inputs");
    window.modelPanel()->setModelSpec(QStringLiteral("llama2-70b"));
    waitUntil(step, QStringLiteral("loading llama2-70b"),
              [&] { return layers->overview() && layers->overview()->spec == "llama2-70b"; });
    QWidget* inputs = raiseDock(window, "inputsDock");
    typeInto(step, inputs, QStringLiteral("Nodes"), QStringLiteral("16"));
    typeInto(step, inputs, QStringLiteral("Memory limit"), QStringLiteral("72"));
    typeInto(step, inputs, QStringLiteral("Pipeline stages"), QStringLiteral("4"));
    // The plan is for Megatron-LM: its memory terms, and only layouts it runs (exported in step 7).
    auto* framework = qobject_cast<QComboBox*>(fieldLabelled(inputs, QStringLiteral("Framework")));
    if (!framework || framework->findText(QStringLiteral("megatron-core")) < 0)
        fail(step, QStringLiteral("no Framework field offering megatron-core"));
    framework->setCurrentIndex(framework->findText(QStringLiteral("megatron-core")));
    // Tick three pivots (where stages may start), one every 20 blocks: four stages of 20 blocks each.
    for (const int row : {21, 41, 61})
        if (!layers->setData(layers->index(row, LayersModel::PivotColumn), Qt::Checked, Qt::CheckStateRole))
            fail(step, QStringLiteral("the layer tree did not take the pivot on row %1").arg(row));
    const PlanRequest request = window.currentRequest();
    if (request.nodes != 16 || request.config.memory_constraint != 72 || request.config.pipeline_nstages != 4
        || request.config.pipeline_pivots.size() != 3 || request.config.framework != Framework::MegatronCore)
        fail(step,
             QStringLiteral("the typed inputs did not reach the request (nodes %1, memory %2, stages %3, "
                            "pivots %4)")
                 .arg(request.nodes)
                 .arg(request.config.memory_constraint)
                 .arg(request.config.pipeline_nstages)
                 .arg(request.config.pipeline_pivots.size()));
    camera.shoot(window, QStringLiteral("3-inputs"));

    // 4. Plan (Ctrl+R), with the progress in the status bar.
    step = QStringLiteral("4 plan");
    focusWindow(step, window);
    QTest::keyClick(&window, Qt::Key_R, Qt::ControlModifier);
    waitFor(step, window, &MainWindow::selectionShown);
    const auto& result = window.currentResult();
    if (result->top.empty())
        fail(step, QStringLiteral("nothing fits: %1").arg(window.lastError()));
    for (const Evaluation& e : result->top)
        if (e.config.pp != 4 || e.peakMemory() > 72e9)
            fail(step,
                 QStringLiteral("a candidate breaks the inputs: %1, peak %2 GB")
                     .arg(QString::fromStdString(e.config.describe()))
                     .arg(e.peakMemory() / 1e9));
    camera.shoot(window, QStringLiteral("4-plan"));

    // 5. Read the views: click the third candidate; on a narrow screen, page through the chart tabs.
    step = QStringLiteral("5 views");
    QTableView* table = window.candidatesPanel()->view();
    const int row = std::min(2, table->model()->rowCount() - 1);
    const QModelIndex cell = table->model()->index(row, CandidatesModel::StepTimeColumn);
    QSignalSpy shown(&window, &MainWindow::selectionShown);
    QTest::mouseClick(table->viewport(), Qt::LeftButton, {}, table->visualRect(cell).center());
    if (!shown.wait(kTimeoutMs))
        fail(step, QStringLiteral("the clicked candidate was not shown"));
    for (QTabWidget* tabs : window.findChildren<QTabWidget*>())
        if (tabs->isVisible() && tabs->count() >= 4 && tabs->tabText(0).contains(QStringLiteral("Memory")))
            tabs->setCurrentIndex(1); // Step Time vs Memory
    camera.shoot(window, QStringLiteral("5-views"));

    // 6. What-if: double the micro-batches of the selection, then pin it and the plan's best for comparison.
    step = QStringLiteral("6 what-if and compare");
    QWidget* whatIfDock = raiseDock(window, "whatIfDock");
    QSignalSpy whatIf(&window, &MainWindow::whatIfShown);
    typeInto(step, whatIfDock, QStringLiteral("m"),
             QString::number(window.shownEvaluation()->config.num_microbatches * 2));
    if (!whatIf.wait(kTimeoutMs))
        fail(step, QStringLiteral("the what-if was not simulated"));
    camera.shoot(window, QStringLiteral("6a-what-if"));
    click(step, whatIfDock, QStringLiteral("Pin What-if"));
    window.candidatesPanel()->pinRequested(0);
    raiseDock(window, "compareDock");
    if (window.compareWidget()->pinnedCount() != 2)
        fail(step, QStringLiteral("%1 columns pinned, not 2").arg(window.compareWidget()->pinnedCount()));
    camera.shoot(window, QStringLiteral("6b-compare"));

    // 7. Export the selection for Megatron-LM and as a plan file; both land on disk whole.
    step = QStringLiteral("7 export");
    const QString script = QDir(out).filePath(size + QStringLiteral("-megatron.sh"));
    const QString planFile = QDir(out).filePath(size + QStringLiteral("-plan.json"));
    window.candidatesPanel()->selectCandidate(0);
    waitFor(step, window, &MainWindow::selectionShown);
    if (!window.exportForTarget(ExportTarget::Megatron, script) || !window.exportPlan(planFile))
        fail(step, window.lastError());
    QFile written(script);
    if (!written.open(QIODevice::ReadOnly) || !written.readAll().contains("--pipeline-model-parallel-size 4"))
        fail(step, QStringLiteral("%1 does not ask Megatron for 4 pipeline stages").arg(script));
    camera.shoot(window, QStringLiteral("7-export"));

    // 8. Bad input: a model file that is not one. A message box names the cause; the last model stays.
    step = QStringLiteral("8 bad input");
    const QString bad = QDir(out).filePath(QStringLiteral("not-a-model.json"));
    QFile badFile(bad);
    if (!badFile.open(QIODevice::WriteOnly) || badFile.write("{\"hidden_size\": [[[") < 0)
        fail(step, QStringLiteral("cannot write %1").arg(bad));
    badFile.close();
    QSignalSpy errors(&window, &MainWindow::errorShown);
    window.openModelFile(bad);
    if (!errors.wait(kTimeoutMs) && errors.isEmpty())
        fail(step, QStringLiteral("no error was reported for %1").arg(bad));
    if (window.recentFiles().contains(bad))
        fail(step, QStringLiteral("the bad file was added to Open Recent"));
    camera.shoot(window, QStringLiteral("8a-bad-input"));
    for (QWidget* w : QApplication::topLevelWidgets())
        if (auto* box = qobject_cast<QMessageBox*>(w))
            box->close();

    // ... then the keyboard (Ctrl+F filters the table) and a resize to the other screen size and back.
    step = QStringLiteral("8 keyboard and resize");
    focusWindow(step, window); // back from the message box
    QTest::keyClick(&window, Qt::Key_F, Qt::ControlModifier);
    auto* filter = qobject_cast<QLineEdit*>(QApplication::focusWidget());
    if (!filter)
        fail(step, QStringLiteral("Ctrl+F did not focus the filter"));
    QTest::keyClicks(filter, QStringLiteral("interleaved"));
    settle();
    for (int r = 0; r < table->model()->rowCount(); ++r)
        if (!table->model()
                 ->index(r, CandidatesModel::ScheduleColumn)
                 .data()
                 .toString()
                 .contains(QStringLiteral("interleaved")))
            fail(step, QStringLiteral("the filter kept row %1").arg(r));
    const QSize original = window.size();
    window.resize(original.width() >= 1920 ? QSize(1280, 720) : QSize(1920, 1080));
    settle();
    window.resize(original);
    camera.shoot(window, QStringLiteral("8b-keyboard-and-resize"));
    std::printf("walkthrough at %s: all steps passed\n", qPrintable(size));
    return 0;
}
