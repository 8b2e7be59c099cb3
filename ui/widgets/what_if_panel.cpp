// SPDX-License-Identifier: MIT
#include "widgets/what_if_panel.h"

#include "models/format.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QPushButton>
#include <QRegularExpression>
#include <QSpinBox>
#include <QTimer>
#include <QVBoxLayout>

namespace shardscape::ui {

namespace {

enum Row
{
    StepRow,
    StepRangeRow,
    TokensRow,
    MfuRow,
    MemoryRow,
    MemoryRangeRow,
    OomRow,
    BubbleRow,
    GpusRow,
    BatchRow,
    RowCount
};

/** Layers per model chunk (virtual-stage order) that an evaluation used, automatic splits included. */
std::vector<int> resolvedStageLayers(const Evaluation& e)
{
    return e.config.stage_layers.empty() ? e.chunkLayers() : e.config.stage_layers;
}

QString layersText(const std::vector<int>& layers)
{
    QStringList parts;
    for (const int n : layers)
        parts << QString::number(n);
    return parts.join(QStringLiteral(", "));
}

QSpinBox* spin(QWidget* parent, int max, const QString& tip)
{
    auto* box = new QSpinBox(parent);
    box->setRange(1, max);
    box->setToolTip(tip);
    box->setAccelerated(true);
    return box;
}

/** A factor editor in steps of 0.05, findable by its object name. */
QDoubleSpinBox* factorSpin(QWidget* parent, const QString& name, double min, const QString& tip)
{
    auto* box = new QDoubleSpinBox(parent);
    box->setObjectName(name);
    box->setRange(min, 16);
    box->setSingleStep(0.05);
    box->setToolTip(tip);
    return box;
}

bool measured(const Evaluation& e)
{
    return e.step_time > 0;
}

QString colored(const QString& text, bool better)
{
    return QStringLiteral("<span style=\"color:%1\">%2</span>")
        .arg(better ? QStringLiteral("#1b7f3b") : QStringLiteral("#b00020"), text);
}

} // namespace

WhatIfPanel::WhatIfPanel(QWidget* parent)
    : QWidget(parent)
    , m_tp(spin(this, 1024, tr("Tensor-parallel degree")))
    , m_pp(spin(this, 1024, tr("Pipeline stages")))
    , m_dp(spin(this, 1 << 20, tr("Data-parallel degree")))
    , m_vpp(spin(this, 64, tr("Model chunks per pipeline rank (interleaved schedule)")))
    , m_microBatch(spin(this, 4096, tr("Sequences per micro-batch per data-parallel rank")))
    , m_microBatches(spin(this, 1 << 20, tr("Micro-batches per step (gradient accumulation)")))
    , m_zero(new QComboBox(this))
    , m_recompute(new QComboBox(this))
    , m_recomputeBlocks(spin(this, 4096,
                             tr("With full recomputation: recompute only the first N decoder blocks of each model "
                                "chunk and keep the others' activations (Megatron --recompute-method block "
                                "--recompute-num-layers N); all = every block")))
    , m_schedule(new QComboBox(this))
    , m_tpOverlap(new QCheckBox(tr("TP comm. overlap"), this))
    , m_paramGatherOverlap(new QCheckBox(tr("Param-gather overlap"), this))
    , m_a2aOverlap(new QCheckBox(tr("Expert all-to-all overlap"), this))
    , m_sharedExpertOverlap(new QCheckBox(tr("Shared expert overlap"), this))
    , m_capacity(factorSpin(this, QStringLiteral("moeCapacity"), 0,
                            tr("Experts' capacity factor: each expert computes at most this times its even share "
                               "of the routed tokens and drops the rest (Megatron --moe-expert-capacity-factor); "
                               "dropless computes every routed token")))
    , m_imbalance(factorSpin(this, QStringLiteral("moeImbalance"), 1,
                             tr("Router load imbalance: routed tokens on the busiest expert-parallel rank over the "
                                "mean (1 = even; the sampling spread of top-k routing is added). The busiest rank "
                                "sets the pace of the experts and their all-to-alls")))
    , m_fp8(new QCheckBox(tr("FP8 linears"), this))
    , m_eager(new QCheckBox(tr("Eager (no compile)"), this))
    , m_gradBf16(new QCheckBox(tr("BF16 grad reduce"), this))
    , m_fp8Params(new QCheckBox(tr("FP8 parameters"), this))
    , m_framework(new QComboBox(this))
    , m_stageLayers(new QLineEdit(this))
    , m_status(new QLabel(this))
    , m_reset(new QPushButton(tr("Back to the Plan"), this))
    , m_pin(new QPushButton(tr("Pin What-if"), this))
    , m_debounce(new QTimer(this))
{
    m_reset->setToolTip(tr("Set every field back to the selected plan's configuration"));
    for (int zero = 0; zero <= 3; ++zero)
        m_zero->addItem(QString::number(zero), zero);
    for (const auto kind : {RecomputeKind::None, RecomputeKind::Selective, RecomputeKind::Full})
        m_recompute->addItem(format::text(recomputeName(kind)), static_cast<int>(kind));
    m_recompute->setObjectName(QStringLiteral("recompute"));
    m_recomputeBlocks->setObjectName(QStringLiteral("recomputeBlocks"));
    m_recomputeBlocks->setMinimum(0);
    m_recomputeBlocks->setSpecialValueText(tr("all"));
    for (const auto kind :
         {ScheduleKind::GPipe, ScheduleKind::OneFOneB, ScheduleKind::Interleaved1F1B, ScheduleKind::ZeroBubbleH1,
          ScheduleKind::ZeroBubbleV, ScheduleKind::DualPipeV, ScheduleKind::DualPipe})
        m_schedule->addItem(format::text(scheduleName(kind)), static_cast<int>(kind));
    m_tpOverlap->setToolTip(tr("Overlap the sequence-parallel all-gathers and reduce-scatters with the GEMMs beside "
                               "them (Megatron-LM --tp-comm-overlap, torchtitan async TP); needs TP > 1"));
    m_paramGatherOverlap->setToolTip(tr("Overlap the ZeRO-1/2 parameter all-gather with the next step's forward "
                                        "(Megatron-LM --overlap-param-gather)"));
    m_a2aOverlap->setToolTip(tr("Overlap each micro-batch's expert all-to-alls with another micro-batch's compute "
                                "(Megatron-Core --overlap-moe-expert-parallel-comm); needs EP > 1, two or more "
                                "micro-batches, and PP 1, the interleaved schedule, DualPipeV or DualPipe"));
    m_sharedExpertOverlap->setObjectName(QStringLiteral("moeSharedExpertOverlap"));
    m_sharedExpertOverlap->setToolTip(tr("Run the shared expert on a side stream while the routed tokens are "
                                         "dispatched and combined (Megatron-Core --moe-shared-expert-overlap); needs "
                                         "EP > 1 and a shared expert, and excludes the all-to-all overlap"));
    m_capacity->setSpecialValueText(tr("dropless"));
    m_fp8->setToolTip(tr("Run the linear layers' GEMMs in FP8 with dynamic scaling (torchtitan float8, Transformer "
                         "Engine); attention stays in the model's precision"));
    m_eager->setToolTip(tr("Eager PyTorch without torch.compile: RMSNorm, rotary embedding and SwiGLU run as "
                           "unfused kernels"));
    m_gradBf16->setObjectName(QStringLiteral("gradReduceBf16"));
    m_gradBf16->setToolTip(tr("Accumulate and reduce gradients in the model's 16-bit dtype instead of fp32 "
                              "(Megatron --grad-reduce-in-bf16): half the gradient buffers and data-parallel "
                              "gradient traffic; megatron-core, nemo and generic"));
    m_fp8Params->setObjectName(QStringLiteral("fp8Params"));
    m_fp8Params->setToolTip(tr("With FP8 linears and ZeRO 1+: the weights are FP8 parameters, all-gathered in FP8 "
                               "(Megatron --fp8-param-gather). Off, Transformer Engine keeps an FP8 copy beside each "
                               "16-bit weight"));
    for (const auto framework : allFrameworks())
        m_framework->addItem(format::text(frameworkName(framework)), static_cast<int>(framework));
    m_framework->setToolTip(tr("The training framework the configuration is for: it sets the memory terms (what the "
                               "framework allocates, its runtime and allocator fragmentation) and what it can run "
                               "(a configuration it cannot run is infeasible, with the reason)"));
    m_stageLayers->setPlaceholderText(tr("automatic"));
    m_stageLayers->setToolTip(tr("Layers per pipeline stage (per model chunk with vpp > 1), comma-separated; "
                                 "empty = the cost model's balanced split"));

    auto* editors = new QGroupBox(tr("Configuration"), this);
    auto* grid = new QGridLayout(editors);
    const auto addPair = [&](int row, int column, const QString& label, QWidget* editor) {
        auto* text = new QLabel(label, editors);
        text->setBuddy(editor);
        grid->addWidget(text, row, column * 2);
        grid->addWidget(editor, row, column * 2 + 1);
    };
    addPair(0, 0, tr("TP:"), m_tp);
    addPair(0, 1, tr("PP:"), m_pp);
    addPair(1, 0, tr("DP:"), m_dp);
    addPair(1, 1, tr("VPP:"), m_vpp);
    addPair(2, 0, tr("mb:"), m_microBatch);
    addPair(2, 1, tr("m:"), m_microBatches);
    addPair(3, 0, tr("ZeRO:"), m_zero);
    addPair(3, 1, tr("Sched.:"), m_schedule);
    addPair(4, 0, tr("Recomp.:"), m_recompute);
    addPair(4, 1, tr("Blocks:"), m_recomputeBlocks);
    grid->addWidget(m_fp8, 5, 0, 1, 2);
    grid->addWidget(m_eager, 5, 2, 1, 2);
    grid->addWidget(m_tpOverlap, 6, 0, 1, 2);
    grid->addWidget(m_paramGatherOverlap, 6, 2, 1, 2);
    {
        auto* text = new QLabel(tr("Framework:"), editors);
        text->setBuddy(m_framework);
        grid->addWidget(text, 7, 0);
        grid->addWidget(m_framework, 7, 1, 1, 3);
    }
    auto* stagesLabel = new QLabel(tr("Layers per stage:"), editors);
    stagesLabel->setBuddy(m_stageLayers);
    grid->addWidget(stagesLabel, 8, 0, 1, 2);
    grid->addWidget(m_stageLayers, 8, 2, 1, 2);
    grid->addWidget(m_a2aOverlap, 9, 0, 1, 2);
    grid->addWidget(m_sharedExpertOverlap, 9, 2, 1, 2);
    addPair(10, 0, tr("Capacity:"), m_capacity);
    addPair(10, 1, tr("Imbal.:"), m_imbalance);
    grid->addWidget(m_gradBf16, 11, 0, 1, 2);
    grid->addWidget(m_fp8Params, 11, 2, 1, 2);
    grid->setColumnStretch(1, 1);
    grid->setColumnStretch(3, 1);

    auto* results = new QGroupBox(tr("Prediction"), this);
    auto* table = new QGridLayout(results);
    const QStringList headers {QString(), tr("Plan"), tr("What-if"), tr("Change")};
    const QStringList names {tr("Step time"),  tr("Step range"), tr("Tokens/s"), tr("MFU"),  tr("Peak memory"),
                             tr("Peak range"), tr("OOM risk"),   tr("Bubble"),   tr("GPUs"), tr("Global batch")};
    for (int c = 0; c < 4; ++c) {
        auto* header = new QLabel(QStringLiteral("<b>%1</b>").arg(headers[c]), results);
        header->setAlignment(c == 0 ? Qt::AlignLeft : Qt::AlignRight);
        table->addWidget(header, 0, c);
    }
    for (int r = 0; r < RowCount; ++r)
        for (int c = 0; c < 4; ++c) {
            auto* label = new QLabel(c == 0 ? names[r] : QString(), results);
            label->setAlignment(c == 0 ? Qt::AlignLeft | Qt::AlignVCenter : Qt::AlignRight | Qt::AlignVCenter);
            label->setTextFormat(c == 3 ? Qt::RichText : Qt::PlainText);
            table->addWidget(label, r + 1, c);
            m_table[r][c] = label;
        }
    table->setColumnStretch(0, 1);
    m_status->setWordWrap(true);
    m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);

