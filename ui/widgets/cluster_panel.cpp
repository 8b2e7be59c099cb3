// SPDX-License-Identifier: MIT
#include "widgets/cluster_panel.h"

#include "jobs/plan_request.h"
#include "models/format.h"

#include "shardscape/hardware/cluster.h"
#include "shardscape/support/error.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QLabel>
#include <QSettings>
#include <QSpinBox>

namespace shardscape::ui {

ClusterPanel::ClusterPanel(QWidget* parent)
    : QWidget(parent)
    , m_device(new QComboBox(this))
    , m_nodes(new QSpinBox(this))
    , m_gpusPerNode(new QSpinBox(this))
    , m_memoryGb(new QDoubleSpinBox(this))
    , m_info(new QLabel(this))
{
    for (const auto& name : devicePresetNames())
        m_device->addItem(QString::fromStdString(name), QString::fromStdString(name));
    m_device->setCurrentIndex(std::max(0, m_device->findData(QStringLiteral("h100-sxm"))));
    m_device->setToolTip(tr("The GPU: a device preset (datasheet peak rates, memory and links; shardscape-cli "
                            "clusters lists them), or the cluster .json given with --cluster"));
    m_nodes->setRange(1, 100000);
    m_nodes->setToolTip(tr("Number of nodes"));
    m_gpusPerNode->setRange(1, 1024);
    m_gpusPerNode->setValue(8);
    m_gpusPerNode->setToolTip(tr("GPUs in each node: they share the fast intra-node link (NVLink); tensor "
                                 "parallelism stays inside a node"));
    m_memoryGb->setRange(0, 1e6);
    m_memoryGb->setDecimals(1);
    m_memoryGb->setSuffix(tr(" GB"));
    m_memoryGb->setSpecialValueText(tr("device capacity"));
    m_memoryGb->setToolTip(tr("Memory limit per GPU in GB (1e9 bytes); the lowest value means the device's capacity"));
    m_info->setWordWrap(true);

    auto* form = new QFormLayout(this);
    form->setContentsMargins(0, 0, 0, 0);
    form->addRow(tr("&Device:"), m_device);
    form->addRow(tr("&Nodes:"), m_nodes);
    form->addRow(tr("&GPUs per node:"), m_gpusPerNode);
    form->addRow(tr("&Memory limit:"), m_memoryGb);
    form->addRow(m_info);

    connect(m_device, &QComboBox::currentIndexChanged, this, [this] {
        updateDeviceInfo();
        emit changed();
    });
    for (QSpinBox* spin : {m_nodes, m_gpusPerNode})
        connect(spin, &QSpinBox::valueChanged, this, [this] {
            updateDeviceInfo();
            emit changed();
        });
    connect(m_memoryGb, &QDoubleSpinBox::valueChanged, this, &ClusterPanel::changed);
    updateDeviceInfo();
}

void ClusterPanel::applyTo(PlanRequest& request) const
{
    request.cluster_spec = clusterSpec().toStdString();
    request.nodes = m_nodes->value();
    request.gpus_per_node = m_gpusPerNode->value();
    request.config.memory_constraint = m_memoryGb->value();
}

QString ClusterPanel::clusterSpec() const
{
    return m_device->currentData().toString();
}

void ClusterPanel::setClusterSpec(const QString& spec)
{
    int index = m_device->findData(spec);
    if (index < 0) {
        m_device->addItem(QFileInfo(spec).fileName(), spec);
        index = m_device->count() - 1;
        m_device->setItemData(index, spec, Qt::ToolTipRole);
    }
    m_device->setCurrentIndex(index);
}

void ClusterPanel::setNodes(int nodes)
{
    m_nodes->setValue(nodes);
}

void ClusterPanel::setGpusPerNode(int gpus)
{
    m_gpusPerNode->setValue(gpus);
}

QString ClusterPanel::deviceInfo() const
{
    return m_info->text();
}

void ClusterPanel::updateDeviceInfo()
{
    // A fabric measured below its line rate is costed at the measured rate: say so where the links are named.
    const auto link = [this](const Link& l) {
        const QString kind = QString::fromStdString(l.kind);
        return l.efficiency > 0
            ? tr("%1 (at a measured %2% of its line rate)").arg(kind).arg(100 * l.efficiency, 0, 'f', 1)
            : kind;
    };
    try {
        const Cluster cluster = loadCluster(clusterSpec().toStdString(), m_nodes->value(), m_gpusPerNode->value());
        const DeviceSpec& d = cluster.device;
        m_info->setText(tr("%1 of %2: %3 HBM, %4 TFLOP/s dense BF16, %5 within a node, %6 between nodes")
                            .arg(cluster.worldSize() == 1 ? tr("1 GPU") : tr("%1 GPUs").arg(cluster.worldSize()))
                            .arg(QString::fromStdString(d.display_name), format::bytes(d.memory_bytes))
                            .arg(d.peak(DType::BF16) / 1e12, 0, 'f', 0)
                            .arg(link(d.intra_node), link(d.inter_node)));
        m_info->setStyleSheet({});
    } catch (const InputError& e) {
        m_info->setText(QString::fromStdString(e.message()));
        m_info->setStyleSheet(QStringLiteral("color: #b00020"));
    }
}

void ClusterPanel::saveSettings(QSettings& settings) const
{
    settings.setValue(QStringLiteral("cluster/spec"), clusterSpec());
    settings.setValue(QStringLiteral("cluster/nodes"), m_nodes->value());
    settings.setValue(QStringLiteral("cluster/gpusPerNode"), m_gpusPerNode->value());
    settings.setValue(QStringLiteral("cluster/memoryGb"), m_memoryGb->value());
}

void ClusterPanel::restoreSettings(const QSettings& settings)
{
    const QString spec = settings.value(QStringLiteral("cluster/spec")).toString();
    if (!spec.isEmpty() && (m_device->findData(spec) >= 0 || QFileInfo::exists(spec)))
        setClusterSpec(spec);
    m_nodes->setValue(settings.value(QStringLiteral("cluster/nodes"), m_nodes->value()).toInt());
    m_gpusPerNode->setValue(settings.value(QStringLiteral("cluster/gpusPerNode"), m_gpusPerNode->value()).toInt());
    m_memoryGb->setValue(settings.value(QStringLiteral("cluster/memoryGb"), m_memoryGb->value()).toDouble());
}

} // namespace shardscape::ui
