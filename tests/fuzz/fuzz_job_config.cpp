// SPDX-License-Identifier: MIT
// Job-config import (plan/config_import.cpp, plan/import_megatron.cpp). The origin's extension picks the format, so
// one source builds three targets: FUZZ_JOB_ORIGIN is "job.toml" (torchtitan), "pretrain.sh" (Megatron-LM launch
// script) or "ds_config.json" (DeepSpeed).
#include "fuzz_common.h"
#include "shardscape/plan/config_import.h"

#ifndef FUZZ_JOB_ORIGIN
#error "define FUZZ_JOB_ORIGIN (a file name whose extension selects the format)"
#endif

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    using namespace shardscape;
    // Both options given so the paths that need them (data_parallel_shard_degree = -1, the automatic stage split,
    // a script without a torchrun line) are reached rather than rejected up front.
    ImportOptions options;
    options.world_size = 64;
    options.num_layers = 32;
    return fuzz::loadOnce([&] { importJobConfigText(fuzz::text(data, size), FUZZ_JOB_ORIGIN, options); });
}
