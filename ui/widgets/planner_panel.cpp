// SPDX-License-Identifier: MIT
#include "widgets/planner_panel.h"

#include "jobs/plan_request.h"
#include "models/format.h"

#include "shardscape/cost/serving.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QLineEdit>
#include <QRegularExpression>
#include <QRegularExpressionValidator>
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
    , m_mode(combo(this,
                   {{tr("training"), QStringLiteral("train")}, {tr("inference (serving)"), QStringLiteral("serve")}},
                   tr("is_train: training plans a training job; inference sizes a serving deployment (vLLM / SGLang) "
                      "for a request shape under latency bounds")))
    , m_globalBatch(new QSpinBox(this))
    , m_seqLen(new QSpinBox(this))
    , m_stages(new QSpinBox(this))
    , m_microBatch(new QSpinBox(this))
    , m_topk(new QSpinBox(this))
    , m_maxBubble(new QDoubleSpinBox(this))
    , m_minBalance(new QDoubleSpinBox(this))
    , m_inputLen(new QSpinBox(this))
    , m_outputLen(new QSpinBox(this))
    , m_concurrency(new QSpinBox(this))
    , m_maxTtft(new QDoubleSpinBox(this))
    , m_maxTpot(new QDoubleSpinBox(this))
    , m_memoryFraction(new QDoubleSpinBox(this))
{
    const auto lockEdit = [this](const char* key, const QString& what) {
        auto* edit = new QLineEdit(this);
        edit->setObjectName(QString::fromLatin1(key));
        edit->setPlaceholderText(tr("search"));
        // Only comma lists of whole numbers can be typed: the request never carries a lock the planner cannot read.
        edit->setValidator(new QRegularExpressionValidator(
            QRegularExpression(QStringLiteral("^\\s*([1-9][0-9]{0,6}\\s*(,\\s*[1-9][0-9]{0,6}\\s*)*,?)?$")), edit));
        edit->setToolTip(tr("%1: lock it to a value or a comma list (e.g. 4,8); empty searches every value. When "
                            "nothing fits, the log says which lock to release (planner key \"%2\")")
                             .arg(what, QString::fromLatin1(key)));
        connect(edit, &QLineEdit::textChanged, this, &PlannerPanel::changed);
        return edit;
    };
    m_lockTp = lockEdit("tp", tr("Tensor-parallel degree"));
    m_lockDp = lockEdit("dp", tr("Data-parallel degree"));
    m_lockCp = lockEdit("cp", tr("Context-parallel degree"));
    m_lockEp = lockEdit("ep", tr("Expert-parallel degree"));
    m_lockVpp = lockEdit("vpp", tr("Model chunks per pipeline rank (1 = not interleaved)"));
    m_globalBatch->setObjectName(QStringLiteral("global_batch"));
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

    createInferenceRows();

    m_form = new QFormLayout(this);
    m_form->setContentsMargins(0, 0, 0, 0);
    m_form->addRow(tr("M&ode:"), m_mode);
    const auto trainingRow = [this](const QString& label, QWidget* field) {
        m_form->addRow(label, field);
        m_trainingRows << field;
    };
    const auto inferenceRow = [this](const QString& label, QWidget* field) {
        m_form->addRow(label, field);
        m_inferenceRows << field;
    };
    trainingRow(tr("Global &batch:"), m_globalBatch);
    trainingRow(tr("Se&quence length:"), m_seqLen);
    inferenceRow(tr("&Input tokens:"), m_inputLen);
    inferenceRow(tr("O&utput tokens:"), m_outputLen);
    inferenceRow(tr("&Concurrency:"), m_concurrency);
    inferenceRow(tr("&Weights:"), m_weightDtype);
    inferenceRow(tr("KV &cache:"), m_kvDtype);
    inferenceRow(tr("Max TT&FT:"), m_maxTtft);
    inferenceRow(tr("Max T&POT:"), m_maxTpot);
    inferenceRow(tr("&Engine:"), m_engine);
    inferenceRow(tr("Memory &fraction:"), m_memoryFraction);
    trainingRow(tr("Pipeline &stages:"), m_stages);
    trainingRow(tr("TP lock:"), m_lockTp);
    trainingRow(tr("DP lock:"), m_lockDp);
    trainingRow(tr("CP lock:"), m_lockCp);
    trainingRow(tr("EP lock:"), m_lockEp);
    trainingRow(tr("VPP lock:"), m_lockVpp);
    trainingRow(tr("Micro-ba&tch:"), m_microBatch);
    trainingRow(tr("&ZeRO:"), m_zero);
    trainingRow(tr("&Recompute:"), m_recompute);
    trainingRow(tr("Sc&hedule:"), m_schedule);
    trainingRow(tr("So&lver:"), m_solver);
    m_form->addRow(tr("Top-&k:"), m_topk);
    trainingRow(tr("Max bubble ratio:"), m_maxBubble);
    trainingRow(tr("Min stage balance:"), m_minBalance);
    trainingRow(tr("Met&hod:"), m_method);
    trainingRow(tr("Frame&work:"), m_framework);
    showModeRows();
    connect(m_mode, &QComboBox::currentIndexChanged, this, [this] {
        showModeRows();
        emit modeChanged(isInference());
    });

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
    for (QSpinBox* spin : {m_inputLen, m_outputLen, m_concurrency})
        connect(spin, &QSpinBox::valueChanged, this, &PlannerPanel::changed);
    for (QDoubleSpinBox* spin : {m_maxBubble, m_minBalance, m_maxTtft, m_maxTpot, m_memoryFraction})
        connect(spin, &QDoubleSpinBox::valueChanged, this, &PlannerPanel::changed);
    for (QComboBox* box :
         {m_mode, m_zero, m_recompute, m_schedule, m_solver, m_method, m_framework, m_weightDtype, m_kvDtype, m_engine})
        connect(box, &QComboBox::currentIndexChanged, this, &PlannerPanel::changed);
}

