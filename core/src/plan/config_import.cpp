// SPDX-License-Identifier: MIT
// Job configs of other frameworks read back into a ParallelConfig: format detection and dispatch to the readers
// (import_torchtitan.cpp, import_deepspeed.cpp, import_megatron.cpp), and Shardscape's own plan file.
#include "import_deepspeed.h"
#include "import_helpers.h"
#include "import_megatron.h"
#include "import_torchtitan.h"

#include "shardscape/plan/plan_file.h"
#include "shardscape/support/error.h"
#include "shardscape/support/json_fields.h"
#include "shardscape/support/json_file.h"
#include "shardscape/support/strings.h"

#include <nlohmann/json.hpp>

namespace shardscape {

namespace {

using importing::fail;

// ---- Shardscape plan file ------------------------------------------------------------------------------------

ImportedConfig importPlan(const nlohmann::json& doc, const std::string& origin)
{
    const LoadedPlan plan = planFromJson(doc, origin);
    ImportedConfig out;
    out.format = "shardscape";
    out.config = plan.config;
    out.config.stage_layers = plan.resolved_stage_layers; // the split it was evaluated with
    out.global_batch = plan.global_batch;
    out.seq_len = plan.seq_len;
    out.model_name = plan.model_name;
    return out;
}

enum class Format
{
    Toml,
    Json,
    Script
};

Format detect(std::string_view text, std::string_view origin)
{
    const std::string lower = toLower(origin);
    if (endsWith(lower, ".toml"))
        return Format::Toml;
    if (endsWith(lower, ".json"))
        return Format::Json;
    if (endsWith(lower, ".sh") || endsWith(lower, ".bash"))
        return Format::Script;
    // No telling extension: look at the content.
    const auto first = text.find_first_not_of(" \t\r\n");
    if (first != std::string_view::npos && text[first] == '{')
        return Format::Json;
    if (text.find("pretrain_gpt.py") != std::string_view::npos
        || startsWith(text.substr(first == std::string_view::npos ? 0 : first), "#!"))
        return Format::Script;
    if (text.find("[parallelism]") != std::string_view::npos || text.find("[training]") != std::string_view::npos)
        return Format::Toml;
    return Format::Script;
}

/**
 * The framework an importer set must be able to run the configuration the file describes; when its profile refuses
 * it (torchtitan with DDP only, DeepSpeed's pipeline with ZeRO-2/3), the file is simulated as written with the
 * generic profile and a warning says why.
 */
ImportedConfig checkedFramework(ImportedConfig out)
{
    ParallelConfig& c = out.config;
    if (c.framework == Framework::Generic)
        return out;
    const std::string problem = frameworkRestriction(frameworkProfile(c.framework), c);
    if (!problem.empty()) {
        out.warnings.push_back(cat("the ", frameworkName(c.framework), " profile does not run this configuration (",
                                   problem, "): simulated with the generic profile"));
        c.framework = Framework::Generic;
    }
    return out;
}

} // namespace

ImportedConfig importJobConfigText(std::string_view text, std::string_view originView, const ImportOptions& options)
{
    const std::string origin(originView);
    if (text.find_first_not_of(" \t\r\n") == std::string_view::npos)
        fail(origin, 0, "the file is empty", "export a torchtitan TOML, Megatron script or DeepSpeed JSON");
    switch (detect(text, origin)) {
    case Format::Toml:
        return checkedFramework(importing::importTorchtitan(text, origin, options));
    case Format::Json: {
        const nlohmann::json doc = parseJson(text, origin);
        if (!doc.is_object())
            fail(origin, 0, cat("expected a JSON object, got ", describeJson(doc)));
        if (doc.contains("schema") && doc["schema"] == kPlanSchema)
            return importPlan(doc, origin);
        return checkedFramework(importing::importDeepSpeed(doc, origin, options));
    }
    case Format::Script:
        return checkedFramework(importing::importMegatron(text, origin, options));
    }
    return {};
}

ImportedConfig importJobConfig(const std::filesystem::path& path, const ImportOptions& options)
{
    return importJobConfigText(readTextFile(path), path.string(), options);
}

bool applyJobAttention(BuildOptions& build, const ImportedConfig& imported)
{
    if (!imported.model || imported.model->flash_attention)
        return false;
    build.megatron_local_attention = true;
    build.masked_softmax_fusion = imported.model->masked_softmax_fusion;
    return true;
}

} // namespace shardscape
