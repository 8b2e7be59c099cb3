// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/search/planner.h"

#include <QSet>
#include <QWidget>

#include <memory>
#include <vector>

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

    /**
     * Columns the user chose from the header's menu: always shown, or always hidden. The others are shown while
     * the table has room; when it has not, columns whose value is the same in every row go first, then TFLOP/s,
     * HFU, tokens/s and the bubble, then the rest of the configuration (each cell's tool tip spells it out), so that
     * TP, PP, DP, step time, MFU, peak memory and OOM risk are on screen without sideways scrolling.
     */
    void setColumnChoice(int column, bool shown);
    /** Forgets the user's column choices: back to the automatic fit. */
    void resetColumnChoices();
    /** Columns hidden now because the table had no room for them (not the user's choice). */
    int autoHiddenColumns() const { return m_autoHidden; }

signals:
    /** `row` is a source row of model(); -1 when the selection was cleared. */
    void currentCandidateChanged(int row);
    void pinRequested(int row);

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    void updateCount();
    /** Measures each column's text once per result (cheaper than the header's per-layout ResizeToContents). */
    void measureColumns();
    /** Shows and hides columns so that the visible ones fit the viewport's width. */
    void fitColumns();
    void showHeaderMenu(const QPoint& pos);

    CandidatesModel* m_model;
    CandidatesProxy* m_proxy;
    QLineEdit* m_filter;
    QCheckBox* m_feasibleOnly;
    QLabel* m_count;
    QTableView* m_view;
    std::vector<int> m_natural; ///< each column's width for its header and cells, pixels
    std::vector<bool> m_constant; ///< the column reads the same in every row
    QSet<int> m_userShown;
    QSet<int> m_userHidden;
    int m_autoHidden = 0;
};

} // namespace shardscape::ui
