// SPDX-License-Identifier: MIT
#pragma once

#include <QChartView>
#include <QString>

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

    QString m_title;
    QString m_subtitle;
    std::vector<AxisTitle> m_axisTitles;
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
