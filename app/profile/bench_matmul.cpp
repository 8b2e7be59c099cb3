// SPDX-License-Identifier: MIT
// Layout: cuBLASLt "TN" (column-major): D[m x n] = op(A) B with op(A) = A^T, A stored k x m (lda = k), B stored
// k x n (ldb = k), D m x n (ldd = m). It is the layout nn.Linear runs and the one cuBLASLt requires for FP8.
// Seen row-major: A holds m rows of k, B holds n rows of k (reference.h's referenceGemm).
#include "bench_matmul.h"

#include "kernels.h"
#include "reference.h"

#include <algorithm>
#include <cmath>
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <map>
#include <optional>
#include <random>

namespace shardscape::profiler {

namespace {

constexpr std::size_t kWorkspaceBytes = 32u << 20; // what NVIDIA recommends for Hopper
constexpr int kCheckedAlgorithms = 8; // the check runs every one the heuristic returns, up to this many
constexpr int kTunedAlgorithms = 4; // timing picks the fastest of the top ones
constexpr int kSpotChecks = 16;

void checkLt(cublasStatus_t status, const char* what)
{
    if (status != CUBLAS_STATUS_SUCCESS)
        throw CudaFailure(std::string(what) + ": " + cublasLtGetStatusString(status));
}

struct LtTypes
{
    cudaDataType_t inputs;
    cudaDataType_t output;
    cublasComputeType_t compute;
};

LtTypes ltTypes(DType dtype)
{
    switch (dtype) {
    case DType::BF16:
        return {CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F};
    case DType::FP16:
        return {CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F};
    case DType::TF32:
        return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32};
    case DType::FP32:
        return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F};
    case DType::FP8E4M3:
        return {CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F};
    }
    return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F};
}

/** Bytes per element of D (fp8 GEMMs write bf16). */
int outputBytes(DType dtype)
{
    return dtype == DType::FP8E4M3 ? 2 : dtypeBytes(dtype);
}

/** The storage type D is decoded as. */
DType outputDType(DType dtype)
{
    return dtype == DType::FP8E4M3 ? DType::BF16 : dtype;
}

/** One GEMM problem's cuBLASLt descriptors. */
class LtGemm
{
public:
    LtGemm(cublasLtHandle_t handle, DType dtype, std::int64_t m, std::int64_t n, std::int64_t k)
        : m_handle(handle)
    {
        const LtTypes t = ltTypes(dtype);
        checkLt(cublasLtMatmulDescCreate(&m_op, t.compute, CUDA_R_32F), "cublasLtMatmulDescCreate");
        const cublasOperation_t transA = CUBLAS_OP_T;
        const cublasOperation_t transB = CUBLAS_OP_N;
        checkLt(cublasLtMatmulDescSetAttribute(m_op, CUBLASLT_MATMUL_DESC_TRANSA, &transA, sizeof transA), "TRANSA");
        checkLt(cublasLtMatmulDescSetAttribute(m_op, CUBLASLT_MATMUL_DESC_TRANSB, &transB, sizeof transB), "TRANSB");
        checkLt(
            cublasLtMatrixLayoutCreate(&m_a, t.inputs, static_cast<std::uint64_t>(k), static_cast<std::uint64_t>(m), k),
            "cublasLtMatrixLayoutCreate(A)");
        checkLt(
            cublasLtMatrixLayoutCreate(&m_b, t.inputs, static_cast<std::uint64_t>(k), static_cast<std::uint64_t>(n), k),
            "cublasLtMatrixLayoutCreate(B)");
        checkLt(
            cublasLtMatrixLayoutCreate(&m_d, t.output, static_cast<std::uint64_t>(m), static_cast<std::uint64_t>(n), m),
            "cublasLtMatrixLayoutCreate(D)");
        checkLt(cublasLtMatmulPreferenceCreate(&m_preference), "cublasLtMatmulPreferenceCreate");
        const std::uint64_t workspace = kWorkspaceBytes;
        checkLt(cublasLtMatmulPreferenceSetAttribute(m_preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                                     sizeof workspace),
                "CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES");
    }
    ~LtGemm()
    {
        cublasLtMatmulPreferenceDestroy(m_preference);
        cublasLtMatrixLayoutDestroy(m_d);
        cublasLtMatrixLayoutDestroy(m_b);
        cublasLtMatrixLayoutDestroy(m_a);
        cublasLtMatmulDescDestroy(m_op);
    }
    LtGemm(const LtGemm&) = delete;
    LtGemm& operator=(const LtGemm&) = delete;

