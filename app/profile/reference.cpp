// SPDX-License-Identifier: MIT
#include "reference.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numbers>
#include <random>

namespace shardscape::profiler {

std::string CheckResult::describe() const
{
    char text[256];
    std::snprintf(text, sizeof text, "element %lld of %lld: got %.9g, want %.9g (allowed error %.3g)",
                  static_cast<long long>(worstIndex), static_cast<long long>(checked), worstGot, worstWant,
                  worstAllowed);
    return text;
}

CheckResult compareOutputs(const std::vector<float>& got, const std::vector<double>& want,
                           const std::vector<double>& scale, double absTol, double relTol)
{
    CheckResult r;
    r.checked = static_cast<std::int64_t>(want.size());
    if (got.size() != want.size()) {
        r.ok = false;
        return r;
    }
    double worstRatio = -1;
    for (std::size_t i = 0; i < want.size(); ++i) {
        const double s = scale.empty() ? 1.0 : scale[i];
        const double allowed = absTol * s + relTol * std::fabs(want[i]) + 1e-30;
        const double error = std::fabs(static_cast<double>(got[i]) - want[i]);
        // NaN or infinity fails outright (the comparison below would be false for NaN).
        const double ratio = std::isfinite(got[i]) ? error / allowed : INFINITY;
        if (ratio > worstRatio) {
            worstRatio = ratio;
            r.worstIndex = static_cast<std::int64_t>(i);
            r.worstGot = got[i];
            r.worstWant = want[i];
            r.worstAllowed = allowed;
        }
    }
    r.ok = worstRatio <= 1.0;
    return r;
}

std::vector<float> randomValues(std::size_t count, DType dtype, std::uint64_t seed)
{
    std::mt19937_64 engine(seed);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    std::vector<float> values(count);
    for (float& v : values)
        v = quantize(dtype, uniform(engine));
    return values;
}

void referenceGemm(const std::vector<float>& a, const std::vector<float>& b, std::int64_t m, std::int64_t n,
                   std::int64_t k, std::vector<double>& c, std::vector<double>& absSum)
{
    c.assign(static_cast<std::size_t>(m * n), 0.0);
    absSum.assign(static_cast<std::size_t>(m * n), 0.0);
    for (std::int64_t j = 0; j < n; ++j)
        for (std::int64_t i = 0; i < m; ++i) {
            double sum = 0;
            double abs = 0;
            for (std::int64_t l = 0; l < k; ++l) {
                const double p = static_cast<double>(a[i * k + l]) * static_cast<double>(b[j * k + l]);
                sum += p;
                abs += std::fabs(p);
            }
            c[j * m + i] = sum;
            absSum[j * m + i] = abs;
        }
}

double outputEpsilon(DType dtype)
{
    switch (dtype) {
    case DType::BF16:
        return std::ldexp(1.0, -8); // one bf16 ulp at the value (round-to-nearest is within half of it)
    case DType::FP16:
        return std::ldexp(1.0, -10);
    case DType::FP8E4M3: // fp8 GEMMs write bf16
        return std::ldexp(1.0, -8);
    case DType::TF32:
    case DType::FP32:
        break;
    }
    return 0.0;
}

void gemmTolerance(DType dtype, std::int64_t k, double& absTol, double& relTol)
{
    // fp32 accumulation of k terms: |error| <= ~k * 2^-24 * sum|ab| in the worst case; doubled for margin.
    const double accumulate = 2.0 * static_cast<double>(k) * std::ldexp(1.0, -24);
    relTol = outputEpsilon(dtype);
    switch (dtype) {
    case DType::TF32: // both inputs rounded to 10 mantissa bits inside the tensor core: 2 * 2^-10 per product
        absTol = std::ldexp(1.0, -9) + accumulate;
        break;
    case DType::FP8E4M3: // Hopper's FP8 MMA accumulates partial sums in reduced precision before promotion
        absTol = std::ldexp(1.0, -7) + accumulate;
        break;
    case DType::BF16:
    case DType::FP16:
    case DType::FP32:
        absTol = accumulate;
        break;
    }
}

std::vector<double> referenceBiasGelu(const std::vector<float>& x, const std::vector<float>& bias, std::int64_t rows,
                                      std::int64_t cols)
{
    std::vector<double> y(static_cast<std::size_t>(rows * cols));
    const double c = std::sqrt(2.0 / std::numbers::pi);
    for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t j = 0; j < cols; ++j) {
            const double v = static_cast<double>(x[r * cols + j]) + bias[j];
            y[r * cols + j] = 0.5 * v * (1.0 + std::tanh(c * (v + 0.044715 * v * v * v)));
        }
    return y;
}

