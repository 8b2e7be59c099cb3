// SPDX-License-Identifier: MIT
#pragma once

#include <QString>

class QWidget;

namespace shardscape::ui {

/**
 * Shows an error in a window-modal message box that does not block the event loop (open(), not exec()), so that
 * background jobs, tests and --screenshot keep running. `message` is the core's "cause (way out)" text; the part
 * in the last parentheses becomes the box's informative text when present.
 */
void showError(QWidget* parent, const QString& title, const QString& message);

} // namespace shardscape::ui
