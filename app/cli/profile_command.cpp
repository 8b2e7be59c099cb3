// SPDX-License-Identifier: MIT
// `profile show`, `profile import-nccl` and `profile import-log`: what a measured profile holds, adding nccl-tests
// logs to one, and calibrating it on the user's own training runs.
#include "cli_common.h"
#include "commands.h"

#include "shardscape/profile/nccl_tests_import.h"
#include "shardscape/profile/profile_cost_source.h"
#include "shardscape/profile/profile_db.h"
#include "shardscape/profile/profile_import.h"
#include "shardscape/profile/profile_summary.h"
#include "shardscape/search/log_calibration.h"
#include "shardscape/support/error.h"
#include "shardscape/support/strings.h"
#include "shardscape/support/units.h"
#include "text_table.h"

#include <iostream>
#include <memory>

namespace shardscape::cli {

namespace {

struct ShowOptions
{
    std::string profile_dir;
    std::string profile_file;
};

struct ImportOptions
{
    std::vector<std::string> logs;
    std::string profile_dir;
    std::string device_name;
};

struct ImportLogOptions
{
    std::vector<std::string> logs;
    std::vector<std::string> jobs;
    std::string model;
    std::string cluster;
    int nodes = 0;
    int gpus_per_node = 0;
    std::string profile_dir;
    bool dry_run = false;
};

void printProfile(const std::filesystem::path& file, const Profile& profile)
{
    const auto& d = profile.device;
    const auto preset = presetForDeviceName(d.name);
    std::cout << "Profile " << file.string() << ": valid (" << kProfileFormat << ", checksum ok)\n";
    std::cout << "Device: " << d.name << " (" << deviceSlug(d.name)
              << (preset ? cat("; preset ", *preset) : std::string("; no preset")) << ")\n";
    std::vector<std::string> facts;
    if (d.count > 0)
        facts.push_back(cat(d.count, " local GPUs"));
    if (d.memory_bytes > 0)
        facts.push_back(cat(fixed(d.memory_bytes / units::kGB, 1), " GB memory"));
    if (d.runtime_reserve_bytes > 0)
        facts.push_back(cat(fixed(d.runtime_reserve_bytes / units::kGB, 2), " GB runtime reserve"));
    if (d.hbm_copy_bytes_per_s > 0)
        facts.push_back(cat("copy ", fixed(d.hbm_copy_bytes_per_s / units::kGB, 0), " GB/s"));
    if (d.sm_count > 0)
        facts.push_back(cat(d.sm_count, " SMs"));
    if (!d.compute_capability.empty())
        facts.push_back("compute capability " + d.compute_capability);
    if (!d.driver_version.empty())
        facts.push_back("driver " + d.driver_version);
    if (!d.runtime_version.empty())
        facts.push_back("runtime " + d.runtime_version);
    if (!facts.empty())
        std::cout << "  " << join(facts) << '\n';
    std::cout << "Created " << profile.created_utc << " by " << profile.tool << '\n';
    std::cout << "Measured:\n";
    for (const auto& kind : summarizeProfile(profile)) {
        if (kind.lines.empty()) {
            std::cout << "  " << kind.kind << ": not measured (datasheet)\n";
            continue;
        }
        std::cout << "  " << kind.kind << ":\n";
        for (const auto& line : kind.lines)
            std::cout << "    " << line << '\n';
    }
    // The name the cost model reports; the datasheet behind it only lends its name here.
    Cluster cluster;
    cluster.device.name = preset.value_or(deviceSlug(d.name));
    const auto source
        = makeProfileCostSource(std::make_shared<const Profile>(profile), makeDatasheetCostSource(cluster, {}));
    std::cout << "Cost source: " << source->name() << '\n';
}

int runShow(const ShowOptions& o)
{
    if (o.profile_file.empty() && o.profile_dir.empty()) {
        const auto root = profileCacheRoot();
        const auto dirs = cachedProfileDirs();
        if (dirs.empty()) {
            std::cout << "No profiles under " << (root.empty() ? std::string("(no HOME)") : root.string())
                      << ". Measure one with shardscape-profile, or import nccl-tests logs with "
                         "shardscape-cli profile import-nccl LOG...\n";
            return kExitOk;
        }
        std::cout << "Profiles under " << root.string() << ":\n";
        for (const auto& dir : dirs) {
            const ProfileStatus status = inspectProfile(dir / kProfileFileName);
            std::cout << "  " << dir.filename().string() << ": " << profileStateName(status.state);
            if (status.state == ProfileState::Valid)
                std::cout << " (" << status.profile->device.name << ")";
            else
                std::cout << " (" << status.reason << ")";
            std::cout << '\n';
        }
        std::cout << "(shardscape-cli profile show --profile-dir DIR for the details of one)\n";
        return kExitOk;
    }
    const std::filesystem::path file = o.profile_file.empty() ? std::filesystem::path(o.profile_dir) / kProfileFileName
                                                              : std::filesystem::path(o.profile_file);
    printProfile(file, loadProfile(file));
    return kExitOk;
}

int runImport(const ImportOptions& o)
{
    const std::vector<std::filesystem::path> logs(o.logs.begin(), o.logs.end());
    const NcclImportResult result
        = importNcclTestsLogs(logs, o.profile_dir, o.device_name, "shardscape-cli 0.1.0 profile import-nccl");
    for (const auto& line : result.lines)
        std::cout << line << '\n';
    std::cout << "saved " << result.file.string() << " (" << result.profile.collectives.size()
              << " collective rows, device " << result.profile.device.name << ")\n";
    return kExitOk;
}

std::string percentOff(double predicted, double measured)
{
    if (predicted <= 0 || measured <= 0)
        return "-";
    const double p = 100 * (predicted / measured - 1);
    return cat(p >= 0 ? "+" : "", fixed(p, 1), "%");
}

int runImportLog(const ImportLogOptions& o)
{
    if (!o.jobs.empty() && o.jobs.size() != o.logs.size())
        throw InputError(cat(o.logs.size(), " logs but ", o.jobs.size(), " --job configs"),
                         "give one --job per log, in the same order ('-' = the log's own Megatron argument dump)");
    LogImportRequest request;
    for (std::size_t i = 0; i < o.logs.size(); ++i) {
        LogRunSpec spec;
        spec.log = o.logs[i];
        if (!o.jobs.empty() && o.jobs[i] != "-")
            spec.job_config = o.jobs[i];
        request.runs.push_back(std::move(spec));
    }
    request.model = o.model;
    request.cluster = o.cluster;
    request.nodes = o.nodes;
    request.gpus_per_node = o.gpus_per_node;
    request.profile_dir = o.profile_dir;
    request.dry_run = o.dry_run;
    request.tool = "shardscape-cli 0.1.0 profile import-log";
    const LogImportResult result = importTrainingLogs(request);

    for (const auto& run : result.runs)
        for (const auto& warning : run.warnings)
            std::cerr << "warning: " << run.log << ": " << warning << '\n';
    const ProfileCalibration& c = result.calibration;
    const bool several = result.runs.size() >= 2;
    TextTable steps;
    for (const char* title : {"log", "format", "configuration", "steps used"})
        steps.addColumn(title, TextTable::Align::Left);
    for (const char* title : {"measured s", "before s", "error", "after s", "error"})
        steps.addColumn(title, TextTable::Align::Right);
    if (several) {
        steps.addColumn("left out s", TextTable::Align::Right);
        steps.addColumn("error", TextTable::Align::Right);
    }
    for (const auto& run : result.runs) {
        std::vector<std::string> row {run.log,
                                      run.format,
                                      run.config,
                                      cat(run.steps_used, " of ", run.steps_logged),
                                      fixed(run.measured_step_s, 3),
                                      fixed(run.predicted_step_s, 3),
                                      percentOff(run.predicted_step_s, run.measured_step_s),
                                      fixed(run.calibrated_step_s, 3),
                                      percentOff(run.calibrated_step_s, run.measured_step_s)};
        if (several) {
            row.push_back(fixed(run.held_out_step_s, 3));
            row.push_back(percentOff(run.held_out_step_s, run.measured_step_s));
        }
        steps.addRow(row);
    }
    std::cout << "Step time (steady state: the median of the later half of the logged steps)\n";
    steps.print(std::cout);

    bool anyPeak = false;
    for (const auto& run : result.runs)
        anyPeak = anyPeak || run.measured_peak_bytes > 0;
    if (anyPeak) {
        TextTable peaks;
        peaks.addColumn("log", TextTable::Align::Left);
        peaks.addColumn("measured", TextTable::Align::Left);
        for (const char* title : {"measured GB", "before GB", "error", "after GB", "error"})
            peaks.addColumn(title, TextTable::Align::Right);
        if (several) {
            peaks.addColumn("left out GB", TextTable::Align::Right);
            peaks.addColumn("error", TextTable::Align::Right);
        }
        const auto gb = [](double bytes) { return fixed(bytes / units::kGB, 2); };
        for (const auto& run : result.runs) {
            if (run.measured_peak_bytes <= 0)
                continue;
            std::vector<std::string> row {run.log,
                                          "max " + run.peak_kind,
                                          gb(run.measured_peak_bytes),
                                          gb(run.predicted_peak_bytes),
                                          percentOff(run.predicted_peak_bytes, run.measured_peak_bytes),
                                          gb(run.calibrated_peak_bytes),
                                          percentOff(run.calibrated_peak_bytes, run.measured_peak_bytes)};
            if (several) {
                row.push_back(gb(run.held_out_peak_bytes));
                row.push_back(percentOff(run.held_out_peak_bytes, run.measured_peak_bytes));
            }
            peaks.addRow(row);
        }
        std::cout << "\nPeak memory per GPU (the figure the log reports)\n";
        peaks.print(std::cout);
    }
    std::cout << "\nCalibration: " << describeCalibration(c, 3) << '\n';
    for (const auto& note : result.notes)
        std::cout << "note: " << note << '\n';
    if (result.written)
        std::cout << "saved " << result.file.string() << " (plan and simulate use it for this device)\n";
    else
        std::cout << "dry run: " << result.file.string() << " not written\n";
    return kExitOk;
}

} // namespace

void addProfileCommand(CLI::App& app, CommandAction& action)
{
    auto* cmd = app.add_subcommand("profile",
                                   "Show measured GPU profiles, import nccl-tests logs, calibrate on training logs");
    cmd->require_subcommand(1);

    auto show = std::make_shared<ShowOptions>();
    auto* showCmd = cmd->add_subcommand("show",
                                        "What a profile measured and whether it is valid (no option: list "
                                        "the profiles under ~/.cache/shardscape)");
    auto* dirOption = showCmd->add_option("--profile-dir", show->profile_dir, "directory holding profile.json");
    showCmd->add_option("--profile", show->profile_file, "a profile file")->excludes(dirOption);
    showCmd->callback([&action, show] { action = [show] { return runShow(*show); }; });

    auto import = std::make_shared<ImportOptions>();
    auto* importCmd = cmd->add_subcommand(
        "import-nccl",
        "Add nccl-tests results (all_reduce_perf, all_gather_perf, reduce_scatter_perf, alltoall_perf, "
        "sendrecv_perf: text output or -J JSON) to a profile, creating it when missing");
    importCmd->add_option("logs", import->logs, "nccl-tests output files")->required()->check(CLI::ExistingFile);
    importCmd->add_option("--profile-dir", import->profile_dir,
                          "directory holding profile.json (default: ~/.cache/shardscape/<device slug>)");
    importCmd->add_option("--device-name", import->device_name,
                          "the GPU as CUDA names it (default: from the logs' \"# Rank\" lines)");
    importCmd->callback([&action, import] { action = [import] { return runImport(*import); }; });

    auto importLog = std::make_shared<ImportLogOptions>();
    auto* logCmd = cmd->add_subcommand(
        "import-log",
        "Calibrate a profile on your own training runs: Megatron-LM, torchtitan or DeepSpeed logs with their job "
        "configs; prints each run's step time and peak before and after, and with several runs each one predicted "
        "by a fit on the others");
    logCmd->add_option("logs", importLog->logs, "training logs")->required()->check(CLI::ExistingFile);
    logCmd->add_option("--job", importLog->jobs,
                       "the job config of each log, in order: torchtitan TOML, Megatron launch script or DeepSpeed "
                       "JSON; '-' (or none at all) = the log's own Megatron argument dump");
    logCmd->add_option("--model,-m", importLog->model,
                       "preset name, HF config.json or native graph (default: the shape the job config gives)");
    logCmd->add_option("--cluster,-c", importLog->cluster, "device preset or cluster .json the runs ran on")
        ->required();
    logCmd->add_option("--nodes", importLog->nodes, "nodes, where a config leaves the world size to the launcher")
        ->check(CLI::Range(1, 100000));
    logCmd
        ->add_option("--gpus-per-node", importLog->gpus_per_node,
                     "GPUs per node (default: the config's, else "
                     "the cluster's)")
        ->check(CLI::Range(1, 1024));
    logCmd->add_option("--profile-dir", importLog->profile_dir,
                       "directory holding profile.json (default: the device's profile under ~/.cache/shardscape)");
    logCmd->add_flag("--dry-run", importLog->dry_run, "fit and report, write nothing");
    logCmd->callback([&action, importLog] { action = [importLog] { return runImportLog(*importLog); }; });
}

} // namespace shardscape::cli
