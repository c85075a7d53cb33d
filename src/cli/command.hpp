// A kplay subcommand: registers its flags on the parent app, and runs after parsing.
// run() returns the exit status; kplay::Error escaping it is turned into a message by main.
#pragma once
#include <CLI/CLI.hpp>
#include <memory>

namespace kplay::cli {

class Command {
 public:
  virtual ~Command() = default;
  virtual CLI::App* app() const = 0;
  virtual int run() = 0;
};

std::unique_ptr<Command> make_devices_command(CLI::App& parent);
std::unique_ptr<Command> make_list_command(CLI::App& parent);
std::unique_ptr<Command> make_emit_command(CLI::App& parent);
std::unique_ptr<Command> make_run_command(CLI::App& parent);
std::unique_ptr<Command> make_db_command(CLI::App& parent);
std::unique_ptr<Command> make_autotune_command(CLI::App& parent);
std::unique_ptr<Command> make_check_command(CLI::App& parent);
std::unique_ptr<Command> make_bench_command(CLI::App& parent);

// Exit statuses, documented in the README.
constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;    // verification failed, or a runtime error
constexpr int kExitUsage = 2;     // bad input: flags, sizes, config
constexpr int kExitNoDevice = 3;  // backend or device missing

}  // namespace kplay::cli
