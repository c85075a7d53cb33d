// The registry itself: one entry per built-in activation, and name resolution.
#include "activations.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>

#include "activation_text.hpp"
#include "kplay/error.hpp"
#include "reference.hpp"
#include "user_activations.hpp"
#include "util/hash.hpp"
#include "util/host_dtype.hpp"

namespace kplay {
namespace {
constexpr double kRequired = std::numeric_limits<double>::quiet_NaN();

std::vector<double> no_edges(const double*) { return {}; }
std::vector<double> zero_edge(const double*) { return {0.0}; }
std::vector<double> relu6_edges(const double*) { return {0.0, 6.0}; }
std::vector<double> first_param_edge(const double* p) { return {p[0]}; }
std::vector<double> both_param_edges(const double* p) { return {p[0], p[1]}; }
std::vector<double> band_edges(const double* p) { return {-p[0], p[0]}; }
std::vector<double> hard_edges(const double*) { return {-3.0, 3.0, -1.5}; }
std::vector<double> softplus_edges(const double* p) { return {p[1] / p[0]}; }

std::string finite_slope(const double*) { return ""; }
// torch's rrelu refuses lower > upper ("Lower bound should be less than or equal to the upper bound").
std::string rrelu_check(const double* p) {
  return p[0] <= p[1] ? ""
                      : "lower (" + format_number(p[0]) + ") must be <= upper (" + format_number(p[1]) +
                            "), as torch's rrelu requires";
}
double rrelu_mean_slope(const double* p) { return (p[0] + p[1]) / 2; }
// The output has the input's sign only where the mean slope is positive (leaky_relu's condition).
bool rrelu_positive_mean(const double* p) { return rrelu_mean_slope(p) > 0; }
double rrelu_span(const double* p) { return p[1] - p[0]; }
std::string celu_check(const double* p) { return p[0] == 0 ? "alpha must not be 0" : ""; }
std::string positive_beta(const double* p) { return p[0] > 0 ? "" : "beta must be > 0"; }
std::string hardtanh_check(const double* p) {
  return p[0] <= p[1] ? "" : "min_val (" + format_number(p[0]) + ") must be <= max_val (" + format_number(p[1]) + ")";
}
// softshrink: torch refuses lambd < 0 ("lambda must be in range [0, ...]"). hardshrink takes any
// lambd, as torch does: below 0 its band -l <= x <= l is empty and every x passes through.
std::string softshrink_lambd_check(const double* p) {
  return p[0] >= 0 ? "" : "lambd must be >= 0, as torch's softshrink requires (got " + format_number(p[0]) + ")";
}

bool positive_first_param(const double* p) { return p[0] > 0; }
bool nonnegative_first_param(const double* p) { return p[0] >= 0; }

// What kplay.torch and kplay.nn take from an entry: torch.nn's class ("" where torch has none),
// whether torch's module and function take inplace=, and what autograd saves by default
// (Activation::saves_output).
constexpr bool kInplace = true, kNoInplace = false;
constexpr bool kSavesOutput = true, kSavesInput = false;
struct Torch {
  const char* torch_class;
  bool inplace;
  bool saves_output;
};

// The reference comes from reference.cpp's table, by name; an entry without one fails the tests
// (test_reference.cpp).
Activation builtin(std::string name, std::string snippet, std::vector<ParamDef> params, Torch torch,
                   bool (*output_determines)(const double*), std::string (*check)(const double*),
                   std::vector<double> (*edges)(const double*), UlpBounds b, std::string example = "") {
  Activation a;
  if (const reference::Functions* ref = reference::find(name)) {
    a.forward = ref->forward;
    a.grad_from_input = ref->from_input;
    a.grad_from_output = ref->from_output;
    a.forward_ld = ref->forward_ld;
    a.grad_from_input_ld = ref->from_input_ld;
    a.grad_from_output_ld = ref->from_output_ld;
  }
  a.name = std::move(name);
  a.snippet = std::move(snippet);
  a.params = std::move(params);
  a.output_determines_grad = output_determines;
  a.check_params = check;
  a.edges = edges;
  a.bounds = b;
  a.example = std::move(example);
  a.torch_class = torch.torch_class;
  a.torch_inplace = torch.inplace;
  a.saves_output = torch.saves_output;
  return a;
}

UlpBounds bounds(double f32_forward) {
  UlpBounds b;
  b.f32_forward = f32_forward;
  return b;
}
// float64 bounds above the default 4 ulp, against the long double reference. Measured on PoCL
// (`kplay check --dtype f64` over 2^24 patterns, `kplay run --dtype f64 --check all` over 2 x 2^24
// inputs, 2e7 more across [-40, 40], [-750, -700] and around the derivatives' roots), not on CUDA;
// the defaults measured 3.4 at most (softsign'):
// - gelu forward 8: 4.8 measured for approximate='none' (3.72 on the H100 and the H200); 'tanh'
//   is held to 4096 (gelu_bounds).
// - backward next to a derivative's root, where the kernels' formulas cancel as torch's do and the
//   error counts against |grad| 2^-16 below a derivative of 2^-16 (verification.hpp): gelu 9.6e4
//   (tanh 6.6e4) and mish 9.6e4 -> 2^18, silu 2.3e4 -> 2^17.
// - sigmoid and tanh backward 4.9 (8); mish forward 4.5 (8); tanhshrink 7.6 forward (16) and 4.2
//   backward (8); selu backward 2.5 holds the default 4.
// - silu forward 1.2 (the default 4) and mish 4.1 (8): for x in [-714.3, -708.4] e^x is subnormal
//   and the result is not, which the snippets' tail branch handles.
// - softplus forward 6: 2.4 for beta = 1, 3.8 for beta = 0.7 (x = -1.246, 2^24 inputs nearby),
//   whose division moves log1p's ~2.3 ulp into a binade where they can count twice, plus its own
//   rounding (5.1 at worst). Backward 1.3 (the default 4). beta x is carried as bx + bl: the
//   rounded bx alone gives 512 ulp forward and 8.5 backward for beta = 0.7.
UlpBounds f64(UlpBounds b, double forward, double backward) {
  b.f64_forward = forward;
  b.f64_backward = backward;
  return b;
}

// float32 tanh backward from the input: two single roundings (sigmoid(2x), then sigmoid(-2x)),
// and CI's PoCL run met one input at 3.7 ulp; the target is 2 ulp (a float-float derivative).
UlpBounds f32_backward(UlpBounds b, double ulps) {
  b.f32_backward = ulps;
  return b;
}

// 16-bit gelu backward: the derivative's root near -0.75 cancels in float32 too (1.3 ulp measured).
UlpBounds narrow_backward(UlpBounds b, double ulps) {
  b.narrow_backward = ulps;
  return b;
}

// gelu(approximate='tanh') float64 forward: 1,591 ulp at x = -20.7, where its tail multiplies the
// kernel's roundings of u by |2u| up to 711 (about 2,900 at worst); approximate='none' keeps 8.
// gelu (approximate='none') float32 forward 5: computed in float alone (the double path cannot keep
// up with an H200's memory under its power cap), its 2^g in hardware: 3.45 ulp at most over every
// float on PoCL, 4.33 on an H200 (`kplay check --act gelu --dtype f32`; templates/common/precise_math.h).
// gelu(approximate='tanh') float32 forward 3: on fast-FP64 devices the exponent in double and the quotient in float
// (fp64_math.h), 1.72 on PoCL, 2.65 on an H200; elsewhere float-float (precise_math.h), within 2.
UlpBounds gelu_bounds(UlpBounds b, const double* p) {
  if (p[0] == 1) {
    b.f64_forward = 4096;
    b.f32_forward = 3;
  } else {
    b.f32_forward = 5;
  }
  return b;
}

// quick_gelu (beta = 1.702), measured on PoCL (`kplay check --act quick_gelu --dtype D [--direction
// backward]`, float32 also with KPLAY_FP64_MATH=0): float32 forward 0.532 over every float by the
// double path, 0.751 by the float-float one (a subnormal result at x = -53.9; 2^24 patterns and
// every float in [-70, -30] and [-0.85, -0.65]); backward 0.5015 over every float, one gradient
// each (0.524 in 2^24 patterns), and 0.554 by the float-float path next to the derivative's root
// at -0.7512: silu's 2 for both. 16-bit forward 0.5002; float16 backward 0.937 at x = -0.751 next
// to the root, where the float formula cancels: bound 2, since the GPUs' MUFU.EX2 and MUFU.RCP
// (2^-22, 2^-23 relative) move it by up to 1.1 ulp in a host emulation. float64 forward 1.32
// (2^22 patterns, 2x10^6 in each of [-440, -400], [-40, 40]), backward 5.3 away from the root and
// 5.8e3 next to it (counted against |grad| 2^-16, verification.hpp): silu's 4 and 2^17.
UlpBounds quick_gelu_bounds() { return narrow_backward(f64(bounds(2), 4, 1 << 17), 2); }

Activation with_derived(Activation a, std::vector<DerivedParam> derived) {
  a.derived = std::move(derived);
  return a;
}

// An `accuracy` choice after the activation's own parameters (the last one), and the tier's
// float32 forward bound (docs/accuracy.md, "The torch tier"): the tier's maximum over every
// float32 on the H200 (`kplay check --act "A(accuracy=torch)" --dtype f32`) and on PoCL, rounded
// up, each within torch's own maximum over every float32 (docs/experiments/torch_float32_ulp):
// equal to it where the formula is torch's (elu 1.133, selu 2.273, tanh 1.815, softplus and
// logsigmoid 2.702: torch's worst x too), far below it where torch's tail flushes (sigmoid 3.45,
// silu 52 against millions); mish's 52.01 is torch's own, at the same x (e^x subnormal in both).
// hardsigmoid and hardswish (not in torch's table) take torch's formula, a product by RN(1/6).
// gelu's two forms are torch's formulas, whose 1 + erf and 1 + tanh cancel to 0 where the exact
// result is a tiny negative number: a relative error of 1, 2^24 ulp at most, as torch's.
constexpr double kTorchFormulaBound = 0x1p24;
Activation with_torch_tier(Activation a, double f32_forward, double (*by_params)(double, const double*) = nullptr) {
  a.params.push_back({"accuracy", 0, {"exact", "torch"}});
  a.torch_tier_forward = f32_forward;
  a.torch_tier_params = by_params;
  return a;
}
// softplus: log1p(exp(beta x)) / beta with beta x rounded in float, as torch rounds it: exact for a
// power of two; otherwise exp magnifies the rounding by |beta x| (up to 103 before the result is
// 0): 61 ulp on PoCL at beta = 0.7. The same for softplus' and celu's backward, e^(beta x) and
// e^(x / alpha) with beta x and x / alpha rounded in float.
double rounded_argument_tier(double bound, const double* p) {
  int e = 0;
  return std::fabs(std::frexp(p[0], &e)) == 0.5 ? bound : 128;
}
// celu: alpha expm1(x / alpha), x / alpha and the product rounded, as torch's: 1.72 ulp on PoCL
// and 2.04 on the H200 at alpha = 2.5 (65,537 random inputs; not swept over every float).
double celu_tier(double bound, const double* p) { return p[0] == 1 ? bound : 3; }
// The tier's float32 backward bound, where it has a backward kernel (0: the exact kernel): its
// maximum over every float32 on the H200, one gradient each of magnitude 1/4 to 8 as `kplay check`
// draws them, rounded up, below torch's own on the same inputs (docs/experiments/torch_float32_ulp,
// --direction backward): elu and celu 3.54 (torch 6.31), selu 3.48 (9.68), softplus 4.23 (6.31),
// logsigmoid 4.13 (5.89), where torch loses e^x's bits below x = -87.3 and the tier keeps them
// (templates/common/tier_math.h). silu and gelu cancel next to their derivative's root (-1.2785,
// -0.7518), where the root's float has a relative error of 0.41 (silu, 3.45e6 ulp; torch 1.68e7 in
// its tail) and 6.7 (gelu: torch's 5.64e7 ulp, its formula; tanh 4.87e7, torch's NaN past 1.8e19):
// 2^23 and 2^27 hold that relative error whatever the gradient. mish' cancels at -1.19243 as
// well: t + x s sech^2 in float, 1.23e8 ulp there on the H200 (torch's mish_backward 3.22e8 at the
// same x) and 1.30e8 on PoCL, a relative error of 8.6 at most: 2^28. Its exact kernel loses to
// torch's from 2^22 elements up (48 registers of double math), the tier wins at each size.
Activation with_torch_tier_backward(Activation a, double f32_backward,
                                    double (*by_params)(double, const double*) = nullptr) {
  a.torch_tier_backward = f32_backward;
  a.torch_tier_backward_params = by_params;
  return a;
}
// elu's g alpha is a rounding more where alpha is not 1.
double elu_tier_backward(double bound, const double* p) { return p[0] == 1 ? bound : bound + 0.5; }

Activation with_param_bounds(Activation a, UlpBounds (*param_bounds)(UlpBounds, const double*)) {
  a.param_bounds = param_bounds;
  return a;
}

UlpBounds exact() {
  UlpBounds b;
  b.f32_forward = b.narrow_forward = b.f64_forward = 0.5;
  return b;
}

// Forward and backward each one rounding of an exact product (relu2: x * x and g * 2x): 0.5 ulp
// at most on PoCL over every 16-bit input (64 gradients each) and 2^24 float32 and 2^22 float64
// patterns per direction (`kplay check --act relu2 --dtype D [--direction backward]`).
UlpBounds exact_both_ways() {
  UlpBounds b = exact();
  b.f32_backward = b.narrow_backward = b.f64_backward = 0.5;
  return b;
}
}  // namespace

double UlpBounds::get(Dtype d, Direction dir) const {
  const bool fwd = dir == Direction::forward;
  switch (d) {
    case Dtype::f32: return fwd ? f32_forward : f32_backward;
    case Dtype::f64: return fwd ? f64_forward : f64_backward;
    default: return fwd ? narrow_forward : narrow_backward;
  }
}

// One entry per activation: name, snippet, parameters, torch's class and what autograd saves, the
// output condition, parameter check, edges, bounds (and the example `--act all` runs where a
// parameter is required).
const std::vector<Activation>& activations() {
  static const std::vector<Activation> registry = {
      builtin("relu", "activations/relu.h", {}, Torch{"ReLU", kInplace, kSavesOutput}, nullptr, nullptr, zero_edge,
              exact()),
      builtin("relu6", "activations/relu6.h", {}, Torch{"ReLU6", kInplace, kSavesOutput}, nullptr, nullptr, relu6_edges,
              exact()),
      builtin("relu2", "activations/relu2.h", {}, Torch{"", kNoInplace, kSavesInput}, nullptr, nullptr, zero_edge,
              exact_both_ways()),
      builtin("leaky_relu", "activations/leaky_relu.h", {{"negative_slope", 0.01, {}}},
              Torch{"LeakyReLU", kInplace, kSavesOutput}, positive_first_param, finite_slope, zero_edge, bounds(1)),
      // Evaluation: leaky_relu with the mean slope; training is the training(rrelu) form.
      with_derived(
          builtin("rrelu", "activations/rrelu.h", {{"lower", 0.125, {}}, {"upper", 1.0 / 3.0, {}}},
                  Torch{"RReLU", kInplace, kSavesInput}, rrelu_positive_mean, rrelu_check, zero_edge, bounds(1)),
          {{"slope", rrelu_mean_slope}, {"span", rrelu_span}}),
      with_torch_tier_backward(
          with_torch_tier(builtin("elu", "activations/elu.h", {{"alpha", 1.0, {}}}, Torch{"ELU", kInplace, kSavesInput},
                                  nonnegative_first_param, nullptr, zero_edge, bounds(1)),
                          1.14),
          4, elu_tier_backward),
      with_torch_tier_backward(with_torch_tier(builtin("celu", "activations/celu.h", {{"alpha", 1.0, {}}},
                                                       Torch{"CELU", kInplace, kSavesInput}, positive_first_param,
                                                       celu_check, zero_edge, bounds(1)),
                                               1.14, celu_tier),
                               4, rounded_argument_tier),
      with_torch_tier_backward(
          with_torch_tier(builtin("selu", "activations/selu.h", {}, Torch{"SELU", kInplace, kSavesInput}, nullptr,
                                  nullptr, zero_edge, bounds(1)),
                          2.3),
          4),
      with_torch_tier_backward(
          with_torch_tier(
              with_param_bounds(builtin("gelu", "activations/gelu.h", {{"approximate", 0, {"none", "tanh"}}},
                                        Torch{"GELU", kNoInplace, kSavesInput}, nullptr, nullptr, no_edges,
                                        narrow_backward(f64(bounds(2), 8, 1 << 18), 2)),
                                gelu_bounds),
              kTorchFormulaBound),
          0x1p27),
      with_torch_tier_backward(
          with_torch_tier(builtin("silu", "activations/silu.h", {}, Torch{"SiLU", kInplace, kSavesInput}, nullptr,
                                  nullptr, no_edges, f64(bounds(2), 4, 1 << 17)),
                          64),
          0x1p23),
      builtin("quick_gelu", "activations/quick_gelu.h", {{"beta", 1.702, {}}}, Torch{"", kNoInplace, kSavesInput},
              nullptr, positive_beta, no_edges, quick_gelu_bounds()),
      with_torch_tier_backward(
          with_torch_tier(builtin("mish", "activations/mish.h", {}, Torch{"Mish", kInplace, kSavesInput}, nullptr,
                                  nullptr, no_edges, f64(bounds(2), 8, 1 << 18)),
                          64),
          0x1p28),
      with_torch_tier_backward(
          with_torch_tier(builtin("softplus", "activations/softplus.h", {{"beta", 1.0, {}}, {"threshold", 20.0, {}}},
                                  Torch{"Softplus", kNoInplace, kSavesInput}, nullptr, positive_beta, softplus_edges,
                                  f64(bounds(2), 6, 4)),
                          2.71, rounded_argument_tier),
          5, rounded_argument_tier),
      builtin("softsign", "activations/softsign.h", {}, Torch{"Softsign", kNoInplace, kSavesInput}, nullptr, nullptr,
              no_edges, bounds(2)),
      with_torch_tier(builtin("sigmoid", "activations/sigmoid.h", {}, Torch{"Sigmoid", kNoInplace, kSavesOutput},
                              nullptr, nullptr, no_edges, f64(bounds(2), 4, 8)),
                      3.46),
      with_torch_tier(builtin("tanh", "activations/tanh.h", {}, Torch{"Tanh", kNoInplace, kSavesOutput}, nullptr,
                              nullptr, no_edges, f32_backward(f64(bounds(2), 4, 8), 1.82)),
                      1.81),
      builtin(
          "hardtanh", "activations/hardtanh.h",
          {{"min_val", -1.0, {}, ParamType::tensor_in_backward}, {"max_val", 1.0, {}, ParamType::tensor_in_backward}},
          Torch{"Hardtanh", kInplace, kSavesOutput}, nullptr, hardtanh_check, both_param_edges, exact()),
      with_torch_tier(builtin("hardsigmoid", "activations/hardsigmoid.h", {},
                              Torch{"Hardsigmoid", kInplace, kSavesInput}, nullptr, nullptr, hard_edges, bounds(1)),
                      1.5),
      with_torch_tier(builtin("hardswish", "activations/hardswish.h", {}, Torch{"Hardswish", kInplace, kSavesInput},
                              nullptr, nullptr, hard_edges, bounds(2)),
                      2.5),
      with_torch_tier_backward(
          with_torch_tier(builtin("logsigmoid", "activations/logsigmoid.h", {},
                                  Torch{"LogSigmoid", kNoInplace, kSavesInput}, nullptr, nullptr, zero_edge, bounds(2)),
                          2.71),
          5),
      builtin("tanhshrink", "activations/tanhshrink.h", {}, Torch{"Tanhshrink", kNoInplace, kSavesInput}, nullptr,
              nullptr, no_edges, f64(bounds(2), 16, 8)),
      builtin("softshrink", "activations/softshrink.h", {{"lambd", 0.5, {}, ParamType::tensor}},
              Torch{"Softshrink", kNoInplace, kSavesInput}, nullptr, softshrink_lambd_check, band_edges, bounds(0.5)),
      builtin("hardshrink", "activations/hardshrink.h", {{"lambd", 0.5, {}, ParamType::tensor}},
              Torch{"Hardshrink", kNoInplace, kSavesOutput}, nonnegative_first_param, nullptr, band_edges, exact()),
      builtin("threshold", "activations/threshold.h",
              {{"threshold", kRequired, {}, ParamType::tensor}, {"value", kRequired, {}, ParamType::tensor}},
              Torch{"Threshold", kInplace, kSavesInput}, nullptr, nullptr, first_param_edge, exact(),
              "threshold(threshold=0.1, value=20)"),
  };
  return registry;
}

// The row shape: one entry per member of the softmax family (RowForm), each with its snippet
// (which member it is) and torch's class; the reference is row_reference.cpp's, the bounds
// docs/accuracy.md's (the double or long double row reference; float32 and 16-bit rows keep
// their max and sums in double).
namespace {
Activation row_builtin(std::string name, std::string snippet, RowForm form, std::string torch_class) {
  Activation a;
  a.name = std::move(name);
  a.snippet = std::move(snippet);
  a.is_row = true;
  a.row_form = form;
  a.saves_output = true;
  a.torch_class = std::move(torch_class);
  a.bounds.f32_forward = 1;
  a.bounds.f32_backward = 1;
  a.bounds.narrow_forward = 1;
  a.bounds.narrow_backward = 1;
  a.bounds.f64_forward = 4;
  a.bounds.f64_backward = 4;
  return a;
}
// The family's float32 forward at torch's accuracy (accuracy=torch; the backward is the exact
// kernel but log_softmax's, below): torch's formula in float, exp(x - max) with x - max rounded to
// float as torch rounds it, by the hardware's ex2 (2^-22 relative), the terms summed in double
// (templates/common/row_math.h, kp_tier_exp_c). Within 12 ulp: softmax and softmin, the term,
// corrected, times the sum's reciprocal in float (ex2's 2^-22 in the term and in the sum, three
// float roundings and the result's); log_softmax, (x - max) - log sum in float, the sum's terms of
// 1 counted apart from the rest so that log1p(sum - 1) keeps the rest's precision (ex2's 2^-22 in
// the rest, relative to a result at least log sum in magnitude: 4 ulp, OpenCL's exp2 6; the log's
// rounding and the result's). Beyond the bound the row check allows what rounding x - max costs
// torch's formula (row_problem.cpp, tier_allowance): 2^-24 |x - max| of the result (log_softmax:
// absolute), and 2.25 2^-24 of the row's term-weighted mean of |x - max| through the sum
// (docs/accuracy.md, "The softmax family at torch's accuracy").
constexpr double kRowTierBound = 12;
// log_softmax's backward at torch's accuracy: torch's g - exp(y) sum(g) in float, exp by ex2 and
// the correction, the sum of g in double rounded to float (templates/common/row_vectors.h): within
// 6 2^-24 of the terms, |g| + exp(y) |sum| (OpenCL's exp2: 8), and a rounding of the result. The
// backward check measures in ulps of the larger of the result and 2^-24 of the terms (the exact
// kernel's bound 1: 2^-47 of the terms where they cancel), so that 8 2^-24 of the terms is 2^27.
// torch's own formula sums g in float, 2^-24 a term of the sum's magnitudes: more where g's signs
// mix (docs/accuracy.md, "The softmax family at torch's accuracy").
constexpr double kRowTierBackwardBound = 0x1p27;
}  // namespace

const std::vector<Activation>& row_activations() {
  static const std::vector<Activation> registry = {
      with_torch_tier(row_builtin("softmax", "activations/softmax.h", RowForm{false, false}, "Softmax"), kRowTierBound),
      with_torch_tier_backward(
          with_torch_tier(row_builtin("log_softmax", "activations/log_softmax.h", RowForm{true, false}, "LogSoftmax"),
                          kRowTierBound),
          kRowTierBackwardBound),
      with_torch_tier(row_builtin("softmin", "activations/softmin.h", RowForm{false, true}, "Softmin"), kRowTierBound),
  };
  return registry;
}

std::string row_activation_names() {
  std::string out;
  for (const auto& a : row_activations()) out += (out.empty() ? "" : ", ") + a.name;
  return out;
}

std::string activation_names() {
  std::string out;
  for (const auto& a : activations()) out += (out.empty() ? "" : ", ") + a.name;
  return out;
}

std::vector<std::string> all_activation_texts() {
  std::vector<std::string> out;
  for (const auto& a : activations()) out.push_back(a.example.empty() ? a.name : a.example);
  return out;
}

const Activation& find_activation(const std::string& name) {
  for (const auto& a : activations())
    if (name == a.name) return a;
  for (const auto& a : row_activations())
    if (name == a.name) return a;
  if (const Activation* user = find_user_activation(name)) return *user;
  throw Error(ErrorCode::invalid_argument,
              "unknown activation '" + name + "' (known: " + activation_names() +
                  "; over a row: " + row_activation_names() +
                  "; gated(ACT) of any element-wise one; prelu; training(rrelu); or a snippet "
                  "file: --act ./my_act.h, see docs/user-activations.md)");
}

namespace {
[[noreturn]] void bad_param(const std::string& text, const std::string& why) {
  throw Error(ErrorCode::invalid_argument, "activation '" + text + "': " + why);
}

std::string param_list(const Activation& a) {
  std::string out;
  for (const auto& p : a.params) out += (out.empty() ? "" : ", ") + std::string(p.name);
  return out.empty() ? "none" : out;
}

double parse_value(const std::string& text, const Activation& a, const ParamDef& def, const std::string& value) {
  if (!def.choices.empty()) {
    for (std::size_t i = 0; i < def.choices.size(); ++i)
      if (value == def.choices[i]) return static_cast<double>(i);
    std::string words;
    for (const char* c : def.choices) words += (words.empty() ? "" : ", ") + std::string(c);
    bad_param(text, "parameter " + std::string(def.name) + " of " + a.name + " is one of " + words + " (got '" + value +
                        "')");
  }
  char* end = nullptr;
  const double v = std::strtod(value.c_str(), &end);
  if (end == value.c_str() || *end != '\0' || !std::isfinite(v))
    bad_param(text, "parameter " + std::string(def.name) + " of " + a.name + " must be a finite number (got '" + value +
                        "')");
  return v;
}

// Kernels take a parameter as a float32 literal (rounded further for the 16-bit dtypes, written
// exactly for float64): beyond float32's range the literal does not compile (rrelu(lower=1e308,
// upper=1e308)), and a nonzero one below its normal range becomes 0 or loses its precision
// (celu(alpha=1e-320) divides by 0: NaN). So every value, and each one derived from them, is 0 or
// a float32 normal number.
void check_float_range(const std::string& text, const std::string& what, double v) {
  const double magnitude = std::fabs(v);
  if (magnitude == 0 ||
      (magnitude >= std::numeric_limits<float>::min() && magnitude <= std::numeric_limits<float>::max()))
    return;
  bad_param(text, what + " is " + format_number(v) +
                      ": parameters are 0 or float32 normal numbers, of magnitude 1.1754944e-38 to 3.4028235e+38");
}

ResolvedActivation resolve_uncached(const std::string& text) {
  const ActivationCall call = split_activation_call(text);
  if (call.name == "gated") {
    if (call.args.size() != 1 || !call.args[0].first.empty())
      bad_param(text,
                "gated takes one activation, with its parameters: gated(silu), gated(gelu(approximate=tanh)), "
                "gated(./my_act.h)");
    // Checked before resolving: text nested deeper would recurse once per level.
    if (split_activation_call(call.args[0].second).name == "gated")
      bad_param(text, "a gated activation cannot gate another gated one");
    ResolvedActivation r = resolve_uncached(call.args[0].second);
    if (r.slope != SlopeForm::none || r.act->is_row) bad_param(text, r.canonical + " has no gated form");
    if (r.torch_tier())  // its float32 math is one double rounding of act(a) * b (gated_wide_math)
      bad_param(text, "a gated activation has one accuracy (its float32 math is in double): drop accuracy=torch");
    r.gated = true;
    r.inner = r.canonical;
    r.canonical = "gated(" + r.inner + ")";
    return r;
  }
  if (call.name == "prelu") {
    if (!call.args.empty())
      bad_param(text, "prelu takes no parameters: its slopes are a weight tensor, one per channel or one in all");
    ResolvedActivation r = resolve_uncached("leaky_relu");
    r.slope = SlopeForm::weight;
    r.canonical = "prelu";
    return r;
  }
  if (call.name == "training") {
    if (call.args.size() != 1 || !call.args[0].first.empty() ||
        split_activation_call(call.args[0].second).name != "rrelu")
      bad_param(text,
                "training takes rrelu, with its parameters: training(rrelu), training(rrelu(lower=0.1, upper=0.3))");
    ResolvedActivation r = resolve_uncached(call.args[0].second);
    r.slope = SlopeForm::random;
    r.inner = r.canonical;
    r.canonical = "training(" + r.inner + ")";
    return r;
  }
  ResolvedActivation r;
  r.act = &find_activation(call.name);
  if (r.act->user) {
    if (!call.args.empty()) bad_param(text, "user activations take no parameters");
    r.canonical = user_canonical_name(*r.act);
    describe_user_backward(*r.act, r);
    return r;
  }
  const Activation& a = *r.act;
  r.params.assign(a.params.size(), kRequired);
  std::vector<bool> given(a.params.size(), false);
  std::size_t positional = 0;
  for (const auto& [key, value] : call.args) {
    std::size_t i = 0;
    if (key.empty()) {
      if (positional >= a.params.size())
        bad_param(text, a.name + " takes " + std::to_string(a.params.size()) + " parameter(s) (" + param_list(a) + ")");
      i = positional++;
    } else {
      while (i < a.params.size() && key != a.params[i].name) ++i;
      if (i == a.params.size())
        bad_param(text, "unknown parameter '" + key + "' of " + a.name + " (known: " + param_list(a) + ")");
    }
    if (given[i]) bad_param(text, "parameter " + std::string(a.params[i].name) + " given twice");
    given[i] = true;
    r.params[i] = parse_value(text, a, a.params[i], value);
  }
  r.canonical = a.name;
  std::string args;
  for (std::size_t i = 0; i < a.params.size(); ++i) {
    const ParamDef& def = a.params[i];
    if (!given[i]) {
      if (std::isnan(def.default_value))
        bad_param(text, "missing required parameter " + std::string(def.name) + " of " + a.name + " (" + a.name +
                            " takes " + param_list(a) + ")");
      r.params[i] = def.default_value;
    }
    if (r.params[i] == def.default_value && !std::isnan(def.default_value)) continue;
    args += (args.empty() ? "" : ", ") + std::string(def.name) + "=" +
            (def.choices.empty() ? format_number(r.params[i]) : def.choices[static_cast<std::size_t>(r.params[i])]);
  }
  if (!args.empty()) r.canonical += "(" + args + ")";
  for (std::size_t i = 0; i < a.params.size(); ++i)
    if (a.params[i].choices.empty()) check_float_range(text, a.name + "'s " + a.params[i].name, r.params[i]);
  for (const DerivedParam& d : a.derived)
    check_float_range(text, a.name + "'s " + d.name + " (from its parameters)", d.value(r.params.data()));
  if (a.check_params) {
    const std::string why = a.check_params(r.params.data());
    if (!why.empty()) bad_param(text, why);
  }
  return r;
}
}  // namespace

ResolvedActivation resolve_activation(const std::string& text) {
  static std::mutex mutex;
  static std::map<std::string, ResolvedActivation> cache;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cache.find(text);
    if (it != cache.end() && !it->second.act->user) return it->second;
  }
  ResolvedActivation r = resolve_uncached(text);
  std::lock_guard<std::mutex> lock(mutex);
  if (cache.size() > 4096) cache.clear();  // bounded: texts come from users
  cache[text] = r;
  return r;
}

