// The command line at its trust boundaries: every option refuses an empty value, numbers and
// activation parameters that a kernel cannot hold are refused, a failed write to standard output
// is never a success, and a kernel that crashes or a source that never finishes compiling ends
// with a message naming it (autotune records such a candidate and goes on). The cases that
// launch kernels need an OpenCL device (PoCL in CI) and skip with a message without one.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli_app.hpp"
#include "cli_runner.hpp"
#include "db_test_support.hpp"
#include "device_fixture.hpp"
#include "kplay/error.hpp"
#include "spec/activations.hpp"

using namespace kplay;
using kplay::test::CliResult;
using kplay::test::TempDir;

namespace {

// Under timeout(1): a regression that hangs fails the test (status 137) instead of hanging it.
CliResult kplay_cli(const std::string& args, const std::string& env = "", int seconds = 120) {
  return test::run_cli(args, env + (env.empty() ? "" : " ") + "timeout -s KILL " + std::to_string(seconds));
}

bool opencl_or_skip() { return test::backend_or_skip("opencl"); }

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Every subcommand path ("db prune") with the options that take a value, from the app kplay parses.
void options_taking_values(const CLI::App& app, const std::string& path,
                           std::vector<std::pair<std::string, const CLI::Option*>>& out) {
  for (const CLI::Option* o : app.get_options())
    if (cli::takes_value(*o)) out.emplace_back(path, o);
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    options_taking_values(*sub, path + (path.empty() ? "" : " ") + sub->get_name(), out);
}

// stdout to /dev/full, stderr to the test: (status, stderr).
CliResult to_full_device(const std::string& args, const std::string& env = "") {
  return test::run_shell("(" + env + (env.empty() ? "" : " ") + "timeout -s KILL 300 " + test::cli_path() + " " + args +
                         " 2>&1 >/dev/full)");
}

}  // namespace

TEST_CASE("every option of every subcommand refuses an empty value with exit status 2") {
  const auto cli = cli::make_cli_app();
  std::vector<std::pair<std::string, const CLI::Option*>> options;
  options_taking_values(cli->app, "", options);
  REQUIRE_FALSE(options.empty());
  std::string checked;
  for (const auto& [path, o] : options) {
    std::vector<std::string> forms;
    if (!o->get_lnames().empty()) {
      forms = {"--" + o->get_lnames().front() + " ''", "--" + o->get_lnames().front() + "="};
    } else if (!o->get_snames().empty()) {
      forms = {"-" + o->get_snames().front() + " ''"};
    } else {
      forms = {"''"};  // a positional argument
    }
    for (const auto& form : forms) {
      // --backend opencl (its own empty value aside): refused before any backend is made.
      const std::string args = path + " " + form;
      const CliResult r = kplay_cli(args, "KPLAY_DB=:memory:");
      INFO("kplay " << args << "\n" << r.output);
      CHECK(r.status == 2);
      CHECK(r.has("an empty value is not allowed"));
    }
    checked += path + " " + forms.front() + "\n";
  }
  MESSAGE("options checked:\n" << checked);
}

TEST_CASE("numbers beyond their type, a scale nothing uses, and hex MiB are refused with exit status 2") {
  struct Case {
    const char* args;
    const char* message;
  } cases[] = {
      {"run --n 10 --seed 18446744073709551616", "is more than 18446744073709551615"},
      {"run --n 10 --seed 99999999999999999999999", "is more than 18446744073709551615"},
      {"check --seed 18446744073709551616", "is more than 18446744073709551615"},
      {"autotune --n 4096 --seed 18446744073709551616", "is more than 18446744073709551615"},
      {"run --act 'gated(silu)' --n 10 --scale 2", "--scale is for FP8 output"},
      {"check --act 'gated(silu)' --scale 2", "--scale is for FP8 output"},
      {"db prune --max-mb 0x10 --db :memory:", "--max-mb 0x10: expected MiB"},
      {"db prune --max-mb ' 5' --db :memory:", "--max-mb  5: expected MiB"},
      {"db prune --max-mb 5x --db :memory:", "--max-mb 5x: expected MiB"},
  };
  for (const auto& c : cases) {
    const CliResult r =
        kplay_cli(std::string(c.args) + (std::string(c.args).rfind("db ", 0) == 0 ? "" : " --backend opencl"));
    INFO("kplay " << c.args << "\n" << r.output);
    CHECK(r.status == 2);
    CHECK(r.has(c.message));
  }
  // Leading zeros are decimal, not octal, and 2^64 - 1 itself is a seed.
  const CliResult r = kplay_cli("run --n 10 --seed 18446744073709551615 --act mystery --backend opencl");
  CHECK_FALSE(r.has("--seed"));
  CHECK(r.has("unknown activation"));
  TempDir dir;
  CHECK(kplay_cli("db prune --max-mb 1.5e1 --db " + dir.file("k.db")).has("removed 0 binaries"));
}

