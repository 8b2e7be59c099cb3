// SPDX-License-Identifier: MIT
#include "widgets/exports.h"

#include "shardscape/plan/plan_file.h"
#include "shardscape/plan/result_json.h"
#include "shardscape/plan/serving_plan.h"
#include "shardscape/sim/chrome_trace.h"
#include "shardscape/support/error.h"

#include <QSaveFile>

#include <nlohmann/json.hpp>

namespace shardscape::ui {

namespace {

QByteArray pretty(const nlohmann::json& doc)
{
    return QByteArray::fromStdString(doc.dump(2) + "\n");
}

PlanFileContext contextFor(const Evaluation& chosen, const CostModel& model, const PlanRequest& request)
{
    PlanFileContext context;
    context.global_batch = chosen.config.globalBatch();
    context.seq_len = model.graph().seq_len;
    context.model_spec = request.model_spec;
    context.created_by = "shardscape (desktop app)";
    context.version = SHARDSCAPE_VERSION;
    return context;
}

} // namespace

void saveFileAtomically(const QString& path, const QByteArray& data)
{
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly))
        throw InputError(QStringLiteral("cannot write %1: %2").arg(path, file.errorString()).toStdString(),
                         "choose a folder you can write to");
    if (file.write(data) != data.size() || !file.commit())
        throw InputError(QStringLiteral("writing %1 failed: %2").arg(path, file.errorString()).toStdString(),
                         "check the free disk space and try again");
}

QByteArray planFileText(const Evaluation& chosen, const CostModel& model, const PlanRequest& request)
{
    return pretty(planToJson(chosen, model, contextFor(chosen, model, request)));
}

ExportResult exportedText(ExportTarget target, const Evaluation& chosen, const CostModel& model,
                          const PlanRequest& request, const SimulationResult* timeline, const ExportOptions& options)
{
    const LoadedPlan plan
        = planFromJson(planToJson(chosen, model, contextFor(chosen, model, request)), "the selected plan");
    return exportPlan(target, plan, model.graph(), model.cluster(), timeline, options);
}

QByteArray resultFileText(const PlanResult& result)
{
    if (!result.model)
        throw InputError("there is no plan to export", "plan first (Ctrl+R)");
    std::vector<Evaluation> all = result.top;
    all.insert(all.end(), result.infeasible.begin(), result.infeasible.end());
    return pretty(resultJson(all, *result.model, result.counts));
}

QByteArray servingPlanFileText(const ServingEstimate& chosen, const ServingPlanResult& result,
                               const PlanRequest& request)
{
    return pretty(servingPlanJson(chosen, result.cluster, request.model_spec, result.model_name));
}

QByteArray servingResultFileText(const ServingPlanResult& result)
{
    return pretty(servingResultJson(result));
}

ServingExport servingExportText(ServingExportTarget target, const ServingEstimate& chosen,
                                const ServingPlanResult& result, const PlanRequest& request)
{
    const LoadedServingPlan plan = servingPlanFromJson(
        servingPlanJson(chosen, result.cluster, request.model_spec, result.model_name), "the selected deployment");
    return exportServingPlan(target, plan, servingModelPath(request.model_spec));
}

QByteArray chromeTraceText(const Evaluation& evaluation)
{
    if (!evaluation.simulation || evaluation.simulation->events.empty())
        throw InputError("the selected configuration has no timeline",
                         "select a candidate that was simulated (a feasible one), then export again");
    // Compact: a long timeline has hundreds of thousands of events.
    return QByteArray::fromStdString(toChromeTrace(*evaluation.simulation, evaluation.config.describe()).dump());
}

} // namespace shardscape::ui
