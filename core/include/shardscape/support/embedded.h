// SPDX-License-Identifier: MIT
#pragma once

#include <string_view>
#include <vector>

namespace shardscape {

/** A resource file compiled into the binary (see cmake/ShardscapeEmbed.cmake). */
struct EmbeddedFile
{
    std::string_view name; ///< base name, e.g. "llama2-7b.json"
    std::string_view text;
};

/** The files of resources/models: HF-style config files of the built-in model presets. */
const std::vector<EmbeddedFile>& embeddedModelPresets();
/** The files of resources/devices: datasheet device presets. */
const std::vector<EmbeddedFile>& embeddedDevicePresets();
/** The files of resources/calibration: residual tables written by the calibration benches (uncertainty ranges). */
const std::vector<EmbeddedFile>& embeddedCalibrationTables();

} // namespace shardscape
