// SPDX-License-Identifier: MIT
#include "pareto_chart.h"

#include <QChart>
#include <QLegend>
#include <QLineSeries>
#include <QScatterSeries>
#include <QValueAxis>

#include <algorithm>
#include <cmath>
#include <limits>

namespace shardscape::ui {

namespace {

constexpr double kBytesPerGB = 1e9;

bool plottable(const Evaluation& e)
{
    return std::isfinite(e.step_time) && e.step_time > 0 && std::isfinite(e.peakMemory());
}

QString describe(const Evaluation& e)
{
    QString text = QStringLiteral("<b>%1</b><br>").arg(QString::fromStdString(e.config.describe()).toHtmlEscaped());
    text += ParetoChart::tr("step %1 s \u00b7 peak %2 GB per device")
                .arg(e.step_time, 0, 'f', 3)
                .arg(e.peakMemory() / kBytesPerGB, 0, 'f', 1);
    if (e.feasible)
        text += ParetoChart::tr(" \u00b7 MFU %1%").arg(e.mfu * 100, 0, 'f', 1);
    else if (!e.reason.empty())
        text += QStringLiteral("<br><i>%1</i>").arg(QString::fromStdString(e.reason).toHtmlEscaped());
    return text;
}

} // namespace

ParetoChart::ParetoChart(QWidget* parent)
    : ChartBase(parent)
    , m_feasible(new QScatterSeries)
    , m_infeasible(new QScatterSeries)
    , m_selected(new QScatterSeries)
    , m_front(new QLineSeries)
    , m_limit(new QLineSeries)
    , m_axisX(new QValueAxis)
    , m_axisY(new QValueAxis)
{
    QChart* c = chart();
    QPen limitPen(QColor(chart_colors::kDark));
    limitPen.setStyle(Qt::DashLine);
    limitPen.setWidthF(1.5);
    m_limit->setPen(limitPen);
    // Not the feasible points' blue: the front and the points each get their own legend swatch.
    QPen frontPen(QColor(chart_colors::kGreen));
    frontPen.setWidthF(1.5);
    frontPen.setStyle(Qt::DotLine);
    m_front->setPen(frontPen);

    // Shape and colour both differ, so the two kinds stay apart without colour vision too.
    m_feasible->setMarkerShape(QScatterSeries::MarkerShapeCircle);
    m_feasible->setMarkerSize(10);
    m_feasible->setColor(QColor(chart_colors::kBlue));
    m_feasible->setBorderColor(QColor(chart_colors::kBlue).darker(130));
    m_infeasible->setMarkerShape(QScatterSeries::MarkerShapeTriangle);
    m_infeasible->setMarkerSize(11);
    m_infeasible->setColor(QColor(chart_colors::kVermillion));
    m_infeasible->setBorderColor(QColor(chart_colors::kVermillion).darker(130));
    m_selected->setMarkerShape(QScatterSeries::MarkerShapeCircle);
    m_selected->setMarkerSize(22);
    m_selected->setBrush(Qt::NoBrush);
    QPen ring(QColor(chart_colors::kOrange));
    ring.setWidthF(3);
    m_selected->setPen(ring);

    for (QAbstractSeries* s :
         std::initializer_list<QAbstractSeries*> {m_limit, m_front, m_infeasible, m_feasible, m_selected})
        c->addSeries(s);
    // Circles, triangles, a ring and lines in the legend, as on the plot.
    c->legend()->setMarkerShape(QLegend::MarkerShapeFromSeries);
    c->addAxis(m_axisX, Qt::AlignBottom);
    c->addAxis(m_axisY, Qt::AlignLeft);
    for (QAbstractSeries* s : c->series()) {
        s->attachAxis(m_axisX);
        s->attachAxis(m_axisY);
    }
    styleAxis(m_axisX, tr("step time (s)"), tr("step (s)"));
    m_axisX->setMinorTickCount(4);
    keepTicksReadable(m_axisX);
    m_axisX->setMinorGridLineColor(QColor(0xF0, 0xF0, 0xF0));
    styleAxis(m_axisY, tr("peak memory per device (GB)"), tr("peak GB"));
    m_axisY->setLabelFormat(QStringLiteral("%.0f"));

    connect(m_feasible, &QScatterSeries::hovered, this,
            [this](const QPointF& p, bool state) { onHovered(p, state, true); });
    connect(m_infeasible, &QScatterSeries::hovered, this,
            [this](const QPointF& p, bool state) { onHovered(p, state, false); });
    connect(m_feasible, &QScatterSeries::clicked, this, [this](const QPointF& p) {
        const int k = nearestPointIndex(m_feasible, p);
        if (k >= 0)
            Q_EMIT candidateClicked(m_feasiblePoints[static_cast<std::size_t>(k)].index);
    });
    clear();
}

ParetoChart::~ParetoChart() = default;

void ParetoChart::clear()
{
    for (QXYSeries* s : std::initializer_list<QXYSeries*> {m_feasible, m_infeasible, m_selected, m_front, m_limit})
        s->clear();
    m_feasiblePoints.clear();
    m_infeasiblePoints.clear();
    m_selectedIndex = -1;
    m_feasible->setName(tr("feasible"));
    m_infeasible->setName(tr("infeasible"));
    m_selected->setName(tr("selected"));
    m_front->setName(tr("Pareto front"));
    m_limit->setName(tr("limit"));
    setReadableRange(m_axisX, 0, 1);
    m_axisY->setRange(0, 80);
    setChartTitle(tr("Step time vs memory"), tr("no candidates"));
}

void ParetoChart::setCandidates(const std::vector<Evaluation>& feasible, const std::vector<Evaluation>& infeasible,
                                int selectedIndex)
{
    clear();
    double minX = std::numeric_limits<double>::infinity();
    double maxX = 0;
    double maxY = 0;
    double limit = 0;
    const auto add = [&](QScatterSeries* series, std::vector<Point>& points, const std::vector<Evaluation>& input) {
        QList<QPointF> xy;
        for (std::size_t i = 0; i < input.size(); ++i) {
            const Evaluation& e = input[i];
            if (limit <= 0)
                limit = e.memory_limit_bytes / kBytesPerGB;
            if (!plottable(e))
                continue;
            const QPointF p(e.step_time, e.peakMemory() / kBytesPerGB);
            xy << p;
            points.push_back({static_cast<int>(i), describe(e)});
            minX = std::min(minX, p.x());
            maxX = std::max(maxX, p.x());
            maxY = std::max(maxY, p.y());
        }
        series->replace(xy); // one update instead of one per point
    };
    add(m_feasible, m_feasiblePoints, feasible);
    add(m_infeasible, m_infeasiblePoints, infeasible);
    // The counts go in the title: on a narrow chart the legend's column cuts a longer name ("infeasible (...").

    // Pareto front of the feasible points: sweep by step time, keep each point smaller than all faster ones.
    QList<QPointF> sorted = m_feasible->points();
    std::sort(sorted.begin(), sorted.end(),
              [](const QPointF& a, const QPointF& b) { return a.x() < b.x() || (a.x() == b.x() && a.y() < b.y()); });
    QList<QPointF> front;
    double smallest = std::numeric_limits<double>::infinity();
    for (const QPointF& p : sorted)
        if (p.y() < smallest) {
            front << p;
            smallest = p.y();
        }
    m_front->replace(front);

    if (m_feasible->count() + m_infeasible->count() == 0) {
        setChartTitle(tr("Step time vs memory"), tr("no candidates with a step time"));
        return;
    }
    const double spanX = maxX > minX ? maxX - minX : std::max(minX * 0.2, 1e-3);
    setReadableRange(m_axisX, std::max(0.0, minX - 0.06 * spanX), maxX + 0.06 * spanX);
    const auto [yLow, yHigh] = niceRange(0, std::max(maxY, limit) * 1.08, m_axisY->tickCount() - 1);
    m_axisY->setRange(yLow, yHigh);
    if (limit > 0) {
        m_limit->append(m_axisX->min(), limit);
        m_limit->append(m_axisX->max(), limit);
        m_limit->setName(tr("limit %1 GB").arg(limit, 0, 'f', 1));
    }
    setChartTitle(
        tr("Step time vs memory: %1 feasible, %2 infeasible").arg(m_feasible->count()).arg(m_infeasible->count()),
        tr("lower left is better; click a feasible point to select it"));
    setSelectedIndex(selectedIndex);
}

void ParetoChart::setSelectedIndex(int selectedIndex)
{
    m_selected->clear();
    m_selectedIndex = -1;
    const auto it = std::find_if(m_feasiblePoints.begin(), m_feasiblePoints.end(),
                                 [selectedIndex](const Point& p) { return p.index == selectedIndex; });
    if (it == m_feasiblePoints.end())
        return;
    m_selectedIndex = selectedIndex;
    m_selected->append(m_feasible->at(static_cast<int>(it - m_feasiblePoints.begin())));
}

void ParetoChart::onHovered(const QPointF& point, bool state, bool feasible)
{
    if (!state) {
        showToolTip({});
        return;
    }
    const auto* series = feasible ? m_feasible : m_infeasible;
    const auto& points = feasible ? m_feasiblePoints : m_infeasiblePoints;
    const int k = nearestPointIndex(series, point);
    if (k >= 0 && k < static_cast<int>(points.size()))
        showToolTip(points[static_cast<std::size_t>(k)].text);
}

} // namespace shardscape::ui