bool ResolvedActivation::torch_tier() const {
  return act->torch_tier_forward > 0 && !params.empty() && params.back() == 1;
}

bool ResolvedActivation::torch_tier_kernel(Direction d) const {
  return torch_tier() && (d == Direction::forward || act->torch_tier_backward > 0);
}

std::string ResolvedActivation::exact_canonical() const {
  if (!torch_tier()) return canonical;
  // accuracy is the last parameter, so it ends the canonical text
  const std::string alone = "(accuracy=torch)", last = ", accuracy=torch)";
  if (canonical.size() > alone.size() && canonical.compare(canonical.size() - alone.size(), alone.size(), alone) == 0)
    return canonical.substr(0, canonical.size() - alone.size());
  return canonical.substr(0, canonical.size() - last.size()) + ")";
}

UlpBounds ResolvedActivation::bounds() const {
  UlpBounds own = act->param_bounds ? act->param_bounds(act->bounds, params.data()) : act->bounds;
  if (torch_tier())
    own.f32_forward = act->torch_tier_params ? act->torch_tier_params(act->torch_tier_forward, params.data())
                                             : act->torch_tier_forward;
  if (torch_tier_kernel(Direction::backward))
    own.f32_backward = act->torch_tier_backward_params
                           ? act->torch_tier_backward_params(act->torch_tier_backward, params.data())
                           : act->torch_tier_backward;
  return gated ? gated_bounds(own) : own;
}

