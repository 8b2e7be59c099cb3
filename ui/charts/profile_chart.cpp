// SPDX-License-Identifier: MIT
#include "profile_chart.h"

#include <QChart>
#include <QLegend>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QPen>
#include <QScatterSeries>
#include <QValueAxis>

#include <algorithm>
#include <cmath>
#include <iterator>

namespace shardscape::ui {

namespace {

constexpr unsigned kPalette[]
    = {chart_colors::kBlue,   chart_colors::kVermillion, chart_colors::kGreen, chart_colors::kOrange,
       chart_colors::kPurple, chart_colors::kSkyBlue,    chart_colors::kDark};

} // namespace

ProfileChart::ProfileChart(Kind kind, QWidget* parent)
    : ChartBase(parent)
    , m_kind(kind)
    , m_axisX(new QLogValueAxis)
    , m_axisY(new QValueAxis)
{
    m_axisX->setBase(10);
    m_axisX->setLabelFormat(QStringLiteral("%g"));
    m_axisX->setMinorTickCount(-1);
    m_axisY->setLabelFormat(QStringLiteral("%.0f"));
    chart()->addAxis(m_axisX, Qt::AlignBottom);
    chart()->addAxis(m_axisY, Qt::AlignLeft);
    if (kind == Kind::Matmul) {
        styleAxis(m_axisX, tr("GEMM work (GFLOP = 2mnk / 1e9, log)"), tr("GFLOP (log)"));
        styleAxis(m_axisY, tr("TFLOP/s"), tr("TFLOP/s"));
    } else {
        styleAxis(m_axisX, tr("message size (MB = 1e6 bytes, log)"), tr("MB (log)"));
        styleAxis(m_axisY, tr("bus bandwidth (GB/s)"), tr("busbw GB/s"));
    }
    clear();
}

ProfileChart::~ProfileChart() = default;

double ProfileChart::xDivisor() const
{
    return m_kind == Kind::Matmul ? 1e9 : 1e6;
}

void ProfileChart::clear()
{
    chart()->removeAllSeries();
    m_measured.clear();
    m_datasheet.clear();
    m_curves.clear();
    m_axisX->setBase(10);
    m_axisX->setMinorTickCount(-1);
    m_axisX->setRange(1e-3, 1e4);
    m_axisY->setRange(0, 1);
    m_axisY->setTickCount(6);
    // Six ticks over 0-1 with no decimals read "0, 0, 0, 1, 1, 1": one decimal for an empty chart.
    m_axisY->setLabelFormat(QStringLiteral("%.1f"));
    setChartTitle(m_kind == Kind::Matmul ? tr("Matmul: no measured GEMMs") : tr("Collectives: none measured"),
                  tr("the cost model uses the datasheet for these"));
}

void ProfileChart::setCurves(const std::vector<ProfileCurve>& curves, const QString& subtitle)
{
    clear();
    if (curves.empty())
        return;
    m_curves = curves;
    const double divisor = xDivisor();
    double minX = 0;
    double maxX = 0;
    double maxY = 0;
    const auto extend = [&](double x, double y) {
        minX = minX == 0 ? x : std::min(minX, x);
        maxX = std::max(maxX, x);
        maxY = std::max(maxY, y);
    };
    for (std::size_t i = 0; i < curves.size(); ++i) {
        const ProfileCurve& curve = curves[i];
        const QColor colour = QColor::fromRgba(kPalette[i % std::size(kPalette)]);
        const QString name = QString::fromStdString(curve.name);
        // One curve: its name is in the title, and the legend stays short enough to sit below a narrow chart.
        const QString prefix = curves.size() == 1 ? QString() : name + QLatin1Char(' ');

        auto* measured = new QScatterSeries;
        measured->setName(prefix + tr("measured"));
        measured->setColor(colour);
        measured->setBorderColor(colour);
        measured->setMarkerSize(7);
        for (const CurvePoint& p : curve.measured) {
            measured->append(p.work / divisor, p.rate);
            extend(p.work / divisor, p.rate);
        }
        auto* datasheet = new QLineSeries;
        datasheet->setName(prefix + tr("datasheet"));
        QPen pen(colour);
        pen.setWidthF(1.5);
        pen.setStyle(Qt::DashLine);
        datasheet->setPen(pen);
        for (const CurvePoint& p : curve.datasheet) {
            datasheet->append(p.work / divisor, p.rate);
            extend(p.work / divisor, p.rate);
        }
        for (QXYSeries* series : {static_cast<QXYSeries*>(datasheet), static_cast<QXYSeries*>(measured)}) {
            chart()->addSeries(series);
            series->attachAxis(m_axisX);
            series->attachAxis(m_axisY);
        }
        const auto tip = [this, i, divisor, name](const QPointF& point, bool state, bool isMeasured) {
            if (!state) {
                showToolTip({});
                return;
            }
            const auto& points = isMeasured ? m_curves[i].measured : m_curves[i].datasheet;
            const auto nearest = std::min_element(points.begin(), points.end(), [&](const auto& a, const auto& b) {
                return std::abs(std::log(a.work / divisor / point.x()))
                    < std::abs(std::log(b.work / divisor / point.x()));
            });
            if (nearest == points.end())
                return;
            const QString unit = m_kind == Kind::Matmul ? tr("TFLOP/s") : tr("GB/s");
            showToolTip(
                tr("%1 %2\n%3: %4 %5")
                    .arg(name, isMeasured ? tr("measured") : tr("datasheet"), QString::fromStdString(nearest->label))
                    .arg(nearest->rate, 0, 'f', 1)
                    .arg(unit));
        };
        connect(measured, &QScatterSeries::hovered, this,
                [tip](const QPointF& point, bool state) { tip(point, state, true); });
        connect(datasheet, &QLineSeries::hovered, this,
                [tip](const QPointF& point, bool state) { tip(point, state, false); });
        m_measured.push_back(measured);
        m_datasheet.push_back(datasheet);
    }
    // Whole powers of the base around the points, so that the log axis labels are round numbers; a wide span (an
    // nccl-tests sweep covers 8 B to 8 GB) steps by 100 or 1000 so that the labels fit a narrow dock.
    const double decades = std::log10(maxX / minX);
    const double base = decades > 6 ? 1000 : decades > 3 ? 100 : 10;
    m_axisX->setBase(base);
    m_axisX->setMinorTickCount(base == 10 ? -1 : static_cast<int>(std::lround(std::log10(base))) - 1);
    const double low = std::pow(base, std::floor(std::log(minX) / std::log(base) + 1e-9));
    double high = std::pow(base, std::ceil(std::log(maxX) / std::log(base) - 1e-9));
    if (high <= low)
        high = low * base;
    m_axisX->setRange(low, high);
    m_axisY->setRange(0, maxY > 0 ? maxY * 1.1 : 1);
    m_axisY->applyNiceNumbers();
    // As many decimals as the tick step needs, so that no two ticks print alike.
    const double step = (m_axisY->max() - m_axisY->min()) / std::max(1, m_axisY->tickCount() - 1);
    const int decimals = step >= 1 ? 0 : std::min(3, static_cast<int>(std::ceil(-std::log10(step))));
    m_axisY->setLabelFormat(QStringLiteral("%.%1f").arg(decimals));
    // A single curve is named in the title (the axes and the legend say the rest), so it fits a narrow dock.
    const QString what = m_kind == Kind::Matmul ? tr("GEMM throughput") : tr("Bus bandwidth");
    setChartTitle(curves.size() == 1 ? QString::fromStdString(curves[0].name)
                                     : tr("%1: measured vs datasheet").arg(what),
                  subtitle);
}

} // namespace shardscape::ui
