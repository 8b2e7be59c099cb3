// SPDX-License-Identifier: MIT
#pragma once

#include "models/model_overview.h"

#include <QAbstractItemModel>

#include <memory>
#include <set>
#include <string>
#include <vector>

namespace shardscape::ui {

/**
 * The layer tree of the loaded model: planning layers, each with its modules (attention, MLP, norms) as children,
 * which show only their last name component (the full path is their tooltip and what the planner gets).
 * Two checkable columns feed the planner: "Pivot" (a pipeline stage may start at this layer:
 * PlannerConfig::pipeline_pivots) and "Recompute" (recompute this module's activations:
 * PlannerConfig::recompute_modules). Ticks are kept by name, so they survive reloading the same model.
 */
class LayersModel : public QAbstractItemModel
{
    Q_OBJECT
public:
    enum Column
    {
        NameColumn,
        PivotColumn,
        RecomputeColumn,
        ParamsColumn,
        FlopsColumn,
        ActivationColumn,
        KindColumn,
        ColumnCount
    };
    enum Role
    {
        SortRole = Qt::UserRole
    };

    explicit LayersModel(QObject* parent = nullptr);

    void setOverview(std::shared_ptr<const ModelOverview> overview);
    const std::shared_ptr<const ModelOverview>& overview() const { return m_overview; }

    /** Ticked pivots, in layer order (only names of the current model). */
    std::vector<std::string> pivots() const;
    /** Ticked recompute modules, in tree order (only names of the current model). */
    std::vector<std::string> recomputeModules() const;
    void setPivots(const std::vector<std::string>& names);
    void setRecomputeModules(const std::vector<std::string>& names);

    QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
    QModelIndex parent(const QModelIndex& child) const override;
    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;
    Qt::ItemFlags flags(const QModelIndex& index) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

signals:
    /** The user ticked or unticked a pivot or a recompute module. */
    void checksChanged();

private:
    const LayerNode* node(const QModelIndex& index) const;
    bool isLayer(const QModelIndex& index) const { return index.internalId() == 0; }

    std::shared_ptr<const ModelOverview> m_overview;
    std::set<std::string> m_pivots;
    std::set<std::string> m_recompute;
};

} // namespace shardscape::ui
