// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/cost/cost_model.h"

#include <string>
#include <vector>

namespace shardscape {

/** "pipeline bubble +0.41 s, TP communication -0.12 s": where `other` spends its time differently from `chosen`. */
std::string timeDifference(const Evaluation& chosen, const Evaluation& other);

/**
 * Why `chosen` won: the runner-up and what made it slower, then the best plan of each simpler family
 * (no pipeline, no tensor parallelism, pure data parallelism, no recomputation, no ZeRO) with its cost or the
 * reason it does not fit. `alternatives` are evaluated (simulated) candidates of those families, any order.
 */
std::vector<std::string> explainChoice(const Evaluation& chosen, const Evaluation* runnerUp,
                                       const std::vector<Evaluation>& alternatives);

} // namespace shardscape
