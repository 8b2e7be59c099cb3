// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/cost/cost_source.h"
#include "shardscape/cost/framework_profile.h"
#include "shardscape/cost/layer_cost.h"
#include "shardscape/cost/memory.h"
#include "shardscape/cost/parallel_config.h"
#include "shardscape/hardware/cluster.h"
#include "shardscape/model/layers.h"
#include "shardscape/model/model_graph.h"
#include "shardscape/sim/simulator.h"

#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <unordered_map>
#include <vector>

namespace shardscape {

/** One pipeline rank's share of the plan. */
struct StageReport
{
    int first_layer = 0; ///< index into CostModel::layers() of the first layer of the rank's first chunk
    int last_layer = 0; ///< last layer of its last chunk (inclusive)
    std::vector<std::pair<int, int>> chunks; ///< [first, last] layers per model chunk (vpp entries)
    int devices = 0; ///< GPUs running this stage (tp x cp x dp)
    double compute = 0; ///< seconds of forward + backward per micro-batch, all chunks
    MemoryBreakdown memory; ///< at the stage's peak
    int peak_inflight = 0; ///< micro-batches stashed at once at the peak
};

/** Time split of one step on the critical rank, seconds. */
struct TimeBreakdown
{
    double compute = 0; ///< forward + backward compute of every micro-batch on the busiest rank
    double recompute = 0;
    double tp_comm = 0; ///< TP/SP collectives (exposed)
    double other_comm = 0; ///< CP ring and MoE all-to-all (exposed)
    double pp_bubble = 0; ///< idle waiting inside the pipeline
    double dp_exposed = 0; ///< data-parallel gradient sync not hidden under backward
    double sharded_dp = 0; ///< ZeRO-3 / FSDP parameter gathers and gradient reduce-scatters not hidden (exposed)
    double optimizer = 0;
};

/** A prediction's likely range: low <= value <= high covers the calibration residuals of its regime. */
struct PredictionRange
{
    double low = 0;
    double high = 0;
};

/** How likely the configuration runs out of memory, given the memory prediction's range. */
enum class OomRisk : std::uint8_t
{
    Fits, ///< even the high end of the peak's range is under the limit (with the required headroom)
    Tight, ///< the predicted peak fits, its range's high end does not
    Likely ///< the predicted peak is over the limit
};
std::string_view oomRiskName(OomRisk risk); ///< "fits", "tight", "likely"

/** Everything `simulate` and the planner report about one configuration. */
struct Evaluation
{
    ParallelConfig config;
    bool feasible = false;
    std::string reason; ///< why infeasible (empty when feasible)
    std::string cost_source; ///< "datasheet" or "profile:..."
    double step_time = 0; ///< seconds
    double tokens_per_s = 0;
    double tflops_per_gpu = 0; ///< model FLOPs (no recomputation) per second per GPU / 1e12
    double mfu = 0;
    double hfu = 0;
    /** time.pp_bubble / step_time: the share of the step the busiest pipeline rank waits inside the pipeline, in
        [0, 1) (SimulationResult::bubble_ratio). */
    double bubble_ratio = 0;
    double memory_limit_bytes = 0;
    std::vector<StageReport> stages; ///< one per pipeline rank
    TimeBreakdown time;
    /** Step time range (seconds) and per-device peak memory range (bytes) from the calibration residuals of the
        configuration's regime (core/src/cost/uncertainty.cpp), and the OOM risk they imply. */
    PredictionRange step_time_range;
    PredictionRange peak_memory_range;
    OomRisk oom_risk = OomRisk::Likely;
    std::string regime; ///< the calibration regime the ranges come from
    std::shared_ptr<const SimulationResult> simulation; ///< with the timeline when requested

