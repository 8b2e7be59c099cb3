// SPDX-License-Identifier: MIT
// Training logs of Megatron-LM, torchtitan and DeepSpeed: the step rates and memory peaks they print, read from the
// lines each framework writes (the format strings are cited where they are matched).
#include "shardscape/profile/training_log.h"

#include "shardscape/support/error.h"
#include "shardscape/support/json_file.h"
#include "shardscape/support/strings.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>
#include <set>

namespace shardscape {

namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kGiB = 1024.0 * kMiB;

/** The line without ANSI colour sequences (torchtitan colours its metrics line by default). */
std::string withoutAnsi(std::string_view line)
{
    std::string out;
    out.reserve(line.size());
    for (std::size_t i = 0; i < line.size(); ++i) {
        if (line[i] == '\x1b' && i + 1 < line.size() && line[i + 1] == '[') {
            i += 2;
            while (i < line.size() && !(line[i] >= '@' && line[i] <= '~'))
                ++i;
            continue;
        }
        out.push_back(line[i]);
    }
    return out;
}

/** The number right after `key` (spaces skipped; thousands separators allowed when `commas`); none if absent. */
std::optional<double> numberAfter(std::string_view line, std::string_view key, bool commas = false)
{
    const auto at = line.find(key);
    if (at == std::string_view::npos)
        return std::nullopt;
    std::size_t i = at + key.size();
    while (i < line.size() && line[i] == ' ')
        ++i;
    std::string digits;
    while (i < line.size()
           && (std::isdigit(static_cast<unsigned char>(line[i])) || line[i] == '.' || line[i] == 'e' || line[i] == 'E'
               || line[i] == '+' || line[i] == '-' || (commas && line[i] == ','))) {
        if (line[i] != ',')
            digits.push_back(line[i]);
        ++i;
    }
    double value = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (ec != std::errc() || end != digits.data() + digits.size() || !std::isfinite(value))
        return std::nullopt;
    return value;
}

/** The line without torchrun's "[rank0]:" / "[default0]:" prefix and leading spaces. */
std::string_view body(std::string_view line)
{
    if (!line.empty() && line.front() == '[') {
        const auto close = line.find("]:");
        if (close != std::string_view::npos && close < 16
            && (startsWith(line, "[rank") || startsWith(line, "[default")))
            line.remove_prefix(close + 2);
    }
    return line;
}

struct Parser
{
    std::string origin;
    TrainingLog log;
    bool inArguments = false;
    bool argumentsDone = false;
    double maxReserved = 0;
    double maxAllocated = 0;
    int lineNumber = 0;

    [[noreturn]] void fail(const std::string& complaint) const
    {
        throw InputError(cat(origin, ":", lineNumber, ": ", complaint),
                         "give the log as the framework wrote it (Megatron-LM, torchtitan or DeepSpeed)");
    }

    std::vector<LoggedStep> byFormat[3];

    void add(TrainingLogFormat format, LoggedStep step) { byFormat[static_cast<int>(format)].push_back(step); }

    void megatron(std::string_view line)
    {
        // Megatron's argument dump (megatron/training/arguments.py _print_args): "  name ...... value".
        if (line.find("------------------------ arguments ------------------------") != std::string_view::npos) {
            inArguments = !argumentsDone;
            return;
        }
        if (line.find("end of arguments") != std::string_view::npos) {
            inArguments = false;
            argumentsDone = argumentsDone || !log.arguments.empty();
            return;
        }
        if (inArguments) {
            const auto text = body(line);
            const auto first = text.find_first_not_of(' ');
            const auto dots = text.find(" .", first == std::string_view::npos ? 0 : first);
            if (first == std::string_view::npos || dots == std::string_view::npos)
                return;
            auto value = text.substr(dots + 1);
            value.remove_prefix(std::min(value.find_first_not_of('.'), value.size()));
            value.remove_prefix(std::min(value.find_first_not_of(' '), value.size()));
            while (!value.empty() && (value.back() == '\r' || value.back() == ' '))
                value.remove_suffix(1);
            log.arguments.emplace_back(std::string(text.substr(first, dots - first)), std::string(value));
            return;
        }
        // megatron/training/arguments.py validate_args: "using world size: N, data-parallel size: ..."; the
        // tokenizer: "> padded vocab (size: V) with D dummy tokens (new size: P)".
        if (const auto world = numberAfter(line, "using world size:"); world && log.world_size == 0)
            log.world_size = static_cast<std::int64_t>(*world);
        if (line.find("padded vocab (size:") != std::string_view::npos)
            if (const auto padded = numberAfter(line, "new size:"))
                log.padded_vocab = static_cast<std::int64_t>(*padded);
        // megatron/training/training.py training_log: "iteration N/ M | ... | elapsed time per iteration (ms): X |".
        if (const auto ms = numberAfter(line, "elapsed time per iteration (ms):")) {
            const auto iteration = numberAfter(line, "iteration");
            if (*ms <= 0)
                fail(cat("elapsed time per iteration is ", *ms, " ms"));
            LoggedStep step;
            step.step = iteration ? static_cast<std::int64_t>(*iteration) : 0;
            step.seconds_per_step = *ms / 1e3;
            add(TrainingLogFormat::Megatron, step);
            return;
        }
        // megatron/training/utils.py report_memory: "memory (MB) | allocated: A | max allocated: M | reserved: R |
        // max reserved: MR", MB = 2^20 bytes.
        if (line.find("memory (MB)") != std::string_view::npos) {
            if (const auto m = numberAfter(line, "max allocated:"))
                maxAllocated = std::max(maxAllocated, *m * kMiB);
            if (const auto m = numberAfter(line, "max reserved:"))
                maxReserved = std::max(maxReserved, *m * kMiB);
        }
    }