    /** The heuristic's algorithms, best first (at most `count`); empty when cuBLASLt has none for the problem. */
    std::vector<cublasLtMatmulAlgo_t> algorithms(int count) const
    {
        std::vector<cublasLtMatmulHeuristicResult_t> results(static_cast<std::size_t>(count));
        int returned = 0;
        const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(m_handle, m_op, m_a, m_b, m_d, m_d, m_preference,
                                                                     count, results.data(), &returned);
        if (status == CUBLAS_STATUS_NOT_SUPPORTED) // no algorithm for this type/shape/alignment combination
            return {};
        checkLt(status, "cublasLtMatmulAlgoGetHeuristic");
        std::vector<cublasLtMatmulAlgo_t> algos;
        for (int i = 0; i < returned; ++i)
            if (results[static_cast<std::size_t>(i)].state == CUBLAS_STATUS_SUCCESS)
                algos.push_back(results[static_cast<std::size_t>(i)].algo);
        return algos;
    }

    /** D = A^T B (alpha 1, beta 0); C is D, never read. */
    cublasStatus_t run(const cublasLtMatmulAlgo_t& algo, const void* a, const void* b, void* d, void* workspace,
                       cudaStream_t stream) const
    {
        const float alpha = 1.0f;
        const float beta = 0.0f;
        return cublasLtMatmul(m_handle, m_op, &alpha, a, m_a, b, m_b, &beta, d, m_d, d, m_d, &algo, workspace,
                              kWorkspaceBytes, stream);
    }

private:
    cublasLtHandle_t m_handle;
    cublasLtMatmulDesc_t m_op = nullptr;
    cublasLtMatrixLayout_t m_a = nullptr;
    cublasLtMatrixLayout_t m_b = nullptr;
    cublasLtMatrixLayout_t m_d = nullptr;
    cublasLtMatmulPreference_t m_preference = nullptr;
};

std::string shapeText(DType dtype, std::int64_t m, std::int64_t n, std::int64_t k)
{
    return std::string(dtypeName(dtype)) + " GEMM m=" + std::to_string(m) + " n=" + std::to_string(n)
        + " k=" + std::to_string(k);
}

