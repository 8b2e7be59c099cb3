// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/cost/serving.h"

namespace shardscape {

class JsonFields;

/** The most requests in flight a serving request may name (planner config, plan file, CLI). */
inline constexpr int kMaxServingConcurrency = 1'000'000;

/**
 * Readers of the serving keys that a planner config and a serving plan file spell alike. Each leaves `value` as it is
 * when its key is absent and fails through `fields` (naming the key, the accepted values) when it is malformed.
 */
void readConcurrency(JsonFields& fields, int& value); ///< "concurrency": requests in flight, or "max" (0)
void readWeightFormat(JsonFields& fields, WeightFormat& value); ///< "weight_dtype"
void readKvCacheDtype(JsonFields& fields, DType& value); ///< "kv_cache_dtype"
void readServingFramework(JsonFields& fields, ServingFramework& value); ///< "serving_framework"

} // namespace shardscape
