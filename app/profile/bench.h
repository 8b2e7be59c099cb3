// SPDX-License-Identifier: MIT
// What every benchmark phase gets: the device facts, the stream, the timing settings and the progress sink.
#pragma once

#include "cuda_util.h"

#include <cstdarg>
#include <cstdio>
#include <string_view>

namespace shardscape::profiler {

/** `progress <done> <total> <phase>` lines on stdout when enabled (for a GUI's QProcess). */
class Progress
{
public:
    Progress(bool enabled, int total)
        : m_enabled(enabled)
        , m_total(total)
    {
    }
    void addToTotal(int steps) { m_total += steps; }
    void step(std::string_view phase)
    {
        ++m_done;
        if (m_enabled) {
            std::printf("progress %d %d %.*s\n", m_done, m_total, static_cast<int>(phase.size()), phase.data());
            std::fflush(stdout);
        }
    }

private:
    bool m_enabled;
    int m_done = 0;
    int m_total;
};

/** A human-readable line on stderr (stdout carries only progress lines). */
inline void note(const char* format, ...) __attribute__((format(printf, 1, 2)));
inline void note(const char* format, ...)
{
    va_list args;
    va_start(args, format);
    std::vfprintf(stderr, format, args);
    va_end(args);
    std::fputc('\n', stderr);
}

struct BenchContext
{
    int device = 0;
    int computeCapability = 0; ///< major * 10 + minor
    std::size_t l2Bytes = 0;
    cudaStream_t stream = nullptr;
    TimingConfig timing;
    Progress* progress = nullptr;
};

} // namespace shardscape::profiler
