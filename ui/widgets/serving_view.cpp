// SPDX-License-Identifier: MIT
#include "widgets/serving_view.h"

#include "models/format.h"

#include "shardscape/support/units.h"

#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

#if defined(SHARDSCAPE_HAVE_CHARTS) && __has_include("charts/serving_pareto_chart.h")
#include "charts/memory_chart.h"
#include "charts/serving_pareto_chart.h"
#define SHARDSCAPE_SERVING_CHARTS 1
#endif

namespace shardscape::ui {

namespace {

enum Column
{
    Rank,
    Deployment,
    Gpus,
    Concurrency,
    MaxConcurrency,
    Ttft,
    Tpot,
    OutputTokens,
    PerGpu,
    KvCache,
    Status,
    ColumnCount
};

QTableWidgetItem* number(double value, int decimals)
{
    auto* item = new QTableWidgetItem;
    item->setData(Qt::DisplayRole,
                  decimals == 0 ? QVariant(qRound64(value)) : QVariant(QString::number(value, 'f', decimals)));
    item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    return item;
}

} // namespace

ServingView::ServingView(QWidget* parent)
    : QWidget(parent)
    , m_summary(new QLabel(this))
    , m_table(new QTableWidget(this))
    , m_splitter(new QSplitter(Qt::Vertical, this))
{
    m_summary->setWordWrap(true);
    m_summary->setTextFormat(Qt::PlainText);
    m_table->setColumnCount(ColumnCount);
    m_table->setHorizontalHeaderLabels({tr("#"), tr("deployment"), tr("GPUs"), tr("concurrency"), tr("max conc."),
                                        tr("TTFT ms"), tr("TPOT ms"), tr("output tok/s"), tr("tok/s per GPU"),
                                        tr("KV cache GB"), tr("status")});
    m_table->horizontalHeaderItem(MaxConcurrency)
        ->setToolTip(tr("the most sequences the KV pool holds at full context (input + output)"));
    m_table->horizontalHeaderItem(KvCache)->setToolTip(tr("KV cache the requests in flight hold, per GPU"));
    m_table->horizontalHeaderItem(Ttft)->setToolTip(tr("time to the first token under this load"));
    m_table->horizontalHeaderItem(Tpot)->setToolTip(tr("time per output token after the first"));
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->verticalHeader()->hide();
    m_table->horizontalHeader()->setStretchLastSection(true);
    m_table->setAlternatingRowColors(true);
    connect(m_table, &QTableWidget::itemSelectionChanged, this, [this] {
        showSelection();
        emit selectionChanged(selectedRow());
    });

    auto* top = new QWidget;
    auto* topLayout = new QVBoxLayout(top);
    topLayout->setContentsMargins(0, 0, 0, 0);
    topLayout->addWidget(m_summary);
    topLayout->addWidget(m_table, 1);
    m_splitter->setChildrenCollapsible(false);
    m_splitter->addWidget(top);
#ifdef SHARDSCAPE_SERVING_CHARTS
    auto* charts = new QSplitter(Qt::Horizontal);
    charts->setChildrenCollapsible(false);
    m_pareto = new ServingParetoChart;
    m_memory = new MemoryChart;
    charts->addWidget(m_pareto);
    charts->addWidget(m_memory);
    charts->setStretchFactor(0, 3);
    charts->setStretchFactor(1, 2);
    m_splitter->addWidget(charts);
    m_splitter->setStretchFactor(0, 2);
    m_splitter->setStretchFactor(1, 3);
    m_splitter->setSizes({320, 480});
    connect(m_pareto, &ServingParetoChart::deploymentClicked, this, &ServingView::selectRow);
#endif
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_splitter);
    clear();
}

ServingView::~ServingView() = default;

void ServingView::clear()
{
    m_result.reset();
    m_table->setRowCount(0);
    m_summary->setText(tr("Plan (Ctrl+R) to size a serving deployment."));
#ifdef SHARDSCAPE_SERVING_CHARTS
    m_pareto->clear();
    m_memory->clear();
#endif
}

