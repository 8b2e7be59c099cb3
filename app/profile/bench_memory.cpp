// SPDX-License-Identifier: MIT
#include "bench_memory.h"

#include "kernels.h"
#include "reference.h"

#include <algorithm>
#include <array>
#include <cuda_runtime.h>

namespace shardscape::profiler {

namespace {

constexpr std::int64_t kCols = 4096; // a typical hidden size: rows of 8 KiB (bf16)
constexpr float kEps = 1e-5f;
constexpr std::array<const char*, 5> kOps {"copy", "elementwise", "rmsnorm", "layernorm", "softmax"};

std::vector<std::int64_t> inputSizes(bool quick)
{
    if (quick)
        return {4ll << 20, 64ll << 20, 256ll << 20};
    return {1ll << 20, 4ll << 20, 16ll << 20, 64ll << 20, 256ll << 20, 1ll << 30};
}

/** One op over rows x cols in `dtype`; `weight` and `bias` hold cols elements. */
cudaError_t launchOp(std::string_view op, const void* x, void* y, const void* weight, const void* bias,
                     std::int64_t rows, std::int64_t cols, DType dtype, cudaStream_t stream)
{
    if (op == "copy")
        return launchCopy(x, y, static_cast<std::size_t>(rows * cols * dtypeBytes(dtype)), stream);
    if (op == "elementwise")
        return launchBiasGelu(x, bias, y, rows, cols, dtype, stream);
    if (op == "rmsnorm")
        return launchRmsNorm(x, weight, y, rows, cols, kEps, dtype, stream);
    if (op == "layernorm")
        return launchLayerNorm(x, weight, bias, y, rows, cols, kEps, dtype, stream);
    return launchSoftmax(x, y, rows, cols, dtype, stream);
}

/** Bytes an op reads and writes (the ideal: x once, y once, the per-column parameters once). */
std::int64_t opBytes(std::string_view op, std::int64_t rows, std::int64_t cols, DType dtype)
{
    const std::int64_t tensor = rows * cols * dtypeBytes(dtype);
    const std::int64_t column = cols * dtypeBytes(dtype);
    if (op == "elementwise" || op == "rmsnorm")
        return 2 * tensor + column;
    if (op == "layernorm")
        return 2 * tensor + 2 * column;
    return 2 * tensor; // copy, softmax
}

void checkOp(std::string_view op, DType dtype, std::int64_t rows, std::int64_t cols, const BenchContext& context)
{
    const std::uint64_t seed = freshSeed();
    const auto count = static_cast<std::size_t>(rows * cols);
    const std::vector<float> x = randomValues(count, dtype, seed);
    const std::vector<float> weight = randomValues(static_cast<std::size_t>(cols), dtype, seed + 1);
    const std::vector<float> bias = randomValues(static_cast<std::size_t>(cols), dtype, seed + 2);
    const DeviceBuffer dx = upload(x, dtype);
    const DeviceBuffer dw = upload(weight, dtype);
    const DeviceBuffer db = upload(bias, dtype);
    const DeviceBuffer dy(count * static_cast<std::size_t>(dtypeBytes(dtype)));
    checkCuda(cudaMemsetAsync(dy.get(), 0xff, dy.bytes(), context.stream), "cudaMemset");
    checkCuda(launchOp(op, dx.get(), dy.get(), dw.get(), db.get(), rows, cols, dtype, context.stream),
              "memory-op kernel launch");
    const std::vector<float> got = download(dy.get(), count, dtype);

    std::vector<double> want;
    double absTol = 2e-5; // float math in the kernels (tanhf, rsqrtf, expf, summation order)
    double relTol = outputEpsilon(dtype) + 1e-4;
    if (op == "copy") {
        want.assign(x.begin(), x.end());
        absTol = relTol = 0;
    } else if (op == "elementwise") {
        want = referenceBiasGelu(x, bias, rows, cols);
    } else if (op == "rmsnorm") {
        want = referenceRmsNorm(x, weight, rows, cols, kEps);
    } else if (op == "layernorm") {
        want = referenceLayerNorm(x, weight, bias, rows, cols, kEps);
    } else {
        want = referenceSoftmax(x, rows, cols);
        absTol = 1e-8; // values ~ 1/cols: the relative bound must carry the check
    }
    const CheckResult r = compareOutputs(got, want, {}, absTol, relTol);
    if (!r.ok)
        throw CheckFailure(std::string(op) + " kernel (" + std::string(dtypeName(dtype)) + ", " + std::to_string(rows)
                           + " x " + std::to_string(cols) + ") disagrees with the CPU reference: " + r.describe());
}

/** The copy kernel's odd-length tail and its unaligned byte path (whole vectors are covered by checkOp). */
void checkCopyEdges(const BenchContext& context)
{
    const std::vector<float> values = randomValues(1001, DType::FP32, freshSeed());
    const DeviceBuffer src = upload(values, DType::FP32);
    const DeviceBuffer dst(src.bytes());
    std::vector<unsigned char> want(src.bytes());
    std::vector<unsigned char> got(src.bytes());
    checkCuda(cudaMemcpy(want.data(), src.get(), want.size(), cudaMemcpyDeviceToHost), "cudaMemcpy to host");
    for (const std::size_t offset : {std::size_t(0), std::size_t(3)}) { // aligned + 7-byte tail, then unaligned
        const std::size_t end = src.bytes() - 7;
        checkCuda(cudaMemsetAsync(dst.get(), 0, dst.bytes(), context.stream), "cudaMemset");
        checkCuda(launchCopy(static_cast<const char*>(src.get()) + offset, static_cast<char*>(dst.get()) + offset,
                             end - offset, context.stream),
                  "copy kernel launch");
        checkCuda(cudaDeviceSynchronize(), "copy check");
        checkCuda(cudaMemcpy(got.data(), dst.get(), got.size(), cudaMemcpyDeviceToHost), "cudaMemcpy to host");
        for (std::size_t i = 0; i < got.size(); ++i)
            if (got[i] != (i >= offset && i < end ? want[i] : 0))
                throw CheckFailure("copy kernel (" + std::to_string(end - offset) + " bytes at offset "
                                   + std::to_string(offset) + ") is wrong at byte " + std::to_string(i));
    }
}

} // namespace

std::vector<DType> memoryDTypes(const std::vector<DType>& dtypes)
{
    std::vector<DType> result;
    for (const DType d : dtypes)
        if (d == DType::BF16 || d == DType::FP16 || d == DType::FP32)
            result.push_back(d);
    return result;
}

int memorySteps(const std::vector<DType>& dtypes, bool quick)
{
    const auto n = static_cast<int>(memoryDTypes(dtypes).size());
    return n * (1 + static_cast<int>(kOps.size() * inputSizes(quick).size()));
}

std::vector<MemoryOpResult> runMemoryPhase(const std::vector<DType>& dtypes, bool quick, BenchContext& context)
{
    std::vector<MemoryOpResult> results;
    checkCopyEdges(context);
    for (const DType dtype : memoryDTypes(dtypes)) {
        for (const char* op : kOps) {
            checkOp(op, dtype, 37, 1024, context); // whole 16-byte vectors per row
            checkOp(op, dtype, 5, 1003, context); // scalar path, odd row length
        }
        note("check   %-4s memory ops: copy, elementwise, rmsnorm, layernorm, softmax agree with the CPU reference",
             std::string(dtypeName(dtype)).c_str());
        context.progress->step("memory");

        const std::int64_t elem = dtypeBytes(dtype);
        const DeviceBuffer weight = upload(randomValues(static_cast<std::size_t>(kCols), dtype, freshSeed()), dtype);
        const DeviceBuffer bias = upload(randomValues(static_cast<std::size_t>(kCols), dtype, freshSeed()), dtype);
        for (const std::int64_t size : inputSizes(quick)) {
            const std::int64_t rows = size / (kCols * elem);
            const std::size_t budget = freeDeviceMemory() / 10 * 8;
            const auto setBytes = static_cast<std::size_t>(2 * size);
            if (setBytes > budget) {
                note("skip    %s memory ops on %lld MiB: not enough free memory", std::string(dtypeName(dtype)).c_str(),
                     static_cast<long long>(size >> 20));
                for (std::size_t i = 0; i < kOps.size(); ++i)
                    context.progress->step("memory");
                continue;
            }
            const int sets
                = std::min<int>(rotatingSets(setBytes, context.l2Bytes), static_cast<int>(budget / setBytes));
            const DeviceBuffer x(static_cast<std::size_t>(size) * static_cast<std::size_t>(sets));
            const DeviceBuffer y(static_cast<std::size_t>(size) * static_cast<std::size_t>(sets));
            checkCuda(launchFillUniform(x.get(), x.bytes() / static_cast<std::size_t>(elem), dtype, freshSeed(),
                                        context.stream),
                      "fill");
            for (const char* op : kOps) {
                const double seconds = timeLaunches(
                    context.stream,
                    [&](std::int64_t i) {
                        const std::size_t offset = static_cast<std::size_t>(i % sets) * static_cast<std::size_t>(size);
                        checkCuda(launchOp(op, static_cast<const char*>(x.get()) + offset,
                                           static_cast<char*>(y.get()) + offset, weight.get(), bias.get(), rows, kCols,
                                           dtype, context.stream),
                                  "memory-op kernel launch");
                    },
                    context.timing);
                const std::int64_t bytes = opBytes(op, rows, kCols, dtype);
                note("memory  %-4s %-11s %8lld MiB %10.4f ms %8.1f GB/s", std::string(dtypeName(dtype)).c_str(), op,
                     static_cast<long long>(size >> 20), seconds * 1e3, static_cast<double>(bytes) / seconds / 1e9);
                results.push_back({op, dtype, bytes, seconds});
                context.progress->step("memory");
            }
        }
    }
    return results;
}

double measureHbmCopy(BenchContext& context)
{
    const std::size_t size = std::min<std::size_t>(1ull << 30, freeDeviceMemory() / 4 / (1 << 20) * (1 << 20));
    if (size < (64u << 20))
        throw CudaFailure("less than 256 MiB of free device memory: cannot measure the copy bandwidth");
    const DeviceBuffer src(size);
    const DeviceBuffer dst(size);
    checkCuda(launchFillUniform(src.get(), size / 4, DType::FP32, freshSeed(), context.stream), "fill");
    const double seconds = timeLaunches(
        context.stream,
        [&](std::int64_t) {
            checkCuda(cudaMemcpyAsync(dst.get(), src.get(), size, cudaMemcpyDeviceToDevice, context.stream),
                      "cudaMemcpyAsync");
        },
        context.timing);
    // The copy must have happened: compare the two buffers' first MiB.
    std::vector<unsigned char> a(1 << 20);
    std::vector<unsigned char> b(1 << 20);
    checkCuda(cudaDeviceSynchronize(), "copy");
    checkCuda(cudaMemcpy(a.data(), src.get(), a.size(), cudaMemcpyDeviceToHost), "cudaMemcpy to host");
    checkCuda(cudaMemcpy(b.data(), dst.get(), b.size(), cudaMemcpyDeviceToHost), "cudaMemcpy to host");
    if (a != b)
        throw CheckFailure("device-to-device cudaMemcpy did not copy");
    const double bytesPerSecond = 2.0 * static_cast<double>(size) / seconds;
    note("device  HBM copy (cudaMemcpy D2D, %zu MiB): %.1f GB/s (read + write)", size >> 20, bytesPerSecond / 1e9);
    return bytesPerSecond;
}

} // namespace shardscape::profiler
