// SPDX-License-Identifier: MIT
#pragma once

#include <QObject>
#include <QStringList>

class QMenu;
class QSettings;

namespace shardscape::ui {

/** The "Open Recent" menu: most recent first, at most kMaxCount, persisted in QSettings under "recentFiles". */
class RecentFiles : public QObject
{
    Q_OBJECT
public:
    static constexpr int kMaxCount = 10;

    explicit RecentFiles(QMenu* menu, QObject* parent = nullptr);

    void add(const QString& path);
    QStringList files() const { return m_files; }
    void load(const QSettings& settings);
    void save(QSettings& settings) const;

signals:
    void fileChosen(const QString& path);

private:
    void rebuildMenu();

    QMenu* m_menu;
    QStringList m_files;
};

} // namespace shardscape::ui
