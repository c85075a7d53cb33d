// A kplay subcommand: registers its flags on the parent app, and runs after parsing.
// run() returns the exit status; kplay::Error escaping it is turned into a message by main.
#pragma once
#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "kplay/types.hpp"
#include "spec/activations.hpp"

namespace kplay::cli {

class Command {
 public:
  virtual ~Command() = default;
  virtual CLI::App* app() const = 0;
  virtual int run() = 0;

  // Whether the kernel run() was working on when it threw is a user snippet's: its compile error
  // is then bad input (exit 2), the text being the user's; a built-in's is kplay's (exit 1).
  bool working_on_snippet() const { return working_on_snippet_; }

 protected:
  // Called by run() as it starts on each spec.
  void working_on(const KernelSpec& spec) { working_on_snippet_ = resolve_activation(spec.activation).act->user; }

 private:
  bool working_on_snippet_ = false;
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
constexpr int kExitTimeout = 4;   // a kernel outlived --timeout (util/watchdog.hpp)

// The arguments kplay was started with (argv), for `autotune` to start itself again.
const std::vector<std::string>& program_arguments();
void set_program_arguments(std::vector<std::string> args);  // main, first
// Arms the watchdog for `seconds` (0: off) with exit status kExitTimeout.
void arm_watchdog(double seconds);

}  // namespace kplay::cli
