// The reference (double, and long double for float64) against torch's definitions and the known pitfalls, and the
// registry's naming of activations and their parameters.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "activation_cases.hpp"
#include "check/verification.hpp"
#include "kplay/error.hpp"
#include "spec/activations.hpp"
#include "spec/reference.hpp"

using namespace kplay;

namespace {
const double kInf = std::numeric_limits<double>::infinity();
double fwd(const std::string& text, double x) {
  const auto a = resolve_activation(text);
  return a.act->forward(x, a.params.data());
}
double bwd(const std::string& text, double g, double x) {
  const auto a = resolve_activation(text);
  return a.act->grad_from_input(g, x, a.params.data());
}
}  // namespace

TEST_CASE("SELU uses torch's constants and keeps the -1 of the negative branch") {
  const double scale = 1.0507009873554804934193349852946, alpha = 1.6732632423543772848170429916717;
  CHECK(fwd("selu", 2.0) == doctest::Approx(2.0 * scale).epsilon(1e-15));
  CHECK(fwd("selu", -1.0) == doctest::Approx(scale * alpha * (std::exp(-1.0) - 1.0)).epsilon(1e-15));
  CHECK(fwd("selu", -50.0) == doctest::Approx(-scale * alpha).epsilon(1e-15));           // not 0: the "-1" kept
  CHECK(fwd("selu", -1e-12) == doctest::Approx(scale * alpha * -1e-12).epsilon(1e-11));  // expm1, not exp-1
  CHECK(std::isnan(fwd("selu", std::nan(""))));
  CHECK(fwd("selu", -kInf) == doctest::Approx(-scale * alpha));
  CHECK(bwd("selu", 2.0, -1.0) == doctest::Approx(2.0 * scale * alpha * std::exp(-1.0)));
}

TEST_CASE("torch's edge behaviour: NaN, infinities, signed zeros, branch boundaries") {
  CHECK(std::isnan(fwd("relu", std::nan(""))));  // torch.relu keeps NaN
  CHECK(std::isnan(fwd("relu6", std::nan(""))));
  CHECK(std::isnan(fwd("hardtanh", std::nan(""))));
  CHECK(std::isnan(fwd("softshrink", std::nan(""))));  // x * 0 keeps NaN
  CHECK(std::signbit(fwd("softshrink", -0.25)));       // ... and gives -0 inside the band
  CHECK(fwd("softshrink", 0.5) == 0.0);                // the band is closed
  CHECK(fwd("hardshrink", -0.5) == 0.0);
  CHECK(fwd("hardshrink", 0.5000001) == 0.5000001);
  CHECK(fwd("threshold(0.1, 20)", 0.1) == 20.0);  // x <= threshold takes the value
  CHECK(std::isnan(fwd("threshold(0.1, 20)", std::nan(""))));
  CHECK(std::isnan(fwd("gelu", -kInf)));  // torch: -inf * 0
  CHECK(std::isnan(fwd("silu", -kInf)));
  CHECK(std::isnan(fwd("mish", -kInf)));
  CHECK(std::isnan(fwd("softsign", kInf)));  // inf / inf
  CHECK(std::isnan(fwd("hardswish", -kInf)));
  CHECK(fwd("gelu", kInf) == kInf);
  CHECK(fwd("sigmoid", -kInf) == 0.0);
  CHECK(fwd("logsigmoid", -kInf) == -kInf);
  CHECK(fwd("softplus", 20.0) == doctest::Approx(20.0 + std::log1p(std::exp(-20.0))));  // 20 is not > 20
  CHECK(fwd("softplus", 20.000001) == 20.000001);
  CHECK(bwd("relu6", 1.0, 6.0) == 0.0);  // hardtanh_backward: x >= max -> 0
  CHECK(bwd("hardsigmoid", 1.0, 3.0) == 0.0);
  CHECK(bwd("hardswish", 1.0, 3.0) == 1.0);  // torch 2.11: the bounds take the outer slopes
  CHECK(bwd("hardswish", 1.0, -3.0) == 0.0);
  CHECK(bwd("hardswish", 1.0, std::nextafter(3.0, 0.0)) == doctest::Approx(1.5));
  CHECK(bwd("leaky_relu(negative_slope=0.2)", 1.0, 0.0) == doctest::Approx(0.2));  // x > 0 decides
  CHECK(bwd("elu", 2.0, 0.0) == doctest::Approx(2.0));                             // x <= 0: alpha * exp(0)
  // gelu(tanh)': the limits 1 and 0 once x^3 would overflow (torch's formula: 0 * inf = NaN);
  // the infinities stay NaN.
  CHECK(bwd("gelu(approximate=tanh)", 3.0, 1e160) == 3.0);
  CHECK(bwd("gelu(approximate=tanh)", 3.0, -1e160) == 0.0);
  CHECK(std::isnan(bwd("gelu(approximate=tanh)", 3.0, kInf)));
  CHECK(std::isnan(bwd("gelu(approximate=tanh)", 3.0, -kInf)));
  CHECK(fwd("hardswish", 1e308) == 1e308);  // torch: 1e308 * 6 / 6 = inf
  CHECK(fwd("hardswish", kInf) == kInf);
}

