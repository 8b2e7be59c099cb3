// SPDX-License-Identifier: MIT
// Partition constraints (shardscape.partition_constraints/1): the strategies a user allows per module or op.
#include "shardscape/search/sharding_solver.h"

#include "shardscape/support/error.h"
#include "shardscape/support/json_fields.h"
#include "shardscape/support/json_file.h"
#include "shardscape/support/strings.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace shardscape {

// --- partition constraints --------------------------------------------------------------------------

namespace {

constexpr std::string_view kConstraintsSchema = "shardscape.partition_constraints/1";

std::vector<std::string> strategyNames()
{
    std::vector<std::string> names;
    for (int i = 0; i < kShardStrategyCount; ++i)
        names.emplace_back(strategyName(static_cast<ShardStrategy>(i)));
    return names;
}

} // namespace

PartitionConstraints partitionConstraintsFromJson(const nlohmann::json& doc, std::string_view origin)
{
    JsonFields fields(doc, std::string(origin));
    if (const auto schema = fields.optString("schema"); schema && *schema != kConstraintsSchema)
        fields.fail("schema", cat("unknown schema '", *schema, "'"), cat("use \"", kConstraintsSchema, "\""));
    const auto& entries = fields.array("constraints", true);
    fields.checkNoUnknownKeys();

    PartitionConstraints constraints;
    for (std::size_t i = 0; i < entries.size(); ++i) {
        const std::string where = cat("constraints[", i, "]");
        JsonFields entry(entries[i], std::string(origin), where);
        PartitionRule rule;
        rule.origin = cat(origin, ": ", where);
        rule.module = entry.optString("module").value_or("");
        rule.op = entry.optString("op").value_or("");
        if (rule.module.empty() == rule.op.empty())
            throw InputError(cat(rule.origin, ": give exactly one non-empty \"module\" or \"op\""),
                             "\"module\" is a module-path suffix such as \"mlp\", \"op\" an exact op name");
        const auto& allowed = entry.array("allowed", true);
        entry.checkNoUnknownKeys();
        if (allowed.empty())
            throw InputError(cat(rule.origin, ".allowed: the list is empty"),
                             cat("name at least one of ", join(strategyNames())));
        for (std::size_t k = 0; k < allowed.size(); ++k) {
            const auto& item = allowed[k];
            if (!item.is_string())
                throw InputError(
                    cat(rule.origin, ".allowed[", k, "]: expected a strategy name, got ", describeJson(item)));
            const auto name = item.get<std::string>();
            const auto strategy = parseShardStrategy(name);
            if (!strategy)
                throw InputError(cat(rule.origin, ".allowed[", k, "]: unknown strategy '", name, "'"),
                                 cat("use one of ", join(strategyNames())));
            if (std::find(rule.allowed.begin(), rule.allowed.end(), *strategy) != rule.allowed.end())
                throw InputError(cat(rule.origin, ".allowed[", k, "]: '", name, "' is listed twice"));
            rule.allowed.push_back(*strategy);
        }
        constraints.rules.push_back(std::move(rule));
    }
    return constraints;
}

PartitionConstraints loadPartitionConstraints(const std::filesystem::path& path)
{
    return partitionConstraintsFromJson(readJsonFile(path), path.string());
}

} // namespace shardscape
