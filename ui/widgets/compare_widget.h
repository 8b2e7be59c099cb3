// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/cost/cost_model.h"

#include <QWidget>

#include <array>
#include <optional>

class QLabel;
class QTableWidget;

namespace shardscape::ui {

/**
 * Two pinned plans side by side (A and B) with B's change against A: the configuration, the step's predictions and
 * where the busiest rank's time goes. Pinning fills A, then B; a third pin moves B to A.
 */
class CompareWidget : public QWidget
{
    Q_OBJECT
public:
    explicit CompareWidget(QWidget* parent = nullptr);

    void pin(const Evaluation& evaluation, const QString& label);
    void clearPins();
    int pinnedCount() const;
    /** The table (tests read it). */
    QTableWidget* table() const { return m_table; }

signals:
    void pinned();

private:
    void refresh();

    struct Slot
    {
        Evaluation evaluation;
        QString label;
    };
    std::array<std::optional<Slot>, 2> m_slots;
    QLabel* m_hint;
    QTableWidget* m_table;
};

} // namespace shardscape::ui