    auto* buttons = new QHBoxLayout;
    buttons->addWidget(m_reset);
    buttons->addWidget(m_pin);
    m_pin->setToolTip(tr("Pin the what-if result for side-by-side comparison"));

    auto* layout = new QVBoxLayout(this);
    layout->addWidget(editors);
    layout->addLayout(buttons);
    layout->addWidget(results);
    layout->addWidget(m_status);
    layout->addStretch(1);

    m_debounce->setSingleShot(true);
    m_debounce->setInterval(0);
    connect(m_debounce, &QTimer::timeout, this, [this] {
        if (!m_baseline)
            return;
        const ParallelConfig edited = editedConfig();
        // A what-if may use part of the cluster, never more: no prediction for GPUs the cluster does not have.
        if (m_clusterGpus > 0 && edited.worldSize() > m_clusterGpus) {
            m_result.reset();
            updateTable();
            m_status->setText(colored(tr("Does not fit the cluster: tp x cp x dp x pp = %1 GPUs, the cluster has %2. "
                                         "Lower a degree, or add nodes in the Cluster panel and plan again.")
                                          .arg(edited.worldSize())
                                          .arg(m_clusterGpus),
                                      false));
            emit outsideCluster(edited);
            return;
        }
        emit configEdited(edited);
    });
    for (QSpinBox* box : {m_tp, m_dp, m_microBatch, m_microBatches, m_recomputeBlocks})
        connect(box, &QSpinBox::valueChanged, this, &WhatIfPanel::scheduleEdit);
    connect(m_recompute, &QComboBox::currentIndexChanged, this,
            [this] { m_recomputeBlocks->setEnabled(recomputesWholeBlocks()); });
    // A changed pipeline shape invalidates the old split: fall back to the automatic one.
    for (QSpinBox* box : {m_pp, m_vpp})
        connect(box, &QSpinBox::valueChanged, this, [this] {
            if (!m_loading)
                m_stageLayers->clear();
            scheduleEdit();
        });
    for (QComboBox* box : {m_zero, m_recompute, m_schedule, m_framework})
        connect(box, &QComboBox::currentIndexChanged, this, &WhatIfPanel::scheduleEdit);
    for (QCheckBox* box : {m_tpOverlap, m_paramGatherOverlap, m_a2aOverlap, m_sharedExpertOverlap, m_fp8, m_eager,
                           m_gradBf16, m_fp8Params})
        connect(box, &QCheckBox::toggled, this, &WhatIfPanel::scheduleEdit);
    for (QDoubleSpinBox* box : {m_capacity, m_imbalance})
        connect(box, &QDoubleSpinBox::valueChanged, this, &WhatIfPanel::scheduleEdit);
    connect(m_stageLayers, &QLineEdit::textEdited, this, &WhatIfPanel::scheduleEdit);
    connect(m_reset, &QPushButton::clicked, this, [this] {
        if (!m_baseline)
            return;
        loadEditors(m_baseline->config);
        m_result.reset();
        updateTable();
        m_status->clear();
        emit resetRequested();
    });
    connect(m_pin, &QPushButton::clicked, this, &WhatIfPanel::pinRequested);
    clearBaseline();
}

