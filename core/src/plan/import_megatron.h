// SPDX-License-Identifier: MIT
// The Megatron-LM launch-script reader (import_megatron.cpp), for importJobConfigText's format dispatch.
// Private to core/src/plan.
#pragma once

#include "shardscape/plan/config_import.h"

#include <string_view>

namespace shardscape::importing {

ImportedConfig importMegatron(std::string_view text, std::string_view origin, const ImportOptions& options);

} // namespace shardscape::importing
