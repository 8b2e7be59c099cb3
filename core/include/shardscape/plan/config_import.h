// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/cost/parallel_config.h"
#include "shardscape/model/hf_config.h"
#include "shardscape/model/model_graph.h"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shardscape {

/** A parallel configuration read from another framework's job config (README "Importing a job config"). */
struct ImportedConfig
{
    /** "torchtitan" (job TOML), "megatron" (launch script), "deepspeed" (config JSON) or "shardscape" (plan file). */
    std::string format;
    /** tp, pp, dp, cp, ep, vpp, micro-batch, micro-batches, ZeRO, SP, recomputation, schedule; stage_layers over
        [embedding, blocks, head] when the file fixes the split (empty = Shardscape's default split). `framework` is
        the file's: Torchtitan (job TOML), MegatronCore (launch script), DeepSpeed (config JSON), the plan's own for a
        plan file; Generic, with a warning, when that framework's profile cannot run the configuration as written. */
    ParallelConfig config;
    std::int64_t global_batch = 0; ///< sequences per step
    std::int64_t seq_len = 0; ///< tokens per sequence; 0 when the file does not say
    /** The model's shape when the file describes it (Megatron's model arguments); family "megatron". */
    std::optional<TransformerShape> model;
    std::string model_name; ///< e.g. torchtitan's "llama3 8B"; empty when the file does not name one
    int nodes = 0; ///< from the launcher line (torchrun --nnodes); 0 when the file does not say
    int gpus_per_node = 0; ///< torchrun --nproc-per-node; 0 when the file does not say
    /** What the file asks for that Shardscape does not model, or values it had to assume (one line each). */
    std::vector<std::string> warnings;
};

/** What the file may leave to its launcher or model. */
struct ImportOptions
{
    /** GPUs of the job, for what the file leaves to the launcher: torchtitan's data_parallel_shard_degree = -1, a
        Megatron script without a torchrun --nnodes/--nproc-per-node, DeepSpeed without train_batch_size. 0 = unknown
        (such a file is then an InputError that says what to give). */
    int world_size = 0;
    /** Transformer blocks of the model, for torchtitan's automatic stage split (no module_fqns_per_model_part);
        0 = unknown: the split is then left to Shardscape's default, with a warning. */
    int num_layers = 0;
};

/**
 * Reads a torchtitan job TOML (v0.2.x schema), a Megatron-LM launch script (the arguments after pretrain_gpt.py,
 * world size from the torchrun line; variables assigned in the script, ${VAR:-default} and bash arrays are
 * expanded), a DeepSpeed config JSON or a Shardscape plan file, detected from the extension and the content, and
 * maps it to a ParallelConfig with the derived DP and micro-batch count. Throws InputError "PATH:LINE: ..." (or
 * "PATH: KEY: ..." for JSON) for malformed input or values the framework itself would reject.
 */
ImportedConfig importJobConfig(const std::filesystem::path& path, const ImportOptions& options = {});

/** importJobConfig on text already read; `origin` names it in messages and its extension picks the format. */
ImportedConfig importJobConfigText(std::string_view text, std::string_view origin, const ImportOptions& options = {});

/**
 * Builds the model as the imported job ran it: a Megatron launch script with --transformer-impl local ran
 * Megatron-Core's local layer, whose attention core is unfused, which a model file given beside the script does not
 * say. Sets `build` for it and returns true; false (and `build` unchanged) when the config fixes nothing.
 */
bool applyJobAttention(BuildOptions& build, const ImportedConfig& imported);

} // namespace shardscape
