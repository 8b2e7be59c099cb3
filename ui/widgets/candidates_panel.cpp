// SPDX-License-Identifier: MIT
#include "widgets/candidates_panel.h"

#include "models/candidates_model.h"
#include "models/candidates_proxy.h"

#include <QCheckBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QSettings>
#include <QTableView>
#include <QVBoxLayout>

namespace shardscape::ui {

CandidatesPanel::CandidatesPanel(QWidget* parent)
    : QWidget(parent)
    , m_model(new CandidatesModel(this))
    , m_proxy(new CandidatesProxy(this))
    , m_filter(new QLineEdit(this))
    , m_feasibleOnly(new QCheckBox(tr("Feasible only"), this))
    , m_count(new QLabel(this))
    , m_view(new QTableView(this))
{
    m_feasibleOnly->setToolTip(tr("Hide the candidates that do not fit the memory limit or cannot run"));
    m_proxy->setSourceModel(m_model);
    m_filter->setPlaceholderText(tr("Filter candidates, e.g. \"pp4 zb-h1\" or \"memory\" (Ctrl+F)"));
    m_filter->setClearButtonEnabled(true);

    m_view->setModel(m_proxy);
    m_view->setSortingEnabled(true);
    m_view->sortByColumn(CandidatesModel::RankColumn, Qt::AscendingOrder);
    m_view->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_view->setSelectionMode(QAbstractItemView::SingleSelection);
    m_view->setAlternatingRowColors(true);
    m_view->setWordWrap(false);
    m_view->verticalHeader()->hide();
    m_view->verticalHeader()->setDefaultSectionSize(m_view->fontMetrics().height() + 6);
    m_view->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_view->horizontalHeader()->setStretchLastSection(true);
    m_view->setContextMenuPolicy(Qt::CustomContextMenu);

    auto* row = new QHBoxLayout;
    row->addWidget(m_filter, 1);
    row->addWidget(m_feasibleOnly);
    row->addWidget(m_count);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addLayout(row);
    layout->addWidget(m_view, 1);

    connect(m_filter, &QLineEdit::textChanged, this, [this](const QString& text) {
        m_proxy->setFilterText(text);
        updateCount();
    });
    connect(m_feasibleOnly, &QCheckBox::toggled, this, [this](bool on) {
        m_proxy->setFeasibleOnly(on);
        updateCount();
    });
    connect(m_view->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
            [this] { emit currentCandidateChanged(currentCandidate()); });
    connect(m_view, &QTableView::customContextMenuRequested, this, [this](const QPoint& pos) {
        const QModelIndex index = m_view->indexAt(pos);
        if (!index.isValid())
            return;
        const int sourceRow = m_proxy->mapToSource(index).row();
        QMenu menu(this);
        connect(menu.addAction(tr("Pin for Comparison")), &QAction::triggered, this,
                [this, sourceRow] { emit pinRequested(sourceRow); });
        menu.exec(m_view->viewport()->mapToGlobal(pos));
    });
}

void CandidatesPanel::setResult(std::shared_ptr<const PlanResult> result)
{
    m_model->setResult(std::move(result));
    updateCount();
}

void CandidatesPanel::selectCandidate(int row)
{
    if (row < 0 || row >= m_model->rowCount()) {
        m_view->selectionModel()->clearCurrentIndex();
        m_view->clearSelection();
        return;
    }
    QModelIndex index = m_proxy->mapFromSource(m_model->index(row, 0));
    if (!index.isValid()) {
        m_filter->clear();
        m_feasibleOnly->setChecked(false);
        index = m_proxy->mapFromSource(m_model->index(row, 0));
    }
    m_view->selectionModel()->setCurrentIndex(index, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    m_view->scrollTo(index);
}

int CandidatesPanel::currentCandidate() const
{
    const QModelIndex current = m_view->selectionModel()->currentIndex();
    return current.isValid() ? m_proxy->mapToSource(current).row() : -1;
}

void CandidatesPanel::focusFilter()
{
    m_filter->setFocus(Qt::ShortcutFocusReason);
    m_filter->selectAll();
}

void CandidatesPanel::updateCount()
{
    const auto& result = m_model->result();
    if (!result) {
        m_count->clear();
        return;
    }
    m_count->setText(tr("%1 shown · %2 feasible of %3 candidates")
                         .arg(m_proxy->rowCount())
                         .arg(result->counts.candidates_feasible)
                         .arg(result->counts.candidates_total));
}

void CandidatesPanel::saveSettings(QSettings& settings) const
{
    settings.setValue(QStringLiteral("candidates/feasibleOnly"), m_feasibleOnly->isChecked());
}

void CandidatesPanel::restoreSettings(const QSettings& settings)
{
    m_feasibleOnly->setChecked(settings.value(QStringLiteral("candidates/feasibleOnly"), false).toBool());
}

} // namespace shardscape::ui