void WhatIfPanel::scheduleEdit()
{
    if (!m_loading)
        m_debounce->start();
}

void WhatIfPanel::setBaseline(const Evaluation& baseline, int clusterGpus)
{
    m_baseline = baseline;
    m_clusterGpus = clusterGpus;
    m_result.reset();
    loadEditors(baseline.config);
    setEnabled(true);
    updateTable();
    m_status->setText(tr("Edit any field: the change is re-simulated at once and compared with the plan."));
}

void WhatIfPanel::clearBaseline()
{
    m_debounce->stop();
    m_baseline.reset();
    m_result.reset();
    updateTable();
    m_status->setText(tr("Select a candidate to explore changes to it."));
    setEnabled(false);
}

void WhatIfPanel::loadEditors(const ParallelConfig& c)
{
    m_loading = true;
    m_debounce->stop();
    m_tp->setValue(c.tp);
    m_pp->setValue(c.pp);
    m_dp->setValue(c.dp);
    m_vpp->setValue(c.vpp);
    m_microBatch->setValue(c.micro_batch);
    m_microBatches->setValue(c.num_microbatches);
    m_zero->setCurrentIndex(m_zero->findData(c.zero_stage));
    const int recompute = m_recompute->findData(static_cast<int>(c.recompute));
    if (recompute < 0) // named modules or blocks: offer them as they were
        m_recompute->addItem(format::text(recomputeLabel(c)), static_cast<int>(c.recompute));
    else if (c.recompute == RecomputeKind::Modules)
        m_recompute->setItemText(recompute, format::text(recomputeLabel(c)));
    m_recompute->setCurrentIndex(m_recompute->findData(static_cast<int>(c.recompute)));
    m_recomputeBlocks->setValue(recomputedBlocksPerChunk(c));
    m_recomputeBlocks->setEnabled(recomputesWholeBlocks());
    m_schedule->setCurrentIndex(m_schedule->findData(static_cast<int>(c.schedule)));
    m_tpOverlap->setChecked(c.tp_comm_overlap);
    m_paramGatherOverlap->setChecked(c.overlap_param_gather);
    m_a2aOverlap->setChecked(c.moe_a2a_overlap);
    m_sharedExpertOverlap->setChecked(c.moe_shared_expert_overlap);
    m_capacity->setValue(c.moe_capacity_factor);
    m_imbalance->setValue(c.moe_router_imbalance);
    m_fp8->setChecked(c.fp8_linears);
    m_eager->setChecked(c.eager_kernels);
    m_gradBf16->setChecked(c.grad_reduce_bf16);
    m_fp8Params->setChecked(c.fp8_param_gather);
    m_framework->setCurrentIndex(m_framework->findData(static_cast<int>(c.framework)));
    m_stageLayers->setText(m_baseline && c.pp > 1 ? layersText(resolvedStageLayers(*m_baseline)) : QString());
    m_loading = false;
}

