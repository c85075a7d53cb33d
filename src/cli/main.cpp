// kplay's command line: parses, dispatches to one Command, and turns errors (a failed write to
// standard output too) into a clear message and a non-zero status.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "cli_app.hpp"
#include "command.hpp"
#include "kplay/error.hpp"
#include "util/watchdog.hpp"

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

// "--name=" with nothing after the '=': CLI11 takes the next argument as the value instead (--vec=
// --n 10 reads "--n"), or says a value is missing; refused here by name, as '' is by the options'
// own check (cli_app.hpp). "" when argv has none.
std::string empty_assignment(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word == "--") break;
    if (word.size() > 3 && word.compare(0, 2, "--") == 0 && word.find('=') == word.size() - 1)
      return word.substr(0, word.size() - 1) + ": an empty value is not allowed (give one, or leave the option out)";
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
  kplay::cli::set_program_arguments(std::vector<std::string>(argv, argv + argc));
  // A user snippet that faults ends the process on PoCL, which runs kernels in it: at least say
  // which kernel, and let autotune record it as a failed candidate (util/watchdog.hpp).
  kplay::watchdog::report_crashes(kplay::cli::kExitFailed);
  const auto cli = kplay::cli::make_cli_app();
  CLI::App& app = cli->app;
  if (const std::string unknown = unknown_subcommand(app, argc, argv); !unknown.empty()) {
    std::fprintf(stderr, "kplay: error: %s\n", unknown.c_str());
    return kplay::cli::kExitUsage;
  }
  if (const std::string empty = empty_assignment(argc, argv); !empty.empty()) {
    std::fprintf(stderr, "kplay: error: %s\n", empty.c_str());
    return kplay::cli::kExitUsage;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : kplay::cli::kExitUsage;
  }
  kplay::cli::Command* command = nullptr;
  for (auto& c : cli->commands)
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

// What a command printed must have reached standard output: a write that failed there (a full
// disk, /dev/full, a closed file) makes the exit status 1 whatever the command returned, with a
// message, since what the caller reads is incomplete. CLI11 prints help and versions on std::cout.
static int checked_output(int status) {
  std::cout.flush();
  errno = 0;
  const bool flush_failed = std::fflush(stdout) != 0;
  const int err = errno;
  if (!flush_failed && !std::ferror(stdout) && std::cout.good()) return status;
  std::fprintf(stderr, "kplay: error: cannot write the output to standard output (%s)\n",
               flush_failed && err ? std::strerror(err) : "a write failed");
  return status == kplay::cli::kExitOk ? kplay::cli::kExitFailed : status;
}

int main(int argc, char** argv) {
  try {
    return checked_output(run(argc, argv));
  } catch (...) {  // setting up the commands failed (out of memory): still a message, not a crash
    std::fprintf(stderr, "kplay: error: cannot start\n");
    return kplay::cli::kExitFailed;
  }
}
