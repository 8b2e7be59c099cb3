// SPDX-License-Identifier: MIT
#include "models/format.h"

#include <QLocale>

#include <cmath>

namespace shardscape::ui::format {

namespace {

QString number(double value, int decimals)
{
    return QLocale::c().toString(value, 'f', decimals);
}

} // namespace

QString text(std::string_view utf8)
{
    return QString::fromUtf8(utf8.data(), static_cast<qsizetype>(utf8.size()));
}

QString seconds(double s)
{
    const double a = std::abs(s);
    if (a >= 1 || a == 0)
        return QStringLiteral("%1 s").arg(number(s, 3));
    if (a >= 1e-3)
        return QStringLiteral("%1 ms").arg(number(s * 1e3, 1));
    return QStringLiteral("%1 µs").arg(number(s * 1e6, 1));
}

QString bytes(double b)
{
    const double a = std::abs(b);
    if (a >= 1e9)
        return QStringLiteral("%1 GB").arg(number(b / 1e9, 1));
    if (a >= 1e6)
        return QStringLiteral("%1 MB").arg(number(b / 1e6, 1));
    if (a >= 1e3)
        return QStringLiteral("%1 kB").arg(number(b / 1e3, 1));
    return QStringLiteral("%1 B").arg(number(b, 0));
}

QString gigabytes(double b)
{
    return number(b / 1e9, 1);
}

QString count(double value)
{
    const double a = std::abs(value);
    if (a >= 1e12)
        return QStringLiteral("%1 T").arg(number(value / 1e12, 2));
    if (a >= 1e9)
        return QStringLiteral("%1 B").arg(number(value / 1e9, 2));
    if (a >= 1e6)
        return QStringLiteral("%1 M").arg(number(value / 1e6, 1));
    if (a >= 1e3)
        return QStringLiteral("%1 k").arg(number(value / 1e3, 1));
    return number(value, 0);
}

QString percent(double fraction, int decimals)
{
    return QStringLiteral("%1%").arg(number(100 * fraction, decimals));
}

QString relativeDelta(double from, double to)
{
    if (from == 0)
        return QStringLiteral("—");
    const double change = (to - from) / std::abs(from);
    return QStringLiteral("%1%2%").arg(change >= 0 ? QStringLiteral("+") : QString(), number(100 * change, 1));
}

} // namespace shardscape::ui::format