void PlannerPanel::createInferenceRows()
{
    // Named after their planner keys, for tests and for style sheets.
    m_mode->setObjectName(QStringLiteral("is_train"));
    m_inputLen->setObjectName(QStringLiteral("input_len"));
    m_outputLen->setObjectName(QStringLiteral("output_len"));
    m_concurrency->setObjectName(QStringLiteral("concurrency"));
    m_maxTtft->setObjectName(QStringLiteral("max_ttft_ms"));
    m_maxTpot->setObjectName(QStringLiteral("max_tpot_ms"));
    m_memoryFraction->setObjectName(QStringLiteral("memory_fraction"));
    m_inputLen->setRange(1, 10'000'000);
    m_inputLen->setValue(1024);
    m_inputLen->setSingleStep(256);
    m_inputLen->setToolTip(tr("input_len: prompt tokens per request"));
    m_outputLen->setRange(1, 10'000'000);
    m_outputLen->setValue(256);
    m_outputLen->setSingleStep(128);
    m_outputLen->setToolTip(tr("output_len: generated tokens per request"));
    m_concurrency->setRange(0, 1'000'000);
    m_concurrency->setSpecialValueText(tr("max (what fits)"));
    m_concurrency->setToolTip(tr("concurrency: requests in flight over the whole deployment; lowest = \"max\", the "
                                 "most the KV cache holds that also meet the latency bounds"));
    QList<std::pair<QString, QVariant>> weights;
    for (const auto format :
         {WeightFormat::BF16, WeightFormat::FP8, WeightFormat::INT8, WeightFormat::INT4, WeightFormat::FP4})
        weights.append({format::text(weightFormatName(format)), format::text(weightFormatName(format))});
    m_weightDtype = combo(this, weights,
                          tr("weight_dtype: how the linear layers' weights are stored (fp8/int8 W8A8, int4 AWQ/GPTQ "
                             "weight-only, fp4 NVFP4)"));
    m_weightDtype->setObjectName(QStringLiteral("weight_dtype"));
    m_kvDtype = combo(
        this, {{QStringLiteral("bf16"), QStringLiteral("bf16")}, {QStringLiteral("fp8"), QStringLiteral("fp8")}},
        tr("kv_cache_dtype: the KV cache's element type (fp8 holds twice the tokens)"));
    for (QDoubleSpinBox* bound : {m_maxTtft, m_maxTpot}) {
        bound->setRange(0, 1e7);
        bound->setDecimals(1);
        bound->setSuffix(tr(" ms"));
        bound->setSpecialValueText(tr("none"));
    }
    m_maxTtft->setSingleStep(100);
    m_maxTtft->setToolTip(tr("max_ttft_ms: the slowest acceptable time to the first token"));
    m_maxTpot->setSingleStep(5);
    m_maxTpot->setToolTip(tr("max_tpot_ms: the slowest acceptable time per output token after the first"));
    QList<std::pair<QString, QVariant>> engines;
    for (const auto engine : {ServingFramework::Vllm, ServingFramework::Sglang})
        engines.append({format::text(servingFrameworkName(engine)), format::text(servingFrameworkName(engine))});
    m_kvDtype->setObjectName(QStringLiteral("kv_cache_dtype"));
    m_engine = combo(this, engines,
                     tr("serving_framework: the engine the deployment runs on; it sets the memory split and the "
                        "scheduler's defaults, and the export's flags"));
    m_engine->setObjectName(QStringLiteral("serving_framework"));
    m_memoryFraction->setRange(0, 0.99);
    m_memoryFraction->setSingleStep(0.05);
    m_memoryFraction->setDecimals(2);
    m_memoryFraction->setSpecialValueText(tr("engine default"));
    m_memoryFraction->setToolTip(tr("memory_fraction: vLLM's gpu_memory_utilization or SGLang's mem_fraction_static; "
                                    "lowest = the engine's default"));
}

