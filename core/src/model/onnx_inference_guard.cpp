// SPDX-License-Identifier: MIT
#include "onnx_inference_guard.h"

#include <utility>

namespace shardscape::onnx_guard {

GuardedSchemaRegistry::GuardedSchemaRegistry(NodeCheck check)
    : m_check(std::move(check))
{
}

const onnx::OpSchema* GuardedSchemaRegistry::GetSchema(const std::string& key, const int maxInclusiveVersion,
                                                       const std::string& domain) const
{
    const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Instance()->GetSchema(key, maxInclusiveVersion, domain);
    // Schemas without an inference function go through their function body, whose nodes come back here.
    if (!schema || !schema->has_type_and_shape_inference_function())
        return schema;
    auto& guarded = m_guarded[schema];
    if (!guarded) {
        guarded = std::make_unique<onnx::OpSchema>(*schema);
        guarded->TypeAndShapeInferenceFunction([check = &m_check, infer = schema->GetTypeAndShapeInferenceFunction(),
                                                op = schema->Name(),
                                                opDomain = schema->domain()](onnx::InferenceContext& ctx) {
            std::string why = (*check)(op, opDomain, ctx);
            if (why.empty()) {
                infer(ctx);
                return;
            }
            RefusedNode refused {op, std::move(why), {}, {}};
            for (std::size_t i = 0; i < ctx.getNumInputs(); ++i) {
                refused.input_types.push_back(ctx.getInputType(i));
                refused.input_data.push_back(ctx.getInputData(i));
            }
            throw refused;
        });
    }
    return guarded.get();
}

} // namespace shardscape::onnx_guard
