// SPDX-License-Identifier: MIT
#include "time_axis.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace shardscape::ui {

TimeAxis::TimeAxis(double dataStart, double dataEnd, double widthPixels)
{
    setWidth(widthPixels);
    setDataRange(dataStart, dataEnd);
}

void TimeAxis::setDataRange(double dataStart, double dataEnd)
{
    if (!std::isfinite(dataStart))
        dataStart = 0;
    // An empty timeline still needs a non-empty range, or toX would divide by zero.
    if (!std::isfinite(dataEnd) || !(dataEnd > dataStart))
        dataEnd = dataStart + m_minimumSpan;
    m_dataStart = dataStart;
    m_dataEnd = dataEnd;
    m_start = dataStart;
    m_end = dataEnd;
}

void TimeAxis::setRange(double start, double end)
{
    if (!std::isfinite(start) || !std::isfinite(end))
        return;
    if (end < start)
        std::swap(start, end);
    const double dataSpan = m_dataEnd - m_dataStart;
    double span = end - start;
    // Within rounding of the data span counts as all of it, so zooming in and back out ends fitted.
    if (span >= dataSpan * (1 - 1e-12)) {
        m_start = m_dataStart;
        m_end = m_dataEnd;
        return;
    }
    const double minSpan = minimumSpan();
    if (span < minSpan) {
        // Widen around the middle so that zooming in on a point keeps that point in view.
        start = 0.5 * (start + end) - 0.5 * minSpan;
        span = minSpan;
    }
    m_start = std::clamp(start, m_dataStart, m_dataEnd - span);
    m_end = std::min(m_start + span, m_dataEnd);
}

void TimeAxis::setWidth(double widthPixels)
{
    m_width = std::isfinite(widthPixels) ? std::max(1.0, widthPixels) : 1.0;
}

void TimeAxis::setMinimumSpan(double seconds)
{
    if (!std::isfinite(seconds) || seconds <= 0)
        return;
    m_minimumSpan = seconds;
    setRange(m_start, m_end);
}

double TimeAxis::minimumSpan() const
{
    return std::min(m_minimumSpan, m_dataEnd - m_dataStart);
}

void TimeAxis::zoom(double factor, double anchorTime)
{
    if (!std::isfinite(factor) || factor <= 0 || !std::isfinite(anchorTime))
        return;
    const double oldSpan = span();
    const double newSpan = std::clamp(oldSpan / factor, minimumSpan(), m_dataEnd - m_dataStart);
    // Keep the anchor at the same fraction of the width, i.e. under the same pixel.
    const double fraction = (anchorTime - m_start) / oldSpan;
    const double start = anchorTime - fraction * newSpan;
    setRange(start, start + newSpan);
}

void TimeAxis::pan(double seconds)
{
    if (!std::isfinite(seconds))
        return;
    setRange(m_start + seconds, m_end + seconds);
}

} // namespace shardscape::ui
