// SPDX-License-Identifier: MIT
#include "stage_balance_chart.h"

#include <QBarCategoryAxis>
#include <QBarSeries>
#include <QBarSet>
#include <QChart>
#include <QLineSeries>
#include <QValueAxis>

#include <algorithm>
#include <numeric>

namespace shardscape::ui {

namespace {

constexpr double kMsPerSecond = 1e3;

QString layerName(const std::vector<Layer>& layers, int index)
{
    if (index < 0 || index >= static_cast<int>(layers.size()))
        return QString::number(index);
    return QString::fromStdString(layers[static_cast<std::size_t>(index)].name).toHtmlEscaped();
}

} // namespace

StageBalanceChart::StageBalanceChart(QWidget* parent)
    : ChartBase(parent)
    , m_bars(new QBarSeries)
    , m_mean(new QLineSeries)
    , m_axisX(new QBarCategoryAxis)
    , m_numberAxis(new QValueAxis(this))
    , m_axisY(new QValueAxis)
{
    QChart* c = chart();
    m_bars->setBarWidth(0.6);
    QPen meanPen(QColor(chart_colors::kDark));
    meanPen.setStyle(Qt::DashLine);
    meanPen.setWidthF(2);
    m_mean->setPen(meanPen);
    c->addSeries(m_bars);
    c->addSeries(m_mean);
    c->addAxis(m_axisX, Qt::AlignBottom);
    c->addAxis(m_axisY, Qt::AlignLeft);
    m_shownX = m_axisX;
    for (QAbstractSeries* s : c->series()) {
        s->attachAxis(m_axisX);
        s->attachAxis(m_axisY);
    }
    styleAxis(m_axisX, tr("pipeline stage: layers"), tr("stage"));
    styleAxis(m_numberAxis, tr("pipeline stage (hover a bar for its layers)"), tr("stage"));
    m_numberAxis->setTickType(QValueAxis::TicksDynamic);
    m_numberAxis->setTickAnchor(0);
    m_numberAxis->setMinorTickCount(0);
    m_numberAxis->setLabelFormat(QStringLiteral("%d"));
    m_numberAxis->setGridLineVisible(false);
    styleAxis(m_axisY, tr("time per micro-batch (ms)"), tr("ms per micro-batch"));
    m_axisY->setLabelFormat(QStringLiteral("%.0f"));
    // Queued: the axis reports truncation while the chart lays itself out; relabel after that.
    connect(m_axisX, &QAbstractAxis::labelsTruncatedChanged, this, &StageBalanceChart::onLabelsTruncated,
            Qt::QueuedConnection);
    // The plot area settles after the legend and the titles are laid out, which is after resizeEvent.
    connect(c, &QChart::plotAreaChanged, this,
            [this] { QMetaObject::invokeMethod(this, &StageBalanceChart::fitCategoryLabels, Qt::QueuedConnection); });
    connect(m_bars, &QBarSeries::hovered, this,
            [this](bool hovered, int index, QBarSet*) { showBarToolTip(hovered, index); });
    clear();
}

StageBalanceChart::~StageBalanceChart() = default;

void StageBalanceChart::useXAxis(QAbstractAxis* axis)
{
    if (axis == m_shownX)
        return;
    QChart* c = chart();
    for (QAbstractSeries* s : c->series())
        s->detachAxis(m_shownX);
    c->removeAxis(m_shownX); // hands it back: this widget keeps it for later
    m_shownX->setParent(this);
    c->addAxis(axis, Qt::AlignBottom);
    for (QAbstractSeries* s : c->series())
        s->attachAxis(axis);
    m_shownX = axis;
}

void StageBalanceChart::clear()
{
    m_bars->clear();
    m_mean->clear();
    m_mean->setName(tr("mean"));
    useXAxis(m_axisX);
    m_axisX->clear();
    m_labels.clear();
    m_toolTips.clear();
    m_slowest = -1;
    m_labelStyle = LabelStyle::OneLine;
    m_cutPerBar = -1;
    m_axisY->setRange(0, 100);
    setChartTitle(tr("Stage balance"), tr("no plan selected"));
}

void StageBalanceChart::setEvaluation(const Evaluation& evaluation, const std::vector<Layer>& layers)
{
    clear();
    const auto& stages = evaluation.stages;
    if (stages.empty())
        return;
    auto* set = new QBarSet(tr("forward + backward"));
    set->setColor(QColor(chart_colors::kBlue));
    set->setBorderColor(QColor(chart_colors::kBlue).darker(130));
    set->setSelectedColor(QColor(chart_colors::kVermillion));
    double slowest = 0;
    for (std::size_t i = 0; i < stages.size(); ++i) {
        const StageReport& stage = stages[i];
        const double ms = stage.compute * kMsPerSecond;
        set->append(ms);
        if (ms > slowest) {
            slowest = ms;
            m_slowest = static_cast<int>(i);
        }
        // Interleaved schedules give a rank several chunks; list each layer range.
        QStringList ranges;
        QStringList names;
        const auto chunks = stage.chunks.empty()
            ? std::vector<std::pair<int, int>> {{stage.first_layer, stage.last_layer}}
            : stage.chunks;
        for (const auto& [first, last] : chunks) {
            ranges << (first == last ? QString::number(first) : QStringLiteral("%1-%2").arg(first).arg(last));
            names << QStringLiteral("%1 \u2026 %2").arg(layerName(layers, first), layerName(layers, last));
        }
        m_labels << tr("%1: layers %2").arg(i).arg(ranges.join(QStringLiteral(", ")));
        m_toolTips << tr("<b>stage %1</b>: %2 ms per micro-batch (forward + backward)<br>%3 GPUs<br>%4")
                          .arg(i)
                          .arg(ms, 0, 'f', 2)
                          .arg(stage.devices)
                          .arg(names.join(QStringLiteral("<br>")));
    }
    if (m_slowest >= 0)
        set->selectBar(m_slowest);
    m_bars->append(set);

    const double mean = std::accumulate(stages.begin(), stages.end(), 0.0,
                                        [](double sum, const StageReport& s) { return sum + s.compute; })
        / static_cast<double>(stages.size()) * kMsPerSecond;
    m_mean->append(-0.5, mean);
    m_mean->append(static_cast<double>(stages.size()) - 0.5, mean);
    m_mean->setName(tr("mean %1 ms").arg(mean, 0, 'f', 1));
    const auto [low, high] = niceRange(0, slowest * 1.12, m_axisY->tickCount() - 1);
    m_axisY->setRange(low, high);
    fitCategoryLabels();

    const double imbalance = mean > 0 ? slowest / mean : 1.0;
    setChartTitle(tr("Stage balance: slowest stage %1 at %2x the mean").arg(m_slowest).arg(imbalance, 0, 'f', 2),
                  QString::fromStdString(evaluation.config.describe()));
}

QList<QBarSet*> StageBalanceChart::barSets() const
{
    return m_bars->barSets();
}

QStringList StageBalanceChart::categories() const
{
    if (m_shownX == m_axisX)
        return m_axisX->categories();
    QStringList numbers;
    for (int i = 0; i < m_labels.size(); i += std::max(1, m_labelStride))
        numbers << QString::number(i);
    return numbers;
}

void StageBalanceChart::resizeEvent(QResizeEvent* event)
{
    ChartBase::resizeEvent(event);
    fitCategoryLabels();
}

void StageBalanceChart::fitCategoryLabels()
{
    if (m_labels.isEmpty())
        return;
    // Room per bar: the plot area once laid out, else the widget less the value axis and margins.
    const QFontMetrics fm(labelFont());
    const double plotWidth = chart()->plotArea().width() > 0 ? chart()->plotArea().width() : width() - 110.0;
    const double perBar = std::max(1.0, plotWidth / static_cast<double>(m_labels.size()));
    int longest = 0;
    int longestLayers = 0; // "layers a-b" alone, for two-line labels
    int longestRanges = 0; // "a-b" alone, for three-line labels
    for (const QString& label : m_labels) {
        const QString layers = label.section(QStringLiteral(": "), 1);
        longest = std::max(longest, fm.horizontalAdvance(label));
        longestLayers = std::max(longestLayers, fm.horizontalAdvance(layers));
        longestRanges = std::max(longestRanges, fm.horizontalAdvance(layers.section(QLatin1Char(' '), 1)));
    }
    // Full labels on one line when they fit, on two lines (stage over layers), on three, else bare
    // stage numbers with the layer ranges in the tool tips. No tilted labels: QtCharts drops a
    // tilted last label that reaches past the axis end. QtCharts keeps some padding of its own, so
    // the margins are generous; should it still shorten a label, onLabelsTruncated steps down.
    LabelStyle style = LabelStyle::Numbers;
    if (longest + 24 <= perBar)
        style = LabelStyle::OneLine;
    else if (longestLayers + 20 <= perBar)
        style = LabelStyle::TwoLines;
    else if (longestRanges + 16 <= perBar)
        style = LabelStyle::ThreeLines;
    // QtCharts cut this style (or a wider one) with no more room than now: stay narrower, or the labels flip back
    // and forth between the style it cuts and the next one with every layout.
    if (m_cutPerBar >= 0 && perBar <= m_cutPerBar + 0.5 && style <= m_cutStyle)
        style = static_cast<LabelStyle>(static_cast<int>(m_cutStyle) + 1);
    m_perBar = perBar;
    applyLabelStyle(
        style, style == LabelStyle::Numbers ? numberStride(static_cast<int>(m_labels.size()), perBar, labelFont()) : 1);
}

void StageBalanceChart::applyLabelStyle(LabelStyle style, int stride)
{
    if (style != m_labelStyle || stride != m_labelStride || m_axisX->categories().isEmpty()) {
        m_labelStyle = style;
        m_labelStride = stride;
        if (style == LabelStyle::Numbers) {
            m_numberAxis->setRange(-0.5, static_cast<double>(m_labels.size()) - 0.5);
            m_numberAxis->setTickInterval(stride);
            useXAxis(m_numberAxis);
            return;
        }
        useXAxis(m_axisX);
        QStringList categories;
        for (int i = 0; i < m_labels.size(); ++i) {
            const QString layers = m_labels[i].section(QStringLiteral(": "), 1);
            switch (style) {
            case LabelStyle::OneLine:
                categories << m_labels[i];
                break;
            case LabelStyle::TwoLines:
                categories << QStringLiteral("<div align=\"center\">%1<br>%2</div>").arg(i).arg(layers);
                break;
            case LabelStyle::ThreeLines:
                categories << QStringLiteral("<div align=\"center\">%1<br>%2<br>%3</div>")
                                  .arg(i)
                                  .arg(tr("layers"), layers.section(QLatin1Char(' '), 1));
                break;
            case LabelStyle::Numbers:
                break;
            }
        }
        m_axisX->clear();
        m_axisX->append(categories);
        setAxisTitle(m_axisX, tr("pipeline stage: layers"), tr("stage"));
    }
}

void StageBalanceChart::onLabelsTruncated(bool truncated)
{
    if (!truncated || m_labels.isEmpty() || m_labelStyle == LabelStyle::Numbers)
        return;
    m_cutStyle = m_labelStyle;
    m_cutPerBar = m_perBar;
    switch (m_labelStyle) {
    case LabelStyle::OneLine:
        applyLabelStyle(LabelStyle::TwoLines, 1);
        break;
    case LabelStyle::TwoLines:
        applyLabelStyle(LabelStyle::ThreeLines, 1);
        break;
    case LabelStyle::ThreeLines:
        applyLabelStyle(LabelStyle::Numbers, 1);
        break;
    case LabelStyle::Numbers: // on the number axis, whose spacing fitCategoryLabels chose
        break;
    }
}

void StageBalanceChart::showBarToolTip(bool hovered, int index)
{
    showToolTip(hovered && index >= 0 && index < m_toolTips.size() ? m_toolTips[index] : QString());
}

} // namespace shardscape::ui
