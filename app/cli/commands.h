// SPDX-License-Identifier: MIT
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace shardscape::cli {

/** Each command adds its subcommand and stores the action to run when it was chosen. */
using CommandAction = std::function<int()>;

void addPresetCommands(CLI::App& app, CommandAction& action);
void addInspectCommand(CLI::App& app, CommandAction& action);
void addSimulateCommand(CLI::App& app, CommandAction& action);
void addPlanCommand(CLI::App& app, CommandAction& action);
void addExportCommand(CLI::App& app, CommandAction& action);
void addProfileCommand(CLI::App& app, CommandAction& action);

} // namespace shardscape::cli
