// SPDX-License-Identifier: MIT
#pragma once

#include "shardscape/model/hf_config.h"
#include "shardscape/model/model_graph.h"

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace shardscape {

/** What an ONNX import did besides building the graph: for logs, the CLI and tests. */
struct OnnxImportReport
{
    /** Op types kept as OpKind::Unknown (costed as memory-bound) -> number of nodes. Custom domains are
        written "domain:OpType", e.g. "com.microsoft:QOrderedMatMul". */
    std::map<std::string, int> unknown_op_types;
    /** One line each: unknown op types, shapes estimated, symbolic dimensions bound to 1, ignored options. */
    std::vector<std::string> warnings;
    /** Symbolic dimension (dim_param, or "input[k]" for an unnamed one) -> the value bound to it. */
    std::map<std::string, std::int64_t> symbolic_dims;
    /** Initializers found to hold a tensor another initializer already holds (tied embeddings). */
    int tied_initializers_merged = 0;
    std::int64_t nodes = 0; ///< nodes in the model's main graph
    /** Nodes that compute only constants, shapes or views of weights: folded, no op emitted. */
    std::int64_t folded_nodes = 0;
    int norms_fused = 0; ///< decomposed LayerNorm / RMSNorm node chains folded into one Norm op
    int attention_cores = 0; ///< MatMul-Softmax-MatMul patterns and fused attention nodes
    std::int64_t estimated_shapes = 0; ///< values ONNX inference gave no shape, estimated from their inputs
    std::int64_t unknown_shapes = 0; ///< values with no shape at all, counted as one element (with a warning)
};

/** The graph and its report. */
struct OnnxImport
{
    ModelGraph graph;
    OnnxImportReport report;
};

/**
 * Imports an ONNX model (a .onnx file; ONNX 1.12 library) as a forward op graph for one micro-batch.
 *
 * The file is parsed (files over 2 GB are rejected: protobuf cannot parse them; weights belong in
 * external data), external-data locations are checked (absolute paths and ".." are rejected, naming the
 * tensor: CVE-2022-25882) and never read: parameter counts and bytes come from the initializers' dims.
 * Control flow (If, Loop, Scan, any node with a subgraph) is rejected naming the node.
 *
 * Symbolic dimensions are bound before ONNX shape inference runs: a name containing "batch" takes
 * options.batch (0 means 1); one containing "seq", "length" or "past" takes options.seq_len (0 means
 * 2048); an unnamed or otherwise named dimension of a graph input is the batch when it is the input's
 * first dimension, the sequence when it is the second dimension of a 2-D integer input (token ids), and
 * 1 otherwise (with a warning). graph.batch and graph.seq_len are the values bound, or the leading dims of
 * the first input when the model has fixed shapes.
 *
 * Ops follow the HF builder's conventions (FLOPs, bytes, saved tensors, backward FLOPs per kind); module
 * paths come from PyTorch's scoped node names ("/model/layers.0/self_attn/q_proj/MatMul" ->
 * "model.layers.0.self_attn.q_proj"), else from the name of the weight a node reads, else from the latest
 * producer. Attention core ops get "<attention module>.core". Floating-point tensors take options.dtype
 * (the training precision); integer and boolean tensors keep their ONNX types. Ops carry no
 * tensor-parallel roles: the planner's intra-op solver assigns them.
 *
 * Throws InputError naming the file and the cause for files that are missing, not ONNX, over 2 GB,
 * unsafe, with control flow or with dangling references.
 */
OnnxImport loadOnnxModelDetailed(const std::filesystem::path& path, const BuildOptions& options);

/**
 * loadOnnxModelDetailed on the bytes of an .onnx file already in memory (the path loader reads the file and calls
 * this). `origin` names the model in messages; its stem is the graph's name. External-data locations are checked
 * the same way (and still never read).
 */
OnnxImport loadOnnxModelFromBytes(std::string_view bytes, std::string_view origin, const BuildOptions& options);

/** loadOnnxModelDetailed without the report. */
ModelGraph loadOnnxModel(const std::filesystem::path& path, const BuildOptions& options);

} // namespace shardscape
