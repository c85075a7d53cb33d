// The kplay command line says what it does: its version, a mistyped subcommand by name, where a
// knob's default comes from, the kernel `run` launches (`emit` prints the same), the sizes
// `autotune` skips, and whose fault a compile error is (a user snippet's: exit 2).
#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "cli_runner.hpp"
#include "db_test_support.hpp"
#include "device_fixture.hpp"
#include "kplay/types.hpp"
#include "temp_templates.hpp"

using kplay::test::CliResult;
using kplay::test::run_cli;

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The first line that starts with `prefix`, without it; "" when none does.
std::string line_after(const std::string& text, const std::string& prefix) {
  for (const auto& line : lines_of(text))
    if (line.rfind(prefix, 0) == 0) return line.substr(prefix.size());
  return "";
}

// The help line of `option` (its first line, where CLI11 shows a default).
std::string help_line(const std::string& help, const std::string& option) {
  for (const auto& line : lines_of(help)) {
    const auto at = line.find(option + " ");
    if (at != std::string::npos && line.find_first_not_of(' ') == at) return line;
  }
  return "";
}

// The subcommands `kplay --help` lists: the first word of each line after its subcommands heading.
std::vector<std::string> subcommands() {
  const CliResult help = run_cli("--help");
  REQUIRE(help.status == 0);
  std::vector<std::string> names;
  bool in_list = false;
  for (const auto& line : lines_of(help.output)) {
    std::string lower = line;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    if (lower.rfind("subcommands", 0) == 0) {
      in_list = true;
      continue;
    }
    if (!in_list || line.empty() || line[0] != ' ') continue;
    std::istringstream words(line);
    std::string name;
    words >> name;
    names.push_back(name);
  }
  return names;
}

// The backend `--backend auto` takes here, or "" where none has a device.
std::string auto_backend() {
  std::string why;
  if (kplay::test::backend_available("cuda", &why)) return "cuda";
  if (kplay::test::backend_available("opencl", &why)) return "opencl";
  return "";
}

}  // namespace

TEST_CASE("kplay --version prints its version, MAJOR.MINOR.PATCH, and exits 0") {
  const CliResult r = run_cli("--version");
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK(std::regex_match(r.output, std::regex("kplay [0-9]+\\.[0-9]+\\.[0-9]+\n")));
}

TEST_CASE("a mistyped subcommand is named, with the subcommands there are, and exit status 2") {
  const std::vector<std::string> names = subcommands();
  REQUIRE(std::find(names.begin(), names.end(), "run") != names.end());
  for (const char* args : {"rnu", "rnu --act relu --n 10", "--help-me"}) {
    const CliResult r = run_cli(args);
    INFO("kplay " << args << "\n" << r.output);
    CHECK(r.status == 2);
    if (std::string(args).rfind("rnu", 0) != 0) continue;  // an unknown flag: CLI11's own message
    CHECK(r.has("unknown subcommand 'rnu'"));
    CHECK_FALSE(r.has("A subcommand is required"));
    for (const auto& name : names) CHECK(r.has(" " + name));
  }
}

TEST_CASE("--help shows a knob's default only where it holds: run, bench and emit take the tuning layers'") {
  const std::string block_default = "=" + std::to_string(kplay::KernelConfig{}.block);
  for (const char* command : {"run", "bench", "emit"}) {
    const CliResult r = run_cli(std::string(command) + " --help");
    INFO(command << "\n" << r.output);
    REQUIRE(r.status == 0);
    for (const char* knob : {"--vec", "--block", "--per-thread", "--grid", "--cache"}) {
      const std::string line = help_line(r.output, knob);
      CAPTURE(line);
      CHECK(line.find("default: from the tuning layers") != std::string::npos);
      CHECK(line.find(knob + std::string(" INT=")) == std::string::npos);
      CHECK(line.find(knob + std::string(" TEXT=")) == std::string::npos);
    }
    CHECK(help_line(r.output, "--block").find(block_default) == std::string::npos);
    CHECK(r.has(kplay::to_string(kplay::KernelConfig{})));  // what the others take once one is given
  }
  // check runs the built-in defaults (no tuning layers): those are shown.
  const CliResult check = run_cli("check --help");
  CHECK(help_line(check.output, "--block").find(block_default) != std::string::npos);
  // autotune searches the knobs and refuses them: not in its help, still refused by name.
  const CliResult tune = run_cli("autotune --help");
  CHECK(help_line(tune.output, "--block").empty());
  const CliResult refused = run_cli("autotune --act relu --n 1024 --block 128 --db :memory:");
  CHECK(refused.status == 2);
  CHECK(refused.has("autotune searches the knobs itself"));
}

TEST_CASE("kplay emit without a device of the backend still prints, and says what it rendered") {
  std::string why;
  if (kplay::test::backend_available("cuda", &why)) return;  // the device case is the next test's
  const CliResult r = run_cli("emit --backend cuda --act relu");
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK(r.has("no device ("));
  CHECK(r.has("kp_act_forward"));
}

