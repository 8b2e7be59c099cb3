// SPDX-License-Identifier: MIT
#include "widgets/recent_files.h"

#include <QDir>
#include <QFileInfo>
#include <QMenu>
#include <QSettings>

namespace shardscape::ui {

RecentFiles::RecentFiles(QMenu* menu, QObject* parent)
    : QObject(parent)
    , m_menu(menu)
{
    rebuildMenu();
}

void RecentFiles::add(const QString& path)
{
    const QString absolute = QFileInfo(path).absoluteFilePath();
    m_files.removeAll(absolute);
    m_files.prepend(absolute);
    while (m_files.size() > kMaxCount)
        m_files.removeLast();
    rebuildMenu();
}

void RecentFiles::load(const QSettings& settings)
{
    m_files = settings.value(QStringLiteral("recentFiles")).toStringList();
    while (m_files.size() > kMaxCount)
        m_files.removeLast();
    rebuildMenu();
}

void RecentFiles::save(QSettings& settings) const
{
    settings.setValue(QStringLiteral("recentFiles"), m_files);
}

void RecentFiles::rebuildMenu()
{
    m_menu->clear();
    for (int i = 0; i < m_files.size(); ++i) {
        const QString& path = m_files[i];
        auto* action = m_menu->addAction(QStringLiteral("&%1 %2").arg(i + 1).arg(QDir::toNativeSeparators(path)));
        action->setEnabled(QFileInfo::exists(path));
        // Queued: the slot may rebuild this menu, deleting the action that is still emitting.
        connect(
            action, &QAction::triggered, this, [this, path] { emit fileChosen(path); }, Qt::QueuedConnection);
    }
    if (m_files.isEmpty()) {
        m_menu->addAction(tr("(no recent files)"))->setEnabled(false);
        return;
    }
    m_menu->addSeparator();
    connect(
        m_menu->addAction(tr("Clear List")), &QAction::triggered, this,
        [this] {
            m_files.clear();
            rebuildMenu();
        },
        Qt::QueuedConnection);
}

} // namespace shardscape::ui
