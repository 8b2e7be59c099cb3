// SPDX-License-Identifier: MIT
#include "models/candidates_model.h"

#include "models/format.h"

#include <QBrush>
#include <QColor>
#include <QLocale>
#include <QPalette>

#include <limits>

namespace shardscape::ui {

namespace {

/** Rejected before costing: nothing was measured. */
bool measured(const Evaluation& e)
{
    return e.step_time > 0;
}

QString intText(int value)
{
    return QString::number(value);
}

} // namespace

CandidatesModel::CandidatesModel(QObject* parent)
    : QAbstractTableModel(parent)
{
}

void CandidatesModel::setResult(std::shared_ptr<const PlanResult> result)
{
    beginResetModel();
    m_result = std::move(result);
    endResetModel();
}

void CandidatesModel::clear()
{
    setResult(nullptr);
}

const Evaluation* CandidatesModel::evaluation(int row) const
{
    if (!m_result || row < 0)
        return nullptr;
    const auto r = static_cast<std::size_t>(row);
    if (r < m_result->top.size())
        return &m_result->top[r];
    if (r - m_result->top.size() < m_result->infeasible.size())
        return &m_result->infeasible[r - m_result->top.size()];
    return nullptr;
}

bool CandidatesModel::isFeasible(int row) const
{
    return m_result && row >= 0 && static_cast<std::size_t>(row) < m_result->top.size();
}

int CandidatesModel::bestRow() const
{
    return m_result && !m_result->top.empty() ? 0 : -1;
}

int CandidatesModel::rowCount(const QModelIndex& parent) const
{
    if (parent.isValid() || !m_result)
        return 0;
    return static_cast<int>(m_result->top.size() + m_result->infeasible.size());
}

int CandidatesModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant CandidatesModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal)
        return {};
    if (role == Qt::DisplayRole) {
        switch (static_cast<Column>(section)) {
        case RankColumn:
            return tr("#");
        case TpColumn:
            return tr("TP");
        case PpColumn:
            return tr("PP");
        case DpColumn:
            return tr("DP");
        case CpColumn:
            return tr("CP");
        case EpColumn:
            return tr("EP");
        case VppColumn:
            return tr("VPP");
        case MicroBatchColumn:
            return tr("mb");
        case MicroBatchesColumn:
            return tr("m");
        case ZeroColumn:
            return tr("ZeRO");
        case RecomputeColumn:
            return tr("Recompute");
        case ScheduleColumn:
            return tr("Schedule");
        case StepTimeColumn:
            return tr("Step");
        case TokensPerSecondColumn:
            return tr("Tokens/s");
        case TflopsColumn:
            return tr("TFLOP/s");
        case MfuColumn:
            return tr("MFU");
        case HfuColumn:
            return tr("HFU");
        case BubbleColumn:
            return tr("Bubble");
        case PeakMemoryColumn:
            return tr("Peak GB");
        case OomRiskColumn:
            return tr("OOM risk");
        case ReasonColumn:
            return tr("Infeasible because");
        case ColumnCount:
            break;
        }
    } else if (role == Qt::ToolTipRole) {
        switch (static_cast<Column>(section)) {
        case RankColumn:
            return tr("Rank among the feasible candidates (best first); infeasible ones are listed after them");
        case MicroBatchColumn:
            return tr("Micro-batch size: sequences per micro-batch per data-parallel rank");
        case MicroBatchesColumn:
            return tr("Micro-batches per step per data-parallel rank (gradient accumulation)");
        case StepTimeColumn:
            return tr("Predicted seconds per training step");
        case TflopsColumn:
            return tr("Model TFLOP/s per GPU (no recomputation counted)");
        case MfuColumn:
            return tr("Model FLOPs utilisation: model FLOPs / (step time x GPUs x dense peak)");
        case HfuColumn:
            return tr("Hardware FLOPs utilisation: MFU with recomputation counted");
        case BubbleColumn:
            return tr("Pipeline bubble: the share of the step the busiest pipeline rank waits inside the pipeline "
                      "((p-1)/(m+p-1) for 1F1B and GPipe, (p-1)/(vm+p-1) interleaved)");
        case PeakMemoryColumn:
            return tr("Largest per-GPU peak over the pipeline stages, GB (1e9 bytes)");
        case OomRiskColumn:
            return tr("fits: even the high end of the peak's predicted range is under the limit (with the headroom); "
                      "tight: the peak fits, its range's high end does not (ranked after every plan that fits); "
                      "likely: the peak is over the limit");
        default:
            break;
        }
    }
    return {};
}

