// SPDX-License-Identifier: MIT
// The window's inference mode: an inference plan (is_train false) in the centre, its explanation and its exports.
#include "widgets/main_window.h"

#include "jobs/serving_job.h"
#include "models/format.h"
#include "widgets/exports.h"
#include "widgets/serving_view.h"

#include "shardscape/support/error.h"
#include "shardscape/support/strings.h"

#include <QPlainTextEdit>
#include <QSplitter>
#include <QStackedWidget>
#include <QStatusBar>

namespace shardscape::ui {

bool MainWindow::isServingShown() const
{
    return m_centerStack->currentWidget() == m_servingView;
}

void MainWindow::showMode(bool inference)
{
    m_centerStack->setCurrentWidget(inference ? static_cast<QWidget*>(m_servingView)
                                              : static_cast<QWidget*>(m_centerSplitter));
    // The training exporters act on the training table; the engines' on the serving one.
    m_exportTraceAction->setEnabled(!inference);
    m_pinAction->setEnabled(!inference);
}

void MainWindow::onServingAvailable(std::shared_ptr<const ServingPlanResult> result)
{
    setPlanning(false);
    m_serving = std::move(result);
    m_servingRequest = m_servingJob->request();
    showMode(true);
    m_servingView->setResult(m_serving, m_servingRequest.config.max_tpot_ms);

    const std::string nothing = nothingServesMessage(*m_serving, m_servingRequest);
    QStringList why;
    if (!nothing.empty())
        why << QString::fromStdString(nothing) << QString();
    for (const auto& line : m_serving->explanation)
        why << QString::fromStdString(line);
    if (!m_serving->top.empty())
        why << QString() << tr("Costs: %1").arg(QString::fromStdString(m_serving->top.front().cost_source));
    why << QString()
        << tr("%1 deployments, %2 serve the request, in %3.")
               .arg(m_serving->counts.candidates_total)
               .arg(m_serving->counts.candidates_feasible)
               .arg(format::seconds(m_serving->counts.elapsed_s));
    m_explanation->setPlainText(why.join(QLatin1Char('\n')));
    const Cluster& cluster = m_serving->cluster;
    setWindowTitle(tr("%1 serving on %2 × %3 %4")
                       .arg(QString::fromStdString(m_serving->model_name))
                       .arg(cluster.nodes)
                       .arg(cluster.gpus_per_node)
                       .arg(QString::fromStdString(cluster.device.name)));
    statusBar()->showMessage(tr("Planned serving of %1 on %2 GPUs: %3 deployments serve the request")
                                 .arg(QString::fromStdString(m_serving->model_name))
                                 .arg(cluster.worldSize())
                                 .arg(m_serving->counts.candidates_feasible),
                             10000);
    emit planShown();
    if (!nothing.empty())
        reportError(tr("Nothing Serves the Request"), QString::fromStdString(nothing));
}

const ServingEstimate& MainWindow::selectedDeployment() const
{
    const ServingEstimate* e = m_servingView->deployment(m_servingView->selectedRow());
    if (!m_serving || !e)
        throw InputError("there is no selected deployment to export",
                         "plan in inference mode (Ctrl+R) and select a deployment");
    if (!m_servingView->isFeasibleRow(m_servingView->selectedRow()))
        throw InputError(
            cat("the selected deployment ", e->parallel.describe(), " does not serve the request: ", e->reason),
            "select one of the ranked deployments");
    return *e;
}

bool MainWindow::exportServing(ServingExportTarget target, const QString& path)
{
    try {
        if (!isServingShown())
            throw InputError("the plan shown is a training plan, which a serving engine does not run",
                             "choose Mode: inference in the planner, plan (Ctrl+R), then export");
        const ServingExport exported = servingExportText(target, selectedDeployment(), *m_serving, m_servingRequest);
        saveExport(path, exported.text, exported.notes);
        return true;
    } catch (const InputError& error) {
        reportError(tr("Export Failed"), QString::fromStdString(error.message()));
    }
    return false;
}

} // namespace shardscape::ui
