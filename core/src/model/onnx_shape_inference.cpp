// SPDX-License-Identifier: MIT
// Binds the graph's symbolic dimensions and runs ONNX shape inference, feeding back the static shape
// arithmetic it cannot follow (onnx_static_values.cpp) until nothing new is learnt.
#include "onnx_importer.h"
#include "shardscape/support/error.h"
#include "shardscape/support/strings.h"

#include <onnx/shape_inference/implementation.h>

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace shardscape::onnx_detail {

// --- symbolic dimensions and shape inference -----------------------------------------------------------

std::optional<std::int64_t> Importer::dimByName(const std::string& name)
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

void Importer::bindInputDims(onnx::ValueInfoProto& vi)
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

void Importer::bindKnownDims(onnx::ValueInfoProto& vi)
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

void Importer::bindSymbolicDims()
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
        m_report.warnings.push_back(cat("the model has no symbolic batch dimension: its fixed batch of ", m_graphBatch,
                                        " is the micro-batch unit"));
}

bool Importer::inferShapesOnce()
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

std::string Importer::describeNode(const onnx_guard::RefusedNode& refused) const
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
        bool matches
            = node.op_type() == refused.op && static_cast<std::size_t>(node.input_size()) == refused.input_types.size();
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

void Importer::inferShapes()
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
        m_report.warnings.push_back(
            cat("ONNX shape inference stopped (", m_inferenceError, "); the shapes it did not reach are estimated"));
}

std::unordered_map<std::string, Shape> Importer::knownShapes() const
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

bool Importer::completeShape(const onnx::ValueInfoProto& vi)
{
    if (!vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape())
        return false;
    for (const auto& d : vi.type().tensor_type().shape().dim())
        if (!d.has_dim_value())
            return false;
    return true;
}

bool Importer::everyOutputShaped() const
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

int Importer::foldStaticOperands(const std::unordered_map<std::string, Shape>& shapes)
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

} // namespace shardscape::onnx_detail
