// SPDX-License-Identifier: MIT
#include "bubble_chart.h"

#include <QChart>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QScatterSeries>
#include <QValueAxis>

#include <algorithm>
#include <cmath>

namespace shardscape::ui {

BubbleChart::BubbleChart(QWidget* parent)
    : ChartBase(parent)
    , m_curve(new QLineSeries)
    , m_current(new QScatterSeries)
    , m_axisX(new QLogValueAxis)
    , m_axisY(new QValueAxis)
{
    QChart* c = chart();
    QPen pen(QColor(chart_colors::kBlue));
    pen.setWidthF(2);
    m_curve->setPen(pen);
    m_curve->setPointsVisible(true);
    m_current->setMarkerShape(QScatterSeries::MarkerShapeCircle);
    m_current->setMarkerSize(14);
    m_current->setColor(QColor(chart_colors::kOrange));
    m_current->setBorderColor(QColor(chart_colors::kDark));
    c->addSeries(m_curve);
    c->addSeries(m_current);
    // Micro-batch counts are usually powers of two and the bubble falls like 1/m: a log2 x axis
    // spreads the interesting small counts out.
    m_axisX->setBase(2);
    m_axisX->setLabelFormat(QStringLiteral("%g"));
    m_axisX->setMinorTickCount(0);
    c->addAxis(m_axisX, Qt::AlignBottom);
    c->addAxis(m_axisY, Qt::AlignLeft);
    for (QAbstractSeries* s : c->series()) {
        s->attachAxis(m_axisX);
        s->attachAxis(m_axisY);
    }
    styleAxis(m_axisX, tr("micro-batches per step (log scale)"), tr("micro-batches"));
    styleAxis(m_axisY, tr("pipeline bubble: idle share of the step (%)"), tr("bubble (% of step)"));
    m_axisY->setLabelFormat(QStringLiteral("%.0f"));
    connect(m_curve, &QLineSeries::hovered, this, [this](const QPointF& p, bool state) {
        showToolTip(state ? tr("%1 micro-batches: bubble %2%").arg(std::lround(p.x())).arg(p.y(), 0, 'f', 1)
                          : QString());
    });
    clear();
}

BubbleChart::~BubbleChart() = default;

void BubbleChart::clear()
{
    m_curve->clear();
    m_current->clear();
    m_curve->setName(tr("bubble ratio"));
    m_current->setName(tr("current"));
    m_axisX->setRange(1, 64);
    m_axisY->setRange(0, 100);
    setChartTitle(tr("Pipeline bubble vs micro-batches"), tr("no plan selected"));
}

void BubbleChart::setCurve(const std::vector<std::pair<int, double>>& points, int currentMicrobatches)
{
    clear();
    std::vector<std::pair<int, double>> sorted;
    for (const auto& p : points)
        if (p.first > 0 && std::isfinite(p.second))
            sorted.push_back(p);
    std::sort(sorted.begin(), sorted.end());
    if (sorted.empty())
        return;
    QList<QPointF> xy;
    double maxY = 0;
    for (const auto& [m, ratio] : sorted) {
        xy << QPointF(m, ratio * 100);
        maxY = std::max(maxY, ratio * 100);
        if (m == currentMicrobatches) {
            m_current->append(m, ratio * 100);
            m_current->setName(tr("current: %1 micro-batches, %2%").arg(m).arg(ratio * 100, 0, 'f', 1));
        }
    }
    m_curve->replace(xy);
    // Whole powers of two at the ends, so the log axis puts its labels on them.
    const double lo = std::exp2(std::floor(std::log2(sorted.front().first)));
    const double hi = std::exp2(std::ceil(std::log2(sorted.back().first)));
    m_axisX->setRange(lo, hi > lo ? hi : lo * 2);
    // A 1-2-5 top with five steps, and as many decimals as the step needs: a flat 0-1% curve must not read
    // "0 0 0 1 1 1" (one decimal below a top of 5). The bubble is a share of the step: never over 100%.
    double top = 1;
    for (const double candidate : {1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0}) {
        top = candidate;
        if (maxY * 1.1 <= candidate)
            break;
    }
    m_axisY->setRange(0, top);
    m_axisY->setTickCount(6);
    m_axisY->setLabelFormat(top < 5 ? QStringLiteral("%.1f") : QStringLiteral("%.0f"));
    const QString subtitle = m_current->count() > 0 ? tr("selected plan at %1 micro-batches: %2% bubble")
                                                          .arg(currentMicrobatches)
                                                          .arg(m_current->at(0).y(), 0, 'f', 1)
                                                    : tr("selected plan at %1 micro-batches").arg(currentMicrobatches);
    setChartTitle(tr("Pipeline bubble vs micro-batches"), subtitle);
}

} // namespace shardscape::ui
