// SPDX-License-Identifier: MIT
#pragma once

#include "chart_base.h"

#include "models/profile_curves.h"

#include <QList>

#include <vector>

class QLineSeries;
class QLogValueAxis;
class QScatterSeries;
class QValueAxis;

namespace shardscape::ui {

/**
 * Measured against datasheet throughput on a log work axis: per curve, the measured points (markers) and the
 * datasheet's prediction for the same work (a dashed line of the same colour). Matmul: TFLOP/s by GFLOP per GEMM;
 * collectives: bus bandwidth GB/s by message size in MB. The numbers are profile_curves.h's, unchanged.
 */
class ProfileChart : public ChartBase
{
    Q_OBJECT

public:
    enum class Kind
    {
        Matmul,
        Collectives
    };

    explicit ProfileChart(Kind kind, QWidget* parent = nullptr);
    ~ProfileChart() override;

    /** Replaces the curves; `subtitle` names the profile and the datasheet device. Empty: a placeholder title. */
    void setCurves(const std::vector<ProfileCurve>& curves, const QString& subtitle);
    void clear();

    Kind kind() const { return m_kind; }
    /** x is work / xDivisor(): FLOPs / 1e9 (GFLOP) or bytes / 1e6 (MB). */
    double xDivisor() const;
    /** One per curve, in the curves' order. */
    const QList<QScatterSeries*>& measuredSeries() const { return m_measured; }
    const QList<QLineSeries*>& datasheetSeries() const { return m_datasheet; }
    QLogValueAxis* workAxis() const { return m_axisX; }
    QValueAxis* rateAxis() const { return m_axisY; }

private:
    Kind m_kind;
    QLogValueAxis* m_axisX = nullptr;
    QValueAxis* m_axisY = nullptr;
    QList<QScatterSeries*> m_measured;
    QList<QLineSeries*> m_datasheet;
    std::vector<ProfileCurve> m_curves; ///< for the tool tips
};

} // namespace shardscape::ui
