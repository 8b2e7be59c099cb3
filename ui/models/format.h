// SPDX-License-Identifier: MIT
#pragma once

#include <QString>

#include <string_view>

/** Display text for the engine's units (seconds, bytes, FLOPs); GB = 1e9 bytes as everywhere in Shardscape. */
namespace shardscape::ui::format {

/** UTF-8 text from the core. */
QString text(std::string_view utf8);
/** "8.641 s", "412.5 ms", "37.0 µs" */
QString seconds(double seconds);
/** "76.5 GB", "539.5 MB", "32.8 kB" */
QString bytes(double bytes);
/** "76.5" (GB, one decimal) */
QString gigabytes(double bytes);
/** A count with an SI suffix: "6.74 B", "202.4 M", "121.4 k" */
QString count(double value);
/** "70.7%" from a fraction */
QString percent(double fraction, int decimals = 1);
/** Signed relative change: "+3.5%", "-0.4%" */
QString relativeDelta(double from, double to);

} // namespace shardscape::ui::format
