// SPDX-License-Identifier: MIT
// Plan files (plan/plan_file.cpp): strict reading of every field and the consistency checks between them.
#include "fuzz_common.h"
#include "shardscape/plan/plan_file.h"
#include "shardscape/support/json_file.h"

#include <nlohmann/json.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    using namespace shardscape;
    return fuzz::loadOnce([&] { planFromJson(parseJson(fuzz::text(data, size), "plan.json"), "plan.json"); });
}
