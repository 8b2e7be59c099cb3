// SPDX-License-Identifier: MIT
#include "widgets/compare_widget.h"

#include "models/format.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLocale>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>

#include <functional>

namespace shardscape::ui {

namespace {

struct Metric
{
    QString name;
    std::function<QString(const Evaluation&)> text;
    /** For the change column: the raw value (nullptr: no change shown). */
    std::function<double(const Evaluation&)> value;
};

QString integer(int value)
{
    return QString::number(value);
}

std::vector<Metric> metrics()
{
    const auto num = [](double v, int decimals) { return QLocale::c().toString(v, 'f', decimals); };
    return {
        {QObject::tr("TP×PP×DP×CP"),
         [](const Evaluation& e) {
             return QStringLiteral("%1×%2×%3×%4").arg(e.config.tp).arg(e.config.pp).arg(e.config.dp).arg(e.config.cp);
         },
         nullptr},
        {QObject::tr("VPP, EP"),
         [](const Evaluation& e) { return QStringLiteral("%1, %2").arg(e.config.vpp).arg(e.config.ep); }, nullptr},
        {QObject::tr("mb × m"),
         [](const Evaluation& e) {
             return QStringLiteral("%1×%2").arg(e.config.micro_batch).arg(e.config.num_microbatches);
         },
         nullptr},
        {QObject::tr("ZeRO"), [](const Evaluation& e) { return integer(e.config.zero_stage); }, nullptr},
        {QObject::tr("Recompute"), [](const Evaluation& e) { return format::text(recomputeLabel(e.config)); }, nullptr},
        {QObject::tr("Schedule"),
         [](const Evaluation& e) {
             return e.config.pp > 1 ? format::text(scheduleName(e.config.schedule)) : QStringLiteral("—");
         },
         nullptr},
        {QObject::tr("Feasible"),
         [](const Evaluation& e) {
             return e.feasible ? QObject::tr("yes") : QObject::tr("no: %1").arg(QString::fromStdString(e.reason));
         },
         nullptr},
        {QObject::tr("Step time"), [](const Evaluation& e) { return format::seconds(e.step_time); },
         [](const Evaluation& e) { return e.step_time; }},
        {QObject::tr("Tokens/s"), [](const Evaluation& e) { return format::count(e.tokens_per_s); },
         [](const Evaluation& e) { return e.tokens_per_s; }},
        {QObject::tr("TFLOP/s/GPU"), [num](const Evaluation& e) { return num(e.tflops_per_gpu, 1); },
         [](const Evaluation& e) { return e.tflops_per_gpu; }},
        {QObject::tr("MFU"), [](const Evaluation& e) { return format::percent(e.mfu); },
         [](const Evaluation& e) { return e.mfu; }},
        {QObject::tr("HFU"), [](const Evaluation& e) { return format::percent(e.hfu); },
         [](const Evaluation& e) { return e.hfu; }},
        {QObject::tr("Bubble (% of step)"), [](const Evaluation& e) { return format::percent(e.bubble_ratio); },
         nullptr},
        {QObject::tr("Peak memory"),
         [](const Evaluation& e) { return e.stages.empty() ? QStringLiteral("—") : format::bytes(e.peakMemory()); },
         [](const Evaluation& e) { return e.stages.empty() ? 0.0 : e.peakMemory(); }},
        {QObject::tr("Compute"), [](const Evaluation& e) { return format::seconds(e.time.compute); },
         [](const Evaluation& e) { return e.time.compute; }},
        {QObject::tr("Recompute time"), [](const Evaluation& e) { return format::seconds(e.time.recompute); },
         [](const Evaluation& e) { return e.time.recompute; }},
        {QObject::tr("TP comm."), [](const Evaluation& e) { return format::seconds(e.time.tp_comm); },
         [](const Evaluation& e) { return e.time.tp_comm; }},
        {QObject::tr("CP/MoE comm."), [](const Evaluation& e) { return format::seconds(e.time.other_comm); },
         [](const Evaluation& e) { return e.time.other_comm; }},
        {QObject::tr("Bubble time"), [](const Evaluation& e) { return format::seconds(e.time.pp_bubble); },
         [](const Evaluation& e) { return e.time.pp_bubble; }},
        {QObject::tr("DP sync"), [](const Evaluation& e) { return format::seconds(e.time.dp_exposed); },
         [](const Evaluation& e) { return e.time.dp_exposed; }},
        {QObject::tr("Optimizer"), [](const Evaluation& e) { return format::seconds(e.time.optimizer); },
         [](const Evaluation& e) { return e.time.optimizer; }},
    };
}

} // namespace

CompareWidget::CompareWidget(QWidget* parent)
    : QWidget(parent)
    , m_hint(new QLabel(this))
    , m_table(new QTableWidget(this))
{
    m_hint->setWordWrap(true);
    m_table->setColumnCount(3);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSelectionMode(QAbstractItemView::NoSelection);
    // The three columns share the dock's width, so "B vs A" is on screen however narrow the dock (long cells elide
    // and keep their full text as a tooltip), instead of sitting past a horizontal scroll bar.
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    m_table->horizontalHeader()->setMinimumSectionSize(40);
    m_table->setTextElideMode(Qt::ElideRight);
    m_table->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_table->setWordWrap(false);
    m_table->setHorizontalHeaderLabels({tr("A"), tr("B"), tr("B vs A")});

    auto* clear = new QPushButton(tr("Clear Pins"), this);
    connect(clear, &QPushButton::clicked, this, &CompareWidget::clearPins);
    auto* buttons = new QHBoxLayout;
    buttons->addStretch(1);
    buttons->addWidget(clear);

    auto* layout = new QVBoxLayout(this);
    layout->addWidget(m_hint);
    layout->addWidget(m_table, 1);
    layout->addLayout(buttons);
    refresh();
}

void CompareWidget::pin(const Evaluation& evaluation, const QString& label)
{
    if (m_slots[0] && m_slots[1])
        m_slots[0] = std::move(m_slots[1]);
    Slot slot {evaluation, label};
    if (!m_slots[0])
        m_slots[0] = std::move(slot);
    else
        m_slots[1] = std::move(slot);
    refresh();
    emit pinned();
}

void CompareWidget::clearPins()
{
    m_slots = {};
    refresh();
}

int CompareWidget::pinnedCount() const
{
    return (m_slots[0] ? 1 : 0) + (m_slots[1] ? 1 : 0);
}

void CompareWidget::refresh()
{
    const auto rows = metrics();
    QStringList hint;
    for (std::size_t i = 0; i < m_slots.size(); ++i)
        if (m_slots[i])
            hint << QStringLiteral("<b>%1</b>: %2").arg(i == 0 ? tr("A") : tr("B"), m_slots[i]->label.toHtmlEscaped());
    hint << (pinnedCount() == 2
                 ? tr("B against A; shorter times and less memory are better.")
                 : tr("Pin plans to compare them: right-click a candidate, press Ctrl+P, or pin a what-if."));
    m_hint->setText(hint.join(QStringLiteral("<br>")));
    m_table->setRowCount(static_cast<int>(rows.size()));
    QStringList names;
    for (const auto& metric : rows)
        names << metric.name;
    m_table->setVerticalHeaderLabels(names);
    for (int r = 0; r < static_cast<int>(rows.size()); ++r) {
        const Metric& metric = rows[static_cast<std::size_t>(r)];
        for (int c = 0; c < 2; ++c) {
            const auto& slot = m_slots[static_cast<std::size_t>(c)];
            auto* item = new QTableWidgetItem(slot ? metric.text(slot->evaluation) : QString());
            item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
            item->setToolTip(item->text()); // whole, where a narrow dock elides it
            m_table->setItem(r, c, item);
        }
        QString change;
        if (metric.value && m_slots[0] && m_slots[1])
            change = format::relativeDelta(metric.value(m_slots[0]->evaluation), metric.value(m_slots[1]->evaluation));
        auto* item = new QTableWidgetItem(change);
        item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
        m_table->setItem(r, 2, item);
    }
}

} // namespace shardscape::ui
