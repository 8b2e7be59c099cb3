// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/search/planner.h"

#include <QAbstractTableModel>

#include <memory>

namespace shardscape::ui {

/**
 * The planner's candidates over one immutable PlanResult: the top-k (best first), then the infeasible ones with
 * their reason. DisplayRole is formatted text; SortRole the raw number (seconds, bytes, fractions) so that sorting
 * is numeric.
 */
class CandidatesModel : public QAbstractTableModel
{
    Q_OBJECT
public:
    enum Column
    {
        RankColumn,
        TpColumn,
        PpColumn,
        DpColumn,
        CpColumn,
        EpColumn,
        VppColumn,
        MicroBatchColumn,
        MicroBatchesColumn,
        ZeroColumn,
        RecomputeColumn,
        ScheduleColumn,
        StepTimeColumn,
        MfuColumn,
        PeakMemoryColumn,
        OomRiskColumn,
        TokensPerSecondColumn,
        TflopsColumn,
        HfuColumn,
        BubbleColumn,
        ReasonColumn,
        ColumnCount
    };
    enum Role
    {
        SortRole = Qt::UserRole,
        FeasibleRole, ///< bool
        CandidateRole ///< int: the row in the source model (stable across sorting and filtering)
    };

    explicit CandidatesModel(QObject* parent = nullptr);

    void setResult(std::shared_ptr<const PlanResult> result);
    void clear();
    const std::shared_ptr<const PlanResult>& result() const { return m_result; }

    /** The candidate of a source row; nullptr when out of range. */
    const Evaluation* evaluation(int row) const;
    bool isFeasible(int row) const;
    /** Source row of the best feasible candidate, -1 when none fits. */
    int bestRow() const;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    QVariant display(const Evaluation& e, int row, int column) const;
    QVariant sortValue(const Evaluation& e, int row, int column) const;

    std::shared_ptr<const PlanResult> m_result;
};

} // namespace shardscape::ui
