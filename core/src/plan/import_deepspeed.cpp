// SPDX-License-Identifier: MIT
// DeepSpeed's config JSON read back into a ParallelConfig.
#include "import_deepspeed.h"

#include "import_helpers.h"

#include "shardscape/support/error.h"
#include "shardscape/support/json_fields.h"
#include "shardscape/support/strings.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace shardscape::importing {

ImportedConfig importDeepSpeed(const nlohmann::json& doc, const std::string& origin, const ImportOptions& options)
{
    JsonFields f(doc, origin);
    if (!f.has("train_batch_size") && !f.has("train_micro_batch_size_per_gpu") && !f.has("gradient_accumulation_steps")
        && !f.has("zero_optimization"))
        fail(origin, 0,
             "none of train_batch_size, train_micro_batch_size_per_gpu, gradient_accumulation_steps or "
             "zero_optimization is present: not a DeepSpeed config");
    ImportedConfig out;
    out.format = "deepspeed";
    ParallelConfig& c = out.config;
    c.framework = Framework::DeepSpeed;
    const auto batch = f.optInteger("train_batch_size", 1, kMaxBatch);
    const auto micro = f.optInteger("train_micro_batch_size_per_gpu", 1, kMaxBatch);
    const auto accumulation = f.optInteger("gradient_accumulation_steps", 1, kMaxBatch);

    // Shardscape's exports record the layout the model code builds under a key DeepSpeed does not read.
    std::optional<std::int64_t> layoutDp;
    if (const auto* layout = f.find("_shardscape_layout")) {
        JsonFields l(*layout, origin, "_shardscape_layout");
        c.tp = static_cast<int>(l.integer("tensor_parallel", 1, kMaxDegree));
        c.pp = static_cast<int>(l.integer("pipeline_stages", 1, kMaxDegree));
        layoutDp = l.integer("data_parallel", 1, kMaxDegree);
        if (const auto* split = l.find("stage_layers"); split && c.pp > 1) {
            if (!split->is_array() || split->size() != static_cast<std::size_t>(c.pp))
                l.fail("stage_layers", cat("expected ", c.pp, " layer counts, one per pipeline stage"));
            for (const auto& n : *split) {
                if (!n.is_number_integer() || n.get<std::int64_t>() < 0 || n.get<std::int64_t>() > kMaxDegree)
                    l.fail("stage_layers", cat("expected layer counts, got ", describeJson(n)));
                c.stage_layers.push_back(n.get<int>());
            }
        }
    }
    if (const auto* tensor = f.find("tensor_parallel"); tensor && !layoutDp) {
        JsonFields t(*tensor, origin, "tensor_parallel");
        c.tp = static_cast<int>(t.optInteger("autotp_size", 1, kMaxDegree).value_or(1));
    }
    if (const auto* pipeline = f.find("pipeline")) {
        JsonFields p(*pipeline, origin, "pipeline");
        const nlohmann::json* stages = p.find("stages");
        if (layoutDp) {
            // _shardscape_layout gave the degree; DeepSpeed reads no pipeline.stages anyway.
        } else if (stages && stages->is_number_integer()) {
            out.warnings.push_back("pipeline.stages is read as the pipeline degree, though DeepSpeed takes it from "
                                   "the code (PipelineModule(num_stages=...)), not from the config");
            c.pp = static_cast<int>(p.integer("stages", 1, kMaxDegree));
        } else if (stages && !(stages->is_string() && stages->get<std::string>() == "auto")) {
            p.fail("stages", cat("expected a stage count or \"auto\", got ", describeJson(*stages)));
        } else {
            out.warnings.push_back("pipeline.stages is \"auto\": the pipeline degree is set in code "
                                   "(PipelineModule(num_stages=...)); simulated without pipelining");
        }
        const std::int64_t interval = p.optInteger("activation_checkpoint_interval", 0, kMaxDegree).value_or(0);
        if (interval > 0) {
            c.recompute = RecomputeKind::Full;
            if (interval > 1)
                out.warnings.push_back(cat("pipeline.activation_checkpoint_interval = ", interval,
                                           " checkpoints every ", interval,
                                           "th layer: simulated as full recomputation of every layer"));
        }
        // pipe/engine.py sends 1/tp slices only where these stay true (their default), which the simulation assumes.
        for (const char* key : {"pipe_partitioned", "grad_partitioned"})
            if (p.has(key) && !p.boolean(key, true))
                out.warnings.push_back(cat("pipeline.", key, " is false: under tensor parallelism the job sends whole ",
                                           std::string_view(key) == "pipe_partitioned" ? "activations" : "gradients",
                                           " between stages, tp times the bytes of the 1/tp slices simulated"));
        if (const auto partition = p.optString("partition"); partition && *partition != "uniform")
            out.warnings.push_back(cat("pipeline.partition \"", *partition,
                                       "\" is decided at run time: simulated with Shardscape's default split"));
    }
    if (f.has("activation_checkpointing") && c.recompute == RecomputeKind::None)
        out.warnings.push_back("activation_checkpointing configures deepspeed.checkpointing; which layers are "
                               "recomputed is decided in the model code: simulated without recomputation");
    if (const auto* zero = f.find("zero_optimization")) {
        JsonFields z(*zero, origin, "zero_optimization");
        c.zero_stage = static_cast<int>(z.optInteger("stage", 0, 3).value_or(0));
        for (const char* key : {"offload_optimizer", "offload_param"})
            if (z.has(key))
                out.warnings.push_back(cat("zero_optimization.", key, " (CPU/NVMe offload) is not modelled"));
        if (z.has("zero_hpz_partition_size"))
            out.warnings.push_back("zero_optimization.zero_hpz_partition_size (ZeRO++) is not modelled");
    }
    if (f.has("sequence_parallel_size"))
        out.warnings.push_back("sequence_parallel_size (Ulysses sequence parallelism) is not modelled");

    // train_batch_size = micro x accumulation x DP; any two give the third when the world size is known.
    const std::int64_t modelParallel = std::int64_t {c.tp} * c.pp;
    std::int64_t dp = 0;
    if (layoutDp && !(batch && micro && accumulation)) {
        dp = *layoutDp;
        if (!batch && (!micro || !accumulation))
            fail(origin, 0,
                 "give two of train_batch_size, train_micro_batch_size_per_gpu and gradient_accumulation_steps");
    } else if (batch && micro && accumulation) {
        if (*batch % (*micro * *accumulation))
            f.fail("train_batch_size",
                   cat("value ", *batch,
                       " is not a multiple of train_micro_batch_size_per_gpu x "
                       "gradient_accumulation_steps = ",
                       *micro, " x ", *accumulation));
        dp = *batch / (*micro * *accumulation);
        if (options.world_size > 0 && dp * modelParallel != options.world_size)
            out.warnings.push_back(cat("the config's data parallelism ", dp, " x tp ", c.tp, " x pp ", c.pp,
                                       " is not the cluster's ", options.world_size, " GPUs"));
    } else {
        if (options.world_size <= 0)
            fail(origin, 0,
                 "give train_batch_size, train_micro_batch_size_per_gpu and gradient_accumulation_steps (two of them "
                 "leave the data-parallel size to the launcher)",
                 "or give the cluster's size (--nodes, --gpus-per-node)");
        if (options.world_size % modelParallel)
            fail(origin, 0, cat("the ", options.world_size, " GPUs do not divide by tp x pp = ", modelParallel));
        dp = options.world_size / modelParallel;
        const int given = (batch ? 1 : 0) + (micro ? 1 : 0) + (accumulation ? 1 : 0);
        if (given < 2)
            fail(origin, 0,
                 "give two of train_batch_size, train_micro_batch_size_per_gpu and gradient_accumulation_steps");
        out.warnings.push_back(cat("data parallelism ", dp, " taken from the ", options.world_size, " GPUs"));
    }
    std::int64_t b = micro.value_or(0);
    std::int64_t m = accumulation.value_or(0);
    if (!micro) {
        if (*batch % (m * dp))
            f.fail("train_batch_size", cat("value ", *batch, " does not divide by accumulation x dp = ", m * dp));
        b = *batch / (m * dp);
    } else if (!accumulation) {
        if (*batch % (b * dp))
            f.fail("train_batch_size", cat("value ", *batch, " does not divide by micro-batch x dp = ", b * dp));
        m = *batch / (b * dp);
    }
    if (dp > kMaxDegree || b > std::numeric_limits<int>::max() || m > std::numeric_limits<int>::max())
        f.fail("train_batch_size", "too large");
    c.dp = static_cast<int>(dp);
    c.micro_batch = static_cast<int>(b);
    c.num_microbatches = static_cast<int>(m);
    out.global_batch = dp * b * m;
    if (c.pp > 1)
        out.warnings.push_back("DeepSpeed's pipeline engine runs its own 1F1B-like schedule: simulated as 1F1B");
    if (c.zero_stage >= 2 && c.pp > 1)
        out.warnings.push_back(cat("DeepSpeed's pipeline engine rejects ZeRO-", c.zero_stage,
                                   " with pipeline parallelism; simulated as written"));
    return out;
}

} // namespace shardscape::importing