TEST_CASE("activation parameters a float32 kernel cannot hold are refused when the text is read") {
  for (const char* text : {"training(rrelu(lower=1e308,upper=1e308))", "rrelu(lower=-3e38,upper=3e38)",
                           "celu(alpha=1e-320)", "celu(alpha=1e-39)", "leaky_relu(negative_slope=1e39)",
                           "softplus(beta=1e-300)", "hardtanh(min_val=-1e300)", "threshold(threshold=1,value=4e38)"}) {
    INFO(text);
    bool refused = false;
    try {
      resolve_activation(text);
    } catch (const Error& e) {
      refused = e.code() == ErrorCode::invalid_argument;
      CHECK(std::string(e.what()).find("float32 normal numbers") != std::string::npos);
    }
    CHECK(refused);
  }
  // The edges of the range, and 0, still hold.
  for (const char* text : {"celu(alpha=1.2e-38)", "leaky_relu(negative_slope=0)", "rrelu(lower=0.1,upper=3e38)",
                           "hardtanh(min_val=-3.4e38,max_val=3.4e38)"}) {
    INFO(text);
    CHECK_NOTHROW(resolve_activation(text));
  }
  const CliResult r = kplay_cli("run --act 'celu(alpha=1e-320)' --n 10 --backend opencl");
  INFO(r.output);
  CHECK(r.status == 2);
  CHECK(r.has("celu's alpha is 1e-320"));
}

TEST_CASE("a template missing from KPLAY_TEMPLATE_DIR is bad input: exit status 2") {
  TempDir dir;
  const std::string templates = dir.file("templates");
  REQUIRE(::mkdir(templates.c_str(), 0700) == 0);
  const CliResult r = kplay_cli("emit --backend opencl --act relu", "KPLAY_TEMPLATE_DIR=" + templates);
  INFO(r.output);
  CHECK(r.status == 2);
  CHECK(r.has("not found in KPLAY_TEMPLATE_DIR"));
}

TEST_CASE("a failed write to standard output is exit status 1 with a message, never a success") {
  TempDir dir;
  const std::string db = dir.file("k.db");
  for (const std::string& args : std::vector<std::string>{
           "list", "emit --backend opencl --act relu", "devices", "db list --db " + db, "db show --db " + db,
           "db path --db " + db, "db verify --db " + db, "--help", "--version", "run --help"}) {
    const CliResult r = to_full_device(args);
    INFO("kplay " << args << " >/dev/full\n" << r.output);
    CHECK(r.status != 0);
    CHECK(r.has("cannot write the output to standard output"));
  }
  // The same commands with somewhere to write succeed: the failure above is the write's.
  CHECK(kplay_cli("list").status == 0);
  CHECK(kplay_cli("db path --db " + db).status == 0);
}

