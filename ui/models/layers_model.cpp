// SPDX-License-Identifier: MIT
#include "models/layers_model.h"

#include "models/format.h"

namespace shardscape::ui {

// internalId: 0 for a layer, 1 + the layer's row for one of its modules.

LayersModel::LayersModel(QObject* parent)
    : QAbstractItemModel(parent)
{
}

void LayersModel::setOverview(std::shared_ptr<const ModelOverview> overview)
{
    beginResetModel();
    // Ticks name another model's layers: a pivot at "model.layers.4" of one model is not a choice made for the next.
    // The same model again (a new sequence length) keeps them, and so do ticks restored before the first load.
    if (m_overview && overview && m_overview->spec != overview->spec) {
        m_pivots.clear();
        m_recompute.clear();
    }
    m_overview = std::move(overview);
    endResetModel();
}

std::vector<std::string> LayersModel::pivots() const
{
    std::vector<std::string> out;
    if (m_overview)
        for (const auto& layer : m_overview->layers)
            if (m_pivots.count(layer.name))
                out.push_back(layer.name);
    return out;
}

std::vector<std::string> LayersModel::recomputeModules() const
{
    std::vector<std::string> out;
    if (!m_overview)
        return out;
    for (const auto& layer : m_overview->layers) {
        if (m_recompute.count(layer.name))
            out.push_back(layer.name);
        for (const auto& child : layer.children)
            if (m_recompute.count(child.name))
                out.push_back(child.name);
    }
    return out;
}

void LayersModel::setPivots(const std::vector<std::string>& names)
{
    m_pivots = {names.begin(), names.end()};
    if (rowCount() > 0)
        emit dataChanged(index(0, PivotColumn), index(rowCount() - 1, PivotColumn), {Qt::CheckStateRole});
}

void LayersModel::setRecomputeModules(const std::vector<std::string>& names)
{
    // A reset, because children change too and dataChanged works per parent.
    beginResetModel();
    m_recompute = {names.begin(), names.end()};
    endResetModel();
}

const LayerNode* LayersModel::node(const QModelIndex& index) const
{
    if (!m_overview || !index.isValid())
        return nullptr;
    const auto row = static_cast<std::size_t>(index.row());
    if (isLayer(index))
        return row < m_overview->layers.size() ? &m_overview->layers[row] : nullptr;
    const auto layer = static_cast<std::size_t>(index.internalId() - 1);
    if (layer >= m_overview->layers.size() || row >= m_overview->layers[layer].children.size())
        return nullptr;
    return &m_overview->layers[layer].children[row];
}

QModelIndex LayersModel::index(int row, int column, const QModelIndex& parent) const
{
    if (!hasIndex(row, column, parent))
        return {};
    if (!parent.isValid())
        return createIndex(row, column, quintptr(0));
    if (!isLayer(parent))
        return {};
    return createIndex(row, column, quintptr(parent.row() + 1));
}

QModelIndex LayersModel::parent(const QModelIndex& child) const
{
    if (!child.isValid() || isLayer(child))
        return {};
    return createIndex(static_cast<int>(child.internalId() - 1), 0, quintptr(0));
}

int LayersModel::rowCount(const QModelIndex& parent) const
{
    if (!m_overview)
        return 0;
    if (!parent.isValid())
        return static_cast<int>(m_overview->layers.size());
    if (parent.column() != 0 || !isLayer(parent))
        return 0;
    const LayerNode* layer = node(parent);
    return layer ? static_cast<int>(layer->children.size()) : 0;
}

int LayersModel::columnCount(const QModelIndex&) const
{
    return ColumnCount;
}

Qt::ItemFlags LayersModel::flags(const QModelIndex& index) const
{
    if (!index.isValid())
        return Qt::NoItemFlags;
    Qt::ItemFlags f = Qt::ItemIsEnabled | Qt::ItemIsSelectable;
    if (index.column() == RecomputeColumn || (index.column() == PivotColumn && isLayer(index)))
        f |= Qt::ItemIsUserCheckable;
    return f;
}

QVariant LayersModel::data(const QModelIndex& index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid))
        return {};
    const LayerNode* n = node(index);
    if (!n)
        return {};
    const int column = index.column();
    if (role == Qt::DisplayRole) {
        switch (static_cast<Column>(column)) {
        case NameColumn: {
            if (isLayer(index))
                return QString::fromStdString(n->name);
            const auto& layer = m_overview->layers[static_cast<std::size_t>(index.internalId() - 1)].name;
            const bool under = n->name.size() > layer.size() + 1 && n->name.compare(0, layer.size(), layer) == 0;
            return QString::fromStdString(under ? n->name.substr(layer.size() + 1) : n->name);
        }
        case KindColumn:
            if (n->experts > 0)
                return tr("%1 experts, %2 per token").arg(n->experts).arg(n->experts_per_token);
            return QString::fromStdString(n->kind);
        case ParamsColumn:
            return format::count(n->params);
        case FlopsColumn:
            return format::count(n->flops_per_token);
        case ActivationColumn:
            return format::bytes(n->activation_bytes);
        case PivotColumn:
        case RecomputeColumn:
        case ColumnCount:
            return {};
        }
    } else if (role == SortRole) {
        switch (static_cast<Column>(column)) {
        case NameColumn:
            return index.row();
        case KindColumn:
            return QString::fromStdString(n->kind);
        case ParamsColumn:
            return n->params;
        case FlopsColumn:
            return n->flops_per_token;
        case ActivationColumn:
            return n->activation_bytes;
        case PivotColumn:
            return m_pivots.count(n->name) > 0;
        case RecomputeColumn:
            return m_recompute.count(n->name) > 0;
        case ColumnCount:
            return {};
        }
    } else if (role == Qt::CheckStateRole) {
        if (column == PivotColumn && isLayer(index))
            return m_pivots.count(n->name) ? Qt::Checked : Qt::Unchecked;
        if (column == RecomputeColumn)
            return m_recompute.count(n->name) ? Qt::Checked : Qt::Unchecked;
    } else if (role == Qt::TextAlignmentRole) {
        if (column == ParamsColumn || column == FlopsColumn || column == ActivationColumn)
            return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
    } else if (role == Qt::ToolTipRole) {
        QString text = tr("%1\n%2 parameters, %3 forward FLOPs per token, %4 of activations per sequence, %5 ops")
                           .arg(QString::fromStdString(n->name), format::count(n->params),
                                format::count(n->flops_per_token), format::bytes(n->activation_bytes))
                           .arg(n->ops);
        if (n->experts > 0)
            text += tr("\n%1 routed experts, each token visits %2: %3 of these parameters are active per token; "
                       "expert parallelism (EP) splits the experts over ranks")
                        .arg(n->experts)
                        .arg(n->experts_per_token)
                        .arg(format::count(n->params * n->experts_per_token / n->experts));
        return text;
    }
    return {};
}