    /** Largest per-device peak over stages, bytes. */
    double peakMemory() const;
    /** Largest runtime memory over stages (CUDA context, NCCL and cuBLAS workspaces), bytes: no layout lowers it. */
    double runtimeMemory() const;
    /** Layers per model chunk in virtual-stage order, as `stage_layers` takes them (automatic splits included):
        pp x vpp entries, or pp under DualPipe, whose second direction repeats the first's stages. */
    std::vector<int> chunkLayers() const;
};

/** The inputs every evaluation shares. */
struct Workload
{
    std::int64_t global_batch = 0; ///< sequences per step
    std::int64_t seq_len = 0; ///< tokens per sequence (the graph must be built with it)
    double memory_limit_bytes = 0; ///< per device; 0 = the device's capacity
    /** Headroom a plan must leave under the limit to count as "fits" rather than "tight"; < 0 = automatic (the
        high end of the peak-memory range of the configuration's calibration regime). */
    double min_memory_headroom_bytes = -1;
};

struct EvaluateOptions
{
    bool record_timeline = false; ///< fill Evaluation::simulation with events and memory curves
    /** Check the world size against the cluster (the planner enumerates only matching configs). */
    bool require_full_cluster = true;
};

/**
 * Predicts one parallel configuration: validates it, costs every layer under its layout, assembles
 * pipeline chunks, runs the event simulator and derives step time, MFU/HFU and per-device memory.
 * Immutable after construction except for an internal, thread-safe cache of layer costs, so one
 * instance can serve many planner threads.
 */
class CostModel
{
public:
    /** `layers` overrides the module-based grouping (e.g. automatic layer construction); empty = by module. */
    CostModel(std::shared_ptr<const ModelGraph> graph, Cluster cluster, CostParams params = {},
              std::shared_ptr<const CostSource> source = nullptr, std::vector<Layer> layers = {});

    Evaluation evaluate(const ParallelConfig& config, const Workload& workload, const EvaluateOptions& options = {},
                        std::stop_token stop = {}) const;

    /**
     * The planner's fast path: the same costs and memory, but the step time from closed forms instead of the
     * event simulator (Alpa's sum + (m-1) max for GPipe/1F1B, (p-1) x the longest chunk for interleaved,
     * (p-1)(F+B-W) for ZB-H1) and in-flight counts from the schedule's rules. No timeline.
     */
    Evaluation estimate(const ParallelConfig& config, const Workload& workload, bool requireFullCluster = true) const;

    /** Per-layer forward+backward seconds, static bytes and stash bytes per micro-batch for a config (partitioning). */
    struct LayerProfile
    {
        std::vector<double> time;
        std::vector<double> static_bytes;
        std::vector<double> stash_bytes;
        std::vector<double> transient_bytes;
    };
    LayerProfile layerProfile(const ParallelConfig& config) const;

    const ModelGraph& graph() const { return *m_graph; }
    const std::vector<Layer>& layers() const { return m_layers; }
    const Cluster& cluster() const { return m_cluster; }
    const CostParams& params() const { return m_params; }
    const CostSource& source() const { return *m_source; }

    /** Model FLOPs (forward + backward, no recomputation) per token. */
    double modelFlopsPerToken() const { return m_flopsPerToken; }

    /** Bytes outside the tensors per device (CUDA context, NCCL, cuBLAS; Generic: the runtime reserve). */
    double runtimeBytes(const ParallelConfig& config) const;
    /** The caching allocator's reserved / allocated ratio under the config's framework (1 for Generic). */
    double fragmentationFactor(const ParallelConfig& config) const;

    /** Costs every configuration with `profile` in place of its framework's profile: runs of older framework code
        than the profiles describe (bench_calibration's Megatron-LM 2021 rows). Call before evaluating. */
    void overrideFrameworkProfile(FrameworkProfile profile) { m_frameworkOverride = std::move(profile); }

    /** Why `config` cannot run on this model and cluster at all (before costing); empty when it can. */
    std::string structuralProblem(const ParallelConfig& config, const Workload& workload,
                                  bool requireFullCluster) const;

    /** Layers per chunk that the evaluator uses when config.stage_layers is empty. */
    std::vector<int> defaultStageLayers(int chunks) const;

    /** Cost of one layer under a config (cached per identical layer and layout). */
    const LayerCost& layerCost(std::size_t layer, const ParallelConfig& config) const;

    /** The layout a config's layers are costed under: its groups and every term its framework profile sets. */
    LayerLayout layerLayout(const ParallelConfig& config) const;

    /**
     * Per layer, the index its module path ends in ("model.layers.7" -> 7) for decoder blocks and -1 for the
     * others: what recomputing a block by index ("7", recomputesBlockIndices) matches. Empty when an index could
     * match more than its own block (an op path holds another number, such as an nn.Sequential child "mlp.0").
     */
    const std::vector<long long>& blockIndices() const { return m_blockIndex; }