TEST_CASE("the tails keep relative precision: tanhshrink near 0, gelu far below 0") {
  CHECK(fwd("tanhshrink", 1e-3) == doctest::Approx(1e-9 / 3).epsilon(1e-6));
  CHECK(fwd("tanhshrink", 0.2) == doctest::Approx(0.2 - std::tanh(0.2)).epsilon(1e-12));
  CHECK(fwd("gelu", -10.0) == doctest::Approx(-5.0 * std::erfc(10.0 / std::sqrt(2.0))).epsilon(1e-14));
  CHECK(fwd("gelu", -10.0) < 0.0);
  CHECK(fwd("gelu(approximate=tanh)", -10.0) < 0.0);
}

TEST_CASE("the long double reference (float64's) has the double one's edge behaviour") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // The same NaN, infinities, signed zeros and branches, and values that agree to the double
  // reference's precision (these inputs are away from the derivatives' roots; `scale` as
  // ReferenceProblem::error_scale: |grad| from the output, where y + lambda alpha cancels).
  auto agrees = [](double d, long double l, double scale = 0) {
    const double r = static_cast<double>(l);
    if (std::isnan(d) || std::isnan(r)) return std::isnan(d) && std::isnan(r);
    if (std::isinf(d) || std::isinf(r)) return d == r;
    // Exact zeros keep their sign (softshrink's -0); a result that only underflows in double may not.
    if (d == 0 && r == 0) return l != 0 || std::signbit(d) == std::signbit(r);
    return std::fabs(d - r) <= 1e-9 * std::max(std::fabs(r), scale) + 1e-300;  // + the double's underflow
  };
  for (const auto& text : test::activation_cases()) {
    const auto a = resolve_activation(text);
    const auto p = params_for(a, Dtype::f64);
    std::vector<double> xs = {0.0,  -0.0,  kInf,  -kInf, nan,    1e-300, -1e-300, 1e-8,  -1e-8,  0.5,
                              -0.5, 1.0,   -1.0,  3.0,   -3.0,   6.0,    20.0,    -20.0, 44.0,   -104.0,
                              700., -745., 1e100, 1e160, -1e160, 1e308,  -1e308,  3e307, -36.55, -13.0};
    for (double e : edge_values(a, Dtype::f64)) xs.push_back(e);
    for (double x : xs) {
      CAPTURE(text);
      CAPTURE(x);
      CHECK(agrees(a.act->forward(x, p.data()), a.act->forward_ld(x, p.data())));
      CHECK(agrees(a.act->grad_from_input(0.75, x, p.data()), a.act->grad_from_input_ld(0.75, x, p.data())));
      if (!a.has_grad_from_output()) continue;
      const double y = a.act->forward(x, p.data());
      CHECK(agrees(a.act->grad_from_output(0.75, y, p.data()), a.act->grad_from_output_ld(0.75, y, p.data()), 0.75));
    }
  }
}

