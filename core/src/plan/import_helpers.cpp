// SPDX-License-Identifier: MIT
#include "import_helpers.h"

#include <algorithm>

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

std::vector<std::string> megatronBlockRecompute(const std::vector<int>& chunkBlocks, std::int64_t layers)
{
    std::vector<std::string> blocks;
    bool every = true;
    std::int64_t first = 0;
    for (const int count : chunkBlocks) {
        for (std::int64_t j = 0; j < std::min<std::int64_t>(layers, count); ++j)
            blocks.push_back(std::to_string(first + j));
        every = every && layers >= count;
        first += count;
    }
    return every ? std::vector<std::string> {} : blocks;
}

} // namespace shardscape::importing
