// SPDX-License-Identifier: MIT
#include "timeline_view.h"

#include "timeline_style.h"

#include <QApplication>
#include <QFileInfo>
#include <QImageWriter>
#include <QKeyEvent>
#include <QLocale>
#include <QMouseEvent>
#include <QPaintEvent>
#include <QPainter>
#include <QScrollBar>
#include <QSvgGenerator>
#include <QToolTip>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>
#include <limits>

namespace shardscape::ui {

using namespace timeline_detail;

TimelineView::TimelineView(QWidget* parent)
    : QAbstractScrollArea(parent)
{
    setFocusPolicy(Qt::StrongFocus);
    setHorizontalScrollBarPolicy(Qt::ScrollBarAsNeeded);
    setVerticalScrollBarPolicy(Qt::ScrollBarAsNeeded);
    viewport()->setAttribute(Qt::WA_OpaquePaintEvent);
    viewport()->setBackgroundRole(QPalette::Base);
    m_axis.setMinimumSpan(kMinimumSpan);
    connect(horizontalScrollBar(), &QScrollBar::valueChanged, this, &TimelineView::applyHorizontalScroll);
    relayout();
}

TimelineView::~TimelineView() = default;

void TimelineView::setTimeline(std::shared_ptr<const SimulationResult> sim, QString title)
{
    m_sim = std::move(sim);
    m_title = std::move(title);
    rebuildLanes();
    verticalScrollBar()->setValue(0);
    relayout();
    zoomToFit();
}

void TimelineView::clear()
{
    setTimeline(nullptr, QString());
}

int TimelineView::eventCount() const
{
    return m_sim ? static_cast<int>(m_sim->events.size()) : 0;
}

void TimelineView::zoomToFit()
{
    m_axis.zoomToFit();
    notifyRangeChanged();
}

void TimelineView::setVisibleRange(double start, double end)
{
    m_axis.setRange(start, end);
    notifyRangeChanged();
}

int TimelineView::plotLeft() const
{
    return m_labelWidth;
}

int TimelineView::lanesTop() const
{
    return m_headerHeight + m_rulerHeight;
}

void TimelineView::rebuildLanes()
{
    m_lanes.clear();
    m_kindsPresent.fill(false);
    m_multipleChunks = false;
    m_summary.clear();
    double dataEnd = 0;
    if (m_sim && !m_sim->events.empty()) {
        int ranks = static_cast<int>(m_sim->busy.size());
        std::array<bool, 256> streamUsed {};
        for (const auto& e : m_sim->events) {
            ranks = std::max(ranks, e.rank + 1);
            streamUsed[e.stream] = true;
            m_kindsPresent[std::min<std::size_t>(static_cast<std::size_t>(e.kind), kEventKinds - 1)] = true;
            dataEnd = std::max(dataEnd, e.start + e.duration);
        }
        // Every rank gets the same sub-lanes, so rows line up and compare at a glance.
        std::vector<int> streams;
        for (std::size_t s = 0; s < streamUsed.size(); ++s)
            if (streamUsed[s])
                streams.push_back(static_cast<int>(s));
        std::vector<int> laneOf(256, -1);
        for (std::size_t i = 0; i < streams.size(); ++i)
            laneOf[static_cast<std::size_t>(streams[i])] = static_cast<int>(i);
        m_lanes.resize(static_cast<std::size_t>(ranks) * streams.size());
        for (int r = 0; r < ranks; ++r)
            for (std::size_t i = 0; i < streams.size(); ++i) {
                Lane& lane = m_lanes[static_cast<std::size_t>(r) * streams.size() + i];
                lane.rank = r;
                lane.stream = streams[i];
            }
        for (const auto& e : m_sim->events) {
            if (e.rank < 0)
                continue;
            m_lanes[static_cast<std::size_t>(e.rank) * streams.size() + static_cast<std::size_t>(laneOf[e.stream])]
                .events.push_back(e);
        }
        for (auto& lane : m_lanes) {
            // The simulator sorts by (rank, stream, start) already; a stable sort keeps that cheap and safe.
            std::stable_sort(lane.events.begin(), lane.events.end(),
                             [](const TimelineEvent& a, const TimelineEvent& b) { return a.start < b.start; });
            lane.maxEnd.resize(lane.events.size());
            double running = -std::numeric_limits<double>::infinity();
            for (std::size_t i = 0; i < lane.events.size(); ++i) {
                running = std::max(running, lane.events[i].start + lane.events[i].duration);
                lane.maxEnd[i] = running;
            }
        }
        m_ranks = ranks;
        std::vector<int> stageOfRank(static_cast<std::size_t>(ranks), -1);
        for (const auto& e : m_sim->events) {
            if (e.stream != 0 || e.rank < 0 || e.microbatch < 0)
                continue;
            int& seen = stageOfRank[static_cast<std::size_t>(e.rank)];
            m_multipleChunks = m_multipleChunks || (seen >= 0 && seen != e.stage);
            seen = e.stage;
        }
        dataEnd = std::max(dataEnd, m_sim->step_time);
        const QLocale locale;
        m_summary = tr("step %1 \u00b7 bubble %2% of the step \u00b7 %3 \u00b7 %4 events")
                        .arg(formatSeconds(m_sim->step_time))
                        .arg(m_sim->bubble_ratio * 100, 0, 'f', 1)
                        .arg(ranks == 1 ? tr("1 rank") : tr("%1 ranks").arg(ranks))
                        .arg(locale.toString(static_cast<qlonglong>(m_sim->events.size())));
    }
    // A little room after the last event, so it does not stick to the edge.
    m_axis.setDataRange(0, dataEnd > 0 ? dataEnd * 1.01 : 1e-3);
}

void TimelineView::layoutHeader(int viewportWidth)
{
    m_headerWidth = viewportWidth;
    m_legend.clear();
    const QFontMetrics fm(font());
    const int lineHeight = fm.height() + 4;
    const int swatch = fm.height() - 4;
    int x = kMargin;
    int y = kMargin + fm.height() + 6; // below the title line
    const auto add = [&](const QString& text, int kind) {
        const int itemWidth = swatch + 5 + fm.horizontalAdvance(text) + 16;
        if (x > kMargin && x + itemWidth > viewportWidth - kMargin) {
            x = kMargin;
            y += lineHeight;
        }
        LegendItem item;
        item.text = text;
        item.kind = kind;
        item.swatch = QRect(x, y + (lineHeight - swatch) / 2 - 1, swatch, swatch);
        item.textPos = QPoint(x + swatch + 5, y + (lineHeight - fm.height()) / 2 + fm.ascent() - 1);
        m_legend.push_back(item);
        x += itemWidth;
    };
    for (int k = 0; k < kEventKinds; ++k)
        if (m_kindsPresent[static_cast<std::size_t>(k)])
            add(tr(kKinds[static_cast<std::size_t>(k)].name), k);
    if (!m_lanes.empty()) {
        add(tr("idle (bubble)"), -1);
        add(tr("folded runs (\u00d7 count)"), -2);
    }
    m_headerHeight = y + (m_legend.empty() ? 0 : lineHeight) + 2;
}

void TimelineView::relayout()
{
    const QFontMetrics fm(font());
    QFont bold = font();
    bold.setBold(true);
    QFont small = font();
    small.setPointSizeF(font().pointSizeF() * 0.85);
    const QFontMetrics boldFm(bold);
    const QFontMetrics smallFm(small);

    int rankLabel = boldFm.horizontalAdvance(QStringLiteral("rank 000"));
    int streamLabel = 0;
    for (const auto& lane : m_lanes)
        streamLabel = std::max(streamLabel, smallFm.horizontalAdvance(streamName(lane.stream)));
    m_labelWidth = kMargin + rankLabel + 10 + streamLabel + kMargin;
    m_rulerHeight = fm.height() + 12;

    layoutHeader(viewport()->width());

    // Few ranks: grow the compute lanes into the free height (up to 2.5x), so boxes and labels are
    // easy to hit; many ranks: the base height and a vertical scroll bar.
    const int computeHeight = fm.height() + 10;
    const int streamHeight = smallFm.height() + 4;
    int baseHeight = 0;
    int ranks = 0;
    for (std::size_t i = 0; i < m_lanes.size(); ++i) {
        baseHeight += m_lanes[i].stream == 0 ? computeHeight : streamHeight;
        if (i == 0 || m_lanes[i - 1].rank != m_lanes[i].rank) {
            baseHeight += kRowGap;
            ++ranks;
        }
    }
    const int freeHeight = viewport()->height() - lanesTop() - baseHeight;
    const int stretchedCompute = ranks > 0 && freeHeight > 0
        ? std::min(computeHeight * 5 / 2, computeHeight + freeHeight / ranks)
        : computeHeight;

    m_rankTops.clear();
    int y = 0;
    int previousRank = -1;
    for (auto& lane : m_lanes) {
        if (lane.rank != previousRank) {
            if (previousRank >= 0)
                y += kRowGap;
            m_rankTops.push_back(y);
            previousRank = lane.rank;
        }
        lane.top = y;
        lane.height = lane.stream == 0 ? stretchedCompute : streamHeight;
        y += lane.height;
    }
    m_contentHeight = y + kRowGap;

    m_axis.setWidth(viewport()->width() - plotLeft() - kRightMargin);
    updateScrollBars();
    viewport()->update();
}

void TimelineView::updateScrollBars()
{
    m_syncingScrollBars = true;
    const int visibleHeight = std::max(0, viewport()->height() - lanesTop());
    verticalScrollBar()->setRange(0, std::max(0, m_contentHeight - visibleHeight));
    verticalScrollBar()->setPageStep(std::max(1, visibleHeight));
    verticalScrollBar()->setSingleStep(20);

    // The horizontal bar mirrors the axis: its range is the hidden part of the data in pixels at
    // the current zoom, capped so that deep zooms do not overflow int.
    constexpr double kMaxRange = 1e9;
    const double hidden = (m_axis.dataEnd() - m_axis.dataStart()) - m_axis.span();
    const double hiddenPixels = hidden / m_axis.secondsPerPixel();
    if (hiddenPixels < 0.5) {
        horizontalScrollBar()->setRange(0, 0);
    } else {
        const double range = std::min(kMaxRange, std::round(hiddenPixels));
        const double scale = range / hiddenPixels;
        horizontalScrollBar()->setRange(0, static_cast<int>(range));
        horizontalScrollBar()->setPageStep(std::max(1, static_cast<int>(m_axis.width() * scale)));
        horizontalScrollBar()->setSingleStep(std::max(1, static_cast<int>(20 * scale)));
        horizontalScrollBar()->setValue(
            static_cast<int>(std::round((m_axis.start() - m_axis.dataStart()) / hidden * range)));
    }
    m_syncingScrollBars = false;
}

void TimelineView::applyHorizontalScroll(int value)
{
    if (m_syncingScrollBars)
        return;
    const int range = horizontalScrollBar()->maximum();
    if (range <= 0)
        return;
    const double hidden = (m_axis.dataEnd() - m_axis.dataStart()) - m_axis.span();
    const double start = m_axis.dataStart() + hidden * value / range;
    m_axis.setRange(start, start + m_axis.span());
    viewport()->update();
    Q_EMIT visibleRangeChanged(m_axis.start(), m_axis.end());
}

void TimelineView::notifyRangeChanged()
{
    updateScrollBars();
    viewport()->update();
    Q_EMIT visibleRangeChanged(m_axis.start(), m_axis.end());
}

void TimelineView::resizeEvent(QResizeEvent* event)
{
    QAbstractScrollArea::resizeEvent(event);
    relayout();
}

void TimelineView::changeEvent(QEvent* event)
{
    QAbstractScrollArea::changeEvent(event);
    if (event->type() == QEvent::FontChange || event->type() == QEvent::StyleChange)
        relayout();
}

void TimelineView::scrollContentsBy(int, int)
{
    viewport()->update();
}

QSize TimelineView::sizeHint() const
{
    return {900, 360};
}

QSize TimelineView::minimumSizeHint() const
{
    return {320, 160};
}

TimelineView::Hit TimelineView::hitTest(QPoint pos) const
{
    Hit hit;
    const int y = pos.y() - lanesTop() + verticalScrollBar()->value();
    if (pos.y() < lanesTop() || pos.x() < plotLeft())
        return hit;
    const auto laneIt = std::find_if(m_lanes.begin(), m_lanes.end(),
                                     [y](const Lane& l) { return y >= l.top && y < l.top + l.height; });
    if (laneIt == m_lanes.end() || laneIt->events.empty())
        return hit;
    hit.lane = &*laneIt;
    const double t = m_axis.toTime(pos.x() - plotLeft());
    const double tolerance = kHitPixels * m_axis.secondsPerPixel();
    const auto first = std::lower_bound(laneIt->maxEnd.begin(), laneIt->maxEnd.end(), t - tolerance);
    double bestDistance = std::numeric_limits<double>::infinity();
    for (auto i = static_cast<std::size_t>(first - laneIt->maxEnd.begin()); i < laneIt->events.size(); ++i) {
        const TimelineEvent& e = laneIt->events[i];
        if (e.start > t + tolerance)
            break;
        const double end = e.start + e.duration;
        if (end < t - tolerance)
            continue;
        ++hit.nearby;
        const double distance = t < e.start ? e.start - t : t > end ? t - end : 0.0;
        if (distance < bestDistance) {
            bestDistance = distance;
            hit.event = &e;
        }
    }
    return hit;
}

QString TimelineView::toolTipText(const Hit& hit) const
{
    if (!hit.event)
        return {};
    const TimelineEvent& e = *hit.event;
    QString text = QStringLiteral("<b>%1</b> \u00b7 rank %2 \u00b7 %3<br>")
                       .arg(tr(styleOf(e.kind).name).toHtmlEscaped())
                       .arg(e.rank)
                       .arg(streamName(e.stream));
    text += tr("stage %1").arg(e.stage);
    if (e.microbatch >= 0)
        text += tr(" \u00b7 micro-batch %1").arg(e.microbatch);
    text += QStringLiteral("<br>")
        + tr("start %1<br>duration %2<br>end %3")
              .arg(formatSeconds(e.start), formatSeconds(e.duration), formatSeconds(e.start + e.duration));
    if (hit.nearby > 1)
        text += QStringLiteral("<br><i>") + tr("%1 events under the cursor: zoom in to tell them apart").arg(hit.nearby)
            + QStringLiteral("</i>");
    return text;
}

bool TimelineView::viewportEvent(QEvent* event)
{
    if (event->type() == QEvent::ToolTip) {
        const auto* help = static_cast<QHelpEvent*>(event);
        const QString text = toolTipText(hitTest(help->pos()));
        if (text.isEmpty())
            QToolTip::hideText();
        else
            QToolTip::showText(help->globalPos(), text, viewport());
        return true;
    }
    return QAbstractScrollArea::viewportEvent(event);
}

void TimelineView::wheelEvent(QWheelEvent* event)
{
    const QPoint delta = event->angleDelta();
    if (event->modifiers() & Qt::ShiftModifier) {
        // Some platforms turn Shift+wheel into a horizontal delta.
        const int dy = delta.y() != 0 ? delta.y() : delta.x();
        verticalScrollBar()->setValue(verticalScrollBar()->value() - dy * 40 / 120);
    } else if (std::abs(delta.x()) > std::abs(delta.y())) {
        // Touchpads scroll sideways: pan a tenth of the view per notch.
        m_axis.pan(-delta.x() / 120.0 * 0.1 * m_axis.span());
        notifyRangeChanged();
    } else if (delta.y() != 0) {
        const double x = std::clamp(event->position().x() - plotLeft(), 0.0, m_axis.width());
        m_axis.zoom(std::pow(kWheelZoomPerNotch, delta.y() / 120.0), m_axis.toTime(x));
        notifyRangeChanged();
    }
    event->accept();
}

void TimelineView::mousePressEvent(QMouseEvent* event)
{
    if (event->button() != Qt::LeftButton) {
        QAbstractScrollArea::mousePressEvent(event);
        return;
    }
    m_dragging = true;
    m_dragOrigin = event->position().toPoint();
    m_dragAxisStart = m_axis.start();
    m_dragSecondsPerPixel = m_axis.secondsPerPixel();
    m_dragScrollY = verticalScrollBar()->value();
    viewport()->setCursor(Qt::ClosedHandCursor);
    event->accept();
}

void TimelineView::mouseMoveEvent(QMouseEvent* event)
{
    if (!m_dragging) {
        QAbstractScrollArea::mouseMoveEvent(event);
        return;
    }
    const QPoint moved = event->position().toPoint() - m_dragOrigin;
    // Grab-and-drag: the content follows the mouse, so dragging right shows earlier times.
    const double start = m_dragAxisStart - moved.x() * m_dragSecondsPerPixel;
    m_axis.setRange(start, start + m_axis.span());
    verticalScrollBar()->setValue(m_dragScrollY - moved.y());
    notifyRangeChanged();
    event->accept();
}

void TimelineView::mouseReleaseEvent(QMouseEvent* event)
{
    if (event->button() == Qt::LeftButton && m_dragging) {
        m_dragging = false;
        viewport()->unsetCursor();
        event->accept();
        return;
    }
    QAbstractScrollArea::mouseReleaseEvent(event);
}

void TimelineView::mouseDoubleClickEvent(QMouseEvent* event)
{
    if (event->button() == Qt::LeftButton) {
        zoomToFit();
        event->accept();
        return;
    }
    QAbstractScrollArea::mouseDoubleClickEvent(event);
}

void TimelineView::keyPressEvent(QKeyEvent* event)
{
    const double middle = 0.5 * (m_axis.start() + m_axis.end());
    switch (event->key()) {
    case Qt::Key_Plus:
    case Qt::Key_Equal:
        m_axis.zoom(2, middle);
        break;
    case Qt::Key_Minus:
        m_axis.zoom(0.5, middle);
        break;
    case Qt::Key_Left:
        m_axis.pan(-0.2 * m_axis.span());
        break;
    case Qt::Key_Right:
        m_axis.pan(0.2 * m_axis.span());
        break;
    case Qt::Key_Home:
    case Qt::Key_0:
        m_axis.zoomToFit();
        break;
    default:
        QAbstractScrollArea::keyPressEvent(event);
        return;
    }
    notifyRangeChanged();
    event->accept();
}

bool TimelineView::exportImage(const QString& path)
{
    const QString suffix = QFileInfo(path).suffix().toLower();
    if (suffix == QLatin1String("svg")) {
        // All rows, not just the scrolled-to ones: a vector export is for reading later.
        const QSize size(viewport()->width(), lanesTop() + m_contentHeight);
        QSvgGenerator generator;
        generator.setFileName(path);
        generator.setSize(size);
        generator.setViewBox(QRect(QPoint(0, 0), size));
        generator.setTitle(m_title.isEmpty() ? tr("Pipeline timeline") : m_title);
        generator.setDescription(m_summary);
        {
            QPainter painter;
            if (!painter.begin(&generator))
                return false;
            paintContents(painter, size, 0);
        }
        viewport()->update(); // the export laid the header out for its own size
        const QFileInfo written(path);
        return written.exists() && written.size() > 0;
    }
    if (!QImageWriter::supportedImageFormats().contains(suffix.toLatin1()))
        return false;
    // Every rank, not the scrolled-to ones: the whole content height, at least a slide's width, twice the pixels.
    const QSize size(std::max(viewport()->width(), kExportMinWidth), lanesTop() + m_contentHeight);
    QImage image(size * 2, QImage::Format_ARGB32_Premultiplied);
    image.setDevicePixelRatio(2);
    image.fill(palette().color(QPalette::Base));
    {
        QPainter painter(&image);
        painter.setRenderHint(QPainter::Antialiasing);
        paintContents(painter, size, 0);
    }
    viewport()->update(); // the export laid the header out for its own size
    return image.save(path);
}

} // namespace shardscape::ui
