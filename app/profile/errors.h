// SPDX-License-Identifier: MIT
// The three ways shardscape-profile fails on purpose, each with its exit code (documented in --help).
#pragma once

#include <stdexcept>
#include <string>

namespace shardscape::profiler {

enum ExitCode : int
{
    kExitOk = 0,
    kExitOtherError = 1, ///< e.g. the output file cannot be written
    kExitBadArguments = 2, ///< bad command line, --model or --shapes file
    kExitNoDevice = 3, ///< no CUDA device, or a CUDA / cuBLAS / NCCL call failed
    kExitCheckFailed = 4, ///< a kernel or GEMM gave wrong results: nothing recorded
};

/** Bad command line or input file: what is wrong and how to fix it. Exit code 2. */
class BadInput : public std::runtime_error
{
public:
    BadInput(const std::string& cause, std::string hint)
        : std::runtime_error(cause)
        , m_hint(std::move(hint))
    {
    }
    const std::string& hint() const { return m_hint; }

private:
    std::string m_hint;
};

/** A CUDA runtime, cuBLAS or NCCL failure (or no device at all). Exit code 3. */
class CudaFailure : public std::runtime_error
{
public:
    using std::runtime_error::runtime_error;
};

/** A correctness check against the CPU reference failed. Exit code 4. */
class CheckFailure : public std::runtime_error
{
public:
    using std::runtime_error::runtime_error;
};

} // namespace shardscape::profiler