bool LayersModel::setData(const QModelIndex& index, const QVariant& value, int role)
{
    if (role != Qt::CheckStateRole || !(flags(index) & Qt::ItemIsUserCheckable))
        return false;
    const LayerNode* n = node(index);
    if (!n)
        return false;
    auto& set = index.column() == PivotColumn ? m_pivots : m_recompute;
    if (value.value<Qt::CheckState>() == Qt::Checked)
        set.insert(n->name);
    else
        set.erase(n->name);
    emit dataChanged(index, index, {Qt::CheckStateRole});
    emit checksChanged();
    return true;
}

QVariant LayersModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal)
        return {};
    if (role == Qt::DisplayRole) {
        switch (static_cast<Column>(section)) {
        case NameColumn:
            return tr("Layer");
        case KindColumn:
            return tr("Kind");
        case ParamsColumn:
            return tr("Params");
        case FlopsColumn:
            return tr("FLOPs/token");
        case ActivationColumn:
            return tr("Activations");
        case PivotColumn:
            return tr("Pivot");
        case RecomputeColumn:
            return tr("Recomp.");
        case ColumnCount:
            break;
        }
    } else if (role == Qt::ToolTipRole) {
        switch (static_cast<Column>(section)) {
        case FlopsColumn:
            return tr("Forward FLOPs per token");
        case ActivationColumn:
            return tr("Bytes kept for backward per sequence (no parallelism, no recomputation)");
        case PivotColumn:
            return tr("Pipeline stages may start only at ticked layers (none ticked: anywhere)");
        case RecomputeColumn:
            return tr("Recompute the ticked modules' activations in backward (none ticked: the planner searches "
                      "none / selective / full)");
        default:
            break;
        }
    }
    return {};
}

} // namespace shardscape::ui
