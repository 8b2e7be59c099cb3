// SPDX-License-Identifier: MIT
#include "widgets/planner_panel.h"

#include "jobs/plan_request.h"
#include "models/format.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QSettings>
#include <QSpinBox>
#include <QStandardItemModel>

#include <algorithm>

namespace shardscape::ui {

namespace {

/** Greys out (or restores) the entries of `box` for which `allowed(data)` is false; a greyed-out current entry falls
    back to the first entry ("search" / "auto"), so the options never pin what the framework cannot run. */
template<typename Allowed> void limitCombo(QComboBox* box, Allowed allowed)
{
    auto* model = qobject_cast<QStandardItemModel*>(box->model());
    if (!model)
        return;
    for (int i = 0; i < box->count(); ++i) {
        const bool enabled = i == 0 || allowed(box->itemData(i));
        if (QStandardItem* item = model->item(i))
            item->setEnabled(enabled);
        if (!enabled && box->currentIndex() == i)
            box->setCurrentIndex(0);
    }
}

QComboBox* combo(QWidget* parent, const QList<std::pair<QString, QVariant>>& items, const QString& tip)
{
    auto* box = new QComboBox(parent);
    for (const auto& [text, data] : items)
        box->addItem(text, data);
    box->setToolTip(tip);
    return box;
}

QString key(const char* name)
{
    return QStringLiteral("planner/") + QLatin1String(name);
}

/** By text: QSettings' INI files give numbers back as strings. */
void restoreCombo(QComboBox* box, const QVariant& value)
{
    for (int i = 0; i < box->count(); ++i)
        if (box->itemData(i).toString() == value.toString())
            box->setCurrentIndex(i);
}

} // namespace

PlannerPanel::PlannerPanel(QWidget* parent)
    : QWidget(parent)
    , m_globalBatch(new QSpinBox(this))
    , m_seqLen(new QSpinBox(this))
    , m_stages(new QSpinBox(this))
    , m_microBatch(new QSpinBox(this))
    , m_topk(new QSpinBox(this))
    , m_maxBubble(new QDoubleSpinBox(this))
    , m_minBalance(new QDoubleSpinBox(this))
{
    m_globalBatch->setRange(1, 1 << 30);
    m_globalBatch->setValue(256);
    m_globalBatch->setToolTip(tr("Sequences per training step"));
    m_seqLen->setRange(0, 100'000'000);
    m_seqLen->setSingleStep(1024);
    m_seqLen->setSpecialValueText(tr("model default"));
    m_seqLen->setToolTip(tr("Tokens per sequence; lowest = min(max positions, 4096)"));
    m_stages->setRange(0, 4096);
    m_stages->setSpecialValueText(tr("auto"));
    m_stages->setToolTip(tr("pipeline_nstages: pipeline stages; auto searches every divisor"));
    m_microBatch->setRange(0, 4096);
    m_microBatch->setSpecialValueText(tr("search"));
    m_microBatch->setToolTip(tr("micro_batch_size: sequences per micro-batch per data-parallel rank"));
    m_zero = combo(this,
                   {{tr("search"), -1},
                    {tr("0 (none)"), 0},
                    {tr("1 (optimizer states)"), 1},
                    {tr("2 (+ gradients)"), 2},
                    {tr("3 (+ parameters)"), 3}},
                   tr("zero_stage"));
    m_recompute = combo(this,
                        {{tr("search, or the ticked modules"), static_cast<int>(Recompute::SearchOrTicked)},
                         {tr("full (every block)"), static_cast<int>(Recompute::Full)}},
                        tr("recompute_modules: tick modules in the layer tree to recompute exactly those"));
    m_schedule = combo(this,
                       {{tr("auto"), QStringLiteral("auto")},
                        {tr("GPipe"), QStringLiteral("gpipe")},
                        {tr("1F1B"), QStringLiteral("1f1b")},
                        {tr("interleaved 1F1B"), QStringLiteral("interleaved")},
                        {tr("zero bubble (ZB-H1)"), QStringLiteral("zb-h1")},
                        {tr("zero bubble V (ZB-V)"), QStringLiteral("zb-v")},
                        {tr("DualPipeV"), QStringLiteral("dualpipev")},
                        {tr("DualPipe (bidirectional)"), QStringLiteral("dualpipe")}},
                       tr("pipeline_scheduler"));
    m_solver = combo(this,
                     {{tr("dp (dynamic programming)"), QStringLiteral("dp")}, {tr("ilp (CBC)"), QStringLiteral("ilp")}},
                     tr("solver: the intra-op sharding solver"));
    m_topk->setRange(1, 10000);
    m_topk->setValue(20);
    m_topk->setToolTip(tr("topk: how many feasible candidates to keep"));
    m_maxBubble->setRange(0, 1);
    m_maxBubble->setSingleStep(0.05);
    m_maxBubble->setValue(0.5);
    m_maxBubble->setToolTip(tr("max_pipeline_bubble_ratio: prune pipelines whose bubble (p-1)/(v m) exceeds it"));
    m_minBalance->setRange(0, 1);
    m_minBalance->setSingleStep(0.05);
    m_minBalance->setValue(0.5);
    m_minBalance->setToolTip(
        tr("max_pipeline_unbalance_ratio: prune when fastest / slowest stage time is below it (0 = never)"));
    m_method = combo(this,
                     {{tr("auto (everything)"), QStringLiteral("auto")},
                      {tr("data parallel"), QStringLiteral("data")},
                      {tr("ZeRO-2"), QStringLiteral("zero2")},
                      {tr("ZeRO-3 / FSDP"), QStringLiteral("zero3")},
                      {tr("shard (tp x dp, no pipeline)"), QStringLiteral("shard")},
                      {tr("pipeshard (pipeline x intra-op)"), QStringLiteral("pipeshard")}},
                     tr("method: restrict the search space (Alpa's methods)"));
    QList<std::pair<QString, QVariant>> frameworks;
    for (const auto framework : allFrameworks())
        frameworks.append({format::text(frameworkName(framework)), format::text(frameworkName(framework))});
    m_framework = combo(this, frameworks,
                        tr("framework: the training framework the plan is for. It sets the memory terms (what the "
                           "framework allocates: gradient buffers, master weights, loss buffers, CUDA/NCCL runtime, "
                           "allocator fragmentation) and bounds the search to what it runs (its ZeRO stages, pipeline "
                           "schedules, context/expert/tensor parallelism). generic: no framework, every option"));

    auto* form = new QFormLayout(this);
    form->setContentsMargins(0, 0, 0, 0);
    form->addRow(tr("Global &batch:"), m_globalBatch);
    form->addRow(tr("Se&quence length:"), m_seqLen);
    form->addRow(tr("Pipeline &stages:"), m_stages);
    form->addRow(tr("Micro-ba&tch:"), m_microBatch);
    form->addRow(tr("&ZeRO:"), m_zero);
    form->addRow(tr("&Recompute:"), m_recompute);
    form->addRow(tr("Sc&hedule:"), m_schedule);
    form->addRow(tr("So&lver:"), m_solver);
    form->addRow(tr("Top-&k:"), m_topk);
    form->addRow(tr("Max bubble ratio:"), m_maxBubble);
    form->addRow(tr("Min stage balance:"), m_minBalance);
    form->addRow(tr("Met&hod:"), m_method);
    form->addRow(tr("Frame&work:"), m_framework);

    connect(m_framework, &QComboBox::currentIndexChanged, this, [this] {
        const Framework framework
            = parseFramework(m_framework->currentData().toString().toStdString()).value_or(Framework::Generic);
        const FrameworkProfile& p = frameworkProfile(framework);
        const auto runsZero = [&p](int zero) {
            return std::find(p.zero_stages.begin(), p.zero_stages.end(), zero) != p.zero_stages.end();
        };
        limitCombo(m_zero, [&](const QVariant& item) { return runsZero(item.toInt()); });
        limitCombo(m_schedule, [&](const QVariant& item) {
            const auto kind = parseSchedule(item.toString().toStdString());
            return kind && std::find(p.schedules.begin(), p.schedules.end(), *kind) != p.schedules.end();
        });
        limitCombo(m_method, [&](const QVariant& item) {
            const auto method = parsePlanMethod(item.toString().toStdString()).value_or(PlanMethod::Auto);
            return method == PlanMethod::Data     ? runsZero(0)
                : method == PlanMethod::Zero2     ? runsZero(2)
                : method == PlanMethod::Zero3     ? runsZero(3)
                : method == PlanMethod::PipeShard ? !p.schedules.empty()
                                                  : true;
        });
        // Without pipeline schedules there is no pipeline: only "auto" (which then searches pp = 1) or 1 stage.
        m_stages->setMaximum(p.schedules.empty() ? 1 : 4096);
    });
    for (QSpinBox* spin : {m_globalBatch, m_stages, m_microBatch, m_topk})
        connect(spin, &QSpinBox::valueChanged, this, &PlannerPanel::changed);
    connect(m_seqLen, &QSpinBox::valueChanged, this, [this](int value) {
        emit seqLenChanged(value);
        emit changed();
    });
    for (QDoubleSpinBox* spin : {m_maxBubble, m_minBalance})
        connect(spin, &QDoubleSpinBox::valueChanged, this, &PlannerPanel::changed);
    for (QComboBox* box : {m_zero, m_recompute, m_schedule, m_solver, m_method, m_framework})
        connect(box, &QComboBox::currentIndexChanged, this, &PlannerPanel::changed);
}

void PlannerPanel::applyTo(PlanRequest& request) const
{
    request.global_batch = m_globalBatch->value();
    request.seq_len = m_seqLen->value();
    PlannerConfig& c = request.config;
    c.pipeline_nstages = m_stages->value();
    c.micro_batch_size = m_microBatch->value();
    c.zero_stage = m_zero->currentData().toInt();
    c.pipeline_scheduler = m_schedule->currentData().toString().toStdString();
    c.solver = m_solver->currentData().toString().toStdString();
    c.topk = m_topk->value();
    c.max_pipeline_bubble_ratio = m_maxBubble->value();
    c.max_pipeline_unbalance_ratio = m_minBalance->value();
    c.method = parsePlanMethod(m_method->currentData().toString().toStdString()).value_or(PlanMethod::Auto);
    c.framework = parseFramework(m_framework->currentData().toString().toStdString()).value_or(Framework::Generic);
    if (recompute() == Recompute::Full)
        c.recompute_modules = {"ROOT"};
}

PlannerPanel::Recompute PlannerPanel::recompute() const
{
    return static_cast<Recompute>(m_recompute->currentData().toInt());
}

void PlannerPanel::setGlobalBatch(int sequences)
{
    m_globalBatch->setValue(sequences);
}

void PlannerPanel::setSeqLen(int tokens)
{
    m_seqLen->setValue(tokens);
}

void PlannerPanel::setFramework(Framework framework)
{
    restoreCombo(m_framework, format::text(frameworkName(framework)));
}

int PlannerPanel::seqLen() const
{
    return m_seqLen->value();
}

void PlannerPanel::saveSettings(QSettings& settings) const
{
    settings.setValue(key("globalBatch"), m_globalBatch->value());
    settings.setValue(key("seqLen"), m_seqLen->value());
    settings.setValue(key("stages"), m_stages->value());
    settings.setValue(key("microBatch"), m_microBatch->value());
    settings.setValue(key("zero"), m_zero->currentData());
    settings.setValue(key("recompute"), m_recompute->currentData());
    settings.setValue(key("schedule"), m_schedule->currentData());
    settings.setValue(key("solver"), m_solver->currentData());
    settings.setValue(key("topk"), m_topk->value());
    settings.setValue(key("maxBubble"), m_maxBubble->value());
    settings.setValue(key("minBalance"), m_minBalance->value());
    settings.setValue(key("method"), m_method->currentData());
    settings.setValue(key("framework"), m_framework->currentData());
}

void PlannerPanel::restoreSettings(const QSettings& settings)
{
    const auto value = [&](const char* name, const QVariant& fallback) { return settings.value(key(name), fallback); };
    m_globalBatch->setValue(value("globalBatch", m_globalBatch->value()).toInt());
    m_seqLen->setValue(value("seqLen", m_seqLen->value()).toInt());
    m_stages->setValue(value("stages", m_stages->value()).toInt());
    m_microBatch->setValue(value("microBatch", m_microBatch->value()).toInt());
    restoreCombo(m_zero, value("zero", m_zero->currentData()));
    restoreCombo(m_recompute, value("recompute", m_recompute->currentData()));
    restoreCombo(m_schedule, value("schedule", m_schedule->currentData()));
    restoreCombo(m_solver, value("solver", m_solver->currentData()));
    m_topk->setValue(value("topk", m_topk->value()).toInt());
    m_maxBubble->setValue(value("maxBubble", m_maxBubble->value()).toDouble());
    m_minBalance->setValue(value("minBalance", m_minBalance->value()).toDouble());
    restoreCombo(m_method, value("method", m_method->currentData()));
    restoreCombo(m_framework, value("framework", m_framework->currentData()));
}

} // namespace shardscape::ui
