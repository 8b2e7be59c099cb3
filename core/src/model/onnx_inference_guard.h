// SPDX-License-Identifier: MIT
#pragma once

// ONNX 1.12's shape-inference functions trust ranks, axes and sizes they never check, and crash (or exhaust memory)
// on a file that breaks them: fuzz_onnx found several. Checking the file before inference only sees the ranks it
// declares; a Flatten feeding a Conv has a rank only inference knows. This registry hands ONNX every operator schema
// with its inference function wrapped: a check runs on each node's inputs as inference has them at that point (types,
// shapes, constant values), and a node it refuses stops the import instead of reaching ONNX's own function. Internal to
// the ONNX importer.

#include <onnx/defs/schema.h>

#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace shardscape::onnx_guard {

/** Why ONNX's inference function must not run on a node (it is invalid ONNX and would crash it), or empty. */
using NodeCheck
    = std::function<std::string(const std::string& op, const std::string& domain, const onnx::InferenceContext& ctx)>;

/**
 * Thrown out of onnx::shape_inference::InferShapes when the check refuses a node. Deliberately not a
 * std::exception: ONNX catches its own errors per node and carries on, and must not swallow this one. The context
 * does not name its node, so the inputs are kept for the importer to find it (Importer::describeNode in
 * onnx_shape_inference.cpp).
 */
struct RefusedNode
{
    std::string op;
    std::string why;
    std::vector<const onnx::TypeProto*> input_types; ///< per input as inference had it (nullptr: unknown)
    std::vector<const onnx::TensorProto*> input_data; ///< per input, its constant value (nullptr: none)
};

/** ONNX's schema registry with every inference function behind `check`. One per import: it caches its wrappers. */
class GuardedSchemaRegistry final : public onnx::ISchemaRegistry
{
public:
    explicit GuardedSchemaRegistry(NodeCheck check);

    const onnx::OpSchema* GetSchema(const std::string& key, const int maxInclusiveVersion,
                                    const std::string& domain) const override;

private:
    NodeCheck m_check;
    mutable std::unordered_map<const onnx::OpSchema*, std::unique_ptr<onnx::OpSchema>> m_guarded;
};

} // namespace shardscape::onnx_guard
