// SPDX-License-Identifier: MIT
// Serving predictions against published measurements (tests/data/serving/published_serving.json): output tokens/s,
// TTFT and TPOT per row, and the median absolute error of each. Nothing here is fitted to the rows.
#include "shardscape/cost/serving.h"
#include "shardscape/model/model_source.h"
#include "shardscape/plan/serving_plan.h"
#include "shardscape/support/json_file.h"
#include "shardscape/support/strings.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

using namespace shardscape;

namespace {

double median(std::vector<double> v)
{
    if (v.empty())
        return 0;
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string errorText(double predicted, double measured, std::vector<double>& errors)
{
    const double error = predicted / measured - 1;
    errors.push_back(std::fabs(error));
    return cat(fixed(predicted, 1), " vs ", fixed(measured, 1), " (", error >= 0 ? "+" : "", fixed(100 * error, 1),
               "%)");
}

} // namespace

int main()
{
    const std::filesystem::path root = SHARDSCAPE_SOURCE_DIR;
    std::filesystem::current_path(root);
    const auto doc = readJsonFile("tests/data/serving/published_serving.json");
    std::vector<double> throughput;
    std::vector<double> ttft;
    std::vector<double> tpot;
    std::cout << "| row | deployment | concurrency used / max | output tok/s pred vs meas | TTFT ms | TPOT ms |\n"
              << "|---|---|---|---|---|---|\n";
    for (const auto& row : doc.at("rows")) {
        const int gpus = row.at("gpus").get<int>();
        const Cluster cluster = loadCluster(row.at("device").get<std::string>(), 1 + (gpus - 1) / 8, std::min(gpus, 8));
        const ServingModel model = ServingModel::fromGraph(loadModel(row.at("model").get<std::string>(), {}));
        nlohmann::json requestDoc {
            {"input_len", row.at("input_len")},           {"output_len", row.at("output_len")},
            {"concurrency", row.at("concurrency")},       {"weight_dtype", row.at("weight_dtype")},
            {"kv_cache_dtype", row.at("kv_cache_dtype")}, {"serving_framework", row.at("serving_framework")}};
        const ServingRequest request = servingRequestFromJson(requestDoc, row.at("id").get<std::string>());
        const ServingParallel parallel {row.at("tp").get<int>(), 1, row.at("ep").get<int>(), row.at("dp").get<int>()};
        const CostParams params;
        const auto costs = makeDatasheetCostSource(cluster, params);
        const ServingEstimate e = estimateServing(model, cluster, *costs, params, parallel, request);
        std::string out = "-";
        std::string first = "-";
        std::string perToken = "-";
        if (!e.feasible) {
            out = "infeasible: " + e.reason;
        } else {
            if (row.contains("output_tokens_per_s"))
                out = errorText(e.output_tokens_per_s, row.at("output_tokens_per_s").get<double>(), throughput);
            if (row.contains("ttft_ms"))
                first = errorText(e.ttft_s * 1e3, row.at("ttft_ms").get<double>(), ttft);
            if (row.contains("tpot_ms"))
                perToken = errorText(e.tpot_s * 1e3, row.at("tpot_ms").get<double>(), tpot);
        }
        std::cout << "| " << row.at("id").get<std::string>() << " | " << e.parallel.describe() << " | " << e.concurrency
                  << " / " << e.max_concurrency << " | " << out << " | " << first << " | " << perToken << " |\n";
    }
    std::cout << "\nmedian |error|: output tokens/s " << fixed(100 * median(throughput), 1) << "% ("
              << throughput.size() << " rows), TTFT " << fixed(100 * median(ttft), 1) << "% (" << ttft.size()
              << "), TPOT " << fixed(100 * median(tpot), 1) << "% (" << tpot.size() << ")\n";
    return 0;
}
