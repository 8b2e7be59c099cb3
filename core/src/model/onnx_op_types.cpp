// SPDX-License-Identifier: MIT
// How each ONNX op type maps before patterns refine it (category, FLOPs per element, backward), and the
// attribute, dtype and element-count helpers over ONNX protos.
#include "onnx_import_internal.h"

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace shardscape::onnx_detail {

namespace {

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

} // namespace

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

} // namespace shardscape::onnx_detail