void ServingView::setResult(std::shared_ptr<const ServingPlanResult> result, double maxTpotMs)
{
    const QSignalBlocker blocker(m_table);
    m_result = std::move(result);
    const ServingPlanResult& r = *m_result;
    const int rows = static_cast<int>(r.top.size() + r.infeasible.size());
    m_table->setSortingEnabled(false);
    m_table->clearContents();
    m_table->setRowCount(rows);
    for (int row = 0; row < rows; ++row) {
        const bool feasible = row < static_cast<int>(r.top.size());
        const ServingEstimate& e = *deployment(row);
        m_table->setItem(row, Rank, new QTableWidgetItem(feasible ? QString::number(row + 1) : QStringLiteral("–")));
        m_table->setItem(row, Deployment, new QTableWidgetItem(format::text(e.parallel.describe())));
        m_table->setItem(row, Gpus, number(e.parallel.gpus(), 0));
        m_table->setItem(row, Concurrency, number(e.concurrency, 0));
        m_table->setItem(row, MaxConcurrency, number(e.max_concurrency, 0));
        m_table->setItem(row, Ttft, number(e.ttft_s * 1e3, 0));
        m_table->setItem(row, Tpot, number(e.tpot_s * 1e3, 1));
        m_table->setItem(row, OutputTokens, number(e.output_tokens_per_s, 0));
        m_table->setItem(row, PerGpu, number(e.outputTokensPerSecondPerGpu(), 0));
        m_table->setItem(row, KvCache, number(e.memory.kv_cache / units::kGB, 1));
        m_table->setItem(row, Status, new QTableWidgetItem(feasible ? tr("serves") : format::text(e.reason)));
        if (!feasible) {
            m_table->item(row, Status)->setToolTip(format::text(e.reason));
            for (int column = 0; column < ColumnCount; ++column)
                m_table->item(row, column)->setForeground(palette().color(QPalette::Disabled, QPalette::Text));
        }
    }
    m_table->resizeColumnsToContents();
    m_summary->setText(r.top.empty()
                           ? tr("%1: no deployment serves this request; the closest are listed with their reasons.")
                                 .arg(format::text(r.model_name))
                           : tr("%1: %2 of %3 deployments serve the request, best first by output tokens/s under the "
                                "latency bounds (%4 in, %5 out).")
                                 .arg(format::text(r.model_name))
                                 .arg(r.counts.candidates_feasible)
                                 .arg(r.counts.candidates_total)
                                 .arg(r.top.front().request.input_len)
                                 .arg(r.top.front().request.output_len));
#ifdef SHARDSCAPE_SERVING_CHARTS
    m_pareto->setDeployments(r.top, r.top.empty() ? -1 : 0, maxTpotMs);
#endif
    Q_UNUSED(maxTpotMs)
    selectRow(rows > 0 ? 0 : -1);
    showSelection();
}

void ServingView::selectRow(int row)
{
    if (row < 0 || row >= m_table->rowCount())
        m_table->clearSelection();
    else
        m_table->selectRow(row);
}

int ServingView::selectedRow() const
{
    const auto rows = m_table->selectionModel()->selectedRows();
    return rows.isEmpty() ? -1 : rows.front().row();
}

const ServingEstimate* ServingView::deployment(int row) const
{
    if (!m_result || row < 0)
        return nullptr;
    const auto index = static_cast<std::size_t>(row);
    if (index < m_result->top.size())
        return &m_result->top[index];
    if (index - m_result->top.size() < m_result->infeasible.size())
        return &m_result->infeasible[index - m_result->top.size()];
    return nullptr;
}

bool ServingView::isFeasibleRow(int row) const
{
    return m_result && row >= 0 && static_cast<std::size_t>(row) < m_result->top.size();
}

void ServingView::showSelection()
{
#ifdef SHARDSCAPE_SERVING_CHARTS
    const int row = selectedRow();
    m_pareto->setSelectedIndex(isFeasibleRow(row) ? row : -1);
    if (const ServingEstimate* e = deployment(row))
        m_memory->setServing(*e);
    else
        m_memory->clear();
#endif
}

} // namespace shardscape::ui
