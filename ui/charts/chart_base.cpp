// SPDX-License-Identifier: MIT
#include "chart_base.h"

#include <QAbstractAxis>
#include <QChart>
#include <QCursor>
#include <QFileInfo>
#include <QImageWriter>
#include <QLegend>
#include <QLegendMarker>
#include <QPainter>
#include <QSvgGenerator>
#include <QToolTip>
#include <QValueAxis>
#include <QXYSeries>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace shardscape::ui {

ChartBase::ChartBase(QWidget* parent)
    : QChartView(new QChart, parent)
{
    setRenderHint(QPainter::Antialiasing);
    setMouseTracking(true);
    QChart* c = chart();
    c->setTheme(QChart::ChartThemeLight);
    c->setAnimationOptions(QChart::NoAnimation);
    c->setBackgroundRoundness(0);
    c->setMargins(QMargins(6, 6, 6, 6));
    c->legend()->setAlignment(Qt::AlignBottom);
    c->legend()->setFont(font());
    c->legend()->setShowToolTips(true);
}

ChartBase::~ChartBase() = default;

QSize ChartBase::sizeHint() const
{
    return {560, 380};
}

QSize ChartBase::minimumSizeHint() const
{
    return {260, 180};
}

namespace {

/** Below this size a chart goes compact: it sits in a quarter of a 1280x800 window. */
constexpr int kCompactWidth = 470;
constexpr int kCompactHeight = 330;

} // namespace

void ChartBase::setChartTitle(const QString& title, const QString& subtitle)
{
    m_title = title;
    m_subtitle = subtitle;
    applyTitles();
}

void ChartBase::styleAxis(QAbstractAxis* axis, const QString& title, const QString& compactTitle)
{
    axis->setGridLineColor(QColor(0xE0, 0xE0, 0xE0));
    axis->setLabelsColor(QColor(0x33, 0x33, 0x33));
    axis->setLabelsFont(labelFont());
    setAxisTitle(axis, title, compactTitle);
}

void ChartBase::setAxisTitle(QAbstractAxis* axis, const QString& title, const QString& compactTitle)
{
    const auto it
        = std::find_if(m_axisTitles.begin(), m_axisTitles.end(), [axis](const AxisTitle& t) { return t.axis == axis; });
    if (it == m_axisTitles.end())
        m_axisTitles.push_back({axis, title, compactTitle});
    else
        *it = {axis, title, compactTitle};
    applyTitles();
}

QFont ChartBase::labelFont() const
{
    QFont f = font();
    if (m_compact)
        f.setPointSizeF(font().pointSizeF() * 0.88);
    return f;
}

void ChartBase::applyTitles()
{
    QString html = QStringLiteral("<b>%1</b>").arg(m_title.toHtmlEscaped());
    if (!m_subtitle.isEmpty() && !m_compact)
        html += QStringLiteral("<br><span style=\"color:#555555\">%1</span>").arg(m_subtitle.toHtmlEscaped());
    chart()->setTitle(html);
    QFont titleFont = font();
    titleFont.setPointSizeF(font().pointSizeF() * (m_compact ? 0.95 : 1.05));
    chart()->setTitleFont(titleFont);
    // The subtitle (usually the configuration) stays one hover away when it is not shown.
    setToolTip(m_compact ? m_subtitle : QString());
    for (const AxisTitle& t : m_axisTitles) {
        t.axis->setTitleText(m_compact ? t.compactTitle : t.title);
        QFont axisFont = labelFont();
        t.axis->setTitleFont(axisFont);
    }
    // Every chart retitles itself after renaming its series: the moment to place the legend.
    fitLegend();
}

void ChartBase::resizeEvent(QResizeEvent* event)
{
    QChartView::resizeEvent(event);
    const bool compact = width() < kCompactWidth || height() < kCompactHeight;
    if (compact != m_compact) {
        m_compact = compact;
        chart()->setMargins(compact ? QMargins(2, 2, 2, 2) : QMargins(6, 6, 6, 6));
        chart()->legend()->setFont(labelFont());
        for (QAbstractAxis* axis : chart()->axes())
            axis->setLabelsFont(labelFont());
        applyTitles();
    }
    fitLegend();
    if (!m_tickAxes.empty())
        QMetaObject::invokeMethod(this, &ChartBase::fitTicks, Qt::QueuedConnection);
}

