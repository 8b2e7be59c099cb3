// SPDX-License-Identifier: MIT
#include "timeline_view.h"

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

namespace {

/** Runs of events narrower than this many pixels fold into one mark (Tracy's MinVisSize). */
constexpr double kFoldPixels = 3.0;
/** Hovering this many pixels next to an event still hits it (thin boxes are hard to aim at). */
constexpr double kHitPixels = 3.0;
constexpr int kMargin = 8;
constexpr int kRowGap = 6;
constexpr int kRightMargin = 12;
constexpr int kEventKinds = 9;
/** Zoom per wheel notch (120 units): two notches double the detail. */
constexpr double kWheelZoomPerNotch = 1.41421356237;
/** Visible spans below 100 ns say nothing about a training step. */
constexpr double kMinimumSpan = 1e-7;

struct KindStyle
{
    const char* name;
    const char* letter; ///< drawn inside boxes wide enough, before the micro-batch number
    QRgb color;
};

// Okabe-Ito: distinguishable under the common colour-vision deficiencies. Forward cool, backward
// warm, communication light, per-step work green and grey.
constexpr std::array<KindStyle, kEventKinds> kKinds {{
    {"forward", "F", 0xFF0072B2},
    {"backward", "B", 0xFFD55E00},
    {"backward (input)", "B", 0xFFE69F00},
    {"backward (weight)", "W", 0xFFCC79A7},
    {"send forward", "\u2192", 0xFF56B4E9},
    {"send backward", "\u2190", 0xFFF0E442},
    {"grad sync", "sync", 0xFF009E73},
    {"optimizer step", "opt", 0xFF5A5A5A},
    {"CP/EP comm (exposed)", "a2a", 0xFF999999},
}};

constexpr std::array<const char*, 4> kStreamNames {"compute", "p2p", "dp sync", "cp/ep comm"};

const KindStyle& styleOf(EventKind kind)
{
    return kKinds[std::min<std::size_t>(static_cast<std::size_t>(kind), kEventKinds - 1)];
}

QString streamName(int stream)
{
    if (stream >= 0 && stream < static_cast<int>(kStreamNames.size()))
        return QString::fromLatin1(kStreamNames[static_cast<std::size_t>(stream)]);
    return QStringLiteral("stream %1").arg(stream);
}

/** Black text on light boxes, white on dark ones. */
QColor textColorOn(QColor fill)
{
    const double luminance = 0.299 * fill.redF() + 0.587 * fill.greenF() + 0.114 * fill.blueF();
    return luminance > 0.55 ? QColor(Qt::black) : QColor(Qt::white);
}

QColor blend(QColor a, QColor b, double t)
{
    return QColor::fromRgbF(static_cast<float>(a.redF() * (1 - t) + b.redF() * t),
                            static_cast<float>(a.greenF() * (1 - t) + b.greenF() * t),
                            static_cast<float>(a.blueF() * (1 - t) + b.blueF() * t));
}

QBrush idleBrush(const QPalette& palette)
{
    // Light diagonal hatching: the bubbles read as "nothing happens here" without competing with boxes.
    return QBrush(blend(palette.color(QPalette::Base), palette.color(QPalette::Text), 0.28), Qt::BDiagPattern);
}

QString microSign()
{
    return QString(QChar(0x00B5)) + QLatin1Char('s');
}

/** Seconds with a unit fitting their magnitude: "1.234 s", "12.345 ms", "3.500 µs". */
QString formatSeconds(double seconds)
{
    const double a = std::abs(seconds);
    if (a >= 1 || a == 0)
        return QStringLiteral("%1 s").arg(seconds, 0, 'f', 3);
    if (a >= 1e-3)
        return QStringLiteral("%1 ms").arg(seconds * 1e3, 0, 'f', 3);
    if (a >= 1e-6)
        return QStringLiteral("%1 %2").arg(seconds * 1e6, 0, 'f', 3).arg(microSign());
    return QStringLiteral("%1 ns").arg(seconds * 1e9, 0, 'f', 1);
}

/** 1, 2 or 5 times a power of ten, at least `rough`. */
double niceStep(double rough)
{
    const double power = std::pow(10.0, std::floor(std::log10(rough)));
    const double mantissa = rough / power;
    const double nice = mantissa <= 1 ? 1 : mantissa <= 2 ? 2 : mantissa <= 5 ? 5 : 10;
    return nice * power;
}

/** Ruler labels: one unit for the whole ruler (by the largest visible time), decimals by the tick step. */
struct TickFormat
{
    double scale = 1; ///< seconds per unit
    QString unit;
    int decimals = 0;

