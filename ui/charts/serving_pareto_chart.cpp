// SPDX-License-Identifier: MIT
#include "serving_pareto_chart.h"

#include <QChart>
#include <QLineSeries>
#include <QScatterSeries>
#include <QValueAxis>

#include <algorithm>
#include <cmath>
#include <limits>

namespace shardscape::ui {

namespace {

struct CurvePoint
{
    QPointF xy; ///< TPOT ms, output tokens/s per GPU
    QString text;
};

QString deploymentName(const ServingEstimate& e)
{
    return QString::fromStdString(e.parallel.describe()).toHtmlEscaped();
}

CurvePoint curvePoint(const ServingEstimate& e, const ServingPoint& p)
{
    const double perGpu = p.output_tokens_per_s / std::max(1, e.parallel.gpus());
    return {QPointF(p.tpot_s * 1e3, perGpu),
            ServingParetoChart::tr("<b>%1</b> at concurrency %2<br>TPOT %3 ms \u00b7 TTFT %4 ms<br>%5 output tok/s per "
                                   "GPU (%6 in all)")
                .arg(deploymentName(e))
                .arg(p.concurrency)
                .arg(p.tpot_s * 1e3, 0, 'f', 1)
                .arg(p.ttft_s * 1e3, 0, 'f', 0)
                .arg(perGpu, 0, 'f', 0)
                .arg(p.output_tokens_per_s, 0, 'f', 0)};
}

} // namespace

ServingParetoChart::ServingParetoChart(QWidget* parent)
    : ChartBase(parent)
    , m_points(new QScatterSeries)
    , m_selected(new QScatterSeries)
    , m_curve(new QLineSeries)
    , m_front(new QLineSeries)
    , m_bound(new QLineSeries)
    , m_axisX(new QValueAxis)
    , m_axisY(new QValueAxis)
{
    QChart* c = chart();
    QPen boundPen(QColor(chart_colors::kDark));
    boundPen.setStyle(Qt::DashLine);
    boundPen.setWidthF(1.5);
    m_bound->setPen(boundPen);
    QPen frontPen(QColor(chart_colors::kBlue));
    frontPen.setWidthF(1.5);
    frontPen.setStyle(Qt::DotLine);
    m_front->setPen(frontPen);
    QPen curvePen(QColor(chart_colors::kOrange));
    curvePen.setWidthF(2.5);
    m_curve->setPen(curvePen);
    m_curve->setPointsVisible(true);
    m_points->setMarkerShape(QScatterSeries::MarkerShapeCircle);
    m_points->setMarkerSize(10);
    m_points->setColor(QColor(chart_colors::kBlue));
    m_points->setBorderColor(QColor(chart_colors::kBlue).darker(130));
    m_selected->setMarkerShape(QScatterSeries::MarkerShapeCircle);
    m_selected->setMarkerSize(22);
    m_selected->setBrush(Qt::NoBrush);
    QPen ring(QColor(chart_colors::kOrange));
    ring.setWidthF(3);
    m_selected->setPen(ring);

    for (QAbstractSeries* s : std::initializer_list<QAbstractSeries*> {m_bound, m_front, m_curve, m_points, m_selected})
        c->addSeries(s);
    c->addAxis(m_axisX, Qt::AlignBottom);
    c->addAxis(m_axisY, Qt::AlignLeft);
    for (QAbstractSeries* s : c->series()) {
        s->attachAxis(m_axisX);
        s->attachAxis(m_axisY);
    }
    styleAxis(m_axisX, tr("time per output token (ms)"), tr("TPOT (ms)"));
    styleAxis(m_axisY, tr("output tokens/s per GPU"), tr("tok/s per GPU"));
    m_axisY->setLabelFormat(QStringLiteral("%.0f"));

    connect(m_points, &QScatterSeries::hovered, this,
            [this](const QPointF& p, bool state) { showPointToolTip(p, state, m_points, m_pointTexts); });
    connect(m_front, &QLineSeries::hovered, this,
            [this](const QPointF& p, bool state) { showPointToolTip(p, state, m_front, m_frontTexts); });
    connect(m_curve, &QLineSeries::hovered, this,
            [this](const QPointF& p, bool state) { showPointToolTip(p, state, m_curve, m_curveTexts); });
    connect(m_points, &QScatterSeries::clicked, this, [this](const QPointF& p) {
        const int k = nearestPointIndex(m_points, p);
        if (k >= 0)
            Q_EMIT deploymentClicked(k);
    });
    clear();
}

ServingParetoChart::~ServingParetoChart() = default;

void ServingParetoChart::clear()
{
    for (QXYSeries* s : std::initializer_list<QXYSeries*> {m_points, m_selected, m_curve, m_front, m_bound})
        s->clear();
    m_deployments.clear();
    m_pointTexts.clear();
    m_frontTexts.clear();
    m_curveTexts.clear();
    m_selectedIndex = -1;
    m_points->setName(tr("deployments"));
    m_selected->setName(tr("selected"));
    m_curve->setName(tr("selected vs concurrency"));
    m_front->setName(tr("Pareto front"));
    m_bound->setName(tr("TPOT bound"));
    m_bound->setVisible(false);
    m_axisX->setRange(0, 50);
    m_axisY->setRange(0, 1000);
    setChartTitle(tr("Throughput vs latency"), tr("no deployments"));
}

void ServingParetoChart::setDeployments(const std::vector<ServingEstimate>& deployments, int selectedIndex,
                                        double maxTpotMs)
{
    clear();
    m_deployments = deployments;
    double maxX = 0;
    double maxY = 0;
    QList<QPointF> xy;
    std::vector<CurvePoint> all;
    for (const ServingEstimate& e : deployments) {
        const ServingPoint planned {e.concurrency, e.ttft_s, e.tpot_s, e.output_tokens_per_s};
        const CurvePoint p = curvePoint(e, planned);
        xy << p.xy;
        m_pointTexts.push_back(p.text);
        for (const ServingPoint& q : e.curve)
            if (q.tpot_s > 0 && std::isfinite(q.tpot_s))
                all.push_back(curvePoint(e, q));
        all.push_back(p);
    }
    m_points->replace(xy);
    m_points->setName(tr("deployments (%1)").arg(xy.size()));
    for (const CurvePoint& p : all) {
        maxX = std::max(maxX, p.xy.x());
        maxY = std::max(maxY, p.xy.y());
    }

    // The front: sweep by latency, keep each point with more throughput than every faster one.
    std::sort(all.begin(), all.end(), [](const CurvePoint& a, const CurvePoint& b) {
        return a.xy.x() < b.xy.x() || (a.xy.x() == b.xy.x() && a.xy.y() > b.xy.y());
    });
    QList<QPointF> front;
    double best = -1;
    for (const CurvePoint& p : all)
        if (p.xy.y() > best) {
            front << p.xy;
            m_frontTexts.push_back(p.text);
            best = p.xy.y();
        }
    m_front->replace(front);

    if (xy.isEmpty()) {
        setChartTitle(tr("Throughput vs latency"), tr("no deployment serves the request"));
        return;
    }
    maxX = std::max(maxX, maxTpotMs);
    m_axisX->setRange(0, maxX * 1.08);
    m_axisX->applyNiceNumbers();
    m_axisY->setRange(0, maxY * 1.08);
    m_axisY->applyNiceNumbers();
    if (maxTpotMs > 0) {
        m_bound->append(maxTpotMs, 0);
        m_bound->append(maxTpotMs, m_axisY->max());
        m_bound->setName(tr("TPOT bound %1 ms").arg(maxTpotMs, 0, 'f', 1));
        m_bound->setVisible(true);
    }
    setChartTitle(tr("Throughput vs latency: %1 deployments").arg(xy.size()),
                  tr("upper left is better; click a point to select its deployment"));
    setSelectedIndex(selectedIndex);
}

void ServingParetoChart::setSelectedIndex(int selectedIndex)
{
    m_selected->clear();
    m_curve->clear();
    m_curveTexts.clear();
    m_selectedIndex = -1;
    if (selectedIndex < 0 || selectedIndex >= m_points->count())
        return;
    m_selectedIndex = selectedIndex;
    m_selected->append(m_points->at(selectedIndex));
    const ServingEstimate& e = m_deployments[static_cast<std::size_t>(selectedIndex)];
    QList<QPointF> curve;
    for (const ServingPoint& q : e.curve) {
        if (q.tpot_s <= 0 || !std::isfinite(q.tpot_s))
            continue;
        const CurvePoint p = curvePoint(e, q);
        curve << p.xy;
        m_curveTexts.push_back(p.text);
    }
    m_curve->replace(curve);
    m_curve->setName(tr("selected vs concurrency"));
}

void ServingParetoChart::showPointToolTip(const QPointF& point, bool state, const QXYSeries* series,
                                          const std::vector<QString>& texts)
{
    if (!state) {
        showToolTip({});
        return;
    }
    const int k = nearestPointIndex(series, point);
    if (k >= 0 && k < static_cast<int>(texts.size()))
        showToolTip(texts[static_cast<std::size_t>(k)]);
}

} // namespace shardscape::ui
