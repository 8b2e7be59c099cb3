// SPDX-License-Identifier: MIT
// shardscape-cli: wiring only. Every command's work happens in core; errors become exit codes here.
#include "cli_common.h"
#include "commands.h"

#include "shardscape/support/error.h"

#include <exception>
#include <iostream>

int main(int argc, char** argv)
{
    using namespace shardscape;
    CLI::App app {"Shardscape: plan, simulate and export parallel training of large models", "shardscape-cli"};
    app.require_subcommand(1);
    app.set_version_flag("--version", "shardscape-cli 0.1.0");
    cli::CommandAction action;
    cli::addPresetCommands(app, action);
    cli::addInspectCommand(app, action);
    cli::addSimulateCommand(app, action);
    cli::addPlanCommand(app, action);
    cli::addExportCommand(app, action);
    cli::addProfileCommand(app, action);

    try {
        app.parse(argc, argv);
    } catch (const CLI::Success& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        // One line naming the cause, like every other bad input.
        std::cerr << "error: " << e.what() << " (run with --help for usage)\n";
        return cli::kExitBadInput;
    }
    try {
        return action ? action() : cli::kExitBadInput;
    } catch (const InputError& e) {
        std::cerr << "error: " << e.message() << '\n';
        return cli::kExitBadInput;
    } catch (const std::bad_alloc&) {
        std::cerr << "error: out of memory\n";
        return cli::kExitInternal;
    } catch (const std::exception& e) {
        std::cerr << "internal error: " << e.what() << '\n';
        return cli::kExitInternal;
    }
}