void PlannerPanel::showModeRows()
{
    const bool inference = isInference();
    for (QWidget* field : m_trainingRows)
        m_form->setRowVisible(field, !inference);
    for (QWidget* field : m_inferenceRows)
        m_form->setRowVisible(field, inference);
}

bool PlannerPanel::isInference() const
{
    return m_mode->currentData().toString() == QLatin1String("serve");
}

void PlannerPanel::setInference(bool inference)
{
    m_mode->setCurrentIndex(inference ? 1 : 0);
}

void PlannerPanel::setMaxTpotMs(double ms)
{
    m_maxTpot->setValue(ms);
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
    const auto lockOf = [](const QLineEdit* edit) {
        std::vector<int> values;
        for (const QString& item : edit->text().split(QLatin1Char(','), Qt::SkipEmptyParts))
            if (const int v = item.trimmed().toInt();
                v > 0 && std::find(values.begin(), values.end(), v) == values.end())
                values.push_back(v);
        std::sort(values.begin(), values.end());
        return values;
    };
    c.locks.tp = lockOf(m_lockTp);
    c.locks.dp = lockOf(m_lockDp);
    c.locks.cp = lockOf(m_lockCp);
    c.locks.ep = lockOf(m_lockEp);
    c.locks.vpp = lockOf(m_lockVpp);
    c.is_train = !isInference();
    c.input_len = m_inputLen->value();
    c.output_len = m_outputLen->value();
    c.concurrency = m_concurrency->value();
    c.weight_dtype
        = parseWeightFormat(m_weightDtype->currentData().toString().toStdString()).value_or(WeightFormat::BF16);
    c.kv_cache_dtype = parseKvCacheDtype(m_kvDtype->currentData().toString().toStdString()).value_or(DType::BF16);
    c.max_ttft_ms = m_maxTtft->value();
    c.max_tpot_ms = m_maxTpot->value();
    c.serving_framework
        = parseServingFramework(m_engine->currentData().toString().toStdString()).value_or(ServingFramework::Vllm);
    c.memory_fraction = m_memoryFraction->value();
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
    settings.setValue(key("mode"), m_mode->currentData());
    settings.setValue(key("inputLen"), m_inputLen->value());
    settings.setValue(key("outputLen"), m_outputLen->value());
    settings.setValue(key("concurrency"), m_concurrency->value());
    settings.setValue(key("weightDtype"), m_weightDtype->currentData());
    settings.setValue(key("kvDtype"), m_kvDtype->currentData());
    settings.setValue(key("maxTtft"), m_maxTtft->value());
    settings.setValue(key("maxTpot"), m_maxTpot->value());
    settings.setValue(key("engine"), m_engine->currentData());
    settings.setValue(key("memoryFraction"), m_memoryFraction->value());
    for (const QLineEdit* edit : {m_lockTp, m_lockDp, m_lockCp, m_lockEp, m_lockVpp})
        settings.setValue(key(("lock_" + edit->objectName().toStdString()).c_str()), edit->text());
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
    restoreCombo(m_mode, value("mode", m_mode->currentData()));
    m_inputLen->setValue(value("inputLen", m_inputLen->value()).toInt());
    m_outputLen->setValue(value("outputLen", m_outputLen->value()).toInt());
    m_concurrency->setValue(value("concurrency", m_concurrency->value()).toInt());
    restoreCombo(m_weightDtype, value("weightDtype", m_weightDtype->currentData()));
    restoreCombo(m_kvDtype, value("kvDtype", m_kvDtype->currentData()));
    m_maxTtft->setValue(value("maxTtft", m_maxTtft->value()).toDouble());
    m_maxTpot->setValue(value("maxTpot", m_maxTpot->value()).toDouble());
    restoreCombo(m_engine, value("engine", m_engine->currentData()));
    m_memoryFraction->setValue(value("memoryFraction", m_memoryFraction->value()).toDouble());
    for (QLineEdit* edit : {m_lockTp, m_lockDp, m_lockCp, m_lockEp, m_lockVpp}) {
        const QString text = value(("lock_" + edit->objectName().toStdString()).c_str(), QString()).toString();
        int pos = 0;
        QString checked = text;
        if (edit->validator()->validate(checked, pos) == QValidator::Acceptable)
            edit->setText(text);
    }
}

} // namespace shardscape::ui
