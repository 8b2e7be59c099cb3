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
//
// This file reads the model and runs the phases (Importer::run); onnx_importer.h says which file holds each.
#include "shardscape/model/onnx_import.h"

#include "onnx_importer.h"
#include "shardscape/support/error.h"
#include "shardscape/support/strings.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace shardscape {

namespace onnx_detail {

namespace {

std::string tooLarge(std::string_view origin, std::uintmax_t size)
{
    return cat(origin, ": ", humanBytes(static_cast<double>(size)),
               " is over protobuf's 2 GB limit for one .onnx file");
}

} // namespace

Importer::Importer(std::string origin, const BuildOptions& options)
    : m_origin(std::move(origin))
    , m_options(options)
    , m_batch(options.batch > 0 ? options.batch : 1)
    , m_seq(options.seq_len > 0 ? options.seq_len : kDefaultSeqLen)
    , m_model(*google::protobuf::Arena::CreateMessage<onnx::ModelProto>(&m_arena))
{
}

OnnxImport Importer::run(std::string_view bytes)
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

// --- reading -------------------------------------------------------------------------------------------

void Importer::parseModel(std::string_view bytes)
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

void Importer::checkControlFlow() const
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

} // namespace onnx_detail

using namespace onnx_detail;
namespace fs = std::filesystem;

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
