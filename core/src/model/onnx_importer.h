// SPDX-License-Identifier: MIT
// The ONNX importer: one object per model, run once. Its phases live in files of their own: reading
// (onnx_import.cpp), shape inference (onnx_shape_inference.cpp), values (onnx_values.cpp), patterns
// (onnx_patterns.cpp) and op emission (onnx_emit.cpp, onnx_emit_ops.cpp).
#pragma once

#include "onnx_import_internal.h"
#include "onnx_inference_guard.h"
#include "shardscape/model/onnx_import.h"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace shardscape::onnx_detail {

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
    Importer(std::string origin, const BuildOptions& options);
    OnnxImport run(std::string_view bytes);

private:
    // --- reading -------------------------------------------------------------------------------------------

    void parseModel(std::string_view bytes);
    void checkControlFlow() const;

    // --- symbolic dimensions and shape inference -----------------------------------------------------------

    std::optional<std::int64_t> dimByName(const std::string& name);
    void bindInputDims(onnx::ValueInfoProto& vi);

    /** Later dims with a name already bound take its value; the rest are left to inference. */
    void bindKnownDims(onnx::ValueInfoProto& vi);
    void bindSymbolicDims();

    /** One ONNX shape-inference pass; failures leave the shapes it did not reach unknown. */
    bool inferShapesOnce();

    /**
     * "node 'name' (Op)" for the node whose inference was refused. Its inference context does not name it, so it is
     * the first node of that op whose inputs are the values the context had: a declared or inferred value's type and
     * a constant's tensor are protos of the graph, found by address (an initializer's type is ONNX's own copy, but
     * its tensor is found). A node inside a function body matches none.
     */
    std::string describeNode(const onnx_guard::RefusedNode& refused) const;

    /**
     * Shape inference; when it leaves shapes unknown, the static shape arithmetic (Shape, Gather, Concat, Div,
     * Where, Equal, ConstantOfShape, Range, ...: torch's dynamic-axes exports are full of it) is evaluated here,
     * the results written as constants where nodes that read activations use them, and inference runs again
     * (a few passes at most, until nothing new is learnt).
     */
    void inferShapes();
    std::unordered_map<std::string, Shape> knownShapes() const;

    static bool completeShape(const onnx::ValueInfoProto& vi);

    /** Whether inference left nothing to learn: every node output has a complete shape. */
    bool everyOutputShaped() const;

    /** Evaluates static integer values node by node; returns how many node inputs it replaced by constants. */
    int foldStaticOperands(const std::unordered_map<std::string, Shape>& shapes);

    // --- values --------------------------------------------------------------------------------------------

    /** `name` must be a string of the model proto (values keep views of it). */
    int valueIndex(const std::string& name);
    int findValue(std::string_view name) const;

    /** Copies a (possibly) inferred type: element type and the shape, symbolic dims bound or counted. */
    void setType(Value& v, const onnx::TypeProto& type);
    void collectValues();

    /** The nodes reading value v, in node order (a node reading it twice is listed twice). */
    std::span<const int> consumers(int v) const;
    std::string nodeName(int n) const;

    // --- tied initializers -----------------------------------------------------------------------------------

    static std::string externalKey(const onnx::TensorProto& t);
    static bool transposedEqual(const onnx::TensorProto& a, const onnx::TensorProto& b);
    void merge(int duplicate, int keep);

    /**
     * Initializers that hold one tensor twice count once: the same external bytes, identical raw data for
     * matrices (rank >= 2; equal 1-D vectors, like fresh norm weights, are equal by construction, not tied),
     * and a 2-D transposed copy of another (what constant folding makes of a tied LM head).
     */
    void mergeTiedInitializers();
    int canonical(int init) const;
    static std::string dimsKey(const onnx::TensorProto& t);

    // --- order and classification --------------------------------------------------------------------------

    void sortNodes();

    /** Folds nodes that need no activation; the rest produce activations. */
    void classifyValues();

    /** A weight view's shape when inference did not give it: a 2-D transpose swaps, anything else keeps. */
    void guessViewShape(const NodeInfo& node, Value& v);

    // --- pattern helpers -----------------------------------------------------------------------------------

    const Value& value(int v) const { return m_values[static_cast<std::size_t>(v)]; }
    NodeInfo& node(int n) { return m_nodes[static_cast<std::size_t>(n)]; }
    const NodeInfo& node(int n) const { return m_nodes[static_cast<std::size_t>(n)]; }
    bool isActivation(int v) const { return v >= 0 && value(v).kind == ValueKind::Activation; }
    bool isParam(int v) const { return v >= 0 && value(v).kind == ValueKind::Param; }
    bool isStatic(int v) const { return v >= 0 && value(v).kind == ValueKind::Static; }
    bool is(int n, std::string_view type) const;
    int out0(int n) const { return node(n).outputs.empty() ? -1 : node(n).outputs[0]; }
    int input(int n, std::size_t i) const { return i < node(n).inputs.size() ? node(n).inputs[i] : -1; }

    /** Consumers that emit ops (a Shape node reading a value needs only its shape). */
    std::vector<int> liveConsumers(int v) const;

    /** The one live consumer of v that is still free for a pattern, or -1. */
    int single(int v) const;
    bool isGraphOutput(int v) const { return value(v).graphOutput; }

    /** The other operand of a binary node, given one of them. */
    int other(int n, int v) const;
    bool isSquareOf(int n, int v) const;
    bool groupIsClosed(const Group& g) const;
    int lastInOrder(const std::vector<int>& nodes) const;
    void addGroup(Group g);

    // --- patterns ------------------------------------------------------------------------------------------

    /** Decomposed LayerNorm (mean, subtract, square, mean, add eps, sqrt, divide) and RMSNorm chains. */
    void findNorms();
    std::optional<Group> matchNorm(int reduce) const;

    /** MatMul with a weight followed by an Add of a bias vector: one Linear, as the builder's. */
    void findLinearBiases();

    /** LogSoftmax feeding NegativeLogLikelihoodLoss: a cross-entropy loss. */
    void findLosses();
    bool isActivationMatMul(int n) const;

    /** Walks back from the softmax input through scale / mask / cast nodes to the score MatMul. */
    int findScore(int v, int depth, std::vector<int>& chain) const;

    /** MatMul -> [scale, mask, cast] -> Softmax -> [cast, dropout] -> MatMul: an unfused attention core. */
    void findAttention();

    // --- emission ------------------------------------------------------------------------------------------

    double bytesOf(int v) const;
    double elementsOf(int v) const { return v >= 0 ? elementCount(value(v).shape) : 0; }
    TensorId newTensor(std::string name, Shape shape, DType dtype, bool isParam);

    /** The tensor of an activation value, created on first use (graph inputs, node outputs). */
    TensorId activationTensor(int v);
    TensorId paramTensor(int init);
    void addParams(Op& op, int v);
    std::string uniqueOpName(std::string name);

    /**
     * numpy.matmul's result shape: a 1-D operand gains a dimension (a leading 1 for the left, a trailing 1 for the
     * right) that is dropped again from the result; the batch dimensions broadcast. Both operands have rank >= 1.
     */
    static Shape matMulShape(const Shape& a, const Shape& b);

    /** Fills an output's shape from its inputs when inference did not (elementwise broadcast, matmul, ...). */
    void estimateOutputShape(int n, int out);

    /** An op for node n with its activation inputs, outputs, weights and default traffic. */
    Op baseOp(int n, OpKind kind, std::string name = {});
    void emitAll();

    /** Adds the op with its module: scoped name, else a weight's name, else the latest producer's. */
    void commit(Op op, int n, std::string module = {});
    std::string moduleFor(const Op& op, int n) const;
    std::string latestProducerModule(const Op& op) const;
    std::string moduleOfValue(int v) const;

    /** "<attention module>.core": the score MatMul's scope, or the common module of q's and k's producers. */
    std::string attentionModule(int a, const std::string& fallback);
    void emitGroup(const Group& g);

    /** A MatMul / Gemm with a weight; `out` is the value it writes (the bias Add's when fused). */
    Op linearOp(int n, int out);

    /** 2 x output elements x the contracted dimension. */
    double matmulFlops(int n, int out) const;
    void lossCosts(Op& op, int logits);
    void emitNode(int n);

    /** Every activation the node reads is a graph input (or a view of one): no op produced it. */
    bool readsOnlySources(int n) const;
    int firstActivation(int n) const;
    void elementwiseCosts(Op& op, int n, double outElements);
    void emitMatMul(int n);

    /** 2 x the product of every index's extent (a contraction's multiply-adds); 0 when unparsable. */
    double einsumFlops(int n) const;
    void emitConv(int n);
    void emitGather(int n);

    /**
     * Fused attention nodes (com.microsoft Attention / MultiHeadAttention / GroupQueryAttention, ONNX
     * Attention, ScaledDotProductAttention): one FlashAttention op, plus the q/k/v projection for
     * com.microsoft Attention, which carries its weight.
     */
    void emitFusedAttention(int n);
    void finishAttention(Op& core, int n, double flops, std::int64_t heads, const Shape& qShape,
                         const std::string& scoped);

    // --- modules and the graph -------------------------------------------------------------------------------

    /** Ops with no module after the forward pass (reading only graph inputs) take their first consumer's. */
    void resolveEmptyModules();
    ModelGraph build();

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

} // namespace shardscape::onnx_detail
