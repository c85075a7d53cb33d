// Activations that users write: from a file, from a folder on KPLAY_ACTIVATION_PATH, and from
// memory through the API; checked against themselves in float64; broken ones refused with the
// user's file and line. The device cases run on OpenCL (PoCL in CI) and on CUDA on the GPU.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "cli_runner.hpp"
#include "device_checks.hpp"
#include "kplay/error.hpp"
#include "kplay/kplay.hpp"
#include "spec/activations.hpp"
#include "spec/user_activations.hpp"

using namespace kplay;

namespace {
// A user's activation: a softer softsign, x / (2 + |x|), forward and backward from the input.
// (Its formula cannot overflow in float, so float32 and float64 differ by rounding only.)
const char* kSwishBeta = R"(/* x / (2 + |x|) */
KP_FN KP_C kp_act_forward(KP_C x) { return x / (KP_LIT(2.0) + KP_FABS(x)); }
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) {
  const KP_C d = KP_LIT(2.0) + KP_FABS(x);
  return g * (KP_LIT(2.0) / (d * d));
}
)";

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/kplay-user-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
  std::string write(const std::string& name, const std::string& text) const {
    const std::string p = path + "/" + name;
    std::ofstream(p) << text;
    return p;
  }
};
}  // namespace

TEST_CASE("user activations: names, hashes and refusals need no device") {
  const Activation& a = register_user_activation("swish_beta", kSwishBeta);
  CHECK(a.user);
  const ResolvedActivation r = resolve_activation("swish_beta");
  CHECK(r.canonical == "swish_beta@" + a.source_hash);
  CHECK(resolve_activation(r.canonical).act == &a);  // the keyed name resolves too
  CHECK(r.has_backward());
  CHECK_FALSE(r.has_grad_from_output());
  CHECK(r.entry_suffix().size() == 10);
  // A changed snippet gets a new key, so binaries and tunings of the old one are never reused.
  register_user_activation("swish_beta", std::string(kSwishBeta) + "\n/* edited */\n");
  CHECK(resolve_activation("swish_beta").canonical != r.canonical);
  CHECK_THROWS_WITH_AS(register_user_activation("relu", kSwishBeta), doctest::Contains("built-in"), Error);
  CHECK_THROWS_WITH_AS(register_user_activation("my-act", kSwishBeta), doctest::Contains("not an identifier"), Error);
  CHECK_THROWS_WITH_AS(register_user_activation("nofwd", "KP_FN KP_C helper(KP_C x) { return x; }"),
                       doctest::Contains("does not define the forward function"), Error);
  CHECK_THROWS_WITH_AS(resolve_activation("swish_beta(beta=2)"), doctest::Contains("take no parameters"), Error);
  CHECK(kplay::register_activation("api_act", kSwishBeta).rfind("api_act@", 0) == 0);
}

TEST_CASE("user activations from the command line: bad snippets get a clear message and exit 2") {
  TempDir dir;
  const std::string nofwd = dir.write("nofwd.h", "KP_FN KP_C helper(KP_C x) { return x; }\n");
  auto r = test::run_cli("emit --act " + nofwd);
  CHECK(r.status == 2);
  CHECK(r.has("does not define the forward function"));
  const std::string fwd_only = dir.write("fwd_only.h", "KP_FN KP_C kp_act_forward(KP_C x) { return x; }\n");
  r = test::run_cli("emit --act " + fwd_only + " --direction backward");
  CHECK(r.status == 2);
  CHECK(r.has("has no backward pass"));
  r = test::run_cli("emit --act " + fwd_only);
  CHECK(r.status == 0);
  CHECK(r.has("#line 1 \"" + dir.path + "/fwd_only.h\""));  // compiler messages name the user's file
}

TEST_SUITE("opencl") {
  TEST_CASE("OpenCL: a user activation from a file, from KPLAY_ACTIVATION_PATH and from the API runs and checks") {
    TempDir dir;
    const std::string file = dir.write("swish_beta.h", kSwishBeta);
    auto r = test::run_cli("run --backend opencl --no-db --act " + file + " --n 20011 --direction backward");
    INFO(r.output);
    CHECK(r.status == 0);
    CHECK(r.has("verdict: PASS"));
    CHECK(r.has("checks rounding, not the formula"));
    r = test::run_cli("run --backend opencl --no-db --act swish_beta --n 4099",
                      "KPLAY_ACTIVATION_PATH=/nonexistent:" + dir.path);
    INFO(r.output);
    CHECK(r.status == 0);
    CHECK(r.has("verdict: PASS"));
    r = test::run_cli("check --backend opencl --act " + file + " --dtype bf16");
    INFO(r.output);
    CHECK(r.status == 0);
    CHECK(r.has("65536 (every bit pattern"));

    register_user_activation("api_swish", kSwishBeta);
    rt::Backend* be = test::shared_backend("opencl");
    REQUIRE(be != nullptr);
    Engine engine(*be);
    KernelSpec spec;
    spec.activation = resolve_activation("api_swish").canonical;
    ProblemShape shape;
    shape.n = 5003;
    KPLAY_CHECK_PROBLEM(engine, spec, KernelConfig{}, shape);
  }

  TEST_CASE("OpenCL: a user snippet that does not compile shows the user's file and line") {
    TempDir dir;
    const std::string file =
        dir.write("broken.h", "/* line 1 */\nKP_FN KP_C kp_act_forward(KP_C x) {\n  return x * not_defined;\n}\n");
    const auto r = test::run_cli("run --backend opencl --no-db --act " + file + " --n 100");
    INFO(r.output);
    CHECK(r.status != 0);
    CHECK(r.has(dir.path + "/broken.h:3"));
  }
}
