// SPDX-License-Identifier: MIT
// What the ONNX importer's files share (private to core/src/model): the op-type table's categories, the FLOP
// constants, import-time tensors and the helpers over ONNX protos. The importer itself is onnx_importer.h.
#pragma once

#include "shardscape/model/dtype.h"

#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace shardscape::onnx_detail {

using Shape = std::vector<std::int64_t>;

// protobuf parses at most INT_MAX bytes; larger models must keep their weights in external data.
constexpr std::uintmax_t kMaxProtoBytes = 2147483647;
constexpr const char* kExternalDataHint
    = "save the weights as external data: onnx.save_model(model, path, save_as_external_data=True) (only the graph is "
      "read, never the weights)";

constexpr std::int64_t kDefaultSeqLen = 2048;
constexpr double kMaxTensorElements = 1e15; // as the HF builder: larger is a mistake, int64 counts stay exact

// FLOPs per element, the HF builder's constants where it has one (memory-bound ops are costed by bytes;
// these keep FLOP totals honest).
constexpr double kNormFlops = 5;
constexpr double kNormWeightGradFlops = 2;
constexpr double kSoftmaxFlops = 5;
constexpr double kDropoutFlops = 2;
constexpr double kLossFlopsPerLogit = 4;
constexpr double kBackwardFactor = 2;
constexpr double kGeluFlops = 8;
// exp, log, erf, tanh, sin, cos: a few multiply-adds each. Erf-GELU (div, erf, add, mul, mul) then totals 8.
constexpr double kTranscendentalFlops = 4;
// 1 / (1 + exp(-x)) at 3, so SiLU(g) * up (sigmoid, mul, mul) totals the builder's SwiGLU 5 per element.
constexpr double kSigmoidFlops = 3;

/** How an op type maps, before patterns refine it. */
enum class Category : std::uint8_t
{
    Elementwise,
    Reduction,
    Softmax,
    Norm,
    View, ///< no data moves (Reshape, Squeeze, ...)
    Move, ///< data moves, no arithmetic (Transpose, Concat, Slice, ...)
    Gather,
    MatMul,
    Gemm,
    Conv,
    ConvTranspose,
    Einsum,
    Attention,
    Loss,
    Dropout,
    ShapeOf, ///< Shape, Size: static whatever their input
    Source, ///< Constant, Range, ...: static when their inputs are
    ControlFlow,
    Unknown
};

/** How an elementwise op's backward works. */
enum class Grad : std::uint8_t
{
    Linear, ///< gradient passes through (add, sub, cast, where): saves nothing, no backward FLOPs
    Product, ///< mul, div: saves its activation operands
    Nonlinear ///< unary functions: save their input, backward twice the forward
};

struct OpTypeInfo
{
    Category category = Category::Unknown;
    double flops = 1; ///< per output element (per input element for reductions)
    Grad grad = Grad::Nonlinear;
};

constexpr std::size_t kMaxStaticElements = 65536; // position ranges up to 64k tokens; shapes are a few elements
/** Tensors of more dimensions are refused: ONNX inference materialises one proto per dimension of every value. */
constexpr std::size_t kMaxRank = 64;

/** The way out offered when a shape operand is refused. */
constexpr const char* kShapeOperandHint = "the model is not one a framework exports: re-export it";
/** The way out offered when a node breaks the ONNX operator's rules. */
constexpr const char* kInvalidNodeHint
    = "the model is not valid ONNX: re-export it (onnx.checker.check_model finds this)";

/** A small integer (or boolean) tensor known at import time: shapes, indices, masks' inputs. */
struct StaticTensor
{
    int type = onnx::TensorProto::INT64;
    Shape shape;
    std::vector<std::int64_t> data;
};

// --- op types and attributes (onnx_op_types.cpp) -------------------------------------------------------------

bool defaultDomain(const std::string& domain);
OpTypeInfo opTypeInfo(const onnx::NodeProto& node);
std::string sourceType(const onnx::NodeProto& node);
bool isFloatType(int elemType);

/** Floating-point tensors take the training precision; others keep their width. */
DType mapDType(int elemType, DType floating);

double elementCount(const Shape& shape);
std::string firstLine(std::string_view text);
std::int64_t intAttr(const onnx::NodeProto& node, std::string_view name, std::int64_t fallback);
std::vector<std::int64_t> intsAttr(const onnx::NodeProto& node, std::string_view name);
std::string stringAttr(const onnx::NodeProto& node, std::string_view name);

