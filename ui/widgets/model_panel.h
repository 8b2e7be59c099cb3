// SPDX-License-Identifier: MIT
#pragma once

#include "models/model_overview.h"

#include <QWidget>

#include <memory>

class QComboBox;
class QLabel;
class QSettings;
class QTreeView;

namespace shardscape::ui {

class LayersModel;

/**
 * The model the plan is for: a preset or a file (HF config.json, native graph .json, .onnx), a one-line summary and
 * the layer tree where the user ticks pipeline pivots and recompute modules.
 */
class ModelPanel : public QWidget
{
    Q_OBJECT
public:
    explicit ModelPanel(QWidget* parent = nullptr);

    /** A preset name or an absolute file path. */
    QString modelSpec() const;
    /** Selects a preset or adds (and selects) a file entry; emits modelSpecChanged when it changed. */
    void setModelSpec(const QString& spec);
    /** Shows the loaded model (summary and tree); nullptr clears them. */
    void setOverview(std::shared_ptr<const ModelOverview> overview);
    /** Shows that loading failed (the tree keeps the last good model). */
    void setLoadError(const QString& message);
    /** A file spec that failed to load leaves the model list; `fallback` (the model shown before) is selected again
        without a modelSpecChanged. */
    void forgetModelSpec(const QString& spec, const QString& fallback);
    /** The summary line under the list (rich text). */
    QString summaryText() const;

    LayersModel* layersModel() const { return m_layers; }
    QTreeView* layerTree() const { return m_tree; }

    void saveSettings(QSettings& settings) const;
    void restoreSettings(const QSettings& settings);

signals:
    void modelSpecChanged(const QString& spec);
    void openRequested();

private:
    QStringList m_presetNames;
    QComboBox* m_preset;
    QLabel* m_summary;
    QTreeView* m_tree;
    LayersModel* m_layers;
};

} // namespace shardscape::ui