/** Every heuristic algorithm of a small odd-sized GEMM on fresh random data against the CPU. */
void checkDType(cublasLtHandle_t handle, DType dtype, const DeviceBuffer& workspace, const BenchContext& context)
{
    constexpr std::int64_t m = 192, n = 160, k = 320; // distinct, multiples of 16 (FP8 needs that)
    const std::uint64_t seed = freshSeed();
    const std::vector<float> a = randomValues(static_cast<std::size_t>(m * k), dtype, seed);
    const std::vector<float> b = randomValues(static_cast<std::size_t>(n * k), dtype, seed + 1);
    std::vector<double> want;
    std::vector<double> scale;
    referenceGemm(a, b, m, n, k, want, scale);
    double absTol = 0;
    double relTol = 0;
    gemmTolerance(dtype, k, absTol, relTol);

    const DeviceBuffer da = upload(a, dtype);
    const DeviceBuffer db = upload(b, dtype);
    const DeviceBuffer dd(static_cast<std::size_t>(m * n * outputBytes(dtype)));

    const LtGemm gemm(handle, dtype, m, n, k);
    const auto algos = gemm.algorithms(kCheckedAlgorithms);
    if (algos.empty())
        throw CudaFailure("cuBLASLt offers no algorithm for " + shapeText(dtype, m, n, k));
    int checked = 0;
    for (std::size_t i = 0; i < algos.size(); ++i) {
        checkCuda(cudaMemsetAsync(dd.get(), 0xff, dd.bytes(), context.stream), "cudaMemset"); // NaN: no stale pass
        const cublasStatus_t status = gemm.run(algos[i], da.get(), db.get(), dd.get(), workspace.get(), context.stream);
        if (status == CUBLAS_STATUS_NOT_SUPPORTED)
            continue;
        checkLt(status, "cublasLtMatmul");
        ++checked;
        checkCuda(cudaStreamSynchronize(context.stream), "GEMM check");
        const CheckResult r = compareOutputs(download(dd.get(), static_cast<std::size_t>(m * n), outputDType(dtype)),
                                             want, scale, absTol, relTol);
        if (!r.ok)
            throw CheckFailure(shapeText(dtype, m, n, k) + " (cuBLASLt algorithm " + std::to_string(i)
                               + ") disagrees with the CPU reference: " + r.describe());
    }
    if (checked == 0)
        throw CudaFailure("cuBLASLt ran none of its algorithms for " + shapeText(dtype, m, n, k));
    note("check   %-4s GEMM: %d cuBLASLt algorithms agree with the CPU reference (%lldx%lldx%lld)",
         std::string(dtypeName(dtype)).c_str(), checked, static_cast<long long>(m), static_cast<long long>(n),
         static_cast<long long>(k));
}

/** Buffers of one GEMM problem, `sets` copies of A, B and D back to back (each 256-byte aligned). */
struct GemmBuffers
{
    std::size_t aBytes = 0, bBytes = 0, dBytes = 0;
    int sets = 1;
    DeviceBuffer a, b, d;

    static std::size_t align(std::size_t bytes) { return (bytes + 255) / 256 * 256; }
    const void* aAt(std::int64_t i) const { return static_cast<const char*>(a.get()) + (i % sets) * align(aBytes); }
    const void* bAt(std::int64_t i) const { return static_cast<const char*>(b.get()) + (i % sets) * align(bBytes); }
    void* dAt(std::int64_t i) const { return static_cast<char*>(d.get()) + (i % sets) * align(dBytes); }
};

/** Compares a few elements of D (set 0) with CPU dot products of the same A rows and B rows. */
void spotCheck(const GemmBuffers& buffers, DType dtype, std::int64_t m, std::int64_t n, std::int64_t k)
{
    std::mt19937_64 engine(freshSeed());
    double absTol = 0;
    double relTol = 0;
    gemmTolerance(dtype, k, absTol, relTol);
    const std::size_t inBytes = static_cast<std::size_t>(dtypeBytes(dtype));
    const std::size_t outBytes = static_cast<std::size_t>(outputBytes(dtype));
    std::vector<float> got;
    std::vector<double> want;
    std::vector<double> scale;
    for (int s = 0; s < kSpotChecks; ++s) {
        const auto i = static_cast<std::int64_t>(engine() % static_cast<std::uint64_t>(m));
        const auto j = static_cast<std::int64_t>(engine() % static_cast<std::uint64_t>(n));
        const auto aRow = download(static_cast<const char*>(buffers.aAt(0)) + static_cast<std::size_t>(i * k) * inBytes,
                                   static_cast<std::size_t>(k), dtype);
        const auto bRow = download(static_cast<const char*>(buffers.bAt(0)) + static_cast<std::size_t>(j * k) * inBytes,
                                   static_cast<std::size_t>(k), dtype);
        const auto d
            = download(static_cast<const char*>(buffers.dAt(0)) + static_cast<std::size_t>(j * m + i) * outBytes, 1,
                       outputDType(dtype));
        double sum = 0;
        double abs = 0;
        for (std::int64_t l = 0; l < k; ++l) {
            sum += static_cast<double>(aRow[l]) * bRow[l];
            abs += std::fabs(static_cast<double>(aRow[l]) * bRow[l]);
        }
        got.push_back(d[0]);
        want.push_back(sum);
        scale.push_back(abs);
    }
    const CheckResult r = compareOutputs(got, want, scale, absTol, relTol);
    if (!r.ok)
        throw CheckFailure(shapeText(dtype, m, n, k) + ": a timed result disagrees with the CPU: " + r.describe());
}