    TickFormat(double maxTime, double step)
    {
        const double a = std::abs(maxTime);
        if (a >= 1) {
            unit = QStringLiteral("s");
        } else if (a >= 1e-3) {
            scale = 1e-3;
            unit = QStringLiteral("ms");
        } else if (a >= 1e-6) {
            scale = 1e-6;
            unit = microSign();
        } else {
            scale = 1e-9;
            unit = QStringLiteral("ns");
        }
        decimals = std::clamp(static_cast<int>(std::ceil(-std::log10(step / scale) - 1e-9)), 0, 9);
    }

    QString label(double t) const
    {
        // Avoid "-0" from rounding error at the origin.
        const double value = std::abs(t) < 1e-15 ? 0.0 : t / scale;
        return QStringLiteral("%1 %2").arg(value, 0, 'f', decimals).arg(unit);
    }
};

/** Seconds between labelled ruler ticks (and grid lines): the widest label plus a gap apart. */
double majorTickStep(const TimeAxis& axis, const QFontMetrics& fm)
{
    const double maxTime = std::max(std::abs(axis.start()), std::abs(axis.end()));
    double step = niceStep(axis.secondsPerPixel() * 80);
    // Two rounds, because the labels' decimals depend on the step.
    for (int round = 0; round < 2; ++round) {
        const TickFormat format(maxTime, step);
        const int labelWidth = std::max(fm.horizontalAdvance(format.label(axis.end())),
                                        fm.horizontalAdvance(format.label(axis.start())));
        step = niceStep(axis.secondsPerPixel() * (labelWidth + 24));
    }
    return step;
}

/** A run of narrow events folded into one mark. */
struct Fold
{
    double x0 = 0;
    double x1 = 0;
    int count = 0;
    const TimelineEvent* first = nullptr;
    std::array<double, kEventKinds> time {}; ///< seconds per kind, to colour the mark by what dominates

    int dominantKind() const { return static_cast<int>(std::max_element(time.begin(), time.end()) - time.begin()); }
};

} // namespace

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

void TimelineView::paintEvent(QPaintEvent*)
{
    QPainter painter(viewport());
    paintContents(painter, viewport()->size(), verticalScrollBar()->value());
}