    void torchtitan(std::string_view line)
    {
        // torchtitan/components/metrics.py MetricsProcessor.log: "step: N  loss: L  grad_norm: G  memory: X.XXGiB(P%)
        // tps: N,NNN  tflops: T  mfu: M%" (2024 releases: "wps" for tps). Validation lines are left out.
        if (line.find("step:") == std::string_view::npos || line.find("loss:") == std::string_view::npos
            || line.find("validat") != std::string_view::npos)
            return;
        auto rate = numberAfter(line, "tps:", true);
        if (!rate)
            rate = numberAfter(line, "wps:", true);
        const auto step = numberAfter(line, "step:");
        if (!rate || !step)
            return;
        if (*rate <= 0)
            return; // the first step of a run can log 0 tokens/s before any interval was timed
        LoggedStep s;
        s.step = static_cast<std::int64_t>(*step);
        s.tokens_per_s_per_gpu = *rate;
        add(TrainingLogFormat::Torchtitan, s);
        if (const auto gib = numberAfter(line, "memory:"))
            maxReserved = std::max(maxReserved, *gib * kGiB);
    }

    void deepspeed(std::string_view line)
    {
        // deepspeed/utils/timer.py ThroughputTimer.stop: "epoch=E/micro_step=M/global_step=G,
        // RunningAvgSamplesPerSec=R, CurrSamplesPerSec=C, MemAllocated=AGB, MaxMemAllocated=BGB" (GB = 2^30 bytes).
        if (const auto current = numberAfter(line, "CurrSamplesPerSec=")) {
            if (*current <= 0)
                return;
            LoggedStep s;
            s.step = static_cast<std::int64_t>(numberAfter(line, "global_step=").value_or(0));
            s.samples_per_s = *current;
            add(TrainingLogFormat::DeepSpeed, s);
            if (const auto gib = numberAfter(line, "MaxMemAllocated="))
                maxAllocated = std::max(maxAllocated, *gib * kGiB);
            return;
        }
        // deepspeed/runtime/pipe/engine.py PipelineEngine.train_batch: "steps: N loss: L iter time (s): T
        // samples/sec: S".
        if (const auto seconds = numberAfter(line, "iter time (s):")) {
            if (*seconds <= 0)
                return;
            LoggedStep s;
            s.step = static_cast<std::int64_t>(numberAfter(line, "steps:").value_or(0));
            s.seconds_per_step = *seconds;
            add(TrainingLogFormat::DeepSpeed, s);
        }
    }

    void line(std::string_view raw)
    {
        ++lineNumber;
        const std::string clean = withoutAnsi(raw);
        megatron(clean);
        if (inArguments)
            return;
        torchtitan(clean);
        deepspeed(clean);
    }

