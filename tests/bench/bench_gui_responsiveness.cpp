// SPDX-License-Identifier: MIT
// The GUI thread's responsiveness while the app plans llama2-70b on 128 x 8 h100-sxm (1,024 GPUs) and while the user
// edits a what-if: a 1 ms QTimer records the longest gap between its ticks (the longest stall of the event loop),
// from pressing Plan (once the model is loaded and the window has settled) until the table, the charts and the
// timeline of the best candidate are on screen. Then it times what-if re-simulations (edit -> result on screen).
// Targets: no stall over one 60 Hz frame (16 ms) while planning (issue 20 item 7); a what-if under 50 ms. Runs on
// the offscreen platform. --trace prints the events and paints that took long, to say what a stall was made of.
//
//   bench_gui_responsiveness [--nodes N] [--model M] [--global-batch B] [--edits K] [--trace]
#include "jobs/evaluate_job.h"
#include "jobs/plan_job.h"
#include "models/layers_model.h"
#include "widgets/cluster_panel.h"
#include "widgets/main_window.h"
#include "widgets/model_panel.h"
#include "widgets/planner_panel.h"
#include "widgets/what_if_panel.h"

#include <QApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QTimer>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using namespace shardscape;
using namespace shardscape::ui;

namespace {

constexpr double kTargetMs = 50; ///< a what-if edit until its result is on screen
constexpr double kFrameMs = 16; ///< no stall of the GUI thread longer than a frame at 60 Hz

/** Longest gap between the ticks of a 1 ms timer, in milliseconds, since reset(). */
class StallMeter
{
public:
    explicit StallMeter(QObject* parent)
        : m_timer(parent)
    {
        m_timer.setInterval(1);
        m_timer.setTimerType(Qt::PreciseTimer);
        QObject::connect(&m_timer, &QTimer::timeout, parent, [this] {
            const qint64 now = m_clock.nsecsElapsed();
            if (now - m_last > m_longest) {
                m_longest = now - m_last;
                m_longestEnd = now;
            }
            m_last = now;
        });
    }
    void reset()
    {
        m_clock.start();
        m_last = 0;
        m_longest = 0;
        m_timer.start();
    }
    /** When the longest stall ended, ms after reset(). */
    double longestEndMs() const { return static_cast<double>(m_longestEnd) / 1e6; }
    double stop()
    {
        m_timer.stop();
        // The gap still open when measuring ends counts too.
        m_longest = std::max(m_longest, m_clock.nsecsElapsed() - m_last);
        return static_cast<double>(m_longest) / 1e6;
    }

private:
    QTimer m_timer;
    QElapsedTimer m_clock;
    qint64 m_last = 0;
    qint64 m_longest = 0;
    qint64 m_longestEnd = 0;
};

/** Runs the event loop until `signal` of `sender` fires (or the timeout); true when it fired. */
template<typename Sender, typename Signal> bool waitFor(Sender* sender, Signal signal, int timeoutMs = 600'000)
{
    QEventLoop loop;
    bool fired = false;
    const auto connection = QObject::connect(sender, signal, &loop, [&] {
        fired = true;
        loop.quit();
    });
    QTimer::singleShot(timeoutMs, &loop, &QEventLoop::quit);
    loop.exec();
    QObject::disconnect(connection);
    return fired;
}

const char* argument(int argc, char** argv, const char* name, const char* fallback)
{
    for (int i = 1; i + 1 < argc; ++i)
        if (std::strcmp(argv[i], name) == 0)
            return argv[i + 1];
    return fallback;
}

/**
 * With --trace: times every event the GUI thread dispatches and prints those over 4 ms (with the receiver and its
 * parent) and the paints inside them over 1.5 ms, to say what a stall was made of.
 */
class TracingApplication : public QApplication
{
public:
    TracingApplication(int& argc, char** argv, bool trace)
        : QApplication(argc, argv)
        , m_trace(trace)
    {
        m_clock.start();
    }
    bool notify(QObject* receiver, QEvent* event) override
    {
        if (!m_trace)
            return QApplication::notify(receiver, event);
        const bool outer = m_depth++ == 0;
        // Named before delivery: the event may delete its receiver (DeferredDelete, a closed dialog).
        const char* name = receiver->metaObject()->className();
        const char* parent = receiver->parent() ? receiver->parent()->metaObject()->className() : "";
        const int type = static_cast<int>(event->type());
        QElapsedTimer t;
        t.start();
        const bool handled = QApplication::notify(receiver, event);
        --m_depth;
        const double ms = static_cast<double>(t.nsecsElapsed()) / 1e6;
        const double at = static_cast<double>(m_clock.nsecsElapsed()) / 1e6;
        if (outer && ms > 4)
            std::fprintf(stderr, "  [%.1f ms] event %d to %s (in %s): %.1f ms\n", at, type, name, parent, ms);
        else if (!outer && type == QEvent::Paint && ms > 1.5)
            std::fprintf(stderr, "    [%.1f ms] paint %s (in %s): %.1f ms\n", at, name, parent, ms);
        return handled;
    }

private:
    bool m_trace;
    int m_depth = 0;
    QElapsedTimer m_clock;
};

} // namespace

int main(int argc, char** argv)
{
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    bool trace = false;
    for (int i = 1; i < argc; ++i)
        trace = trace || std::strcmp(argv[i], "--trace") == 0;
    TracingApplication app(argc, argv, trace);
    const QString model = QString::fromLatin1(argument(argc, argv, "--model", "llama2-70b"));
    const int nodes = std::atoi(argument(argc, argv, "--nodes", "128"));
    const int globalBatch = std::atoi(argument(argc, argv, "--global-batch", "1024"));
    const int edits = std::atoi(argument(argc, argv, "--edits", "20"));

    MainWindowOptions options;
    options.use_settings = false;
    options.plan_on_start = false;
    options.model = model;
    options.cluster = QStringLiteral("h100-sxm");
    options.nodes = nodes;
    options.gpus_per_node = 8;
    MainWindow window(options);
    window.plannerPanel()->setGlobalBatch(globalBatch);
    window.resize(1920, 1080);
    window.show();
    // As a user would: the model's overview is on screen and the window has settled before Plan is pressed.
    QElapsedTimer loading;
    loading.start();
    while (!window.modelPanel()->layersModel()->overview() && loading.elapsed() < 60'000)
        QApplication::processEvents(QEventLoop::AllEvents, 10);
    while (loading.elapsed() < 500)
        QApplication::processEvents(QEventLoop::AllEvents, 10);

    // 1. Plan: from Plan until the best candidate's views are shown.
    StallMeter meter(&app);
    QElapsedTimer wall;
    meter.reset();
    wall.start();
    window.plan();
    if (!waitFor(&window, &MainWindow::selectionShown)) {
        std::fprintf(stderr, "the plan was not shown: %s\n", qPrintable(window.lastError()));
        return 1;
    }
    QApplication::processEvents();
    const double planStall = meter.stop();
    const double planWall = static_cast<double>(wall.elapsed());
    const auto& result = window.currentResult();
    std::printf("plan %s on %d x 8 h100-sxm (%d GPUs), global batch %d: %llu candidates, %.0f ms to the shown "
                "selection (search %.0f ms)\n",
                qPrintable(model), nodes, nodes * 8, globalBatch,
                static_cast<unsigned long long>(result->counts.candidates_total), planWall,
                1e3 * result->counts.elapsed_s);
    std::printf("GUI thread longest stall while planning: %.1f ms, %.0f ms after Plan (target < %.0f ms: one frame) "
                "%s\n",
                planStall, meter.longestEndMs(), kFrameMs, planStall < kFrameMs ? "OK" : "OVER");

    // 2. What-if: alternate the micro-batch count of the selected plan; each edit re-simulates with the timeline.
    const auto baseline = *window.shownEvaluation();
    std::vector<double> latency;
    std::vector<double> resimulate;
    double whatIfStall = 0;
    for (int i = 0; i < edits; ++i) {
        const int m = i % 2 == 0 ? baseline.config.num_microbatches * 2 : baseline.config.num_microbatches;
        QElapsedTimer edit;
        meter.reset();
        edit.start();
        window.whatIfPanel()->setValue(QStringLiteral("num_microbatches"), m);
        if (!waitFor(&window, &MainWindow::whatIfShown)) {
            std::fprintf(stderr, "the what-if was not shown\n");
            return 1;
        }
        // Until the pixels are there: the views repaint on the next pass of the event loop.
        QApplication::processEvents();
        latency.push_back(static_cast<double>(edit.nsecsElapsed()) / 1e6);
        whatIfStall = std::max(whatIfStall, meter.stop());
    }
    // The core's share: one re-simulation with the timeline, timed inside the job.
    EvaluationRequest request;
    request.model = result->model;
    request.config = baseline.config;
    request.workload.global_batch = baseline.config.globalBatch();
    request.workload.seq_len = result->model->graph().seq_len;
    request.workload.memory_limit_bytes = baseline.memory_limit_bytes;
    for (int i = 0; i < edits; ++i) {
        const SelectionEvaluation e = evaluateSelection(request);
        resimulate.push_back(1e3 * e.evaluate_s);
    }
    std::sort(latency.begin(), latency.end());
    std::sort(resimulate.begin(), resimulate.end());
    const auto median = [](const std::vector<double>& v) { return v[v.size() / 2]; };
    std::printf("what-if on %s: re-simulation (core, with timeline) median %.2f ms, max %.2f ms\n",
                baseline.config.describe().c_str(), median(resimulate), resimulate.back());
    std::printf("what-if edit -> result on screen: median %.1f ms, max %.1f ms over %d edits (target < %.0f ms) %s\n",
                median(latency), latency.back(), edits, kTargetMs, latency.back() < kTargetMs ? "OK" : "OVER");
    std::printf("GUI thread longest stall during what-if edits: %.1f ms\n", whatIfStall);
    return 0;
}
