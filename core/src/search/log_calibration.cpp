// SPDX-License-Identifier: MIT
// Calibrating a profile on the user's own training runs: each log's steady-state step time and peak memory against
// the engine's prediction of the job config it ran.
#include "shardscape/search/log_calibration.h"

#include "shardscape/cost/cost_model.h"
#include "shardscape/hardware/cluster.h"
#include "shardscape/model/hf_config.h"
#include "shardscape/model/model_source.h"
#include "shardscape/plan/config_import.h"
#include "shardscape/profile/profile_cost_source.h"
#include "shardscape/profile/profile_db.h"
#include "shardscape/search/planner.h"
#include "shardscape/support/error.h"
#include "shardscape/support/strings.h"
#include "shardscape/support/units.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace shardscape {

namespace {

constexpr int kScales = 5; // matmul, attention, memory-bound, communication time; the kernel floor
constexpr std::array<const char*, kScales> kScaleNames {"matmul", "attention", "memory-bound", "communication",
                                                        "kernel-floor"};
/** The pull of each log-scale towards 0 (scale 1): weak beside a run's squared log error, so that the runs decide
    what they determine and a kind they do not exercise stays at the datasheet's or profile's figure. */
constexpr double kRidge = 1e-4;
constexpr double kStep = 0.05; // finite-difference step in log-scale
constexpr int kIterations = 30;

/** One run, read and ready to predict under any calibration. */
struct PreparedRun
{
    LogRunReport report;
    std::shared_ptr<const ModelGraph> graph;
    std::vector<Layer> layers;
    Cluster cluster;
    ParallelConfig config;
    Workload workload;
    bool local_layer = false; ///< Megatron-Core's local layer (--transformer-impl local), not Transformer Engine's
};

struct Prediction
{
    double step_s = 0;
    double peak_bytes = 0; ///< of the kind the log measured (0 without one)
};

/** The floor the fit starts from (x[4] = 0): the datasheet's shortest kernel (CostParams::min_kernel_time). */
const double kFloorPrior = CostParams {}.min_kernel_time;

ProfileCalibration fromLogScales(const std::array<double, kScales>& x, double memoryOffset)
{
    ProfileCalibration c;
    c.kernel_floor_s = x[4] == 0 ? 0 : std::min(kFloorPrior * std::exp(x[4]), kMaxKernelFloorSeconds);
    c.matmul_time_scale = std::exp(x[0]);
    c.attention_time_scale = std::exp(x[1]);
    c.memory_time_scale = std::exp(x[2]);
    c.collective_time_scale = std::exp(x[3]);
    c.memory_offset_bytes = memoryOffset;
    return c;
}

Prediction predict(const PreparedRun& run, const std::shared_ptr<const CostSource>& base,
                   const ProfileCalibration& calibration)
{
    CostParams params;
    params.calibrated_memory_bytes = calibration.memory_offset_bytes;
    const CostModel model(run.graph, run.cluster, params, makeCalibratedCostSource(calibration, base), run.layers);
    EvaluateOptions options;
    options.require_full_cluster = false;
    const Evaluation e = model.evaluate(run.config, run.workload, options);
    if (e.stages.empty() || !(e.step_time > 0))
        throw InputError(cat(run.report.log, ": the engine cannot simulate ", run.report.config, ": ", e.reason),
                         "check the job config against the model and cluster given");
    Prediction p;
    p.step_s = e.step_time;
    if (!run.report.peak_kind.empty()) {
        std::size_t worst = 0;
        for (std::size_t r = 1; r < e.stages.size(); ++r)
            if (e.stages[r].memory.total() > e.stages[worst].memory.total())
                worst = r;
        const MemoryBreakdown& m = e.stages[worst].memory;
        p.peak_bytes = run.report.peak_kind == "reserved" ? m.allocatorReserved() : m.allocated();
    }
    return p;
}

/** Solves A x = b (n <= 4) by Gaussian elimination with partial pivoting; A is symmetric positive definite here. */
std::array<double, kScales> solve(std::array<std::array<double, kScales>, kScales> a, std::array<double, kScales> b)
{
    for (int col = 0; col < kScales; ++col) {
        int pivot = col;
        for (int r = col + 1; r < kScales; ++r)
            if (std::fabs(a[r][col]) > std::fabs(a[pivot][col]))
                pivot = r;
        std::swap(a[col], a[pivot]);
        std::swap(b[col], b[pivot]);
        for (int r = col + 1; r < kScales; ++r) {
            const double f = a[r][col] / a[col][col];
            for (int k = col; k < kScales; ++k)
                a[r][k] -= f * a[col][k];
            b[r] -= f * b[col];
        }
    }
    std::array<double, kScales> x {};
    for (int r = kScales - 1; r >= 0; --r) {
        double sum = b[r];
        for (int k = r + 1; k < kScales; ++k)
            sum -= a[r][k] * x[k];
        x[r] = sum / a[r][r];
    }
    return x;
}

/**
 * Minimises sum over runs of log(predicted / measured)^2 + kRidge |x|^2 over the four log-scales x (damped
 * Gauss-Newton with a forward-difference Jacobian; the simulator is not linear in the scales where communication
 * overlaps compute), then sets the memory offset to the median of measured - predicted peaks.
 */
ProfileCalibration fit(const std::vector<const PreparedRun*>& runs, const std::shared_ptr<const CostSource>& base)
{
    const double lo = std::log(kMinCalibrationScale), hi = std::log(kMaxCalibrationScale);
    // The floor only rises above the source's own shortest kernel (a lower one changes nothing).
    const double floorHi = std::log(kMaxKernelFloorSeconds / kFloorPrior);
    std::array<double, kScales> x {};
    const auto residuals = [&](const std::array<double, kScales>& at) {
        std::vector<double> r;
        for (const PreparedRun* run : runs)
            r.push_back(std::log(predict(*run, base, fromLogScales(at, 0)).step_s / run->report.measured_step_s));
        return r;
    };
    const auto cost = [&](const std::vector<double>& r, const std::array<double, kScales>& at) {
        double sum = 0;
        for (const double v : r)
            sum += v * v;
        for (const double v : at)
            sum += kRidge * v * v;
        return sum;
    };
    std::vector<double> r = residuals(x);
    double damping = 1e-3;
    for (int iteration = 0; iteration < kIterations; ++iteration) {
        std::vector<std::array<double, kScales>> jacobian(runs.size());
        for (int k = 0; k < kScales; ++k) {
            auto shifted = x;
            shifted[k] += kStep;
            const std::vector<double> rk = residuals(shifted);
            for (std::size_t i = 0; i < runs.size(); ++i)
                jacobian[i][k] = (rk[i] - r[i]) / kStep;
        }
        std::array<std::array<double, kScales>, kScales> normal {};
        std::array<double, kScales> gradient {};
        for (int a = 0; a < kScales; ++a) {
            for (int b = 0; b < kScales; ++b)
                for (std::size_t i = 0; i < runs.size(); ++i)
                    normal[a][b] += jacobian[i][a] * jacobian[i][b];
            for (std::size_t i = 0; i < runs.size(); ++i)
                gradient[a] -= jacobian[i][a] * r[i];
            gradient[a] -= kRidge * x[a];
        }
        bool accepted = false;
        while (damping < 1e6) {
            auto damped = normal;
            for (int a = 0; a < kScales; ++a)
                damped[a][a] += kRidge + damping * (normal[a][a] + kRidge);
            const auto delta = solve(damped, gradient);
            auto next = x;
            for (int a = 0; a < kScales; ++a)
                next[a] = a == 4 ? std::clamp(x[a] + delta[a], 0.0, floorHi) : std::clamp(x[a] + delta[a], lo, hi);
            const std::vector<double> rn = residuals(next);
            if (cost(rn, next) <= cost(r, x)) {
                double moved = 0;
                for (int a = 0; a < kScales; ++a)
                    moved = std::max(moved, std::fabs(next[a] - x[a]));
                x = next;
                r = rn;
                damping = std::max(damping / 10, 1e-9);
                accepted = true;
                if (moved < 1e-6)
                    iteration = kIterations;
                break;
            }
            damping *= 10;
        }
        if (!accepted)
            break;
    }
    // The offset is tensor memory, so a reserved peak grows by it times the allocator's slack (reserved /
    // allocated): measure that slope once and divide the median gap by it.
    std::vector<double> gaps;
    double slope = 0;
    constexpr double kProbe = 1e9;
    for (const PreparedRun* run : runs) {
        if (run->report.measured_peak_bytes <= 0)
            continue;
        const double at0 = predict(*run, base, fromLogScales(x, 0)).peak_bytes;
        gaps.push_back(run->report.measured_peak_bytes - at0);
        slope += (predict(*run, base, fromLogScales(x, kProbe)).peak_bytes - at0) / kProbe;
    }
    double offset = 0;
    if (!gaps.empty()) {
        std::sort(gaps.begin(), gaps.end());
        const std::size_t n = gaps.size();
        slope /= static_cast<double>(n);
        const double gap = n % 2 ? gaps[n / 2] : (gaps[n / 2 - 1] + gaps[n / 2]) / 2;
        offset = std::round(gap / std::max(slope, 1e-3));
        offset = std::clamp(offset, -kMaxCalibrationOffsetBytes, kMaxCalibrationOffsetBytes);
    }
    return fromLogScales(x, offset);
}

PreparedRun prepare(const LogRunSpec& spec, const LogImportRequest& request)
{
    PreparedRun run;
    const TrainingLog log = readTrainingLog(spec.log);
    run.report.log = spec.log.filename().string();
    run.report.format = std::string(trainingLogFormatName(log.format));
    run.report.steps_logged = static_cast<int>(log.steps.size());
    run.report.steps_used = static_cast<int>(log.steadySteps().size());

    // What the config may leave to the launcher or the model.
    ImportOptions options;
    std::optional<TransformerShape> given;
    if (!request.model.empty()) {
        BuildOptions probe;
        const ModelGraph shape = loadModel(request.model, probe);
        if (shape.transformer) {
            options.num_layers = static_cast<int>(shape.transformer->num_layers);
            given = shape.transformer;
        }
    }
    if (request.nodes > 0)
        options.world_size = loadCluster(request.cluster, request.nodes, request.gpus_per_node).worldSize();
    const bool fromDump = spec.job_config.empty();
    ImportedConfig imported;
    if (fromDump) {
        if (log.arguments.empty())
            throw InputError(cat(spec.log.string(), ": no job config given and the log has no argument dump"),
                             "give the run's job config (torchtitan TOML, Megatron launch script or DeepSpeed JSON)");
        imported
            = importJobConfigText(megatronScriptFromArguments(log), spec.log.string() + " (arguments).sh", options);
    } else {
        imported = importJobConfig(spec.job_config, options);
    }
    run.report.warnings = imported.warnings;
    run.config = imported.config;
    run.report.config = run.config.describe();
    if (imported.seq_len <= 0)
        throw InputError(
            cat(fromDump ? spec.log.string() : spec.job_config.string(), ": the sequence length is not given"),
            "give a job config that sets it (seq_len, --seq-length)");

    BuildOptions build;
    build.batch = run.config.micro_batch;
    build.seq_len = imported.seq_len;
    run.local_layer = applyJobAttention(build, imported);
    if (run.local_layer && !request.model.empty())
        run.report.warnings.push_back(cat("the run used Megatron-Core's local layer (--transformer-impl local): ",
                                          std::filesystem::path(request.model).filename().string(),
                                          "'s attention is costed unfused"));
    if (!request.model.empty())
        run.graph = std::make_shared<const ModelGraph>(loadModel(request.model, build));
    else if (imported.model)
        run.graph = std::make_shared<const ModelGraph>(
            buildTransformerGraph(*imported.model, build, spec.log.stem().string()));
    else
        throw InputError(cat(spec.log.string(), ": the job config does not describe the model"), "give --model");
    if (given && imported.model && given->num_layers != imported.model->num_layers)
        run.report.warnings.push_back(cat("the job config has ", imported.model->num_layers, " layers, the model ",
                                          given->num_layers, ": predicting the model given"));

    const Cluster preset = loadCluster(request.cluster);
    const std::int64_t world = run.config.worldSize();
    int perNode = request.gpus_per_node > 0         ? request.gpus_per_node
        : (!fromDump && imported.gpus_per_node > 0) ? imported.gpus_per_node
                                                    : preset.gpus_per_node;
    if (request.gpus_per_node <= 0 && world < perNode)
        perNode = static_cast<int>(world);
    const int nodes = request.nodes > 0 ? request.nodes : static_cast<int>((world + perNode - 1) / perNode);
    run.cluster = loadCluster(request.cluster, nodes, perNode);
    if (world > run.cluster.worldSize())
        throw InputError(cat(run.report.log, ": ", run.report.config, " needs ", world, " GPUs, the cluster has ",
                             run.cluster.worldSize()),
                         "give the run's --nodes and --gpus-per-node");

    if (run.config.num_microbatches < 1) {
        const std::int64_t perStep = std::int64_t {run.config.dp} * run.config.micro_batch;
        run.config.num_microbatches = static_cast<int>(std::max<std::int64_t>(1, imported.global_batch / perStep));
    }
    run.workload.global_batch = imported.global_batch > 0 ? imported.global_batch : run.config.globalBatch();
    run.workload.seq_len = run.graph->seq_len;
    run.workload.memory_limit_bytes = 1e30; // a run that ran is predicted whatever its verdict
    run.report.measured_step_s = log.stepTime(run.workload.global_batch, run.workload.seq_len, world);
    run.report.measured_peak_bytes = log.peak_bytes;
    run.report.peak_kind = log.peak_kind;

    const PlannerConfig planning;
    run.layers = planningLayers(*run.graph, planning);
    run.graph = withShardingRoles(run.graph, run.layers, run.cluster, CostParams {}, planning);
    return run;
}

} // namespace

