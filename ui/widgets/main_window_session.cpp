// SPDX-License-Identifier: MIT
// The user's session (model, cluster, settings, recent files, window layout) saved and restored.
#include "widgets/main_window.h"

#include "widgets/analysis_views.h"
#include "widgets/candidates_panel.h"
#include "widgets/cluster_panel.h"
#include "widgets/model_panel.h"
#include "widgets/planner_panel.h"
#include "widgets/profile_panel.h"
#include "widgets/recent_files.h"

#include <QSettings>
#include <QSplitter>

namespace shardscape::ui {

void MainWindow::saveSession() const
{
    // Written before every job starts, not only at exit: whatever a job does to the process, the user's model,
    // cluster, settings and recent files are on disk.
    if (m_options.use_settings && m_sessionReady)
        saveSettings();
}

void MainWindow::saveSettings() const
{
    QSettings settings;
    settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
    settings.setValue(QStringLiteral("window/state"), saveState());
    settings.setValue(QStringLiteral("window/centerSplitter"), m_centerSplitter->saveState());
    settings.setValue(QStringLiteral("window/inputsSplitter"), m_inputsSplitter->saveState());
    settings.setValue(QStringLiteral("window/views"), m_views->saveState());
    settings.setValue(QStringLiteral("window/lastDir"), m_lastDir);
    m_modelPanel->saveSettings(settings);
    m_clusterPanel->saveSettings(settings);
    m_plannerPanel->saveSettings(settings);
    m_candidates->saveSettings(settings);
    m_profilePanel->saveSettings(settings);
    m_recent->save(settings);
}

void MainWindow::restoreSettings()
{
    QSettings settings;
    restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray());
    if (restoreState(settings.value(QStringLiteral("window/state")).toByteArray()))
        m_defaultDocks = false;
    m_centerSplitter->restoreState(settings.value(QStringLiteral("window/centerSplitter")).toByteArray());
    m_inputsSplitter->restoreState(settings.value(QStringLiteral("window/inputsSplitter")).toByteArray());
    m_views->restoreState(settings.value(QStringLiteral("window/views")).toByteArray());
    m_lastDir = settings.value(QStringLiteral("window/lastDir")).toString();
    m_modelPanel->restoreSettings(settings);
    m_clusterPanel->restoreSettings(settings);
    m_plannerPanel->restoreSettings(settings);
    m_candidates->restoreSettings(settings);
    m_profilePanel->restoreSettings(settings);
    m_recent->load(settings);
}

} // namespace shardscape::ui
