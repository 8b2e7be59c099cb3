// SPDX-License-Identifier: MIT
#pragma once

#include "time_axis.h"

#include "shardscape/sim/simulator.h"

#include <QAbstractScrollArea>
#include <QString>

#include <array>
#include <memory>
#include <vector>

class QPainter;

namespace shardscape::ui {

/**
 * The pipeline timeline: a custom-painted Gantt chart of one simulated training step. One row per
 * pipeline rank ("rank r") with a sub-lane per stream in use (compute, p2p sends, data-parallel
 * gradient sync); idle time on the compute lane (the pipeline bubbles) is hatched.
 *
 * Painting stays cheap however many events there are: each lane keeps its events sorted by start,
 * the visible ones are found with std::lower_bound, and runs of events narrower than 3 px are folded
 * into one mark with a count (Tracy's zone folding), so a paint touches at most a few marks per pixel.
 *
 * Mouse: the wheel zooms around the cursor (Shift+wheel scrolls the rows), dragging pans, a double
 * click zooms to fit; hovering an event shows its kind, stage, micro-batch, start and duration.
 * Keys: +/- zoom, Left/Right pan, Home or 0 fits.
 */
class TimelineView : public QAbstractScrollArea
{
    Q_OBJECT

public:
    explicit TimelineView(QWidget* parent = nullptr);
    ~TimelineView() override;

    /** Shows `sim`'s events (nothing when null or without events) and fits them; `title` heads the view. */
    void setTimeline(std::shared_ptr<const SimulationResult> sim, QString title);
    /** Shows nothing. */
    void clear();

    std::shared_ptr<const SimulationResult> timeline() const { return m_sim; }
    QString title() const { return m_title; }
    /** Events on display (all of the simulation's). */
    int eventCount() const;
    /** Boxes and folded marks drawn by the last paint (for tests and the benchmark). */
    int paintedItemCount() const { return m_paintedItems; }
    /** Folded marks among them. */
    int paintedFoldCount() const { return m_paintedFolds; }

    void zoomToFit();
    /** Shows [start, end] seconds (clamped to the data). */
    void setVisibleRange(double start, double end);
    const TimeAxis& axis() const { return m_axis; }

    /** Left edge of the time axis in viewport pixels: viewport x = plotLeft() + axis().toX(t). */
    int plotLeft() const;
    /** Top of the first lane in viewport pixels (below the title, legend and ruler). */
    int lanesTop() const;

    /** Raster exports are at least this wide (a slide), whatever the widget's width. */
    static constexpr int kExportMinWidth = 1600;
    /** Writes every rank over the shown time range: SVG (vector) for ".svg", else a raster image (PNG...) at least
        kExportMinWidth wide, at twice its pixels. */
    bool exportImage(const QString& path);
    /** Height of all rows (what an export holds), pixels. */
    int contentHeight() const { return m_contentHeight; }

    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

Q_SIGNALS:
    /** The visible time range changed (zoom, pan, fit, new data), seconds. */
    void visibleRangeChanged(double start, double end);

protected:
    void paintEvent(QPaintEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;
    void wheelEvent(QWheelEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mouseReleaseEvent(QMouseEvent* event) override;
    void mouseDoubleClickEvent(QMouseEvent* event) override;
    void keyPressEvent(QKeyEvent* event) override;
    bool viewportEvent(QEvent* event) override;
    void scrollContentsBy(int dx, int dy) override;
    void changeEvent(QEvent* event) override;

private:
    /** One row of boxes: one stream of one rank. */
    struct Lane
    {
        int rank = 0;
        int stream = 0;
        int top = 0; ///< pixels from the top of the lanes area (before vertical scrolling)
        int height = 0;
        std::vector<TimelineEvent> events; ///< sorted by start
        /** Running maximum of event ends, seconds: lower_bound on it finds the first event reaching t. */
        std::vector<double> maxEnd;
    };
    struct LegendItem
    {
        QString text;
        int kind = -1; ///< EventKind, or -1 for the idle swatch, -2 for the folded swatch
        QRect swatch; ///< relative to the header's top-left
        QPoint textPos;
    };
    struct Hit
    {
        const Lane* lane = nullptr;
        const TimelineEvent* event = nullptr;
        int nearby = 0; ///< events within the hit tolerance (more than one: a folded mark)
    };

    void rebuildLanes();
    void layoutHeader(int viewportWidth);
    void relayout();
    void updateScrollBars();
    void applyHorizontalScroll(int value);
    void notifyRangeChanged();
    void paintContents(QPainter& painter, QSize size, int scrollY);
    void paintHeader(QPainter& painter, int width);
    void paintRuler(QPainter& painter, int width, int top);
    void paintLane(QPainter& painter, const Lane& lane, int y, int plotRight);
    Hit hitTest(QPoint viewportPos) const;
    QString toolTipText(const Hit& hit) const;

    std::shared_ptr<const SimulationResult> m_sim;
    QString m_title;
    QString m_summary;
    std::vector<Lane> m_lanes;
    std::vector<int> m_rankTops; ///< per rank: top of its row in the lanes area, pixels
    int m_contentHeight = 0; ///< all rows, pixels
    int m_labelWidth = 0; ///< the rank/stream label column, pixels
    int m_headerHeight = 0; ///< title + legend, pixels
    int m_rulerHeight = 0;
    int m_headerWidth = -1; ///< viewport width the header was laid out for
    std::vector<LegendItem> m_legend;
    std::array<bool, 8> m_kindsPresent {};
    int m_ranks = 1;
    bool m_multipleChunks = false; ///< some rank runs several virtual stages (interleaved schedule)
    TimeAxis m_axis;

    int m_paintedItems = 0;
    int m_paintedFolds = 0;
    bool m_syncingScrollBars = false;
    bool m_dragging = false;
    QPoint m_dragOrigin;
    double m_dragAxisStart = 0;
    double m_dragSecondsPerPixel = 0;
    int m_dragScrollY = 0;
};

} // namespace shardscape::ui