LogImportResult importTrainingLogs(const LogImportRequest& request)
{
    if (request.runs.empty())
        throw InputError("no training logs to import", "name at least one Megatron-LM, torchtitan or DeepSpeed log");
    if (request.cluster.empty())
        throw InputError("no cluster given for the training logs",
                         "give the device preset the runs ran on (--cluster)");

    // Read everything first: a bad log or config must leave the profile untouched.
    std::vector<PreparedRun> runs;
    for (const auto& spec : request.runs)
        runs.push_back(prepare(spec, request));

    LogImportResult result;
    const Cluster cluster = runs.front().cluster;
    ProfileRequest where;
    where.profile_dir = request.profile_dir.string();
    const ProfileChoice found = findProfile(cluster.device, where);
    std::filesystem::path dir = request.profile_dir;
    if (dir.empty())
        dir = found.profile && !found.file.empty() ? found.file.parent_path() : defaultProfileDir(cluster.device.name);
    if (dir.empty())
        throw InputError("no HOME or XDG_CACHE_HOME to put the profile under", "give --profile-dir");
    result.file = dir / kProfileFileName;
    const ProfileStatus status = inspectProfile(result.file);
    Profile& profile = result.profile;
    switch (status.state) {
    case ProfileState::Valid:
        profile = *status.profile;
        if (presetForDeviceName(profile.device.name) != presetForDeviceName(cluster.device.name)
            && deviceSlug(profile.device.name) != deviceSlug(cluster.device.name))
            throw InputError(cat(result.file.string(), " is the profile of ", profile.device.name, ", the runs are on ",
                                 cluster.device.name),
                             "import into another --profile-dir");
        break;
    case ProfileState::Missing:
        profile.created_utc = utcNow();
        profile.tool = request.tool;
        profile.device.name = cluster.device.name;
        break;
    case ProfileState::Corrupt:
    case ProfileState::WrongVersion:
        throw InputError(cat("not touching the profile: ", status.reason),
                         "move the file away (or re-run shardscape-profile), then import again");
    }

    // The fit starts from the profile's measurements over the datasheet, without its earlier calibration; the
    // "before" figures are what the user got until now (that calibration included).
    Profile measured = profile;
    measured.calibration.reset();
    const auto base = makeProfileCostSource(std::make_shared<const Profile>(measured),
                                            makeDatasheetCostSource(cluster, CostParams {}));
    result.notes.push_back(cat("fitted on ", base->name()));
    if (std::any_of(runs.begin(), runs.end(), [](const PreparedRun& run) { return run.local_layer; }))
        result.notes.push_back("runs on Megatron-Core's local layer (--transformer-impl local): the fit also absorbs "
                               "the kernels that layer runs unfused beyond attention, which Transformer Engine's "
                               "layer fuses; plans for Transformer Engine on this device inherit those scales");
    const ProfileCalibration before = profile.calibration.value_or(ProfileCalibration {});
    if (profile.calibration)
        result.notes.push_back(cat("replaces the calibration of ", profile.calibration->created_utc, " (fitted on ",
                                   profile.calibration->runs.size(), " runs): give every run together to fit on all"));

    std::vector<const PreparedRun*> all;
    for (const auto& run : runs)
        all.push_back(&run);
    ProfileCalibration calibration = fit(all, base);
    calibration.created_utc = utcNow();
    for (auto& run : runs) {
        const Prediction was = predict(run, base, before);
        const Prediction now = predict(run, base, calibration);
        run.report.predicted_step_s = was.step_s;
        run.report.calibrated_step_s = now.step_s;
        run.report.predicted_peak_bytes = was.peak_bytes;
        run.report.calibrated_peak_bytes = now.peak_bytes;
    }
    if (runs.size() >= 2) {
        for (std::size_t i = 0; i < runs.size(); ++i) {
            std::vector<const PreparedRun*> others;
            for (std::size_t j = 0; j < runs.size(); ++j)
                if (j != i)
                    others.push_back(&runs[j]);
            const Prediction held = predict(runs[i], base, fit(others, base));
            runs[i].report.held_out_step_s = held.step_s;
            runs[i].report.held_out_peak_bytes = held.peak_bytes;
        }
    }

    if (runs.size() < 3)
        result.notes.push_back(cat(runs.size(), runs.size() == 1 ? " run does" : " runs do",
                                   " not tell the kinds of kernel apart: the error is spread over them by their share "
                                   "of the step; import runs that differ in sequence length, micro-batch or "
                                   "parallelism to separate them"));
    // Which scales the runs determined: a kind whose time share is nil in every run stays at 1.
    std::vector<double> unscaled;
    for (const auto& run : runs)
        unscaled.push_back(predict(run, base, fromLogScales({}, 0)).step_s);
    for (int k = 0; k < kScales; ++k) {
        std::array<double, kScales> shifted {};
        shifted[k] = kStep;
        double sensitivity = 0;
        for (std::size_t i = 0; i < runs.size(); ++i) {
            const double t0 = unscaled[i];
            const double t1 = predict(runs[i], base, fromLogScales(shifted, 0)).step_s;
            sensitivity = std::max(sensitivity, std::fabs(std::log(t1 / t0)) / kStep);
        }
        if (sensitivity < 0.01)
            result.notes.push_back(cat(kScaleNames[static_cast<std::size_t>(k)],
                                       " time is under 1% of every run's step: its scale stays 1"));
    }

    for (const auto& run : runs) {
        CalibrationRun recorded;
        recorded.log = run.report.log;
        recorded.framework = run.report.format;
        recorded.config = run.report.config;
        recorded.measured_step_s = run.report.measured_step_s;
        recorded.predicted_step_s = run.report.predicted_step_s;
        recorded.calibrated_step_s = run.report.calibrated_step_s;
        if (run.report.measured_peak_bytes > 0) {
            recorded.measured_peak_bytes = std::round(run.report.measured_peak_bytes);
            recorded.peak_kind = run.report.peak_kind;
        }
        calibration.runs.push_back(std::move(recorded));
        result.runs.push_back(run.report);
    }
    result.calibration = calibration;
    profile.calibration = calibration;
    if (!request.dry_run) {
        saveProfile(result.file, profile);
        result.written = true;
    }
    return result;
}

} // namespace shardscape
