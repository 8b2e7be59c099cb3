// SPDX-License-Identifier: MIT
// What the planner config's reader and checks share (planner_config_read.cpp, planner_config_validate.cpp):
// the bounds, the error form and the framework hint. Private to core/src/search.
#pragma once

#include "shardscape/search/planner_config.h"
#include "shardscape/support/error.h"
#include "shardscape/support/strings.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace shardscape::planner_config {

// Bounds far beyond any real run; they exist so that a typo (an extra zero or two) is caught, not to limit users.
constexpr std::int64_t kMaxDevices = std::int64_t {1} << 20;
constexpr std::int64_t kMaxMicroBatch = 1'000'000;
constexpr std::int64_t kMaxUpdateFreq = std::int64_t {1} << 24;
constexpr std::int64_t kMaxTopk = 10'000;
constexpr std::int64_t kMaxThreads = 4096;
constexpr std::int64_t kMaxCp = 64;
constexpr double kMaxMemoryGB = 1e6;
constexpr double kMaxCoefficient = 1e6;
constexpr double kMaxBytes = 1e15;

constexpr std::string_view kAuto = "auto";
constexpr std::string_view kMax = "max";
constexpr std::int64_t kMaxServingTokens = 100'000'000;
constexpr const char* kScheduleHint = "use auto, gpipe, 1f1b, interleaved, zb-h1, zb-v, dualpipev or dualpipe";
constexpr const char* kMethodHint = "use auto, data, zero2, zero3, shard or pipeshard";
constexpr std::string_view kOtherFramework = "or choose another framework (\"generic\" runs everything)";

/** Throws InputError "ORIGIN: KEY: COMPLAINT (HINT)", the same shape JsonFields uses. */
[[noreturn]] inline void fail(std::string_view origin, std::string_view key, const std::string& complaint,
                              const std::string& hint = {})
{
    throw InputError(cat(origin, ": ", key, ": ", complaint), hint);
}

/** `text` without leading and trailing blanks. */
inline std::string trimmed(std::string_view text)
{
    const auto first = text.find_first_not_of(" \t\r\n");
    if (first == std::string_view::npos)
        return {};
    const auto last = text.find_last_not_of(" \t\r\n");
    return std::string(text.substr(first, last - first + 1));
}

/** "use generic, megatron-core, ..." with "did you mean 'x'? " in front when `given` is close to one. */
std::string frameworkHint(std::string_view given);

/** Every range and cross-field rule; `origin` prefixes the messages (a file name or "planner config"). */
void validateConfig(const PlannerConfig& c, std::string_view origin);

} // namespace shardscape::planner_config
