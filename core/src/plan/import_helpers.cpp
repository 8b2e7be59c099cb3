// SPDX-License-Identifier: MIT
#include "import_helpers.h"

#include "shardscape/support/error.h"
#include "shardscape/support/strings.h"

namespace shardscape::importing {

void fail(std::string_view origin, int line, const std::string& what, const std::string& hint)
{
    throw InputError(line > 0 ? cat(origin, ":", line, ": ", what) : cat(origin, ": ", what), hint);
}

std::vector<int> stageLayersFromBlocks(const std::vector<int>& blocks)
{
    std::vector<int> layers = blocks;
    if (!layers.empty()) {
        layers.front() += 1; // the embedding
        layers.back() += 1; // the head (final norm, output, loss)
    }
    return layers;
}

} // namespace shardscape::importing
