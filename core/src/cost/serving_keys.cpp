// SPDX-License-Identifier: MIT
#include "shardscape/cost/serving_keys.h"

#include "shardscape/support/json_fields.h"
#include "shardscape/support/strings.h"

#include <nlohmann/json.hpp>

namespace shardscape {

void readConcurrency(JsonFields& fields, int& value)
{
    const nlohmann::json* c = fields.find("concurrency");
    if (!c)
        return;
    if (c->is_string() && toLower(c->get<std::string>()) == "max")
        value = 0;
    else if (c->is_number_integer() && c->get<std::int64_t>() >= 1 && c->get<std::int64_t>() <= kMaxServingConcurrency)
        value = c->get<int>();
    else
        fields.fail(
            "concurrency",
            cat("expected requests in flight in [1, ", kMaxServingConcurrency, "] or \"max\", got ", describeJson(*c)));
}

void readWeightFormat(JsonFields& fields, WeightFormat& value)
{
    if (const auto name = fields.optString("weight_dtype")) {
        const auto format = parseWeightFormat(*name);
        if (!format)
            fields.fail("weight_dtype", cat("unknown weight dtype '", *name, "'"), "use bf16, fp8, int8, int4 or fp4");
        value = *format;
    }
}

void readKvCacheDtype(JsonFields& fields, DType& value)
{
    if (const auto name = fields.optString("kv_cache_dtype")) {
        const auto dtype = parseKvCacheDtype(*name);
        if (!dtype)
            fields.fail("kv_cache_dtype", cat("unsupported KV cache dtype '", *name, "'"), "use bf16, fp16 or fp8");
        value = *dtype;
    }
}

void readServingFramework(JsonFields& fields, ServingFramework& value)
{
    if (const auto name = fields.optString("serving_framework")) {
        const auto framework = parseServingFramework(*name);
        if (!framework)
            fields.fail("serving_framework", cat("unknown serving framework '", *name, "'"), "use vllm or sglang");
        value = *framework;
    }
}

} // namespace shardscape
