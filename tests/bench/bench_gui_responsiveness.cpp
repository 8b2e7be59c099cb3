// SPDX-License-Identifier: MIT
// The GUI thread's responsiveness while the app plans llama2-70b on 128 x 8 h100-sxm (1,024 GPUs) and while the user
// edits a what-if: a 1 ms QTimer records the longest gap between its ticks (the longest stall of the event loop),
// from pressing Plan until the table, the charts and the timeline of the best candidate are on screen. Then it times
// what-if re-simulations (edit -> result on screen). Targets: both under 50 ms. Runs on the offscreen platform.
//
//   bench_gui_responsiveness [--nodes N] [--model M] [--global-batch B] [--edits K]
#include "jobs/evaluate_job.h"
#include "jobs/plan_job.h"
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

constexpr double kTargetMs = 50;

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
            m_longest = std::max(m_longest, now - m_last);
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

} // namespace

int main(int argc, char** argv)
{
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
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
    QApplication::processEvents();

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
    std::printf("GUI thread longest stall while planning: %.1f ms (target < %.0f ms) %s\n", planStall, kTargetMs,
                planStall < kTargetMs ? "OK" : "OVER");

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
