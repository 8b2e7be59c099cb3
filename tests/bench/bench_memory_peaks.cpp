// SPDX-License-Identifier: MIT
// Predicted vs measured per-GPU peak memory on public runs (tests/data/measured_peaks.json, sources in
// tests/data/measured_peaks.md): for every row the figure the source measured (max allocated, max reserved or the
// whole device), the relative error, and the OOM verdict (every run a source says ran must be predicted to fit).
//
//   bench_memory_peaks [measured_peaks.json] [--markdown] [--verbose] [--write-residuals FILE]
//
// --write-residuals writes the peak-memory residual bands (by framework) the uncertainty ranges use
// (resources/calibration/peak_memory_residuals.json).
#include "memory_peak_rows.h"
#include "residual_bands.h"

#include <cstdio>
#include <cstring>
#include <exception>

using namespace shardscape;
using namespace shardscape::memory_peaks;

#ifndef SHARDSCAPE_SOURCE_DIR
#define SHARDSCAPE_SOURCE_DIR "."
#endif

namespace {

const char* kindName(PeakKind kind)
{
    switch (kind) {
    case PeakKind::Allocated:
        return "allocated";
    case PeakKind::Reserved:
        return "reserved";
    case PeakKind::Device:
        break;
    }
    return "device";
}

} // namespace

int main(int argc, char** argv)
{
    std::string path = std::string(SHARDSCAPE_SOURCE_DIR) + "/tests/data/measured_peaks.json";
    bool markdown = false, verbose = false;
    std::string residualsPath;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--markdown"))
            markdown = true;
        else if (!std::strcmp(argv[i], "--verbose"))
            verbose = true;
        else if (!std::strcmp(argv[i], "--write-residuals") && i + 1 < argc)
            residualsPath = argv[++i];
        else if (argv[i][0] != '-')
            path = argv[i];
        else {
            std::fprintf(stderr,
                         "usage: bench_memory_peaks [rows.json] [--markdown] [--verbose] "
                         "[--write-residuals FILE]\n");
            return 2;
        }
    }
    try {
        const auto rows = calibration::loadRows(path);
        std::vector<double> errors;
        std::vector<residuals::Sample> samples;
        int ran = 0, ranPredictedFit = 0, within10 = 0, oom = 0, oomPredicted = 0;
        std::vector<std::string> skipped;
        if (markdown)
            std::printf("| id | framework | config | measured | measured GiB | predicted GiB | error | fits? |\n"
                        "|---|---|---|---|---:|---:|---:|---|\n");
        for (const auto& row : rows) {
            const PeakCase pc = makePeakCase(row);
            if (!pc.c.simulable) {
                skipped.push_back(cat(pc.id, ": ", pc.reason));
                continue;
            }
            const PeakPrediction p = predictPeak(pc);
            const double gib = units::kGiB;
            if (pc.ran) {
                ++ran;
                ranPredictedFit += p.predicted_fit ? 1 : 0;
                errors.push_back(std::abs(p.relative_error));
                within10 += std::abs(p.relative_error) <= 0.10 ? 1 : 0;
                samples.push_back(
                    {std::string(frameworkName(pc.c.config.framework)), pc.measured_bytes / p.predicted_bytes - 1});
            } else {
                ++oom;
                oomPredicted += p.predicted_fit ? 0 : 1;
            }
            const std::string config = pc.c.config.describe();
            if (markdown)
                std::printf("| %s | %s | %s | %s | %.1f | %.1f | %+.1f%% | %s |\n", pc.id.c_str(),
                            pc.framework_name.c_str(), config.c_str(), kindName(pc.kind), pc.measured_bytes / gib,
                            p.predicted_bytes / gib, 100 * p.relative_error,
                            p.predicted_fit ? "fits" : "**predicted OOM**");
            else
                std::printf("%-40s %-11s %-9s meas %6.1f GiB  pred %6.1f GiB  %+6.1f%%  %s\n", pc.id.c_str(),
                            pc.framework_name.c_str(), kindName(pc.kind), pc.measured_bytes / gib,
                            p.predicted_bytes / gib, 100 * p.relative_error,
                            p.predicted_fit ? "fits" : "PREDICTED OOM");
            if (verbose) {
                const auto& e = p.evaluation;
                for (std::size_t r = 0; r < e.stages.size(); ++r) {
                    const auto& m = e.stages[r].memory;
                    std::printf("    stage %zu: weights %.2f grads %.2f optimizer %.2f activations %.2f transient "
                                "%.2f runtime %.2f fragmentation %.2f = %.2f GiB (inflight %d)\n",
                                r, m.weights / gib, m.gradients / gib, m.optimizer / gib, m.activations / gib,
                                m.transient / gib, m.runtime / gib, m.fragmentation / gib, m.total() / gib,
                                e.stages[r].peak_inflight);
                }
                for (const auto& a : pc.assumptions)
                    std::printf("    assumed: %s\n", a.c_str());
                std::printf("    %s\n", config.c_str());
            }
        }
        const auto [inSample, loo] = residuals::coverage(samples);
        std::printf("\nrows simulated: %zu (ran: %d); skipped: %zu\n", errors.size(), ran, skipped.size());
        std::printf("median |peak error| %.1f%%, max %.1f%%, within 10%%: %d of %zu\n",
                    100 * residuals::percentile(errors, 0.5),
                    errors.empty() ? 0.0 : 100 * *std::max_element(errors.begin(), errors.end()), within10,
                    errors.size());
        std::printf("runs that ran predicted to fit: %d of %d\n", ranPredictedFit, ran);
        std::printf("runs that ran out of memory predicted OOM: %d of %d\n", oomPredicted, oom);
        std::printf("80%% residual band coverage: in-sample %.0f%%, leave-one-out %.0f%%\n", 100 * inSample, 100 * loo);
        for (const auto& s : skipped)
            std::printf("skipped %s\n", s.c_str());
        if (!residualsPath.empty())
            residuals::writeBands(residualsPath,
                                  residuals::bandsJson(samples,
                                                       "tests/bench/bench_memory_peaks on "
                                                       "tests/data/measured_peaks.json (by framework)"));
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench_memory_peaks: %s\n", e.what());
        return 1;
    }
}
