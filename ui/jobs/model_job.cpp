// SPDX-License-Identifier: MIT
#include "jobs/model_job.h"

#include "shardscape/model/model_source.h"
#include "shardscape/search/planner.h"

namespace shardscape::ui {

ModelJob::ModelJob(QObject* parent)
    : QObject(parent)
    , m_tracker(this)
{
    qRegisterMetaType<std::shared_ptr<const ModelOverview>>();
}

ModelJob::~ModelJob() = default;

quint64 ModelJob::start(const std::string& spec, std::int64_t seqLen)
{
    return m_tracker.start(
        [spec, seqLen](std::stop_token) {
            BuildOptions build;
            build.seq_len = seqLen;
            auto graph = std::make_shared<const ModelGraph>(loadModel(spec, build));
            // The planner's own layers, so that pivots name exactly what it partitions.
            const std::vector<Layer> layers = planningLayers(*graph, PlannerConfig {});
            return std::make_shared<const ModelOverview>(buildModelOverview(spec, graph, layers));
        },
        [this, spec = QString::fromStdString(spec)](JobOutcome<std::shared_ptr<const ModelOverview>> outcome) {
            if (outcome.cancelled)
                return;
            if (!outcome.error.isEmpty())
                emit failed(spec, outcome.error);
            else
                emit modelAvailable(*outcome.value);
        });
}

bool ModelJob::isRunning() const
{
    return m_tracker.isRunning();
}

} // namespace shardscape::ui
