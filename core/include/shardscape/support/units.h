// SPDX-License-Identifier: MIT
#pragma once

/** Units used everywhere in the engine: seconds, bytes, FLOPs. GB is 1e9 bytes, GiB is 2^30. */
namespace shardscape::units {

inline constexpr double kKB = 1e3;
inline constexpr double kMB = 1e6;
inline constexpr double kGB = 1e9;
inline constexpr double kTB = 1e12;
inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
inline constexpr double kMiB = 1024.0 * 1024.0;
inline constexpr double kTera = 1e12;
inline constexpr double kGiga = 1e9;
inline constexpr double kMicro = 1e-6;

} // namespace shardscape::units
