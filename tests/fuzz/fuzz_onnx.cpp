// SPDX-License-Identifier: MIT
// ONNX import (model/onnx_import.cpp) from the bytes of an .onnx file: protobuf parsing, external-data checks,
// shape inference, pattern matching and op emission.
#include "fuzz_common.h"
#include "shardscape/model/model_summary.h"
#include "shardscape/model/onnx_import.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    using namespace shardscape;
    return fuzz::loadOnce([&] {
        const BuildOptions options {1, 128, DType::BF16};
        const OnnxImport result = loadOnnxModelFromBytes(fuzz::text(data, size), "fuzz.onnx", options);
        summarizeModel(result.graph);
    });
}
