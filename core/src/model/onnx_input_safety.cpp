// SPDX-License-Identifier: MIT
// What the importer refuses before it trusts a model: external-data locations outside the model's folder, and
// nodes ONNX 1.12's shape inference would crash or exhaust memory on (see onnx_inference_guard.h).
#include "onnx_import_internal.h"
#include "shardscape/support/error.h"
#include "shardscape/support/strings.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace shardscape::onnx_detail {

namespace {

namespace fs = std::filesystem;

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

} // namespace

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

} // namespace shardscape::onnx_detail
