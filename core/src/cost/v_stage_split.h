// SPDX-License-Identifier: MIT
#pragma once

#include <vector>

namespace shardscape {

/**
 * The layer split of a V-placed pipeline (ZB-V, DualPipeV, and DualPipe's two directions): 2 x `lanes` contiguous
 * chunks where lane i runs chunk i and chunk 2 lanes - 1 - i, so lane 0 holds both ends of the model (the embedding
 * and the head). Minimises the busiest lane's time, then keeps each lane's two chunks as even as the layers allow
 * (each chunk is one stage of the schedule). `time` is per layer (forward + backward, one micro-batch). Empty when
 * there are fewer layers than chunks.
 */
std::vector<int> vShapedStageSplit(const std::vector<double>& time, int lanes);

} // namespace shardscape
