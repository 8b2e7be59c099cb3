// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <string>

namespace shardscape {

/** Receives progress from long core calls. Implementations must be thread-safe: search threads call it. */
class ProgressSink
{
public:
    virtual ~ProgressSink() = default;
    /** `phase` names the step ("enumerating", "costing", "selecting"); done <= total. */
    virtual void progress(const std::string& phase, std::uint64_t done, std::uint64_t total) = 0;
    /** One human-readable log line (the planner's MoAI-style lines). */
    virtual void log(const std::string& line) = 0;
};

/** A sink that ignores everything. */
class NullProgress final : public ProgressSink
{
public:
    void progress(const std::string&, std::uint64_t, std::uint64_t) override { }
    void log(const std::string&) override { }
};

} // namespace shardscape