TEST_CASE("the long double reference is exact to well under a double ulp where double is not") {
  auto ulps = [](const char* text, double x, long double exact) {
    const auto a = resolve_activation(text);
    return static_cast<double>(std::fabs(a.act->forward_ld(x, a.params.data()) - exact) / ulp_of(Dtype::f64, exact));
  };
  auto grad_ulps = [](const char* text, double x, long double exact) {
    const auto a = resolve_activation(text);
    const long double d = a.act->grad_from_input_ld(1.0L, x, a.params.data());
    return static_cast<double>(std::fabs(d - exact) / ulp_of(Dtype::f64, exact));
  };
  // Values from mpmath (300 bits). gelu's erfc argument is carried in two parts: rounded, in double
  // or long double, it costs 2 z^2 times its rounding (the double reference is 600 ulp off at
  // -36.55; -x / sqrt 2 in long double alone, up to 0.7 ulp in this tail).
  CHECK(ulps("gelu", -36.55, -3.25869355853067309402550472852e-291L) < 0.01);
  CHECK(grad_ulps("gelu", -37.0, -7.83829866941851624252988507275e-297L) < 0.01);
  CHECK(ulps("gelu(approximate=tanh)", -3.0, -0.00363739208177301883781646613189L) < 0.01);
  CHECK(ulps("selu", -1.0, -1.11133073781256276179864066243L) < 0.01);
  CHECK(ulps("mish", -1.0, -0.303401461374108918074389275378L) < 0.01);
  CHECK(ulps("tanhshrink", 0.11, 0.000441529785570470922709324819974L) < 0.25);  // 56 bits left past 0.1
  // quick_gelu's beta x keeps its rounding error: rounded, it would cost |beta x| / 2 ulp here.
  CHECK(ulps("quick_gelu", -400.0, -8.59758962109207786325931654381e-294L) < 0.01);
  CHECK(grad_ulps("quick_gelu", -400.0, -1.46116035610459859620719174474e-293L) < 0.01);
  CHECK(ulps("quick_gelu", -40.0, -1.08465510181543221800404072462e-28L) < 0.01);
  CHECK(grad_ulps("quick_gelu", -3.0, -0.0245483239056523510740278278793L) < 0.01);
}

TEST_CASE("quick_gelu with beta = 1 is silu, and relu2 is relu squared with derivative 2 relu") {
  const auto q = resolve_activation("quick_gelu(beta=1)"), s = resolve_activation("silu");
  for (double x : {-745.0, -40.0, -3.0, -1.2785, -0.5, -1e-9, 0.0, 1e-9, 0.75, 3.0, 40.0}) {
    CAPTURE(x);
    CHECK(q.act->forward(x, q.params.data()) == s.act->forward(x, s.params.data()));
    CHECK(q.act->grad_from_input(0.75, x, q.params.data()) == s.act->grad_from_input(0.75, x, s.params.data()));
    CHECK(q.act->forward_ld(x, q.params.data()) == s.act->forward_ld(x, s.params.data()));
  }
  const auto r = resolve_activation("relu2");
  CHECK(r.act->forward(3.0, nullptr) == 9.0);
  CHECK(r.act->forward(-3.0, nullptr) == 0.0);
  CHECK_FALSE(std::signbit(r.act->forward(-0.0, nullptr)));
  CHECK(std::isnan(r.act->forward(std::nan(""), nullptr)));
  CHECK(r.act->grad_from_input(0.75, 3.0, nullptr) == 4.5);
  CHECK(r.act->grad_from_input(0.75, 0.0, nullptr) == 0.0);
  CHECK(std::isnan(r.act->grad_from_input(0.75, std::nan(""), nullptr)));
  // 2x past float's range: the definition, where torch's float 2 * x is inf
  CHECK(r.act->grad_from_input(0.25, 3e38, nullptr) == doctest::Approx(1.5e38));
  CHECK_FALSE(r.has_grad_from_output());  // y = x^2 does not keep x where it over- or underflows
  CHECK(resolve_activation("quick_gelu").params[0] == 1.702);
  CHECK_THROWS(resolve_activation("quick_gelu(beta=0)"));
}

