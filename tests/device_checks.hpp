// Device tests shared by every backend: run a problem through the engine and check every
// element (and the guard zones) against the double reference.
#pragma once
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include "check/problem.hpp"
#include "codegen/config_validation.hpp"
#include "device_fixture.hpp"
#include "engine/engine.hpp"
#include "spec/activations.hpp"

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
// The engine of a backend for the whole run (test::shared_backend's), whose kernels stay compiled
// from one test case to the next and through with_kernels_warmed's two passes.
Engine& shared_engine(const std::string& backend);

// While a warm-up is active on this thread, run_problem records the kernel it would prepare and
// returns at once, with nothing built, launched or checked.
struct KernelWarmup {
  struct Job {
    Engine* engine;
    KernelSpec spec;
    KernelConfig config;
    Layout layout;
  };
  std::vector<Job> jobs;
};
inline KernelWarmup*& active_warmup() {
  static thread_local KernelWarmup* w = nullptr;
  return w;
}
// Prepares each job's kernel, the distinct ones side by side on every core (the engine's cache
// takes concurrent prepares; NVRTC compiles in parallel); a kernel that fails to build is left for
// the test's own prepare to report.
void prepare_in_parallel(const std::vector<KernelWarmup::Job>& jobs);
// Runs `body` twice: first recording the kernels its problems launch, which are then compiled over
// every core, then for real, where each prepare finds its kernel built. Compiles are most of a row
// suite's time (OpenCL strided rows: 57 s with PoCL's build cache empty, 2 s with it full); NVRTC
// compiles side by side, PoCL one build at a time. The body's engines must outlive the first pass
// (shared_engine).
template <class F>
void with_kernels_warmed(F&& body) {
  KernelWarmup w;
  active_warmup() = &w;
  try {
    body();
  } catch (...) {
    active_warmup() = nullptr;
    throw;
  }
  active_warmup() = nullptr;
  prepare_in_parallel(w.jobs);
  body();
}

// Element-wise and gated problems alike (make_problem); `outputs` gets the elements a full check
// covers (a gated backward: both gradients).
inline ErrorStats run_problem(Engine& engine, const KernelSpec& spec, const KernelConfig& config, ProblemShape shape,
                              std::uint64_t* outputs = nullptr) {
  // A row activation's problem with inner > 1 has strided rows, which take their own kernel.
  const bool strided = resolve_activation(spec.activation).is_row() && shape.inner > 1;
  const Layout layout = strided ? Layout::strided : Layout::flat;
  if (KernelWarmup* w = active_warmup()) {
    w->jobs.push_back({&engine, spec, config, layout});
    // A misaligned offset sends a flat kernel's launch to its general twin, which the engine
    // prepares from the resolved config (Engine::kernel_for): that one too.
    if (layout == Layout::flat && config.flat && (shape.in_offset || shape.out_offset))
      w->jobs.push_back({&engine, spec, resolve_config(spec, config, engine.backend().limits()), Layout::general});
    if (outputs) *outputs = 0;
    return ErrorStats(spec.dtype, 0);
  }
  shape.seed = last_seed() = fresh_seed();
  auto k = engine.prepare(spec, config, layout);
  const auto p = make_problem(engine.backend(), spec, shape);
  p->launch(engine, *k);
  engine.backend().synchronize();
  if (outputs) *outputs = p->outputs();
  return p->verify(false);
}

#define KPLAY_CHECK_PROBLEM(engine, spec, config, shape)                                                          \
  do {                                                                                                            \
    std::uint64_t kplay_outputs = 0;                                                                              \
    const auto kplay_stats = ::kplay::test::run_problem(engine, spec, config, shape, &kplay_outputs);             \
    INFO(::kplay::to_string(spec) << " | " << ::kplay::to_string(config) << " | n=" << (shape).n << " in+"        \
                                  << (shape).in_offset << " out+" << (shape).out_offset                           \
                                  << std::string((shape).in_place ? " in-place" : "") << " rows " << (shape).rows \
                                  << " inner " << (shape).inner                                                   \
                                  << std::string((shape).two_tensors ? " two tensors" : "") << " pads "           \
                                  << (shape).pad_a << "/" << (shape).pad_b << "/" << (shape).pad_out << " seed "  \
                                  << ::kplay::test::last_seed() << " | " << kplay_stats.summary());               \
    CHECK(kplay_stats.mismatches == 0);                                                                           \
    CHECK(kplay_stats.checked == kplay_outputs);                                                                  \
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
// The torch accuracy tier (accuracy=torch, float32): every tier case, every direction, a few sizes
// and offsets, each held to the tier's bound (docs/accuracy.md, "The torch tier").
void check_backend_torch_tier(Engine& engine);
// 16-bit hardswish and hardsigmoid, every direction, over all 65536 inputs (and, backward, every
// gradient through the middle piece): bit-equal to their formulas with an IEEE float division by
// 6 (the kernels divide without one: narrow_math.h).
void check_backend_sixths_16bit(Engine& engine);
// A second prepare of the same kernel is the same object (the in-process cache).
void check_backend_kernel_cache(Engine& engine);

// The device model's configs with no tuning anywhere (docs/design.md, "The default without
// tuning"): for every activation, direction and dtype in `dtypes`, the config the model gives this
// device and an H100-like one (tests/hopper_device.hpp) at 2^20 and 4096x393216 elements passes the
// backend's checks; each distinct config of a dtype and direction then runs once, with the first
// activation that gets it (the kernel matrix runs every activation's math).
void check_model_configs(Engine& engine, const std::vector<Dtype>& dtypes);

// Gated activations (gated(ACT)), forward and backward: the gated form of every activation case,
// each in one dtype of `dtypes` (in turn) over both layouts ([rows, 2d] and two tensors) with
// pitched operands, misaligned offsets and an odd d, every kernel the general one (one compile
// per spec); then, for gated(silu), gated(relu) and gated(gelu(approximate=tanh)) in every dtype,
// every tail of d below the vector, offsets, pads, in place, the flat kernel and a user snippet.
// `every_dtype`: every case in every dtype (CUDA, where compiles are cheap).
void check_backend_gated(Engine& engine, const std::vector<Dtype>& dtypes, bool every_dtype);
// FP8 output (CUDA, sm_89 and newer): gated forward to f8e4m3 and f8e5m2 from every dtype, scaled,
// checked in FP8 ulps against the exact result (verification.hpp).
void check_backend_gated_fp8(Engine& engine);

// PReLU and RReLU in training (the per-element slope forms, templates/common/slope.h), in every
// dtype of `dtypes`: prelu forward and backward with a weight per channel and one in all (its
// weight gradient against the long double sum, slope_problem.cpp), training(rrelu) forward and
// backward against the same draws on the host; float32 also through the general kernel
// (misaligned) and prelu in place. Then, in float32, RReLU's properties: evaluation is x * float((lower + upper) / 2)
// bit for bit, as torch's leaky_relu; training's slopes lie in [lower, upper], are uniform there
// (a Kolmogorov-Smirnov statistic within its 1 % critical value for 2^16 draws) and uncorrelated
// from one element to the next, are the same for the same seed and offset and others for another
// seed, a tensor in two pieces (offset) draws as the whole, and backward's slope is forward's.
void check_backend_slope(Engine& engine, const std::vector<Dtype>& dtypes);

}  // namespace kplay::test
