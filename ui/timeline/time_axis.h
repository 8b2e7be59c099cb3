// SPDX-License-Identifier: MIT
#pragma once

namespace shardscape::ui {

/**
 * Maps the visible time range of the timeline onto pixels (hotspot's TimeLineData): plain math, no
 * widget, so it can be tested on its own. Times are seconds, x is pixels from the left edge of the
 * plot area. The visible range always lies inside the data range and is never shorter than the
 * minimum span (nor longer than the data range).
 */
struct TimeAxis
{
public:
    /** Visible ranges never get narrower than this by default, seconds (1 ns: far below any kernel). */
    static constexpr double kDefaultMinimumSpan = 1e-9;

    TimeAxis() = default;
    TimeAxis(double dataStart, double dataEnd, double widthPixels);

    /** The range the view may show, seconds; the visible range is reset to all of it. */
    void setDataRange(double dataStart, double dataEnd);
    /** Sets the visible range, seconds; shifted and shortened to fit the data range, widened to the minimum span. */
    void setRange(double start, double end);
    /** The plot area's width, pixels (at least 1). */
    void setWidth(double widthPixels);
    /** The narrowest visible range, seconds; capped by the data range. */
    void setMinimumSpan(double seconds);

    /** Pixel of time `t` (seconds); may lie outside [0, width] for times outside the visible range. */
    double toX(double t) const { return (t - m_start) * (m_width / span()); }
    /** Time (seconds) under pixel `x`. */
    double toTime(double x) const { return m_start + x * (span() / m_width); }
    double secondsPerPixel() const { return span() / m_width; }

    /** Divides the visible span by `factor` (> 1 zooms in) keeping `anchorTime` at the same pixel. */
    void zoom(double factor, double anchorTime);
    /** Moves the visible range by `seconds` (positive: later), keeping its span. */
    void pan(double seconds);
    /** Shows the whole data range. */
    void zoomToFit() { setRange(m_dataStart, m_dataEnd); }
    bool isFit() const { return m_start <= m_dataStart && m_end >= m_dataEnd; }

    double start() const { return m_start; }
    double end() const { return m_end; }
    double span() const { return m_end - m_start; }
    double width() const { return m_width; }
    double dataStart() const { return m_dataStart; }
    double dataEnd() const { return m_dataEnd; }
    /** The minimum span in effect: the configured one, or the whole data range when that is shorter. */
    double minimumSpan() const;

private:
    double m_dataStart = 0;
    double m_dataEnd = 1;
    double m_start = 0;
    double m_end = 1;
    double m_width = 1;
    double m_minimumSpan = kDefaultMinimumSpan;
};

} // namespace shardscape::ui
