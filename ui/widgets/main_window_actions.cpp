// SPDX-License-Identifier: MIT
// The main window's menus, tool bar and shortcuts.
#include "widgets/main_window.h"

#include "models/format.h"
#include "widgets/analysis_views.h"
#include "widgets/candidates_panel.h"
#include "widgets/recent_files.h"

#include <QAction>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QPushButton>
#include <QToolBar>
#include <QToolButton>

namespace shardscape::ui {

void MainWindow::createActions()
{
    QMenu* file = menuBar()->addMenu(tr("&File"));
    m_openAction = file->addAction(QIcon::fromTheme(QStringLiteral("document-open")), tr("&Open Model…"));
    m_openAction->setShortcut(QKeySequence::Open);
    m_openAction->setToolTip(tr("Open an HF config.json, a native graph .json or an .onnx file (Ctrl+O)"));
    connect(m_openAction, &QAction::triggered, this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Open Model"), m_lastDir,
                                                          tr("Models (*.json *.onnx);;All files (*)"));
        if (!path.isEmpty())
            openModelFile(path);
    });
    QMenu* recentMenu = file->addMenu(tr("Open &Recent"));
    m_recent = new RecentFiles(recentMenu, this);
    connect(m_recent, &RecentFiles::fileChosen, this, &MainWindow::openModelFile);
    file->addSeparator();

    QMenu* exportMenu = file->addMenu(tr("&Export"));
    m_exportPlanAction = exportMenu->addAction(tr("&Plan File (JSON)…"));
    m_exportPlanAction->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_E));
    connect(m_exportPlanAction, &QAction::triggered, this, [this] {
        exportWithDialog(tr("Export Plan"), tr("Plan files (*.json)"), QStringLiteral("plan.json"),
                         [this](const QString& path) { return exportPlan(path); });
    });
    m_exportResultAction = exportMenu->addAction(tr("&Result (JSON, every candidate)…"));
    m_exportResultAction->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_E));
    connect(m_exportResultAction, &QAction::triggered, this, [this] {
        exportWithDialog(tr("Export Result"), tr("JSON files (*.json)"), QStringLiteral("result.json"),
                         [this](const QString& path) { return exportResult(path); });
    });
    m_exportTraceAction = exportMenu->addAction(tr("&Chrome Trace (Perfetto)…"));
    connect(m_exportTraceAction, &QAction::triggered, this, [this] {
        exportWithDialog(tr("Export Chrome Trace"), tr("Trace files (*.json)"), QStringLiteral("trace.json"),
                         [this](const QString& path) { return exportChromeTrace(path); });
    });
    // The core's exporters for the selected plan; the plan file and the shown timeline are above.
    exportMenu->addSeparator();
    for (const ExportTarget target : exportTargets()) {
        if (target == ExportTarget::Json || target == ExportTarget::ChromeTrace)
            continue;
        const QString name = format::text(exportTargetName(target));
        // The names the exports' companions expect (the torchrun launcher runs the torchtitan config next to it).
        const QString fileName = QString::fromStdString(exportDefaultFileName(target));
        const QString suffix = QLatin1Char('.') + QFileInfo(fileName).suffix();
        QString title;
        switch (target) {
        case ExportTarget::Torchtitan:
            title = tr("&torchtitan Config (main, Python)…");
            break;
        case ExportTarget::Megatron:
            title = tr("&Megatron-LM Launch Script…");
            break;
        case ExportTarget::DeepSpeed:
            title = tr("&DeepSpeed Config (JSON)…");
            break;
        case ExportTarget::Torchrun:
            title = tr("torch&run Launcher…");
            break;
        case ExportTarget::Dump:
            title = tr("Selected-Config D&ump…");
            break;
        case ExportTarget::Json:
        case ExportTarget::ChromeTrace:
            break;
        }
        if (title.isEmpty())
            title = name + QStringLiteral("…");
        connect(exportMenu->addAction(title), &QAction::triggered, this, [this, target, name, suffix, fileName] {
            exportWithDialog(tr("Export for %1").arg(name), tr("%1 files (*%2)").arg(name, suffix), fileName,
                             [this, target](const QString& path) { return exportForTarget(target, path); });
        });
        if (target == ExportTarget::Torchtitan) // the v0.2.x releases read TOML job files
            connect(exportMenu->addAction(tr("torchtitan &v0.2 Job (TOML)…")), &QAction::triggered, this, [this] {
                exportWithDialog(
                    tr("Export for torchtitan v0.2"), tr("torchtitan job files (*.toml)"),
                    QString::fromStdString(exportDefaultFileName(ExportTarget::Torchtitan, "v0.2")),
                    [this](const QString& path) { return exportForTarget(ExportTarget::Torchtitan, path, "v0.2"); });
            });
    }
    exportMenu->addSeparator();
    for (const ServingExportTarget target : {ServingExportTarget::Vllm, ServingExportTarget::Sglang}) {
        const QString name = format::text(servingExportTargetName(target));
        const QString title
            = target == ServingExportTarget::Vllm ? tr("&vLLM Serve Command…") : tr("&SGLang Launch Command…");
        connect(exportMenu->addAction(title), &QAction::triggered, this, [this, target, name] {
            exportWithDialog(tr("Export for %1").arg(name), tr("Shell scripts (*.sh)"), name + QStringLiteral(".sh"),
                             [this, target](const QString& path) { return exportServing(target, path); });
        });
    }
    const auto views = m_views->imageViews();
    if (!views.empty()) {
        m_exportImageMenu = exportMenu->addMenu(tr("&Image"));
        for (const auto& view : views) {
            connect(m_exportImageMenu->addAction(view.name + QStringLiteral("…")), &QAction::triggered, this,
                    [this, view] {
                        exportWithDialog(tr("Export %1").arg(view.name), tr("PNG image (*.png);;SVG image (*.svg)"),
                                         view.fileStem + QStringLiteral(".png"), [this, view](const QString& path) {
                                             if (view.exportImage(path))
                                                 return true;
                                             reportError(
                                                 tr("Export Failed"),
                                                 tr("cannot write %1 (choose a folder you can write to)").arg(path));
                                             return false;
                                         });
                    });
        }
    }
    file->addSeparator();
    QAction* quit = file->addAction(tr("&Quit"), this, &QWidget::close);
    quit->setShortcut(QKeySequence::Quit);

    QMenu* planMenu = menuBar()->addMenu(tr("&Plan"));
    m_planAction = planMenu->addAction(QIcon::fromTheme(QStringLiteral("media-playback-start")), tr("&Plan"));
    m_planAction->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_R));
    m_planAction->setToolTip(tr("Search the best parallel plans (Ctrl+R)"));
    connect(m_planAction, &QAction::triggered, this, &MainWindow::plan);
    connect(m_planButton, &QPushButton::clicked, this, &MainWindow::plan);
    m_cancelAction = planMenu->addAction(QIcon::fromTheme(QStringLiteral("process-stop")), tr("&Cancel"));
    m_cancelAction->setShortcut(QKeySequence(Qt::Key_Escape));
    m_cancelAction->setToolTip(tr("Stop planning (Esc)"));
    connect(m_cancelAction, &QAction::triggered, this, &MainWindow::cancelPlan);
    connect(m_cancelButton, &QToolButton::clicked, this, &MainWindow::cancelPlan);
    planMenu->addSeparator();
    m_pinAction = planMenu->addAction(tr("P&in Selected Candidate"));
    m_pinAction->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_P));
    connect(m_pinAction, &QAction::triggered, this, [this] { pinCandidate(m_candidates->currentCandidate()); });
    QAction* filter = planMenu->addAction(tr("&Filter Candidates"));
    filter->setShortcut(QKeySequence::Find);
    connect(filter, &QAction::triggered, m_candidates, &CandidatesPanel::focusFilter);

    QMenu* view = menuBar()->addMenu(tr("&View"));
    for (auto* dock : findChildren<QDockWidget*>())
        view->addAction(dock->toggleViewAction());

    QMenu* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("&About Shardscape"), this, [this] {
        QMessageBox::about(this, tr("About Shardscape"),
                           tr("<b>Shardscape %1</b><p>Plans how to parallelize the training of a large model across "
                              "GPUs, predicts step time, MFU, bubbles and memory with an event simulator, and "
                              "exports the plan.</p><p>Shortcuts: Ctrl+R plan, Esc cancel, Ctrl+O open a model, "
                              "Ctrl+E export the plan, Ctrl+P pin for comparison, Ctrl+F filter.</p>")
                               .arg(QStringLiteral(SHARDSCAPE_VERSION)));
    });

    QToolBar* tools = addToolBar(tr("Main"));
    tools->setObjectName(QStringLiteral("mainToolBar"));
    tools->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    tools->addAction(m_openAction);
    tools->addAction(m_planAction);
    tools->addAction(m_cancelAction);
    tools->addSeparator();
    tools->addAction(m_pinAction);
    tools->addAction(m_exportPlanAction);
}

} // namespace shardscape::ui
