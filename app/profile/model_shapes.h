// SPDX-License-Identifier: MIT
// Which GEMM and attention shapes to measure: the default grids, a --shapes file, and the GEMMs of one
// training step of a Hugging Face config.json (--model) on one tensor-parallel rank.
#pragma once

#include "dtype.h"

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace shardscape::profiler {

/** C[m x n] = A[m x k] @ B[k x n]: 2mnk FLOPs. `name` says where it comes from (printed only). */
struct GemmShape
{
    std::int64_t m = 0;
    std::int64_t n = 0;
    std::int64_t k = 0;
    std::string name;
};

struct GemmCase
{
    GemmShape shape;
    DType dtype = DType::BF16;
};

/** Causal attention forward over `batch` x `heads` sequences of `seq` tokens, `headDim` wide. */
struct AttentionShape
{
    std::int64_t batch = 1;
    std::int64_t heads = 1;
    std::int64_t seq = 1;
    std::int64_t headDim = 1;
};

struct ModelRun
{
    int tp = 1;
    std::int64_t seqLen = 2048;
    std::int64_t microBatch = 1;
};

/** What --model derives: the distinct GEMMs of one layer + lm-head, and the attention of one layer. */
struct ModelShapes
{
    std::string family; ///< "gpt2" or "llama" (the gated-MLP family: llama, mistral, mixtral, qwen2, qwen3)
    std::vector<GemmShape> gemms;
    AttentionShape attention;
};

/**
 * The GEMMs of one decoder layer and the lm-head on one TP rank, for T = seqLen * microBatch tokens.
 * Every linear Y[T x out] = X[T x in] W^T gives three GEMMs:
 *   forward           m = T,   n = out, k = in
 *   backward (input)  m = T,   n = in,  k = out     dX = dY W
 *   backward (weight) m = out, n = in,  k = T       dW = dY^T X
 * Megatron-style TP: QKV, MLP gate/up and lm-head are column-parallel (out / tp), attention-out and MLP down
 * row-parallel (in / tp). KV heads: nkv / tp, or 1 (replicated) when tp is a multiple of nkv. The vocabulary is
 * split as ceil(vocab / tp). MoE (Mixtral): the router (T x experts x hidden) and each expert's MLP over
 * ceil(T * experts_per_tok / experts) tokens (uniform routing). Identical shapes are merged (names joined by
 * '+'). Throws BadInput naming the field for a config that is not a supported GPT-2/Llama-style one.
 */
ModelShapes deriveModelShapes(const nlohmann::json& config, const ModelRun& run, std::string_view origin);

/** A --shapes document: a JSON list of {m, n, k, dtype[, name]}. Throws BadInput naming the row and key. */
std::vector<GemmCase> parseShapesDocument(const nlohmann::json& doc, std::string_view origin);

/** Reads and parses a JSON file; BadInput naming the file when it is missing or not JSON. */
nlohmann::json readJsonFile(const std::string& path);

/** Square GEMMs 256..16384 and LLM-like skinny ones (Llama-7B and 70B/TP8 layers at 2048/8192 tokens). */
std::vector<GemmShape> defaultGemmGrid(bool quick);

/** Causal attention: batch 1, 32 heads of 128, seq 512..8192 (and 16 heads of 64). */
std::vector<AttentionShape> defaultAttentionGrid(bool quick);

} // namespace shardscape::profiler
