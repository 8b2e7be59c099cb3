// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/sim/simulator.h"

#include <nlohmann/json_fwd.hpp>
#include <string>

namespace shardscape {

/**
 * The timeline as Chrome Trace Event JSON ({"traceEvents": [...], "displayTimeUnit": "ms"}): one process
 * per pipeline rank, one thread per stream, complete ("X") events in microseconds, names like "F3 s1"
 * and args {stage, microbatch}. Opens in Perfetto and chrome://tracing.
 */
nlohmann::json toChromeTrace(const SimulationResult& result, const std::string& title);

} // namespace shardscape
