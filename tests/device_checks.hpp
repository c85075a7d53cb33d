// Device tests shared by every backend: run a problem through the engine and check every
// element (and the guard zones) against the double reference.
#pragma once
#include <doctest/doctest.h>

#include <random>
#include <string>

#include "check/problem.hpp"
#include "device_fixture.hpp"
#include "engine/engine.hpp"

namespace kplay::test {

inline std::uint64_t fresh_seed() {
  static std::uint64_t s = std::random_device{}() * 0x9e3779b97f4a7c15ull;
  return ++s;
}

// Runs spec/config on a fresh problem and returns the error statistics over every element.
// The seed is random per call (so repeated runs cover more inputs) and is stored in last_seed(),
// which KPLAY_CHECK_PROBLEM reports: a failure names the inputs that reproduce it.
inline std::uint64_t& last_seed() {
  static std::uint64_t s = 0;
  return s;
}
inline ErrorStats run_problem(Engine& engine, const KernelSpec& spec, const KernelConfig& config, ProblemShape shape) {
  shape.seed = last_seed() = fresh_seed();
  auto k = engine.prepare(spec, config);
  Problem p(engine.backend(), spec, shape);
  engine.launch_flat(*k, p.out(), p.in0(), p.in1(), shape.n);
  engine.backend().synchronize();
  return p.verify(false);
}

#define KPLAY_CHECK_PROBLEM(engine, spec, config, shape)                                                   \
  do {                                                                                                     \
    const auto kplay_stats = ::kplay::test::run_problem(engine, spec, config, shape);                      \
    INFO(::kplay::to_string(spec) << " | " << ::kplay::to_string(config) << " | n=" << (shape).n << " in+" \
                                  << (shape).in_offset << " out+" << (shape).out_offset                    \
                                  << std::string((shape).in_place ? " in-place" : "") << " seed "          \
                                  << ::kplay::test::last_seed() << " | " << kplay_stats.summary());        \
    CHECK(kplay_stats.mismatches == 0);                                                                    \
    CHECK(kplay_stats.checked == (shape).n);                                                               \
  } while (0)

// The shared matrix: sizes 0, 1, primes, every tail below the vector width, misaligned inputs and
// outputs, in place; every activation, direction and saved tensor; each dtype in `dtypes`.
void check_backend_kernels(Engine& engine, const std::vector<Dtype>& dtypes);
void check_backend_knobs(Engine& engine);
// Fast-math SELU must show its (larger) error rather than hide it; the error is printed.
void check_backend_fast_math(Engine& engine);
// The float32 rows of the activations with a double path (templates/common/fp64_math.h): every
// direction, a few sizes and offsets. Run once per math path (KPLAY_FP64_MATH=0 forces float-float).
void check_backend_f32_transcendentals(Engine& engine);
// 16-bit hardswish and hardsigmoid, every direction, over all 65536 inputs: bit-equal to their
// formulas with an IEEE float division by 6 (the kernels divide without one: narrow_math.h).
void check_backend_sixths_16bit(Engine& engine);
// A second prepare of the same kernel is the same object (the in-process cache).
void check_backend_kernel_cache(Engine& engine);

// The device model's configs with no tuning anywhere (docs/design.md, "The default without
// tuning"): for every activation, direction and dtype in `dtypes`, the config the model gives this
// device and an H100-like one (tests/hopper_device.hpp) at 2^20 and 4096x393216 elements passes the
// backend's checks; each distinct config of a dtype and direction then runs once, with the first
// activation that gets it (the kernel matrix runs every activation's math).
void check_model_configs(Engine& engine, const std::vector<Dtype>& dtypes);

}  // namespace kplay::test