// SPDX-License-Identifier: MIT
#pragma once

#include <QSortFilterProxyModel>

namespace shardscape::ui {

/**
 * Sorts the candidates by CandidatesModel::SortRole (numbers, not text) and filters them: by free text matched
 * against the configuration ("tp2 pp4 ... 1f1b") and the infeasibility reason, and optionally to feasible ones.
 */
class CandidatesProxy : public QSortFilterProxyModel
{
    Q_OBJECT
public:
    explicit CandidatesProxy(QObject* parent = nullptr);

    /** Every whitespace-separated word must appear (case-insensitive), e.g. "pp4 zb-h1". */
    void setFilterText(const QString& text);
    QString filterText() const { return m_words.join(QLatin1Char(' ')); }
    void setFeasibleOnly(bool feasibleOnly);
    bool feasibleOnly() const { return m_feasibleOnly; }

protected:
    bool filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const override;

private:
    QStringList m_words;
    bool m_feasibleOnly = false;
};

} // namespace shardscape::ui
