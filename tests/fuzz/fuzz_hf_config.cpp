// SPDX-License-Identifier: MIT
// HF config.json through the model-source entry point (model/model_source.cpp -> hf_config.cpp -> the transformer
// builder), then the model summary the CLI prints for it.
#include "fuzz_common.h"
#include "shardscape/model/model_source.h"
#include "shardscape/model/model_summary.h"
#include "shardscape/support/json_file.h"

#include <nlohmann/json.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    using namespace shardscape;
    return fuzz::loadOnce([&] {
        // A small micro-batch and sequence keep each build fast; the sizes in the file are what is being fuzzed.
        const BuildOptions options {1, 128, DType::BF16};
        const ModelGraph graph
            = loadModelJson(parseJson(fuzz::text(data, size), "config.json"), "config.json", options, "fuzz");
        summarizeModel(graph);
    });
}
