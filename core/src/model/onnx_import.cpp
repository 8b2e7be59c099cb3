// SPDX-License-Identifier: MIT
// Imports an ONNX model as a ModelGraph with the HF builder's cost conventions (transformer_builder.cpp).
//
// Phases: parse (size-checked) -> safety (external-data locations, control flow) -> bind symbolic dims ->
// ONNX shape inference, with the static shape arithmetic it cannot follow evaluated here and fed back ->
// classify values (activations, statics, weights) -> find patterns (norm chains, Linear + bias, attention
// cores, log-softmax + NLL) -> emit ops in topological order -> resolve modules.
//
// Values are of three kinds. Weights: floating-point initializers with more than one element, and views
// of them (Transpose, Cast, Reshape, ... of weights and constants only: torch writes tied heads that way).
// Statics: everything computable without activations (constants, shapes, shape arithmetic, masks,
// position ranges, rotary tables); their nodes are folded and emit no op, except a Gather from a weight
// table (learned positions), which is an Embedding. Activations: the rest.
#include "shardscape/model/onnx_import.h"

#include "onnx_inference_guard.h"
#include "shardscape/support/error.h"
#include "shardscape/support/strings.h"

#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

namespace shardscape {

namespace {

namespace fs = std::filesystem;
using Shape = std::vector<std::int64_t>;

// protobuf parses at most INT_MAX bytes; larger models must keep their weights in external data.
constexpr std::uintmax_t kMaxProtoBytes = 2147483647;
constexpr const char* kExternalDataHint
    = "save the weights as external data: onnx.save_model(model, path, save_as_external_data=True) (only the graph is "
      "read, never the weights)";

std::string tooLarge(std::string_view origin, std::uintmax_t size)
{
    return cat(origin, ": ", humanBytes(static_cast<double>(size)),
               " is over protobuf's 2 GB limit for one .onnx file");
}

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

const std::unordered_map<std::string_view, OpTypeInfo>& opTypeTable()
{
    static const std::unordered_map<std::string_view, OpTypeInfo> table = [] {
        std::unordered_map<std::string_view, OpTypeInfo> t;
        const auto add = [&t](std::initializer_list<std::string_view> names, OpTypeInfo info) {
            for (const auto n : names)
                t.emplace(n, info);
        };
        add({"Add",
             "Sub",
             "Neg",
             "Sum",
             "Mean",
             "Where",
             "Not",
             "And",
             "Or",
             "Xor",
             "Equal",
             "Less",
             "LessOrEqual",
             "Greater",
             "GreaterOrEqual",
             "IsNaN",
             "IsInf",
             "BitShift",
             "BitwiseAnd",
             "BitwiseOr",
             "BitwiseXor",
             "BitwiseNot",
             "Sign",
             "Floor",
             "Ceil",
             "Round",
             "Mod",
             "QuantizeLinear",
             "DequantizeLinear",
             "DynamicQuantizeLinear",
             "BiasAdd"},
            {Category::Elementwise, 1, Grad::Linear});
        add({"Cast", "CastLike"}, {Category::Elementwise, 0, Grad::Linear});
        add({"Mul", "Div"}, {Category::Elementwise, 1, Grad::Product});
        add({"Relu", "LeakyRelu", "PRelu", "Clip", "Abs", "Max", "Min", "Pow", "Sqrt", "Reciprocal", "ThresholdedRelu",
             "Shrink", "HardSigmoid", "HardSwish", "Softsign"},
            {Category::Elementwise, 1, Grad::Nonlinear});
        add({"Exp",  "Log",  "Erf",   "Tanh",  "Sin",   "Cos",      "Tan", "Asin", "Acos", "Atan",
             "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Softplus", "Elu", "Selu", "Celu", "Mish"},
            {Category::Elementwise, kTranscendentalFlops, Grad::Nonlinear});
        add({"Sigmoid"}, {Category::Elementwise, kSigmoidFlops, Grad::Nonlinear});
        add({"Gelu", "FastGelu", "BiasGelu", "QuickGelu"}, {Category::Elementwise, kGeluFlops, Grad::Nonlinear});
        add({"ReduceMean",
             "ReduceSum",
             "ReduceMax",
             "ReduceMin",
             "ReduceProd",
             "ReduceL1",
             "ReduceL2",
             "ReduceLogSum",
             "ReduceLogSumExp",
             "ReduceSumSquare",
             "ArgMax",
             "ArgMin",
             "TopK",
             "GlobalAveragePool",
             "GlobalMaxPool",
             "GlobalLpPool",
             "AveragePool",
             "MaxPool",
             "LpPool",
             "MaxRoiPool",
             "RoiAlign",
             "CumSum",
             "MaxUnpool",
             "NonMaxSuppression"},
            {Category::Reduction, 1, Grad::Nonlinear});
        add({"Softmax", "LogSoftmax", "Hardmax"}, {Category::Softmax, kSoftmaxFlops, Grad::Nonlinear});
        add({"LayerNormalization", "BatchNormalization", "InstanceNormalization", "GroupNormalization",
             "LpNormalization", "MeanVarianceNormalization", "RMSNormalization", "SimplifiedLayerNormalization",
             "SkipLayerNormalization", "SkipSimplifiedLayerNormalization", "LRN"},
            {Category::Norm, kNormFlops, Grad::Nonlinear});
        add({"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Optional", "OptionalGetElement",
             "OptionalHasElement"},
            {Category::View, 0, Grad::Linear});
        add({"Transpose",
             "Concat",
             "Split",
             "Slice",
             "Expand",
             "Tile",
             "Pad",
             "GatherElements",
             "GatherND",
             "ScatterND",
             "ScatterElements",
             "Scatter",
             "DepthToSpace",
             "SpaceToDepth",
             "Compress",
             "ReverseSequence",
             "Trilu",
             "Resize",
             "Upsample",
             "OneHot",
             "NonZero",
             "Unique",
             "CenterCropPad",
             "Col2Im",
             "ConcatFromSequence",
             "SplitToSequence",
             "SequenceAt",
             "SequenceConstruct",
             "SequenceInsert",
             "SequenceErase",
             "SequenceEmpty",
             "SequenceLength",
             "ImageDecoder"},
            {Category::Move, 0, Grad::Linear});
        add({"Gather"}, {Category::Gather, 0, Grad::Linear});
        add({"MatMul", "MatMulInteger", "QLinearMatMul", "FusedMatMul"}, {Category::MatMul, 2, Grad::Product});
        add({"Gemm"}, {Category::Gemm, 2, Grad::Product});
        add({"Conv", "ConvInteger", "QLinearConv"}, {Category::Conv, 2, Grad::Product});
        add({"ConvTranspose"}, {Category::ConvTranspose, 2, Grad::Product});
        add({"Einsum"}, {Category::Einsum, 2, Grad::Product});
        add({"Attention", "MultiHeadAttention", "GroupQueryAttention", "PackedAttention", "PackedMultiHeadAttention",
             "DecoderMaskedMultiHeadAttention", "DecoderMaskedSelfAttention", "ScaledDotProductAttention",
             "SparseAttention"},
            {Category::Attention, 4, Grad::Product});
        add({"SoftmaxCrossEntropyLoss", "NegativeLogLikelihoodLoss"}, {Category::Loss, 1, Grad::Linear});
        add({"Dropout"}, {Category::Dropout, kDropoutFlops, Grad::Product});
        add({"Shape", "Size"}, {Category::ShapeOf, 0, Grad::Linear});
        add({"Constant", "ConstantOfShape", "Range", "RandomNormal", "RandomUniform", "RandomNormalLike",
             "RandomUniformLike", "Multinomial", "Bernoulli", "EyeLike", "HannWindow", "HammingWindow",
             "BlackmanWindow"},
            {Category::Source, 1, Grad::Linear});
        add({"If", "Loop", "Scan"}, {Category::ControlFlow, 0, Grad::Linear});
        return t;
    }();
    return table;
}

bool defaultDomain(const std::string& domain)
{
    return domain.empty() || domain == "ai.onnx";
}

OpTypeInfo opTypeInfo(const onnx::NodeProto& node)
{
    const auto& table = opTypeTable();
    const auto it = table.find(node.op_type());
    if (it == table.end())
        return {};
    // Outside the standard domains a familiar name may mean anything, except a fused attention.
    if (defaultDomain(node.domain()) || node.domain() == "com.microsoft" || it->second.category == Category::Attention)
        return it->second;
    return {};
}

std::string sourceType(const onnx::NodeProto& node)
{
    return defaultDomain(node.domain()) ? node.op_type() : node.domain() + ":" + node.op_type();
}

bool isFloatType(int elemType)
{
    using T = onnx::TensorProto;
    return elemType == T::FLOAT || elemType == T::FLOAT16 || elemType == T::BFLOAT16 || elemType == T::DOUBLE;
}

/** Floating-point tensors take the training precision; others keep their width. */
DType mapDType(int elemType, DType floating)
{
    using T = onnx::TensorProto;
    switch (elemType) {
    case T::INT64:
    case T::UINT64:
        return DType::I64;
    case T::INT32:
    case T::UINT32:
    case T::INT16:
    case T::UINT16:
        return DType::I32;
    case T::INT8:
        return DType::I8;
    case T::UINT8:
    case T::STRING:
        return DType::U8;
    case T::BOOL:
        return DType::Bool;
    case T::COMPLEX64:
    case T::COMPLEX128:
        return DType::F64;
    default:
        return floating;
    }
}

double elementCount(const Shape& shape)
{
    double n = 1;
    for (const auto d : shape)
        n *= static_cast<double>(d);
    return n;
}

std::string firstLine(std::string_view text)
{
    const auto end = text.find('\n');
    std::string line(text.substr(0, end));
    if (line.size() > 200)
        line = line.substr(0, 197) + "...";
    return line;
}

std::int64_t intAttr(const onnx::NodeProto& node, std::string_view name, std::int64_t fallback)
{
    for (const auto& a : node.attribute())
        if (a.name() == name)
            return a.i();
    return fallback;
}

std::vector<std::int64_t> intsAttr(const onnx::NodeProto& node, std::string_view name)
{
    for (const auto& a : node.attribute())
        if (a.name() == name)
            return {a.ints().begin(), a.ints().end()};
    return {};
}

std::string stringAttr(const onnx::NodeProto& node, std::string_view name)
{
    for (const auto& a : node.attribute())
        if (a.name() == name)
            return a.s();
    return {};
}

/** "/model/layers.0/self_attn/q_proj/MatMul" -> "model.layers.0.self_attn.q_proj"; "" for generic names. */
std::string scopedModule(const std::string& nodeName)
{
    const auto slash = nodeName.rfind('/');
    if (slash == std::string::npos)
        return {};
    std::string module;
    std::size_t start = 0;
    while (start < slash) {
        const std::size_t end = std::min(nodeName.find('/', start), slash);
        if (end > start) {
            if (!module.empty())
                module += '.';
            module.append(nodeName, start, end - start);
        }
        start = end + 1;
    }
    return module;
}

/** "model.layers.0.self_attn.q_proj.weight" -> "model.layers.0.self_attn.q_proj"; "" for generated names. */
std::string weightModule(const std::string& name)
{
    if (name.find("::") != std::string::npos)
        return {};
    const auto dot = name.rfind('.');
    return dot == std::string::npos || dot == 0 ? std::string() : name.substr(0, dot);
}

std::string parentModule(const std::string& module)
{
    const auto dot = module.rfind('.');
    return dot == std::string::npos ? std::string() : module.substr(0, dot);
}

/** The longest common prefix of two dotted paths, cut at a component boundary. */
std::string commonModule(const std::string& a, const std::string& b)
{
    std::size_t n = 0;
    std::size_t lastDot = 0;
    while (n < a.size() && n < b.size() && a[n] == b[n]) {
        if (a[n] == '.')
            lastDot = n;
        ++n;
    }
    const bool whole = (n == a.size() || a[n] == '.') && (n == b.size() || b[n] == '.');
    return whole ? a.substr(0, n) : a.substr(0, lastDot);
}

// --- safety checks -------------------------------------------------------------------------------------------

/** Rejects external-data locations that leave the model's folder (CVE-2022-25882 is open in ONNX 1.12.0). */
void checkTensorLocation(const onnx::TensorProto& t, const std::string& origin)
{
    if (t.data_location() != onnx::TensorProto::EXTERNAL && t.external_data_size() == 0)
        return;
    std::optional<std::string> location;
    for (const auto& entry : t.external_data())
        if (entry.key() == "location")
            location = entry.value();
    const std::string hint = "external-data locations must be relative paths inside the model's folder "
                             "(CVE-2022-25882); re-save the model with onnx.save_model(..., location=\"weights.bin\")";
    if (!location || location->empty())
        throw InputError(cat(origin, ": tensor '", t.name(), "' is stored as external data without a location"), hint);
    const std::string& loc = *location;
    const bool absolute
        = loc.front() == '/' || loc.front() == '\\' || (loc.size() > 1 && loc[1] == ':') || fs::path(loc).is_absolute();
    bool climbs = false;
    std::size_t start = 0;
    while (start <= loc.size()) {
        const std::size_t end = std::min(loc.find_first_of("/\\", start), loc.size());
        if (std::string_view(loc).substr(start, end - start) == "..")
            climbs = true;
        start = end + 1;
    }
    if (absolute || climbs || loc.find('\0') != std::string::npos)
        throw InputError(cat(origin, ": tensor '", t.name(), "' points at external data '", loc,
                             absolute ? "', an absolute path" : "', outside the model's folder"),
                         hint);
}

void checkGraphLocations(const onnx::GraphProto& graph, const std::string& origin, int depth);

void checkAttributeLocations(const onnx::AttributeProto& a, const std::string& origin, int depth)
{
    if (a.has_t())
        checkTensorLocation(a.t(), origin);
    for (const auto& t : a.tensors())
        checkTensorLocation(t, origin);
    if (a.has_sparse_tensor()) {
        checkTensorLocation(a.sparse_tensor().values(), origin);
        checkTensorLocation(a.sparse_tensor().indices(), origin);
    }
    for (const auto& s : a.sparse_tensors()) {
        checkTensorLocation(s.values(), origin);
        checkTensorLocation(s.indices(), origin);
    }
    if (a.has_g())
        checkGraphLocations(a.g(), origin, depth + 1);
    for (const auto& g : a.graphs())
        checkGraphLocations(g, origin, depth + 1);
}

void checkGraphLocations(const onnx::GraphProto& graph, const std::string& origin, int depth)
{
    if (depth > 64)
        throw InputError(cat(origin, ": subgraphs nested more than 64 deep"), "this is not a real model");
    for (const auto& t : graph.initializer())
        checkTensorLocation(t, origin);
    for (const auto& s : graph.sparse_initializer()) {
        checkTensorLocation(s.values(), origin);
        checkTensorLocation(s.indices(), origin);
    }
    for (const auto& node : graph.node())
        for (const auto& a : node.attribute())
            checkAttributeLocations(a, origin, depth);
}

// --- static shape arithmetic -------------------------------------------------------------------------------

constexpr std::size_t kMaxStaticElements = 65536; // position ranges up to 64k tokens; shapes are a few elements
/** Tensors of more dimensions are refused: ONNX inference materialises one proto per dimension of every value. */
constexpr std::size_t kMaxRank = 64;

/**
 * The input of an `op` node that holds one value per dimension of its output (Reshape's and Expand's shape, Unsqueeze's
 * axes, ConstantOfShape's input), or -1.
 */
int shapeOperandIndex(const std::string& op, const std::string& domain)
{
    if (!defaultDomain(domain))
        return -1;
    if (op == "Reshape" || op == "Expand" || op == "Unsqueeze")
        return 1;
    return op == "ConstantOfShape" ? 0 : -1;
}

/** "has a shape operand of N values: a result of at least N dimensions, over the limit of 64". */
std::string tooManyDimensions(double values)
{
    return cat("has a shape operand of ", values,
               " values: a result of at least that many dimensions, over the limit of ", kMaxRank);
}

/** How many elements a tensor's dims describe (a double: a hostile file's product overflows int64). */
double elementCount(const onnx::TensorProto& t)
{
    double count = 1;
    for (const auto d : t.dims())
        count *= static_cast<double>(d);
    return count;
}

/** The way out offered when a shape operand is refused. */
constexpr const char* kShapeOperandHint = "the model is not one a framework exports: re-export it";
/** The way out offered when a node breaks the ONNX operator's rules. */
constexpr const char* kInvalidNodeHint
    = "the model is not valid ONNX: re-export it (onnx.checker.check_model finds this)";

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

/** A small integer (or boolean) tensor known at import time: shapes, indices, masks' inputs. */
struct StaticTensor
{
    int type = onnx::TensorProto::INT64;
    Shape shape;
    std::vector<std::int64_t> data;
};

bool isIntegerType(int t)
{
    using T = onnx::TensorProto;
    return t == T::INT64 || t == T::INT32 || t == T::INT16 || t == T::INT8 || t == T::UINT8 || t == T::UINT16
        || t == T::UINT32 || t == T::UINT64 || t == T::BOOL;
}

std::optional<StaticTensor> readStaticTensor(const onnx::TensorProto& t)
{
    using T = onnx::TensorProto;
    if (!isIntegerType(t.data_type()) || t.data_location() == T::EXTERNAL)
        return std::nullopt;
    StaticTensor s;
    s.type = t.data_type();
    s.shape.assign(t.dims().begin(), t.dims().end());
    const double count = elementCount(s.shape);
    if (count > static_cast<double>(kMaxStaticElements) || count < 0)
        return std::nullopt;
    const auto n = static_cast<std::size_t>(count);
    if (!t.raw_data().empty()) {
        const std::string& raw = t.raw_data();
        const std::size_t width = n == 0 ? 1 : raw.size() / n;
        if (n == 0 || raw.size() != n * width || (width != 1 && width != 2 && width != 4 && width != 8))
            return n == 0 ? std::optional<StaticTensor>(s) : std::nullopt;
        const bool isSigned = t.data_type() == T::INT64 || t.data_type() == T::INT32 || t.data_type() == T::INT16
            || t.data_type() == T::INT8;
        for (std::size_t i = 0; i < n; ++i) {
            std::uint64_t bits = 0;
            std::memcpy(&bits, raw.data() + i * width, width); // little-endian, as ONNX stores it
            std::int64_t value = static_cast<std::int64_t>(bits);
            if (isSigned && width < 8 && (bits >> (8 * width - 1)) & 1U)
                value = static_cast<std::int64_t>(bits | (~std::uint64_t {0} << (8 * width)));
            s.data.push_back(value);
        }
    } else if (t.int64_data_size() > 0) {
        s.data.assign(t.int64_data().begin(), t.int64_data().end());
    } else if (t.int32_data_size() > 0) {
        s.data.assign(t.int32_data().begin(), t.int32_data().end());
    } else if (t.uint64_data_size() > 0) {
        for (const auto v : t.uint64_data())
            s.data.push_back(static_cast<std::int64_t>(v));
    }
    if (s.data.size() != n)
        return std::nullopt;
    return s;
}

/**
 * Why the values of a shape operand (shapeOperandIndex) cannot be handed to ONNX shape inference, or empty: over
 * kMaxRank values, or a dimension outside [-1, 2^40] (ONNX 1.12 takes a Reshape to [8e18] at its word and later
 * makes one proto per element of the result: found by fuzz_onnx as a 2 GB+ out-of-memory).
 */
std::string shapeOperandProblem(const StaticTensor& s)
{
    constexpr std::int64_t kMaxDim = std::int64_t {1} << 40;
    if (s.data.size() > kMaxRank)
        return tooManyDimensions(static_cast<double>(s.data.size()));
    for (const auto d : s.data)
        if (d < -1 || d > kMaxDim)
            return cat("has a shape operand with the dimension ", d, " (expected -1 to 2^40)");
    return {};
}

void writeStaticTensor(const StaticTensor& s, onnx::TensorProto& t)
{
    using T = onnx::TensorProto;
    if (s.type == T::INT64) {
        for (const auto v : s.data)
            t.add_int64_data(v);
    } else if (s.type == T::UINT64) {
        for (const auto v : s.data)
            t.add_uint64_data(static_cast<std::uint64_t>(v));
    } else {
        for (const auto v : s.data)
            t.add_int32_data(static_cast<std::int32_t>(v)); // int32, int16, int8, uint8, uint16, bool
    }
}

std::optional<std::int64_t> scalarOf(const StaticTensor* t)
{
    if (!t || t->data.size() != 1)
        return std::nullopt;
    return t->data.front();
}

/** Normalizes a possibly negative axis; nullopt when out of range. */
std::optional<std::size_t> axisOf(std::int64_t axis, std::size_t rank)
{
    if (axis < 0)
        axis += static_cast<std::int64_t>(rank);
    if (axis < 0 || axis >= static_cast<std::int64_t>(rank))
        return std::nullopt;
    return static_cast<std::size_t>(axis);
}

std::optional<StaticTensor> binaryStatic(const std::string& op, const StaticTensor& a, const StaticTensor& b)
{
    const bool aScalar = a.data.size() == 1;
    const bool bScalar = b.data.size() == 1;
    // An empty operand (a zero-sized dimension) is not folded: against a scalar it would be read at [0].
    if (a.data.empty() || b.data.empty() || (!aScalar && !bScalar && a.data.size() != b.data.size()))
        return std::nullopt;
    StaticTensor out;
    out.type = a.type;
    out.shape = a.shape.size() >= b.shape.size() ? a.shape : b.shape;
    if (aScalar && !bScalar)
        out.shape = b.shape;
    const std::size_t n = std::max(a.data.size(), b.data.size());
    const bool compare = op == "Equal" || op == "Less" || op == "Greater" || op == "LessOrEqual"
        || op == "GreaterOrEqual" || op == "And" || op == "Or";
    if (compare)
        out.type = onnx::TensorProto::BOOL;
    for (std::size_t i = 0; i < n; ++i) {
        const std::int64_t x = a.data[aScalar ? 0 : i];
        const std::int64_t y = b.data[bScalar ? 0 : i];
        std::int64_t r = 0;
        bool overflow = false; // a malformed model's arithmetic must not be undefined behaviour
        if (op == "Add")
            overflow = __builtin_add_overflow(x, y, &r);
        else if (op == "Sub")
            overflow = __builtin_sub_overflow(x, y, &r);
        else if (op == "Mul")
            overflow = __builtin_mul_overflow(x, y, &r);
        else if (op == "Div" || op == "Mod") {
            if (y == 0 || (y == -1 && x == std::numeric_limits<std::int64_t>::min()))
                return std::nullopt; // division by zero, or a quotient that does not fit
            r = op == "Div" ? x / y : x % y;
        } else if (op == "Max")
            r = std::max(x, y);
        else if (op == "Min")
            r = std::min(x, y);
        else if (op == "Equal")
            r = x == y;
        else if (op == "Less")
            r = x < y;
        else if (op == "Greater")
            r = x > y;
        else if (op == "LessOrEqual")
            r = x <= y;
        else if (op == "GreaterOrEqual")
            r = x >= y;
        else if (op == "And")
            r = (x != 0) && (y != 0);
        else if (op == "Or")
            r = (x != 0) || (y != 0);
        else
            return std::nullopt;
        if (overflow)
            return std::nullopt;
        out.data.push_back(r);
    }
    return out;
}

std::vector<std::int64_t> staticInts(const onnx::NodeProto& node, const std::vector<const StaticTensor*>& in,
                                     std::size_t index, std::string_view attr, bool& ok)
{
    if (index < in.size() && !node.input(static_cast<int>(index)).empty()) {
        if (!in[index]) {
            ok = false;
            return {};
        }
        return in[index]->data;
    }
    return intsAttr(node, attr);
}

/** The value of a node whose integer inputs are all known; nullopt when it is not a shape computation. */
std::optional<StaticTensor> evaluateStatic(const onnx::NodeProto& node, const std::vector<const StaticTensor*>& in,
                                           const std::unordered_map<std::string, Shape>& shapes)
{
    if (!defaultDomain(node.domain()))
        return std::nullopt;
    const std::string& op = node.op_type();
    const auto input = [&in](std::size_t i) -> const StaticTensor* { return i < in.size() ? in[i] : nullptr; };
    if (op == "Constant") {
        for (const auto& a : node.attribute()) {
            if (a.name() == "value" && a.has_t())
                return readStaticTensor(a.t());
            if (a.name() == "value_int")
                return StaticTensor {onnx::TensorProto::INT64, {}, {a.i()}};
            if (a.name() == "value_ints")
                return StaticTensor {onnx::TensorProto::INT64,
                                     {static_cast<std::int64_t>(a.ints_size())},
                                     {a.ints().begin(), a.ints().end()}};
        }
        return std::nullopt;
    }
    if (op == "Shape" || op == "Size") {
        const auto it = node.input_size() > 0 ? shapes.find(node.input(0)) : shapes.end();
        if (it == shapes.end())
            return std::nullopt;
        const Shape& dims = it->second;
        if (op == "Size")
            return StaticTensor {onnx::TensorProto::INT64, {}, {static_cast<std::int64_t>(elementCount(dims))}};
        const auto rank = static_cast<std::int64_t>(dims.size());
        std::int64_t start = intAttr(node, "start", 0);
        std::int64_t end = intAttr(node, "end", rank);
        start = std::clamp(start < 0 ? start + rank : start, std::int64_t {0}, rank);
        end = std::clamp(end < 0 ? end + rank : end, std::int64_t {0}, rank);
        StaticTensor s;
        s.data.assign(dims.begin() + start, dims.begin() + std::max(start, end));
        s.shape = {static_cast<std::int64_t>(s.data.size())};
        return s;
    }
    for (std::size_t i = 0; i < in.size(); ++i)
        if (!in[i] && !node.input(static_cast<int>(i)).empty())
            return std::nullopt;
    if (in.empty() || !in[0])
        return std::nullopt;
    const StaticTensor& x = *in[0];
    if (op == "Identity")
        return x;
    if (op == "Cast") {
        StaticTensor s = x;
        s.type = static_cast<int>(intAttr(node, "to", x.type));
        return s; // float casts keep integral values; only integer results are ever written back
    }
    if (op == "Reshape" || op == "Unsqueeze" || op == "Squeeze" || op == "Flatten") {
        StaticTensor s = x;
        if (op == "Reshape") {
            if (!input(1))
                return std::nullopt;
            s.shape = input(1)->data;
            for (std::size_t k = 0; k < s.shape.size(); ++k)
                if (s.shape[k] == 0 && k < x.shape.size())
                    s.shape[k] = x.shape[k];
            const auto known = std::count_if(s.shape.begin(), s.shape.end(), [](auto d) { return d >= 0; });
            if (known + 1 == static_cast<std::ptrdiff_t>(s.shape.size())) {
                std::int64_t rest = 1;
                for (const auto d : s.shape)
                    rest *= d >= 0 ? d : 1;
                for (auto& d : s.shape)
                    if (d < 0)
                        d = rest > 0 ? static_cast<std::int64_t>(x.data.size()) / rest : 0;
            }
        } else if (op == "Flatten") {
            s.shape = {1, static_cast<std::int64_t>(x.data.size())};
        } else {
            bool ok = true;
            const auto axes = staticInts(node, in, 1, "axes", ok);
            if (!ok)
                return std::nullopt;
            if (op == "Unsqueeze") {
                const std::size_t rank = x.shape.size() + axes.size();
                std::vector<bool> inserted(rank, false);
                for (const auto a : axes)
                    if (const auto k = axisOf(a, rank))
                        inserted[*k] = true;
                s.shape.clear();
                std::size_t next = 0;
                for (std::size_t k = 0; k < rank; ++k)
                    s.shape.push_back(inserted[k] || next >= x.shape.size() ? 1 : x.shape[next++]);
            } else {
                s.shape.clear();
                for (std::size_t k = 0; k < x.shape.size(); ++k) {
                    bool drop = axes.empty() && x.shape[k] == 1;
                    for (const auto a : axes)
                        drop = drop || axisOf(a, x.shape.size()) == k;
                    if (!drop)
                        s.shape.push_back(x.shape[k]);
                }
            }
        }
        if (elementCount(s.shape) != static_cast<double>(s.data.size()))
            return std::nullopt;
        return s;
    }
    if (op == "Gather") {
        const StaticTensor* idx = input(1);
        if (!idx || x.shape.size() > 1 || intAttr(node, "axis", 0) != 0)
            return std::nullopt;
        StaticTensor s;
        s.type = x.type;
        s.shape = idx->shape;
        for (auto i : idx->data) {
            if (i < 0)
                i += static_cast<std::int64_t>(x.data.size());
            if (i < 0 || i >= static_cast<std::int64_t>(x.data.size()))
                return std::nullopt;
            s.data.push_back(x.data[static_cast<std::size_t>(i)]);
        }
        return s;
    }
    if (op == "Concat") {
        StaticTensor s;
        s.type = x.type;
        for (const auto* t : in) {
            if (t->shape.size() > 1)
                return std::nullopt;
            s.data.insert(s.data.end(), t->data.begin(), t->data.end());
        }
        s.shape = {static_cast<std::int64_t>(s.data.size())};
        return s;
    }
    if (op == "Slice") {
        if (x.shape.size() != 1)
            return std::nullopt;
        bool ok = true;
        const auto starts = staticInts(node, in, 1, "starts", ok);
        const auto ends = staticInts(node, in, 2, "ends", ok);
        const auto steps = staticInts(node, in, 4, "steps", ok);
        if (!ok || starts.size() != 1 || ends.size() != 1)
            return std::nullopt;
        const auto n = static_cast<std::int64_t>(x.data.size());
        const std::int64_t step = steps.empty() ? 1 : steps.front();
        if (step != 1)
            return std::nullopt;
        // Clamp before adding: slice bounds are often INT64_MAX or INT64_MIN.
        const auto bound = [n](std::int64_t v) { return v < 0 ? std::max(v, -n) + n : std::min(v, n); };
        const std::int64_t b = bound(starts.front());
        const std::int64_t e = bound(ends.front());
        StaticTensor s;
        s.type = x.type;
        s.data.assign(x.data.begin() + b, x.data.begin() + std::max(b, e));
        s.shape = {static_cast<std::int64_t>(s.data.size())};
        return s;
    }
    if (op == "Neg" || op == "Abs" || op == "Not" || op == "Sign") {
        StaticTensor s = x;
        for (auto& v : s.data)
            v = op == "Neg" ? -v : op == "Abs" ? std::abs(v) : op == "Not" ? (v == 0) : (v > 0) - (v < 0);
        return s;
    }
    if (op == "Where") {
        const StaticTensor* a = input(1);
        const StaticTensor* b = input(2);
        if (!a || !b)
            return std::nullopt;
        const std::size_t n = std::max({x.data.size(), a->data.size(), b->data.size()});
        for (const auto* t : {&x, a, b})
            if (t->data.size() != 1 && t->data.size() != n)
                return std::nullopt;
        StaticTensor s;
        s.type = a->type;
        s.shape = x.data.size() == n ? x.shape : a->data.size() == n ? a->shape : b->shape;
        for (std::size_t i = 0; i < n; ++i) {
            const auto at = [i](const StaticTensor* t) { return t->data[t->data.size() == 1 ? 0 : i]; };
            s.data.push_back(at(&x) != 0 ? at(a) : at(b));
        }
        return s;
    }
    if (op == "ConstantOfShape") {
        const double count = elementCount(x.data);
        if (count > static_cast<double>(kMaxStaticElements) || count < 0)
            return std::nullopt;
        StaticTensor s;
        s.type = onnx::TensorProto::FLOAT; // the default fill is a float 0
        s.shape = x.data;
        std::int64_t fill = 0;
        for (const auto& a : node.attribute())
            if (a.name() == "value" && a.has_t()) {
                if (auto v = readStaticTensor(a.t()); v && v->data.size() == 1) {
                    fill = v->data.front();
                    s.type = v->type;
                } else {
                    return std::nullopt; // a float fill: a mask, not a shape
                }
            }
        s.data.assign(static_cast<std::size_t>(count), fill);
        return s;
    }
    if (op == "Range") {
        const auto start = scalarOf(input(0));
        const auto limit = scalarOf(input(1));
        const auto delta = scalarOf(input(2));
        if (!start || !limit || !delta || *delta == 0)
            return std::nullopt;
        // ceil((limit - start) / delta) in doubles: extreme bounds must not overflow
        const double steps
            = std::ceil((static_cast<double>(*limit) - static_cast<double>(*start)) / static_cast<double>(*delta));
        if (!(steps <= static_cast<double>(kMaxStaticElements)))
            return std::nullopt;
        const auto count = static_cast<std::int64_t>(std::max(0.0, steps));
        StaticTensor s;
        s.type = x.type;
        for (std::int64_t i = 0; i < count; ++i)
            s.data.push_back(*start + i * *delta);
        s.shape = {count};
        return s;
    }
    if (in.size() == 2 && in[1])
        return binaryStatic(op, x, *in[1]);
    return std::nullopt;
}

// --- what ONNX 1.12's shape inference may see -------------------------------------------------------------------

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
std::string inferenceHazard(const std::string& op, const std::string& domain, const onnx::InferenceContext& ctx)
{
    const std::size_t inputs = ctx.getNumInputs();
    const auto shapeOf = [&](std::size_t i) -> const onnx::TensorShapeProto* {
        const onnx::TypeProto* t = i < inputs ? ctx.getInputType(i) : nullptr;
        return t && t->has_tensor_type() && t->tensor_type().has_shape() ? &t->tensor_type().shape() : nullptr;
    };
    const auto rankOf = [&](std::size_t i) -> std::optional<int> {
        const auto* shape = shapeOf(i);
        return shape ? std::optional<int>(shape->dim_size()) : std::nullopt;
    };
    if (const int operand = shapeOperandIndex(op, domain); operand >= 0 && static_cast<std::size_t>(operand) < inputs) {
        if (const onnx::TensorProto* value = ctx.getInputData(static_cast<std::size_t>(operand))) {
            if (elementCount(*value) > static_cast<double>(kMaxRank))
                return tooManyDimensions(elementCount(*value));
            if (const auto values = readStaticTensor(*value))
                if (std::string why = shapeOperandProblem(*values); !why.empty())
                    return why;
        } else if (const auto* shape = shapeOf(static_cast<std::size_t>(operand)); shape && shape->dim_size() == 1
                   && shape->dim(0).has_dim_value()
                   && shape->dim(0).dim_value() > static_cast<std::int64_t>(kMaxRank)) {
            return tooManyDimensions(static_cast<double>(shape->dim(0).dim_value()));
        }
        return {};
    }
    if (!defaultDomain(domain))
        return {};
    const int weight = op == "Conv" || op == "ConvInteger" || op == "ConvTranspose" ? 1 : op == "QLinearConv" ? 3 : -1;
    const bool pool = op == "AveragePool" || op == "MaxPool" || op == "LpPool";
    if (op == "LayerNormalization") {
        if (const auto x = rankOf(0)) {
            const onnx::AttributeProto* axisAttr = ctx.getAttribute("axis");
            const std::int64_t axis = axisAttr ? axisAttr->i() : -1;
            if (*x < 1)
                return "has a rank-0 input; it normalizes over at least one axis";
            if (axis < -*x || axis >= *x)
                return cat("has axis ", axis, " for a rank-", *x, " input (expected ", -*x, " to ", *x - 1, ")");
        }
        return {};
    }
    if (weight < 0 && !pool)
        return {};
    if (weight > 0 && inputs <= static_cast<std::size_t>(weight))
        return cat("has no weight input (input ", weight, ")");
    const auto x = rankOf(0);
    const auto w = weight > 0 ? rankOf(static_cast<std::size_t>(weight)) : std::nullopt;
    if (x && *x < 3)
        return cat("has a rank-", *x, " input; it needs batch, channels and at least one spatial dimension");
    if (x && w && *x != *w)
        return cat("has a rank-", *x, " input but a rank-", *w, " weight");
    const int spatial = x ? *x - 2 : w ? *w - 2 : -1;
    for (const char* name : {"kernel_shape", "strides", "dilations", "output_padding", "output_shape", "pads"}) {
        const onnx::AttributeProto* a = ctx.getAttribute(name);
        if (!a)
            continue;
        const bool pads = std::string_view(name) == "pads";
        const int expected = pads ? 2 * spatial : spatial;
        if (spatial >= 0 && a->ints_size() != expected)
            return cat("has ", a->ints_size(), " '", name, "' values for ", spatial, " spatial dimensions (expected ",
                       expected, ")");
        const std::int64_t least = pads || std::string_view(name) == "output_padding" ? 0 : 1;
        for (const auto v : a->ints())
            if (v < least || v > static_cast<std::int64_t>(kMaxStaticElements))
                return cat("has '", name, "' value ", v, " (expected ", least, " to ", kMaxStaticElements, ")");
    }
    return {};
}

// --- the importer ------------------------------------------------------------------------------------------------

enum class ValueKind : std::uint8_t
{
    Undefined,
    Activation,
    Static,
    Param
};

struct Value
{
    std::string_view name; ///< owned by the model proto
    ValueKind kind = ValueKind::Undefined;
    int elemType = 0;
    bool shapeKnown = false;
    Shape shape;
    int producer = -1; ///< node index
    std::vector<int> roots; ///< Param: canonical initializer indices it views
    TensorId tensor = -1; ///< Activation: its tensor once created
    bool graphOutput = false;
};

struct Initializer
{
    const onnx::TensorProto* proto = nullptr;
    int canonical = -1; ///< itself, or the initializer holding the same tensor
    TensorId tensor = -1; ///< created when an op first reads it
};

enum class AttentionRole : std::uint8_t
{
    None,
    Score,
    Context
};

struct NodeInfo
{
    const onnx::NodeProto* proto = nullptr;
    OpTypeInfo info;
    std::vector<int> inputs; ///< value indices, -1 for omitted optional inputs
    std::vector<int> outputs;
    bool folded = false;
    int group = -1;
    int attention = -1;
    AttentionRole role = AttentionRole::None;
};

/** Nodes emitted as one op (a norm chain, MatMul + bias Add, LogSoftmax + NLL). */
struct Group
{
    OpKind kind = OpKind::Unknown;
    std::vector<int> nodes;
    int final = -1; ///< the node whose output is the group's
    int input = -1; ///< the activation the group reads (norms)
    std::vector<int> paramValues; ///< weight operands folded in (norm scale and shift, linear bias)
};

struct Attention
{
    int score = -1;
    int context = -1;
    std::string module; ///< "<attention module>.core", resolved when its first op is emitted
};

class Importer
{
public:
    /** `origin` names the model in messages; its stem becomes the graph's name. */
    Importer(std::string origin, const BuildOptions& options)
        : m_origin(std::move(origin))
        , m_options(options)
        , m_batch(options.batch > 0 ? options.batch : 1)
        , m_seq(options.seq_len > 0 ? options.seq_len : kDefaultSeqLen)
        , m_model(*google::protobuf::Arena::CreateMessage<onnx::ModelProto>(&m_arena))
    {
    }

