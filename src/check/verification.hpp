// Fresh test inputs and the comparison of kernel outputs with the reference (reference.hpp: long
// double for float64, double for the other dtypes).
//
// Inputs are a pure function of (seed, stream, index), so a verifier can recompute any element
// without keeping the input: mixed signs, magnitudes from 1e-12 to 8, and about one element in
// 64 a special value (±0, ±inf, NaN, subnormals, the dtype's extremes); the first elements of
// every stream are the whole special table, followed (for the forward input) by the activation's
// edges (thresholds, clamp bounds) and their neighbours in the dtype, so even tiny tensors
// exercise every branch boundary.
//
// Errors are measured in ulps of the dtype at the exact result (ulp_error), and each activation
// states its bound per dtype and direction (UlpBounds in activations.hpp).
#pragma once
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "kplay/types.hpp"
#include "spec/activations.hpp"
#include "util/host_dtype.hpp"

namespace kplay {

// Streams of one problem: the forward input x (a gated activation's a), for backward the
// incoming gradient, and a gated activation's second operand b.
enum class InputStream : std::uint64_t { x = 1, grad = 2, b = 3 };

// Element `i` of `stream`, already rounded to `dtype`: the special values first, then a mix of
// tiny magnitudes, tails to +-128, specials, and most in [-8, 8). `ordinary`: the tiny magnitudes
// and [-8, 8) alone, as a model's activations are, for timing: the specials and tails send some
// kernels down slow paths (an IEEE division's out-of-range case, an overflowing exp), and one such
// element in 64 reaches nearly every warp, which no model's data does.
double generate_input(Dtype dtype, std::uint64_t seed, InputStream stream, std::uint64_t i, bool ordinary = false);

// Number of special values planted at the start of each stream.
std::size_t special_value_count();

// The activation's edges and their neighbours, rounded to the dtype (planted after the specials).
std::vector<double> edge_values(const ResolvedActivation& act, Dtype dtype);

// A gated problem's (a, b) pairs, planted after the edges, rounded to the dtype: a where act(a) is
// a normal float32 number below e^-87.3, the smallest normal float that e^x reaches (silu and mish
// of -90 are -7.4e-38, gelu(tanh) of -10.0625 is -2.9e-38), with b = +-inf, so the exact product is
// infinite: an exponential that flushes its subnormal results would make it 0 * inf = NaN.
std::vector<std::pair<double, double>> gated_pairs(Dtype dtype);

// |out - ref| in units of the dtype's spacing at |ref| (the subnormal spacing below the smallest
// normal number). NaN against NaN and equal infinities are 0; any other NaN/inf disagreement is inf.
double ulp_error(Dtype dtype, double out, long double ref);
// An error scale (ErrorStats::add) that marks a result as undetermined: any NaN or infinite one
// (for FP8 also the saturated largest value) stands, no finite one does.
constexpr double kUndetermined = HUGE_VAL;

// The bound of FP8 output, in FP8 ulps: the exact result's correct rounding, or at a near-tie the
// other neighbour (the kernel's float32 math is within 2^-17 FP8 ulp of exact).
constexpr double kFp8BoundUlps = 0.5 + 1.0 / 1024;
double ulp_of(Dtype dtype, double v);
double ulp_of(Dtype dtype, long double v);

// The reference value of element i of a problem (forward: f(x); backward: f'(saved) * grad with
// saved = x, or the forward output rounded to dtype), and the value that the kernel's second
// input holds for backward (saved tensor). Parameters are rounded to the kernel's compute type
// (float below float64), as torch converts its scalars.
struct ReferenceProblem {
  KernelSpec spec;
  std::uint64_t seed = 0;
  ResolvedActivation act;
  std::vector<double> params;
  std::vector<double> edges;
  // Gated only: (a, b) pairs planted after the edges, gated_pairs(dtype).
  std::vector<std::pair<double, double>> pairs;
  // Inputs repeat every `period` elements (0: never), so a large problem is generated once on the
  // host and replicated on the device (Problem); element i holds the values of i % period.
  std::uint64_t period = 0;
  // Ordinary inputs (generate_input's `ordinary`): no specials, edges or gated pairs planted.
  bool ordinary = false;
  explicit ReferenceProblem(const KernelSpec& s, std::uint64_t seed);
  // The reference, in long double for float64 (a double one would measure its own rounding with
  // the kernel's), in double for the other dtypes (29 bits and more beyond theirs, and long
  // double's exp, erfc, ... cost 3 to 7 times as much). grad: from the saved tensor spec.saved names.
  long double forward(double x) const { return f64() ? forward_as<long double>(x) : forward_as<double>(x); }
  long double grad(double g, double s) const { return f64() ? grad_as<long double>(g, s) : grad_as<double>(g, s); }
  // The same in T, double or long double, whatever the dtype: a float32 sweep stays in double
  // (through long double and back, x87 conversions cost `kplay check` a sixth of its time).
  template <typename T>
  T forward_as(double x) const {
    if constexpr (std::is_same_v<T, long double>) return act.act->forward_ld(x, params.data());
    return act.act->forward(x, params.data());
  }
  template <typename T>
  T grad_as(double g, double saved) const {
    const Activation& a = *act.act;
    if constexpr (std::is_same_v<T, long double>)
      return spec.saved == Saved::input ? a.grad_from_input_ld(g, saved, params.data())
                                        : a.grad_from_output_ld(g, saved, params.data());
    return spec.saved == Saved::input ? a.grad_from_input(g, saved, params.data())
                                      : a.grad_from_output(g, saved, params.data());
  }
  double in0(std::uint64_t i) const;   // x (forward) or grad (backward)
  double in1(std::uint64_t i) const;   // saved tensor (backward only)
  double x(std::uint64_t i) const;     // the forward input behind element i
  double grad(std::uint64_t i) const;  // the incoming gradient of element i (backward)

