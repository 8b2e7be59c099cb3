// SPDX-License-Identifier: MIT
// Row-major tensors Q, K, V, O: [batch * heads][seq][head_dim]; scores S, P: [slice][seq][seq].
// cuBLAS is column-major, where a row-major [r x c] matrix reads as its transpose with ld = c:
//   S = scale * Q K^T  (row-major)  <=>  S^T = K Q^T: gemm(op(A) = T on K (lda = d), B = Q (ldb = d)), m = n = s, k = d
//   O = P V            (row-major)  <=>  O^T = V^T P^T: gemm(N, N, A = V (lda = d), B = P (ldb = s)), m = d, n = s, k =
//   s
#include "bench_attention.h"

#include "kernels.h"
#include "reference.h"

#include <algorithm>
#include <cmath>
#include <cublas_v2.h>
#include <cuda_runtime.h>

namespace shardscape::profiler {

namespace {

void checkBlas(cublasStatus_t status, const char* what)
{
    if (status != CUBLAS_STATUS_SUCCESS)
        throw CudaFailure(std::string(what) + ": " + cublasGetStatusString(status));
}

std::string shapeText(DType dtype, const AttentionShape& a)
{
    return std::string(dtypeName(dtype)) + " attention b=" + std::to_string(a.batch) + " h=" + std::to_string(a.heads)
        + " s=" + std::to_string(a.seq) + " d=" + std::to_string(a.headDim);
}

/** Device buffers and the launch sequence of one attention shape. */
class Attention
{
public:
    /** `sliceMatrices`: how many of the batch * heads score matrices are materialised at once. */
    Attention(cublasHandle_t handle, DType dtype, const AttentionShape& shape, std::int64_t sliceMatrices)
        : m_handle(handle)
        , m_dtype(dtype)
        , m_shape(shape)
        , m_slice(sliceMatrices)
        , m_scores(static_cast<std::size_t>(sliceMatrices * shape.seq * shape.seq * dtypeBytes(dtype)))
    {
    }