KernelSpec tuning_spec(KernelSpec spec) {
  // float32 alone: elsewhere the tier is refused (config_validation.cpp), not renamed
  if (spec.direction == Direction::backward && spec.dtype == Dtype::f32)
    if (const ResolvedActivation a = resolve_activation(spec.activation);
        a.torch_tier() && !a.torch_tier_kernel(Direction::backward))
      spec.activation = a.exact_canonical();
  return spec;
}

UlpBounds gated_bounds(const UlpBounds& b) {
  UlpBounds g;
  // float32: act(a) and the product in double, one rounding to float at the end
  // (templates/common/elementwise.h, KP_WIDE_F32): 0.5 ulp and the double math's 2^-29 of one.
  g.f32_forward = g.f32_backward = 2;
  // float16 and bfloat16: act(a) in float32 (its own 16-bit error came from its one rounding and
  // the hardware functions' 2^-22 or so), the product in float32, one rounding: 1 ulp forward.
  // Backward: grad_a's derivative cancels near its roots as in the plain kernel, and carries that
  // relative error into the product, where it can count up to twice in ulps of the result.
  g.narrow_forward = 1;
  g.narrow_backward = b.narrow_backward <= 1 ? 1 : 2 * b.narrow_backward;
  // float64: act(a) and act'(a) rounded to double first; an error of e ulp of act(a) is up to 2e
  // ulp of act(a) * b, plus the product's rounding.
  g.f64_forward = 2 * b.f64_forward + 1;
  g.f64_backward = 2 * std::max(b.f64_forward, b.f64_backward) + 1;
  return g;
}

