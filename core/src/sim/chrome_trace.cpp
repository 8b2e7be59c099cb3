// SPDX-License-Identifier: MIT
#include "shardscape/sim/chrome_trace.h"

#include "shardscape/support/strings.h"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace shardscape {

namespace {

constexpr const char* kStreamNames[] = {"compute", "p2p", "dp", "cp/ep comm"};
constexpr double kMicrosecondsPerSecond = 1e6; // trace timestamps are in microseconds

std::string eventName(const TimelineEvent& e)
{
    switch (e.kind) {
    case EventKind::Forward:
        return cat("F", e.microbatch, " s", e.stage);
    case EventKind::Backward:
        return cat("B", e.microbatch, " s", e.stage);
    case EventKind::BackwardInput:
        return cat("BI", e.microbatch, " s", e.stage);
    case EventKind::BackwardWeight:
        return cat("BW", e.microbatch, " s", e.stage);
    case EventKind::SendForward:
        return cat("send F", e.microbatch, " s", e.stage);
    case EventKind::SendBackward:
        return cat("send B", e.microbatch, " s", e.stage);
    case EventKind::GradSync:
        return cat("grad sync s", e.stage);
    case EventKind::OptimizerStep:
        return "optimizer";
    case EventKind::ExposedComm:
        return cat("CP/EP comm ", e.microbatch, " s", e.stage);
    }
    return "?";
}

nlohmann::json metadata(const char* what, int pid, int tid, const std::string& name)
{
    return {{"name", what}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", {{"name", name}}}};
}

} // namespace

nlohmann::json toChromeTrace(const SimulationResult& result, const std::string& title)
{
    // Every rank gets its process and threads even when it recorded nothing, so the rows line up.
    int ranks = int(result.busy.size());
    for (const auto& e : result.events)
        ranks = std::max(ranks, e.rank + 1);

    auto events = nlohmann::json::array();
    for (int r = 0; r < ranks; ++r) {
        events.push_back(metadata("process_name", r, 0, cat("PP rank ", r)));
        events.push_back(
            {{"name", "process_sort_index"}, {"ph", "M"}, {"pid", r}, {"tid", 0}, {"args", {{"sort_index", r}}}});
        for (int stream = 0; stream < 4; ++stream)
            events.push_back(metadata("thread_name", r, stream, kStreamNames[stream]));
    }
    for (const auto& e : result.events) {
        events.push_back({{"name", eventName(e)},
                          {"cat", eventKindName(e.kind)},
                          {"ph", "X"},
                          {"ts", e.start * kMicrosecondsPerSecond},
                          {"dur", e.duration * kMicrosecondsPerSecond},
                          {"pid", e.rank},
                          {"tid", int(e.stream)},
                          {"args", {{"stage", e.stage}, {"microbatch", e.microbatch}}}});
    }
    return {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}, {"otherData", {{"title", title}}}};
}

} // namespace shardscape