void TimelineView::paintContents(QPainter& painter, QSize size, int scrollY)
{
    m_paintedItems = 0;
    m_paintedFolds = 0;
    if (size.width() != m_headerWidth)
        layoutHeader(size.width());
    m_axis.setWidth(size.width() - plotLeft() - kRightMargin);

    const QPalette& pal = palette();
    painter.fillRect(QRect(QPoint(0, 0), size), pal.color(QPalette::Base));
    paintHeader(painter, size.width());
    paintRuler(painter, size.width(), m_headerHeight);

    const int top = lanesTop();
    const QRect lanesArea(0, top, size.width(), std::max(0, size.height() - top));
    if (m_lanes.empty()) {
        painter.setPen(pal.color(QPalette::PlaceholderText));
        painter.drawText(lanesArea, Qt::AlignCenter,
                         m_sim                   ? tr("This simulation recorded no timeline events.")
                             : m_title.isEmpty() ? tr("No timeline: select a plan to see its pipeline schedule.")
                                                 : tr("Simulating %1: its timeline follows.").arg(m_title));
        return;
    }

    const int plotRight = size.width() - kRightMargin;
    QFont bold = font();
    bold.setBold(true);
    QFont small = font();
    small.setPointSizeF(font().pointSizeF() * 0.85);

    painter.save();
    painter.setClipRect(lanesArea);
    const QColor rowShade = blend(pal.color(QPalette::Base), pal.color(QPalette::Text), 0.04);
    const QColor labelBackground = blend(pal.color(QPalette::Base), pal.color(QPalette::Text), 0.07);
    const QColor gridColor = blend(pal.color(QPalette::Base), pal.color(QPalette::Text), 0.12);

    // Row backgrounds and the grid of the ruler's major ticks, behind the boxes.
    for (std::size_t r = 0; r < m_rankTops.size(); ++r) {
        const int rowTop = top + m_rankTops[r] - scrollY;
        const int rowBottom = r + 1 < m_rankTops.size() ? top + m_rankTops[r + 1] - scrollY - kRowGap
                                                        : top + m_contentHeight - scrollY - kRowGap;
        if (rowBottom < top || rowTop > size.height())
            continue;
        if (r % 2 == 1)
            painter.fillRect(QRect(0, rowTop, size.width(), rowBottom - rowTop), rowShade);
    }
    {
        const double step = majorTickStep(m_axis, QFontMetrics(font()));
        painter.setPen(gridColor);
        for (double t = std::ceil(m_axis.start() / step) * step; t <= m_axis.end(); t += step) {
            const int x = plotLeft() + static_cast<int>(std::lround(m_axis.toX(t)));
            painter.drawLine(x, top, x, size.height());
        }
    }

    painter.setClipRect(QRect(plotLeft(), top, plotRight - plotLeft() + kRightMargin, lanesArea.height()));
    painter.setFont(small);
    for (const auto& lane : m_lanes) {
        const int y = top + lane.top - scrollY;
        if (y + lane.height < top || y > size.height())
            continue;
        paintLane(painter, lane, y, plotRight);
    }

    // The label column on top, so boxes scrolled left never hide it.
    painter.setClipRect(QRect(0, top, plotLeft(), lanesArea.height()));
    painter.fillRect(QRect(0, top, plotLeft() - 1, lanesArea.height()), labelBackground);
    painter.setPen(gridColor);
    painter.drawLine(plotLeft() - 1, top, plotLeft() - 1, size.height());
    for (const auto& lane : m_lanes) {
        const int y = top + lane.top - scrollY;
        if (y + lane.height < top || y > size.height())
            continue;
        if (&lane == &m_lanes.front() || (&lane)[-1].rank != lane.rank) {
            painter.setFont(bold);
            painter.setPen(pal.color(QPalette::Text));
            painter.drawText(QRect(kMargin, y, plotLeft() - kMargin, lane.height), Qt::AlignLeft | Qt::AlignVCenter,
                             tr("rank %1").arg(lane.rank));
        }
        painter.setFont(small);
        painter.setPen(pal.color(QPalette::PlaceholderText));
        painter.drawText(QRect(0, y, plotLeft() - kMargin, lane.height), Qt::AlignRight | Qt::AlignVCenter,
                         streamName(lane.stream));
    }
    painter.restore();
}

void TimelineView::paintHeader(QPainter& painter, int width)
{
    const QPalette& pal = palette();
    QFont bold = font();
    bold.setBold(true);
    const QFontMetrics fm(font());
    const QFontMetrics boldFm(bold);
    const int baseline = kMargin + fm.ascent();
    QString title = m_title.isEmpty() ? tr("Pipeline timeline") : m_title;
    title = boldFm.elidedText(title, Qt::ElideRight, width - 2 * kMargin);
    painter.setFont(bold);
    painter.setPen(pal.color(QPalette::Text));
    painter.drawText(kMargin, baseline, title);
    const int summaryX = kMargin + boldFm.horizontalAdvance(title) + 16;
    if (!m_summary.isEmpty() && summaryX < width - kMargin) {
        painter.setFont(font());
        painter.setPen(pal.color(QPalette::PlaceholderText));
        painter.drawText(summaryX, baseline, fm.elidedText(m_summary, Qt::ElideRight, width - kMargin - summaryX));
    }

    painter.setFont(font());
    for (const auto& item : m_legend) {
        if (item.kind >= 0) {
            const QColor color(kKinds[static_cast<std::size_t>(item.kind)].color);
            painter.fillRect(item.swatch, color);
            painter.setPen(color.darker(140));
            painter.drawRect(item.swatch.adjusted(0, 0, -1, -1));
        } else if (item.kind == -1) {
            painter.fillRect(item.swatch, idleBrush(pal));
            painter.setPen(pal.color(QPalette::Mid));
            painter.drawRect(item.swatch.adjusted(0, 0, -1, -1));
        } else {
            // Neutral: a folded mark takes the colour of whatever kind dominates it.
            const QColor color = blend(pal.color(QPalette::Text), pal.color(QPalette::Base), 0.55);
            painter.fillRect(item.swatch, color);
            painter.fillRect(item.swatch, QBrush(pal.color(QPalette::Base), Qt::Dense6Pattern));
            painter.setPen(color.darker(150));
            painter.drawRect(item.swatch.adjusted(0, 0, -1, -1));
        }
        painter.setPen(pal.color(QPalette::Text));
        painter.drawText(item.textPos, item.text);
    }
}

