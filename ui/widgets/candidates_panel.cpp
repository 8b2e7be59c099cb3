// SPDX-License-Identifier: MIT
#include "widgets/candidates_panel.h"

#include "models/candidates_model.h"
#include "models/candidates_proxy.h"

#include <QCheckBox>
#include <QEvent>
#include <QFontMetrics>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QSettings>
#include <QTableView>
#include <QVBoxLayout>

#include <algorithm>

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
    // Widths are measured once per result (measureColumns) rather than by ResizeToContents on every layout pass,
    // which cost about 9 ms of the GUI thread per plan.
    m_view->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
    m_view->horizontalHeader()->setStretchLastSection(true);
    m_view->horizontalHeader()->setContextMenuPolicy(Qt::CustomContextMenu);
    m_view->horizontalHeader()->setToolTip(tr("Right-click to choose the columns"));
    m_view->viewport()->installEventFilter(this);
    connect(m_view->horizontalHeader(), &QHeaderView::customContextMenuRequested, this,
            &CandidatesPanel::showHeaderMenu);
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
    measureColumns();
    fitColumns();
}

bool CandidatesPanel::eventFilter(QObject* watched, QEvent* event)
{
    if (watched == m_view->viewport() && event->type() == QEvent::Resize)
        fitColumns();
    return QWidget::eventFilter(watched, event);
}

void CandidatesPanel::measureColumns()
{
    const int columns = CandidatesModel::ColumnCount;
    m_natural.assign(static_cast<std::size_t>(columns), 0);
    m_constant.assign(static_cast<std::size_t>(columns), true);
    const QFontMetrics cellFm(m_view->font());
    const QFontMetrics headerFm(m_view->horizontalHeader()->font());
    // Room for the sort arrow and the cell margins of the common styles.
    constexpr int kHeaderPadding = 28;
    constexpr int kCellPadding = 14;
    const int rows = m_model->rowCount();
    for (int c = 0; c < columns; ++c) {
        int width = headerFm.horizontalAdvance(m_model->headerData(c, Qt::Horizontal).toString()) + kHeaderPadding;
        QString first;
        for (int r = 0; r < rows; ++r) {
            const QString text = m_model->data(m_model->index(r, c)).toString();
            width = std::max(width, cellFm.horizontalAdvance(text) + kCellPadding);
            if (r == 0)
                first = text;
            else if (text != first)
                m_constant[static_cast<std::size_t>(c)] = false;
        }
        m_natural[static_cast<std::size_t>(c)] = width;
    }
    // The rank differs by definition; a single row has nothing to compare.
    m_constant[CandidatesModel::RankColumn] = false;
    if (rows < 2)
        std::fill(m_constant.begin(), m_constant.end(), false);
}

void CandidatesPanel::fitColumns()
{
    if (m_natural.empty())
        return;
    const int columns = CandidatesModel::ColumnCount;
    std::vector<bool> hidden(static_cast<std::size_t>(columns), false);
    for (int c : m_userHidden)
        if (c >= 0 && c < columns)
            hidden[static_cast<std::size_t>(c)] = true;
    // The reason column stretches over what is left and elides its text; it counts with its header only.
    const auto width = [&](int c) {
        return c == CandidatesModel::ReasonColumn
            ? QFontMetrics(m_view->horizontalHeader()->font())
                    .horizontalAdvance(m_model->headerData(c, Qt::Horizontal).toString())
                + 28
            : m_natural[static_cast<std::size_t>(c)];
    };
    const auto total = [&] {
        int sum = 0;
        for (int c = 0; c < columns; ++c)
            if (!hidden[static_cast<std::size_t>(c)])
                sum += width(c);
        return sum;
    };
    // What goes first when there is no room: columns that tell nothing apart, then the derived figures.
    std::vector<int> order;
    for (int c = 0; c < columns; ++c)
        if (m_constant[static_cast<std::size_t>(c)])
            order.push_back(c);
    // Then the rest of the configuration, longest names first: every cell's tool tip spells the whole
    // configuration, and the timeline's header the selected one.
    for (int c : {CandidatesModel::TflopsColumn, CandidatesModel::HfuColumn, CandidatesModel::TokensPerSecondColumn,
                  CandidatesModel::BubbleColumn, CandidatesModel::ScheduleColumn, CandidatesModel::RecomputeColumn,
                  CandidatesModel::ZeroColumn, CandidatesModel::VppColumn, CandidatesModel::MicroBatchesColumn,
                  CandidatesModel::MicroBatchColumn, CandidatesModel::CpColumn, CandidatesModel::EpColumn})
        if (!m_constant[static_cast<std::size_t>(c)])
            order.push_back(c);
    const int available = m_view->viewport()->width();
    m_autoHidden = 0;
    for (int c : order) {
        if (total() <= available)
            break;
        if (hidden[static_cast<std::size_t>(c)] || m_userShown.contains(c))
            continue;
        hidden[static_cast<std::size_t>(c)] = true;
        ++m_autoHidden;
    }
    for (int c = 0; c < columns; ++c) {
        m_view->setColumnHidden(c, hidden[static_cast<std::size_t>(c)]);
        if (!hidden[static_cast<std::size_t>(c)] && c != CandidatesModel::ReasonColumn)
            m_view->setColumnWidth(c, m_natural[static_cast<std::size_t>(c)]);
    }
    updateCount();
}

