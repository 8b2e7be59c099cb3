// SPDX-License-Identifier: MIT
#pragma once

#include "jobs/job_tracker.h"
#include "jobs/selection_evaluation.h"

#include <QObject>

Q_DECLARE_METATYPE(shardscape::ui::SelectionEvaluation)

namespace shardscape::ui {

/**
 * Re-evaluates one configuration with its timeline off the GUI thread: the selected candidate, or a what-if edit.
 * Latest request wins across both purposes (a what-if edit supersedes a pending selection and vice versa).
 */
class EvaluateJob : public QObject
{
    Q_OBJECT
public:
    explicit EvaluateJob(QObject* parent = nullptr);
    ~EvaluateJob() override;

    quint64 start(const EvaluationRequest& request);
    /** Drops the running evaluation (a new plan makes it meaningless). */
    void discard();
    bool isRunning() const;

signals:
    void evaluationAvailable(const shardscape::ui::SelectionEvaluation& result);
    void failed(const QString& message);

private:
    JobTracker m_tracker;
};

} // namespace shardscape::ui