ParallelConfig WhatIfPanel::editedConfig() const
{
    ParallelConfig c = m_baseline ? m_baseline->config : ParallelConfig {};
    c.tp = m_tp->value();
    c.pp = m_pp->value();
    c.dp = m_dp->value();
    c.vpp = m_vpp->value();
    c.micro_batch = m_microBatch->value();
    c.num_microbatches = m_microBatches->value();
    c.zero_stage = m_zero->currentData().toInt();
    c.recompute = static_cast<RecomputeKind>(m_recompute->currentData().toInt());
    if (recomputesWholeBlocks()) {
        // The first N blocks of the first chunk: the window spreads them over the configuration's chunks
        // (CostModel::withFirstBlocksRecomputed), which only it knows.
        const int blocks = m_recomputeBlocks->value();
        c.recompute = blocks > 0 ? RecomputeKind::Modules : RecomputeKind::Full;
        c.recompute_modules.clear();
        for (int i = 0; i < blocks; ++i)
            c.recompute_modules.push_back(std::to_string(i));
    }
    c.schedule = static_cast<ScheduleKind>(m_schedule->currentData().toInt());
    c.sequence_parallel = c.sequence_parallel && c.tp > 1;
    if (m_baseline && c.tp > 1 && m_baseline->config.tp == 1)
        c.sequence_parallel = true; // the planner's default whenever tp > 1
    c.tp_comm_overlap = m_tpOverlap->isChecked() && c.sequence_parallel;
    c.overlap_param_gather = m_paramGatherOverlap->isChecked();
    c.moe_a2a_overlap = m_a2aOverlap->isChecked();
    c.moe_shared_expert_overlap = m_sharedExpertOverlap->isChecked();
    c.moe_capacity_factor = m_capacity->value();
    c.moe_router_imbalance = m_imbalance->value();
    c.fp8_linears = m_fp8->isChecked();
    c.eager_kernels = m_eager->isChecked();
    c.grad_reduce_bf16 = m_gradBf16->isChecked();
    c.fp8_param_gather = m_fp8Params->isChecked();
    c.framework = static_cast<Framework>(m_framework->currentData().toInt());
    c.stage_layers.clear();
    static const QRegularExpression separators(QStringLiteral("[,;\\s]+"));
    for (const QString& part : m_stageLayers->text().split(separators, Qt::SkipEmptyParts)) {
        bool ok = false;
        const int layers = part.toInt(&ok);
        c.stage_layers.push_back(ok ? layers : 0); // 0 makes the cost model name the problem
    }
    if (c.pp == 1)
        c.stage_layers.clear();
    return c;
}

