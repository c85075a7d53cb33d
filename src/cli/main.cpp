// kplay's command line: parses, dispatches to one Command, and turns errors into a clear message
// and a non-zero status.
#include <cstdio>
#include <string>
#include <vector>

#include "command.hpp"
#include "kplay/error.hpp"
#include "util/watchdog.hpp"

namespace kplay::cli {
namespace {
std::vector<std::string>& arguments() {
  static std::vector<std::string> args;
  return args;
}
}  // namespace
const std::vector<std::string>& program_arguments() { return arguments(); }
void arm_watchdog(double seconds) { watchdog::configure(seconds, kExitTimeout); }
}  // namespace kplay::cli

namespace {
// A word where the subcommand goes that names none: CLI11 would say only "A subcommand is
// required", so kplay names the word and the subcommands there are. "" when argv is fine.
std::string unknown_subcommand(const CLI::App& app, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (!word.empty() && word[0] == '-') continue;  // --help, --version: the top level takes no values
    std::string names;
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
      if (sub->get_name() == word) return "";
      if (!names.empty()) names += ", ";
      names += sub->get_name();
    }
    std::string message = "unknown subcommand '";
    message += word;
    message += "' (expected one of: ";
    message += names;
    message += "; kplay --help says what each does)";
    return message;
  }
  return "";
}

int exit_code(kplay::ErrorCode code) {
  using kplay::ErrorCode;
  switch (code) {
    case ErrorCode::invalid_argument:
    case ErrorCode::invalid_config:
    case ErrorCode::unsupported: return kplay::cli::kExitUsage;
    case ErrorCode::no_device: return kplay::cli::kExitNoDevice;
    default: return kplay::cli::kExitFailed;
  }
}
}  // namespace

static int run(int argc, char** argv) {
  kplay::cli::arguments().assign(argv, argv + argc);
  CLI::App app{"kplay: element-wise activation kernels specialized at run time (NVRTC, OpenCL)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "kplay " KPLAY_VERSION_TEXT, "print kplay's version and exit");
  std::vector<std::unique_ptr<kplay::cli::Command>> commands;
  commands.push_back(kplay::cli::make_devices_command(app));
  commands.push_back(kplay::cli::make_list_command(app));
  commands.push_back(kplay::cli::make_emit_command(app));
  commands.push_back(kplay::cli::make_run_command(app));
  commands.push_back(kplay::cli::make_db_command(app));
  commands.push_back(kplay::cli::make_autotune_command(app));
  commands.push_back(kplay::cli::make_check_command(app));
  commands.push_back(kplay::cli::make_bench_command(app));
  if (const std::string unknown = unknown_subcommand(app, argc, argv); !unknown.empty()) {
    std::fprintf(stderr, "kplay: error: %s\n", unknown.c_str());
    return kplay::cli::kExitUsage;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : kplay::cli::kExitUsage;
  }
  kplay::cli::Command* command = nullptr;
  for (auto& c : commands)
    if (c->app()->parsed()) command = c.get();
  if (!command) return kplay::cli::kExitUsage;
  try {
    return command->run();
  } catch (const kplay::Error& e) {
    std::fflush(stdout);
    if (e.code() == kplay::ErrorCode::compile_failed && command->working_on_snippet()) {
      std::fprintf(stderr, "kplay: error: your snippet does not compile: %s\n", e.describe().c_str());
      return kplay::cli::kExitUsage;
    }
    std::fprintf(stderr, "kplay: error: %s\n", e.describe().c_str());
    return exit_code(e.code());
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "kplay: error: %s\n", e.what());
    return kplay::cli::kExitFailed;
  }
}

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (...) {  // setting up the commands failed (out of memory): still a message, not a crash
    std::fprintf(stderr, "kplay: error: cannot start\n");
    return kplay::cli::kExitFailed;
  }
}
