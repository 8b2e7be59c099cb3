// SPDX-License-Identifier: MIT
// The profiler's own kernels: random fill, a GPU-side delay, and the memory-bound ops it measures. They are
// plain, bandwidth-oriented implementations (16-byte vector loads, one block per row for the row-wise ops),
// comparable to what a framework runs for the same op; every one is checked against reference.cpp first.
#include "kernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <initializer_list>

namespace shardscape::profiler {

namespace {

constexpr int kThreads = 256; // per block, a multiple of the warp size
constexpr std::int64_t kMaxBlocks = 65536; // grid-stride loops cover the rest

// ---- conversions --------------------------------------------------------------------------------------------

__device__ __forceinline__ float toFloat(float v)
{
    return v;
}
__device__ __forceinline__ float toFloat(__nv_bfloat16 v)
{
    return __bfloat162float(v);
}
__device__ __forceinline__ float toFloat(__half v)
{
    return __half2float(v);
}

template<class T> __device__ __forceinline__ T fromFloat(float v);
template<> __device__ __forceinline__ float fromFloat<float>(float v)
{
    return v;
}
template<> __device__ __forceinline__ __nv_bfloat16 fromFloat<__nv_bfloat16>(float v)
{
    return __float2bfloat16_rn(v);
}
template<> __device__ __forceinline__ __half fromFloat<__half>(float v)
{
    return __float2half_rn(v);
}

/** 16 bytes of T, loaded and stored as one vector. */
template<class T> struct alignas(16) Vec
{
    static constexpr int N = 16 / sizeof(T);
    T v[N];
};

template<class T> __device__ __forceinline__ Vec<T> loadVec(const T* p)
{
    return *reinterpret_cast<const Vec<T>*>(p);
}
template<class T> __device__ __forceinline__ void storeVec(T* p, const Vec<T>& value)
{
    *reinterpret_cast<Vec<T>*>(p) = value;
}

bool aligned16(const void* p)
{
    return reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
}

unsigned gridFor(std::int64_t work)
{
    return static_cast<unsigned>(std::clamp<std::int64_t>((work + kThreads - 1) / kThreads, 1, kMaxBlocks));
}

__device__ __forceinline__ std::int64_t globalThread()
{
    return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ std::int64_t gridThreads()
{
    return static_cast<std::int64_t>(gridDim.x) * blockDim.x;
}

// ---- fill and spin ------------------------------------------------------------------------------------------

__device__ __forceinline__ std::uint64_t splitmix64(std::uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/** Uniform in [-1, 1): the top 24 bits of the hash. */
__device__ __forceinline__ float uniformAt(std::uint64_t seed, std::int64_t i)
{
    const std::uint64_t h = splitmix64(seed ^ splitmix64(static_cast<std::uint64_t>(i)));
    return static_cast<float>(h >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

template<class T> __global__ void fillKernel(T* data, std::int64_t count, std::uint64_t seed)
{
    for (std::int64_t i = globalThread(); i < count; i += gridThreads())
        data[i] = fromFloat<T>(uniformAt(seed, i));
}

__global__ void fillFp8Kernel(__nv_fp8_storage_t* data, std::int64_t count, std::uint64_t seed)
{
    for (std::int64_t i = globalThread(); i < count; i += gridThreads())
        data[i] = __nv_cvt_float_to_fp8(uniformAt(seed, i), __NV_SATFINITE, __NV_E4M3);
}

__device__ __forceinline__ std::uint64_t globalTimerNs()
{
    std::uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__global__ void spinKernel(std::uint64_t nanoseconds)
{
    const std::uint64_t start = globalTimerNs();
    while (globalTimerNs() - start < nanoseconds)
        __nanosleep(500);
}

// ---- copy and elementwise -----------------------------------------------------------------------------------

__global__ void copyVecKernel(const uint4* in, uint4* out, std::int64_t count)
{
    for (std::int64_t i = globalThread(); i < count; i += gridThreads())
        out[i] = in[i];
}

__global__ void copyBytesKernel(const unsigned char* in, unsigned char* out, std::int64_t count)
{
    for (std::int64_t i = globalThread(); i < count; i += gridThreads())
        out[i] = in[i];
}

__device__ __forceinline__ float geluTanh(float v)
{
    return 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
}

template<class T>
__global__ void biasGeluVecKernel(const T* x, const T* bias, T* y, std::int64_t rows, std::int64_t cols)
{
    constexpr int N = Vec<T>::N;
    const std::int64_t vecsPerRow = cols / N;
    const std::int64_t total = rows * vecsPerRow;
    for (std::int64_t v = globalThread(); v < total; v += gridThreads()) {
        const Vec<T> xv = loadVec(x + v * N);
        const Vec<T> bv = loadVec(bias + (v % vecsPerRow) * N);
        Vec<T> out;
#pragma unroll
        for (int e = 0; e < N; ++e)
            out.v[e] = fromFloat<T>(geluTanh(toFloat(xv.v[e]) + toFloat(bv.v[e])));
        storeVec(y + v * N, out);
    }
}

template<class T> __global__ void biasGeluKernel(const T* x, const T* bias, T* y, std::int64_t rows, std::int64_t cols)
{
    const std::int64_t total = rows * cols;
    for (std::int64_t i = globalThread(); i < total; i += gridThreads())
        y[i] = fromFloat<T>(geluTanh(toFloat(x[i]) + toFloat(bias[i % cols])));
}

// ---- row-wise ops: one block per row ------------------------------------------------------------------------

struct SumOp
{
    __device__ float operator()(float a, float b) const { return a + b; }
};
struct MaxOp
{
    __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

/** Every thread of the block gets op over all threads' `value`. `shared` holds one float per warp. */
template<class Op> __device__ float blockReduce(float value, Op op, float* shared)
{
    for (int offset = 16; offset > 0; offset /= 2)
        value = op(value, __shfl_xor_sync(0xffffffffu, value, offset));
    __syncthreads(); // the previous reduction's readers are done with `shared`
    if (threadIdx.x % 32 == 0)
        shared[threadIdx.x / 32] = value;
    __syncthreads();
    float result = shared[0];
    for (unsigned w = 1; w < blockDim.x / 32; ++w)
        result = op(result, shared[w]);
    return result;
}

/** f(j, x[j]) for j < limit, spread over the block; Vectorized needs cols % N == 0 and an aligned row. */
template<class T, bool Vectorized, class F>
__device__ __forceinline__ void forEachInRow(const T* row, std::int64_t limit, F f)
{
    if constexpr (Vectorized) {
        constexpr int N = Vec<T>::N;
        const std::int64_t vecs = (limit + N - 1) / N;
        for (std::int64_t v = threadIdx.x; v < vecs; v += blockDim.x) {
            const Vec<T> a = loadVec(row + v * N);
#pragma unroll
            for (int e = 0; e < N; ++e)
                if (v * N + e < limit)
                    f(v * N + e, toFloat(a.v[e]));
        }
    } else {
        for (std::int64_t j = threadIdx.x; j < limit; j += blockDim.x)
            f(j, toFloat(row[j]));
    }
}

/** out[j] = g(j, in[j]) for every j < cols. `in` may equal `out`: each element is read before it is written. */
template<class T, bool Vectorized, class G>
__device__ __forceinline__ void mapRow(const T* in, T* out, std::int64_t cols, G g)
{
    if constexpr (Vectorized) {
        constexpr int N = Vec<T>::N;
        for (std::int64_t v = threadIdx.x; v < cols / N; v += blockDim.x) {
            const Vec<T> a = loadVec(in + v * N);
            Vec<T> b;
#pragma unroll
            for (int e = 0; e < N; ++e)
                b.v[e] = fromFloat<T>(g(v * N + e, toFloat(a.v[e])));
            storeVec(out + v * N, b);
        }
    } else {
        for (std::int64_t j = threadIdx.x; j < cols; j += blockDim.x)
            out[j] = fromFloat<T>(g(j, toFloat(in[j])));
    }
}

template<class T, bool V> __global__ void rmsNormKernel(const T* x, const T* weight, T* y, std::int64_t cols, float eps)
{
    __shared__ float shared[32];
    const std::int64_t offset = static_cast<std::int64_t>(blockIdx.x) * cols;
    float sumSq = 0;
    forEachInRow<T, V>(x + offset, cols, [&](std::int64_t, float v) { sumSq += v * v; });
    sumSq = blockReduce(sumSq, SumOp {}, shared);
    const float inv = rsqrtf(sumSq / static_cast<float>(cols) + eps);
    mapRow<T, V>(x + offset, y + offset, cols, [&](std::int64_t j, float v) { return v * inv * toFloat(weight[j]); });
}

template<class T, bool V>
__global__ void layerNormKernel(const T* x, const T* weight, const T* bias, T* y, std::int64_t cols, float eps)
{
    __shared__ float shared[32];
    const std::int64_t offset = static_cast<std::int64_t>(blockIdx.x) * cols;
    float sum = 0;
    forEachInRow<T, V>(x + offset, cols, [&](std::int64_t, float v) { sum += v; });
    const float mean = blockReduce(sum, SumOp {}, shared) / static_cast<float>(cols);
    float sumSq = 0; // two passes: the variance around the mean, no cancellation
    forEachInRow<T, V>(x + offset, cols, [&](std::int64_t, float v) { sumSq += (v - mean) * (v - mean); });
    const float inv = rsqrtf(blockReduce(sumSq, SumOp {}, shared) / static_cast<float>(cols) + eps);
    mapRow<T, V>(x + offset, y + offset, cols,
                 [&](std::int64_t j, float v) { return (v - mean) * inv * toFloat(weight[j]) + toFloat(bias[j]); });
}

/** Softmax of row blockIdx.x over its first `valid(row)` columns, 0 after them (causal: valid = i + 1). */
template<class T, bool V, bool Causal>
__global__ void softmaxKernel(const T* x, T* y, std::int64_t cols, std::int64_t seq)
{
    __shared__ float shared[32];
    const std::int64_t rowIndex = blockIdx.x;
    const std::int64_t offset = rowIndex * cols;
    const std::int64_t valid = Causal ? rowIndex % seq + 1 : cols;
    float max = -INFINITY;
    forEachInRow<T, V>(x + offset, valid, [&](std::int64_t, float v) { max = fmaxf(max, v); });
    max = blockReduce(max, MaxOp {}, shared);
    float sum = 0;
    forEachInRow<T, V>(x + offset, valid, [&](std::int64_t, float v) { sum += expf(v - max); });
    const float inv = 1.0f / blockReduce(sum, SumOp {}, shared);
    mapRow<T, V>(x + offset, y + offset, cols,
                 [&](std::int64_t j, float v) { return j < valid ? expf(v - max) * inv : 0.0f; });
}

/** Calls f(T{}) with T the storage type of `dtype` (fp32 for tf32); false for fp8. */
template<class F> bool dispatch(DType dtype, F f)
{
    switch (dtype) {
    case DType::BF16:
        f(__nv_bfloat16 {});
        return true;
    case DType::FP16:
        f(__half {});
        return true;
    case DType::TF32:
    case DType::FP32:
        f(float {});
        return true;
    case DType::FP8E4M3:
        break;
    }
    return false;
}

/** The vector path needs whole vectors per row and 16-byte aligned pointers. */
template<class T> bool vectorizable(std::int64_t cols, std::initializer_list<const void*> pointers)
{
    if (cols % Vec<T>::N != 0)
        return false;
    for (const void* p : pointers)
        if (p && !aligned16(p))
            return false;
    return true;
}

cudaError_t rowLaunchError(std::int64_t rows)
{
    // One block per row: gridDim.x is at most 2^31 - 1.
    return rows < 1 || rows > 0x7fffffff ? cudaErrorInvalidValue : cudaSuccess;
}

} // namespace

cudaError_t launchFillUniform(void* data, std::size_t count, DType dtype, std::uint64_t seed, cudaStream_t stream)
{
    const auto n = static_cast<std::int64_t>(count);
    if (dtype == DType::FP8E4M3)
        fillFp8Kernel<<<gridFor(n), kThreads, 0, stream>>>(static_cast<__nv_fp8_storage_t*>(data), n, seed);
    else
        dispatch(dtype, [&](auto tag) {
            using T = decltype(tag);
            fillKernel<T><<<gridFor(n), kThreads, 0, stream>>>(static_cast<T*>(data), n, seed);
        });
    return cudaGetLastError();
}

cudaError_t launchSpin(std::uint64_t nanoseconds, cudaStream_t stream)
{
    spinKernel<<<1, 1, 0, stream>>>(nanoseconds);
    return cudaGetLastError();
}

cudaError_t launchCopy(const void* in, void* out, std::size_t bytes, cudaStream_t stream)
{
    const auto* src = static_cast<const unsigned char*>(in);
    auto* dst = static_cast<unsigned char*>(out);
    std::int64_t head = 0;
    if (aligned16(in) && aligned16(out)) {
        const auto vecs = static_cast<std::int64_t>(bytes / 16);
        if (vecs > 0)
            copyVecKernel<<<gridFor(vecs), kThreads, 0, stream>>>(reinterpret_cast<const uint4*>(src),
                                                                  reinterpret_cast<uint4*>(dst), vecs);
        head = vecs * 16;
    }
    const auto rest = static_cast<std::int64_t>(bytes) - head;
    if (rest > 0)
        copyBytesKernel<<<gridFor(rest), kThreads, 0, stream>>>(src + head, dst + head, rest);
    return cudaGetLastError();
}

cudaError_t launchBiasGelu(const void* x, const void* bias, void* y, std::int64_t rows, std::int64_t cols, DType dtype,
                           cudaStream_t stream)
{
    const bool ok = dispatch(dtype, [&](auto tag) {
        using T = decltype(tag);
        const auto* xs = static_cast<const T*>(x);
        const auto* bs = static_cast<const T*>(bias);
        auto* ys = static_cast<T*>(y);
        if (vectorizable<T>(cols, {x, bias, y}))
            biasGeluVecKernel<T><<<gridFor(rows * cols / Vec<T>::N), kThreads, 0, stream>>>(xs, bs, ys, rows, cols);
        else
            biasGeluKernel<T><<<gridFor(rows * cols), kThreads, 0, stream>>>(xs, bs, ys, rows, cols);
    });
    return ok ? cudaGetLastError() : cudaErrorInvalidValue;
}

cudaError_t launchRmsNorm(const void* x, const void* weight, void* y, std::int64_t rows, std::int64_t cols, float eps,
                          DType dtype, cudaStream_t stream)
{
    if (const cudaError_t e = rowLaunchError(rows); e != cudaSuccess)
        return e;
    const bool ok = dispatch(dtype, [&](auto tag) {
        using T = decltype(tag);
        const auto grid = static_cast<unsigned>(rows);
        const auto* xs = static_cast<const T*>(x);
        const auto* ws = static_cast<const T*>(weight);
        auto* ys = static_cast<T*>(y);
        if (vectorizable<T>(cols, {x, y}))
            rmsNormKernel<T, true><<<grid, kThreads, 0, stream>>>(xs, ws, ys, cols, eps);
        else
            rmsNormKernel<T, false><<<grid, kThreads, 0, stream>>>(xs, ws, ys, cols, eps);
    });
    return ok ? cudaGetLastError() : cudaErrorInvalidValue;
}

cudaError_t launchLayerNorm(const void* x, const void* weight, const void* bias, void* y, std::int64_t rows,
                            std::int64_t cols, float eps, DType dtype, cudaStream_t stream)
{
    if (const cudaError_t e = rowLaunchError(rows); e != cudaSuccess)
        return e;
    const bool ok = dispatch(dtype, [&](auto tag) {
        using T = decltype(tag);
        const auto grid = static_cast<unsigned>(rows);
        const auto* xs = static_cast<const T*>(x);
        const auto* ws = static_cast<const T*>(weight);
        const auto* bs = static_cast<const T*>(bias);
        auto* ys = static_cast<T*>(y);
        if (vectorizable<T>(cols, {x, y}))
            layerNormKernel<T, true><<<grid, kThreads, 0, stream>>>(xs, ws, bs, ys, cols, eps);
        else
            layerNormKernel<T, false><<<grid, kThreads, 0, stream>>>(xs, ws, bs, ys, cols, eps);
    });
    return ok ? cudaGetLastError() : cudaErrorInvalidValue;
}

namespace {

/** Row softmax over `rows` rows of `cols`; Causal masks each row of a seq x seq score matrix at its diagonal. */
template<bool Causal>
cudaError_t launchRowSoftmax(const void* x, void* y, std::int64_t rows, std::int64_t cols, DType dtype,
                             cudaStream_t stream)
{
    if (const cudaError_t e = rowLaunchError(rows); e != cudaSuccess)
        return e;
    const bool ok = dispatch(dtype, [&](auto tag) {
        using T = decltype(tag);
        const auto grid = static_cast<unsigned>(rows);
        if (vectorizable<T>(cols, {x, y}))
            softmaxKernel<T, true, Causal>
                <<<grid, kThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y), cols, cols);
        else
            softmaxKernel<T, false, Causal>
                <<<grid, kThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y), cols, cols);
    });
    return ok ? cudaGetLastError() : cudaErrorInvalidValue;
}

} // namespace

cudaError_t launchSoftmax(const void* x, void* y, std::int64_t rows, std::int64_t cols, DType dtype,
                          cudaStream_t stream)
{
    return launchRowSoftmax<false>(x, y, rows, cols, dtype, stream);
}

cudaError_t launchCausalSoftmax(const void* x, void* y, std::int64_t matrices, std::int64_t seq, DType dtype,
                                cudaStream_t stream)
{
    return launchRowSoftmax<true>(x, y, matrices * seq, seq, dtype, stream);
}

} // namespace shardscape::profiler
