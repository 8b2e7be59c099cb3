// SPDX-License-Identifier: MIT
#pragma once

#include <QWidget>

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QSettings;
class QSpinBox;

namespace shardscape::ui {

struct PlanRequest;

/** The cluster: a device preset (or a cluster .json), nodes x GPUs per node, and the per-device memory limit. */
class ClusterPanel : public QWidget
{
    Q_OBJECT
public:
    explicit ClusterPanel(QWidget* parent = nullptr);

    /** Writes cluster_spec, nodes, gpus_per_node and config.memory_constraint. */
    void applyTo(PlanRequest& request) const;

    /** A device preset name or a cluster file; files are added to the list. */
    void setClusterSpec(const QString& spec);
    QString clusterSpec() const;
    void setNodes(int nodes);
    void setGpusPerNode(int gpus);
    /** The line under the selector: the device, its links, and a link's measured efficiency where the file states
        one. */
    QString deviceInfo() const;

    void saveSettings(QSettings& settings) const;
    void restoreSettings(const QSettings& settings);

signals:
    void changed();

private:
    void updateDeviceInfo();

    QComboBox* m_device;
    QSpinBox* m_nodes;
    QSpinBox* m_gpusPerNode;
    QDoubleSpinBox* m_memoryGb;
    QLabel* m_info;
};

} // namespace shardscape::ui