bool WhatIfPanel::recomputesWholeBlocks() const
{
    const auto kind = static_cast<RecomputeKind>(m_recompute->currentData().toInt());
    return kind == RecomputeKind::Full
        || (kind == RecomputeKind::Modules && m_baseline && recomputedBlocksPerChunk(m_baseline->config) > 0);
}

void WhatIfPanel::setValue(const QString& field, int value)
{
    QSpinBox* box = field == QLatin1String("tp")     ? m_tp
        : field == QLatin1String("pp")               ? m_pp
        : field == QLatin1String("dp")               ? m_dp
        : field == QLatin1String("vpp")              ? m_vpp
        : field == QLatin1String("micro_batch")      ? m_microBatch
        : field == QLatin1String("num_microbatches") ? m_microBatches
        : field == QLatin1String("recompute_blocks") ? m_recomputeBlocks
                                                     : nullptr;
    if (box)
        box->setValue(value);
}

void WhatIfPanel::setFramework(Framework framework)
{
    m_framework->setCurrentIndex(m_framework->findData(static_cast<int>(framework)));
}

QString WhatIfPanel::predictionText(const QString& row, int column) const
{
    if (column < 0 || column > 3)
        return {};
    for (int r = 0; r < RowCount; ++r)
        if (m_table[r][0]->text() == row)
            return m_table[r][column]->text();
    return {};
}