TEST_CASE("hardshrink takes a negative lambd as torch does: an empty band, every input passes") {
  // torch: (x >= -l && x <= l) ? 0 : x, with no check on l; F.hardshrink(x, -0.5) is x, its
  // gradient g everywhere, zeros and the band's would-be edges included.
  const auto a = resolve_activation("hardshrink(lambd=-0.5)");
  for (Dtype d : {Dtype::f32, Dtype::bf16, Dtype::f64}) {
    const auto p = params_for(a, d);
    for (double x : {-1.0, -0.5, -0.25, -0.0, 0.0, 0.25, 0.5, 1.0, kInf}) {
      CAPTURE(x);
      const double y = a.act->forward(x, p.data());
      CHECK(y == x);
      CHECK(std::signbit(y) == std::signbit(x));
      CHECK(a.act->grad_from_input(0.75, x, p.data()) == 0.75);
      CHECK(a.act->grad_from_input_ld(0.75, x, p.data()) == 0.75);
    }
    CHECK(std::isnan(a.act->forward(std::nan(""), p.data())));
  }
  // y == 0 at x = 0 lies outside the empty band: the output no longer says where the band is.
  CHECK_FALSE(a.has_grad_from_output());
  CHECK(resolve_activation("hardshrink(lambd=0)").has_grad_from_output());
  CHECK(resolve_activation("hardshrink").has_grad_from_output());
  CHECK(resolve_activation("hardshrink(lambd=-0.5)").canonical == "hardshrink(lambd=-0.5)");
}

TEST_CASE("backward from the saved output agrees with backward from the input") {
  for (const auto& text : test::activation_cases()) {
    const auto a = resolve_activation(text);
    if (!a.has_grad_from_output()) continue;
    for (double x : {-20.0, -3.0, -0.5, -1e-6, -0.0, 0.0, 1e-6, 0.25, 4.0}) {
      const double y = a.act->forward(x, a.params.data());
      CAPTURE(text);
      CAPTURE(x);
      CHECK(a.act->grad_from_output(0.75, y, a.params.data()) ==
            doctest::Approx(a.act->grad_from_input(0.75, x, a.params.data())).epsilon(1e-9));
    }
  }
}

TEST_CASE("every built-in has a row in the test table, and every row resolves") {
  std::set<std::string> covered;
  for (const auto& text : test::activation_cases()) covered.insert(resolve_activation(text).act->name);
  for (const auto& a : activations()) {
    CAPTURE(a.name);
    CHECK(covered.count(a.name) == 1);
  }
  CHECK(covered.size() == activations().size());  // no row names something else
}

TEST_CASE("the registry and the reference name the same activations, once each") {
  std::set<std::string> registered, torch_classes;
  for (const auto& a : activations()) {
    CAPTURE(a.name);
    CHECK(registered.insert(a.name).second);
    CHECK(bool(a.forward));  // reference.cpp's table has it under this name
    CHECK(bool(a.forward_ld));
    CHECK(bool(a.grad_from_input) == bool(a.grad_from_input_ld));
    CHECK(bool(a.grad_from_output) == bool(a.grad_from_output_ld));
    CHECK(a.snippet == "activations/" + a.name + ".h");
    // kplay.torch saves the output only where backward can start from it.
    if (a.saves_output) CHECK(bool(a.grad_from_output));
    if (!a.torch_class.empty()) CHECK(torch_classes.insert(a.torch_class).second);
    if (a.torch_class.empty()) CHECK_FALSE(a.torch_inplace);
    // `--act all` runs each one: its name, or its example where a parameter is required.
    bool required = false;
    for (const auto& p : a.params) required = required || std::isnan(p.default_value);
    CHECK(required != a.example.empty());
  }
  const std::vector<std::string> referenced = reference::names();
  CHECK(std::set<std::string>(referenced.begin(), referenced.end()) == registered);
  CHECK(referenced.size() == registered.size());
  CHECK(all_activation_texts().size() == activations().size());
}

