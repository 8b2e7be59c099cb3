// SPDX-License-Identifier: MIT
#include "models/candidates_proxy.h"

#include "models/candidates_model.h"

namespace shardscape::ui {

CandidatesProxy::CandidatesProxy(QObject* parent)
    : QSortFilterProxyModel(parent)
{
    setSortRole(CandidatesModel::SortRole);
    setDynamicSortFilter(true);
}

void CandidatesProxy::setFilterText(const QString& text)
{
    const QStringList words = text.simplified().toLower().split(QLatin1Char(' '), Qt::SkipEmptyParts);
    if (words == m_words)
        return;
    m_words = words;
    invalidateFilter();
}

void CandidatesProxy::setFeasibleOnly(bool feasibleOnly)
{
    if (feasibleOnly == m_feasibleOnly)
        return;
    m_feasibleOnly = feasibleOnly;
    invalidateFilter();
}

bool CandidatesProxy::filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const
{
    const auto* model = qobject_cast<const CandidatesModel*>(sourceModel());
    if (!model || sourceParent.isValid())
        return true;
    if (m_feasibleOnly && !model->isFeasible(sourceRow))
        return false;
    if (m_words.isEmpty())
        return true;
    const Evaluation* e = model->evaluation(sourceRow);
    if (!e)
        return false;
    const QString haystack = QString::fromStdString(e->config.describe() + ' ' + e->reason).toLower();
    for (const QString& word : m_words)
        if (!haystack.contains(word))
            return false;
    return true;
}

} // namespace shardscape::ui
