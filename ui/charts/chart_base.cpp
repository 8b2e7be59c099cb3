// SPDX-License-Identifier: MIT
#include "chart_base.h"

#include <QAbstractAxis>
#include <QChart>
#include <QCursor>
#include <QFileInfo>
#include <QImageWriter>
#include <QLegend>
#include <QPainter>
#include <QSvgGenerator>
#include <QToolTip>

#include <algorithm>

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
    return {300, 220};
}

void ChartBase::setChartTitle(const QString& title, const QString& subtitle)
{
    QString html = QStringLiteral("<b>%1</b>").arg(title.toHtmlEscaped());
    if (!subtitle.isEmpty())
        html += QStringLiteral("<br><span style=\"color:#555555\">%1</span>").arg(subtitle.toHtmlEscaped());
    chart()->setTitle(html);
    QFont titleFont = font();
    titleFont.setPointSizeF(font().pointSizeF() * 1.05);
    chart()->setTitleFont(titleFont);
}

void ChartBase::styleAxis(QAbstractAxis* axis, const QString& title)
{
    axis->setTitleText(title);
    QFont titleFont = axis->titleFont();
    titleFont.setBold(false);
    axis->setTitleFont(titleFont);
    axis->setGridLineColor(QColor(0xE0, 0xE0, 0xE0));
    axis->setLabelsColor(QColor(0x33, 0x33, 0x33));
}

void ChartBase::showToolTip(const QString& text)
{
    if (text.isEmpty())
        QToolTip::hideText();
    else
        QToolTip::showText(QCursor::pos(), text, this);
}

bool ChartBase::labelsTruncated() const
{
    const auto axes = chart()->axes();
    return std::any_of(axes.begin(), axes.end(), [](const QAbstractAxis* a) { return a->labelsTruncated(); });
}

bool ChartBase::exportImage(const QString& path)
{
    const QString suffix = QFileInfo(path).suffix().toLower();
    if (suffix == QLatin1String("svg")) {
        QSvgGenerator generator;
        generator.setFileName(path);
        generator.setSize(size());
        generator.setViewBox(QRect(QPoint(0, 0), size()));
        generator.setTitle(chart()->title());
        {
            QPainter painter;
            if (!painter.begin(&generator))
                return false;
            painter.setRenderHint(QPainter::Antialiasing);
            render(&painter);
        }
        const QFileInfo written(path);
        return written.exists() && written.size() > 0;
    }
    if (!QImageWriter::supportedImageFormats().contains(suffix.toLatin1()))
        return false;
    return grab().save(path);
}

} // namespace shardscape::ui
