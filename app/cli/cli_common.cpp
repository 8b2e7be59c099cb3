// SPDX-License-Identifier: MIT
#include "cli_common.h"

#include "shardscape/support/atomic_file.h"
#include "shardscape/support/error.h"
#include "shardscape/support/strings.h"

#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>

namespace shardscape::cli {

std::string frameworkChoices()
{
    std::vector<std::string> names;
    for (const auto f : allFrameworks())
        names.emplace_back(frameworkName(f));
    const std::string last = names.back();
    names.pop_back();
    return join(names, ", ") + " or " + last;
}

Framework frameworkFromOption(const std::string& name)
{
    if (const auto framework = parseFramework(toLower(name)))
        return *framework;
    std::vector<std::string> names;
    for (const auto f : allFrameworks())
        names.emplace_back(frameworkName(f));
    const auto nearest = nearestNames(toLower(name), names, 1);
    const bool close
        = !nearest.empty() && editDistance(name, nearest.front()) <= std::max<std::size_t>(2, name.size() / 3);
    throw InputError(
        cat("unknown framework '", name, "'"),
        cat(close ? cat("did you mean '", nearest.front(), "'? ") : std::string(), "choose ", frameworkChoices()));
}

void writeJsonOutput(const nlohmann::json& doc, const std::string& path)
{
    const std::string text = doc.dump(2) + "\n";
    if (path == "-")
        std::cout << text;
    else
        writeFileAtomic(path, text);
}

} // namespace shardscape::cli