/** Median seconds of one GEMM, or nullopt when it does not fit in free memory. */
std::optional<double> timeGemm(cublasLtHandle_t handle, const GemmCase& c, const DeviceBuffer& workspace,
                               const BenchContext& context)
{
    const DType dtype = c.dtype;
    const auto [m, n, k, name] = c.shape;
    GemmBuffers buffers;
    buffers.aBytes = static_cast<std::size_t>(m * k * dtypeBytes(dtype));
    buffers.bBytes = static_cast<std::size_t>(n * k * dtypeBytes(dtype));
    buffers.dBytes = static_cast<std::size_t>(m * n * outputBytes(dtype));
    const std::size_t setBytes
        = GemmBuffers::align(buffers.aBytes) + GemmBuffers::align(buffers.bBytes) + GemmBuffers::align(buffers.dBytes);
    const std::size_t budget = freeDeviceMemory() / 10 * 8;
    if (setBytes > budget) {
        note("skip    %s: needs %.2f GiB, %.2f GiB free", shapeText(dtype, m, n, k).c_str(), setBytes / 1073741824.0,
             budget / 1073741824.0);
        return std::nullopt;
    }
    buffers.sets = std::min<int>(rotatingSets(setBytes, context.l2Bytes), static_cast<int>(budget / setBytes));
    buffers.a = DeviceBuffer(GemmBuffers::align(buffers.aBytes) * static_cast<std::size_t>(buffers.sets));
    buffers.b = DeviceBuffer(GemmBuffers::align(buffers.bBytes) * static_cast<std::size_t>(buffers.sets));
    buffers.d = DeviceBuffer(GemmBuffers::align(buffers.dBytes) * static_cast<std::size_t>(buffers.sets));
    // Random inputs: zeros would let the tensor cores run cooler (and faster) than real data does.
    checkCuda(launchFillUniform(buffers.a.get(), buffers.a.bytes() / static_cast<std::size_t>(dtypeBytes(dtype)), dtype,
                                freshSeed(), context.stream),
              "fill A");
    checkCuda(launchFillUniform(buffers.b.get(), buffers.b.bytes() / static_cast<std::size_t>(dtypeBytes(dtype)), dtype,
                                freshSeed(), context.stream),
              "fill B");

    const LtGemm gemm(handle, dtype, m, n, k);
    const auto algos = gemm.algorithms(kTunedAlgorithms);
    if (algos.empty()) {
        note("skip    %s: cuBLASLt offers no algorithm for it", shapeText(dtype, m, n, k).c_str());
        return std::nullopt;
    }
    TimingConfig quick = context.timing;
    quick.warmup = 1;
    quick.reps = 3;
    std::optional<std::size_t> best;
    double bestTime = 0;
    for (std::size_t a = 0; a < algos.size(); ++a) {
        if (gemm.run(algos[a], buffers.aAt(0), buffers.bAt(0), buffers.dAt(0), workspace.get(), context.stream)
            != CUBLAS_STATUS_SUCCESS)
            continue; // e.g. CUBLAS_STATUS_NOT_SUPPORTED for this alignment: try the next one
        const double t = algos.size() == 1 ? 0.0
                                           : timeLaunches(
                                               context.stream,
                                               [&](std::int64_t i) {
                                                   checkLt(gemm.run(algos[a], buffers.aAt(i), buffers.bAt(i),
                                                                    buffers.dAt(i), workspace.get(), context.stream),
                                                           "cublasLtMatmul");
                                               },
                                               quick);
        if (!best || t < bestTime) {
            best = a;
            bestTime = t;
        }
    }
    if (!best) {
        note("skip    %s: cuBLASLt ran none of its %zu algorithms for it", shapeText(dtype, m, n, k).c_str(),
             algos.size());
        return std::nullopt;
    }
    const cublasLtMatmulAlgo_t& algo = algos[*best];
    const double seconds = timeLaunches(
        context.stream,
        [&](std::int64_t i) {
            checkLt(gemm.run(algo, buffers.aAt(i), buffers.bAt(i), buffers.dAt(i), workspace.get(), context.stream),
                    "cublasLtMatmul");
        },
        context.timing);

    checkLt(gemm.run(algo, buffers.aAt(0), buffers.bAt(0), buffers.dAt(0), workspace.get(), context.stream),
            "cublasLtMatmul");
    checkCuda(cudaStreamSynchronize(context.stream), "GEMM");
    spotCheck(buffers, dtype, m, n, k);
    return seconds;
}

