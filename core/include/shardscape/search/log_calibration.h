// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/profile/profile.h"
#include "shardscape/profile/training_log.h"

#include <filesystem>
#include <string>
#include <vector>

namespace shardscape {

/** One run to calibrate on: its training log and the job config it ran. */
struct LogRunSpec
{
    std::filesystem::path log;
    /** torchtitan TOML, Megatron launch script or DeepSpeed JSON (importJobConfig); empty = the log's own argument
        dump (Megatron-LM prints every argument at start). */
    std::filesystem::path job_config;
};

/** What `profile import-log` (and the desktop app's "Import training logs") is given. */
struct LogImportRequest
{
    std::vector<LogRunSpec> runs;
    /** Model preset, HF config.json or native graph; empty = the shape the job config describes (Megatron). */
    std::string model;
    /** Device preset or cluster .json the runs ran on (logs do not name the GPU reliably). */
    std::string cluster;
    /** Nodes and GPUs per node, for configs that leave the world size to the launcher; 0 = from the config. */
    int nodes = 0;
    int gpus_per_node = 0;
    /** Profile directory to write the calibration into; empty = the device's profile findProfile() would use, else
        defaultProfileDir() of the cluster's device. */
    std::filesystem::path profile_dir;
    bool dry_run = false; ///< fit and report; write nothing
    std::string tool; ///< recorded in a new profile
};

/** How one run's prediction moved. Steps in seconds, peaks in bytes; 0 = not available. */
struct LogRunReport
{
    std::string log; ///< file name
    std::string format; ///< trainingLogFormatName
    std::string config; ///< ParallelConfig::describe()
    int steps_logged = 0;
    int steps_used = 0; ///< the steady state (TrainingLog::steadySteps)
    double measured_step_s = 0;
    double predicted_step_s = 0; ///< before this import (the profile's earlier calibration included)
    double calibrated_step_s = 0; ///< with the new calibration
    double held_out_step_s = 0; ///< fitted without this run (leave-one-out); 0 with a single run
    std::string peak_kind; ///< "reserved" or "allocated"; empty when the log has no memory line
    double measured_peak_bytes = 0;
    double predicted_peak_bytes = 0;
    double calibrated_peak_bytes = 0;
    double held_out_peak_bytes = 0;
    std::vector<std::string> warnings; ///< the job config's import warnings
};

/** What importTrainingLogs fitted and (unless dry_run) wrote. */
struct LogImportResult
{
    std::filesystem::path file; ///< the profile written (or that would be)
    bool written = false;
    Profile profile; ///< as saved
    ProfileCalibration calibration;
    std::vector<LogRunReport> runs;
    /** One line each: the base the fit started from, the calibration replaced, parameters the runs do not
        determine. */
    std::vector<std::string> notes;
};

/**
 * Reads every log and job config first (a bad one leaves the profile untouched), predicts each run with the
 * cluster's cost source, and fits the profile's calibration: the log-scales of matmul, attention, memory-bound and
 * communication time by damped Gauss-Newton on the runs' log step-time errors with a weak pull towards 1 (a kind the
 * runs do not exercise keeps scale 1), and the peak-memory offset as the median of measured minus predicted peaks.
 * With two or more runs each run is also predicted by a fit on the others (leave-one-out). The calibration replaces
 * the profile's earlier one; its measured rows are kept. Throws InputError naming the file for bad input.
 */
LogImportResult importTrainingLogs(const LogImportRequest& request);

} // namespace shardscape