    /** Runs on the handle's stream; q, k, v, o hold matrices() x seq x headDim elements. */
    void run(const void* q, const void* k, const void* v, void* o, cudaStream_t stream) const
    {
        const cudaDataType_t type = m_dtype == DType::BF16 ? CUDA_R_16BF : CUDA_R_16F;
        const std::int64_t s = m_shape.seq;
        const std::int64_t d = m_shape.headDim;
        const std::int64_t elem = dtypeBytes(m_dtype);
        const float scale = 1.0f / std::sqrt(static_cast<float>(d));
        const float one = 1.0f;
        const float zero = 0.0f;
        const std::int64_t matrices = m_shape.batch * m_shape.heads;
        for (std::int64_t first = 0; first < matrices; first += m_slice) {
            const auto count = static_cast<int>(std::min(m_slice, matrices - first));
            const std::int64_t offset = first * s * d * elem;
            const auto* qs = static_cast<const char*>(q) + offset;
            const auto* ks = static_cast<const char*>(k) + offset;
            const auto* vs = static_cast<const char*>(v) + offset;
            auto* os = static_cast<char*>(o) + offset;
            checkBlas(cublasGemmStridedBatchedEx(m_handle, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(s),
                                                 static_cast<int>(s), static_cast<int>(d), &scale, ks, type,
                                                 static_cast<int>(d), s * d, qs, type, static_cast<int>(d), s * d,
                                                 &zero, m_scores.get(), type, static_cast<int>(s), s * s, count,
                                                 CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                      "cublasGemmStridedBatchedEx (Q K^T)");
            checkCuda(launchCausalSoftmax(m_scores.get(), m_scores.get(), count, s, m_dtype, stream),
                      "causal softmax launch");
            checkBlas(cublasGemmStridedBatchedEx(m_handle, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(d),
                                                 static_cast<int>(s), static_cast<int>(s), &one, vs, type,
                                                 static_cast<int>(d), s * d, m_scores.get(), type, static_cast<int>(s),
                                                 s * s, &zero, os, type, static_cast<int>(d), s * d, count,
                                                 CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                      "cublasGemmStridedBatchedEx (P V)");
        }
    }

private:
    cublasHandle_t m_handle;
    DType m_dtype;
    AttentionShape m_shape;
    std::int64_t m_slice;
    DeviceBuffer m_scores;
};

void checkAttention(cublasHandle_t handle, DType dtype, const BenchContext& context)
{
    // Three heads, the scores of two materialised at once: the slicing loop runs twice, the second time short.
    const AttentionShape shape {1, 3, 80, 64};
    const std::int64_t matrices = shape.batch * shape.heads;
    const auto count = static_cast<std::size_t>(matrices * shape.seq * shape.headDim);
    const std::uint64_t seed = freshSeed();
    const std::vector<float> q = randomValues(count, dtype, seed);
    const std::vector<float> k = randomValues(count, dtype, seed + 1);
    const std::vector<float> v = randomValues(count, dtype, seed + 2);
    const DeviceBuffer dq = upload(q, dtype);
    const DeviceBuffer dk = upload(k, dtype);
    const DeviceBuffer dv = upload(v, dtype);
    const DeviceBuffer dout(count * static_cast<std::size_t>(dtypeBytes(dtype)));
    checkCuda(cudaMemsetAsync(dout.get(), 0xff, dout.bytes(), context.stream), "cudaMemset");
    const Attention attention(handle, dtype, shape, 2);
    attention.run(dq.get(), dk.get(), dv.get(), dout.get(), context.stream);
    const std::vector<float> got = download(dout.get(), count, dtype);
    const auto want = referenceCausalAttention(q, k, v, matrices, shape.seq, shape.headDim,
                                               1.0 / std::sqrt(static_cast<double>(shape.headDim)));
    // Scores and probabilities are rounded to the dtype between the steps (as unfused attention in a framework
    // does); outputs are averages of values in [-1, 1], so the bound is absolute.
    const double absTol = dtype == DType::BF16 ? 2e-2 : 5e-3;
    const CheckResult r = compareOutputs(got, want, {}, absTol, 0.0);
    if (!r.ok)
        throw CheckFailure(shapeText(dtype, shape) + " disagrees with the CPU reference: " + r.describe());
    note("check   %-4s causal attention (QK^T, causal softmax, PV) agrees with the CPU reference",
         std::string(dtypeName(dtype)).c_str());
}

} // namespace

std::vector<DType> attentionDTypes(const std::vector<DType>& dtypes)
{
    std::vector<DType> result;
    for (const DType d : dtypes)
        if (d == DType::BF16 || d == DType::FP16)
            result.push_back(d);
    return result;
}

int attentionSteps(const std::vector<AttentionShape>& shapes, const std::vector<DType>& dtypes)
{
    return static_cast<int>(attentionDTypes(dtypes).size() * (1 + shapes.size()));
}

std::vector<AttentionResult> runAttentionPhase(const std::vector<AttentionShape>& shapes,
                                               const std::vector<DType>& dtypes, BenchContext& context)
{
    cublasHandle_t handle = nullptr;
    checkBlas(cublasCreate(&handle), "cublasCreate");
    struct HandleGuard
    {
        cublasHandle_t h;
        ~HandleGuard() { cublasDestroy(h); }
    } guard {handle};
    checkBlas(cublasSetStream(handle, context.stream), "cublasSetStream");

    std::vector<AttentionResult> results;
    for (const DType dtype : attentionDTypes(dtypes)) {
        checkAttention(handle, dtype, context);
        context.progress->step("attention");
        for (const AttentionShape& shape : shapes) {
            const std::int64_t elem = dtypeBytes(dtype);
            const std::int64_t matrices = shape.batch * shape.heads;
            const auto tensorBytes = static_cast<std::size_t>(matrices * shape.seq * shape.headDim * elem);
            const auto matrixBytes = static_cast<std::size_t>(shape.seq * shape.seq * elem);
            const std::size_t budget = freeDeviceMemory() / 10 * 8;
            // Q, K, V, O whole; the scores in slices of matrices (one after the other) when they do not all fit.
            const std::int64_t slice = std::min<std::int64_t>(
                matrices,
                static_cast<std::int64_t>(budget > 4 * tensorBytes ? (budget - 4 * tensorBytes) / matrixBytes : 0));
            if (slice < 1) {
                note("skip    %s: not enough free memory", shapeText(dtype, shape).c_str());
                context.progress->step("attention");
                continue;
            }
            const DeviceBuffer q(tensorBytes);
            const DeviceBuffer k(tensorBytes);
            const DeviceBuffer v(tensorBytes);
            const DeviceBuffer o(tensorBytes);
            for (const DeviceBuffer* b : {&q, &k, &v})
                checkCuda(launchFillUniform(b->get(), tensorBytes / static_cast<std::size_t>(elem), dtype, freshSeed(),
                                            context.stream),
                          "fill");
            const Attention attention(handle, dtype, shape, slice);
            const double seconds = timeLaunches(
                context.stream,
                [&](std::int64_t) { attention.run(q.get(), k.get(), v.get(), o.get(), context.stream); },
                context.timing);
            const AttentionResult row {dtype, shape.batch, shape.heads, shape.seq, shape.headDim, seconds};
            note("attn    %-4s b=%lld h=%lld s=%lld d=%lld %10.4f ms %8.1f TFLOP/s (unmasked count)",
                 std::string(dtypeName(dtype)).c_str(), static_cast<long long>(shape.batch),
                 static_cast<long long>(shape.heads), static_cast<long long>(shape.seq),
                 static_cast<long long>(shape.headDim), seconds * 1e3, row.flops() / seconds / 1e12);
            results.push_back(row);
            context.progress->step("attention");
        }
    }
    return results;
}

} // namespace shardscape::profiler
