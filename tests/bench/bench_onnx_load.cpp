// SPDX-License-Identifier: MIT
// Writes a synthetic ONNX model of about 100,000 nodes (a chain of MatMul -> Add -> Relu blocks, weights as
// external-data initializers: dims only, the data file is never written nor read) with the ONNX C++ API, then
// reports the median time of loadOnnxModel end to end: parse, safety checks, symbolic dims, ONNX shape
// inference, classification, pattern search, op emission and ModelGraph validation.
// usage: bench_onnx_load [nodes] [repetitions]
#include "shardscape/model/layers.h"
#include "shardscape/model/onnx_import.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

using namespace shardscape;

namespace {

constexpr std::int64_t kHidden = 1024;

void addExternalWeight(onnx::GraphProto& graph, const std::string& name, std::vector<std::int64_t> dims,
                       std::int64_t& offset)
{
    auto* t = graph.add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    std::int64_t bytes = 4;
    for (const auto d : dims) {
        t->add_dims(d);
        bytes *= d;
    }
    t->set_data_location(onnx::TensorProto::EXTERNAL);
    const auto entry = [t](const std::string& key, const std::string& value) {
        auto* e = t->add_external_data();
        e->set_key(key);
        e->set_value(value);
    };
    entry("location", "weights.bin");
    entry("offset", std::to_string(offset));
    entry("length", std::to_string(bytes));
    offset += bytes;
}

void setShape(onnx::ValueInfoProto& vi, const std::string& name, std::vector<std::string> dims)
{
    vi.set_name(name);
    auto* tt = vi.mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    for (const auto& d : dims) {
        auto* dim = tt->mutable_shape()->add_dim();
        if (d.front() >= '0' && d.front() <= '9')
            dim->set_dim_value(std::stoll(d));
        else
            dim->set_dim_param(d);
    }
}

/** blocks x (MatMul with a weight, Add of a bias, Relu); scoped names as PyTorch writes them. */
onnx::ModelProto syntheticModel(int blocks)
{
    onnx::ModelProto model;
    model.set_ir_version(8);
    model.set_producer_name("shardscape bench_onnx_load");
    auto* opset = model.add_opset_import();
    opset->set_domain("");
    opset->set_version(17);
    auto& graph = *model.mutable_graph();
    graph.set_name("chain");
    setShape(*graph.add_input(), "x", {"batch", "sequence", std::to_string(kHidden)});
    std::string x = "x";
    std::int64_t offset = 0;
    for (int b = 0; b < blocks; ++b) {
        const std::string scope = "/layers." + std::to_string(b) + "/fc/";
        const std::string weight = "layers." + std::to_string(b) + ".fc.weight";
        const std::string bias = "layers." + std::to_string(b) + ".fc.bias";
        addExternalWeight(graph, weight, {kHidden, kHidden}, offset);
        addExternalWeight(graph, bias, {kHidden}, offset);
        const auto node = [&graph](const std::string& type, const std::string& name, std::vector<std::string> inputs,
                                   const std::string& output) {
            auto* n = graph.add_node();
            n->set_op_type(type);
            n->set_name(name);
            for (const auto& in : inputs)
                n->add_input(in);
            n->add_output(output);
        };
        node("MatMul", scope + "MatMul", {x, weight}, scope + "MatMul_output_0");
        node("Add", scope + "Add", {scope + "MatMul_output_0", bias}, scope + "Add_output_0");
        node("Relu", "/layers." + std::to_string(b) + "/act/Relu", {scope + "Add_output_0"},
             "/layers." + std::to_string(b) + "/act/Relu_output_0");
        x = "/layers." + std::to_string(b) + "/act/Relu_output_0";
    }
    setShape(*graph.add_output(), x, {"batch", "sequence", std::to_string(kHidden)});
    return model;
}

double medianOf(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

} // namespace

int main(int argc, char** argv)
{
    const int nodes = argc > 1 ? std::max(3, std::atoi(argv[1])) : 100'000;
    const int repetitions = argc > 2 ? std::max(1, std::atoi(argv[2])) : 3;
    const int blocks = (nodes + 2) / 3;
    const auto dir = std::filesystem::temp_directory_path() / "shardscape_bench_onnx";
    std::filesystem::create_directories(dir);
    const auto path = dir / "chain.onnx";
    {
        const onnx::ModelProto model = syntheticModel(blocks);
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        if (!model.SerializeToOstream(&out)) {
            std::fprintf(stderr, "cannot write %s\n", path.c_str());
            return 1;
        }
    }
    const auto size = std::filesystem::file_size(path);

    BuildOptions options;
    options.batch = 1;
    options.seq_len = 2048;
    std::vector<double> seconds;
    std::vector<double> cpuSeconds; // process CPU time: what the load costs when other jobs share the cores
    OnnxImport last;
    for (int r = 0; r < repetitions; ++r) {
        last = OnnxImport {}; // the previous graph is freed outside the timing
        const auto start = std::chrono::steady_clock::now();
        const std::clock_t cpuStart = std::clock();
        last = loadOnnxModelDetailed(path, options);
        cpuSeconds.push_back(static_cast<double>(std::clock() - cpuStart) / CLOCKS_PER_SEC);
        seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    const auto layerStart = std::chrono::steady_clock::now();
    const auto layers = layersByModule(last.graph);
    const double layerSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - layerStart).count();
    std::filesystem::remove_all(dir);

    std::printf("ONNX model: %lld nodes (%d MatMul-Add-Relu blocks), %.1f MB, external weights never read\n",
                static_cast<long long>(last.report.nodes), blocks, static_cast<double>(size) / 1e6);
    std::printf("graph: %zu ops, %zu tensors, %.3g parameters, %.3g forward FLOPs, %zu layers\n",
                last.graph.ops().size(), last.graph.tensors().size(), last.graph.paramCount(),
                last.graph.forwardFlops(), layers.size());
    std::printf("loadOnnxModel: median %.3f s of %d (min %.3f s, max %.3f s), CPU time median %.3f s; "
                "layersByModule %.3f s\n",
                medianOf(seconds), repetitions, *std::min_element(seconds.begin(), seconds.end()),
                *std::max_element(seconds.begin(), seconds.end()), medianOf(cpuSeconds), layerSeconds);
    return 0;
}
