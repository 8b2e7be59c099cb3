// SPDX-License-Identifier: MIT
// Planner config JSON (search/planner_config.cpp): an accepted config must validate and read back from its own JSON.
#include "fuzz_common.h"
#include "shardscape/search/planner_config.h"
#include "shardscape/support/json_file.h"

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    using namespace shardscape;
    return fuzz::loadOnce([&] {
        const PlannerConfig config
            = plannerConfigFromJson(parseJson(fuzz::text(data, size), "planner.json"), "planner.json");
        config.validate();
        // What we write we must read: an InputError here escapes as a logic error, not a rejection.
        try {
            plannerConfigFromJson(toJson(config), "round-trip").validate();
        } catch (const InputError& error) {
            throw std::logic_error(std::string("planner config does not round-trip: ") + error.what());
        }
    });
}