QString WhatIfPanel::statusText() const
{
    return m_status->text();
}

void WhatIfPanel::showResult(const Evaluation& result, double seconds)
{
    m_result = result;
    updateTable();
    QString status
        = result.feasible ? tr("Feasible.") : tr("Infeasible: %1").arg(QString::fromStdString(result.reason));
    status += QLatin1Char(' ') + tr("Re-simulated in %1.").arg(format::seconds(seconds));
    m_status->setText(status);
}

void WhatIfPanel::showProblem(const QString& message)
{
    m_result.reset();
    updateTable();
    m_status->setText(tr("Cannot evaluate this edit: %1").arg(message));
}

void WhatIfPanel::updateTable()
{
    const auto set = [&](int row, const QString& plan, const QString& whatIf, const QString& change) {
        m_table[row][1]->setText(plan);
        m_table[row][2]->setText(whatIf);
        m_table[row][3]->setText(change);
    };
    for (int r = 0; r < RowCount; ++r)
        set(r, QString(), QString(), QString());
    if (!m_baseline)
        return;
    const Evaluation& a = *m_baseline;
    const Evaluation* b = m_result ? &*m_result : nullptr;
    const bool both = b && measured(a) && measured(*b);
    const QString none = QStringLiteral("—");
    const auto measuredText
        = [&](const Evaluation* e, auto f) { return e && measured(*e) ? f(*e) : (e ? none : QString()); };

    set(StepRow, measuredText(&a, [](const Evaluation& e) { return format::seconds(e.step_time); }),
        measuredText(b, [](const Evaluation& e) { return format::seconds(e.step_time); }),
        both ? colored(format::relativeDelta(a.step_time, b->step_time), b->step_time <= a.step_time) : QString());
    const auto stepRange = [](const Evaluation& e) {
        return e.step_time_range.high > 0 ? QStringLiteral("%1 – %2").arg(format::seconds(e.step_time_range.low),
                                                                          format::seconds(e.step_time_range.high))
                                          : QStringLiteral("—");
    };
    set(StepRangeRow, measuredText(&a, stepRange), measuredText(b, stepRange), QString());
    set(TokensRow, measuredText(&a, [](const Evaluation& e) { return format::count(e.tokens_per_s); }),
        measuredText(b, [](const Evaluation& e) { return format::count(e.tokens_per_s); }),
        both ? colored(format::relativeDelta(a.tokens_per_s, b->tokens_per_s), b->tokens_per_s >= a.tokens_per_s)
             : QString());
    set(MfuRow, measuredText(&a, [](const Evaluation& e) { return format::percent(e.mfu); }),
        measuredText(b, [](const Evaluation& e) { return format::percent(e.mfu); }),
        both ? colored(tr("%1%2 pt")
                           .arg(b->mfu >= a.mfu ? QStringLiteral("+") : QString())
                           .arg(QLocale::c().toString(100 * (b->mfu - a.mfu), 'f', 1)),
                       b->mfu >= a.mfu)
             : QString());
    const auto peak = [](const Evaluation& e) { return e.stages.empty() ? 0.0 : e.peakMemory(); };
    set(MemoryRow, peak(a) > 0 ? format::bytes(peak(a)) : none,
        b ? (peak(*b) > 0 ? format::bytes(peak(*b)) : none) : QString(),
        b && peak(a) > 0 && peak(*b) > 0 ? colored(format::relativeDelta(peak(a), peak(*b)), peak(*b) <= peak(a))
                                         : QString());
    const auto memoryRange = [&](const Evaluation* e) {
        if (!e)
            return QString();
        return !e->stages.empty() && e->peak_memory_range.high > 0
            ? QStringLiteral("%1 – %2 GB")
                  .arg(format::gigabytes(e->peak_memory_range.low), format::gigabytes(e->peak_memory_range.high))
            : none;
    };
    set(MemoryRangeRow, memoryRange(&a), memoryRange(b), QString());
    const auto risk = [&](const Evaluation* e) {
        if (!e)
            return QString();
        return e->stages.empty() ? none : format::text(oomRiskName(e->oom_risk));
    };
    set(OomRow, risk(&a), risk(b),
        b && !a.stages.empty() && !b->stages.empty() && a.oom_risk != b->oom_risk
            ? colored(risk(b), b->oom_risk < a.oom_risk)
            : QString());
    set(BubbleRow, measuredText(&a, [](const Evaluation& e) { return format::percent(e.bubble_ratio); }),
        measuredText(b, [](const Evaluation& e) { return format::percent(e.bubble_ratio); }), QString());
    const int edited = b ? b->config.worldSize() : editedConfig().worldSize();
    set(GpusRow, QString::number(a.config.worldSize()), QString::number(edited),
        edited > m_clusterGpus        ? colored(tr("cluster has %1").arg(m_clusterGpus), false)
            : edited != m_clusterGpus ? tr("%1 of the cluster's %2").arg(edited).arg(m_clusterGpus)
                                      : QString());
    set(BatchRow, QString::number(a.config.globalBatch()), b ? QString::number(b->config.globalBatch()) : QString(),
        QString());
}

} // namespace shardscape::ui
