// Fresh test inputs and the comparison of kernel outputs with the double reference.
//
// Inputs are a pure function of (seed, stream, index), so a verifier can recompute any element
// without keeping the input: mixed signs, magnitudes from 1e-12 to 8, and about one element in
// 64 a special value (±0, ±inf, NaN, subnormals, the dtype's extremes); the first elements of
// every stream are the whole special table, so even tiny tensors exercise it.
#pragma once
#include <cstdint>
#include <string>

#include "activations.hpp"
#include "kplay/types.hpp"

namespace kplay {

// Streams of one problem: the forward input x, and for backward the incoming gradient.
enum class InputStream : std::uint64_t { x = 1, grad = 2 };

// Element `i` of `stream`, already rounded to `dtype`.
double generate_input(Dtype dtype, std::uint64_t seed, InputStream stream, std::uint64_t i);

// Number of special values planted at the start of each stream.
std::size_t special_value_count();

// Per-dtype tolerance on the relative error of correctly rounded (not fast-math) kernels.
double tolerance(Dtype dtype);

// The reference value of element i of a problem (forward: f(x); backward: f'(saved) * grad with
// saved = x, or the forward output rounded to dtype), rounded to the dtype, and the value that
// the kernel's second input holds for backward (saved tensor).
struct ReferenceProblem {
  KernelSpec spec;
  std::uint64_t seed = 0;
  const Activation* act = nullptr;
  explicit ReferenceProblem(const KernelSpec& s, std::uint64_t seed);
  double in0(std::uint64_t i) const;       // x (forward) or grad (backward)
  double in1(std::uint64_t i) const;       // saved tensor (backward only)
  double expected(std::uint64_t i) const;  // exact (double) result for element i
  // Error scale for element i. With the saved output, SELU's derivative y + lambda*alpha cancels
  // for very negative x, where any float implementation (torch's too) is exact only relative to
  // the incoming gradient; so there the error is measured against |grad|. With the saved input,
  // where the derivative underflows in the dtype, against |grad| * min_normal. Elsewhere 0.
  double error_scale(std::uint64_t i) const;
};

// Running comparison: relative error |out - ref| / max(|ref|, min_normal(dtype), scale); NaN must
// meet NaN, and an infinity must match the reference rounded to the dtype (an overflow is the
// correctly rounded result), or the element counts as a mismatch. Two values that are both below
// the smallest normal number compare equal (what flush-to-zero or an underflowing intermediate
// gives; the difference is under min_normal).
struct ErrorStats {
  explicit ErrorStats(Dtype d);
  Dtype dtype;
  double tol;  // tolerance(dtype) unless changed (fast-math reports without failing)
  double max_rel_error = 0;
  std::uint64_t checked = 0;
  std::uint64_t mismatches = 0;      // over tolerance, NaN/inf disagreement
  std::uint64_t first_bad = UINT64_MAX;
  double first_bad_out = 0, first_bad_ref = 0;
  // `scale`: the magnitude the error is measured against when |ref| is smaller (0: min_normal).
  void add(std::uint64_t index, double out, double ref, double scale = 0);
  void merge(const ErrorStats& o);
  std::string summary() const;  // "max rel error 1.2e-07 over 1000 elements, 0 mismatches"
};

}  // namespace kplay
