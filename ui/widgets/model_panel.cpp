// SPDX-License-Identifier: MIT
#include "widgets/model_panel.h"

#include "models/format.h"
#include "models/layers_model.h"

#include "shardscape/model/model_source.h"

#include <QComboBox>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QSettings>
#include <QToolButton>
#include <QTreeView>
#include <QVBoxLayout>

namespace shardscape::ui {

namespace {

std::vector<std::string> toStd(const QStringList& list)
{
    std::vector<std::string> out;
    for (const auto& s : list)
        out.push_back(s.toStdString());
    return out;
}

QStringList toQt(const std::vector<std::string>& list)
{
    QStringList out;
    for (const auto& s : list)
        out << QString::fromStdString(s);
    return out;
}

} // namespace

ModelPanel::ModelPanel(QWidget* parent)
    : QWidget(parent)
    , m_preset(new QComboBox(this))
    , m_summary(new QLabel(this))
    , m_tree(new QTreeView(this))
    , m_layers(new LayersModel(this))
{
    for (const auto& name : modelPresetNames()) {
        m_preset->addItem(QString::fromStdString(name), QString::fromStdString(name));
        m_presetNames << QString::fromStdString(name);
    }
    // The embedded default: a newcomer sees a complete picture at once.
    m_preset->setCurrentIndex(std::max(0, m_preset->findData(QStringLiteral("llama2-7b"))));
    m_preset->setToolTip(tr("A built-in model preset, or a file opened with File > Open Model (Ctrl+O)"));
    m_preset->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_preset->setMinimumContentsLength(12);

    auto* open = new QToolButton(this);
    open->setText(tr("Open…"));
    open->setToolTip(tr("Open an HF config.json, a native graph .json or an .onnx file (Ctrl+O)"));
    connect(open, &QToolButton::clicked, this, &ModelPanel::openRequested);

    auto* row = new QHBoxLayout;
    row->addWidget(m_preset, 1);
    row->addWidget(open);

    m_summary->setWordWrap(true);
    m_summary->setTextFormat(Qt::RichText); // the summary's bold name, and errors escaped for it
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);

    m_tree->setModel(m_layers);
    m_tree->setUniformRowHeights(true);
    m_tree->setAlternatingRowColors(true);
    m_tree->setRootIsDecorated(true);
    // Names and the two tick columns first: they are what the user works with; the numbers may scroll.
    m_tree->header()->setStretchLastSection(true);
    m_tree->header()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_tree->header()->setMinimumSectionSize(30);
    m_tree->setColumnHidden(LayersModel::KindColumn, true);

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addLayout(row);
    layout->addWidget(m_summary);
    layout->addWidget(m_tree, 1);

    connect(m_preset, &QComboBox::currentIndexChanged, this, [this] { emit modelSpecChanged(modelSpec()); });
}

QString ModelPanel::modelSpec() const
{
    return m_preset->currentData().toString();
}

void ModelPanel::setModelSpec(const QString& spec)
{
    int index = m_preset->findData(spec);
    if (index < 0) {
        const QFileInfo info(spec);
        m_preset->addItem(info.fileName() + QStringLiteral(" (") + info.absolutePath() + QLatin1Char(')'), spec);
        index = m_preset->count() - 1;
        m_preset->setItemData(index, spec, Qt::ToolTipRole);
    }
    m_preset->setCurrentIndex(index);
}

void ModelPanel::setOverview(std::shared_ptr<const ModelOverview> overview)
{
    if (!overview) {
        m_summary->clear();
        m_layers->setOverview(nullptr);
        return;
    }
    const ModelGraph& g = *overview->graph;
    m_summary->setText(tr("<b>%1</b>: %2 parameters, %3 forward FLOPs/token at seq_len %4, %5 layers, %6 ops")
                           .arg(QString::fromStdString(g.name).toHtmlEscaped(), format::count(overview->params),
                                format::count(overview->flops_per_token))
                           .arg(g.seq_len)
                           .arg(overview->layers.size())
                           .arg(g.ops().size()));
    m_summary->setStyleSheet({});
    m_layers->setOverview(std::move(overview));
}

void ModelPanel::setLoadError(const QString& message)
{
    m_summary->setText(QStringLiteral("<span style=\"color:#b00020\">%1</span>").arg(message.toHtmlEscaped()));
}

QString ModelPanel::summaryText() const
{
    return m_summary->text();
}

void ModelPanel::forgetModelSpec(const QString& spec, const QString& fallback)
{
    const int index = m_preset->findData(spec);
    const QSignalBlocker block(m_preset);
    // Presets stay (the preset list is fixed); a file that did not load leaves the list.
    if (index >= 0 && !m_presetNames.contains(spec))
        m_preset->removeItem(index);
    const int back = m_preset->findData(fallback);
    if (back >= 0)
        m_preset->setCurrentIndex(back);
}

void ModelPanel::saveSettings(QSettings& settings) const
{
    settings.setValue(QStringLiteral("model/spec"), modelSpec());
    settings.setValue(QStringLiteral("model/pivots"), toQt(m_layers->pivots()));
    settings.setValue(QStringLiteral("model/recompute"), toQt(m_layers->recomputeModules()));
}

void ModelPanel::restoreSettings(const QSettings& settings)
{
    m_layers->setPivots(toStd(settings.value(QStringLiteral("model/pivots")).toStringList()));
    m_layers->setRecomputeModules(toStd(settings.value(QStringLiteral("model/recompute")).toStringList()));
    const QString spec = settings.value(QStringLiteral("model/spec")).toString();
    if (!spec.isEmpty() && (m_preset->findData(spec) >= 0 || QFileInfo::exists(spec)))
        setModelSpec(spec);
}

} // namespace shardscape::ui
