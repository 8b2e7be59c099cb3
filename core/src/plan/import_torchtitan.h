// SPDX-License-Identifier: MIT
// The torchtitan job-TOML reader (import_torchtitan.cpp), for importJobConfigText's format dispatch.
// Private to core/src/plan.
#pragma once

#include "shardscape/plan/config_import.h"

#include <string>
#include <string_view>

namespace shardscape::importing {

ImportedConfig importTorchtitan(std::string_view text, const std::string& origin, const ImportOptions& options);

} // namespace shardscape::importing