bool gated_wide_math(Dtype dtype, bool fast_math) { return dtype == Dtype::f32 && !fast_math; }

bool ResolvedActivation::has_grad_from_output() const {
  if (gated || slope != SlopeForm::none) return false;
  if (act->is_row) return true;
  if (act->user) return user_backward_from_output;
  if (!act->grad_from_output) return false;
  return !act->output_determines_grad || act->output_determines_grad(params.data());
}

std::string ResolvedActivation::param_defines(Dtype dtype, Direction direction, bool exact_literals) const {
  const std::vector<double> values = params_for(*this, dtype, direction);
  std::string out;
  for (std::size_t i = 0; i < act->params.size(); ++i) {
    const ParamDef& def = act->params[i];
    std::string macro = "KP_P_";
    for (const char* c = def.name; *c; ++c) macro += static_cast<char>(std::toupper(static_cast<unsigned char>(*c)));
    if (def.choices.empty()) {
      // The literal as written converts to float in the compiler; a value rounded further (to a
      // 16-bit dtype, ParamType) is written as that float-exact value.
      const bool further = exact_literals || values[i] != static_cast<double>(static_cast<float>(params[i]));
      std::string v = format_number(further ? values[i] : params[i]);
      if (v.find_first_of(".eEn") == std::string::npos) v += ".0";  // a floating literal for KP_LIT
      out.append("#define ").append(macro).append(" KP_LIT(").append(v).append(")\n");
      // _POW2: the value is +-2^k, so x * value is exact (a snippet may skip an error term); the
      // preprocessor cannot compare floating literals, and compilers do not all fold such a test.
      int exponent = 0;
      const double significand = std::frexp(values[i], &exponent);
      out.append("#define ").append(macro).append("_POW2 ");
      out.append(significand == 0.5 || significand == -0.5 ? "1\n" : "0\n");
    } else {
      for (std::size_t k = 0; k < def.choices.size(); ++k) {
        std::string word = def.choices[k];
        for (auto& ch : word) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
        out.append("#define ").append(macro).append("_").append(word);
        out.append(static_cast<std::size_t>(params[i]) == k ? " 1\n" : " 0\n");
      }
    }
  }
  for (const DerivedParam& d : act->derived) {
    std::string macro = "KP_P_";
    for (const char* c = d.name; *c; ++c) macro += static_cast<char>(std::toupper(static_cast<unsigned char>(*c)));
    // Formed in double from the parameters as given, then rounded to the compute type once.
    const double exact = d.value(params.data());
    const double value = dtype == Dtype::f64 ? exact : static_cast<double>(static_cast<float>(exact));
    std::string v = format_number(value);
    if (v.find_first_of(".eEn") == std::string::npos) v += ".0";
    out.append("#define ").append(macro).append(" KP_LIT(").append(v).append(")\n");
  }
  return out;
}

std::string ResolvedActivation::entry_suffix() const {
  const std::string& own = gated || slope == SlopeForm::random ? inner : canonical;
  if (own == act->name) return "";
  Hasher h;
  h.add(own);
  return "_h" + h.hex().substr(0, 8);
}

std::vector<double> params_for(const ResolvedActivation& a, Dtype dtype, Direction direction) {
  std::vector<double> p = a.params;
  if (dtype == Dtype::f64) return p;
  for (std::size_t i = 0; i < p.size(); ++i) {
    const ParamType t = i < a.act->params.size() ? a.act->params[i].type : ParamType::compute;
    const bool in_tensor_dtype =
        t == ParamType::tensor || (t == ParamType::tensor_in_backward && direction == Direction::backward);
    p[i] = in_tensor_dtype ? round_to(dtype, p[i]) : static_cast<double>(static_cast<float>(p[i]));
  }
  return p;
}

}  // namespace kplay
