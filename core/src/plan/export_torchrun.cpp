// SPDX-License-Identifier: MIT
// torchrun launcher (torch/distributed/run.py) for the plan's nodes x GPUs with the c10d rendezvous. Every node
// runs the same number of processes (LOCAL_WORLD_SIZE must agree). By default it starts torchtitan with the config
// that `export --format torchtitan` writes for the same release (main: the Python module plan_config.py; v0.2: the
// TOML plan.toml); any arguments replace that program.
#include "export_common.h"

#include "shardscape/support/strings.h"

namespace shardscape::exporting {

std::string exportTorchrun(Context& context)
{
    const LaunchShape shape = launchShape(context);
    // The torchtitan config next to this script: main's Python module, or the v0.2.x TOML job file.
    const bool toml = context.framework_version == "v0.2";
    const std::string config = exportDefaultFileName(ExportTarget::Torchtitan, context.framework_version);
    std::vector<std::string> head = headerLines(context, "torchrun launcher");
    head.emplace_back();
    head.push_back(cat("torchrun launcher for ", shape.nodes, " node", shape.nodes == 1 ? "" : "s", " x ",
                       shape.gpus_per_node, " GPUs (", shape.nodes * shape.gpus_per_node,
                       " processes), c10d rendezvous. Run it on every node"));
    head.emplace_back(
        "with the same MASTER_ADDR (the host of node 0) and JOB_ID. Without arguments it runs torchtitan");
    head.push_back(cat(toml ? "v0.2 with the job config" : "main with the config module",
                       " from `shardscape-cli export --format torchtitan", toml ? " --framework-version v0.2`" : "`",
                       " (CONFIG, default ", config));
    head.emplace_back("next to this script); with arguments it runs them instead, e.g.");
    head.emplace_back("  ./launch.sh train.py --my-option 1");
    head.emplace_back(toml ? "  ./launch.sh -m torchtitan.train --job.config_file other.toml"
                           : "  ./launch.sh -m torchtitan.train --module other_config --config other_function");
    std::string out = "#!/usr/bin/env bash\n" + commentBlock(head, "# ");
    if (!context.notes.empty())
        out += "#\n" + notesBlock(context.notes, "# ");
    out += "set -euo pipefail\n\n";
    out += cat("NNODES=${NNODES:-", shape.nodes, "}\n");
    out += cat("GPUS_PER_NODE=${GPUS_PER_NODE:-", shape.gpus_per_node, "}\n");
    out += "MASTER_ADDR=${MASTER_ADDR:-localhost}\n"
           "MASTER_PORT=${MASTER_PORT:-29400}\n"
           "JOB_ID=${JOB_ID:-shardscape}\n";
    out += cat("CONFIG=${CONFIG:-$(dirname \"$0\")/", config, "}\n\n");
    if (toml) {
        out += "if [ \"$#\" -eq 0 ]; then\n"
               "    set -- -m torchtitan.train --job.config_file \"$CONFIG\"\n"
               "fi\n";
    } else {
        // torchtitan/config/manager.py imports --module by name: the config's folder goes on PYTHONPATH.
        out += "if [ \"$#\" -eq 0 ]; then\n"
               "    export PYTHONPATH=\"$(cd \"$(dirname \"$CONFIG\")\" && pwd)${PYTHONPATH:+:$PYTHONPATH}\"\n"
               "    set -- -m torchtitan.train --module \"$(basename \"$CONFIG\" .py)\" --config shardscape_plan\n"
               "fi\n";
    }
    out += "\n"
           "exec torchrun --nnodes \"$NNODES\" --nproc-per-node \"$GPUS_PER_NODE\" \\\n"
           "    --rdzv-backend c10d --rdzv-endpoint \"$MASTER_ADDR:$MASTER_PORT\" --rdzv-id \"$JOB_ID\" \\\n"
           "    \"$@\"\n";
    return out;
}

} // namespace shardscape::exporting