    /**
     * The indices of the first `n` blocks of each model chunk, for chunks of `chunkLayers` layers in layer order
     * (Evaluation::chunkLayers, or stage_layers): what RecomputeKind::Modules takes for Megatron's
     * --recompute-method block --recompute-num-layers n. Empty when blockIndices() is.
     */
    std::vector<std::string> firstBlocksOfEachChunk(const std::vector<int>& chunkLayers, int n) const;
    /** The most blocks any of those chunks holds: n at or above it recomputes every block. */
    int mostBlocksPerChunk(const std::vector<int>& chunkLayers) const;
    /**
     * `config` recomputing the first `n` blocks of each of its model chunks (its stage_layers, or the default split
     * when they are unset): block indices, or full recomputation when n covers every chunk. Unchanged when the
     * model's blocks cannot be named by index or stage_layers has the wrong length (the evaluation says why).
     */
    ParallelConfig withFirstBlocksRecomputed(ParallelConfig config, int n) const;

    /** Where a group of `size` ranks of dimension `dim` ("tp", "cp", "dp", "pp") sits in the cluster. */
    GroupShape groupShape(const ParallelConfig& config, std::string_view dim) const;

private:
    std::shared_ptr<const ModelGraph> m_graph;
    Cluster m_cluster;
    CostParams m_params;
    std::shared_ptr<const CostSource> m_source;
    std::vector<Layer> m_layers;
    std::optional<FrameworkProfile> m_frameworkOverride;
    /** The framework profile a configuration is costed under. */
    const FrameworkProfile& frameworkOf(const ParallelConfig& config) const;
    std::vector<OpId> m_producer;
    std::vector<std::size_t> m_signature; ///< identical layers share a signature (and a cache entry)
    std::vector<int> m_classOf; ///< layer -> index of its class of identical layers
    std::vector<std::size_t> m_classRepresentative; ///< class -> first layer of the class
    std::vector<long long> m_blockIndex; ///< blockIndices()
    std::vector<int> m_blockOrdinal; ///< per layer, its place among the decoder blocks (0-based), or -1
    int m_blockCount = 0; ///< decoder blocks in the model
    /** Whether `layer` is one of the blocks config.fp8_bf16_first_layers / _last_layers keep in the model's dtype. */
    bool keepsModelDtype(std::size_t layer, const ParallelConfig& config) const;

    struct Assembly;
    /** Stage costs, static memory and chunk bookkeeping shared by evaluate() and estimate(). */
    std::unique_ptr<Assembly> assemble(const ParallelConfig& config) const;
    void finish(Evaluation& e, const Assembly& a, const std::vector<double>& peakStash,
                const std::vector<int>& inflight, double stepTime, double pipelineTime,
                const std::vector<double>& busy) const;
    /** Cost of every layer, looked up once per class of identical layers. */
    std::vector<const LayerCost*> layerCosts(const ParallelConfig& config) const;

    /** A layer's parameter elements by how they shard, without the tensors other layers use too (tied weights),
        which are listed so a span of layers counts each once. Built once: paramsPerDevice's sets cost too much per
        candidate. */
    struct LayerParamParts
    {
        double dense_split = 0, dense_whole = 0, expert_split = 0, expert_whole = 0;
        /** The weights of the linears FP8 covers (LayerLayout's column, row and replicated roles; not the vocabulary
            projection or the embedding), split by TP or whole. */
        double fp8_split = 0, fp8_whole = 0;
        std::vector<TensorId> shared;
    };
    std::vector<LayerParamParts> m_paramParts;
    /** paramsPerDevice of layers [first, last] (the same figures, from m_paramParts). */
    LayerParams spanParams(int first, int last, const ParallelConfig& config) const;
    /** Dense elements per rank of the layers first..last that FSDP2 keeps gathered from the forward into the
        backward: the last one (the module gathered last), and under FrameworkProfile::fsdp_root_keeps_embedding
        the layers outside the blocks and the last block. */
    double retainedParams(int first, int last, const ParallelConfig& config, const FrameworkProfile& framework) const;
    /** Per-rank elements of the FP8 linears' weights of layers first..last (none outside fp8_linears, nor in the
        blocks fp8_bf16_first_layers / _last_layers keep in the model's dtype). */
    double fp8LinearElements(int first, int last, const ParallelConfig& config) const;
    /** Bytes Transformer Engine's FP8 weights add to layers first..last beyond their 16-bit weights (negative where
        FP8 parameters replace them): FrameworkProfile::fp8_weight_cache. */
    double fp8WeightBytes(int first, int last, const ParallelConfig& config, const FrameworkProfile& framework) const;
    double m_flopsPerToken = 0;

    mutable std::mutex m_cacheMutex;
    mutable std::unordered_map<std::string, std::unique_ptr<LayerCost>> m_cache;
};

} // namespace shardscape