TEST_CASE("activation text: parameters by name or position, canonical form, entry names") {
  const auto a = resolve_activation("leaky_relu(negative_slope=0.2)");
  CHECK(a.canonical == "leaky_relu(negative_slope=0.2)");
  CHECK(a.params.at(0) == 0.2);
  CHECK(resolve_activation("leaky_relu( 0.2 )").canonical == a.canonical);
  CHECK(resolve_activation("leaky_relu(negative_slope=0.01)").canonical == "leaky_relu");  // defaults omitted
  CHECK(resolve_activation("gelu(approximate='tanh')").canonical == "gelu(approximate=tanh)");
  CHECK(resolve_activation("gelu(approximate=\"none\")").canonical == "gelu");
  CHECK(resolve_activation("hardtanh(max_val=2, min_val=-2)").canonical == "hardtanh(min_val=-2, max_val=2)");
  CHECK(resolve_activation("threshold(0.5, 1e-3)").canonical == "threshold(threshold=0.5, value=0.001)");
  CHECK(a.entry_suffix().size() == 10);
  CHECK(resolve_activation("selu").entry_suffix().empty());
  CHECK(resolve_activation("leaky_relu").has_grad_from_output());
  CHECK_FALSE(resolve_activation("leaky_relu(negative_slope=-1)").has_grad_from_output());
  CHECK(resolve_activation("softplus(beta=2)").param_defines() ==
        "#define KP_P_BETA KP_LIT(2.0)\n#define KP_P_BETA_POW2 1\n#define KP_P_THRESHOLD KP_LIT(20.0)\n"
        "#define KP_P_THRESHOLD_POW2 0\n"
        "#define KP_P_ACCURACY_EXACT 1\n#define KP_P_ACCURACY_TORCH 0\n");
  // _POW2: +-2^k only (x * value exact); zero and 0.7 are not.
  CHECK(resolve_activation("softplus(beta=0.7, threshold=0)").param_defines() ==
        "#define KP_P_BETA KP_LIT(0.7)\n#define KP_P_BETA_POW2 0\n#define KP_P_THRESHOLD KP_LIT(0.0)\n"
        "#define KP_P_THRESHOLD_POW2 0\n"
        "#define KP_P_ACCURACY_EXACT 1\n#define KP_P_ACCURACY_TORCH 0\n");
  CHECK(resolve_activation("leaky_relu(negative_slope=-0.25)").param_defines() ==
        "#define KP_P_NEGATIVE_SLOPE KP_LIT(-0.25)\n#define KP_P_NEGATIVE_SLOPE_POW2 1\n");
  CHECK(resolve_activation("gelu(approximate=tanh)").param_defines() ==
        "#define KP_P_APPROXIMATE_NONE 0\n#define KP_P_APPROXIMATE_TANH 1\n"
        "#define KP_P_ACCURACY_EXACT 1\n#define KP_P_ACCURACY_TORCH 0\n");
  // the torch accuracy tier: a parameter of its own, last, omitted at its default (exact)
  const auto tier = resolve_activation("gelu(accuracy='torch', approximate=tanh)");
  CHECK(tier.canonical == "gelu(approximate=tanh, accuracy=torch)");
  CHECK(tier.torch_tier());
  CHECK(tier.bounds().f32_forward == tier.act->torch_tier_forward);
  CHECK(tier.bounds().narrow_forward == resolve_activation("gelu(approximate=tanh)").bounds().narrow_forward);
  CHECK(tier.exact_canonical() == "gelu(approximate=tanh)");
  CHECK(resolve_activation("silu(accuracy=torch)").exact_canonical() == "silu");
  CHECK(resolve_activation("silu(accuracy=exact)").canonical == "silu");
  CHECK_FALSE(resolve_activation("silu").torch_tier());
  // A tier with a backward kernel of its own holds it to its own bound and tunes it under its own
  // text; one without (hardswish) runs the exact kernel backward, tuned as the exact text. Forward
  // kernels and other dtypes (where the tier is refused) keep their own names.
  CHECK(tier.torch_tier_kernel(Direction::backward));
  CHECK(tier.bounds().f32_backward != resolve_activation("gelu(approximate=tanh)").bounds().f32_backward);
  const auto hardswish = resolve_activation("hardswish(accuracy=torch)");
  CHECK(hardswish.torch_tier_kernel(Direction::forward));
  CHECK_FALSE(hardswish.torch_tier_kernel(Direction::backward));
  CHECK(hardswish.bounds().f32_backward == resolve_activation("hardswish").bounds().f32_backward);
  KernelSpec spec;
  spec.activation = "gelu(approximate=tanh, accuracy=torch)";
  spec.direction = Direction::backward;
  CHECK(tuning_spec(spec).activation == spec.activation);
  spec.activation = "hardswish(accuracy=torch)";
  CHECK(tuning_spec(spec).activation == "hardswish");
  spec.direction = Direction::forward;
  CHECK(tuning_spec(spec).activation == spec.activation);
  spec.direction = Direction::backward;
  spec.dtype = Dtype::bf16;
  CHECK(tuning_spec(spec).activation == spec.activation);
  spec.activation = "silu";
  spec.dtype = Dtype::f32;
  CHECK(tuning_spec(spec).activation == "silu");
}

