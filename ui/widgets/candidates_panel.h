// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/search/planner.h"

#include <QWidget>

#include <memory>

class QCheckBox;
class QLabel;
class QLineEdit;
class QSettings;
class QTableView;

namespace shardscape::ui {

class CandidatesModel;
class CandidatesProxy;

/** The candidates table with its filter box and "feasible only" switch; reports the current candidate. */
class CandidatesPanel : public QWidget
{
    Q_OBJECT
public:
    explicit CandidatesPanel(QWidget* parent = nullptr);

    void setResult(std::shared_ptr<const PlanResult> result);
    /** Makes the candidate of source row `row` current (clearing a filter that hides it). */
    void selectCandidate(int row);
    /** Source row of the current candidate, -1 when none. */
    int currentCandidate() const;
    void focusFilter();

    CandidatesModel* model() const { return m_model; }
    CandidatesProxy* proxy() const { return m_proxy; }
    QTableView* view() const { return m_view; }

    void saveSettings(QSettings& settings) const;
    void restoreSettings(const QSettings& settings);

signals:
    /** `row` is a source row of model(); -1 when the selection was cleared. */
    void currentCandidateChanged(int row);
    void pinRequested(int row);

private:
    void updateCount();

    CandidatesModel* m_model;
    CandidatesProxy* m_proxy;
    QLineEdit* m_filter;
    QCheckBox* m_feasibleOnly;
    QLabel* m_count;
    QTableView* m_view;
};

} // namespace shardscape::ui
