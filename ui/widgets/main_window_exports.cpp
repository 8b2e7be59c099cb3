// SPDX-License-Identifier: MIT
// File > Export: the plan file, the result JSON, the Chrome trace and the frameworks' configs, each written whole.
#include "widgets/main_window.h"

#include "models/candidates_model.h"
#include "widgets/candidates_panel.h"
#include "widgets/exports.h"

#include "shardscape/support/error.h"

#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QPlainTextEdit>
#include <QStatusBar>

namespace shardscape::ui {

void MainWindow::exportWithDialog(const QString& title, const QString& filter, const QString& suggestion,
                                  const std::function<bool(const QString&)>& write)
{
    const QString start = (m_lastDir.isEmpty() ? QDir::currentPath() : m_lastDir) + QLatin1Char('/') + suggestion;
    QString selectedFilter;
    QString path = QFileDialog::getSaveFileName(this, title, start, filter, &selectedFilter);
    if (path.isEmpty())
        return;
    if (QFileInfo(path).suffix().isEmpty())
        path += selectedFilter.contains(QLatin1String("*.svg")) ? QStringLiteral(".svg")
            : selectedFilter.contains(QLatin1String("*.png"))   ? QStringLiteral(".png")
                                                                : QStringLiteral(".json");
    m_lastDir = QFileInfo(path).absolutePath();
    if (write(path))
        statusBar()->showMessage(tr("Wrote %1").arg(QDir::toNativeSeparators(path)), 5000);
}

bool MainWindow::exportPlan(const QString& path)
{
    try {
        if (isServingShown()) {
            saveFileAtomically(path, servingPlanFileText(selectedDeployment(), *m_serving, m_servingRequest));
            return true;
        }
        const Evaluation* e = m_candidates->model()->evaluation(m_candidates->currentCandidate());
        if (!m_result || !e)
            throw InputError("there is no selected plan to export", "plan (Ctrl+R) and select a candidate");
        saveFileAtomically(path, planFileText(*e, *m_result->model, m_resultRequest));
        return true;
    } catch (const InputError& error) {
        reportError(tr("Export Failed"), QString::fromStdString(error.message()));
    }
    return false;
}

bool MainWindow::exportResult(const QString& path)
{
    try {
        if (isServingShown()) {
            if (!m_serving)
                throw InputError("there is no plan to export", "plan first (Ctrl+R)");
            saveFileAtomically(path, servingResultFileText(*m_serving));
            return true;
        }
        if (!m_result)
            throw InputError("there is no plan to export", "plan first (Ctrl+R)");
        saveFileAtomically(path, resultFileText(*m_result));
        return true;
    } catch (const InputError& error) {
        reportError(tr("Export Failed"), QString::fromStdString(error.message()));
    }
    return false;
}

bool MainWindow::exportChromeTrace(const QString& path)
{
    try {
        if (!m_shown)
            throw InputError("there is no timeline to export", "plan (Ctrl+R) and select a candidate");
        saveFileAtomically(path, chromeTraceText(*m_shown));
        return true;
    } catch (const InputError& error) {
        reportError(tr("Export Failed"), QString::fromStdString(error.message()));
    }
    return false;
}

bool MainWindow::exportForTarget(ExportTarget target, const QString& path, const std::string& frameworkVersion)
{
    try {
        if (isServingShown())
            throw InputError("the plan shown is a serving deployment, which a training framework does not run",
                             "export it with File > Export > vLLM or SGLang, or plan in training mode");
        const int row = m_candidates->currentCandidate();
        const Evaluation* e = m_candidates->model()->evaluation(row);
        if (!m_result || !e)
            throw InputError("there is no selected plan to export", "plan (Ctrl+R) and select a candidate");
        // The selection's re-evaluated timeline saves the exporter a re-simulation.
        const SimulationResult* timeline = m_selected && m_selected->config.describe() == e->config.describe()
            ? m_selected->simulation.get()
            : nullptr;
        ExportOptions options;
        options.framework_version = frameworkVersion;
        const ExportResult exported = exportedText(target, *e, *m_result->model, m_resultRequest, timeline, options);
        saveExport(path, exported.text, exported.notes);
        return true;
    } catch (const InputError& error) {
        reportError(tr("Export Failed"), QString::fromStdString(error.message()));
    }
    return false;
}

void MainWindow::saveExport(const QString& path, const std::string& text, const std::vector<std::string>& notes)
{
    saveFileAtomically(path, QByteArray::fromStdString(text));
    // What the target cannot express is also written into the file as comments.
    for (const auto& note : notes)
        m_log->appendPlainText(tr("export note: %1").arg(QString::fromStdString(note)));
}

} // namespace shardscape::ui
