// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace shardscape {

/** Which framework wrote a training log. */
enum class TrainingLogFormat : std::uint8_t
{
    Megatron, ///< Megatron-LM training_log: "elapsed time per iteration (ms)", "memory (MB) | ... max reserved"
    Torchtitan, ///< torchtitan MetricsProcessor: "step: N ... memory: X GiB(P%) tps: N" (older: "wps")
    DeepSpeed, ///< ThroughputTimer "CurrSamplesPerSec=..., MaxMemAllocated=...GB" or the pipeline engine's
               ///< "iter time (s): T samples/sec: S"
};
std::string_view trainingLogFormatName(TrainingLogFormat format);

/** One logged measurement: the rate over the steps since the previous line. Exactly one rate is set (> 0). */
struct LoggedStep
{
    std::int64_t step = 0;
    double seconds_per_step = 0; ///< Megatron's elapsed time per iteration, DeepSpeed's pipeline iter time
    double tokens_per_s_per_gpu = 0; ///< torchtitan's tps (wps): local tokens / (time x non-data-parallel GPUs)
    double samples_per_s = 0; ///< DeepSpeed's CurrSamplesPerSec: train_batch_size / step time
};

/** What a training log says about its run. */
struct TrainingLog
{
    std::string origin; ///< the file it came from, for messages
    TrainingLogFormat format = TrainingLogFormat::Megatron;
    std::vector<LoggedStep> steps; ///< in the order logged (validation lines left out)
    /** Largest peak the log reports, bytes (0 when it reports none) and what it measured: "reserved"
        (torch.cuda.max_memory_reserved: Megatron's "max reserved", torchtitan's "memory") or "allocated"
        (Megatron without reserved figures, DeepSpeed's MaxMemAllocated). */
    double peak_bytes = 0;
    std::string peak_kind;
    /** Megatron's argument dump ("---- arguments ----" block), name and value as printed; empty otherwise. */
    std::vector<std::pair<std::string, std::string>> arguments;
    /** Megatron's "using world size: N" and "padded vocab (... new size: N)" lines; 0 when absent. */
    std::int64_t world_size = 0;
    std::int64_t padded_vocab = 0;

    /** The logged steps the steady state is taken from: the later half (the earlier half holds warm-up, allocator
        growth and autotuning), at least one. */
    std::vector<LoggedStep> steadySteps() const;
    /**
     * The steady-state step time in seconds: the median over steadySteps(), each rate turned into seconds per step
     * with the run's global batch (sequences), tokens per sequence and GPUs. Throws InputError when a rate needs a
     * figure that is 0.
     */
    double stepTime(std::int64_t globalBatch, std::int64_t seqLen, std::int64_t worldSize) const;
};

/** Largest training log read (a long run's log is a few MB). */
inline constexpr std::uintmax_t kMaxTrainingLogBytes = 256ull * 1024 * 1024;

/**
 * Parses a Megatron-LM, torchtitan or DeepSpeed training log (detected from its lines; ANSI colours and torchrun's
 * "[rank0]:" / "[default0]:" prefixes are ignored). Throws InputError naming `origin` when no training step is
 * found, or when the log mixes frameworks.
 */
TrainingLog parseTrainingLog(std::string_view text, std::string_view origin);

/** Reads (at most kMaxTrainingLogBytes) and parses a log file. */
TrainingLog readTrainingLog(const std::filesystem::path& path);

/**
 * A Megatron-LM launch script holding the arguments of the dump that its importer reads (parallel sizes, batch,
 * model shape, recomputation, precision), for importJobConfigText; "torchrun --nproc-per-node W" gives the world.
 */
std::string megatronScriptFromArguments(const TrainingLog& log);

} // namespace shardscape
