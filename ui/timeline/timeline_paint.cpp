// SPDX-License-Identifier: MIT
// The timeline drawn: header with title and legend, the time ruler, and each rank's lanes with its events (runs of
// narrow events folded into one mark, idle time hatched).
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

} // namespace shardscape::ui
