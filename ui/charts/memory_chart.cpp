// SPDX-License-Identifier: MIT
#include "memory_chart.h"

#include <QAreaSeries>
#include <QBarSet>
#include <QChart>
#include <QLegend>
#include <QLegendMarker>
#include <QLineSeries>
#include <QStackedBarSeries>
#include <QValueAxis>

#include <algorithm>
#include <array>

namespace shardscape::ui {

namespace {

constexpr double kBytesPerGB = 1e9;

struct Component
{
    const char* name;
    unsigned color;
    double MemoryBreakdown::*bytes;
};

// Static state at the bottom, the part that grows with micro-batches (activations) above it.
constexpr std::array<Component, 7> kComponents {{
    {"weights", chart_colors::kBlue, &MemoryBreakdown::weights},
    {"gradients", chart_colors::kSkyBlue, &MemoryBreakdown::gradients},
    {"optimizer", chart_colors::kGreen, &MemoryBreakdown::optimizer},
    {"activations", chart_colors::kOrange, &MemoryBreakdown::activations},
    {"transient", chart_colors::kVermillion, &MemoryBreakdown::transient},
    {"reserve", chart_colors::kGrey, &MemoryBreakdown::reserve},
    // What a calibration on the user's own runs adds (profile import-log); shown only where it is not zero.
    {"calibration", chart_colors::kPurple, &MemoryBreakdown::calibrated},
}};

} // namespace

MemoryChart::MemoryChart(QWidget* parent)
    : ChartBase(parent)
    , m_bars(new QStackedBarSeries)
    , m_limit(new QLineSeries)
    , m_rangeLow(new QLineSeries(this))
    , m_rangeHigh(new QLineSeries(this))
    , m_range(new QAreaSeries(m_rangeHigh, m_rangeLow))
    , m_axisX(new QValueAxis)
    , m_axisY(new QValueAxis)
{
    QChart* c = chart();
    m_bars->setBarWidth(0.6);
    c->addSeries(m_bars);
    QPen limitPen(QColor(chart_colors::kDark));
    limitPen.setStyle(Qt::DashLine);
    limitPen.setWidthF(2);
    m_limit->setPen(limitPen);
    c->addSeries(m_limit);
    // Translucent over the bars: the top of the tallest bar stays visible inside the band.
    QColor band(chart_colors::kDark);
    band.setAlphaF(0.18);
    m_range->setBrush(band);
    QPen bandPen(QColor(chart_colors::kDark));
    bandPen.setStyle(Qt::DotLine);
    m_range->setPen(bandPen);
    c->addSeries(m_range);
    c->addAxis(m_axisX, Qt::AlignBottom);
    c->addAxis(m_axisY, Qt::AlignLeft);
    for (QAbstractSeries* s : {static_cast<QAbstractSeries*>(m_bars), static_cast<QAbstractSeries*>(m_limit),
                               static_cast<QAbstractSeries*>(m_range)}) {
        s->attachAxis(m_axisX);
        s->attachAxis(m_axisY);
    }
    styleAxis(m_axisX, tr("pipeline stage"), tr("stage"));
    // Stage numbers on a value axis (bar i sits at x = i): a category axis cuts each label to its own bar's width,
    // so a 64-stage pipeline read "..." under every bar; here every stride-th number is written whole.
    m_axisX->setTickType(QValueAxis::TicksDynamic);
    m_axisX->setTickAnchor(0);
    m_axisX->setTickInterval(1);
    m_axisX->setMinorTickCount(0);
    m_axisX->setLabelFormat(QStringLiteral("%d"));
    m_axisX->setGridLineVisible(false);
    // The plot area settles after the legend and the titles are laid out, which is after resizeEvent.
    connect(c, &QChart::plotAreaChanged, this,
            [this] { QMetaObject::invokeMethod(this, &MemoryChart::fitStageLabels, Qt::QueuedConnection); });
    styleAxis(m_axisY, tr("memory per device (GB)"), tr("GB per device"));
    m_axisY->setLabelFormat(QStringLiteral("%.0f"));
    connect(m_bars, &QStackedBarSeries::hovered, this,
            [this](bool hovered, int index, QBarSet* set) { showBarToolTip(hovered, index, set); });
    clear();
}

MemoryChart::~MemoryChart() = default;

void MemoryChart::clear()
{
    m_bars->clear();
    m_limit->clear();
    m_limit->setName(tr("limit"));
    m_limitGB = 0;
    m_rangeLow->clear();
    m_rangeHigh->clear();
    m_range->setName(tr("peak range"));
    m_range->setVisible(false);
    m_rangeGB = {0, 0};
    m_stages.clear();
    m_devices.clear();
    m_servingToolTip.clear();
    m_axisX->setRange(-0.5, 0.5);
    m_axisX->setLabelsVisible(false);
    m_labelStride = 0;
    m_axisY->setRange(0, 80);
    setChartTitle(tr("Memory per device"), tr("no plan selected"));
}

void MemoryChart::setEvaluation(const Evaluation& evaluation)
{
    const auto stages = static_cast<int>(evaluation.stages.size());
    if (stages == 0) {
        // Rejected before costing: nothing to stack, say why instead.
        clear();
        setChartTitle(tr("Memory per device"), QString::fromStdString(evaluation.reason));
        return;
    }
    bool calibrated = false;
    for (const StageReport& stage : evaluation.stages)
        calibrated = calibrated || stage.memory.calibrated != 0;
    std::vector<const Component*> shown;
    for (const Component& component : kComponents)
        if (component.bytes != &MemoryBreakdown::calibrated || calibrated)
            shown.push_back(&component);

    // Another candidate with the same parts keeps the bar sets and only changes their values: rebuilding them
    // re-creates every legend marker and bar item, the slowest part of a chart update (tens of ms on a laptop).
    QList<QBarSet*> sets = m_bars->barSets();
    bool reuse = m_servingToolTip.isEmpty() && sets.size() == static_cast<qsizetype>(shown.size());
    for (std::size_t k = 0; reuse && k < shown.size(); ++k)
        reuse = sets[static_cast<qsizetype>(k)]->label() == tr(shown[k]->name);
    if (!reuse) {
        clear();
        sets.clear();
        for (const Component* component : shown) {
            auto* set = new QBarSet(tr(component->name));
            set->setColor(QColor(component->color));
            set->setBorderColor(QColor(component->color).darker(120));
            sets << set;
        }
        m_bars->append(sets);
    }
    m_stages.clear();
    m_devices.clear();
    double tallest = 0;
    for (const StageReport& stage : evaluation.stages) {
        tallest = std::max(tallest, stage.memory.total() / kBytesPerGB);
        m_stages.push_back(stage.memory);
        m_devices.push_back(stage.devices);
    }
    for (std::size_t k = 0; k < shown.size(); ++k) {
        QBarSet* set = sets[static_cast<qsizetype>(k)];
        QList<qreal> values;
        values.reserve(stages);
        for (const StageReport& stage : evaluation.stages)
            values << stage.memory.*shown[k]->bytes / kBytesPerGB;
        if (set->count() == stages) {
            for (int i = 0; i < stages; ++i)
                if (set->at(i) != values[i])
                    set->replace(i, values[i]);
        } else {
            set->remove(0, set->count());
            set->append(values);
        }
    }
    m_axisX->setRange(-0.5, stages - 0.5);
    m_axisX->setLabelsVisible(true);
    fitStageLabels();
    setAxisTitle(m_axisX, stages > 1 ? tr("pipeline stage (one device each)") : tr("the device (no pipeline)"),
                 stages > 1 ? tr("stage") : tr("device"));

    m_limitGB = evaluation.memory_limit_bytes / kBytesPerGB;
    if (m_limitGB > 0) {
        // Category i sits at x = i, so the line runs across the outer halves of the first and last bars too.
        m_limit->replace(QList<QPointF> {{-0.5, m_limitGB}, {stages - 0.5, m_limitGB}});
        m_limit->setName(tr("limit %1 GB").arg(m_limitGB, 0, 'f', 1));
    } else {
        m_limit->clear();
        m_limit->setName(tr("limit"));
    }
    const PredictionRange& range = evaluation.peak_memory_range;
    if (range.high > 0) {
        m_rangeGB = {range.low / kBytesPerGB, range.high / kBytesPerGB};
        m_rangeLow->replace(QList<QPointF> {{-0.5, m_rangeGB.first}, {stages - 0.5, m_rangeGB.first}});
        m_rangeHigh->replace(QList<QPointF> {{-0.5, m_rangeGB.second}, {stages - 0.5, m_rangeGB.second}});
        m_range->setName(tr("peak range %1 – %2 GB").arg(m_rangeGB.first, 0, 'f', 1).arg(m_rangeGB.second, 0, 'f', 1));
        m_range->setVisible(true);
        tallest = std::max(tallest, m_rangeGB.second);
    } else {
        m_rangeGB = {0, 0};
        m_rangeLow->clear();
        m_rangeHigh->clear();
        m_range->setName(tr("peak range"));
        m_range->setVisible(false);
    }
    // One change of the axis (a full relayout each) instead of setRange and applyNiceNumbers.
    const auto [low, high] = niceRange(0, std::max(tallest, m_limitGB) * 1.08, m_axisY->tickCount() - 1);
    m_axisY->setRange(low, high);

    const double peak = evaluation.peakMemory() / kBytesPerGB;
    const QString verdict = !evaluation.feasible                  ? tr("does not fit")
        : range.high > 0 && evaluation.oom_risk == OomRisk::Tight ? tr("tight (OOM risk)")
                                                                  : tr("fits");
    setChartTitle(
        tr("Memory per device: peak %1 GB of %2 GB, %3").arg(peak, 0, 'f', 1).arg(m_limitGB, 0, 'f', 1).arg(verdict),
        QString::fromStdString(evaluation.config.describe()));
}

void MemoryChart::resizeEvent(QResizeEvent* event)
{
    ChartBase::resizeEvent(event);
    fitStageLabels();
}

void MemoryChart::fitStageLabels()
{
    const auto stages = static_cast<int>(m_stages.size());
    if (stages == 0 || !m_servingToolTip.isEmpty())
        return;
    // Room per bar: the plot area once laid out, else the widget less the value axis, legend and margins.
    const double plotWidth = chart()->plotArea().width() > 0 ? chart()->plotArea().width() : width() - 260.0;
    const int stride = numberStride(stages, plotWidth / stages, labelFont());
    if (stride == m_labelStride)
        return;
    m_labelStride = stride;
    m_axisX->setTickInterval(stride);
}

void MemoryChart::setServing(const ServingEstimate& estimate)
{
    clear();
    const ServingMemory& m = estimate.memory;
    if (m.capacity <= 0) {
        setChartTitle(tr("Memory per GPU"), QString::fromStdString(estimate.reason));
        return;
    }
    struct Part
    {
        QString name;
        unsigned color;
        double bytes;
    };
    const std::array<Part, 5> parts {{
        {tr("weights"), chart_colors::kBlue, m.weights},
        {tr("KV in use"), chart_colors::kPurple, m.kv_cache},
        {tr("KV free"), 0xFFE8C5DA, std::max(0.0, m.kv_pool - m.kv_cache)},
        {tr("activations"), chart_colors::kOrange, m.activations},
        {tr("reserve"), chart_colors::kGrey, m.reserve},
    }};
    QList<QBarSet*> sets;
    double total = 0;
    m_servingToolTip = tr("<b>one GPU of the fullest stage</b>: %1 GB of %2 GB")
                           .arg((m.weights + m.kv_pool + m.activations + m.reserve) / kBytesPerGB, 0, 'f', 2)
                           .arg(m.capacity / kBytesPerGB, 0, 'f', 1);
    for (const Part& part : parts) {
        auto* set = new QBarSet(part.name);
        set->setColor(QColor(part.color));
        set->setBorderColor(QColor(part.color).darker(120));
        set->append(part.bytes / kBytesPerGB);
        sets << set;
        total += part.bytes / kBytesPerGB;
        m_servingToolTip += QStringLiteral("<br>%1: %2 GB").arg(part.name).arg(part.bytes / kBytesPerGB, 0, 'f', 2);
    }
    m_bars->append(sets);
    const QString deployment = QString::fromStdString(estimate.parallel.describe());
    setAxisTitle(m_axisX, tr("one GPU: %1").arg(deployment), tr("one GPU"));
    m_limitGB = m.capacity / kBytesPerGB;
    m_limit->append(-0.5, m_limitGB);
    m_limit->append(0.5, m_limitGB);
    m_limit->setName(tr("limit %1 GB").arg(m_limitGB, 0, 'f', 1));
    const auto [low, high] = niceRange(0, std::max(total, m_limitGB) * 1.08, m_axisY->tickCount() - 1);
    m_axisY->setRange(low, high);
    setChartTitle(tr("KV cache %1 GB per GPU").arg(m.kv_cache / kBytesPerGB, 0, 'f', 1),
                  tr("%1 sequences in flight, room for %2").arg(estimate.concurrency).arg(estimate.max_concurrency));
}

QList<QBarSet*> MemoryChart::barSets() const
{
    return m_bars->barSets();
}

QStringList MemoryChart::stageLabels() const
{
    QStringList labels;
    if (!m_axisX->labelsVisible() || m_labelStride <= 0)
        return labels;
    for (int i = 0; i < static_cast<int>(m_stages.size()); i += m_labelStride)
        labels << QString::number(i);
    return labels;
}

void MemoryChart::showBarToolTip(bool hovered, int index, QBarSet* set)
{
    if (!m_servingToolTip.isEmpty()) {
        showToolTip(hovered ? m_servingToolTip : QString());
        return;
    }
    if (!hovered || index < 0 || index >= static_cast<int>(m_stages.size())) {
        showToolTip({});
        return;
    }
    const MemoryBreakdown& m = m_stages[static_cast<std::size_t>(index)];
    QString text = tr("<b>stage %1</b> (%2 GPUs): %3 GB in all")
                       .arg(index)
                       .arg(m_devices[static_cast<std::size_t>(index)])
                       .arg(m.total() / kBytesPerGB, 0, 'f', 2);
    for (const Component& component : kComponents) {
        if (component.bytes == &MemoryBreakdown::calibrated && m.calibrated == 0)
            continue;
        const QString line = tr("%1: %2 GB").arg(tr(component.name)).arg(m.*component.bytes / kBytesPerGB, 0, 'f', 2);
        text += QStringLiteral("<br>")
            + (set && set->label() == tr(component.name) ? QStringLiteral("<b>%1</b>").arg(line) : line);
    }
    showToolTip(text);
}

} // namespace shardscape::ui
