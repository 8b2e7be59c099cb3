// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/model/layers.h"

#include <vector>

namespace shardscape {

/** Automatic layers and how they were found. */
struct LayerConstruction
{
    std::vector<Layer> layers;
    /** The FLOP imbalance tolerance that was used: the requested one, doubled until a clustering existed. */
    double eps = 0;
    /** The objective: the most bytes of activations any layer receives from earlier layers. */
    double max_input_bytes = 0;
};

/**
 * Alpa's automatic layer construction (paper Eq. 6, alpa/pipeline_parallel/layer_construction.py): the ops,
 * in topological order, are cut into exactly `layerNum` contiguous layers minimising the largest amount of
 * activation data a layer receives from earlier ones (Layer::input_bytes), subject to every layer's FLOPs
 * (forward + backward) <= (1 + eps) x total / layerNum. Among the clusterings with that smallest maximum,
 * the one with the least FLOP variance wins. When no clustering meets the FLOP bound (one op heavier than
 * the bound), eps is doubled until one does. O(K x W x layerNum) for K ops and W ops per layer at most.
 * Layers are named after their ops' common module path ("transformer.h.3", "#2" appended when repeated).
 * Throws InputError when layerNum < 1 or > the number of ops, or eps < 0.
 */
LayerConstruction constructLayersDetailed(const ModelGraph& graph, int layerNum, double eps = 0.5);

/** constructLayersDetailed(...).layers. */
std::vector<Layer> constructLayers(const ModelGraph& graph, int layerNum, double eps = 0.5);

} // namespace shardscape
