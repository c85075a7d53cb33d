// User activations as the docs present them: the self-reference's metric (rounding is judged, the
// formula's conditioning and float32 range are not) and every snippet of docs/user-activations.md,
// read from the page itself, run as written with `kplay run --backend opencl` and held to `kplay
// check` over every input in both directions: float16 and bfloat16 on OpenCL, float32 on CUDA
// (skipped with a message without a device).
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "check/verification.hpp"
#include "cli_runner.hpp"
#include "db_test_support.hpp"
#include "device_fixture.hpp"

using namespace kplay;
using kplay::test::CliResult;
using kplay::test::TempDir;

namespace {

CliResult kplay_cli(const std::string& args) { return test::run_cli(args, "timeout -s KILL 300"); }

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

struct Snippet {
  std::string file;  // written into the test's folder, named as the page names it
  bool backward = false;
};

// Every ```c block of docs/user-activations.md that defines kp_act_forward, written to `dir`.
std::vector<Snippet> doc_snippets(const TempDir& dir) {
  const std::string doc = read_text(std::string(test::source_templates_dir()) + "/../docs/user-activations.md");
  REQUIRE_FALSE(doc.empty());
  std::vector<Snippet> out;
  const std::regex block("```c\n([\\s\\S]*?)```");
  for (auto it = std::sregex_iterator(doc.begin(), doc.end(), block); it != std::sregex_iterator(); ++it) {
    const std::string code = (*it)[1].str();
    if (code.find("kp_act_forward") == std::string::npos) continue;
    std::smatch name;  // "/* my_act.h: ..." names the file, as the page runs it
    const std::string file = dir.file(std::regex_search(code, name, std::regex("/\\* ([a-z_0-9]+\\.h):"))
                                          ? name[1].str()
                                          : "snippet" + std::to_string(out.size()) + ".h");
    test::write_file(file, code);
    out.push_back({file, code.find("kp_act_backward_from_input") != std::string::npos});
  }
  REQUIRE_FALSE(out.empty());
  return out;
}

// `kplay check` of every doc snippet in `dtype` (`inputs`: every one, or those of a --range),
// forward and (where it has one) backward.
void check_doc_snippets(const std::string& backend, const std::string& dtype, const char* timeout,
                        const std::string& range = "") {
  TempDir dir;
  for (const Snippet& s : doc_snippets(dir))
    for (const char* direction : {"forward", "backward"}) {
      if (std::string(direction) == "backward" && !s.backward) continue;
      const std::string args = "check --backend " + backend + " --act " + s.file + " --dtype " + dtype +
                               " --direction " + direction + (range.empty() ? "" : " --range=" + range);
      const CliResult r = test::run_cli(args, timeout);
      INFO("kplay " << args << "\n" << r.output);
      CHECK(r.status == 0);
      CHECK(r.has("verdict: PASS"));
      CHECK(r.has(range.empty() ? "every bit pattern of the dtype" : "every float32 in the range"));
    }
}

}  // namespace

TEST_CASE("a self-referenced result is judged beyond its conditioning and against a floor of 2^-63") {
  ErrorStats s(Dtype::f32, 4);
  const double ulp = ulp_of(Dtype::f32, 1.0);  // 2^-23 at 1
  s.add(0, 1.0 + 10 * ulp, 1.0L, 0, 8 * ulp);  // 10 ulp off, 8 of them the input's rounding magnified
  CHECK(s.mismatches == 0);
  CHECK(s.max_ulps == doctest::Approx(2.0));
  s.add(1, 1.0 + 13 * ulp, 1.0L, 0, 8 * ulp);  // 5 beyond it: over the bound
  CHECK(s.mismatches == 1);
  // exp(90) overflows float32 in x / (1 + exp(-1.5 x)) at x = -60: 0 where the result is 2e-38.
  ErrorStats tiny(Dtype::f32, 4);
  tiny.add(0, 0.0, -2.35e-38L, self_reference_floor(Dtype::f32));
  CHECK(tiny.mismatches == 0);
  ErrorStats strict(Dtype::f32, 4);  // a built-in (a scale of 0) is held to the bound there
  strict.add(0, 0.0, -2.35e-38L, 0);
  CHECK(strict.mismatches == 1);
  CHECK(self_reference_floor(Dtype::f16) == std::ldexp(1.0, -63));
  CHECK(self_reference_perturbation(Dtype::f32) == std::ldexp(1.0, -23));
}

TEST_CASE("the docs' experiment snippets load as snippets") {
  const std::string docs = std::string(test::source_templates_dir()) + "/../docs/experiments";
  for (const char* name : {"leaky_relu_arg.h", "softplus_arg.h"}) {
    const CliResult r = kplay_cli("emit --backend cuda --act " + docs + "/" + name);
    INFO(name << "\n" << r.output.substr(0, 2000));
    CHECK(r.status == 0);
    CHECK(r.has("kp_act_forward"));
  }
}

TEST_SUITE("opencl") {
  TEST_CASE("every snippet of docs/user-activations.md runs as written and passes its check on OpenCL") {
    std::string why;
    if (!test::backend_available("opencl", &why)) {
      MESSAGE("skipped, no OpenCL device: " << why);
      return;
    }
    TempDir dir;
    for (const Snippet& s : doc_snippets(dir)) {
      std::vector<std::string> runs = {"", "--dtype f16", "--dtype f64"};
      if (s.backward) runs.push_back("--direction backward");
      for (const auto& extra : runs)
        for (const char* seed : {"1", "2", "3"}) {
          const std::string args =
              "run --backend opencl --act " + s.file + " --n 4096 --db :memory: --seed " + seed + " " + extra;
          const CliResult r = kplay_cli(args);
          INFO("kplay " << args << "\n" << r.output);
          CHECK(r.status == 0);
          CHECK(r.has("verdict: PASS"));
        }
    }
  }

  TEST_CASE(
      "each snippet of docs/user-activations.md passes kplay check on OpenCL: all 16-bit inputs, float32 in part") {
    std::string why;
    if (!test::backend_available("opencl", &why)) {
      MESSAGE("skipped, no OpenCL device: " << why);
      return;
    }
    for (const char* dtype : {"f16", "bf16"}) check_doc_snippets("opencl", dtype, "timeout -s KILL 300");
    // All 2^32 float32 inputs are the cuda suite's; here the 12.6 million from -1.5 to -0.5, where
    // the page's example has the root of its derivative (the inputs its first backward failed on).
    check_doc_snippets("opencl", "f32", "timeout -s KILL 300", "-1.5:-0.5");
  }
}

TEST_SUITE("cuda") {
  // Every float32 input, 2^32 of them per direction: more than three minutes for the page's snippet
  // on an H200 (the host's self-reference of each input dominates; run the case in a device call of
  // its own), days on PoCL.
  TEST_CASE("every snippet of docs/user-activations.md passes kplay check over every float32 input on CUDA") {
    std::string why;
    if (!test::backend_available("cuda", &why)) {
      MESSAGE("skipped, no CUDA device: " << why);
      return;
    }
    check_doc_snippets("cuda", "f32", "timeout -s KILL 3600");
  }
}
