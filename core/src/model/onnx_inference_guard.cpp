// SPDX-License-Identifier: MIT
#include "onnx_inference_guard.h"

#include <string>
#include <utility>
#include <vector>

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
        // STFT's inference function (ONNX 1.12) reads its frame_step input without checking that it is there: an
        // absent one (an empty name) crashed it (found by fuzz_onnx). Other schemas check their inputs themselves,
        // and a present input may have no type yet, so only STFT's required inputs are checked here.
        std::vector<bool> required;
        if (schema->Name() == "STFT")
            for (const auto& input : schema->inputs())
                required.push_back(input.GetOption() == onnx::OpSchema::Single);
        guarded->TypeAndShapeInferenceFunction([check = &m_check, infer = schema->GetTypeAndShapeInferenceFunction(),
                                                op = schema->Name(), opDomain = schema->domain(),
                                                required](onnx::InferenceContext& ctx) {
            std::string why;
            for (std::size_t i = 0; i < required.size() && why.empty(); ++i)
                if (required[i] && (i >= ctx.getNumInputs() || !ctx.getInputType(i)))
                    why = "required input " + std::to_string(i) + " is missing";
            if (why.empty())
                why = (*check)(op, opDomain, ctx);
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