    OnnxImport run(std::string_view bytes)
    {
        parseModel(bytes);
        checkGraphLocations(m_model.graph(), m_origin, 0);
        for (const auto& f : m_model.functions())
            for (const auto& node : f.node())
                for (const auto& a : node.attribute())
                    checkAttributeLocations(a, m_origin, 1);
        checkControlFlow();
        bindSymbolicDims();
        inferShapes();
        collectValues();
        mergeTiedInitializers();
        sortNodes();
        classifyValues();
        findNorms();
        findLinearBiases();
        findLosses();
        findAttention();
        emitAll();
        resolveEmptyModules();
        return {build(), std::move(m_report)};
    }

private:
    // --- reading -------------------------------------------------------------------------------------------

    void parseModel(std::string_view bytes)
    {
        const std::string notOnnx = cat(m_origin, ": not a valid ONNX model");
        const std::string hint = "is it a complete .onnx export (not truncated, not a Git LFS pointer)?";
        if (bytes.empty())
            throw InputError(cat(notOnnx, " (the file is empty)"), hint);
        if (bytes.size() > kMaxProtoBytes)
            throw InputError(tooLarge(m_origin, bytes.size()), kExternalDataHint);
        if (!m_model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
            throw InputError(cat(notOnnx, " (it does not parse as an ONNX protobuf)"), hint);
        if (m_model.ir_version() <= 0 || !m_model.has_graph())
            throw InputError(cat(notOnnx, " (", m_model.ir_version() <= 0 ? "no IR version" : "no graph", ")"), hint);
    }

    void checkControlFlow() const
    {
        int index = 0;
        for (const auto& node : m_model.graph().node()) {
            bool subgraph = false;
            for (const auto& a : node.attribute())
                subgraph = subgraph || a.has_g() || a.graphs_size() > 0;
            if (subgraph || opTypeInfo(node).category == Category::ControlFlow) {
                const std::string name = !node.name().empty() ? node.name()
                    : node.output_size() > 0                  ? node.output(0)
                                                              : cat("#", index);
                throw InputError(cat(m_origin, ": unsupported control-flow node '", name, "' (", node.op_type(), ")"),
                                 "the planner needs a static graph: export without data-dependent control flow (unroll "
                                 "loops, trace with fixed shapes) or load the model's HF config.json");
            }
            ++index;
        }
    }

    // --- symbolic dimensions and shape inference -----------------------------------------------------------

    std::optional<std::int64_t> dimByName(const std::string& name)
    {
        if (const auto it = m_report.symbolic_dims.find(name); it != m_report.symbolic_dims.end())
            return it->second;
        const std::string lower = toLower(name);
        std::optional<std::int64_t> value;
        if (lower.find("batch") != std::string::npos) {
            value = m_batch;
            m_boundBatch = true;
        } else if (lower.find("seq") != std::string::npos || lower.find("length") != std::string::npos
                   || lower.find("past") != std::string::npos) {
            value = m_seq;
            m_boundSeq = true;
        }
        if (value)
            m_report.symbolic_dims[name] = *value;
        return value;
    }

    void bindInputDims(onnx::ValueInfoProto& vi)
    {
        if (!vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape())
            return;
        auto* shape = vi.mutable_type()->mutable_tensor_type()->mutable_shape();
        const bool tokenIds = !isFloatType(vi.type().tensor_type().elem_type()) && shape->dim_size() == 2;
        for (int k = 0; k < shape->dim_size(); ++k) {
            auto* dim = shape->mutable_dim(k);
            if (dim->has_dim_value())
                continue;
            const std::string name = dim->has_dim_param() ? dim->dim_param() : cat(vi.name(), "[", k, "]");
            std::optional<std::int64_t> value = dimByName(name);
            if (!value) {
                // Unnamed (or oddly named) dims: the leading one is the batch, a token-id input's second the
                // sequence; anything else is taken as 1.
                if (k == 0) {
                    value = m_batch;
                    m_boundBatch = true;
                } else if (k == 1 && tokenIds) {
                    value = m_seq;
                    m_boundSeq = true;
                } else {
                    value = 1;
                    m_report.warnings.push_back(
                        cat("symbolic dimension '", name, "' of input '", vi.name(), "' bound to 1"));
                }
                m_report.symbolic_dims[name] = *value;
            }
            dim->set_dim_value(*value);
        }
    }

    /** Later dims with a name already bound take its value; the rest are left to inference. */
    void bindKnownDims(onnx::ValueInfoProto& vi)
    {
        if (!vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape())
            return;
        auto* shape = vi.mutable_type()->mutable_tensor_type()->mutable_shape();
        for (int k = 0; k < shape->dim_size(); ++k) {
            auto* dim = shape->mutable_dim(k);
            if (dim->has_dim_param())
                if (const auto value = dimByName(dim->dim_param()))
                    dim->set_dim_value(*value);
        }
    }

    void bindSymbolicDims()
    {
        auto* graph = m_model.mutable_graph();
        std::unordered_set<std::string_view> initializers;
        for (const auto& t : graph->initializer())
            initializers.insert(t.name());
        for (auto& vi : *graph->mutable_input())
            if (!initializers.count(vi.name()))
                bindInputDims(vi);
        for (auto& vi : *graph->mutable_output())
            bindKnownDims(vi);
        for (auto& vi : *graph->mutable_value_info())
            bindKnownDims(vi);

        // The micro-batch the graph describes: the bound values, or a fixed-shape model's own leading dims.
        m_graphBatch = m_boundBatch ? m_batch : 1;
        m_graphSeq = m_boundSeq ? m_seq : 1;
        for (const auto& vi : graph->input()) {
            if (initializers.count(vi.name()) || !vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape())
                continue;
            const auto& shape = vi.type().tensor_type().shape();
            if (!m_boundBatch && shape.dim_size() >= 1 && shape.dim(0).dim_value() > 0)
                m_graphBatch = shape.dim(0).dim_value();
            if (!m_boundSeq && shape.dim_size() >= 2 && shape.dim(1).dim_value() > 0
                && !isFloatType(vi.type().tensor_type().elem_type()))
                m_graphSeq = shape.dim(1).dim_value();
            break;
        }
        if (!m_boundSeq && m_options.seq_len > 0)
            m_report.warnings.push_back(cat("the model has no symbolic sequence dimension: seq_len ", m_options.seq_len,
                                            " is not applied (its shapes are fixed)"));
        if (!m_boundBatch && m_options.batch > 1)
            m_report.warnings.push_back(cat("the model has no symbolic batch dimension: its fixed batch of ",
                                            m_graphBatch, " is the micro-batch unit"));
    }

    /** One ONNX shape-inference pass; failures leave the shapes it did not reach unknown. */
    bool inferShapesOnce()
    {
        // error_mode 0: node-level failures (custom ops without a schema) leave those shapes unknown instead of
        // aborting. No data propagation: ONNX 1.12's crashes on an unknown op in the default domain (a null
        // schema), and the shape arithmetic it would follow is evaluated here instead (foldStaticOperands).
        try {
            onnx::shape_inference::InferShapes(m_model, &m_schemas, onnx::ShapeInferenceOptions(false, 0, false));
            return true;
        } catch (const onnx_guard::RefusedNode& refused) {
            throw InputError(cat(m_origin, ": ", describeNode(refused), " ", refused.why),
                             shapeOperandIndex(refused.op, {}) >= 0 ? kShapeOperandHint : kInvalidNodeHint);
        } catch (const std::exception& e) {
            m_inferenceError = firstLine(e.what());
            return false;
        }
    }

    /**
     * "node 'name' (Op)" for the node whose inference was refused. Its inference context does not name it, so it is
     * the first node of that op whose inputs are the values the context had: a declared or inferred value's type and
     * a constant's tensor are protos of the graph, found by address (an initializer's type is ONNX's own copy, but
     * its tensor is found). A node inside a function body matches none.
     */
    std::string describeNode(const onnx_guard::RefusedNode& refused) const
    {
        const auto& graph = m_model.graph();
        std::unordered_map<const void*, const std::string*> names;
        forEachDeclaredValue(graph, [&](const onnx::ValueInfoProto& vi) { names[&vi.type()] = &vi.name(); });
        for (const auto& t : graph.initializer())
            names[&t] = &t.name();
        for (const auto& node : graph.node())
            if (node.op_type() == "Constant" && node.output_size() == 1)
                for (const auto& a : node.attribute())
                    if (a.has_t())
                        names[&a.t()] = &node.output(0);
        int index = 0;
        for (const auto& node : graph.node()) {
            bool matches = node.op_type() == refused.op
                && static_cast<std::size_t>(node.input_size()) == refused.input_types.size();
            bool named = false;
            for (std::size_t i = 0; matches && i < refused.input_types.size(); ++i) {
                const void* proto = refused.input_data[i] ? static_cast<const void*>(refused.input_data[i])
                                                          : static_cast<const void*>(refused.input_types[i]);
                if (const auto it = names.find(proto); proto && it != names.end()) {
                    named = true;
                    matches = *it->second == node.input(static_cast<int>(i));
                }
            }
            if (matches && named)
                return cat("node '", escapeInvalidUtf8(!node.name().empty() ? node.name() : cat("#", index)), "' (",
                           refused.op, ")");
            ++index;
        }
        return cat("a ", refused.op, " node inside a function");
    }

    /**
     * Shape inference; when it leaves shapes unknown, the static shape arithmetic (Shape, Gather, Concat, Div,
     * Where, Equal, ConstantOfShape, Range, ...: torch's dynamic-axes exports are full of it) is evaluated here,
     * the results written as constants where nodes that read activations use them, and inference runs again
     * (a few passes at most, until nothing new is learnt).
     */
    void inferShapes()
    {
        auto* graph = m_model.mutable_graph();
        const google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> original = graph->value_info();
        bool ok = inferShapesOnce();
        // Each pass settles the shape arithmetic of one more block (block n's Shape nodes read block n-1's
        // Reshape outputs, known only after its shape operands were folded), so a stack of blocks needs about one
        // pass per block: go on while a pass learns something. Every pass replaces at least one operand by a
        // constant, so there are at most as many as there are node inputs.
        std::size_t inputs = 0;
        for (const auto& node : graph->node())
            inputs += static_cast<std::size_t>(node.input_size());
        for (std::size_t pass = 0; pass < inputs; ++pass) {
            if (everyOutputShaped() || foldStaticOperands(knownShapes()) == 0)
                break;
            *graph->mutable_value_info() = original;
            ok = inferShapesOnce();
        }
        if (!ok)
            m_report.warnings.push_back(cat("ONNX shape inference stopped (", m_inferenceError,
                                            "); the shapes it did not reach are estimated"));
    }

    std::unordered_map<std::string, Shape> knownShapes() const
    {
        std::unordered_map<std::string, Shape> shapes;
        const auto take = [&shapes](const onnx::ValueInfoProto& vi) {
            if (!completeShape(vi))
                return;
            Shape shape;
            for (const auto& d : vi.type().tensor_type().shape().dim())
                shape.push_back(d.dim_value());
            shapes[vi.name()] = std::move(shape);
        };
        const auto& graph = m_model.graph();
        forEachDeclaredValue(graph, take);
        for (const auto& t : graph.initializer())
            shapes[t.name()] = Shape(t.dims().begin(), t.dims().end());
        return shapes;
    }

    /** Evaluates static integer values node by node; returns how many node inputs it replaced by constants. */
    static bool completeShape(const onnx::ValueInfoProto& vi)
    {
        if (!vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape())
            return false;
        for (const auto& d : vi.type().tensor_type().shape().dim())
            if (!d.has_dim_value())
                return false;
        return true;
    }

    /** Whether inference left nothing to learn: every node output has a complete shape. */
    bool everyOutputShaped() const
    {
        const auto& graph = m_model.graph();
        std::unordered_set<std::string_view> shaped;
        shaped.reserve(static_cast<std::size_t>(graph.value_info_size() + graph.output_size()));
        for (const auto& vi : graph.value_info())
            if (completeShape(vi))
                shaped.insert(vi.name());
        for (const auto& vi : graph.output())
            if (completeShape(vi))
                shaped.insert(vi.name());
        for (const auto& node : graph.node())
            for (const auto& out : node.output())
                if (!out.empty() && !shaped.count(out))
                    return false;
        return true;
    }

    int foldStaticOperands(const std::unordered_map<std::string, Shape>& shapes)
    {
        auto* graph = m_model.mutable_graph();
        std::unordered_map<std::string, StaticTensor> values;
        std::unordered_set<std::string> constants; // initializers and Constant outputs: nothing to replace
        for (const auto& t : graph->initializer()) {
            constants.insert(t.name());
            if (auto v = readStaticTensor(t))
                values.emplace(t.name(), std::move(*v));
        }
        int replaced = 0;
        std::vector<onnx::TensorProto> added;
        for (auto& node : *graph->mutable_node()) {
            std::vector<const StaticTensor*> in;
            bool allKnown = true;
            for (const auto& name : node.input()) {
                const auto it = values.find(name);
                in.push_back(it == values.end() ? nullptr : &it->second);
                allKnown = allKnown && (name.empty() || it != values.end());
            }
            if (auto out = evaluateStatic(node, in, shapes); out && node.output_size() >= 1) {
                if (node.op_type() == "Constant")
                    constants.insert(node.output(0));
                values[node.output(0)] = std::move(*out);
                continue;
            }
            if (allKnown)
                continue;
            // A node that needs an activation: hand shape inference the static operands as constants.
            for (int i = 0; i < node.input_size(); ++i) {
                const std::string& name = node.input(i);
                const auto it = values.find(name);
                if (name.empty() || it == values.end() || constants.count(name) || !isIntegerType(it->second.type))
                    continue;
                // A shape operand's value is checked by the inference guard when the next pass reads it.
                onnx::TensorProto t;
                t.set_name(cat("shardscape::static_", m_staticCount++));
                t.set_data_type(it->second.type);
                for (const auto d : it->second.shape)
                    t.add_dims(d);
                writeStaticTensor(it->second, t);
                constants.insert(t.name());
                values.emplace(t.name(), it->second);
                node.set_input(i, t.name());
                added.push_back(std::move(t));
                ++replaced;
            }
        }
        for (auto& t : added)
            *graph->add_initializer() = std::move(t);
        return replaced;
    }

    // --- values --------------------------------------------------------------------------------------------

    /** `name` must be a string of the model proto (values keep views of it). */
    int valueIndex(const std::string& name)
    {
        const auto [it, inserted] = m_valueIndex.try_emplace(name, static_cast<int>(m_values.size()));
        if (inserted) {
            m_values.emplace_back();
            m_values.back().name = it->first;
        }
        return it->second;
    }

    int findValue(std::string_view name) const
    {
        const auto it = m_valueIndex.find(name);
        return it == m_valueIndex.end() ? -1 : it->second;
    }

    /** Copies a (possibly) inferred type: element type and the shape, symbolic dims bound or counted. */
    void setType(Value& v, const onnx::TypeProto& type)
    {
        if (!type.has_tensor_type())
            return;
        const auto& tt = type.tensor_type();
        if (tt.elem_type() != 0)
            v.elemType = tt.elem_type();
        if (!tt.has_shape() || v.shapeKnown)
            return;
        Shape shape;
        bool known = true;
        for (const auto& dim : tt.shape().dim()) {
            if (dim.has_dim_value()) {
                shape.push_back(dim.dim_value());
            } else if (dim.has_dim_param()) {
                if (const auto it = m_report.symbolic_dims.find(dim.dim_param()); it != m_report.symbolic_dims.end())
                    shape.push_back(it->second);
                else
                    known = false;
            } else {
                known = false;
            }
        }
        if (known) {
            v.shape = std::move(shape);
            v.shapeKnown = true;
        } else if (!v.shapeKnown) {
            v.shape = std::move(shape); // partial: filled in from the producer if it can be
        }
    }

    void collectValues()
    {
        const auto& graph = m_model.graph();
        m_report.nodes = graph.node_size();
        m_values.reserve(static_cast<std::size_t>(graph.node_size()) * 2
                         + static_cast<std::size_t>(graph.initializer_size()) + 16);
        m_valueIndex.reserve(m_values.capacity());

        m_inits.reserve(static_cast<std::size_t>(graph.initializer_size()));
        for (const auto& t : graph.initializer()) {
            const int vi = valueIndex(t.name());
            Value& v = m_values[static_cast<std::size_t>(vi)];
            const int index = static_cast<int>(m_inits.size());
            m_inits.push_back({&t, index, -1});
            v.elemType = t.data_type();
            v.shape.assign(t.dims().begin(), t.dims().end());
            v.shapeKnown = true;
            if (v.kind != ValueKind::Undefined) {
                // The same name twice: one tensor, however many times it is listed.
                m_inits.back().canonical = v.roots.empty() ? index : v.roots.front();
                ++m_report.tied_initializers_merged;
                continue;
            }
            if (isFloatType(t.data_type()) && elementCount(v.shape) >= 2) {
                v.kind = ValueKind::Param;
                v.roots = {index};
            } else {
                v.kind = ValueKind::Static;
            }
        }
        for (const auto& s : graph.sparse_initializer()) {
            const int vi = valueIndex(s.values().name());
            Value& v = m_values[static_cast<std::size_t>(vi)];
            if (v.kind != ValueKind::Undefined)
                continue;
            v.elemType = s.values().data_type();
            v.shape.assign(s.dims().begin(), s.dims().end());
            v.shapeKnown = true;
            v.kind = ValueKind::Static;
        }
        for (const auto& in : graph.input()) {
            const int vi = valueIndex(in.name());
            Value& v = m_values[static_cast<std::size_t>(vi)];
            if (v.kind == ValueKind::Undefined)
                v.kind = ValueKind::Activation;
            setType(v, in.type());
        }
        for (const auto& info : graph.value_info())
            setType(m_values[static_cast<std::size_t>(valueIndex(info.name()))], info.type());
        for (const auto& out : graph.output()) {
            Value& v = m_values[static_cast<std::size_t>(valueIndex(out.name()))];
            setType(v, out.type());
            v.graphOutput = true;
        }

        m_nodes.resize(static_cast<std::size_t>(graph.node_size()));
        for (int n = 0; n < graph.node_size(); ++n) {
            const auto& node = graph.node(n);
            NodeInfo& info = m_nodes[static_cast<std::size_t>(n)];
            info.proto = &node;
            info.info = opTypeInfo(node);
            for (const auto& out : node.output()) {
                if (out.empty()) {
                    info.outputs.push_back(-1);
                    continue;
                }
                const int vi = valueIndex(out);
                Value& v = m_values[static_cast<std::size_t>(vi)];
                if (v.producer >= 0 || v.kind != ValueKind::Undefined)
                    throw InputError(
                        cat(m_origin, ": value '", out, "' is defined twice (by node '", nodeName(n), "')"),
                        "every ONNX value must have one producer");
                v.producer = n;
                info.outputs.push_back(vi);
            }
        }
        for (int n = 0; n < graph.node_size(); ++n) {
            NodeInfo& info = m_nodes[static_cast<std::size_t>(n)];
            for (const auto& in : info.proto->input()) {
                if (in.empty()) {
                    info.inputs.push_back(-1);
                    continue;
                }
                const int vi = findValue(in);
                if (vi < 0
                    || (m_values[static_cast<std::size_t>(vi)].producer < 0
                        && m_values[static_cast<std::size_t>(vi)].kind == ValueKind::Undefined))
                    throw InputError(cat(m_origin, ": node '", nodeName(n), "' reads '", in,
                                         "', which no node, input or initializer defines"),
                                     "is the model complete? Subgraph-scoped names are not supported");
                info.inputs.push_back(vi);
            }
        }
        // Consumers of every value, in node order, as one flat array (100,000-node models: no small vectors).
        m_consumerStart.assign(m_values.size() + 1, 0);
        for (const auto& info : m_nodes)
            for (const int in : info.inputs)
                if (in >= 0)
                    ++m_consumerStart[static_cast<std::size_t>(in) + 1];
        for (std::size_t v = 0; v < m_values.size(); ++v)
            m_consumerStart[v + 1] += m_consumerStart[v];
        m_consumerList.resize(static_cast<std::size_t>(m_consumerStart.back()));
        std::vector<int> fill(m_consumerStart.begin(), m_consumerStart.end() - 1);
        for (int n = 0; n < static_cast<int>(m_nodes.size()); ++n)
            for (const int in : m_nodes[static_cast<std::size_t>(n)].inputs)
                if (in >= 0)
                    m_consumerList[static_cast<std::size_t>(fill[static_cast<std::size_t>(in)]++)] = n;
    }

    /** The nodes reading value v, in node order (a node reading it twice is listed twice). */
    std::span<const int> consumers(int v) const
    {
        const auto begin = static_cast<std::size_t>(m_consumerStart[static_cast<std::size_t>(v)]);
        const auto end = static_cast<std::size_t>(m_consumerStart[static_cast<std::size_t>(v) + 1]);
        return {m_consumerList.data() + begin, end - begin};
    }

    std::string nodeName(int n) const
    {
        const auto& node = m_model.graph().node(n);
        if (!node.name().empty())
            return node.name();
        return node.output_size() > 0 && !node.output(0).empty() ? cat(node.op_type(), " -> ", node.output(0))
                                                                 : cat(node.op_type(), " #", n);
    }

    // --- tied initializers -----------------------------------------------------------------------------------

    static std::string externalKey(const onnx::TensorProto& t)
    {
        std::string location, offset = "0", length;
        for (const auto& e : t.external_data()) {
            if (e.key() == "location")
                location = e.value();
            else if (e.key() == "offset")
                offset = e.value();
            else if (e.key() == "length")
                length = e.value();
        }
        return location.empty() ? std::string() : location + '\n' + offset + '\n' + length;
    }

    static bool transposedEqual(const onnx::TensorProto& a, const onnx::TensorProto& b)
    {
        const auto rows = static_cast<std::size_t>(a.dims(0));
        const auto cols = static_cast<std::size_t>(a.dims(1));
        const std::string& x = a.raw_data();
        const std::string& y = b.raw_data();
        if (rows * cols == 0 || x.size() != y.size() || x.size() % (rows * cols) != 0)
            return false;
        const std::size_t e = x.size() / (rows * cols);
        for (std::size_t i = 0; i < rows; ++i)
            for (std::size_t j = 0; j < cols; ++j)
                if (std::memcmp(x.data() + (i * cols + j) * e, y.data() + (j * rows + i) * e, e) != 0)
                    return false;
        return true;
    }

    void merge(int duplicate, int keep)
    {
        m_inits[static_cast<std::size_t>(duplicate)].canonical = keep;
        ++m_report.tied_initializers_merged;
    }

    /**
     * Initializers that hold one tensor twice count once: the same external bytes, identical raw data for
     * matrices (rank >= 2; equal 1-D vectors, like fresh norm weights, are equal by construction, not tied),
     * and a 2-D transposed copy of another (what constant folding makes of a tied LM head).
     */
    void mergeTiedInitializers()
    {
        std::unordered_map<std::string, int> byExternal;
        std::unordered_map<std::size_t, std::vector<int>> byData;
        std::map<std::tuple<int, std::int64_t, std::int64_t>, std::vector<int>> matrices;
        for (int i = 0; i < static_cast<int>(m_inits.size()); ++i) {
            const Initializer& init = m_inits[static_cast<std::size_t>(i)];
            const onnx::TensorProto& t = *init.proto;
            if (init.canonical != i || !isFloatType(t.data_type()) || t.dims_size() < 1)
                continue;
            if (const std::string key = externalKey(t); !key.empty()) {
                const auto [it, inserted]
                    = byExternal.try_emplace(std::to_string(t.data_type()) + '\n' + dimsKey(t) + '\n' + key, i);
                if (!inserted)
                    merge(i, it->second);
                continue;
            }
            if (t.raw_data().empty() || t.dims_size() < 2)
                continue;
            auto& candidates
                = byData[std::hash<std::string_view> {}(t.raw_data()) ^ std::hash<std::string> {}(dimsKey(t))];
            bool merged = false;
            for (const int other : candidates) {
                const auto& o = *m_inits[static_cast<std::size_t>(other)].proto;
                if (o.data_type() == t.data_type() && dimsKey(o) == dimsKey(t) && o.raw_data() == t.raw_data()) {
                    merge(i, other);
                    merged = true;
                    break;
                }
            }
            if (merged)
                continue;
            candidates.push_back(i);
            if (t.dims_size() == 2 && t.dims(0) != t.dims(1))
                matrices[{t.data_type(), std::min(t.dims(0), t.dims(1)), std::max(t.dims(0), t.dims(1))}].push_back(i);
        }
        for (auto& [key, list] : matrices) {
            if (list.size() < 2 || list.size() > 32)
                continue;
            for (std::size_t a = 0; a < list.size(); ++a)
                for (std::size_t b = a + 1; b < list.size(); ++b) {
                    auto& ia = m_inits[static_cast<std::size_t>(list[a])];
                    auto& ib = m_inits[static_cast<std::size_t>(list[b])];
                    if (ib.canonical != list[b] || ia.canonical != list[a] || ia.proto->dims(0) != ib.proto->dims(1))
                        continue;
                    if (transposedEqual(*ia.proto, *ib.proto))
                        merge(list[b], list[a]);
                }
        }
        // Point every weight value at its canonical initializer.
        for (auto& v : m_values)
            if (v.kind == ValueKind::Param)
                for (auto& r : v.roots)
                    r = canonical(r);
    }

    int canonical(int init) const
    {
        while (m_inits[static_cast<std::size_t>(init)].canonical != init)
            init = m_inits[static_cast<std::size_t>(init)].canonical;
        return init;
    }

    static std::string dimsKey(const onnx::TensorProto& t)
    {
        std::string key;
        for (const auto d : t.dims())
            key += std::to_string(d) + 'x';
        return key;
    }

    // --- order and classification --------------------------------------------------------------------------

    void sortNodes()
    {
        const std::size_t n = m_nodes.size();
        std::vector<int> pending(n, 0);
        for (std::size_t i = 0; i < n; ++i)
            for (const int in : m_nodes[i].inputs)
                if (in >= 0 && m_values[static_cast<std::size_t>(in)].producer >= 0)
                    ++pending[i];
        std::vector<int> ready;
        for (std::size_t i = n; i-- > 0;)
            if (pending[i] == 0)
                ready.push_back(static_cast<int>(i));
        m_order.reserve(n);
        while (!ready.empty()) {
            const int node = ready.back();
            ready.pop_back();
            m_order.push_back(node);
            // Consumers in file order, so files already sorted keep their order.
            std::vector<int> next;
            for (const int out : m_nodes[static_cast<std::size_t>(node)].outputs)
                if (out >= 0)
                    for (const int c : consumers(out))
                        if (--pending[static_cast<std::size_t>(c)] == 0)
                            next.push_back(c);
            std::sort(next.rbegin(), next.rend());
            ready.insert(ready.end(), next.begin(), next.end());
        }
        if (m_order.size() != n) {
            for (std::size_t i = 0; i < n; ++i)
                if (pending[i] > 0)
                    throw InputError(
                        cat(m_origin, ": the graph has a cycle through node '", nodeName(static_cast<int>(i)), "'"),
                        "ONNX graphs must be acyclic");
        }
        m_position.assign(n, 0);
        for (std::size_t i = 0; i < n; ++i)
            m_position[static_cast<std::size_t>(m_order[i])] = static_cast<int>(i);
    }

    /** Folds nodes that need no activation; the rest produce activations. */
    void classifyValues()
    {
        for (const int n : m_order) {
            NodeInfo& node = m_nodes[static_cast<std::size_t>(n)];
            bool anyActivation = false;
            std::vector<int> roots;
            for (const int in : node.inputs) {
                if (in < 0)
                    continue;
                const Value& v = m_values[static_cast<std::size_t>(in)];
                if (v.kind == ValueKind::Activation)
                    anyActivation = true;
                else if (v.kind == ValueKind::Param)
                    roots.insert(roots.end(), v.roots.begin(), v.roots.end());
            }
            const Category category = node.info.category;
            const bool embedding = category == Category::Gather && !node.inputs.empty() && node.inputs[0] >= 0
                && m_values[static_cast<std::size_t>(node.inputs[0])].kind == ValueKind::Param;
            node.folded = category == Category::ShapeOf || (!anyActivation && !embedding);
            if (node.folded) {
                ++m_report.folded_nodes;
                std::sort(roots.begin(), roots.end());
                roots.erase(std::unique(roots.begin(), roots.end()), roots.end());
                // Constants stay constants; anything computed from weights is a view of those weights.
                const bool param = category != Category::Source && category != Category::ShapeOf && !roots.empty();
                for (const int out : node.outputs) {
                    if (out < 0)
                        continue;
                    Value& v = m_values[static_cast<std::size_t>(out)];
                    v.kind = param ? ValueKind::Param : ValueKind::Static;
                    if (param) {
                        v.roots = roots;
                        if (!v.shapeKnown)
                            guessViewShape(node, v);
                    }
                }
            } else {
                for (const int out : node.outputs)
                    if (out >= 0)
                        m_values[static_cast<std::size_t>(out)].kind = ValueKind::Activation;
            }
        }
    }

    /** A weight view's shape when inference did not give it: a 2-D transpose swaps, anything else keeps. */
    void guessViewShape(const NodeInfo& node, Value& v)
    {
        const Value* source = nullptr;
        for (const int in : node.inputs)
            if (in >= 0 && m_values[static_cast<std::size_t>(in)].kind == ValueKind::Param)
                source = &m_values[static_cast<std::size_t>(in)];
        if (!source)
            return;
        v.shape = source->shape;
        if (node.proto->op_type() == "Transpose" && v.shape.size() == 2)
            std::swap(v.shape[0], v.shape[1]);
        v.shapeKnown = source->shapeKnown;
    }

    // --- pattern helpers -----------------------------------------------------------------------------------

    const Value& value(int v) const { return m_values[static_cast<std::size_t>(v)]; }
    NodeInfo& node(int n) { return m_nodes[static_cast<std::size_t>(n)]; }
    const NodeInfo& node(int n) const { return m_nodes[static_cast<std::size_t>(n)]; }
    bool isActivation(int v) const { return v >= 0 && value(v).kind == ValueKind::Activation; }
    bool isParam(int v) const { return v >= 0 && value(v).kind == ValueKind::Param; }
    bool isStatic(int v) const { return v >= 0 && value(v).kind == ValueKind::Static; }

    bool is(int n, std::string_view type) const
    {
        return n >= 0 && defaultDomain(node(n).proto->domain()) && node(n).proto->op_type() == type;
    }

    int out0(int n) const { return node(n).outputs.empty() ? -1 : node(n).outputs[0]; }

    int input(int n, std::size_t i) const { return i < node(n).inputs.size() ? node(n).inputs[i] : -1; }

    /** Consumers that emit ops (a Shape node reading a value needs only its shape). */
    std::vector<int> liveConsumers(int v) const
    {
        std::vector<int> out;
        if (v < 0)
            return out;
        for (const int c : consumers(v))
            if (!node(c).folded && (out.empty() || out.back() != c))
                out.push_back(c);
        return out;
    }

    /** The one live consumer of v that is still free for a pattern, or -1. */
    int single(int v) const
    {
        const auto live = liveConsumers(v);
        if (live.size() != 1 || isGraphOutput(v))
            return -1;
        const int c = live.front();
        return node(c).group < 0 && node(c).attention < 0 ? c : -1;
    }

    bool isGraphOutput(int v) const { return value(v).graphOutput; }

    /** The other operand of a binary node, given one of them. */
    int other(int n, int v) const
    {
        const int a = input(n, 0);
        const int b = input(n, 1);
        return a == v ? b : b == v ? a : -1;
    }

    bool isSquareOf(int n, int v) const
    {
        if (is(n, "Pow"))
            return input(n, 0) == v && isStatic(input(n, 1));
        return is(n, "Mul") && input(n, 0) == v && input(n, 1) == v;
    }

    bool groupIsClosed(const Group& g) const
    {
        std::unordered_set<int> members(g.nodes.begin(), g.nodes.end());
        const int last = lastInOrder(g.nodes);
        for (const int n : g.nodes) {
            if (n == last)
                continue;
            for (const int out : node(n).outputs)
                if (out >= 0) {
                    if (isGraphOutput(out))
                        return false;
                    for (const int c : liveConsumers(out))
                        if (!members.count(c))
                            return false;
                }
        }
        return true;
    }

    int lastInOrder(const std::vector<int>& nodes) const
    {
        return *std::max_element(nodes.begin(), nodes.end(), [this](int a, int b) {
            return m_position[static_cast<std::size_t>(a)] < m_position[static_cast<std::size_t>(b)];
        });
    }

    void addGroup(Group g)
    {
        g.final = lastInOrder(g.nodes);
        const int id = static_cast<int>(m_groups.size());
        for (const int n : g.nodes)
            node(n).group = id;
        m_groups.push_back(std::move(g));
    }

    // --- patterns ------------------------------------------------------------------------------------------

    /** Decomposed LayerNorm (mean, subtract, square, mean, add eps, sqrt, divide) and RMSNorm chains. */
    void findNorms()
    {
        for (const int n : m_order)
            if (is(n, "ReduceMean") && !node(n).folded && node(n).group < 0)
                if (auto g = matchNorm(n)) {
                    addGroup(std::move(*g));
                    ++m_report.norms_fused;
                }
    }

    std::optional<Group> matchNorm(int reduce) const
    {
        const int in = input(reduce, 0);
        if (!isActivation(in))
            return std::nullopt;
        Group g;
        g.kind = OpKind::Norm;
        int center = -1;
        int variance = -1;
        const int sub = single(out0(reduce));
        if (is(sub, "Sub") && input(sub, 0) == in && input(sub, 1) == out0(reduce)) {
            // LayerNorm: the centred input is squared, averaged and divided by the root of that.
            g.input = in;
            center = out0(sub);
            int square = -1;
            for (const int c : liveConsumers(center))
                if (isSquareOf(c, center))
                    square = c;
            const int second = square >= 0 ? single(out0(square)) : -1;
            if (!is(second, "ReduceMean"))
                return std::nullopt;
            g.nodes = {reduce, sub, square, second};
            variance = out0(second);
        } else {
            const int square = value(in).producer;
            if (square < 0 || node(square).group >= 0 || node(square).folded || liveConsumers(in).size() != 1)
                return std::nullopt;
            const int x = input(square, 0);
            if (!isSquareOf(square, x) || !isActivation(x))
                return std::nullopt;
            g.input = center = x;
            g.nodes = {square, reduce};
            variance = out0(reduce);
        }

        // [+ eps] -> sqrt -> (x / root) or (1 / root, x * that), with casts anywhere.
        int v = variance;
        int normalized = -1;
        bool root = false;
        for (int step = 0; step < 8 && normalized < 0; ++step) {
            const int n = single(v);
            if (n < 0)
                return std::nullopt;
            const bool upstream = (is(n, "Cast") || is(n, "Sqrt") || is(n, "Reciprocal"))
                || (is(n, "Add") && isStatic(other(n, v)))
                || (is(n, "Div") && input(n, 1) == v && isStatic(input(n, 0)));
            if (upstream) {
                root = root || is(n, "Sqrt") || is(n, "Reciprocal");
                g.nodes.push_back(n);
                v = out0(n);
                continue;
            }
            if ((is(n, "Div") && input(n, 0) == center && input(n, 1) == v)
                || (is(n, "Mul") && other(n, v) == center)) {
                normalized = n;
                g.nodes.push_back(n);
            } else {
                return std::nullopt;
            }
        }
        if (normalized < 0 || !root)
            return std::nullopt;

        // Optional cast back, scale and shift by weights.
        v = out0(normalized);
        bool scaled = false;
        bool shifted = false;
        for (int step = 0; step < 4; ++step) {
            const int n = single(v);
            if (n < 0)
                break;
            if (is(n, "Cast")) {
                g.nodes.push_back(n);
            } else if (!scaled && !shifted && is(n, "Mul") && isParam(other(n, v))) {
                g.paramValues.push_back(other(n, v));
                g.nodes.push_back(n);
                scaled = true;
            } else if (!shifted && is(n, "Add") && isParam(other(n, v))) {
                g.paramValues.push_back(other(n, v));
                g.nodes.push_back(n);
                shifted = true;
            } else {
                break;
            }
            v = out0(n);
        }
        if (!groupIsClosed(g))
            return std::nullopt;
        return g;
    }

    /** MatMul with a weight followed by an Add of a bias vector: one Linear, as the builder's. */
    void findLinearBiases()
    {
        for (const int n : m_order) {
            const NodeInfo& mm = node(n);
            if (mm.folded || mm.group >= 0 || mm.info.category != Category::MatMul || mm.inputs.size() != 2)
                continue;
            const int a = mm.inputs[0];
            const int w = mm.inputs[1];
            if (!isActivation(a) || !isParam(w))
                continue;
            const int add = single(out0(n));
            if (!is(add, "Add"))
                continue;
            const int bias = other(add, out0(n));
            const Shape& out = value(out0(n)).shape;
            if (!isParam(bias) || !value(bias).shapeKnown || value(bias).shape.empty() || out.empty()
                || elementCount(value(bias).shape) != static_cast<double>(out.back()))
                continue;
            Group g;
            g.kind = OpKind::Linear;
            g.nodes = {n, add};
            g.paramValues = {bias};
            addGroup(std::move(g));
        }
    }

    /** LogSoftmax feeding NegativeLogLikelihoodLoss: a cross-entropy loss. */
    void findLosses()
    {
        for (const int n : m_order) {
            if (!is(n, "LogSoftmax") || node(n).folded || node(n).group >= 0)
                continue;
            const int nll = single(out0(n));
            if (!is(nll, "NegativeLogLikelihoodLoss") || input(nll, 0) != out0(n))
                continue;
            Group g;
            g.kind = OpKind::Loss;
            g.nodes = {n, nll};
            g.input = input(n, 0);
            addGroup(std::move(g));
        }
    }

    bool isActivationMatMul(int n) const
    {
        return n >= 0 && !node(n).folded && node(n).group < 0 && node(n).attention < 0
            && node(n).info.category == Category::MatMul && isActivation(input(n, 0)) && isActivation(input(n, 1));
    }

    /** Walks back from the softmax input through scale / mask / cast nodes to the score MatMul. */
    int findScore(int v, int depth, std::vector<int>& chain) const
    {
        const int p = value(v).producer;
        if (p < 0 || depth > 6 || single(v) < 0)
            return -1;
        if (isActivationMatMul(p))
            return p;
        const bool scaleOrMask
            = is(p, "Div") || is(p, "Mul") || is(p, "Add") || is(p, "Sub") || is(p, "Where") || is(p, "Cast");
        if (!scaleOrMask || node(p).folded || node(p).group >= 0 || node(p).attention >= 0)
            return -1;
        chain.push_back(p);
        for (const int in : node(p).inputs) {
            if (!isActivation(in))
                continue;
            const std::size_t mark = chain.size();
            if (const int score = findScore(in, depth + 1, chain); score >= 0)
                return score;
            chain.resize(mark);
        }
        chain.pop_back();
        return -1;
    }

    /** MatMul -> [scale, mask, cast] -> Softmax -> [cast, dropout] -> MatMul: an unfused attention core. */
    void findAttention()
    {
        for (const int s : m_order) {
            if (!is(s, "Softmax") || node(s).folded || node(s).group >= 0 || !isActivation(input(s, 0)))
                continue;
            std::vector<int> members;
            const int score = findScore(input(s, 0), 0, members);
            if (score < 0)
                continue;
            int v = out0(s);
            int context = -1;
            std::vector<int> after;
            for (int step = 0; step < 4 && context < 0; ++step) {
                const int c = single(v);
                if (c < 0)
                    break;
                if (is(c, "Cast") || is(c, "Dropout")) {
                    after.push_back(c);
                    v = out0(c);
                } else if (isActivationMatMul(c) && input(c, 0) == v) {
                    context = c;
                } else {
                    break;
                }
            }
            if (context < 0)
                continue;
            const int id = static_cast<int>(m_attention.size());
            m_attention.push_back({score, context, {}});
            members.push_back(s);
            members.insert(members.end(), after.begin(), after.end());
            members.push_back(score);
            members.push_back(context);
            // q and k scaled separately before the product (torch 2's scaled_dot_product_attention export).
            for (const int in : node(score).inputs) {
                const int p = value(in).producer;
                if ((is(p, "Mul") || is(p, "Div")) && !node(p).folded && node(p).group < 0 && node(p).attention < 0
                    && single(in) == score && (isStatic(input(p, 1)) || isStatic(input(p, 0))))
                    members.push_back(p);
            }
            for (const int m : members)
                node(m).attention = id;
            node(score).role = AttentionRole::Score;
            node(context).role = AttentionRole::Context;
            ++m_report.attention_cores;
        }
    }

    // --- emission ------------------------------------------------------------------------------------------

    double bytesOf(int v) const
    {
        const Value& val = value(v);
        return elementCount(val.shape) * dtypeBytes(mapDType(val.elemType, m_options.dtype));
    }

    double elementsOf(int v) const { return v >= 0 ? elementCount(value(v).shape) : 0; }

    TensorId newTensor(std::string name, Shape shape, DType dtype, bool isParam)
    {
        for (auto& d : shape)
            if (d < 1) {
                ++m_zeroDims;
                d = 1;
            }
        const double elements = elementCount(shape);
        if (elements > kMaxTensorElements)
            throw InputError(cat(m_origin, ": tensor '", name, "' would have ", elements, " elements"),
                             "bind smaller symbolic dimensions (batch, sequence)");
        Tensor t;
        t.name = std::move(name);
        t.shape = std::move(shape);
        t.dtype = dtype;
        t.is_param = isParam;
        m_tensors.push_back(std::move(t));
        return static_cast<TensorId>(m_tensors.size() - 1);
    }

    /** The tensor of an activation value, created on first use (graph inputs, node outputs). */
    TensorId activationTensor(int v)
    {
        Value& val = m_values[static_cast<std::size_t>(v)];
        if (val.tensor < 0) {
            if (!val.shapeKnown) {
                ++m_report.unknown_shapes;
                val.shape.clear();
                val.shapeKnown = true;
            }
            val.tensor = newTensor(std::string(val.name), val.shape, mapDType(val.elemType, m_options.dtype), false);
        }
        return val.tensor;
    }

    TensorId paramTensor(int init)
    {
        Initializer& i = m_inits[static_cast<std::size_t>(canonical(init))];
        if (i.tensor < 0)
            i.tensor = newTensor(i.proto->name(), Shape(i.proto->dims().begin(), i.proto->dims().end()),
                                 mapDType(i.proto->data_type(), m_options.dtype), true);
        return i.tensor;
    }

    void addParams(Op& op, int v)
    {
        if (!isParam(v))
            return;
        for (const int r : value(v).roots) {
            const TensorId t = paramTensor(r);
            if (std::find(op.params.begin(), op.params.end(), t) == op.params.end())
                op.params.push_back(t);
        }
    }

    std::string uniqueOpName(std::string name)
    {
        if (name.empty())
            name = "op";
        if (m_opNames.insert(name).second)
            return name;
        for (int k = 2;; ++k) {
            std::string candidate = cat(name, "#", k);
            if (m_opNames.insert(candidate).second)
                return candidate;
        }
    }

    /**
     * numpy.matmul's result shape: a 1-D operand gains a dimension (a leading 1 for the left, a trailing 1 for the
     * right) that is dropped again from the result; the batch dimensions broadcast. Both operands have rank >= 1.
     */
    static Shape matMulShape(const Shape& a, const Shape& b)
    {
        const Shape left = a.size() == 1 ? Shape {1, a[0]} : a;
        const Shape right = b.size() == 1 ? Shape {b[0], 1} : b;
        const std::size_t batch = std::max(left.size(), right.size()) - 2;
        Shape out(batch, 1);
        for (const Shape* operand : {&left, &right})
            for (std::size_t k = 0; k + 2 < operand->size(); ++k) {
                auto& d = out[batch - (operand->size() - 2) + k];
                d = std::max(d, (*operand)[k]);
            }
        if (a.size() > 1)
            out.push_back(left[left.size() - 2]);
        if (b.size() > 1)
            out.push_back(right.back());
        return out;
    }

    /** Fills an output's shape from its inputs when inference did not (elementwise broadcast, matmul, ...). */
    void estimateOutputShape(int n, int out)
    {
        Value& v = m_values[static_cast<std::size_t>(out)];
        if (v.shapeKnown)
            return;
        const NodeInfo& nd = node(n);
        std::vector<const Shape*> ins;
        for (const int in : nd.inputs)
            if (in >= 0 && value(in).shapeKnown && value(in).kind != ValueKind::Undefined)
                ins.push_back(&value(in).shape);
        if (v.elemType == 0)
            for (const int in : nd.inputs)
                if (in >= 0 && value(in).elemType != 0) {
                    v.elemType = value(in).elemType;
                    break;
                }
        std::optional<Shape> shape;
        const Category c = nd.info.category;
        // The two operands themselves (ins skips unknown inputs, so its first two need not be inputs 0 and 1).
        const auto operand = [&](std::size_t k) -> const Shape* {
            if (nd.inputs.size() <= k || nd.inputs[k] < 0)
                return nullptr;
            const Value& in = value(nd.inputs[k]);
            return in.shapeKnown && in.kind != ValueKind::Undefined ? &in.shape : nullptr;
        };
        const Shape* a = operand(0);
        const Shape* b = operand(1);
        if (c == Category::MatMul && a && b && !a->empty() && !b->empty()) {
            shape = matMulShape(*a, *b);
        } else if (c == Category::Gemm && a && b && a->size() == 2 && b->size() == 2) {
            const bool ta = intAttr(*nd.proto, "transA", 0) != 0;
            const bool tb = intAttr(*nd.proto, "transB", 0) != 0;
            shape = Shape {ta ? (*a)[1] : (*a)[0], tb ? (*b)[0] : (*b)[1]};
        } else if (c == Category::Attention && !ins.empty()) {
            Shape s = *ins[0];
            if (nd.proto->op_type() == "Attention" && nd.proto->domain() == "com.microsoft" && ins.size() >= 2
                && ins[1]->size() == 2 && !s.empty()) {
                const auto sizes = intsAttr(*nd.proto, "qkv_hidden_sizes");
                s.back() = sizes.size() == 3 ? sizes[2] : (*ins[1])[1] / 3;
            }
            shape = s;
        } else if (c == Category::Elementwise && !ins.empty()) {
            Shape s;
            for (const Shape* in : ins) {
                if (in->size() > s.size())
                    s.insert(s.begin(), in->size() - s.size(), 1);
                for (std::size_t k = 0; k < in->size(); ++k) {
                    auto& d = s[s.size() - in->size() + k];
                    d = std::max(d, (*in)[k]);
                }
            }
            shape = s;
        }
        if (!shape && nd.proto->op_type() == "Transpose" && !ins.empty()) {
            const auto perm = intsAttr(*nd.proto, "perm");
            Shape s(ins[0]->rbegin(), ins[0]->rend());
            if (perm.size() == ins[0]->size()) {
                for (std::size_t k = 0; k < perm.size(); ++k)
                    if (perm[k] >= 0 && static_cast<std::size_t>(perm[k]) < ins[0]->size())
                        s[k] = (*ins[0])[static_cast<std::size_t>(perm[k])];
            }
            shape = s;
        }
        if (!shape && !ins.empty()
            && (c == Category::Norm || c == Category::Softmax || c == Category::Dropout || c == Category::Unknown
                || nd.proto->op_type() == "Identity" || nd.proto->op_type() == "Cast"))
            shape = *ins[0];
        if (shape) {
            v.shape = std::move(*shape);
            v.shapeKnown = true;
            ++m_report.estimated_shapes;
        }
    }

    /** An op for node n with its activation inputs, outputs, weights and default traffic. */
    Op baseOp(int n, OpKind kind, std::string name = {})
    {
        const NodeInfo& nd = node(n);
        Op op;
        op.name = uniqueOpName(name.empty()
                                   ? (nd.proto->name().empty() ? cat(nd.proto->op_type(), "_", n) : nd.proto->name())
                                   : std::move(name));
        op.kind = kind;
        for (const int in : nd.inputs) {
            if (in < 0)
                continue;
            if (isActivation(in)) {
                const TensorId t = activationTensor(in);
                if (std::find(op.inputs.begin(), op.inputs.end(), t) == op.inputs.end()) {
                    op.inputs.push_back(t);
                    op.bytes_read += bytesOf(in);
                }
            } else if (isParam(in)) {
                addParams(op, in);
                op.bytes_read += bytesOf(in);
            } else if (isStatic(in) && value(in).shapeKnown) {
                op.bytes_read += bytesOf(in); // masks, rotary tables: read like any operand
            }
        }
        for (const int out : nd.outputs) {
            if (out < 0)
                continue;
            estimateOutputShape(n, out);
            op.outputs.push_back(activationTensor(out));
            op.bytes_written += bytesOf(out);
        }
        return op;
    }

    void emitAll()
    {
        m_ops.reserve(m_nodes.size());
        for (const auto& in : m_model.graph().input()) {
            const int v = findValue(in.name());
            if (v >= 0 && isActivation(v))
                activationTensor(v);
        }
        for (const int n : m_order) {
            const NodeInfo& nd = node(n);
            if (nd.folded)
                continue;
            if (nd.group >= 0) {
                if (m_groups[static_cast<std::size_t>(nd.group)].final == n)
                    emitGroup(m_groups[static_cast<std::size_t>(nd.group)]);
                continue;
            }
            emitNode(n);
        }
        if (m_zeroDims > 0)
            m_report.warnings.push_back(cat(m_zeroDims, " tensor dimensions of size 0 or less counted as 1"));
        if (m_report.unknown_shapes > 0)
            m_report.warnings.push_back(cat(m_report.unknown_shapes,
                                            " values have no known shape (counted as one element): their ops' "
                                            "costs are underestimated"));
        for (const auto& [type, count] : m_report.unknown_op_types)
            m_report.warnings.push_back(cat("unknown op type '", type, "' (", count, count == 1 ? " node" : " nodes",
                                            ") kept as a memory-bound op"));
    }

    /** Adds the op with its module: scoped name, else a weight's name, else the latest producer's. */
    void commit(Op op, int n, std::string module = {})
    {
        if (module.empty())
            module = moduleFor(op, n);
        if (node(n).attention >= 0)
            module = attentionModule(node(n).attention, module);
        op.module = module;
        const auto id = static_cast<OpId>(m_ops.size());
        for (const auto t : op.outputs)
            if (static_cast<std::size_t>(t) >= m_producerOp.size())
                m_producerOp.resize(static_cast<std::size_t>(t) + 1, -1);
        for (const auto t : op.outputs)
            m_producerOp[static_cast<std::size_t>(t)] = id;
        m_ops.push_back(std::move(op));
    }

    std::string moduleFor(const Op& op, int n) const
    {
        if (std::string scoped = scopedModule(node(n).proto->name()); !scoped.empty())
            return scoped;
        for (const auto p : op.params)
            if (std::string m = weightModule(m_tensors[static_cast<std::size_t>(p)].name); !m.empty())
                return m;
        return latestProducerModule(op);
    }

    std::string latestProducerModule(const Op& op) const
    {
        OpId latest = -1;
        for (const auto t : op.inputs)
            if (static_cast<std::size_t>(t) < m_producerOp.size())
                if (const OpId p = m_producerOp[static_cast<std::size_t>(t)];
                    p > latest && !m_ops[static_cast<std::size_t>(p)].module.empty())
                    latest = p;
        return latest >= 0 ? m_ops[static_cast<std::size_t>(latest)].module : std::string();
    }

    std::string moduleOfValue(int v) const
    {
        const TensorId t = value(v).tensor;
        if (t < 0 || static_cast<std::size_t>(t) >= m_producerOp.size()
            || m_producerOp[static_cast<std::size_t>(t)] < 0)
            return {};
        return m_ops[static_cast<std::size_t>(m_producerOp[static_cast<std::size_t>(t)])].module;
    }

    /** "<attention module>.core": the score MatMul's scope, or the common module of q's and k's producers. */
    std::string attentionModule(int a, const std::string& fallback)
    {
        Attention& att = m_attention[static_cast<std::size_t>(a)];
        if (!att.module.empty())
            return att.module;
        std::string base = scopedModule(node(att.score).proto->name());
        if (base.empty()) {
            std::vector<std::string> modules;
            for (int in : node(att.score).inputs) {
                // Step over a pre-scaling node that is part of the core.
                const int p = value(in).producer;
                if (p >= 0 && node(p).attention == a)
                    for (const int pin : node(p).inputs)
                        if (isActivation(pin))
                            in = pin;
                if (isActivation(in))
                    modules.push_back(moduleOfValue(in));
            }
            if (modules.size() == 2 && !modules[0].empty() && !modules[1].empty()) {
                base = commonModule(modules[0], modules[1]);
                if (modules[0] == modules[1]) // one fused projection (GPT-2's c_attn): its parent
                    base = parentModule(base);
            }
            if (base.empty())
                base = !modules.empty() && !modules[0].empty() ? modules[0] : fallback;
        }
        att.module = base.empty() ? "attention.core" : base + ".core";
        return att.module;
    }

    void emitGroup(const Group& g)
    {
        const int last = g.final;
        const std::string scoped = scopedModule(node(last).proto->name());
        Op op;
        if (g.kind == OpKind::Norm) {
            const int x = g.input;
            op.kind = OpKind::Norm;
            op.inputs = {activationTensor(x)};
            for (const int p : g.paramValues)
                addParams(op, p);
            estimateOutputShape(last, out0(last));
            op.outputs = {activationTensor(out0(last))};
            op.saved = op.inputs;
            const double n = elementsOf(x);
            op.flops_fwd = kNormFlops * n;
            op.flops_bwd_input = kBackwardFactor * kNormFlops * n;
            op.flops_bwd_weight = op.params.empty() ? 0 : kNormWeightGradFlops * n;
            op.bytes_read = bytesOf(x);
            for (const int p : g.paramValues)
                op.bytes_read += bytesOf(p);
            op.bytes_written = bytesOf(out0(last));
        } else if (g.kind == OpKind::Linear) {
            const int mm = g.nodes.front();
            op = linearOp(mm, out0(last));
            for (const int p : g.paramValues) {
                addParams(op, p);
                op.bytes_read += bytesOf(p);
            }
            const double bias = elementsOf(out0(last));
            op.flops_fwd += bias;
            op.flops_bwd_weight += bias;
        } else {
            // LogSoftmax + NegativeLogLikelihoodLoss: the logits and the targets in, the loss out.
            op.kind = OpKind::Loss;
            op.name = uniqueOpName(node(last).proto->name().empty() ? cat("loss_", last) : node(last).proto->name());
            op.inputs = {activationTensor(g.input)};
            op.bytes_read = bytesOf(g.input);
            for (std::size_t i = 1; i < node(last).inputs.size(); ++i)
                if (const int in = node(last).inputs[i]; isActivation(in)) {
                    op.inputs.push_back(activationTensor(in));
                    op.bytes_read += bytesOf(in);
                }
            for (const int out : node(last).outputs)
                if (out >= 0) {
                    estimateOutputShape(last, out);
                    op.outputs.push_back(activationTensor(out));
                    op.bytes_written += bytesOf(out);
                }
            lossCosts(op, g.input);
        }
        const std::string module = !scoped.empty() ? scoped : moduleFor(op, last);
        if (op.name.empty()) // a norm chain: named after its module, as the builder names its norms
            op.name = uniqueOpName(!module.empty() ? module : cat(opKindName(g.kind), "_", g.nodes.front()));
        commit(std::move(op), last, module);
    }

    /** A MatMul / Gemm with a weight; `out` is the value it writes (the bias Add's when fused). */
    Op linearOp(int n, int out)
    {
        const NodeInfo& nd = node(n);
        Op op;
        op.name = uniqueOpName(nd.proto->name().empty() ? cat(nd.proto->op_type(), "_", n) : nd.proto->name());
        op.kind = OpKind::Linear;
        int act = -1;
        for (const int in : nd.inputs) {
            if (isActivation(in) && act < 0) {
                act = in;
                op.inputs.push_back(activationTensor(in));
                op.bytes_read += bytesOf(in);
            } else if (isParam(in)) {
                addParams(op, in);
                op.bytes_read += bytesOf(in);
            }
        }
        estimateOutputShape(n, out0(n));
        if (out != out0(n))
            estimateOutputShape(value(out).producer, out);
        op.outputs = {activationTensor(out)};
        op.bytes_written = bytesOf(out);
        op.saved = op.inputs;
        const double matmul = matmulFlops(n, out0(n));
        double bias = 0;
        if (nd.info.category == Category::Gemm && isParam(input(n, 2)))
            bias = elementsOf(out0(n));
        op.flops_fwd = matmul + bias;
        op.flops_bwd_input = matmul;
        op.flops_bwd_weight = matmul + bias;
        return op;
    }

    /** 2 x output elements x the contracted dimension. */
    double matmulFlops(int n, int out) const
    {
        const NodeInfo& nd = node(n);
        const int a = input(n, 0);
        double k = 1;
        if (a >= 0 && !value(a).shape.empty()) {
            const Shape& s = value(a).shape;
            if (nd.info.category == Category::Gemm)
                k = static_cast<double>(intAttr(*nd.proto, "transA", 0) != 0 ? s.front() : s.back());
            else
                k = static_cast<double>(s.back());
        }
        return 2 * elementsOf(out) * k;
    }

    void lossCosts(Op& op, int logits)
    {
        const double n = elementsOf(logits);
        op.flops_fwd = kLossFlopsPerLogit * n;
        op.flops_bwd_input = kLossFlopsPerLogit * n;
        op.saved = {activationTensor(logits)};
        for (const auto t : op.outputs)
            m_tensors[static_cast<std::size_t>(t)].dtype = DType::F32; // losses are reduced in fp32
    }

    void emitNode(int n)
    {
        const NodeInfo& nd = node(n);
        const Category c = nd.info.category;
        switch (c) {
        case Category::MatMul:
        case Category::Gemm:
        case Category::Einsum:
            emitMatMul(n);
            return;
        case Category::Conv:
        case Category::ConvTranspose:
            emitConv(n);
            return;
        case Category::Attention:
            emitFusedAttention(n);
            return;
        case Category::Gather:
            emitGather(n);
            return;
        default:
            break;
        }

        if (c == Category::View && readsOnlySources(n)) {
            // A view of a graph input (labels reshaped for the loss): another input, not an op the first
            // pipeline stage would run and send along.
            for (const int out : nd.outputs)
                if (out >= 0) {
                    estimateOutputShape(n, out);
                    activationTensor(out);
                }
            return;
        }
        Op op = baseOp(n, OpKind::Elementwise);
        const int x = firstActivation(n);
        const double outElements = nd.outputs.empty() || nd.outputs[0] < 0 ? 0 : elementsOf(nd.outputs[0]);
        switch (c) {
        case Category::Elementwise:
        case Category::Source:
            elementwiseCosts(op, n, outElements);
            break;
        case Category::Reduction:
            op.flops_fwd = nd.info.flops * elementsOf(x);
            op.flops_bwd_input = op.flops_fwd;
            if (nd.proto->op_type() != "ReduceMean" && nd.proto->op_type() != "ReduceSum" && x >= 0)
                op.saved = {activationTensor(x)};
            break;
        case Category::Softmax:
            op.kind = OpKind::Softmax;
            op.flops_fwd = kSoftmaxFlops * outElements;
            op.flops_bwd_input = kBackwardFactor * op.flops_fwd;
            if (!op.outputs.empty())
                op.saved = {op.outputs.front()};
            break;
        case Category::Norm: {
            op.kind = OpKind::Norm;
            const double elements = elementsOf(x);
            const double skips = static_cast<double>(std::max<std::size_t>(op.inputs.size(), 1) - 1);
            op.flops_fwd = (kNormFlops + skips) * elements;
            op.flops_bwd_input = kBackwardFactor * kNormFlops * elements;
            op.flops_bwd_weight = op.params.empty() ? 0 : kNormWeightGradFlops * elements;
            if (x >= 0)
                op.saved = {activationTensor(x)};
            break;
        }
        case Category::View:
            op.kind = OpKind::Reshape;
            op.bytes_read = op.bytes_written = 0;
            break;
        case Category::Move:
            op.kind = OpKind::Reshape;
            if (const auto& t = nd.proto->op_type();
                t == "Slice" || t == "GatherElements" || t == "GatherND" || t == "Compress")
                op.bytes_read = op.bytes_written; // reads only what it copies
            break;
        case Category::Loss:
            op.kind = OpKind::Loss;
            if (x >= 0)
                lossCosts(op, x);
            if (nd.proto->op_type() == "NegativeLogLikelihoodLoss") {
                op.flops_fwd = elementsOf(x);
                op.flops_bwd_input = elementsOf(x);
            }
            break;
        case Category::Dropout: {
            op.kind = OpKind::Dropout;
            const double elements = elementsOf(x);
            op.flops_fwd = kDropoutFlops * elements;
            op.flops_bwd_input = elements;
            if (op.outputs.size() > 1)
                op.saved = {op.outputs[1]};
            break;
        }
        default: {
            op.kind = OpKind::Unknown;
            op.source_type = sourceType(*nd.proto);
            ++m_report.unknown_op_types[op.source_type];
            op.flops_fwd = outElements;
            op.flops_bwd_input = kBackwardFactor * outElements;
            for (const int in : nd.inputs)
                if (isActivation(in))
                    op.saved.push_back(activationTensor(in));
            break;
        }
        }
        commit(std::move(op), n);
    }

    /** Every activation the node reads is a graph input (or a view of one): no op produced it. */
    bool readsOnlySources(int n) const
    {
        for (const int in : node(n).inputs) {
            if (!isActivation(in))
                continue;
            const TensorId t = value(in).tensor;
            if (t < 0
                || (static_cast<std::size_t>(t) < m_producerOp.size()
                    && m_producerOp[static_cast<std::size_t>(t)] >= 0))
                return false;
        }
        return true;
    }

    int firstActivation(int n) const
    {
        for (const int in : node(n).inputs)
            if (isActivation(in))
                return in;
        return -1;
    }

    void elementwiseCosts(Op& op, int n, double outElements)
    {
        const NodeInfo& nd = node(n);
        op.flops_fwd = nd.info.flops * outElements;
        switch (nd.info.grad) {
        case Grad::Linear:
            break;
        case Grad::Product: {
            int activations = 0;
            for (const int in : nd.inputs)
                activations += isActivation(in) ? 1 : 0;
            op.flops_bwd_input = op.flops_fwd * activations;
            if (activations > 1 || !op.params.empty())
                for (const int in : nd.inputs)
                    if (isActivation(in))
                        op.saved.push_back(activationTensor(in));
            if (nd.proto->op_type() == "Div" && activations == 1 && isActivation(input(n, 1)))
                op.saved = {activationTensor(input(n, 1))};
            break;
        }
        case Grad::Nonlinear:
            op.flops_bwd_input = kBackwardFactor * op.flops_fwd;
            if (const int x = firstActivation(n); x >= 0)
                op.saved = {activationTensor(x)};
            break;
        }
        if (!op.params.empty())
            op.flops_bwd_weight = outElements; // a bias or scale: its gradient is a reduction over the tokens
    }

    void emitMatMul(int n)
    {
        const NodeInfo& nd = node(n);
        int activations = 0;
        int params = 0;
        for (const int in : nd.inputs) {
            activations += isActivation(in) ? 1 : 0;
            params += isParam(in) ? 1 : 0;
        }
        if (nd.info.category != Category::Einsum && params > 0 && activations == 1) {
            Op op = linearOp(n, out0(n));
            commit(std::move(op), n);
            return;
        }
        const OpKind kind = nd.role == AttentionRole::Score ? OpKind::AttentionScore
            : nd.role == AttentionRole::Context             ? OpKind::AttentionContext
            : params > 0 && activations == 1                ? OpKind::Linear
                                                            : OpKind::MatMul;
        Op op = baseOp(n, kind);
        const double flops = nd.info.category == Category::Einsum ? einsumFlops(n) : matmulFlops(n, out0(n));
        op.flops_fwd = flops;
        if (kind == OpKind::Linear) {
            op.flops_bwd_input = flops;
            op.flops_bwd_weight = flops;
            if (const int x = firstActivation(n); x >= 0)
                op.saved = {activationTensor(x)};
        } else {
            op.flops_bwd_input = kBackwardFactor * flops;
            op.saved = op.inputs;
        }
        commit(std::move(op), n);
    }

    /** 2 x the product of every index's extent (a contraction's multiply-adds); 0 when unparsable. */
    double einsumFlops(int n) const
    {
        const std::string equation = stringAttr(*node(n).proto, "equation");
        std::unordered_map<char, std::int64_t> extent;
        std::size_t operand = 0;
        std::size_t axis = 0;
        for (const char ch : equation) {
            if (ch == '-' || ch == '>')
                break;
            if (ch == ',') {
                ++operand;
                axis = 0;
                continue;
            }
            if (ch == ' ' || ch == '.')
                continue;
            const int in = input(n, operand);
            if (in < 0 || axis >= value(in).shape.size())
                return 2 * elementsOf(out0(n));
            extent[ch] = std::max(extent[ch], value(in).shape[axis]);
            ++axis;
        }
        double product = 2;
        for (const auto& [ch, d] : extent)
            product *= static_cast<double>(d);
        return product;
    }

    void emitConv(int n)
    {
        const NodeInfo& nd = node(n);
        Op op = baseOp(n, OpKind::Conv);
        const int w = input(n, 1);
        double kernel = 1; // weight elements per output (Conv) or per input (ConvTranspose) element
        if (w >= 0)
            for (std::size_t k = 1; k < value(w).shape.size(); ++k)
                kernel *= static_cast<double>(value(w).shape[k]);
        const bool transposed = nd.info.category == Category::ConvTranspose;
        const double conv = 2 * kernel * (transposed ? elementsOf(input(n, 0)) : elementsOf(out0(n)));
        const double bias = isParam(input(n, 2)) ? elementsOf(out0(n)) : 0;
        op.flops_fwd = conv + bias;
        op.flops_bwd_input = conv;
        op.flops_bwd_weight = isParam(w) ? conv + bias : 0;
        if (const int x = firstActivation(n); x >= 0)
            op.saved = {activationTensor(x)};
        if (!isParam(w))
            op.saved = op.inputs;
        commit(std::move(op), n);
    }

    void emitGather(int n)
    {
        const int data = input(n, 0);
        const int indices = input(n, 1);
        if (!isParam(data)) {
            Op op = baseOp(n, OpKind::Reshape);
            op.bytes_read = op.bytes_written + (indices >= 0 ? bytesOf(indices) : 0);
            commit(std::move(op), n);
            return;
        }
        // A lookup: reads the rows it gathers, not the whole table; backward scatter-adds one row per index.
        Op op = baseOp(n, OpKind::Embedding);
        op.bytes_read = (isActivation(indices) ? bytesOf(indices) : 0) + bytesOf(out0(n));
        op.flops_bwd_weight = elementsOf(out0(n));
        if (isActivation(indices))
            op.saved = {activationTensor(indices)};
        commit(std::move(op), n);
    }

    /**
     * Fused attention nodes (com.microsoft Attention / MultiHeadAttention / GroupQueryAttention, ONNX
     * Attention, ScaledDotProductAttention): one FlashAttention op, plus the q/k/v projection for
     * com.microsoft Attention, which carries its weight.
     */
    void emitFusedAttention(int n)
    {
        const NodeInfo& nd = node(n);
        const auto& proto = *nd.proto;
        std::string scoped = scopedModule(proto.name());
        const int x = input(n, 0);
        std::int64_t heads = intAttr(proto, "num_heads", intAttr(proto, "q_num_heads", 0));
        const Shape qShape = x >= 0 ? value(x).shape : Shape();
        double flops = 0;
        std::vector<int> qkv;
        if (proto.op_type() == "Attention" && proto.domain() == "com.microsoft" && isParam(input(n, 1))
            && qShape.size() == 3) {
            // input [b, s, h_in] @ weights [h_in, q + k + v] (+ bias) -> packed q, k, v; then the core.
            const Shape& w = value(input(n, 1)).shape;
            const std::int64_t width = w.size() == 2 ? w[1] : 3 * qShape[2];
            const auto sizes = intsAttr(proto, "qkv_hidden_sizes");
            const std::int64_t qh = sizes.size() == 3 ? sizes[0] : width / 3;
            const std::int64_t vh = sizes.size() == 3 ? sizes[2] : width / 3;
            Op proj;
            proj.name = uniqueOpName(cat(proto.name().empty() ? cat("Attention_", n) : proto.name(), "/qkv_proj"));
            proj.kind = OpKind::Linear;
            proj.inputs = {activationTensor(x)};
            addParams(proj, input(n, 1));
            addParams(proj, input(n, 2));
            const TensorId packed = newTensor(proj.name + ".out", {qShape[0], qShape[1], width},
                                              mapDType(value(x).elemType, m_options.dtype), false);
            proj.outputs = {packed};
            proj.saved = proj.inputs;
            const double tokens = static_cast<double>(qShape[0]) * static_cast<double>(qShape[1]);
            const double matmul = 2 * tokens * static_cast<double>(qShape[2]) * static_cast<double>(width);
            proj.flops_fwd = matmul + tokens * static_cast<double>(width);
            proj.flops_bwd_input = matmul;
            proj.flops_bwd_weight = proj.flops_fwd;
            proj.bytes_read = bytesOf(x) + bytesOf(input(n, 1));
            proj.bytes_written = m_tensors[static_cast<std::size_t>(packed)].bytes();
            commit(std::move(proj), n, scoped.empty() ? std::string() : scoped + ".qkv_proj");
            const double s = static_cast<double>(qShape[1]);
            flops = 2 * static_cast<double>(qShape[0]) * s * s * static_cast<double>(qh + vh);

            Op core;
            core.name = uniqueOpName(proto.name().empty() ? cat("Attention_", n) : proto.name());
            core.kind = OpKind::FlashAttention;
            core.inputs = {packed};
            core.saved = {packed};
            finishAttention(core, n, flops, heads, qShape, scoped);
            return;
        }
        const int k = input(n, 1);
        const int v = input(n, 2);
        const Shape kShape = isActivation(k) ? value(k).shape : Shape();
        const Shape vShape = isActivation(v) ? value(v).shape : Shape();
        if (qShape.size() == 4) {
            // [b, heads, s, d]
            const double skv = kShape.size() == 4 ? static_cast<double>(kShape[2]) : static_cast<double>(qShape[2]);
            const double dv = vShape.size() == 4 ? static_cast<double>(vShape[3]) : static_cast<double>(qShape[3]);
            heads = qShape[1];
            flops = 2 * static_cast<double>(qShape[0]) * static_cast<double>(qShape[1]) * static_cast<double>(qShape[2])
                * skv * (static_cast<double>(qShape[3]) + dv);
        } else if (qShape.size() == 3) {
            // [b, s, hidden]; packed q/k/v when there is no separate key
            const bool packed = !isActivation(k);
            const double hq = static_cast<double>(packed ? qShape[2] / 3 : qShape[2]);
            const double skv = kShape.size() == 3 ? static_cast<double>(kShape[1]) : static_cast<double>(qShape[1]);
            const double hv = vShape.size() == 3 ? static_cast<double>(vShape[2]) : hq;
            flops = 2 * static_cast<double>(qShape[0]) * static_cast<double>(qShape[1]) * skv * (hq + hv);
        }
        Op core = baseOp(n, OpKind::FlashAttention);
        core.saved = core.inputs;
        core.bytes_read = 0;
        for (const int in : nd.inputs)
            if (isActivation(in))
                core.bytes_read += bytesOf(in);
        finishAttention(core, n, flops, heads, qShape, scoped);
    }

    void finishAttention(Op& core, int n, double flops, std::int64_t heads, const Shape& qShape,
                         const std::string& scoped)
    {
        const NodeInfo& nd = node(n);
        if (core.outputs.empty())
            for (const int out : nd.outputs)
                if (out >= 0) {
                    estimateOutputShape(n, out);
                    core.outputs.push_back(activationTensor(out));
                    core.bytes_written += bytesOf(out);
                }
        // The f32 log-sum-exp [b, heads, s] flash attention keeps for backward (the builder's; it also tells
        // the sharding solver the head count).
        if (heads > 0 && qShape.size() >= 3) {
            const std::int64_t s = qShape.size() == 4 ? qShape[2] : qShape[1];
            const TensorId lse = newTensor(core.name + ".lse", {qShape[0], heads, s}, DType::F32, false);
            core.outputs.push_back(lse);
            core.saved.push_back(lse);
            core.bytes_written += m_tensors[static_cast<std::size_t>(lse)].bytes();
        }
        if (!core.outputs.empty())
            core.saved.push_back(core.outputs.front());
        core.flops_fwd = flops;
        core.flops_bwd_input = kBackwardFactor * flops;
        ++m_report.attention_cores;
        std::string module = scoped;
        if (module.empty())
            module = latestProducerModule(core);
        commit(std::move(core), n, module.empty() ? "attention.core" : module + ".core");
    }

    // --- modules and the graph -------------------------------------------------------------------------------

    /** Ops with no module after the forward pass (reading only graph inputs) take their first consumer's. */
    void resolveEmptyModules()
    {
        std::vector<OpId> firstConsumer(m_tensors.size(), -1);
        for (std::size_t i = m_ops.size(); i-- > 0;)
            for (const auto t : m_ops[i].inputs)
                firstConsumer[static_cast<std::size_t>(t)] = static_cast<OpId>(i);
        for (std::size_t i = m_ops.size(); i-- > 0;) {
            Op& op = m_ops[i];
            if (!op.module.empty())
                continue;
            for (const auto t : op.outputs) {
                const OpId c = firstConsumer[static_cast<std::size_t>(t)];
                if (c >= 0 && !m_ops[static_cast<std::size_t>(c)].module.empty()) {
                    op.module = m_ops[static_cast<std::size_t>(c)].module;
                    break;
                }
            }
        }
    }

    ModelGraph build()
    {
        ModelGraph graph;
        graph.name = escapeInvalidUtf8(fs::path(m_origin).stem().string()); // a label: a non-UTF-8 file name is escaped
        graph.batch = m_graphBatch;
        graph.seq_len = m_graphSeq;
        graph.dtype = m_options.dtype;
        graph.reserve(m_tensors.size(), m_ops.size());
        for (auto& t : m_tensors)
            graph.addTensor(std::move(t));
        for (auto& op : m_ops)
            graph.addOp(std::move(op));
        return graph;
    }

    std::string m_origin;
    BuildOptions m_options;
    std::int64_t m_batch;
    std::int64_t m_seq;
    std::int64_t m_graphBatch = 1;
    std::int64_t m_graphSeq = 1;
    bool m_boundBatch = false;
    bool m_boundSeq = false;
    // The model lives in an arena: parsing allocates and frees 100,000 nodes at once, not one by one.
    google::protobuf::Arena m_arena;
    onnx::ModelProto& m_model;
    OnnxImportReport m_report;

    std::vector<Value> m_values;
    std::unordered_map<std::string_view, int> m_valueIndex; ///< views of the model proto's strings
    std::vector<Initializer> m_inits;
    std::vector<NodeInfo> m_nodes;
    std::vector<int> m_consumerStart; ///< by value: where its consumers start in m_consumerList
    std::vector<int> m_consumerList;
    std::vector<int> m_order;
    std::vector<int> m_position;
    std::vector<Group> m_groups;
    std::vector<Attention> m_attention;

    std::vector<Tensor> m_tensors;
    std::vector<Op> m_ops;
    std::vector<OpId> m_producerOp; ///< by tensor id
    std::unordered_set<std::string> m_opNames;
    std::int64_t m_zeroDims = 0;
    int m_staticCount = 0;
    std::string m_inferenceError;
    onnx_guard::GuardedSchemaRegistry m_schemas {inferenceHazard};
};

} // namespace

OnnxImport loadOnnxModelDetailed(const std::filesystem::path& path, const BuildOptions& options)
{
    const std::string origin = path.string();
    std::error_code ec;
    const auto status = fs::status(path, ec);
    if (ec || !fs::exists(status))
        throw InputError(cat(origin, ": no such file"), "check the path to the .onnx file");
    if (!fs::is_regular_file(status))
        throw InputError(cat(origin, ": not a regular file"), "pass the .onnx file itself");
    const std::uintmax_t size = fs::file_size(path, ec);
    if (ec)
        throw InputError(cat(origin, ": cannot read the file size (", ec.message(), ")"));
    // Checked before reading: a multi-GB file is refused without allocating for it.
    if (size > kMaxProtoBytes)
        throw InputError(tooLarge(origin, size), kExternalDataHint);
    std::ifstream in(path, std::ios::binary);
    std::string bytes(static_cast<std::size_t>(size), '\0');
    if (!in || !in.read(bytes.data(), static_cast<std::streamsize>(size)))
        throw InputError(cat(origin, ": cannot read the file"), "check its permissions");
    return Importer(origin, options).run(bytes);
}

OnnxImport loadOnnxModelFromBytes(std::string_view bytes, std::string_view origin, const BuildOptions& options)
{
    return Importer(std::string(origin), options).run(bytes);
}

ModelGraph loadOnnxModel(const std::filesystem::path& path, const BuildOptions& options)
{
    return loadOnnxModelDetailed(path, options).graph;
}

} // namespace shardscape
