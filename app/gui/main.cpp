// SPDX-License-Identifier: MIT
// shardscape: the desktop app. Parses the command line, then hands over to MainWindow.
#include "jobs/plan_job.h"
#include "jobs/serving_job.h"
#include "widgets/main_window.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QIcon>
#include <QPixmap>
#include <QRegularExpression>
#include <QTimer>
#include <cstring>

#include <cstdio>
#include <cstdlib>

namespace {

constexpr int kExitOk = 0;
constexpr int kExitInternal = 1;
constexpr int kExitBadInput = 2;

/** How long --screenshot and --export-plan wait for the plan and its selected row before giving up. */
constexpr int kBatchTimeoutMs = 120'000;

bool haveDisplay()
{
    for (const char* name : {"DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"}) {
        const char* value = std::getenv(name);
        if (value && *value)
            return true;
    }
    return false;
}

} // namespace

int main(int argc, char* argv[])
{
    // --version needs no window: answer it before Qt looks for a display (as QCommandLineParser words it).
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--version") || !std::strcmp(argv[i], "-v")) {
            std::printf("shardscape %s\n", SHARDSCAPE_VERSION);
            return 0;
        }
    }
    // Without a display Qt would abort with a cryptic platform-plugin error; say what to do instead.
    if (!haveDisplay()) {
        std::fprintf(stderr,
                     "shardscape: no display (DISPLAY, WAYLAND_DISPLAY and QT_QPA_PLATFORM are unset).\n"
                     "Run it in a desktop session, under xvfb-run, or with QT_QPA_PLATFORM=offscreen "
                     "together with --screenshot or --export-plan; or use the headless CLI:\n"
                     "  shardscape-cli plan --model llama2-7b --cluster h100-sxm\n");
        return kExitBadInput;
    }

    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("Shardscape"));
    QApplication::setApplicationName(QStringLiteral("shardscape"));
    QApplication::setApplicationDisplayName(QStringLiteral("Shardscape"));
    QApplication::setApplicationVersion(QStringLiteral(SHARDSCAPE_VERSION));
    // Matches the installed .desktop file, so Wayland compositors show its name and icon for the window.
    QGuiApplication::setDesktopFileName(QStringLiteral("io.github.shardscape.Shardscape"));
    QApplication::setWindowIcon(QIcon(QStringLiteral(":/icons/shardscape.png")));

    QCommandLineParser parser;
    parser.setApplicationDescription(
        QStringLiteral("Plan, simulate and visualize the parallel training of large models on GPU clusters."));
    parser.addHelpOption();
    parser.addVersionOption();
    const QCommandLineOption screenshot(QStringLiteral("screenshot"),
                                        QStringLiteral("Render the main window to FILE (PNG) once the plan and its "
                                                       "selected candidate are shown, then exit."),
                                        QStringLiteral("FILE"));
    const QCommandLineOption exportPlan(QStringLiteral("export-plan"),
                                        QStringLiteral("Write the selected candidate's plan file (shardscape.plan/1, "
                                                       "as File > Export Plan) to FILE once it is shown, then exit."),
                                        QStringLiteral("FILE"));
    const QCommandLineOption size(QStringLiteral("size"), QStringLiteral("Window size, e.g. 1920x1080."),
                                  QStringLiteral("WxH"));
    const QCommandLineOption model(QStringLiteral("model"),
                                   QStringLiteral("Model: a preset name, an HF config.json, a native graph .json or an "
                                                  ".onnx file (default: llama2-7b, or the last session's)."),
                                   QStringLiteral("M"));
    const QCommandLineOption cluster(QStringLiteral("cluster"),
                                     QStringLiteral("Device preset or cluster .json (default: h100-sxm)."),
                                     QStringLiteral("C"));
    const QCommandLineOption nodes(QStringLiteral("nodes"), QStringLiteral("Number of nodes."), QStringLiteral("N"));
    const QCommandLineOption gpus(QStringLiteral("gpus-per-node"), QStringLiteral("GPUs per node."),
                                  QStringLiteral("G"));
    const QCommandLineOption profileDir(QStringLiteral("profile-dir"),
                                        QStringLiteral("Measured-profile directory (holding profile.json) for the "
                                                       "planner; the Profile panel is brought to the front."),
                                        QStringLiteral("DIR"));
    const QCommandLineOption mode(QStringLiteral("mode"),
                                  QStringLiteral("training (plan a training job) or inference (size a serving "
                                                 "deployment)."),
                                  QStringLiteral("MODE"));
    parser.addOptions({screenshot, exportPlan, size, model, cluster, nodes, gpus, profileDir, mode});
    parser.process(app);

    shardscape::ui::MainWindowOptions options;
    const QString screenshotPath = parser.value(screenshot);
    const QString exportPath = parser.value(exportPlan);
    const bool batch = !screenshotPath.isEmpty() || !exportPath.isEmpty();
    // A batch run plans the embedded default (or the given inputs) whatever the last session left: reproducible.
    options.use_settings = !batch;
    options.model = parser.value(model);
    options.cluster = parser.value(cluster);
    options.profile_dir = parser.value(profileDir);
    if (parser.isSet(mode)) {
        const QString value = parser.value(mode);
        if (value != QLatin1String("training") && value != QLatin1String("inference")) {
            std::fprintf(stderr, "shardscape: --mode wants training or inference, not '%s'\n", qPrintable(value));
            return kExitBadInput;
        }
        options.inference = value == QLatin1String("inference");
    }
    bool ok = true;
    if (parser.isSet(nodes) && ((options.nodes = parser.value(nodes).toInt(&ok)) < 1 || !ok)) {
        std::fprintf(stderr, "shardscape: --nodes wants a positive whole number, not '%s'\n",
                     qPrintable(parser.value(nodes)));
        return kExitBadInput;
    }
    if (parser.isSet(gpus) && ((options.gpus_per_node = parser.value(gpus).toInt(&ok)) < 1 || !ok)) {
        std::fprintf(stderr, "shardscape: --gpus-per-node wants a positive whole number, not '%s'\n",
                     qPrintable(parser.value(gpus)));
        return kExitBadInput;
    }
    QSize windowSize;
    if (parser.isSet(size)) {
        static const QRegularExpression pattern(QStringLiteral("^(\\d+)x(\\d+)$"));
        const auto match = pattern.match(parser.value(size));
        if (!match.hasMatch() || match.captured(1).toInt() < 320 || match.captured(2).toInt() < 240) {
            std::fprintf(stderr,
                         "shardscape: --size wants WIDTHxHEIGHT of at least 320x240, e.g. 1920x1080, not "
                         "'%s'\n",
                         qPrintable(parser.value(size)));
            return kExitBadInput;
        }
        windowSize = QSize(match.captured(1).toInt(), match.captured(2).toInt());
    }

    shardscape::ui::MainWindow window(options);
    if (windowSize.isValid())
        window.resize(windowSize);
    window.show();
    if (!batch)
        return app.exec();

    // --export-plan and --screenshot: wait for the plan and its selected row, export, let the views paint, grab,
    // quit.
    int status = kExitOk;
    // A training plan is shown once its selected row is; an inference plan as soon as it is in the table.
    const auto shown
        = options.inference ? &shardscape::ui::MainWindow::planShown : &shardscape::ui::MainWindow::selectionShown;
    QObject::connect(&window, shown, &app, [&] {
        if (!exportPath.isEmpty() && !window.exportPlan(exportPath)) {
            std::fprintf(stderr, "shardscape: %s\n", qPrintable(window.lastError()));
            status = kExitBadInput;
        }
        if (screenshotPath.isEmpty()) {
            app.quit();
            return;
        }
        QTimer::singleShot(300, &app, [&] {
            if (!window.grab().save(screenshotPath, "PNG")) {
                std::fprintf(stderr, "shardscape: cannot write %s (choose a folder you can write to)\n",
                             qPrintable(screenshotPath));
                status = kExitBadInput;
            }
            app.quit();
        });
    });
    const auto planningFailed = [&](const QString& message) {
        std::fprintf(stderr, "shardscape: planning failed: %s\n", qPrintable(message));
        status = kExitBadInput;
        app.quit();
    };
    QObject::connect(window.planJob(), &shardscape::ui::PlanJob::failed, &app, planningFailed);
    QObject::connect(window.servingJob(), &shardscape::ui::ServingJob::failed, &app, planningFailed);
    QTimer::singleShot(kBatchTimeoutMs, &app, [&] {
        std::fprintf(stderr, "shardscape: the plan was not shown within %d s\n", kBatchTimeoutMs / 1000);
        status = kExitInternal;
        app.quit();
    });
    app.exec();
    return status;
}