    TrainingLog finish()
    {
        // Megatron-DeepSpeed prints DeepSpeed's throughput lines beside Megatron's iteration lines: the framework
        // that runs the training loop (Megatron, then torchtitan, then DeepSpeed) is the one that times the step.
        for (const auto format :
             {TrainingLogFormat::Megatron, TrainingLogFormat::Torchtitan, TrainingLogFormat::DeepSpeed}) {
            if (!byFormat[static_cast<int>(format)].empty()) {
                log.steps = std::move(byFormat[static_cast<int>(format)]);
                log.format = format;
                break;
            }
        }
        if (log.steps.empty())
            throw InputError(cat(origin,
                                 ": no training step found (no Megatron-LM \"elapsed time per iteration\", "
                                 "torchtitan \"tps:\" or DeepSpeed \"CurrSamplesPerSec=\" line)"),
                             "give the log of a training run that logged at least one step");
        if (maxReserved > 0) {
            log.peak_bytes = maxReserved;
            log.peak_kind = "reserved";
        } else if (maxAllocated > 0) {
            log.peak_bytes = maxAllocated;
            log.peak_kind = "allocated";
        }
        return std::move(log);
    }
};

std::string pythonListAsWords(std::string value)
{
    std::string out;
    for (const char c : value)
        if (c != '[' && c != ']' && c != '\'' && c != '"')
            out.push_back(c == ',' ? ' ' : c);
    std::string squeezed;
    for (const char c : out)
        if (c != ' ' || (!squeezed.empty() && squeezed.back() != ' '))
            squeezed.push_back(c);
    while (!squeezed.empty() && squeezed.back() == ' ')
        squeezed.pop_back();
    return squeezed;
}

} // namespace

std::string_view trainingLogFormatName(TrainingLogFormat format)
{
    switch (format) {
    case TrainingLogFormat::Megatron:
        return "megatron";
    case TrainingLogFormat::Torchtitan:
        return "torchtitan";
    case TrainingLogFormat::DeepSpeed:
        break;
    }
    return "deepspeed";
}

std::vector<LoggedStep> TrainingLog::steadySteps() const
{
    const std::size_t first = steps.size() / 2;
    return {steps.begin() + static_cast<std::ptrdiff_t>(first), steps.end()};
}

double TrainingLog::stepTime(std::int64_t globalBatch, std::int64_t seqLen, std::int64_t worldSize) const
{
    std::vector<double> times;
    for (const LoggedStep& s : steadySteps()) {
        if (s.seconds_per_step > 0) {
            times.push_back(s.seconds_per_step);
        } else if (s.tokens_per_s_per_gpu > 0) {
            // tps = tokens of the step / (time x GPUs) over the whole job (data-parallel ranks each count their own).
            if (globalBatch <= 0 || seqLen <= 0 || worldSize <= 0)
                throw InputError(cat(origin,
                                     ": torchtitan's tps needs the run's global batch, sequence length and "
                                     "GPU count"),
                                 "give the job's TOML (it has the batch and seq_len)");
            times.push_back(static_cast<double>(globalBatch) * static_cast<double>(seqLen)
                            / (s.tokens_per_s_per_gpu * static_cast<double>(worldSize)));
        } else if (s.samples_per_s > 0) {
            if (globalBatch <= 0)
                throw InputError(cat(origin, ": DeepSpeed's samples per second needs the run's train batch size"),
                                 "give the DeepSpeed config JSON with train_batch_size or the micro-batch and GPUs");
            times.push_back(static_cast<double>(globalBatch) / s.samples_per_s);
        }
    }
    std::sort(times.begin(), times.end());
    const std::size_t n = times.size();
    return n % 2 ? times[n / 2] : (times[n / 2 - 1] + times[n / 2]) / 2;
}

TrainingLog parseTrainingLog(std::string_view text, std::string_view origin)
{
    Parser parser;
    parser.origin = std::string(origin);
    parser.log.origin = parser.origin;
    std::size_t start = 0;
    while (start <= text.size()) {
        auto end = text.find('\n', start);
        if (end == std::string_view::npos)
            end = text.size();
        parser.line(text.substr(start, end - start));
        start = end + 1;
    }
    return parser.finish();
}

TrainingLog readTrainingLog(const std::filesystem::path& path)
{
    return parseTrainingLog(readTextFile(path, kMaxTrainingLogBytes), path.string());
}

