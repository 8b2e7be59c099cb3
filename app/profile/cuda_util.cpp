// SPDX-License-Identifier: MIT
#include "cuda_util.h"

#include "kernels.h"

#include <algorithm>
#include <chrono>
#include <cuda_runtime.h>
#include <random>
#include <utility>

namespace shardscape::profiler {

void checkCuda(cudaError_t status, const char* what)
{
    if (status != cudaSuccess)
        throw CudaFailure(std::string(what) + ": " + cudaGetErrorName(status) + ": " + cudaGetErrorString(status));
}

DeviceBuffer::DeviceBuffer(std::size_t bytes)
    : m_bytes(bytes)
{
    if (bytes > 0)
        checkCuda(cudaMalloc(&m_data, bytes), ("cudaMalloc of " + std::to_string(bytes) + " bytes").c_str());
}

DeviceBuffer::~DeviceBuffer()
{
    if (m_data)
        cudaFree(m_data);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : m_data(std::exchange(other.m_data, nullptr))
    , m_bytes(std::exchange(other.m_bytes, 0))
{
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept
{
    if (this != &other) {
        if (m_data)
            cudaFree(m_data);
        m_data = std::exchange(other.m_data, nullptr);
        m_bytes = std::exchange(other.m_bytes, 0);
    }
    return *this;
}

Stream::Stream()
{
    checkCuda(cudaStreamCreateWithFlags(&m_stream, cudaStreamNonBlocking), "cudaStreamCreate");
}

Stream::~Stream()
{
    cudaStreamDestroy(m_stream);
}

Event::Event()
{
    checkCuda(cudaEventCreate(&m_event), "cudaEventCreate");
}

Event::~Event()
{
    cudaEventDestroy(m_event);
}

double median(std::vector<double> values)
{
    std::sort(values.begin(), values.end());
    const std::size_t n = values.size();
    return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

double timeLaunches(cudaStream_t stream, const std::function<void(std::int64_t)>& launch, const TimingConfig& config)
{
    using Clock = std::chrono::steady_clock;
    std::int64_t calls = 0;
    Event start;
    Event stop;

    // Warm-up (the first calls may load modules and build cuBLAS plans), then a few more launches that tell
    // how long the CPU takes to enqueue one in the steady state.
    for (int i = 0; i < config.warmup; ++i)
        launch(calls++);
    checkCuda(cudaGetLastError(), "kernel launch (warm-up)");
    checkCuda(cudaStreamSynchronize(stream), "warm-up");
    constexpr int kProbe = 3;
    const auto cpuStart = Clock::now();
    for (int i = 0; i < kProbe; ++i)
        launch(calls++);
    double cpuPerLaunch = std::chrono::duration<double>(Clock::now() - cpuStart).count() / kProbe;
    checkCuda(cudaGetLastError(), "kernel launch (warm-up)");
    checkCuda(cudaStreamSynchronize(stream), "warm-up");

    // One timed launch sizes the batch.
    checkCuda(cudaEventRecord(start.get(), stream), "cudaEventRecord");
    launch(calls++);
    checkCuda(cudaEventRecord(stop.get(), stream), "cudaEventRecord");
    checkCuda(cudaEventSynchronize(stop.get()), "single launch");
    float ms = 0;
    checkCuda(cudaEventElapsedTime(&ms, start.get(), stop.get()), "cudaEventElapsedTime");
    const double single = std::max(1e-3 * ms, 1e-7);
    const int batch = static_cast<int>(std::clamp(config.minBatchSeconds / single, 1.0, double(config.maxBatch)));

    std::vector<double> times;
    for (int rep = 0; rep < config.reps; ++rep) {
        // The delay covers the CPU's enqueueing of the batch (2x plus 20 us margin, at most 50 ms).
        const double delay = std::min(2.0 * cpuPerLaunch * batch + 20e-6, 0.05);
        checkCuda(launchSpin(static_cast<std::uint64_t>(delay * 1e9), stream), "spin kernel launch");
        checkCuda(cudaEventRecord(start.get(), stream), "cudaEventRecord");
        const auto enqueueStart = Clock::now();
        for (int i = 0; i < batch; ++i)
            launch(calls++);
        cpuPerLaunch = std::chrono::duration<double>(Clock::now() - enqueueStart).count() / batch;
        checkCuda(cudaEventRecord(stop.get(), stream), "cudaEventRecord");
        checkCuda(cudaGetLastError(), "kernel launch");
        checkCuda(cudaEventSynchronize(stop.get()), "timed batch");
        checkCuda(cudaEventElapsedTime(&ms, start.get(), stop.get()), "cudaEventElapsedTime");
        times.push_back(1e-3 * ms / batch);
    }
    return median(std::move(times));
}

int rotatingSets(std::size_t setBytes, std::size_t l2Bytes, int maxSets)
{
    if (setBytes == 0)
        return 1;
    const std::size_t needed = (2 * l2Bytes + setBytes - 1) / setBytes;
    return static_cast<int>(std::clamp<std::size_t>(needed, 1, static_cast<std::size_t>(maxSets)));
}

std::size_t freeDeviceMemory()
{
    std::size_t freeBytes = 0;
    std::size_t totalBytes = 0;
    checkCuda(cudaMemGetInfo(&freeBytes, &totalBytes), "cudaMemGetInfo");
    return freeBytes;
}

std::uint64_t freshSeed()
{
    std::random_device device;
    return (static_cast<std::uint64_t>(device()) << 32) ^ device();
}

std::vector<float> download(const void* device, std::size_t count, DType dtype)
{
    // Our streams are non-blocking (no implicit ordering with cudaMemcpy's legacy stream): wait for all work.
    checkCuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize before a read-back");
    std::vector<unsigned char> bytes(count * static_cast<std::size_t>(dtypeBytes(dtype)));
    checkCuda(cudaMemcpy(bytes.data(), device, bytes.size(), cudaMemcpyDeviceToHost), "cudaMemcpy to host");
    return decodeValues(bytes, dtype);
}

DeviceBuffer upload(const std::vector<float>& values, DType dtype)
{
    const std::vector<unsigned char> bytes = encodeValues(values, dtype);
    DeviceBuffer buffer(bytes.size());
    checkCuda(cudaMemcpy(buffer.get(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice), "cudaMemcpy to device");
    // A pageable-memory copy may return before its DMA lands; non-blocking streams would not wait for it.
    checkCuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize after an upload");
    return buffer;
}

} // namespace shardscape::profiler