// --- module paths (onnx_module_names.cpp) --------------------------------------------------------------------

/** "/model/layers.0/self_attn/q_proj/MatMul" -> "model.layers.0.self_attn.q_proj"; "" for generic names. */
std::string scopedModule(const std::string& nodeName);

/** "model.layers.0.self_attn.q_proj.weight" -> "model.layers.0.self_attn.q_proj"; "" for generated names. */
std::string weightModule(const std::string& name);

std::string parentModule(const std::string& module);

/** The longest common prefix of two dotted paths, cut at a component boundary. */
std::string commonModule(const std::string& a, const std::string& b);

// --- input safety (onnx_input_safety.cpp) --------------------------------------------------------------------

void checkGraphLocations(const onnx::GraphProto& graph, const std::string& origin, int depth);
void checkAttributeLocations(const onnx::AttributeProto& a, const std::string& origin, int depth);

/**
 * Why ONNX 1.12's inference function must not run on a node (empty: it may), from the node's inputs as inference has
 * them at that point (onnx_inference_guard.h): declared or inferred ranks, and constant values. Those functions trust
 * what they read, and each refusal below was found by fuzz_onnx as a crash or out-of-memory inside libonnx on invalid
 * ONNX:
 * - convolutions and pooling (convPoolShapeInference) index their dilation, stride and pad vectors by the kernel's
 *   rank without checking it against the input's: a weight of another rank, or attributes of the wrong length, read
 *   past the vectors, and a zero stride divides by zero (also when only inference knows the input's rank: a Flatten
 *   feeding a Conv crashed the CLI);
 * - LayerNormalization writes the dimension at `axis` of its Mean/InvStdDev outputs without checking that axis
 *   against the input's rank (a rank-0 input, or an axis outside [-rank, rank - 1]);
 * - a shape operand (shapeOperandIndex) becomes one proto per value, or per element of its length when the values
 *   are unknown: over kMaxRank of them, or a dimension past 2^40 that later feeds another shape operand, exhausts
 *   memory (see shapeOperandProblem).
 * The reason reads after the node's name: "has ...".
 */
std::string inferenceHazard(const std::string& op, const std::string& domain, const onnx::InferenceContext& ctx);

// --- static shape arithmetic (onnx_static_values.cpp) --------------------------------------------------------

/**
 * The input of an `op` node that holds one value per dimension of its output (Reshape's and Expand's shape, Unsqueeze's
 * axes, ConstantOfShape's input), or -1.
 */
int shapeOperandIndex(const std::string& op, const std::string& domain);

/** "has a shape operand of N values: a result of at least N dimensions, over the limit of 64". */
std::string tooManyDimensions(double values);

/** How many elements a tensor's dims describe (a double: a hostile file's product overflows int64). */
double elementCount(const onnx::TensorProto& t);

bool isIntegerType(int t);
std::optional<StaticTensor> readStaticTensor(const onnx::TensorProto& t);

/**
 * Why the values of a shape operand (shapeOperandIndex) cannot be handed to ONNX shape inference, or empty: over
 * kMaxRank values, or a dimension outside [-1, 2^40] (ONNX 1.12 takes a Reshape to [8e18] at its word and later
 * makes one proto per element of the result: found by fuzz_onnx as a 2 GB+ out-of-memory).
 */
std::string shapeOperandProblem(const StaticTensor& s);

void writeStaticTensor(const StaticTensor& s, onnx::TensorProto& t);

/** The value of a node whose integer inputs are all known; nullopt when it is not a shape computation. */
std::optional<StaticTensor> evaluateStatic(const onnx::NodeProto& node, const std::vector<const StaticTensor*>& in,
                                           const std::unordered_map<std::string, Shape>& shapes);

/** Calls `f` with every value the graph declares a type for: its inputs, value_info and outputs. */
template<typename F> void forEachDeclaredValue(const onnx::GraphProto& graph, F&& f)
{
    for (const auto& vi : graph.input())
        f(vi);
    for (const auto& vi : graph.value_info())
        f(vi);
    for (const auto& vi : graph.output())
        f(vi);
}

} // namespace shardscape::onnx_detail