bool supported(DType dtype, int computeCapability)
{
    return computeCapability >= dtypeMinComputeCapability(dtype);
}

bool fp8Shape(const GemmShape& s)
{
    return s.m % 16 == 0 && s.n % 16 == 0 && s.k % 16 == 0;
}

/** The dtypes of `cases` in first-seen order. */
std::vector<DType> dtypesOf(const std::vector<GemmCase>& cases)
{
    std::vector<DType> dtypes;
    for (const auto& c : cases)
        if (std::find(dtypes.begin(), dtypes.end(), c.dtype) == dtypes.end())
            dtypes.push_back(c.dtype);
    return dtypes;
}

} // namespace

int matmulSteps(const std::vector<GemmCase>& cases, int computeCapability)
{
    int steps = 0;
    for (const DType dtype : dtypesOf(cases))
        if (supported(dtype, computeCapability))
            ++steps; // the check
    for (const auto& c : cases)
        if (supported(c.dtype, computeCapability))
            ++steps;
    return steps;
}

std::vector<MatmulResult> runMatmulPhase(const std::vector<GemmCase>& cases, BenchContext& context)
{
    cublasLtHandle_t handle = nullptr;
    checkLt(cublasLtCreate(&handle), "cublasLtCreate");
    struct HandleGuard
    {
        cublasLtHandle_t h;
        ~HandleGuard() { cublasLtDestroy(h); }
    } guard {handle};
    const DeviceBuffer workspace(kWorkspaceBytes);

    std::vector<MatmulResult> results;
    for (const DType dtype : dtypesOf(cases)) {
        if (!supported(dtype, context.computeCapability)) {
            note("skip    %s GEMMs: they need compute capability %d.%d, this GPU has %d.%d",
                 std::string(dtypeName(dtype)).c_str(), dtypeMinComputeCapability(dtype) / 10,
                 dtypeMinComputeCapability(dtype) % 10, context.computeCapability / 10, context.computeCapability % 10);
            continue;
        }
        checkDType(handle, dtype, workspace, context);
        context.progress->step("matmul");
        for (const auto& c : cases) {
            if (c.dtype != dtype)
                continue;
            const auto& s = c.shape;
            std::optional<double> seconds;
            if (dtype == DType::FP8E4M3 && !fp8Shape(s))
                note("skip    %s: FP8 GEMMs need m, n, k multiples of 16", shapeText(dtype, s.m, s.n, s.k).c_str());
            else
                seconds = timeGemm(handle, c, workspace, context);
            context.progress->step("matmul");
            if (!seconds)
                continue;
            const double flops = 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k);
            note("matmul  %-4s m=%-6lld n=%-6lld k=%-6lld %10.4f ms %8.1f TFLOP/s  %s",
                 std::string(dtypeName(dtype)).c_str(), static_cast<long long>(s.m), static_cast<long long>(s.n),
                 static_cast<long long>(s.k), *seconds * 1e3, flops / *seconds / 1e12, s.name.c_str());
            results.push_back({dtype, s.m, s.n, s.k, *seconds});
        }
    }
    return results;
}

} // namespace shardscape::profiler
