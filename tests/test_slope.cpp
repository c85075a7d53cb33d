// PReLU and RReLU without a device: how their texts resolve and what is refused (with the reason),
// the host's training slopes (the reference of the kernels' draws), prelu's shape checks in the
// public API before any device work, and `kplay run --channels`; then the C++ and C API on OpenCL
// and CUDA buffers.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "api_buffers.hpp"
#include "cli_runner.hpp"
#include "codegen/codegen.hpp"
#include "engine/engine.hpp"
#include "kplay/error.hpp"
#include "kplay/kplay.h"
#include "kplay/kplay.hpp"
#include "spec/activations.hpp"
#include "spec/slope_noise.hpp"

using namespace kplay;

namespace {
std::string refusal(const std::string& text) {
  try {
    resolve_activation(text);
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::invalid_argument);
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("prelu and training(rrelu) resolve to their slope forms; rrelu alone is the evaluation") {
  const ResolvedActivation p = resolve_activation("prelu");
  CHECK(p.slope == SlopeForm::weight);
  CHECK(p.canonical == "prelu");
  CHECK_FALSE(p.has_grad_from_output());
  const ResolvedActivation t = resolve_activation("training(rrelu(upper=0.25))");
  CHECK(t.slope == SlopeForm::random);
  CHECK(t.canonical == "training(rrelu(upper=0.25))");
  CHECK(t.act->name == "rrelu");
  CHECK(t.params[1] == 0.25);
  const ResolvedActivation e = resolve_activation("rrelu");
  CHECK(e.slope == SlopeForm::none);
  CHECK(e.params[0] == 0.125);
  CHECK(e.params[1] == 1.0 / 3.0);
  // The evaluation kernel takes the mean slope formed in double and rounded once, as torch does.
  const std::string defines = e.param_defines(Dtype::f32);
  const float mean = static_cast<float>((0.125 + 1.0 / 3.0) / 2);
  const auto at = defines.find("KP_P_SLOPE KP_LIT(");
  REQUIRE(at != std::string::npos);
  CHECK(std::stof(defines.substr(at + 18)) == mean);
  // Kernels of the forms are named apart from leaky_relu's and rrelu's.
  KernelSpec spec;
  spec.activation = "prelu";
  CHECK(entry_name(spec, {}).rfind("kplay_prelu_fwd", 0) == 0);
  spec.activation = "training(rrelu)";
  CHECK(entry_name(spec, {}).rfind("kplay_training_rrelu_fwd", 0) == 0);
}

TEST_CASE("prelu and training(...) refuse what they cannot be, saying why") {
  CHECK(refusal("prelu(num_parameters=3)").find("prelu takes no parameters") != std::string::npos);
  CHECK(refusal("training(relu)").find("training takes rrelu") != std::string::npos);
  CHECK(refusal("gated(prelu)").find("no gated form") != std::string::npos);
  CHECK(refusal("gated(training(rrelu))").find("no gated form") != std::string::npos);
  CHECK(refusal("rrelu(lower=0.5, upper=0.25)").find("lower (0.5) must be <= upper (0.25)") != std::string::npos);
  CHECK(refusal("training(rrelu(lower=0.5, upper=0.25))").find("must be <=") != std::string::npos);
  // The plain API has no weight or seed to give them.
  float buf[4] = {};
  try {
    forward("prelu", Dtype::f32, buf, buf, 4, {Backend::opencl, nullptr});
    FAIL("prelu through forward() was accepted");
  } catch (const Error& e) {
    CHECK_MESSAGE(std::string(e.what()).find("prelu takes a weight tensor") != std::string::npos,
                  std::string(e.what()));
  }
}

TEST_CASE("the host's RReLU training slopes lie in [lower, upper] and follow (seed, index)") {
  for (Dtype d : {Dtype::f32, Dtype::f64}) {
    const double lower = 0.125, upper = 1.0 / 3.0;
    const double lo = d == Dtype::f64 ? lower : static_cast<float>(lower);
    const double hi = d == Dtype::f64 ? upper : static_cast<float>(upper);
    double smallest = 1, largest = 0;
    for (std::uint64_t i = 0; i < 100000; ++i) {
      const double s = rrelu_slope(42, i, lower, upper, d);
      CHECK(s >= lo);
      CHECK(s <= hi);
      smallest = std::min(smallest, s);
      largest = std::max(largest, s);
    }
    // 10^5 uniform draws come within 10^-3 of either end of the interval.
    CHECK(smallest < lo + 1e-3 * (hi - lo) * 10);
    CHECK(largest > hi - 1e-3 * (hi - lo) * 10);
    CHECK(rrelu_slope(42, 7, lower, upper, d) == rrelu_slope(42, 7, lower, upper, d));
    CHECK(rrelu_slope(42, 7, lower, upper, d) != rrelu_slope(43, 7, lower, upper, d));
    CHECK(rrelu_slope(42, 7, lower, upper, d) != rrelu_slope(42, 8, lower, upper, d));
  }
  CHECK(rrelu_slope(1, 2, 0.3, 0.3, Dtype::f32) == static_cast<float>(0.3));  // lower == upper: that slope
}

TEST_CASE("prelu's API refuses a shape its weight does not fit, before any device work") {
  float buf[12] = {};
  auto refused = [&](const PreluShape& s, const char* why) {
    try {
      prelu_forward(Dtype::f32, buf, buf, buf, s, {Backend::opencl, nullptr});
      FAIL("accepted");
    } catch (const Error& e) {
      CHECK(e.code() == ErrorCode::invalid_argument);
      CHECK_MESSAGE(std::string(e.what()).find(why) != std::string::npos, e.what());
    }
  };
  refused({10, 3, 1}, "not a whole number of 3 channels");
  refused({12, 3, 5}, "not a whole number of 3 channels of 5");
  refused({12, 0, 1}, "at least one element");
  refused({-1, 1, 1}, "n must be >= 0");
  // The workspace of the weight's gradient: channels x parts floats (doubles for float64).
  CHECK(prelu_workspace_bytes(Dtype::f32, {1 << 20, 1, 1}) == 4 * 64);
  CHECK(prelu_workspace_bytes(Dtype::f64, {12, 3, 4}) == 3 * 8);
  CHECK(prelu_weight_grad_parts(1ull << 40, 1) == 256);
}

TEST_CASE("kplay run --channels: the weight is one per channel of dim 1 or one in all; anything else is exit 2") {
  const auto wrong = test::run_cli("run --act prelu --shape 8x16 --channels 4 --backend opencl");
  CHECK(wrong.status == 2);
  CHECK(wrong.has("prelu's weight has one element or one per channel"));
  CHECK(wrong.has("has 16"));
  const auto not_prelu = test::run_cli("run --act relu --n 16 --channels 1 --backend opencl");
  CHECK(not_prelu.status == 2);
  CHECK(not_prelu.has("--channels is for prelu"));
  const auto one_dim = test::run_cli("run --act prelu --n 16 --channels 2 --backend opencl");
  CHECK(one_dim.status == 2);
  CHECK(one_dim.has("no channel dimension"));
}

namespace {
// prelu and rrelu through the public C++ and C API on a user's buffers and stream: values against
// the host, the weight's gradient against a double sum within its bound, in place, the draws.
void check_api_slope(test::UserDevice& dev) {
  const std::int64_t n = 3 * 4 * 5, c = 4, inner = 5;
  std::vector<float> x(n), g(n), w = {0.25f, -0.5f, 0.0f, 1.5f};
  for (std::int64_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>((i * 37 % 23) - 11) * 0.375f;  // mixed signs, zeros
    g[i] = 1.0f + static_cast<float>(i % 7) * 0.25f;
  }
  const std::size_t bytes = n * 4;
  void* dx = dev.allocate(bytes);
  void* dg = dev.allocate(bytes);
  void* dw = dev.allocate(c * 4);
  void* dy = dev.allocate(bytes);
  void* dgw = dev.allocate(c * 4);
  const std::int64_t work = prelu_workspace_bytes(Dtype::f32, {n, c, inner});
  REQUIRE(work > 0);
  CHECK(kplay_prelu_workspace_bytes(KPLAY_F32, n, c, inner) == work);
  void* ws = dev.allocate(static_cast<std::size_t>(work));
  dev.upload(dx, x.data(), bytes);
  dev.upload(dg, g.data(), bytes);
  dev.upload(dw, w.data(), c * 4);
  std::vector<float> y(n), gx(n), gw(c);

  prelu_forward(Dtype::f32, dx, dw, dy, {n, c, inner}, dev.stream());
  dev.finish();
  dev.download(y.data(), dy, bytes);
  std::uint64_t wrong = 0;
  for (std::int64_t i = 0; i < n; ++i)
    if (y[i] != (x[i] > 0 ? x[i] : x[i] * w[(i / inner) % c])) ++wrong;
  CHECK(wrong == 0);
  // The C API computes the same.
  std::vector<float> y_c(n);
  REQUIRE(kplay_prelu_forward(dev.stream().backend == Backend::cuda ? KPLAY_BACKEND_CUDA : KPLAY_BACKEND_OPENCL,
                              KPLAY_F32, dx, dw, dy, n, c, inner, dev.stream().handle) == KPLAY_OK);
  dev.finish();
  dev.download(y_c.data(), dy, bytes);
  CHECK(y_c == y);

  prelu_backward(Dtype::f32, dg, dx, dw, dy, dgw, ws, {n, c, inner}, dev.stream());
  dev.finish();
  dev.download(gx.data(), dy, bytes);
  dev.download(gw.data(), dgw, c * 4);
  std::vector<double> exact(c, 0.0), mag(c, 0.0);
  wrong = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t k = (i / inner) % c;
    if (gx[i] != (x[i] > 0 ? g[i] : g[i] * w[k])) ++wrong;
    if (!(x[i] > 0)) {
      exact[k] += static_cast<double>(x[i]) * g[i];
      mag[k] += std::fabs(static_cast<double>(x[i]) * g[i]);
    }
  }
  CHECK(wrong == 0);
  for (std::int64_t k = 0; k < c; ++k)  // 15 terms: (15 + 10 + 1 + 1) roundings of 2^-24 at most, then one more
    CHECK(std::fabs(gw[k] - exact[k]) <= 27 * 0x1p-24 * mag[k] + std::fabs(exact[k]) * 0x1p-24);
  // In place (grad_in over grad_out): the weight's gradient is summed before grad_out is overwritten.
  prelu_backward(Dtype::f32, dg, dx, dw, dg, dgw, ws, {n, c, inner}, dev.stream());
  dev.finish();
  std::vector<float> gx2(n), gw2(c);
  dev.download(gx2.data(), dg, bytes);
  dev.download(gw2.data(), dgw, c * 4);
  CHECK(gx2 == gx);
  CHECK(gw2 == gw);

  // RReLU: evaluation is forward("rrelu(...)"); training draws the host's slopes, forward and backward.
  std::vector<float> ones(n, 1.0f), minus(n, -1.0f), a(n), b(n);
  dev.upload(dg, ones.data(), bytes);
  dev.upload(dx, minus.data(), bytes);
  rrelu_forward(Dtype::f32, dx, dy, n, 0.1, 0.6, false, 0, 0, dev.stream());
  dev.finish();
  dev.download(a.data(), dy, bytes);
  CHECK(a == std::vector<float>(n, -static_cast<float>((0.1 + 0.6) / 2)));
  rrelu_forward(Dtype::f32, dx, dy, n, 0.1, 0.6, true, 99, 1000, dev.stream());
  dev.finish();
  dev.download(a.data(), dy, bytes);
  rrelu_backward(Dtype::f32, dg, dx, dy, n, 0.1, 0.6, true, 99, 1000, dev.stream());
  dev.finish();
  dev.download(b.data(), dy, bytes);
  wrong = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const double s = rrelu_slope(99, 1000 + static_cast<std::uint64_t>(i), 0.1, 0.6, Dtype::f32);
    if (a[i] != -static_cast<float>(s) || b[i] != static_cast<float>(s)) ++wrong;
  }
  CHECK(wrong == 0);
}
}  // namespace

TEST_SUITE("opencl") {
  TEST_CASE("API on OpenCL: prelu (values, weight gradient, in place, C API) and rrelu (evaluation, draws)") {
    std::string why;
    auto dev = test::opencl_user_device(&why);
    REQUIRE_MESSAGE(dev, why);
    check_api_slope(*dev);
  }
}

TEST_SUITE("cuda") {
  TEST_CASE("API on CUDA: prelu (values, weight gradient, in place, C API) and rrelu (evaluation, draws)") {
    std::string why;
    auto dev = test::cuda_user_device(&why);
    REQUIRE_MESSAGE(dev, why);
    check_api_slope(*dev);
  }
}
