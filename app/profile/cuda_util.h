// SPDX-License-Identifier: MIT
// CUDA runtime helpers for the benchmarks: error checks that throw CudaFailure (exit code 3), owning
// wrappers, the device facts, and the timing loop every measurement goes through.
#pragma once

#include "dtype.h"
#include "errors.h"

#include <cstddef>
#include <cstdint>
#include <cuda_runtime_api.h>
#include <functional>
#include <string>
#include <vector>

namespace shardscape::profiler {

/** Throws CudaFailure "<what>: <cudaGetErrorName>: <cudaGetErrorString>" unless `status` is cudaSuccess. */
void checkCuda(cudaError_t status, const char* what);

/** Owns a cudaMalloc allocation. */
class DeviceBuffer
{
public:
    DeviceBuffer() = default;
    explicit DeviceBuffer(std::size_t bytes);
    ~DeviceBuffer();
    DeviceBuffer(DeviceBuffer&& other) noexcept;
    DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;

    void* get() const { return m_data; }
    std::size_t bytes() const { return m_bytes; }

private:
    void* m_data = nullptr;
    std::size_t m_bytes = 0;
};

/** Owns a non-blocking stream on the current device. */
class Stream
{
public:
    Stream();
    ~Stream();
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;
    cudaStream_t get() const { return m_stream; }

private:
    cudaStream_t m_stream = nullptr;
};

/** Owns a timing event on the current device. */
class Event
{
public:
    Event();
    ~Event();
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
    cudaEvent_t get() const { return m_event; }

private:
    cudaEvent_t m_event = nullptr;
};

/** What the timing loop does. */
struct TimingConfig
{
    int warmup = 5; ///< untimed launches first (clocks, caches, lazy module loading, cuBLAS plans)
    int reps = 20; ///< timed repetitions; the median is returned
    double minBatchSeconds = 5e-4; ///< each repetition runs enough launches back to back to last this long
    int maxBatch = 200;
};

/**
 * Median seconds per launch of `launch(i)` (i counts every call, so it can rotate through buffer sets).
 * Each repetition: a GPU delay kernel long enough to cover the CPU's enqueueing, a start event, a batch of
 * launches, an end event: so the batch runs back to back on the GPU and launch overhead is not measured
 * (the way nvbench does it). Checks for launch errors after every repetition.
 */
double timeLaunches(cudaStream_t stream, const std::function<void(std::int64_t)>& launch, const TimingConfig& config);

/** Median of a non-empty list. */
double median(std::vector<double> values);

/** How many buffer sets of `setBytes` to rotate through so that one pass touches at least twice the L2. */
int rotatingSets(std::size_t setBytes, std::size_t l2Bytes, int maxSets = 1024);

/** `count` elements of `dtype` storage at `device`, read back (synchronous). */
std::vector<float> download(const void* device, std::size_t count, DType dtype);

/** A new buffer holding `values` in `dtype` storage (synchronous). */
DeviceBuffer upload(const std::vector<float>& values, DType dtype);

/** Free bytes on the current device now. */
std::size_t freeDeviceMemory();

/** A fresh random 64-bit seed (std::random_device). */
std::uint64_t freshSeed();

} // namespace shardscape::profiler