void ChartBase::fitLegend()
{
    QLegend* legend = chart()->legend();
    const QFontMetrics fm(legend->font());
    int needed = 0;
    // Markers count as hidden until the chart is first shown, so measure every one.
    for (const QLegendMarker* marker : legend->markers())
        needed += fm.horizontalAdvance(marker->label()) + fm.height() + 24; // marker, label, spacing
    const Qt::Alignment alignment = needed + 24 <= width() ? Qt::AlignBottom : Qt::AlignRight;
    if (legend->alignment() != alignment)
        legend->setAlignment(alignment);
}

void ChartBase::showToolTip(const QString& text)
{
    if (text.isEmpty())
        QToolTip::hideText();
    else
        QToolTip::showText(QCursor::pos(), text, this);
}

void ChartBase::keepTicksReadable(QValueAxis* axis)
{
    if (m_tickAxes.empty())
        connect(chart(), &QChart::plotAreaChanged, this,
                [this] { QMetaObject::invokeMethod(this, &ChartBase::fitTicks, Qt::QueuedConnection); });
    m_tickAxes.push_back(axis);
}

namespace {

/** The round steps: 1, 2, 2.5 and 5 times a power of ten. */
constexpr std::array<double, 4> kRoundSteps {1.0, 2.0, 2.5, 5.0};

/** Decimals a label needs to tell ticks `step` apart. */
int decimalsFor(double step)
{
    const double decade = std::pow(10.0, std::floor(std::log10(step) + 1e-9));
    const bool quarter = std::abs(step / decade - 2.5) < 1e-9;
    return std::max(0, static_cast<int>(std::ceil(-std::log10(decade) - 1e-9)) + (quarter ? 1 : 0));
}

/** The smallest round step whose labels, written with the decimals it needs, fit between two ticks over
    [min, max] drawn `plotWidth` pixels wide; QtCharts keeps a few pixels around each label and cuts a wider one. */
double readableStep(const QFontMetrics& fm, double min, double max, double plotWidth)
{
    const double range = max - min;
    for (double decade = std::pow(10.0, std::floor(std::log10(range / 50)));; decade *= 10)
        for (const double m : kRoundSteps) {
            const double step = m * decade;
            const int decimals = decimalsFor(step);
            const int widest = std::max(fm.horizontalAdvance(QString::number(min, 'f', decimals)),
                                        fm.horizontalAdvance(QString::number(max, 'f', decimals)));
            if (step * plotWidth / range >= widest + 14.0 || step >= range)
                return step;
        }
}

} // namespace

std::pair<double, double> ChartBase::niceRange(double lo, double hi, int intervals)
{
    if (!(hi > lo))
        hi = lo + 1;
    const double raw = (hi - lo) / intervals;
    for (double decade = std::pow(10.0, std::floor(std::log10(raw)));; decade *= 10)
        for (const double m : kRoundSteps) {
            const double step = m * decade;
            const double first = std::floor(lo / step + 1e-9) * step;
            if (first + intervals * step >= hi - 1e-12 * std::abs(hi))
                return {first, first + intervals * step};
        }
}

void ChartBase::setReadableRange(QValueAxis* axis, double lo, double hi)
{
    const double plotWidth = chart()->plotArea().width() > 0 ? chart()->plotArea().width() : width() * 0.6;
    const auto [min, max] = niceRange(lo, hi, 4);
    const double step = readableStep(QFontMetrics(axis->labelsFont()), min, max, std::max(plotWidth, 40.0));
    // Each change lays the axis out again: at most two, in the order that never asks for a crowd of ticks.
    const bool coarser = axis->tickType() != QValueAxis::TicksDynamic || step > axis->tickInterval();
    const auto applyStep = [&] {
        axis->setTickType(QValueAxis::TicksDynamic);
        axis->setTickAnchor(0);
        axis->setTickInterval(step);
        axis->setLabelFormat(QStringLiteral("%.%1f").arg(decimalsFor(step)));
    };
    if (coarser)
        applyStep();
    axis->setRange(min, max);
    if (!coarser)
        applyStep();
}

