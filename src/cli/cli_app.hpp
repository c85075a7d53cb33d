// The kplay command line as one CLI11 app with every subcommand registered, built in one place so
// that rules for every flag (an empty value is refused) hold for flags added later too, and so
// that the tests walk the same app the program parses with.
#pragma once
#include <CLI/CLI.hpp>
#include <memory>
#include <vector>

#include "command.hpp"

namespace kplay::cli {

struct CliApp {
  CLI::App app{"kplay: element-wise activation kernels specialized at run time (NVRTC, OpenCL)"};
  std::vector<std::unique_ptr<Command>> commands;
};

// Every subcommand registered; every option that takes a value refuses an empty one.
std::unique_ptr<CliApp> make_cli_app();

// Adds to every option of `app` and its subcommands that takes a value a check, run before the
// option's own, that refuses '' (CLI11 reads it as 0 into a number and as "" into a text, and both
// mean something: no timeout, prune every binary, the widest vector, no output file).
void refuse_empty_values(CLI::App& app);
// Whether `option` takes a value (a flag, --help included, takes none).
bool takes_value(const CLI::Option& option);

}  // namespace kplay::cli
