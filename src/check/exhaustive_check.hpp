// `kplay check`: every input of a dtype (all 2^32 float32 bit patterns, all 2^16 of a 16-bit type;
// float64 a seeded sample) through the device kernel, against the reference (long double for
// float64, double otherwise) computed on all host cores, with the error in ulps and the counts a
// bound is judged by.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "engine/engine.hpp"

namespace kplay {

struct SweepStats {
  std::uint64_t checked = 0;
  double max_ulps = 0;
  double worst_input = 0, worst_out = 0, worst_ref = 0;
  std::uint64_t over_half = 0, over_one = 0, over_two = 0, over_bound = 0;
  std::uint64_t nan_mismatch = 0;          // NaN where a number is due, or the reverse
  std::uint64_t inf_mismatch = 0;          // an infinity that the rounded reference is not
  std::uint64_t signed_zero_mismatch = 0;  // +0 against -0 (reported, not held to the bound)
  std::uint64_t subnormal_skipped = 0;     // exact results below the smallest normal number (not judged)
  void merge(const SweepStats& o);
};

struct SweepOptions {
  std::uint64_t sample = 1ull << 26;  // float64: how many random bit patterns
  bool force_sample = false;          // sample the other dtypes too (quicker than exhaustive)
  std::uint64_t seed = 1;
  // float32: every input in [range_lo, range_hi] instead of all 2^32 (when range_lo <= range_hi);
  // float64: `sample` values uniform in it. For the hard spots of an approximation (a root of a
  // derivative, a branch boundary, a tail).
  double range_lo = 1, range_hi = 0;
  double bound = 0;  // ulps; from the registry when 0
  // Backward, and gated forward: gradients (a gated activation's values of b) per input, each
  // (input, gradient) pair one element. The error in ulps of a
  // 16-bit result depends on where g f'(x) falls between two 16-bit numbers, so one gradient per
  // input can miss a bad input (gelu' near its root). 0: 64 for float16 and bfloat16
  // (4.2 million pairs), 1 for float32 (2^32 inputs already) and float64 (each sample has its own).
  std::uint64_t gradients = 0;
  double scale = 1;  // FP8 output's per-tensor scale (a gated forward with spec.out set)
  std::function<void(double fraction, const SweepStats& so_far)> progress;
};

struct SweepResult {
  SweepStats stats;
  double bound = 0;
  std::uint64_t gradients = 1;  // per input (backward)
  bool exhaustive = true;
  double seconds = 0;
  bool self_referenced = false;  // a user activation: checked against itself in float64
};

// Throws Error like Engine::prepare. `config` as for `kplay run`.
SweepResult exhaustive_check(Engine& engine, const KernelSpec& spec, const KernelConfig& config,
                             const SweepOptions& options);

// Gradient used for element i of a backward sweep (input i modulo the number of inputs): finite,
// mixed sign, magnitude in [1/4, 8), deterministic.
double sweep_gradient(Dtype dtype, std::uint64_t i);

}  // namespace kplay
