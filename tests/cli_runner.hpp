// Runs the kplay command line as a user would, for the CLI tests: output (stdout and stderr
// together) and exit status. KPLAY_CLI overrides the build-time path of the binary, for running
// a copied test binary on another machine.
#pragma once
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "build_paths.hpp"

namespace kplay::test {

struct CliResult {
  int status = -1;
  std::string output;
  bool has(const std::string& text) const { return output.find(text) != std::string::npos; }
};

// A shell command's output (stdout and stderr together) and exit status.
inline CliResult run_shell(const std::string& command) {
  CliResult r;
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  const int raw = pclose(p);
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
  return r;
}

// The kplay binary the tests run: $KPLAY_CLI, else the one this build made.
inline std::string cli_path() {
  const char* cli = std::getenv("KPLAY_CLI");
  return cli && *cli ? cli : built_cli_path();
}

// `env` is put before the command, e.g. "KPLAY_DB=/tmp/x.db" or "env -u KPLAY_DB".
inline CliResult run_cli(const std::string& args, const std::string& env = "") {
  return run_shell(env + (env.empty() ? "" : " ") + cli_path() + " " + args);
}

}  // namespace kplay::test
