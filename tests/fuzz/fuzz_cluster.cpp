// SPDX-License-Identifier: MIT
// Cluster and device JSON (hardware/cluster.cpp), as --cluster FILE reads it, then the fingerprint plan files record.
#include "fuzz_common.h"
#include "shardscape/hardware/cluster.h"
#include "shardscape/support/json_file.h"

#include <nlohmann/json.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    using namespace shardscape;
    return fuzz::loadOnce([&] {
        // "device": "x.json" is looked up under a directory that does not exist: a clean "no such file".
        const Cluster cluster = clusterFromJson(parseJson(fuzz::text(data, size), "cluster.json"), "cluster.json",
                                                "/nonexistent-fuzz-dir");
        (void)cluster.fingerprint();
        (void)toJson(cluster).dump();
    });
}
