// SPDX-License-Identifier: MIT
// shardscape-profile: measures this machine's GPUs and writes the profile DB (core/src/profile/FORMAT.md).
// Wiring only: the phases live in bench_*.cpp, the document in profile_db.cpp.
#include "bench_attention.h"
#include "bench_collectives.h"
#include "bench_matmul.h"
#include "bench_memory.h"
#include "errors.h"
#include "model_shapes.h"
#include "mpi_world.h"
#include "options.h"
#include "profile_db.h"

#include <algorithm>
#include <cstdio>
#include <cuda_runtime.h>
#include <iostream>

namespace shardscape::profiler {
namespace {

const char* const kTool = "shardscape-profile " SHARDSCAPE_PROFILE_VERSION;

/** No usable GPU: reported as "no CUDA device: ..." with exit code 3. */
class NoDevice : public CudaFailure
{
public:
    using CudaFailure::CudaFailure;
};

/** Everything --model, --shapes and the grids ask for, read before the GPU is touched. */
struct Workload
{
    std::vector<GemmCase> gemms;
    std::vector<AttentionShape> attention;
};

Workload loadWorkload(const Options& o)
{
    Workload w;
    const auto addGemm = [&](const GemmShape& shape, DType dtype) {
        const bool seen = std::any_of(w.gemms.begin(), w.gemms.end(), [&](const GemmCase& c) {
            return c.dtype == dtype && c.shape.m == shape.m && c.shape.n == shape.n && c.shape.k == shape.k;
        });
        if (!seen)
            w.gemms.push_back({shape, dtype});
    };
    for (const DType dtype : o.dtypes)
        for (const GemmShape& shape : defaultGemmGrid(o.quick))
            addGemm(shape, dtype);
    w.attention = defaultAttentionGrid(o.quick);
    if (!o.modelConfig.empty()) {
        const ModelShapes model
            = deriveModelShapes(readJsonFile(o.modelConfig), ModelRun {o.tp, o.seqLen, o.microBatch}, o.modelConfig);
        for (const DType dtype : o.dtypes)
            for (const GemmShape& shape : model.gemms)
                addGemm(shape, dtype);
        const AttentionShape& a = model.attention;
        if (std::none_of(w.attention.begin(), w.attention.end(), [&](const AttentionShape& g) {
                return g.batch == a.batch && g.heads == a.heads && g.seq == a.seq && g.headDim == a.headDim;
            }))
            w.attention.push_back(a);
    }
    if (!o.shapesFile.empty())
        for (const GemmCase& c : parseShapesDocument(readJsonFile(o.shapesFile), o.shapesFile))
            addGemm(c.shape, c.dtype);
    return w;
}

std::string versionText()
{
    int runtime = 0;
    cudaRuntimeGetVersion(&runtime);
    return std::string(kTool) + " (CUDA runtime " + std::to_string(runtime / 1000) + "."
        + std::to_string(runtime % 1000 / 10) + ", " + collectivesLibrary() + ", "
        + (mpiCompiledIn() ? "with MPI" : "without MPI") + ")\n";
}

int run(const Options& o, const MpiWorld& world)
{
    const bool root = world.rank == 0;
    const bool multiRank = world.size > 1;
    if (multiRank && o.phasesGiven && (o.matmul || o.memory || o.attention))
        throw BadInput("under mpirun only --collectives is measured (" + std::to_string(world.size) + " ranks)",
                       "run --matmul/--memory/--attention without mpirun, on one node");
    if (o.phasesGiven && o.collectives && !collectivesCompiledIn())
        throw BadInput("--collectives: this shardscape-profile was built without NCCL",
                       "install NCCL and rebuild (cmake -DNCCL_ROOT=<prefix>)");
    const bool matmul = o.matmul && !multiRank;
    const bool memory = o.memory && !multiRank;
    const bool attention = o.attention && !multiRank;
    const Workload workload = loadWorkload(o);

    int deviceCount = 0;
    if (const cudaError_t e = cudaGetDeviceCount(&deviceCount); e != cudaSuccess)
        throw NoDevice(std::string("no CUDA device: ") + cudaGetErrorName(e) + ": " + cudaGetErrorString(e)
                       + " (is an NVIDIA driver installed and a GPU visible? try nvidia-smi)");
    if (deviceCount == 0)
        throw NoDevice("no CUDA device: the CUDA runtime sees no GPU (check nvidia-smi and CUDA_VISIBLE_DEVICES)");
    if (o.device >= deviceCount)
        throw BadInput("--device " + std::to_string(o.device) + ", but there are only " + std::to_string(deviceCount)
                           + " GPUs",
                       "use --device 0 to " + std::to_string(deviceCount - 1));
    const int device = multiRank ? world.localRank % deviceCount : o.device;
    checkCuda(cudaSetDevice(device), "cudaSetDevice");
    checkCuda(cudaFree(nullptr), "creating the CUDA context");
    std::size_t freeBytes = 0;
    std::size_t totalBytes = 0;
    checkCuda(cudaMemGetInfo(&freeBytes, &totalBytes), "cudaMemGetInfo");
    cudaDeviceProp prop {};
    checkCuda(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
    const int cc = prop.major * 10 + prop.minor;
    if (cc < 80)
        throw NoDevice("no CUDA device: " + std::string(prop.name) + " has compute capability "
                       + std::to_string(prop.major) + "." + std::to_string(prop.minor)
                       + "; shardscape-profile needs 8.0 (Ampere) or newer");

    ProfileDocument doc;
    doc.createdUtc = utcNow();
    doc.tool = kTool;
    DeviceInfo& info = doc.device;
    info.name = prop.name;
    info.count = deviceCount;
    info.memoryBytes = static_cast<std::int64_t>(totalBytes);
    info.runtimeReserveBytes = static_cast<std::int64_t>(totalBytes - freeBytes);
    info.smCount = prop.multiProcessorCount;
    info.computeCapability = std::to_string(prop.major) + "." + std::to_string(prop.minor);
    int driver = 0;
    int runtime = 0;
    checkCuda(cudaDriverGetVersion(&driver), "cudaDriverGetVersion");
    checkCuda(cudaRuntimeGetVersion(&runtime), "cudaRuntimeGetVersion");
    info.driverVersion = std::to_string(driver);
    info.runtimeVersion = std::to_string(runtime);

    // Fail on an unwritable output before measuring for minutes.
    const std::filesystem::path outDir
        = o.outDir.empty() ? defaultProfileDir(info.name) : std::filesystem::path(o.outDir);
    const std::filesystem::path outFile = outDir / "profile.json";
    if (root)
        prepareOutputDir(outDir);

    const int ranks = collectiveRanks(world, deviceCount);
    Progress progress(o.progress && root,
                      1 + (matmul ? matmulSteps(workload.gemms, cc) : 0) + (memory ? memorySteps(o.dtypes, o.quick) : 0)
                          + (attention ? attentionSteps(workload.attention, o.dtypes) : 0)
                          + (o.collectives ? collectiveSteps(o.quick, ranks) : 0) + (root ? 1 : 0));
    Stream stream;
    BenchContext context;
    context.device = device;
    context.computeCapability = cc;
    context.l2Bytes = static_cast<std::size_t>(prop.l2CacheSize);
    context.stream = stream.get();
    context.timing.warmup = o.warmup;
    context.timing.reps = o.iters;
    context.progress = &progress;

    if (root)
        note("device  %s (GPU %d of %d): compute capability %s, %d SMs, %.1f GiB, %.2f GiB used by the runtime, "
             "%.0f MiB L2",
             info.name.c_str(), device, deviceCount, info.computeCapability.c_str(), info.smCount,
             static_cast<double>(totalBytes) / 1073741824.0,
             static_cast<double>(info.runtimeReserveBytes) / 1073741824.0,
             static_cast<double>(prop.l2CacheSize) / 1048576.0);
    if (root) // the other ranks of an MPI job only take part in the collectives
        info.hbmCopyBytesPerSecond = measureHbmCopy(context);
    progress.step("device");

    MeasuredKinds measured;
    if (matmul)
        doc.matmul = runMatmulPhase(workload.gemms, context);
    if (memory)
        doc.memoryOps = runMemoryPhase(o.dtypes, o.quick, context);
    if (attention)
        doc.attention = runAttentionPhase(workload.attention, o.dtypes, context);
    if (o.collectives) {
        doc.collectives = runCollectivesPhase(o.quick, world, deviceCount, context.timing, progress);
        checkCuda(cudaSetDevice(device), "cudaSetDevice");
    }
    measured.matmul = !doc.matmul.empty();
    measured.memoryOps = !doc.memoryOps.empty();
    measured.attention = !doc.attention.empty();
    measured.collectives = !doc.collectives.empty();
    if (!root)
        return kExitOk;

    nlohmann::json out = profileJson(doc);
    std::string why;
    const nlohmann::json old = reusableProfile(outFile, info.name, why);
    if (!old.is_null())
        out = mergeProfiles(out, old, measured);
    else if (!why.empty())
        note("replace %s: %s", outFile.c_str(), why.c_str());
    addChecksum(out);
    writeFileAtomic(outFile, out.dump(2) + "\n");
    progress.step("write");
    note("wrote   %s (%zu matmul, %zu attention, %zu memory_ops, %zu collectives rows)", outFile.c_str(),
         out["matmul"].size(), out["attention"].size(), out["memory_ops"].size(), out["collectives"].size());
    return kExitOk;
}

} // namespace
} // namespace shardscape::profiler

int main(int argc, char** argv)
{
    using namespace shardscape::profiler;
    MpiWorld world;
    const auto fail = [&](int code) {
        if (world.active)
            abortMpi(world, code);
        return code;
    };
    try {
        const Options options = parseOptions(std::vector<std::string>(argv + 1, argv + argc));
        if (options.help) {
            std::cout << usageText();
            return kExitOk;
        }
        if (options.version) {
            std::cout << versionText();
            return kExitOk;
        }
        world = initMpi(&argc, &argv);
        const int code = run(options, world);
        finalizeMpi(world);
        return code;
    } catch (const BadInput& e) {
        std::fprintf(stderr, "shardscape-profile: error: %s\n  hint: %s\n", e.what(), e.hint().c_str());
        return fail(kExitBadArguments);
    } catch (const NoDevice& e) {
        std::fprintf(stderr, "shardscape-profile: %s\n", e.what());
        return fail(kExitNoDevice);
    } catch (const CudaFailure& e) {
        std::fprintf(stderr, "shardscape-profile: CUDA failure: %s\n", e.what());
        return fail(kExitNoDevice);
    } catch (const CheckFailure& e) {
        std::fprintf(stderr, "shardscape-profile: correctness check failed, nothing recorded: %s\n", e.what());
        return fail(kExitCheckFailed);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "shardscape-profile: error: %s\n", e.what());
        return fail(kExitOtherError);
    }
}
