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

std::vector<std::string> torchtitanLayerSac(const std::vector<int>& stageBlocks, int pp, bool vShaped, int k)
{
    const int stages = static_cast<int>(stageBlocks.size());
    std::vector<int> first(stageBlocks.size() + 1, 0);
    for (std::size_t s = 0; s < stageBlocks.size(); ++s)
        first[s + 1] = first[s] + stageBlocks[s];
    std::vector<int> checkpointed;
    for (int rank = 0; rank < std::max(1, pp); ++rank) {
        std::vector<int> mine;
        if (vShaped && stages == 2 * pp)
            mine = {rank, stages - 1 - rank};
        else
            for (int s = rank; s < stages; s += std::max(1, pp))
                mine.push_back(s);
        int count = 0;
        for (const int s : mine)
            for (int j = 0; j < stageBlocks[static_cast<std::size_t>(s)]; ++j) {
                ++count;
                if (k <= 0 || count % k == 0)
                    checkpointed.push_back(first[static_cast<std::size_t>(s)] + j);
            }
    }
    std::sort(checkpointed.begin(), checkpointed.end());
    std::vector<std::string> out;
    for (const int index : checkpointed)
        out.push_back(std::to_string(index));
    return out;
}

} // namespace shardscape::importing
