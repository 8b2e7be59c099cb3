// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/model/dtype.h"

#include <array>
#include <filesystem>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace shardscape {

/** A point-to-point fabric: bandwidth per GPU per direction and a per-message latency. */
struct Link
{
    std::string kind; ///< "nvlink4", "infiniband-ndr", "pcie4", "xgmi", "roce" ...
    double bandwidth = 0; ///< bytes/s per GPU per direction (datasheet, before efficiency)
    double latency = 0; ///< seconds per message (alpha)
    /** The fraction of `bandwidth` collectives were measured to reach on this fabric (across nodes: an all-reduce's
        nccl-tests bus bandwidth over the node's line rate, gpus_per_node x bandwidth); 0 = the cost model's default
        (CostParams::intra_node_efficiency / inter_node_efficiency). */
    double efficiency = 0;
};

/** One accelerator model, datasheet numbers (dense, no sparsity). */
struct DeviceSpec
{
    std::string name; ///< preset key, e.g. "h100-sxm"
    std::string display_name; ///< "NVIDIA H100 SXM5 80GB"
    double memory_bytes = 0; ///< HBM capacity in bytes
    double hbm_bandwidth = 0; ///< bytes/s
    double tdp_watts = 0;
    /** Peak dense FLOP/s indexed by DType (0 where unsupported). */
    std::array<double, 11> peak_flops {};
    Link intra_node; ///< GPU-to-GPU inside a node
    Link inter_node; ///< per-GPU share of the node's scale-out NICs
    int default_gpus_per_node = 8;
    /** Fraction of the dense peak a large, well-shaped GEMM sustains on this device in training (measured, e.g.
        the maximum achievable matmul FLOPS); 0 = CostParams::matmul_efficiency. */
    double matmul_efficiency = 0;
    /** Fraction of the dense peak a fused (flash) attention kernel sustains, forward and backward; 0 =
        CostParams::attention_efficiency. */
    double attention_efficiency = 0;
    /** How many times faster than FlashAttention-2 the vendor's own fused attention kernels run here, forward and
        backward (cuDNN's flash attention on Hopper, which Transformer Engine selects there); 0 = no faster. Applies
        where the framework runs them (FrameworkProfile::vendor_fused_attention). */
    double fused_attention_speedup = 0;
    /** Its FP8 tensor cores take GEMM operands in any layout (compute capability 10.x: Blackwell). Hopper and Ada
        take FP8 GEMMs in the TN layout only, so Transformer Engine keeps a transposed FP8 copy of each weight for
        the backward pass (transformer_engine/pytorch/csrc/quantizer.cpp: with_transpose = columnwise_usage &&
        !nvte_is_non_tn_fp8_gemm_supported()). */
    bool fp8_gemm_any_layout = false;

    double peak(DType dtype) const { return peak_flops[static_cast<std::size_t>(dtype)]; }
};

/** nodes x gpus_per_node identical devices. */
struct Cluster
{
    DeviceSpec device;
    int nodes = 1;
    int gpus_per_node = 8;

    int worldSize() const { return nodes * gpus_per_node; }
    /** Stable text that changes when anything the cost model reads changes (for stale-plan warnings). */
    std::string fingerprint() const;
};

/** Names of the built-in device presets, sorted. */
std::vector<std::string> devicePresetNames();
/** A preset by name; InputError with the nearest names when unknown. */
DeviceSpec devicePreset(std::string_view name);
/** Parses a device object (the preset file format); InputError naming the field on bad input. */
DeviceSpec parseDeviceSpec(const nlohmann::json& doc, std::string_view origin);

/**
 * Resolves what the user typed for --cluster: a device preset name (one node of its default size) or a
 * cluster JSON file {"schema": "shardscape.cluster/1", "device": NAME or {...}, "nodes", "gpus_per_node",
 * optional "intra_node"/"inter_node" link overrides}. nodes/gpusPerNode > 0 override the file.
 */
Cluster loadCluster(const std::string& spec, int nodes = 0, int gpusPerNode = 0);

/**
 * A parsed cluster (or device) file, as loadCluster reads it: `origin` names it in messages, `baseDir` is where a
 * "device": "FILE.json" reference is looked up.
 */
Cluster clusterFromJson(const nlohmann::json& doc, std::string_view origin, const std::filesystem::path& baseDir);

nlohmann::json toJson(const Cluster& cluster);

/** "inter-node links at a measured 29.5% of their line rate" for each link whose cluster states a measured
    efficiency (Link::efficiency), joined by "; "; empty when none does. */
std::string measuredLinksNote(const Cluster& cluster);

} // namespace shardscape
