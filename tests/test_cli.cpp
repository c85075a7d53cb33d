// The kplay command line on bad input: a clear message and a non-zero status, never a crash.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli_runner.hpp"
#include "device_fixture.hpp"
#include "spec/activations.hpp"

namespace {
using Result = kplay::test::CliResult;
Result run_kplay(const std::string& args) { return kplay::test::run_cli(args); }
}  // namespace

TEST_CASE("kplay: bad input gets a message and exit status 2") {
  struct Case {
    const char* args;
    const char* message;
  } cases[] = {
      {"run --act mystery --n 10", "unknown activation 'mystery'"},
      {"run --act 'leaky_relu(slope=0.2)' --n 10", "unknown parameter 'slope'"},
      {"run --act 'hardtanh(min_val=2,max_val=1)' --n 10", "min_val (2) must be <= max_val (1)"},
      {"run --act 'threshold(threshold=1)' --n 10", "missing required parameter value"},
      {"run --act 'elu(alpha=1' --n 10", "malformed activation"},
      {"run --act ./no/such/snippet.h --n 10", "cannot be opened"},
      {"run --act gelu --direction backward --saved output --n 10", "cannot recover its derivative"},
      {"check --act gelu,silu --direction backward --saved output", "nothing left to do"},
      {"run --act selu,swish --n 10", "unknown activation 'swish'"},
      {"run --act selu --n 10 --block 48", "--block 48"},
      {"run --act selu --n 10 --vec 8", "wider than 16 bytes"},
      {"run --act selu --n 10 --grid persistent", "unknown grid policy"},
      {"run --act selu --n 10 --dtype f8", "unknown dtype"},
      {"run --act selu --shape 4096x", "--shape '4096x'"},
      {"run --act selu --shape 0x4", "--shape '0x4'"},
      {"run --act selu --n -5", "--n '-5'"},
      {"run --act selu --n lots", "--n 'lots'"},
      {"run --act selu", "--n N or --shape"},
      {"run --act selu --n 10 --backend metal", "unknown backend 'metal'"},
      {"emit --act selu --vec 3", "not a power of two"},
      {"emit --act selu --ptx --arch ampere", "--arch 'ampere'"},
      {"emit --act selu --late-gradient", "--late-gradient: only a backward kernel"},
      {"emit --act selu --recompute-terms", "are for the row activations"},
      {"emit --act log_softmax --row cluster --cluster 16 --grid grid-stride --recompute-terms",
       "--recompute-terms: only the pipelined cluster kernel's float32 softmax and softmin forward"},
      // bench --compare: config knobs alone, each able to run the spec, refused naming the argument
      {"bench --act selu --n 4096 --compare '--act relu'", "--compare '--act relu': config knobs only"},
      {"bench --act selu --n 4096 --compare '--dtype f16'", "--compare '--dtype f16': config knobs only"},
      {"bench --act selu --n 4096 --compare '--bogus 1'", "--compare '--bogus 1': "},
      {"bench --act selu --n 4096 --compare '--row registers'", "--compare '--row registers': --row, --cluster"},
      {"bench --act selu --n 4096 --compare '--vec 3'", "--compare '--vec 3': --vec 3"},
      {"bench --act selu --n 4096 --compare ''", "--compare: an empty value is not allowed"},
  };
  for (const auto& c : cases) {
    const Result r = run_kplay(c.args);
    INFO("kplay " << c.args << "\n" << r.output);
    CHECK(r.status == 2);
    CHECK(r.output.find(c.message) != std::string::npos);
  }
}

TEST_CASE("kplay: unknown flags and subcommands are usage errors") {
  CHECK(run_kplay("frobnicate").status == 2);
  CHECK(run_kplay("run --n 10 --bogus").status == 2);
  CHECK(run_kplay("--help").status == 0);
}

TEST_CASE("a list skips the specs that cannot exist, before any device work; one asked alone is refused") {
  // On the OpenCL backend (PoCL in CI): saved output for gelu and silu cannot exist, relu's runs.
  std::string why;
  if (!kplay::test::backend_available("opencl", &why)) {
    MESSAGE("skipped, no OpenCL device: " << why);
    return;
  }
  const Result r = run_kplay(
      "check --backend opencl --act gelu,relu,silu --dtype f16 --direction backward --saved output --sample 256");
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK(r.has("skipping gelu backward f16 saved=output: activation 'gelu' cannot recover"));
  CHECK(r.has("skipping silu backward f16 saved=output"));
  CHECK(r.has("== relu backward f16 saved=output"));
  CHECK(r.has("verdict: PASS"));
  CHECK_FALSE(r.has("== gelu"));
  for (const char* cmd : {"check --sample 256", "run --n 4096", "bench --n 4096 --repeat 1 --warmup 0",
                          "autotune --n 4096 --strategy fast --db :memory:"}) {
    const Result one = run_kplay(std::string(cmd) + " --backend opencl --act gelu --direction backward --saved output");
    INFO(cmd << "\n" << one.output);
    CHECK(one.status == 2);
    CHECK(one.has("cannot recover its derivative"));
    CHECK_FALSE(one.has("skipping"));
  }
}

