// SPDX-License-Identifier: MIT
// Native graph JSON (model/native_json.cpp): parse, load, and check that an accepted graph round-trips losslessly.
#include "fuzz_common.h"
#include "shardscape/model/native_json.h"
#include "shardscape/support/json_file.h"

#include <nlohmann/json.hpp>
#include <stdexcept>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    using namespace shardscape;
    return fuzz::loadOnce([&] {
        const ModelGraph graph = loadNativeGraph(parseJson(fuzz::text(data, size), "fuzz.json"), "fuzz.json");
        // The format promises loadNativeGraph(toNativeJson(g)) == g; a graph it accepted must survive the trip.
        const nlohmann::json written = toNativeJson(graph);
        if (toNativeJson(loadNativeGraph(written, "round-trip")) != written)
            throw std::logic_error("native graph does not round-trip");
    });
}