void CandidatesPanel::setColumnChoice(int column, bool shown)
{
    (shown ? m_userShown : m_userHidden).insert(column);
    (shown ? m_userHidden : m_userShown).remove(column);
    fitColumns();
}

void CandidatesPanel::resetColumnChoices()
{
    m_userShown.clear();
    m_userHidden.clear();
    fitColumns();
}

void CandidatesPanel::showHeaderMenu(const QPoint& pos)
{
    QMenu menu(this);
    for (int c = 0; c < CandidatesModel::ColumnCount; ++c) {
        if (c == CandidatesModel::RankColumn)
            continue;
        QAction* action = menu.addAction(m_model->headerData(c, Qt::Horizontal).toString());
        action->setCheckable(true);
        action->setChecked(!m_view->isColumnHidden(c));
        connect(action, &QAction::toggled, this, [this, c](bool on) { setColumnChoice(c, on); });
    }
    menu.addSeparator();
    connect(menu.addAction(tr("Fit Columns to the Width")), &QAction::triggered, this,
            &CandidatesPanel::resetColumnChoices);
    menu.exec(m_view->horizontalHeader()->viewport()->mapToGlobal(pos));
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
    QString text = tr("%1 shown · %2 feasible of %3 candidates")
                       .arg(m_proxy->rowCount())
                       .arg(result->counts.candidates_feasible)
                       .arg(result->counts.candidates_total);
    if (m_autoHidden > 0)
        text += m_autoHidden == 1 ? tr(" · 1 column hidden") : tr(" · %1 columns hidden").arg(m_autoHidden);
    m_count->setText(text);
    m_count->setToolTip(m_autoHidden > 0 ? tr("Columns that did not fit are hidden; right-click the header to choose")
                                         : QString());
}

namespace {

QVariantList toList(const QSet<int>& columns)
{
    QVariantList list;
    for (int c : columns)
        list << c;
    return list;
}

QSet<int> toSet(const QVariant& value)
{
    QSet<int> columns;
    for (const QVariant& v : value.toList())
        if (v.toInt() >= 0 && v.toInt() < CandidatesModel::ColumnCount)
            columns.insert(v.toInt());
    return columns;
}

} // namespace

void CandidatesPanel::saveSettings(QSettings& settings) const
{
    settings.setValue(QStringLiteral("candidates/feasibleOnly"), m_feasibleOnly->isChecked());
    settings.setValue(QStringLiteral("candidates/shownColumns"), toList(m_userShown));
    settings.setValue(QStringLiteral("candidates/hiddenColumns"), toList(m_userHidden));
}

void CandidatesPanel::restoreSettings(const QSettings& settings)
{
    m_feasibleOnly->setChecked(settings.value(QStringLiteral("candidates/feasibleOnly"), false).toBool());
    m_userShown = toSet(settings.value(QStringLiteral("candidates/shownColumns")));
    m_userHidden = toSet(settings.value(QStringLiteral("candidates/hiddenColumns")));
    fitColumns();
}

} // namespace shardscape::ui