TEST_SUITE("opencl") {
  TEST_CASE("run, check, bench and autotune --json to a full device exit non-zero; --json's stdout is JSON alone") {
    if (!opencl_or_skip()) return;
    TempDir dir;
    for (const std::string& args :
         {std::string("run --backend opencl --act relu --n 4096 --db :memory:"),
          std::string("check --backend opencl --act relu --dtype f16"),
          std::string("bench --backend opencl --act relu --n 4096 --repeat 1 --warmup 0 --no-db"),
          "autotune --backend opencl --act relu --n 4096 --strategy local --budget 1 --json --db " +
              dir.file("a.db")}) {
      const CliResult r = to_full_device(args);
      INFO("kplay " << args << " >/dev/full\n" << r.output);
      CHECK(r.status == 1);
      CHECK(r.has("cannot write the output to standard output"));
    }
    // --backend auto says which backend it took on stderr: stdout parses as JSON.
    const std::string out = dir.file("out.json");
    const CliResult r = test::run_shell("(timeout -s KILL 300 " + test::cli_path() +
                                        " autotune --act relu --n 4096 --strategy local --budget 1 --json --db " +
                                        dir.file("b.db") + " >" + out + ")");
    INFO(r.output);
    REQUIRE(r.status == 0);
    CHECK(r.has("backend: "));
    const std::string json = read_text(out);
    INFO(json);
    CHECK_FALSE(nlohmann::json::parse(json).is_discarded());
    // bench --json - (and --csv -): the document alone on stdout, the table on stderr.
    const std::string bench_out = dir.file("bench.json");
    const CliResult b =
        test::run_shell("(timeout -s KILL 300 " + test::cli_path() +
                        " bench --act relu --n 4096 --repeat 1 --warmup 0 --no-db --json - >" + bench_out + ")");
    INFO(b.output);
    REQUIRE(b.status == 0);
    CHECK(b.has("% copy"));
    const std::string bench_json = read_text(bench_out);
    INFO(bench_json);
    CHECK_FALSE(nlohmann::json::parse(bench_json).is_discarded());
    CHECK(kplay_cli("bench --act relu --n 4096 --no-db --csv - --json -").status == 2);
  }

  // A store to an address no buffer holds: on PoCL a SIGSEGV in kplay's process.
  const char* kFaultingSnippet =
      "/* bad.h: faults */\n"
      "KP_FN KP_C kp_act_forward(KP_C x) {\n"
      "  *(volatile __global int*)(ulong)64 = 1;\n"
      "  return x;\n"
      "}\n";

  // A 4 MB private array: on PoCL it overflows the stack of the worker thread running the kernel.
  // It is written a page at a time from the end nearest the frame down, as a compiler's stack
  // probes would, so the first access past the stack is its guard page. One store 4 MB down skips
  // the guard and may land in another thread's stack or signal stack: the process then dies in
  // ways no handler can report, which is memory corruption, not the overflow this test is about.
  const char* kStackOverflowSnippet =
      "/* big.h: overflows its thread's stack */\n"
      "KP_FN KP_C kp_act_forward(KP_C x) {\n"
      "  volatile float big[1048576];\n"
      "  for (int i = 1048575; i >= 0; i -= 1024) big[i] = x;\n"
      "  return big[((int)x * 7) & 1048575];\n"
      "}\n";

  TEST_CASE("a kernel that crashes ends run with a message naming it; autotune records it and goes on") {
    if (!opencl_or_skip()) return;
    // The private array overflows the stack as PoCL's optimized build lays it out; ctest's PoCL
    // entries build with -cl-opt-disable (tests/CMakeLists.txt), which does not: the CLI runs
    // here get PoCL's defaults back.
    struct PoclDefaults {
      const char* flags = std::getenv("POCL_EXTRA_BUILD_FLAGS");
      std::string saved = flags ? flags : "";
      PoclDefaults() { unsetenv("POCL_EXTRA_BUILD_FLAGS"); }
      ~PoclDefaults() {
        if (flags) setenv("POCL_EXTRA_BUILD_FLAGS", saved.c_str(), 1);
      }
      PoclDefaults(const PoclDefaults&) = delete;
      PoclDefaults& operator=(const PoclDefaults&) = delete;
    } pocl_defaults;
    TempDir dir;
    test::write_file(dir.file("bad.h"), kFaultingSnippet);
    test::write_file(dir.file("big.h"), kStackOverflowSnippet);
    for (const char* name : {"bad", "big"}) {
      const CliResult r =
          kplay_cli("run --backend opencl --act " + dir.file(std::string(name) + ".h") + " --n 4096 --db :memory:");
      INFO(r.output);
      CHECK(r.status == 1);
      CHECK(r.has("kplay: error: the kernel crashed (signal 11"));
      CHECK(r.has(std::string("while running ") + name + "@"));
    }

    const std::string db = dir.file("k.db");
    const std::string args = "autotune --backend opencl --act " + dir.file("bad.h") +
                             ",relu --n 4096 --strategy local --budget 2 --db " + db;
    const CliResult tuned = kplay_cli(args, "", 600);
    INFO(tuned.output);
    CHECK(tuned.status == 1);  // a job failed
    CHECK(tuned.has("that candidate is recorded as failed; going on in a fresh process"));
    CHECK(tuned.has("crashed the process: the kernel most likely crashes in every config"));
    CHECK(tuned.has("relu "));
    CHECK(tuned.has("best config"));
    // Again: relu is resumed, the snippet fails at once from what is recorded, nothing crashes.
    const CliResult again = kplay_cli(args, "", 600);
    INFO(again.output);
    CHECK(again.status == 1);
    CHECK(again.has("resumed"));
    CHECK_FALSE(again.has("signal 11"));
  }

  TEST_CASE("--timeout bounds compiling too: a source whose macros expand without end stops with exit status 4") {
    if (!opencl_or_skip()) return;
    TempDir dir;
    // Each level expands its argument twice: 2^40 expansions of a one-token result, in little memory.
    std::string bomb = "#define F0(x) x\n";
    for (int i = 1; i <= 40; ++i)
      bomb +=
          "#define F" + std::to_string(i) + "(x) F" + std::to_string(i - 1) + "(F" + std::to_string(i - 1) + "(x))\n";
    bomb += "KP_FN KP_C kp_act_forward(KP_C x) { return x * F40(KP_LIT(1.0)); }\n";
    test::write_file(dir.file("bomb.h"), bomb);
    const auto start = std::chrono::steady_clock::now();
    const CliResult r =
        kplay_cli("run --backend opencl --act " + dir.file("bomb.h") + " --n 64 --db :memory: --timeout 3", "", 120);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    INFO(r.output << "\ntook " << took << " s");
    CHECK(r.status == 4);
    CHECK(r.has("timeout: compiling did not finish within 3 s (--timeout) for bomb@"));
  }
}