std::string megatronScriptFromArguments(const TrainingLog& log)
{
    // Arguments whose value is the flag's value (the dump prints the argparse dest, the flag is its dashed form).
    static const std::set<std::string> valued {"tensor_model_parallel_size",
                                               "pipeline_model_parallel_size",
                                               "context_parallel_size",
                                               "expert_model_parallel_size",
                                               "expert_tensor_parallel_size",
                                               "micro_batch_size",
                                               "global_batch_size",
                                               "num_layers",
                                               "hidden_size",
                                               "ffn_hidden_size",
                                               "num_attention_heads",
                                               "num_query_groups",
                                               "kv_channels",
                                               "seq_length",
                                               "max_position_embeddings",
                                               "vocab_size",
                                               "num_experts",
                                               "moe_router_topk",
                                               "moe_ffn_hidden_size",
                                               "moe_shared_expert_intermediate_size",
                                               "moe_expert_capacity_factor",
                                               "recompute_granularity",
                                               "recompute_method",
                                               "recompute_num_layers",
                                               "recompute_modules",
                                               "normalization",
                                               "position_embedding_type",
                                               "num_layers_per_virtual_pipeline_stage",
                                               "num_virtual_stages_per_pipeline_rank",
                                               "decoder_first_pipeline_num_layers",
                                               "decoder_last_pipeline_num_layers",
                                               "pipeline_model_parallel_layout",
                                               "hidden_dropout",
                                               "cp_comm_type",
                                               "hierarchical_context_parallel_sizes",
                                               "num_distributed_optimizer_instances",
                                               "data_parallel_sharding_strategy",
                                               "fp8_recipe",
                                               "transformer_impl",
                                               "tokenizer_type",
                                               "rampup_batch_size"};
    // store_true arguments: the flag when the dump says True.
    static const std::set<std::string> switches {"sequence_parallel",
                                                 "swiglu",
                                                 "group_query_attention",
                                                 "untie_embeddings_and_output_weights",
                                                 "use_distributed_optimizer",
                                                 "overlap_param_gather",
                                                 "overlap_param_gather_with_optimizer_step",
                                                 "tp_comm_overlap",
                                                 "distribute_saved_activations",
                                                 "use_torch_fsdp2",
                                                 "use_custom_fsdp",
                                                 "use_megatron_fsdp",
                                                 "moe_shared_expert_overlap",
                                                 "overlap_moe_expert_parallel_comm",
                                                 "account_for_embedding_in_pipeline_split",
                                                 "account_for_loss_in_pipeline_split",
                                                 "use_tp_pp_dp_mapping"};
    const auto dashed = [](std::string name) {
        std::replace(name.begin(), name.end(), '_', '-');
        return "--" + name;
    };
    std::string world = cat(std::max<std::int64_t>(1, log.world_size));
    std::string pipelineSize = "1";
    bool vocab = false;
    std::string args;
    bool gqa = false;
    bool fp8 = false;
    for (const auto& [name, value] : log.arguments) {
        if (name == "fp8")
            fp8 = value != "None";
        if (name == "world_size")
            world = value;
        if (name == "pipeline_model_parallel_size")
            pipelineSize = value;
        if (name == "group_query_attention")
            gqa = value == "True";
        if (name == "vocab_size")
            vocab = value != "None";
    }
    for (const auto& [name, value] : log.arguments) {
        if (value == "None" || value.empty())
            continue;
        if ((name == "num_query_groups" && !gqa) || (name == "fp8_recipe" && !fp8))
            continue; // the dump carries defaults that only --group-query-attention or --fp8-format make effective
        if (valued.count(name)) {
            const std::string words = value.front() == '[' ? pythonListAsWords(value) : value;
            args += cat(" \\\n    ", name == "fp8_recipe" ? "--fp8-recipe" : dashed(name), " ", words);
        } else if (switches.count(name) && value == "True") {
            args += " \\\n    " + dashed(name);
        } else if (name == "fp8") {
            args += " \\\n    --fp8-format " + value;
        } else if (name == "masked_softmax_fusion" && value == "False") {
            args += " \\\n    --no-masked-softmax-fusion";
        } else if (name == "overlap_p2p_comm" && value == "False" && pipelineSize != "1") {
            args += " \\\n    --no-overlap-p2p-communication";
        } else if (name == "microbatch_group_size_per_vp_stage") {
            args += " \\\n    --microbatch-group-size-per-virtual-pipeline-stage " + value;
        }
    }
    if (!vocab && log.padded_vocab > 0) // a tokenizer file decided the vocabulary: the padded size the log printed
        args += cat(" \\\n    --vocab-size ", log.padded_vocab);
    return cat("#!/usr/bin/env bash\n# Rebuilt from the argument dump of ", log.origin,
               "\ntorchrun --nnodes 1 --nproc-per-node ", world, " pretrain_gpt.py", args, "\n");
}

} // namespace shardscape
