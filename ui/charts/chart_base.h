// SPDX-License-Identifier: MIT
#pragma once

#include <QChartView>
#include <QString>

#include <utility>
#include <vector>

class QAbstractAxis;
class QValueAxis;
class QXYSeries;
class QPointF;

namespace shardscape::ui {

/**
 * What every chart of the app shares: a light theme without animations (the charts follow the
 * selection, and a test or a screenshot must see the final state at once), readable fonts, the
 * legend below, a placeholder title when empty, a compact form for small sizes, and PNG/SVG export.
 */
class ChartBase : public QChartView
{
    Q_OBJECT

public:
    explicit ChartBase(QWidget* parent = nullptr);
    ~ChartBase() override;

    /** Exports are laid out at this size (a 16:9 slide), whatever the widget's; rasters at twice its pixels. */
    static constexpr int kExportWidth = 1600;
    static constexpr int kExportHeight = 900;
    static constexpr double kExportScale = 2;
    /** Writes the chart at the export size: SVG (vector, by QSvgGenerator) for ".svg", else a raster image (PNG...)
        of 3200 x 1800 pixels. */
    bool exportImage(const QString& path);

    /** Whether any axis shortened one of its labels with "..." at the current size (for tests). */
    bool labelsTruncated() const;

    /** The smallest of 1, 2, 4, 5, 8, 10, 20, 40, 50, 80, 100, ... at which `count` numbers fit bars `perBar`
        pixels apart in `font`. */
    static int numberStride(int count, double perBar, const QFont& font);

    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

protected:
    /** Bold first line, optional grey second line (rich text); compact charts show the first line only. */
    void setChartTitle(const QString& title, const QString& subtitle = QString());
    /** Grid and label style shared by all charts, and the axis title (with unit) in full and compact form. */
    void styleAxis(QAbstractAxis* axis, const QString& title, const QString& compactTitle);
    /** Changes an axis title (full and compact form) after styleAxis. */
    void setAxisTitle(QAbstractAxis* axis, const QString& title, const QString& compactTitle);
    /** Small charts (a quarter of a laptop window) drop subtitles, shorten axis titles and shrink fonts. */
    bool isCompact() const { return m_compact; }
    /** Font for axis labels at the current size. */
    QFont labelFont() const;
    /** Legend below when its entries fit on one row, else on the right, one per row (never cut to "..."). */
    void fitLegend();
    /** Keeps a horizontal value axis's labels whole: whenever the plot area changes, its ticks are spaced at a round
        step (1, 2, 2.5 or 5 x 10^k) wide enough for its widest label. Give it ranges with setReadableRange. */
    void keepTicksReadable(QValueAxis* axis);
    /** Widens [lo, hi] to round ends and spaces the ticks readably, in at most two changes of the axis (each lays
        the chart out again, about 2 ms): instead of setRange, applyNiceNumbers and a tick fit. */
    void setReadableRange(QValueAxis* axis, double lo, double hi);
    /** [lo, hi] widened to multiples of a round step with `intervals` steps between its ends, so that a fixed tick
        count of intervals + 1 falls on round numbers: one setRange instead of setRange and applyNiceNumbers. */
    static std::pair<double, double> niceRange(double lo, double hi, int intervals);
    /** Shows a tool tip at the cursor, or hides it when `text` is empty. */
    void showToolTip(const QString& text);
    void resizeEvent(QResizeEvent* event) override;

private:
    struct AxisTitle
    {
        QAbstractAxis* axis = nullptr; ///< owned by the chart, which outlives this list
        QString title;
        QString compactTitle;
    };
    void applyTitles();
    void fitTicks();

    QString m_title;
    QString m_subtitle;
    std::vector<AxisTitle> m_axisTitles;
    std::vector<QValueAxis*> m_tickAxes; ///< owned by the chart
    bool m_compact = false;
};

/** Index of the point of `series` nearest `point` (the hovered or clicked one), or -1 when it has none. */
int nearestPointIndex(const QXYSeries* series, const QPointF& point);

/** Okabe-Ito colours (distinguishable under the common colour-vision deficiencies), shared by the charts. */
namespace chart_colors {
inline constexpr unsigned kBlue = 0xFF0072B2;
inline constexpr unsigned kSkyBlue = 0xFF56B4E9;
inline constexpr unsigned kGreen = 0xFF009E73;
inline constexpr unsigned kOrange = 0xFFE69F00;
inline constexpr unsigned kVermillion = 0xFFD55E00;
inline constexpr unsigned kPurple = 0xFFCC79A7;
inline constexpr unsigned kYellow = 0xFFF0E442;
inline constexpr unsigned kGrey = 0xFF999999;
inline constexpr unsigned kDark = 0xFF333333;
} // namespace chart_colors

} // namespace shardscape::ui