void TimelineView::paintRuler(QPainter& painter, int width, int top)
{
    const QPalette& pal = palette();
    const QFontMetrics fm(font());
    const int bottom = top + m_rulerHeight - 1;
    painter.fillRect(QRect(0, top, width, m_rulerHeight),
                     blend(pal.color(QPalette::Base), pal.color(QPalette::Text), 0.07));
    painter.setPen(pal.color(QPalette::Mid));
    painter.drawLine(0, bottom, width, bottom);
    if (m_lanes.empty())
        return;

    const double step = majorTickStep(m_axis, fm);
    const TickFormat format(std::max(std::abs(m_axis.start()), std::abs(m_axis.end())), step);
    const double mantissa = step / std::pow(10.0, std::floor(std::log10(step) + 1e-9));
    const double minor = step / (std::lround(mantissa) == 2 ? 4 : 5);

    painter.save();
    painter.setClipRect(QRect(plotLeft() - 2, top, width - plotLeft() + 2, m_rulerHeight));
    painter.setPen(pal.color(QPalette::Mid));
    for (double t = std::ceil(m_axis.start() / minor) * minor; t <= m_axis.end(); t += minor) {
        const int x = plotLeft() + static_cast<int>(std::lround(m_axis.toX(t)));
        painter.drawLine(x, bottom - 3, x, bottom);
    }
    for (double t = std::ceil(m_axis.start() / step) * step; t <= m_axis.end() + step * 1e-9; t += step) {
        const int x = plotLeft() + static_cast<int>(std::lround(m_axis.toX(t)));
        painter.setPen(pal.color(QPalette::Mid));
        painter.drawLine(x, bottom - 7, x, bottom);
        const QString label = format.label(t);
        const int labelWidth = fm.horizontalAdvance(label);
        // Centred on the tick, but kept inside the plot so the first and last labels are whole.
        const int labelX = std::clamp(x - labelWidth / 2, plotLeft(), width - labelWidth - 2);
        painter.setPen(pal.color(QPalette::Text));
        painter.drawText(labelX, top + 3 + fm.ascent(), label);
    }
    painter.restore();
}