TEST_SUITE("opencl") {
  TEST_CASE("kplay emit prints the kernel kplay run launches: the same backend, config and entry") {
    const std::string backend = auto_backend();
    if (backend.empty()) {
      MESSAGE("skipped: no device for --backend auto");
      return;
    }
    kplay::test::TempDir dir;
    const std::string db = dir.file("kernels.db");
    // The tuning layers with no database (shipped, model), with a tuning of the user's, and knobs.
    REQUIRE(run_cli("autotune --act relu --n 65536 --strategy fast --db " + db).status == 0);
    struct Case {
      std::string flags, layer;
    } cases[] = {
        {"--no-db", ""}, {"--db " + db, "user"}, {"--db " + db + " --block 64 --per-thread 2", "command line"}};
    for (const auto& c : cases) {
      const CliResult run = run_cli("run --act relu --n 65536 --repeat 1 --warmup 0 " + c.flags);
      const CliResult emit = run_cli("emit --act relu --n 65536 " + c.flags);
      INFO(c.flags << "\nrun:\n"
                   << run.output << "\nemit:\n"
                   << emit.output.substr(emit.output.size() > 1500 ? emit.output.size() - 1500 : 0));
      REQUIRE(run.status == 0);
      REQUIRE(emit.status == 0);
      CHECK(line_after(emit.output, "backend: ") == line_after(run.output, "backend: "));
      CHECK(line_after(emit.output, "backend: ").rfind(backend + " ", 0) == 0);
      CHECK_FALSE(line_after(run.output, "config: ").empty());
      CHECK(line_after(emit.output, "config: ") == line_after(run.output, "config: "));
      CHECK(line_after(emit.output, "layer:  ") == line_after(run.output, "layer:  "));
      if (!c.layer.empty()) CHECK(line_after(run.output, "layer:  ").rfind(c.layer + ":", 0) == 0);
      // run: "kernel: ENTRY, FORMAT ..."; emit: "entry ENTRY, options ...".
      const std::string ran = line_after(run.output, "kernel: "), emitted = line_after(emit.output, "entry ");
      CHECK_FALSE(ran.empty());
      CHECK(emitted.substr(0, emitted.find(',')) == ran.substr(0, ran.find(',')));
    }
  }

  TEST_CASE("kplay autotune skips a size the device cannot hold, says so, and tunes the rest") {
    std::string why;
    if (!kplay::test::backend_available("opencl", &why)) {
      MESSAGE("skipped, no OpenCL device: " << why);
      return;
    }
    kplay::test::TempDir dir;
    const std::string base =
        "autotune --backend opencl --act relu --dtype f32 --strategy fast --db " + dir.file("t.db");
    const CliResult r = run_cli(base + " --n 65536,2^40");
    INFO(r.output);
    CHECK(r.status == 0);
    CHECK(r.has("skipping --n 1099511627776 for 1 of 1 kernels, too large for the device"));
    // The table's rows (device 0): the size that fits, and not the other.
    std::vector<std::string> rows;
    for (const auto& line : lines_of(r.output))
      if (line.rfind("0 ", 0) == 0) rows.push_back(line);
    REQUIRE_FALSE(rows.empty());
    for (const auto& row : rows) {
      CHECK(row.find(" 65536 ") != std::string::npos);
      CHECK(row.find("FAILED") == std::string::npos);
    }
    // Nothing left to tune: refused as bad input, naming the size.
    const CliResult none = run_cli(base + " --n 2^40");
    INFO(none.output);
    CHECK(none.status == 2);
    CHECK(none.has("--n 1099511627776 (relu forward f32)"));
  }

  TEST_CASE("a user snippet that does not compile is bad input (exit 2), a built-in that does not is not (exit 1)") {
    std::string why;
    if (!kplay::test::backend_available("opencl", &why)) {
      MESSAGE("skipped, no OpenCL device: " << why);
      return;
    }
    kplay::test::TempDir dir;
    const std::string snippet = dir.file("bad_act.h");
    std::ofstream(snippet) << "/* a syntax error on line 2 */\nKP_FN KP_C kp_act_forward(KP_C x) { return x +; }\n";
    for (const std::string command : {"run --n 1000 --no-db", "check --sample 256"}) {
      const CliResult r = run_cli(command + " --backend opencl --act " + snippet);
      INFO(command << "\n" << r.output);
      CHECK(r.status == 2);
      CHECK(r.has("does not compile"));
      CHECK(r.has("bad_act.h:2:"));  // the compiler's message, at the snippet's line
    }
    kplay::test::TempTemplates templates;  // a built-in's text broken: kplay's fault, not the input's
    templates.write("activations/relu.h", "KP_FN KP_C kp_act_forward(KP_C x) { return x +; }\n");
    const CliResult broken = run_cli("run --backend opencl --act relu --n 1000 --no-db");
    INFO(broken.output);
    CHECK(broken.status == 1);
    CHECK(broken.has("OpenCL build failed"));
  }
}
