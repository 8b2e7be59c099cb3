// SPDX-License-Identifier: MIT
#include "widgets/error_box.h"

#include <QMessageBox>

namespace shardscape::ui {

void showError(QWidget* parent, const QString& title, const QString& message)
{
    auto* box = new QMessageBox(QMessageBox::Warning, title, message, QMessageBox::Ok, parent);
    // InputError::message() is "cause (way out)": show the way out on its own line.
    if (message.endsWith(QLatin1Char(')'))) {
        const qsizetype open = message.lastIndexOf(QStringLiteral(" ("));
        if (open > 0) {
            box->setText(message.left(open));
            box->setInformativeText(message.mid(open + 2, message.size() - open - 3));
        }
    }
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->setWindowModality(Qt::WindowModal);
    box->open();
}

} // namespace shardscape::ui