void TimelineView::paintLane(QPainter& painter, const Lane& lane, int y, int plotRight)
{
    const double left = plotLeft();
    const double right = plotRight;
    const int boxTop = y + 2;
    const int boxHeight = std::max(1, lane.height - 4);
    const QFontMetrics fm(painter.font());

    if (lane.stream == 0 && m_sim) {
        // Everything on the compute lane that is not a box is idle: hatch [0, pipeline end].
        const double x0 = std::max(left, left + m_axis.toX(0));
        const double x1 = std::min(right, left + m_axis.toX(m_sim->pipeline_time));
        if (x1 > x0)
            painter.fillRect(QRectF(x0, boxTop, x1 - x0, boxHeight), idleBrush(palette()));
    }
    if (lane.events.empty())
        return;

    // Visible events: from the first one whose running end reaches the view to the first starting after it.
    const auto firstIt = std::lower_bound(lane.maxEnd.begin(), lane.maxEnd.end(), m_axis.start());
    const auto first = static_cast<std::size_t>(firstIt - lane.maxEnd.begin());
    const auto lastIt = std::upper_bound(lane.events.begin() + static_cast<std::ptrdiff_t>(first), lane.events.end(),
                                         m_axis.end(), [](double t, const TimelineEvent& e) { return t < e.start; });
    const auto last = static_cast<std::size_t>(lastIt - lane.events.begin());

    const auto drawBox = [&](const TimelineEvent& e, double x0, double x1) {
        const int ix0 = static_cast<int>(std::floor(x0));
        const int ix1 = std::max(ix0 + 1, static_cast<int>(std::floor(x1)));
        QColor color(styleOf(e.kind).color);
        const int w = ix1 - ix0;
        if (w < 4 && textColorOn(color) == Qt::black)
            color = color.darker(135); // light colours vanish on white as hairlines
        painter.fillRect(ix0, boxTop, w, boxHeight, color);
        // Odd model chunks of an interleaved schedule get a light band on top; a lighter fill would
        // read as another kind (send forward is light blue).
        if (m_multipleChunks && e.stream == 0 && (e.stage / m_ranks) % 2 == 1 && boxHeight >= 12)
            painter.fillRect(ix0, boxTop, w, 3, QColor(255, 255, 255, 150));
        if (w >= 4) // a darker right edge separates back-to-back boxes
            painter.fillRect(ix1 - 1, boxTop, 1, boxHeight, color.darker(150));
        if (w >= 18) {
            QString text = QString::fromUtf8(styleOf(e.kind).letter);
            if (e.microbatch >= 0)
                text += QString::number(e.microbatch);
            // Interleaved schedules run several chunks per rank: name the chunk (virtual stage) when it fits.
            if (m_multipleChunks && e.stream == 0) {
                const QString withStage = text + QStringLiteral(" · s%1").arg(e.stage);
                if (fm.horizontalAdvance(withStage) + 8 <= w)
                    text = withStage;
            }
            if (fm.horizontalAdvance(text) + 4 <= w) {
                painter.setPen(textColorOn(color));
                painter.drawText(QRect(ix0, boxTop, w, boxHeight), Qt::AlignCenter, text);
            }
        }
        ++m_paintedItems;
    };
    Fold fold;
    const auto flush = [&] {
        if (fold.count == 0)
            return;
        if (fold.count == 1) {
            drawBox(*fold.first, fold.x0, fold.x1);
        } else {
            const int ix0 = static_cast<int>(std::floor(fold.x0));
            const int ix1 = std::max(ix0 + 1, static_cast<int>(std::ceil(fold.x1)));
            const QColor kindColor(kKinds[static_cast<std::size_t>(fold.dominantKind())].color);
            const QColor color = blend(kindColor, palette().color(QPalette::Base), 0.45);
            painter.fillRect(ix0, boxTop, ix1 - ix0, boxHeight, color);
            painter.fillRect(ix0, boxTop, ix1 - ix0, boxHeight,
                             QBrush(palette().color(QPalette::Base), Qt::Dense6Pattern));
            const int w = ix1 - ix0;
            if (w >= 24) {
                const QString text = QStringLiteral("\u00d7%1").arg(fold.count);
                if (fm.horizontalAdvance(text) + 4 <= w) {
                    painter.setPen(textColorOn(color));
                    painter.drawText(QRect(ix0, boxTop, w, boxHeight), Qt::AlignCenter, text);
                }
            }
            ++m_paintedItems;
            ++m_paintedFolds;
        }
        fold.count = 0;
    };

    for (std::size_t i = first; i < last; ++i) {
        const TimelineEvent& e = lane.events[i];
        double x1 = left + m_axis.toX(e.start + e.duration);
        if (x1 < left)
            continue; // an earlier, longer event keeps the running end high; this one ended before the view
        // Clip to the plot first: deep zooms put far-away ends at huge coordinates.
        const double x0 = std::max(left - 1, left + m_axis.toX(e.start));
        x1 = std::min(right + 1, x1);
        if (x1 - x0 < kFoldPixels) {
            if (fold.count > 0 && x0 <= fold.x1 + 1) {
                fold.x1 = std::max(fold.x1, x1);
            } else {
                flush();
                fold.x0 = x0;
                fold.x1 = x1;
                fold.first = &e;
                fold.time.fill(0);
            }
            ++fold.count;
            fold.time[std::min<std::size_t>(static_cast<std::size_t>(e.kind), kEventKinds - 1)] += e.duration;
        } else {
            flush();
            drawBox(e, x0, x1);
        }
    }
    flush();
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
