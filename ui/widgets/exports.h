// SPDX-License-Identifier: MIT
#pragma once

#include "jobs/plan_request.h"

#include "shardscape/plan/exporters.h"
#include "shardscape/plan/serving_export.h"
#include "shardscape/search/serving_planner.h"

#include <QByteArray>
#include <QString>

namespace shardscape::ui {

/**
 * Writes `data` to `path` atomically with QSaveFile (a temporary file renamed over the target on commit), so a
 * failure leaves the old file untouched. Throws InputError with the cause and a way out.
 */
void saveFileAtomically(const QString& path, const QByteArray& data);

/** The plan file document (shardscape.plan/1, planToJson) of one evaluated candidate, pretty-printed. */
QByteArray planFileText(const Evaluation& chosen, const CostModel& model, const PlanRequest& request);

/** The result document (shardscape.result/1, resultJson): every candidate, feasible first, and the search counts. */
QByteArray resultFileText(const PlanResult& result);

/**
 * One of the core's exporters (torchtitan TOML, Megatron-LM script, DeepSpeed JSON, torchrun launcher, Chrome trace,
 * MoAI dump) for the selected candidate: the plan file is built as planFileText() would, read back and exported
 * for the plan's own cluster. `timeline` (may be null) saves re-simulating for the Chrome trace.
 */
ExportResult exportedText(ExportTarget target, const Evaluation& chosen, const CostModel& model,
                          const PlanRequest& request, const SimulationResult* timeline,
                          const ExportOptions& options = {});

/** The serving plan file (shardscape.serving-plan/1) of one deployment of an inference plan. */
QByteArray servingPlanFileText(const ServingEstimate& chosen, const ServingPlanResult& result,
                               const PlanRequest& request);

/** The inference plan's result document (every deployment, feasible first), as `plan --json` writes it. */
QByteArray servingResultFileText(const ServingPlanResult& result);

/** The engine's launch script (vLLM, SGLang) for one deployment, built from its plan file as `export` does. */
ServingExport servingExportText(ServingExportTarget target, const ServingEstimate& chosen,
                                const ServingPlanResult& result, const PlanRequest& request);

/** The timeline as Chrome Trace Event JSON (Perfetto, chrome://tracing). InputError when it has no events. */
QByteArray chromeTraceText(const Evaluation& evaluation);

} // namespace shardscape::ui