QVariant CandidatesModel::data(const QModelIndex& index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const Evaluation* e = evaluation(index.row());
    if (!e)
        return {};
    const int column = index.column();
    switch (role) {
    case Qt::DisplayRole:
        return display(*e, index.row(), column);
    case SortRole:
        return sortValue(*e, index.row(), column);
    case FeasibleRole:
        return isFeasible(index.row());
    case CandidateRole:
        return index.row();
    case Qt::TextAlignmentRole:
        if (column == RecomputeColumn || column == ScheduleColumn || column == OomRiskColumn || column == ReasonColumn)
            return QVariant::fromValue(Qt::AlignLeft | Qt::AlignVCenter);
        return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
    case Qt::ForegroundRole:
        if (!isFeasible(index.row()))
            return QBrush(QPalette().color(QPalette::Disabled, QPalette::Text));
        if (column == OomRiskColumn && e->oom_risk == OomRisk::Tight)
            return QBrush(QColor(0xb3, 0x59, 0x00)); // amber: ranked after every plan that fits
        return {};
    case Qt::ToolTipRole: {
        if (column == OomRiskColumn && !e->stages.empty())
            return tr("Peak memory %1 GB, predicted range %2 – %3 GB of the %4 GB limit")
                .arg(format::gigabytes(e->peakMemory()), format::gigabytes(e->peak_memory_range.low),
                     format::gigabytes(e->peak_memory_range.high), format::gigabytes(e->memory_limit_bytes));
        if (column == StepTimeColumn && measured(*e) && e->step_time_range.high > 0)
            return tr("Step time %1, predicted range %2 – %3")
                .arg(format::seconds(e->step_time), format::seconds(e->step_time_range.low),
                     format::seconds(e->step_time_range.high));
        QString text = QString::fromStdString(e->config.describe());
        if (!e->reason.empty())
            text += QLatin1Char('\n') + tr("Infeasible: %1").arg(QString::fromStdString(e->reason));
        return text;
    }
    default:
        return {};
    }
}

QVariant CandidatesModel::display(const Evaluation& e, int row, int column) const
{
    const ParallelConfig& c = e.config;
    const QString none = QStringLiteral("—");
    switch (static_cast<Column>(column)) {
    case RankColumn:
        return isFeasible(row) ? QString::number(row + 1) : QStringLiteral("✗");
    case TpColumn:
        return intText(c.tp);
    case PpColumn:
        return intText(c.pp);
    case DpColumn:
        return intText(c.dp);
    case CpColumn:
        return intText(c.cp);
    case EpColumn:
        return intText(c.ep);
    case VppColumn:
        return intText(c.vpp);
    case MicroBatchColumn:
        return intText(c.micro_batch);
    case MicroBatchesColumn:
        return intText(c.num_microbatches);
    case ZeroColumn:
        return intText(c.zero_stage);
    case RecomputeColumn:
        return format::text(recomputeLabel(c));
    case ScheduleColumn:
        return c.pp > 1 ? format::text(scheduleName(c.schedule)) : none;
    case StepTimeColumn:
        return measured(e) ? format::seconds(e.step_time) : none;
    case TokensPerSecondColumn:
        return measured(e) ? format::count(e.tokens_per_s) : none;
    case TflopsColumn:
        return measured(e) ? QLocale::c().toString(e.tflops_per_gpu, 'f', 1) : none;
    case MfuColumn:
        return measured(e) ? format::percent(e.mfu) : none;
    case HfuColumn:
        return measured(e) ? format::percent(e.hfu) : none;
    case BubbleColumn:
        return measured(e) ? format::percent(e.bubble_ratio) : none;
    case PeakMemoryColumn:
        return e.stages.empty() ? none : format::gigabytes(e.peakMemory());
    case OomRiskColumn:
        return e.stages.empty() ? none : format::text(oomRiskName(e.oom_risk));
    case ReasonColumn:
        return QString::fromStdString(e.reason);
    case ColumnCount:
        break;
    }
    return {};
}

QVariant CandidatesModel::sortValue(const Evaluation& e, int row, int column) const
{
    const ParallelConfig& c = e.config;
    // Unmeasured candidates sort after every measured one in ascending order.
    const double missing = std::numeric_limits<double>::max();
    switch (static_cast<Column>(column)) {
    case RankColumn:
        return row;
    case TpColumn:
        return c.tp;
    case PpColumn:
        return c.pp;
    case DpColumn:
        return c.dp;
    case CpColumn:
        return c.cp;
    case EpColumn:
        return c.ep;
    case VppColumn:
        return c.vpp;
    case MicroBatchColumn:
        return c.micro_batch;
    case MicroBatchesColumn:
        return c.num_microbatches;
    case ZeroColumn:
        return c.zero_stage;
    case RecomputeColumn:
        return static_cast<int>(c.recompute);
    case ScheduleColumn:
        return c.pp > 1 ? static_cast<int>(c.schedule) : -1;
    case StepTimeColumn:
        return measured(e) ? e.step_time : missing;
    case TokensPerSecondColumn:
        return measured(e) ? e.tokens_per_s : 0.0;
    case TflopsColumn:
        return measured(e) ? e.tflops_per_gpu : 0.0;
    case MfuColumn:
        return measured(e) ? e.mfu : 0.0;
    case HfuColumn:
        return measured(e) ? e.hfu : 0.0;
    case BubbleColumn:
        return measured(e) ? e.bubble_ratio : missing;
    case PeakMemoryColumn:
        return e.stages.empty() ? missing : e.peakMemory();
    case OomRiskColumn: // fits < tight < likely < not costed
        return e.stages.empty() ? 3 : static_cast<int>(e.oom_risk);
    case ReasonColumn:
        return QString::fromStdString(e.reason);
    case ColumnCount:
        break;
    }
    return {};
}

} // namespace shardscape::ui
