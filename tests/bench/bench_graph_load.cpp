// SPDX-License-Identifier: MIT
// Loads a synthetic 1,000-layer graph (20 ops per layer, about 20,000 ops) from native JSON and reports
// the median time of read + parse + validate (including the cycle check) and of layer grouping.
// usage: bench_graph_load [layers] [repetitions]
#include "shardscape/model/layers.h"
#include "shardscape/model/native_json.h"
#include "shardscape/support/json_file.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

using namespace shardscape;

namespace {

/** A chain of blocks, each a 20-op mini transformer layer (norm, 4 projections, attention, MLP, adds). */
ModelGraph syntheticGraph(int layers)
{
    ModelGraph g;
    g.name = "synthetic";
    g.batch = 1;
    g.seq_len = 2048;
    const std::int64_t h = 4096;
    auto x = g.addTensor({"input", {1, 2048, h}, DType::BF16, false, false});
    for (int l = 0; l < layers; ++l) {
        const std::string prefix = "model.layers." + std::to_string(l);
        TensorId residual = x;
        for (int k = 0; k < 20; ++k) {
            const std::string name = prefix + ".op" + std::to_string(k);
            const auto w = g.addTensor({name + ".weight", {h, h}, DType::BF16, true, k % 2 == 0});
            const auto y = g.addTensor({name + ".out", {1, 2048, h}, DType::BF16, false, false});
            Op op;
            op.name = name;
            op.module = prefix + ".m" + std::to_string(k);
            op.kind = k % 5 == 4 ? OpKind::Elementwise : OpKind::Linear;
            op.tp_role = k % 2 ? TpRole::Row : TpRole::Column;
            op.inputs = k % 5 == 4 ? std::vector<TensorId> {x, residual} : std::vector<TensorId> {x};
            op.outputs = {y};
            op.params = {w};
            op.saved = {x};
            op.flops_fwd = 2.0 * 2048 * h * h;
            op.flops_bwd_input = op.flops_fwd;
            op.flops_bwd_weight = op.flops_fwd;
            op.bytes_read = 2.0 * (2048 * h + h * h);
            op.bytes_written = 2.0 * 2048 * h;
            g.addOp(op);
            if (k % 5 == 4)
                residual = y;
            x = y;
        }
    }
    return g;
}

double medianOf(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

} // namespace

int main(int argc, char** argv)
{
    const int layers = argc > 1 ? std::max(1, std::atoi(argv[1])) : 1000;
    const int repetitions = argc > 2 ? std::max(1, std::atoi(argv[2])) : 5;
    const auto path = std::filesystem::temp_directory_path() / "shardscape_bench_graph.json";
    saveNativeGraph(syntheticGraph(layers), path);
    const auto size = std::filesystem::file_size(path);

    std::vector<double> loadSeconds;
    std::vector<double> layerSeconds;
    std::size_t ops = 0;
    std::size_t groups = 0;
    for (int r = 0; r < repetitions; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        const ModelGraph g = loadNativeGraph(readJsonFile(path), path.string());
        const auto t1 = std::chrono::steady_clock::now();
        const auto grouped = layersByModule(g);
        const auto t2 = std::chrono::steady_clock::now();
        loadSeconds.push_back(std::chrono::duration<double>(t1 - t0).count());
        layerSeconds.push_back(std::chrono::duration<double>(t2 - t1).count());
        ops = g.ops().size();
        groups = grouped.size();
    }
    if (!std::getenv("KEEP")) std::filesystem::remove(path);
    std::printf("graph: %d layers, %zu ops, %.1f MB of JSON\n", layers, ops, static_cast<double>(size) / 1e6);
    std::printf("load (read + parse + validate + cycle check): median %.3f s over %d runs\n", medianOf(loadSeconds),
                repetitions);
    std::printf("layersByModule: median %.3f s (%zu layers)\n", medianOf(layerSeconds), groups);
    return 0;
}
