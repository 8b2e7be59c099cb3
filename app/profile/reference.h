// SPDX-License-Identifier: MIT
// CPU references for every measured kernel kind and the comparison that gates recording it. The inputs are
// the values the GPU reads (already rounded to the dtype), accumulated in double; tolerances follow the dtype.
#pragma once

#include "dtype.h"

#include <cstdint>
#include <string>
#include <vector>

namespace shardscape::profiler {

/** Result of comparing a GPU output with a reference. */
struct CheckResult
{
    bool ok = true;
    std::int64_t checked = 0;
    std::int64_t worstIndex = -1; ///< element with the largest error / allowed ratio
    double worstGot = 0;
    double worstWant = 0;
    double worstAllowed = 0;
    std::string describe() const; ///< "element 17: got 0.1, want 0.2 (allowed error 1e-3)"
};

/**
 * Passes when every |got[i] - want[i]| <= absTol * scale[i] + relTol * |want[i]| (and got is finite).
 * `scale` may be empty (taken as 1): for GEMMs it is sum_l |a_il b_lj|, the size of the terms summed.
 */
CheckResult compareOutputs(const std::vector<float>& got, const std::vector<double>& want,
                           const std::vector<double>& scale, double absTol, double relTol);

/** Uniform values in [-1, 1) from a seeded generator, rounded to `dtype` (never all zeros). */
std::vector<float> randomValues(std::size_t count, DType dtype, std::uint64_t seed);

/**
 * The profiler's GEMM layout (cuBLASLt "TN", column-major): A holds m rows of k (A[i*k + l]), B holds n rows
 * of k (B[j*k + l]), C is m x n column-major (C[j*m + i]) = sum_l A[i*k+l] * B[j*k+l].
 * `absSum` receives sum_l |A B| per element (the tolerance scale).
 */
void referenceGemm(const std::vector<float>& a, const std::vector<float>& b, std::int64_t m, std::int64_t n,
                   std::int64_t k, std::vector<double>& c, std::vector<double>& absSum);

/** Tolerances (absTol on sum|ab|, relTol on |c|) for a GEMM of reduction length k in `dtype`. */
void gemmTolerance(DType dtype, std::int64_t k, double& absTol, double& relTol);

/** Relative rounding step of a stored output in `dtype` (fp32/tf32: 0). */
double outputEpsilon(DType dtype);

/** Row-wise ops on rows x cols row-major data. GELU is the tanh form. */
std::vector<double> referenceBiasGelu(const std::vector<float>& x, const std::vector<float>& bias, std::int64_t rows,
                                      std::int64_t cols);
std::vector<double> referenceRmsNorm(const std::vector<float>& x, const std::vector<float>& weight, std::int64_t rows,
                                     std::int64_t cols, double eps);
std::vector<double> referenceLayerNorm(const std::vector<float>& x, const std::vector<float>& weight,
                                       const std::vector<float>& bias, std::int64_t rows, std::int64_t cols,
                                       double eps);
std::vector<double> referenceSoftmax(const std::vector<float>& x, std::int64_t rows, std::int64_t cols);

/**
 * Causal attention forward for `matrices` (batch x heads) independent sequences: q, k, v and the result are
 * [matrices][seq][headDim] row-major; o_i = sum_{j<=i} softmax_j(scale * q_i . k_j) v_j.
 */
std::vector<double> referenceCausalAttention(const std::vector<float>& q, const std::vector<float>& k,
                                             const std::vector<float>& v, std::int64_t matrices, std::int64_t seq,
                                             std::int64_t headDim, double scale);

} // namespace shardscape::profiler