void ChartBase::fitTicks()
{
    const double plotWidth = chart()->plotArea().width();
    if (plotWidth <= 0)
        return;
    for (QValueAxis* axis : m_tickAxes) {
        if (!(axis->max() > axis->min()))
            continue;
        const double step = readableStep(QFontMetrics(axis->labelsFont()), axis->min(), axis->max(), plotWidth);
        const QString format = QStringLiteral("%.%1f").arg(decimalsFor(step));
        if (axis->tickType() == QValueAxis::TicksDynamic && axis->tickInterval() == step
            && axis->labelFormat() == format)
            continue;
        axis->setTickType(QValueAxis::TicksDynamic);
        axis->setTickAnchor(0);
        axis->setTickInterval(step);
        axis->setLabelFormat(format);
    }
}

int ChartBase::numberStride(int count, double perBar, const QFont& font)
{
    // The widest number plus the padding QtCharts keeps around a label.
    const double needed = QFontMetrics(font).horizontalAdvance(QString::number(std::max(0, count - 1))) + 14.0;
    for (int decade = 1;; decade *= 10)
        for (const int step : {1, 2, 4, 5, 8})
            if (step * decade * std::max(perBar, 1e-3) >= needed || step * decade >= count)
                return step * decade;
}

bool ChartBase::labelsTruncated() const
{
    const auto axes = chart()->axes();
    return std::any_of(axes.begin(), axes.end(), [](const QAbstractAxis* a) { return a->labelsTruncated(); });
}

bool ChartBase::exportImage(const QString& path)
{
    const QString suffix = QFileInfo(path).suffix().toLower();
    const bool svg = suffix == QLatin1String("svg");
    if (!svg && !QImageWriter::supportedImageFormats().contains(suffix.toLatin1()))
        return false;
    // A slide's size whatever the dock's: the chart is laid out again at 1600 x 900 (fonts at their usual size, so
    // they stay readable on a slide), drawn, and put back.
    const QSizeF slide(kExportWidth, kExportHeight);
    const QRectF before = chart()->geometry();
    chart()->setGeometry(QRectF(QPointF(0, 0), slide));
    bool ok = false;
    if (svg) {
        QSvgGenerator generator;
        generator.setFileName(path);
        generator.setSize(slide.toSize());
        generator.setViewBox(QRectF(QPointF(0, 0), slide));
        generator.setTitle(chart()->title());
        QPainter painter;
        if (painter.begin(&generator)) {
            painter.setRenderHint(QPainter::Antialiasing);
            scene()->render(&painter, QRectF(QPointF(0, 0), slide), QRectF(QPointF(0, 0), slide));
            painter.end();
            const QFileInfo written(path);
            ok = written.exists() && written.size() > 0;
        }
    } else {
        // Twice the pixels of the layout: sharp on a high-density projector or when zoomed.
        QImage image((slide * kExportScale).toSize(), QImage::Format_ARGB32_Premultiplied);
        image.setDevicePixelRatio(kExportScale);
        image.fill(Qt::white);
        QPainter painter(&image);
        painter.setRenderHint(QPainter::Antialiasing);
        painter.setRenderHint(QPainter::TextAntialiasing);
        scene()->render(&painter, QRectF(QPointF(0, 0), slide), QRectF(QPointF(0, 0), slide));
        painter.end();
        ok = image.save(path);
    }
    chart()->setGeometry(before);
    return ok;
}

int nearestPointIndex(const QXYSeries* series, const QPointF& point)
{
    const auto points = series->points();
    int best = -1;
    double bestDistance = std::numeric_limits<double>::infinity();
    for (int i = 0; i < points.size(); ++i) {
        const double d = std::abs(points[i].x() - point.x()) + std::abs(points[i].y() - point.y());
        if (d < bestDistance) {
            bestDistance = d;
            best = i;
        }
    }
    return best;
}

} // namespace shardscape::ui