std::vector<double> referenceRmsNorm(const std::vector<float>& x, const std::vector<float>& weight, std::int64_t rows,
                                     std::int64_t cols, double eps)
{
    std::vector<double> y(static_cast<std::size_t>(rows * cols));
    for (std::int64_t r = 0; r < rows; ++r) {
        double sumSq = 0;
        for (std::int64_t j = 0; j < cols; ++j)
            sumSq += static_cast<double>(x[r * cols + j]) * x[r * cols + j];
        const double inv = 1.0 / std::sqrt(sumSq / static_cast<double>(cols) + eps);
        for (std::int64_t j = 0; j < cols; ++j)
            y[r * cols + j] = x[r * cols + j] * inv * weight[j];
    }
    return y;
}

std::vector<double> referenceLayerNorm(const std::vector<float>& x, const std::vector<float>& weight,
                                       const std::vector<float>& bias, std::int64_t rows, std::int64_t cols, double eps)
{
    std::vector<double> y(static_cast<std::size_t>(rows * cols));
    for (std::int64_t r = 0; r < rows; ++r) {
        double sum = 0;
        for (std::int64_t j = 0; j < cols; ++j)
            sum += x[r * cols + j];
        const double mean = sum / static_cast<double>(cols);
        double var = 0;
        for (std::int64_t j = 0; j < cols; ++j)
            var += (x[r * cols + j] - mean) * (x[r * cols + j] - mean);
        const double inv = 1.0 / std::sqrt(var / static_cast<double>(cols) + eps);
        for (std::int64_t j = 0; j < cols; ++j)
            y[r * cols + j] = (x[r * cols + j] - mean) * inv * weight[j] + bias[j];
    }
    return y;
}

std::vector<double> referenceSoftmax(const std::vector<float>& x, std::int64_t rows, std::int64_t cols)
{
    std::vector<double> y(static_cast<std::size_t>(rows * cols));
    for (std::int64_t r = 0; r < rows; ++r) {
        const float* row = &x[r * cols];
        const double max = *std::max_element(row, row + cols);
        double sum = 0;
        for (std::int64_t j = 0; j < cols; ++j)
            sum += std::exp(row[j] - max);
        for (std::int64_t j = 0; j < cols; ++j)
            y[r * cols + j] = std::exp(row[j] - max) / sum;
    }
    return y;
}

std::vector<double> referenceCausalAttention(const std::vector<float>& q, const std::vector<float>& k,
                                             const std::vector<float>& v, std::int64_t matrices, std::int64_t seq,
                                             std::int64_t headDim, double scale)
{
    std::vector<double> o(static_cast<std::size_t>(matrices * seq * headDim), 0.0);
    std::vector<double> p(static_cast<std::size_t>(seq));
    for (std::int64_t b = 0; b < matrices; ++b) {
        const std::int64_t base = b * seq * headDim;
        for (std::int64_t i = 0; i < seq; ++i) {
            double max = -INFINITY;
            for (std::int64_t j = 0; j <= i; ++j) {
                double s = 0;
                for (std::int64_t d = 0; d < headDim; ++d)
                    s += static_cast<double>(q[base + i * headDim + d]) * k[base + j * headDim + d];
                p[j] = scale * s;
                max = std::max(max, p[j]);
            }
            double sum = 0;
            for (std::int64_t j = 0; j <= i; ++j) {
                p[j] = std::exp(p[j] - max);
                sum += p[j];
            }
            for (std::int64_t j = 0; j <= i; ++j)
                for (std::int64_t d = 0; d < headDim; ++d)
                    o[base + i * headDim + d] += p[j] / sum * v[base + j * headDim + d];
        }
    }
    return o;
}

} // namespace shardscape::profiler
