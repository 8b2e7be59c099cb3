// SPDX-License-Identifier: MIT
#include "shardscape/cost/uncertainty.h"

#include "shardscape/support/embedded.h"
#include "shardscape/support/error.h"
#include "shardscape/support/strings.h"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace shardscape {

std::vector<ResidualBand> parseResidualBands(const std::string& text, const std::string& origin)
{
    const auto doc = nlohmann::json::parse(text, nullptr, false);
    if (doc.is_discarded() || !doc.is_object() || doc.value("schema", "") != "shardscape.residuals/1"
        || !doc.contains("bands") || !doc["bands"].is_array())
        throw InputError(cat(origin, ": not a shardscape.residuals/1 table with a \"bands\" array"),
                         "regenerate it with the calibration bench (tests/bench/RESULTS.md)");
    std::vector<ResidualBand> bands;
    for (const auto& b : doc["bands"]) {
        if (!b.is_object() || !b.contains("key") || !b["key"].is_string() || !b.contains("rows")
            || !b["rows"].is_number_integer() || !b.contains("low") || !b["low"].is_number() || !b.contains("high")
            || !b["high"].is_number())
            throw InputError(cat(origin, ": every band needs key, rows, low and high"));
        ResidualBand band {b["key"].get<std::string>(), b["rows"].get<int>(), b["low"].get<double>(),
                           b["high"].get<double>()};
        if (!(band.low <= band.high) || band.low <= -1 || band.rows < 0)
            throw InputError(cat(origin, ": band '", band.key, "' needs -1 < low <= high and rows >= 0"));
        bands.push_back(std::move(band));
    }
    if (std::none_of(bands.begin(), bands.end(), [](const ResidualBand& b) { return b.key == "all"; }))
        throw InputError(cat(origin, ": no \"all\" band"));
    return bands;
}

const ResidualTables& calibrationResiduals()
{
    static const ResidualTables tables = [] {
        ResidualTables t;
        for (const auto& file : embeddedCalibrationTables()) {
            const std::string origin = cat("resources/calibration/", file.name);
            if (file.name == "step_time_residuals.json")
                t.step_time = parseResidualBands(std::string(file.text), origin);
            else if (file.name == "peak_memory_residuals.json")
                t.peak_memory = parseResidualBands(std::string(file.text), origin);
        }
        return t;
    }();
    return tables;
}

std::string calibrationRegime(const ParallelConfig& c, std::int64_t seqLen)
{
    if (c.cp > 1 || seqLen >= 32768)
        return "long-context";
    if (c.zero_stage >= 3)
        return "sharded-dp";
    if (c.pp > 1)
        return "pipeline";
    if (c.tp > 1)
        return "tensor";
    return "data";
}

const ResidualBand& bandFor(const std::vector<ResidualBand>& bands, const std::string& key)
{
    static const ResidualBand none {"all", 0, 0, 0};
    const ResidualBand* all = &none;
    for (const auto& b : bands) {
        if (b.key == key && b.rows >= kMinRowsPerBand)
            return b;
        if (b.key == "all")
            all = &b;
    }
    return *all;
}

void applyUncertainty(Evaluation& e, std::int64_t seqLen, double headroomBytes)
{
    const ResidualTables& tables = calibrationResiduals();
    e.regime = calibrationRegime(e.config, seqLen);
    // A measured time t relates to the prediction as t = predicted x (1 + residual).
    const ResidualBand& time = bandFor(tables.step_time, e.regime);
    e.step_time_range = {e.step_time * (1 + std::min(0.0, time.low)), e.step_time * (1 + std::max(0.0, time.high))};
    const double peak = e.peakMemory();
    const ResidualBand& memory = bandFor(tables.peak_memory, std::string(frameworkName(e.config.framework)));
    e.peak_memory_range = {peak * (1 + std::min(0.0, memory.low)), peak * (1 + std::max(0.0, memory.high))};
    const double limit = e.memory_limit_bytes;
    if (peak > limit)
        e.oom_risk = OomRisk::Likely;
    else if (std::max(e.peak_memory_range.high, peak + std::max(0.0, headroomBytes)) > limit)
        e.oom_risk = OomRisk::Tight;
    else
        e.oom_risk = OomRisk::Fits;
}

} // namespace shardscape
