// SPDX-License-Identifier: MIT
// What the timeline's layout, painting and tool tips share: sizes, the colour and pattern of each event kind, lane
// names, time formatting and ruler ticks. Private to ui/timeline.
#pragma once

#include "time_axis.h"

#include "shardscape/sim/simulator.h"

#include <QBrush>
#include <QColor>
#include <QFontMetrics>
#include <QPalette>
#include <QString>

#include <algorithm>
#include <array>
#include <cmath>

namespace shardscape::ui::timeline_detail {

/** Runs of events narrower than this many pixels fold into one mark (Tracy's MinVisSize). */
inline constexpr double kFoldPixels = 3.0;
/** Hovering this many pixels next to an event still hits it (thin boxes are hard to aim at). */
inline constexpr double kHitPixels = 3.0;
inline constexpr int kMargin = 8;
inline constexpr int kRowGap = 6;
inline constexpr int kRightMargin = 12;
inline constexpr int kEventKinds = 9;
/** Zoom per wheel notch (120 units): two notches double the detail. */
inline constexpr double kWheelZoomPerNotch = 1.41421356237;
/** Visible spans below 100 ns say nothing about a training step. */
inline constexpr double kMinimumSpan = 1e-7;

struct KindStyle
{
    const char* name;
    const char* letter; ///< drawn inside boxes wide enough, before the micro-batch number
    QRgb color;
};

// Okabe-Ito: distinguishable under the common colour-vision deficiencies. Forward cool, backward
// warm, communication light, per-step work green and grey.
inline constexpr std::array<KindStyle, kEventKinds> kKinds {{
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

inline constexpr std::array<const char*, 4> kStreamNames {"compute", "p2p", "dp sync", "cp/ep comm"};

inline const KindStyle& styleOf(EventKind kind)
{
    return kKinds[std::min<std::size_t>(static_cast<std::size_t>(kind), kEventKinds - 1)];
}

inline QString streamName(int stream)
{
    if (stream >= 0 && stream < static_cast<int>(kStreamNames.size()))
        return QString::fromLatin1(kStreamNames[static_cast<std::size_t>(stream)]);
    return QStringLiteral("stream %1").arg(stream);
}

/** Black text on light boxes, white on dark ones. */
inline QColor textColorOn(QColor fill)
{
    const double luminance = 0.299 * fill.redF() + 0.587 * fill.greenF() + 0.114 * fill.blueF();
    return luminance > 0.55 ? QColor(Qt::black) : QColor(Qt::white);
}

inline QColor blend(QColor a, QColor b, double t)
{
    return QColor::fromRgbF(static_cast<float>(a.redF() * (1 - t) + b.redF() * t),
                            static_cast<float>(a.greenF() * (1 - t) + b.greenF() * t),
                            static_cast<float>(a.blueF() * (1 - t) + b.blueF() * t));
}

inline QBrush idleBrush(const QPalette& palette)
{
    // Light diagonal hatching: the bubbles read as "nothing happens here" without competing with boxes.
    return QBrush(blend(palette.color(QPalette::Base), palette.color(QPalette::Text), 0.28), Qt::BDiagPattern);
}

inline QString microSign()
{
    return QString(QChar(0x00B5)) + QLatin1Char('s');
}

/** Seconds with a unit fitting their magnitude: "1.234 s", "12.345 ms", "3.500 µs". */
inline QString formatSeconds(double seconds)
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
inline double niceStep(double rough)
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
inline double majorTickStep(const TimeAxis& axis, const QFontMetrics& fm)
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

} // namespace shardscape::ui::timeline_detail