TEST_CASE("kplay list prints every built-in of the registry, and --names, --texts one per line") {
  auto lines = [](const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  };
  const Result names = run_kplay("list --names");
  INFO(names.output);
  REQUIRE(names.status == 0);
  std::vector<std::string> expected;
  for (const auto& a : kplay::activations()) expected.push_back(a.name);
  CHECK(lines(names.output) == expected);

  const Result texts = run_kplay("list --texts");
  REQUIRE(texts.status == 0);
  CHECK(lines(texts.output) == kplay::all_activation_texts());
  // --formulas: the texts, then each combination of parameter values that selects another formula.
  const Result formulas = run_kplay("list --formulas");
  REQUIRE(formulas.status == 0);
  const std::vector<std::string> every = lines(formulas.output), all = kplay::all_activation_texts();
  REQUIRE(every.size() > all.size());
  CHECK(std::vector<std::string>(every.begin(), every.begin() + static_cast<std::ptrdiff_t>(all.size())) == all);
  for (const char* t : {"gelu(approximate=tanh)", "gelu(accuracy=torch)", "gelu(approximate=tanh, accuracy=torch)"})
    CHECK(std::find(every.begin(), every.end(), t) != every.end());
  CHECK(std::set<std::string>(every.begin(), every.end()).size() == every.size());
  for (const auto& t : every) CHECK(kplay::resolve_activation(t).canonical == t);
  CHECK(run_kplay("list --texts --formulas").status == 2);

  const Result table = run_kplay("list");
  INFO(table.output);
  REQUIRE(table.status == 0);
  const std::vector<std::string> rows = lines(table.output);
  // A header, one line per built-in, then the gated form and the per-element slope forms, then
  // the row activations under their own title.
  const std::size_t rowwise = kplay::row_activations().size();
  REQUIRE(rows.size() == expected.size() + 6 + rowwise);
  CHECK(rows[expected.size() + 2].find("gated(ACT)") != std::string::npos);
  CHECK(rows[expected.size() + 3].find("prelu") != std::string::npos);
  CHECK(rows[expected.size() + 3].find("training(rrelu)") != std::string::npos);
  for (std::size_t i = 0; i < rowwise; ++i)
    CHECK(rows[expected.size() + 6 + i].find(kplay::row_activations()[i].name) != std::string::npos);
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const kplay::Activation& a = kplay::activations()[i];
    CAPTURE(rows[i + 1]);
    CHECK(rows[i + 1].rfind(a.name + " ", 0) == 0);
    CHECK(rows[i + 1].find(a.torch_class.empty() ? " -" : " torch.nn." + a.torch_class) != std::string::npos);
    for (const auto& p : a.params) CHECK(rows[i + 1].find(p.name) != std::string::npos);
  }
  CHECK(table.has("negative_slope=0.01"));
  CHECK(table.has("approximate=none (none|tanh)"));
  CHECK(table.has("threshold (required)"));
}

TEST_CASE("kplay devices exits 0 and reports every backend, device or not") {
  const Result r = run_kplay("devices");
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK(r.output.find("cuda:") != std::string::npos);
  CHECK(r.output.find("opencl:") != std::string::npos);
}

TEST_CASE("kplay run on CUDA without a CUDA device says so and exits 3") {
  std::string why;
  if (kplay::test::backend_available("cuda", &why)) return;  // covered by the device run instead
  const Result r = run_kplay("run --backend cuda --act selu --n 1000");
  INFO(r.output);
  CHECK(r.status == 3);
  CHECK(r.output.find("no CUDA device") != std::string::npos);
}

TEST_CASE("kplay run without --backend takes CUDA where there is a device, else OpenCL, and says which") {
  std::string why;
  const bool cuda = kplay::test::backend_available("cuda", &why);
  const bool opencl = kplay::test::backend_available("opencl", &why);
  const Result r = run_kplay("run --act relu --n 1000 --repeat 1 --warmup 0");
  INFO(r.output);
  if (!cuda && !opencl) {
    CHECK(r.status == 3);
    return;
  }
  CHECK(r.status == 0);
  const std::string chosen = cuda ? "cuda" : "opencl";
  CHECK(r.output.find("backend: " + chosen + " (--backend auto") != std::string::npos);
  CHECK(r.output.find("device: " + chosen + " [0]") != std::string::npos);
}

TEST_CASE("kplay emit prints the specialized source without a device") {
  const Result r = run_kplay("emit --act relu --block 128 --vec 2");
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK(r.output.find("#define KP_BLOCK 128") != std::string::npos);
  CHECK(r.output.find("kp_act_forward") != std::string::npos);
  CHECK(r.output.find("kplay_relu_fwd_f32_v2_b128_p1_cd_pm") != std::string::npos);
  CHECK(r.output.find("#define KP_FLAT 1") != std::string::npos);
  // A config without the flat kernel launches only the general one, so emit prints that.
  const Result g = run_kplay("emit --act relu --general-kernel");
  CHECK(g.status == 0);
  CHECK(g.output.find("#define KP_FLAT 0") != std::string::npos);
  const Result late = run_kplay("emit --act gelu --direction backward --late-gradient");
  CHECK(late.status == 0);
  CHECK(late.output.find("#define KP_LATE_GRAD 1") != std::string::npos);
}

#ifdef KPLAY_WITH_CUDA
// In the nvrtc suite: every build has the CUDA backend, but NVRTC is found at run time, and a
// machine without it (a bare root) skips the suite.
TEST_SUITE("nvrtc") {
  TEST_CASE("kplay emit --ptx prints PTX text that ptxas can read: no trailing NUL") {
    const Result r = run_kplay("emit --act relu --dtype f64 --ptx --arch sm_90");
    INFO(r.output.substr(0, 400));
    REQUIRE(r.status == 0);
    CHECK(r.output.find(".target sm_90") != std::string::npos);
    CHECK(r.output.find('\0') == std::string::npos);
    CHECK(r.output.back() == '\n');
  }
}
#endif