  // Gated activations (act.gated): element i of the output [rows, d] (i = row * d + column) from
  // a = x(i), b = b(i) and, for backward, g = grad(i). b's stream starts with the special values
  // in the reverse order of a's, so that each special value of a meets another one of b. The
  // reference is act(a) then one product, in T (long double for float64): forward act(a) b (FP8:
  // divided by `scale` and clamped to the format's largest finite value, NaN kept, not rounded:
  // the kernel is judged by its distance from that in FP8 ulps); backward output 0 is
  // grad_a = (g act'(a)) b, output 1 grad_b = g act(a).
  double b(std::uint64_t i) const;
  double scale = 1;  // FP8 output only
  // act(a), and g act'(a), are intermediates of the compute type (float for the 16-bit dtypes,
  // double otherwise): beyond its largest value they are infinite, as in the kernel and in torch
  // (relu2 and selu of bfloat16's largest values), whatever b then does.
  template <typename T>
  T in_compute_range(T v) const {
    const bool narrow = spec.dtype == Dtype::f16 || spec.dtype == Dtype::bf16;
    const T top = narrow ? static_cast<T>(3.4028234663852886e38) : static_cast<T>(1.7976931348623157e308);
    return v > top ? static_cast<T>(HUGE_VAL) : (v < -top ? -static_cast<T>(HUGE_VAL) : v);
  }
  template <typename T>
  T gated_as(double g, double a, double b, int output) const {
    const Activation& f = *act.act;
    if (spec.direction == Direction::forward) {
      T v = in_compute_range(forward_as<T>(a)) * static_cast<T>(b);
      if (spec.out == OutDtype::same) return v;
      v /= static_cast<T>(scale);
      const T top = static_cast<T>(fp8_limit());
      return v > top ? top : (v < -top ? -top : v);  // NaN stays NaN
    }
    if (output == 0) {
      if constexpr (std::is_same_v<T, long double>)
        return in_compute_range<T>(f.grad_from_input_ld(g, a, params.data())) * static_cast<T>(b);
      return in_compute_range<T>(f.grad_from_input(g, a, params.data())) * static_cast<T>(b);
    }
    return static_cast<T>(g) * in_compute_range(forward_as<T>(a));
  }
  long double gated_expected(std::uint64_t i, int output) const;
  // The magnitude an error of gated output `output` is measured against where that exceeds the
  // exact result: where act(a) (or g act'(a)) underflows in the compute type (float for the
  // 16-bit dtypes, double otherwise), the product with b is exact only to b times its smallest
  // normal number; grad_a takes error_scale's rules for the derivative, times |b|.
  // Where b is infinite and that factor underflows, the result is 0 * inf in the compute type,
  // NaN, where the exact product is infinite: kUndetermined, and either result stands (float32:
  // below float's smallest normal number, where its double routines may end their range).
  double gated_error_scale(double g, double a, double b, int output) const;
  double fp8_limit() const;  // the largest finite value of spec.out
  // Exact result for element i (forward or grad). Not for user activations (no reference of their
  // own): their values come from SelfReference.
  long double expected(std::uint64_t i) const;
  bool has_reference() const { return act.act->forward != nullptr; }
  bool f64() const { return spec.dtype == Dtype::f64; }
  // Error scale for element i, or for a backward element of gradient g and saved value `saved`.
  // With the saved output, SELU's derivative y + lambda*alpha cancels for very negative x, where
  // any float implementation (torch's too) is exact only relative to the incoming gradient; so
  // there the error is measured against |grad|. With the saved input, where the derivative
  // underflows in the dtype, against |grad| * min_normal; in float64, where the derivative is
  // below 2^-16 (near a root the kernels' formulas cancel, as torch's do), against |grad| * 2^-16.
  // Elsewhere 0. A user activation (no reference: checked against itself in float64) is measured
  // against at least self_reference_floor(dtype), times |grad| for backward.
  double error_scale(std::uint64_t i) const;
  double error_scale(double g, double saved) const;
};

// A user activation is checked against the same snippet in float64 (SelfReference): that checks
// how the narrower kernel rounds, not the formula, so two things that are the formula's own are
// not counted as its errors.
// - Conditioning. Rounding an intermediate is rounding the input (x / (1 + exp(-1.5 * x)) rounds
//   1.5 * x, and exp magnifies that by |1.5 x|: 18 ulp at x = -11 in float32), so a result counts
//   as exact within the float64 snippet's change over the input moved by one unit of the compute
//   type, self_reference_perturbation(dtype) (ErrorStats::add's `allowance`).
// - Range. Its float32 intermediates overflow or underflow (exp(90) in that formula) long before
//   the result leaves the normal range, so errors count against a magnitude of at least the square
//   root of the compute type's smallest normal number: 2^-63 for float32, float16 and bfloat16
//   (their math runs in float32), 2^-511 for float64.
double self_reference_perturbation(Dtype dtype);  // relative: 2^-23, 2^-52 for float64
double self_reference_floor(Dtype dtype);

// Running comparison in ulps against a bound. For backward, results whose exact value is below
// the smallest normal number are exact only to about that number (a derivative that underflows
// in a float intermediate), and are compared as equal when both are; so are float64 results below
// 2.2e-308 (the device's double library flushes some); forward results of the other dtypes are held
// to the bound everywhere, subnormal ones too. `scale` raises the magnitude an error is measured
// against (see ReferenceProblem::error_scale); `allowance` is an absolute difference from `ref`
// that counts as exact (a self-referenced result's conditioning, above).
struct ErrorStats {
  ErrorStats(Dtype d, double bound_ulps, bool backward = false, OutDtype out = OutDtype::same);
  Dtype dtype;
  OutDtype out_type;  // FP8: `out` is judged in ulps of that format (fp8_ulp) against the unrounded ref
  double bound_ulps;
  bool backward;
  double max_ulps = 0;
  double max_rel_error = 0;
  std::uint64_t checked = 0;
  std::uint64_t mismatches = 0;  // over the bound, or a NaN/inf disagreement
  std::uint64_t first_bad = UINT64_MAX;
  double first_bad_out = 0, first_bad_ref = 0;
  void add(std::uint64_t index, double out, long double ref, double scale = 0, double allowance = 0);
  void merge(const ErrorStats& o);
  std::string summary() const;  // "max 0.5 ulp (rel 6e-08) over 1000 elements, 0 over 2 ulp"
};

// The bound of a spec (its activation's, for its dtype and direction; fast-math reports only).
double ulp_bound(const KernelSpec& spec);

}  // namespace kplay
