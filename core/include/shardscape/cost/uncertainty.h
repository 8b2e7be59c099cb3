// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/cost/cost_model.h"

#include <cstdint>
#include <string>
#include <vector>

namespace shardscape {

/** Relative residuals (measured / predicted - 1) of one group of calibration rows: the central 80% of them. */
struct ResidualBand
{
    std::string key; ///< regime (step time) or framework (memory); "all" for every row
    int rows = 0;
    double low = 0; ///< 10th percentile
    double high = 0; ///< 90th percentile
};

/** The tables written by the calibration benches (the JSON files in resources/calibration, compiled in). */
struct ResidualTables
{
    std::vector<ResidualBand> step_time; ///< by calibrationRegime()
    std::vector<ResidualBand> peak_memory; ///< by framework name
};
const ResidualTables& calibrationResiduals();
/** Parses one table file; throws InputError naming what is wrong. */
std::vector<ResidualBand> parseResidualBands(const std::string& text, const std::string& origin);

/**
 * The regime whose calibration rows decide a configuration's step-time range: the mechanism most likely to
 * dominate its error, in this order: long context (cp > 1 or 32k+ tokens), sharded data parallel (ZeRO-3/FSDP),
 * pipeline (pp > 1), tensor parallel (tp > 1), plain data parallel.
 */
std::string calibrationRegime(const ParallelConfig& config, std::int64_t seqLen);

/** The band for `key`, or the "all" band when `key` has fewer than kMinRowsPerBand rows. */
const ResidualBand& bandFor(const std::vector<ResidualBand>& bands, const std::string& key);
constexpr int kMinRowsPerBand = 5;

/**
 * Fills the evaluation's step_time_range, peak_memory_range, regime and oom_risk. Fits: the peak's high end plus
 * the headroom is under the limit; tight: the predicted peak fits, that does not; likely: the peak is over.
 * `headroomBytes` < 0: no headroom beyond the range.
 */
void applyUncertainty(Evaluation& e, std::int64_t seqLen, double headroomBytes);

} // namespace shardscape
