// SPDX-License-Identifier: MIT
#include "cli_common.h"

#include "shardscape/support/atomic_file.h"

#include <iostream>
#include <nlohmann/json.hpp>

namespace shardscape::cli {

void writeJsonOutput(const nlohmann::json& doc, const std::string& path)
{
    const std::string text = doc.dump(2) + "\n";
    if (path == "-")
        std::cout << text;
    else
        writeFileAtomic(path, text);
}

} // namespace shardscape::cli