TEST_CASE("parameters are converted as torch converts them: compute type, or the tensor's dtype") {
  // torch's shrinks take lambd.to<scalar_t>(): 0.3 in bfloat16 is 0.30078125, in float16 1229/4096.
  const ResolvedActivation shrink = resolve_activation("hardshrink(lambd=0.3)");
  CHECK(params_for(shrink, Dtype::bf16)[0] == 0.30078125);
  CHECK(params_for(shrink, Dtype::f16)[0] == 1229.0 / 4096);
  CHECK(params_for(shrink, Dtype::f32)[0] == static_cast<double>(0.3f));
  CHECK(params_for(shrink, Dtype::f64)[0] == 0.3);
  CHECK(shrink.param_defines(Dtype::bf16) == "#define KP_P_LAMBD KP_LIT(0.30078125)\n#define KP_P_LAMBD_POW2 0\n");
  CHECK(shrink.param_defines(Dtype::f32) == "#define KP_P_LAMBD KP_LIT(0.3)\n#define KP_P_LAMBD_POW2 0\n");
  // Others convert to float (opmath) in every dtype below float64.
  const ResolvedActivation leaky = resolve_activation("leaky_relu(negative_slope=0.3)");
  CHECK(params_for(leaky, Dtype::bf16)[0] == static_cast<double>(0.3f));
  // hardtanh: its forward is torch's clamp (float); its backward compares in the tensor's dtype.
  const ResolvedActivation ht = resolve_activation("hardtanh(min_val=-0.3, max_val=2)");
  CHECK(params_for(ht, Dtype::bf16, Direction::forward)[0] == static_cast<double>(-0.3f));
  CHECK(params_for(ht, Dtype::bf16, Direction::backward)[0] == -0.30078125);
}

TEST_CASE("bad activation text is refused with a message naming what is wrong") {
  auto refused = [](const std::string& text, const std::string& words) {
    CAPTURE(text);
    try {
      resolve_activation(text);
      FAIL("accepted: " << text);
    } catch (const Error& e) {
      CHECK(e.code() == ErrorCode::invalid_argument);
      CHECK_MESSAGE(std::string(e.what()).find(words) != std::string::npos, e.what());
    }
  };
  refused("swish", "unknown activation 'swish'");
  refused("swish", "leaky_relu");  // lists the known ones
  refused("leaky_relu(slope=0.2)", "unknown parameter 'slope'");
  refused("leaky_relu(slope=0.2)", "negative_slope");  // lists the known parameters
  refused("threshold(threshold=1)", "missing required parameter value");
  refused("hardtanh(min_val=2, max_val=1)", "min_val (2) must be <= max_val (1)");
  refused("softplus(beta=0)", "beta must be > 0");
  refused("softshrink(lambd=-1)", "lambd must be >= 0, as torch's softshrink requires (got -1)");
  refused("celu(alpha=0)", "alpha must not be 0");
  refused("gelu(approximate=fast)", "one of none, tanh");
  refused("elu(alpha=abc)", "must be a finite number");
  refused("elu(alpha=inf)", "must be a finite number");
  refused("elu(alpha=1, alpha=2)", "given twice");
  refused("relu(1)", "relu takes 0 parameter(s)");
  refused("elu(alpha=1", "malformed");
  refused("elu)", "malformed");
  refused("elu(alpha=)", "has no value");
  refused("elu(,)", "empty argument");
  refused("(alpha=1)", "no name");
  refused("", "empty name");
  refused("relu(accuracy=torch)", "unknown parameter 'accuracy'");  // no tier: exact already
  refused("silu(accuracy=fast)", "one of exact, torch");
  refused("gated(silu(accuracy=torch))", "one accuracy");
}
