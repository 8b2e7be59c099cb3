// SPDX-License-Identifier: MIT
// The DeepSpeed config-JSON reader (import_deepspeed.cpp), for importJobConfigText's format dispatch.
// Private to core/src/plan.
#pragma once

#include "shardscape/plan/config_import.h"

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

namespace shardscape::importing {

ImportedConfig importDeepSpeed(const nlohmann::json& doc, const std::string& origin, const ImportOptions& options);

} // namespace shardscape::importing
