// SPDX-License-Identifier: MIT
#include "jobs/evaluate_job.h"

namespace shardscape::ui {

EvaluateJob::EvaluateJob(QObject* parent)
    : QObject(parent)
    , m_tracker(this)
{
    qRegisterMetaType<SelectionEvaluation>();
}

EvaluateJob::~EvaluateJob() = default;

quint64 EvaluateJob::start(const EvaluationRequest& request)
{
    return m_tracker.start([request](std::stop_token stop) { return evaluateSelection(request, stop); },
                           [this](JobOutcome<SelectionEvaluation> outcome) {
                               if (outcome.cancelled)
                                   return;
                               if (!outcome.error.isEmpty())
                                   emit failed(outcome.error);
                               else
                                   emit evaluationAvailable(*outcome.value);
                           });
}

void EvaluateJob::discard()
{
    m_tracker.discard();
}

bool EvaluateJob::isRunning() const
{
    return m_tracker.isRunning();
}

} // namespace shardscape::ui
