// SPDX-License-Identifier: MIT
// shardscape-profile's command line: a small hand parser (no CLI11: the GPU box may not have it).
#pragma once

#include "dtype.h"

#include <cstdint>
#include <string>
#include <vector>

namespace shardscape::profiler {

struct Options
{
    std::string outDir; ///< empty: ~/.cache/shardscape/<device slug>/
    bool matmul = false;
    bool memory = false;
    bool attention = false;
    bool collectives = false;
    bool phasesGiven = false; ///< any of --matmul --memory --attention --collectives was given
    bool quick = false;
    std::vector<DType> dtypes; ///< every dtype when --dtypes is not given
    bool dtypesGiven = false;
    int device = 0;
    int iters = 20; ///< timed repetitions; the median is recorded
    int warmup = 5;
    bool progress = false;
    bool help = false;
    bool version = false;
    std::string shapesFile; ///< --shapes: JSON list of {m, n, k, dtype}
    std::string modelConfig; ///< --model: HF config.json
    int tp = 1;
    std::int64_t seqLen = 2048;
    std::int64_t microBatch = 1;
};

/** Parses argv (argv[0] skipped). Throws BadInput naming the option and a fix. With no phase flag, all are set. */
Options parseOptions(const std::vector<std::string>& args);

/** The --help text. */
std::string usageText();

} // namespace shardscape::profiler
