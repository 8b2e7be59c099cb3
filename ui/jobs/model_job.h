// SPDX-License-Identifier: MIT
#pragma once

#include "jobs/job_tracker.h"
#include "models/model_overview.h"

#include <QObject>

#include <cstdint>
#include <memory>
#include <string>

Q_DECLARE_METATYPE(std::shared_ptr<const shardscape::ui::ModelOverview>)

namespace shardscape::ui {

/** Loads a model (preset or file) and builds its layer overview off the GUI thread; latest request wins. */
class ModelJob : public QObject
{
    Q_OBJECT
public:
    explicit ModelJob(QObject* parent = nullptr);
    ~ModelJob() override;

    /** `seqLen` 0 = the model's default. */
    quint64 start(const std::string& spec, std::int64_t seqLen);
    bool isRunning() const;

signals:
    void modelAvailable(std::shared_ptr<const shardscape::ui::ModelOverview> overview);
    /** The file or preset could not be loaded: the cause and a way out. */
    void failed(const QString& spec, const QString& message);

private:
    JobTracker m_tracker;
};

} // namespace shardscape::ui
