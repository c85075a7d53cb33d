// See device_checks.hpp.
#include "device_checks.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <set>
#include <vector>

#include "activation_cases.hpp"
#include "codegen/config_validation.hpp"
#include "hopper_device.hpp"
#include "spec/activations.hpp"
#include "tuner/default_model.hpp"
#include "util/host_dtype.hpp"

namespace kplay::test {

namespace {
// The directions of an activation: forward, backward from the input, and from the output where
// the output determines the derivative.
std::vector<KernelSpec> specs_of(const std::string& text, Dtype dtype) {
  std::vector<KernelSpec> out;
  const ResolvedActivation act = resolve_activation(text);
  for (int dir = 0; dir < 3; ++dir) {
    if (dir == 2 && !act.has_grad_from_output()) continue;
    KernelSpec spec;
    spec.activation = act.canonical;
    spec.dtype = dtype;
    spec.direction = dir == 0 ? Direction::forward : Direction::backward;
    spec.saved = dir == 2 ? Saved::output : Saved::input;
    out.push_back(spec);
  }
  return out;
}

// Activations whose kernels also get every size, tail and offset combination and every knob: one
// of each kind of code path (a select, the exp family, a parameterized heavy one).
bool full_matrix(const std::string& text) {
  return text == "relu" || text == "selu" || text == "gelu(approximate=tanh)";
}
}  // namespace

void check_backend_kernels(Engine& engine, const std::vector<Dtype>& dtypes) {
  std::vector<std::uint64_t> full_sizes = {0, 1, 2, 3, 5, 7, 31, 257, 1021, 65537, 1000003};
  for (std::uint64_t t = 0; t < 16; ++t) full_sizes.push_back(4096 + t);  // every tail below 16
  const std::vector<std::uint64_t> sizes = {0, 1, 7, 4099, 65537};
  for (const auto& text : activation_cases())
    for (Dtype dtype : dtypes)
      for (const KernelSpec& spec : specs_of(text, dtype)) {
        const bool full = full_matrix(text);
        for (std::uint64_t n : full ? full_sizes : sizes) {
          ProblemShape shape;
          shape.n = n;
          KPLAY_CHECK_PROBLEM(engine, spec, KernelConfig{}, shape);
        }
        // Misaligned input and/or output (every element offset below 16 bytes for the full matrix,
        // one of each otherwise), and in place.
        const std::uint64_t per16 = 16 / dtype_size(dtype);
        for (std::uint64_t in_off = 0; in_off < per16; ++in_off)
          for (std::uint64_t out_off = 0; out_off < per16; ++out_off) {
            if (!full && in_off + out_off != 1) continue;
            ProblemShape shape;
            shape.n = 10007;
            shape.in_offset = in_off;
            shape.out_offset = out_off;
            KPLAY_CHECK_PROBLEM(engine, spec, KernelConfig{}, shape);
          }
        for (std::uint64_t off : {std::uint64_t{0}, std::uint64_t{1}}) {
          ProblemShape shape;
          shape.n = 70001;
          shape.out_offset = off;
          shape.in_place = true;
          KPLAY_CHECK_PROBLEM(engine, spec, KernelConfig{}, shape);
        }
      }
}

void check_backend_knobs(Engine& engine) {
  const bool hints = engine.backend().limits().cache_hints;
  const int max_block = engine.backend().limits().max_block;
  for (const auto& text : activation_cases()) {
    if (!full_matrix(text)) continue;
    KernelSpec spec;
    spec.activation = resolve_activation(text).canonical;
    for (int vec : {1, 2, 4})
      for (int block : {32, 256, 1024})
        for (int pt : {1, 3, 8})
          for (int grid = 0; grid < 2; ++grid) {
            if (block > max_block) continue;
            KernelConfig c;
            c.vec = vec;
            c.block = block;
            c.per_thread = pt;
            if (grid) {
              c.grid = GridPolicy::grid_stride;
              c.waves = 1;
            }
            c.cache = (hints && pt == 3) ? CacheHint::streaming : CacheHint::normal;
            for (std::uint64_t n : {std::uint64_t{13}, std::uint64_t{300007}}) {
              ProblemShape shape;
              shape.n = n;
              shape.in_offset = shape.out_offset = (n == 13 ? 1 : 0);
              KPLAY_CHECK_PROBLEM(engine, spec, c, shape);
            }
          }
    // The general kernel where the flat one would fit, and the late gradient load: every direction
    // in float16 (the H100 default uses them for 16-bit), misaligned, aligned and in place.
    for (const KernelSpec& s : specs_of(text, Dtype::f16))
      for (int general = 0; general < 2; ++general)
        for (int late = 0; late < 2; ++late) {
          if (late && s.direction != Direction::backward) continue;
          for (int pt : {1, 3}) {
            KernelConfig c;
            c.block = 64;
            c.per_thread = pt;
            c.flat = !general;
            c.late_gradient = late;
            for (int shape_kind = 0; shape_kind < 3; ++shape_kind) {
              ProblemShape shape;
              shape.n = shape_kind == 0 ? 13 : 300007;
              shape.in_offset = shape.out_offset = (shape_kind == 0 ? 1 : 0);
              shape.in_place = shape_kind == 2;
              KPLAY_CHECK_PROBLEM(engine, s, c, shape);
            }
          }
        }
  }
}

void check_backend_f32_transcendentals(Engine& engine) {
  for (const auto& text : activation_cases()) {
    const std::string name = resolve_activation(text).act->name;
    static const std::set<std::string> two_paths = {"gelu",     "silu",       "quick_gelu", "sigmoid", "tanh", "mish",
                                                    "softplus", "logsigmoid", "tanhshrink", "selu",    "elu",  "celu"};
    if (!two_paths.count(name)) continue;
    for (const KernelSpec& spec : specs_of(text, Dtype::f32))
      for (std::uint64_t n : {std::uint64_t{7}, std::uint64_t{65537}})
        for (std::uint64_t off : {std::uint64_t{0}, std::uint64_t{1}}) {
          ProblemShape shape;
          shape.n = n;
          shape.in_offset = off;
          KPLAY_CHECK_PROBLEM(engine, spec, KernelConfig{}, shape);
        }
  }
}

namespace {
float from_16(Dtype d, std::uint16_t h) { return d == Dtype::f16 ? half_bits_to_float(h) : bf16_bits_to_float(h); }
std::uint16_t to_16(Dtype d, float f) { return d == Dtype::f16 ? float_to_half_bits(f) : float_to_bf16_bits(f); }

// What the templates compute, with "/ 6.0f" where they use KP_DIV6 or KP_DIV6_OUT. g is the
// incoming gradient, v the input (or, for hardsigmoid backward from the output, the output).
float sixths_formula(const KernelSpec& spec, float g, float v) {
  const bool swish = spec.activation == "hardswish";
  if (spec.direction == Direction::forward) {
    if (swish) return v >= 3.0f ? v : (v <= -3.0f ? v * 0.0f : v * (v + 3.0f) / 6.0f);
    const float r = v + 3.0f;
    return (r <= 0.0f ? 0.0f : (r >= 6.0f ? 6.0f : r)) / 6.0f;
  }
  if (swish) return v <= -3.0f ? 0.0f : (v < 3.0f ? g * (std::fma(2.0f, v, 3.0f) / 6.0f) : g);
  const bool inside = spec.saved == Saved::output ? (v > 0.0f && v < 1.0f) : (v > -3.0f && v < 3.0f);
  return inside ? g / 6.0f : 0.0f;
}
}  // namespace

void check_backend_sixths_16bit(Engine& engine) {
  constexpr std::uint64_t n = 65536;
  rt::Backend& be = engine.backend();
  std::vector<std::uint16_t> v(n), g(n), out(n);
  for (std::uint64_t i = 0; i < n; ++i) {
    v[i] = static_cast<std::uint16_t>(i);                       // every pattern
    g[i] = static_cast<std::uint16_t>((i * 40503u) & 0xffffu);  // every pattern, in another order
  }
  const rt::DeviceBuffer dv(be, 2 * n), dg(be, 2 * n), dout(be, 2 * n);
  be.upload(dv.ptr(), v.data(), 2 * n);
  be.upload(dg.ptr(), g.data(), 2 * n);
  for (const char* act : {"hardswish", "hardsigmoid"})
    for (Dtype dtype : {Dtype::f16, Dtype::bf16})
      for (const KernelSpec& spec : specs_of(act, dtype)) {
        const bool fwd = spec.direction == Direction::forward;
        auto k = engine.prepare(spec, KernelConfig{});
        engine.launch_flat(*k, dout.ptr(), fwd ? dv.ptr() : dg.ptr(), dv.ptr(), n);
        be.download(out.data(), dout.ptr(), 2 * n);
        std::uint64_t differ = 0, first = n;
        for (std::uint64_t i = 0; i < n; ++i) {
          const float want = sixths_formula(spec, from_16(dtype, g[i]), from_16(dtype, v[i]));
          const float got = from_16(dtype, out[i]);
          const bool same = std::isnan(want) ? std::isnan(got) : out[i] == to_16(dtype, want);
          if (!same && differ++ == 0) first = i;
        }
        INFO(to_string(spec) << ": first difference at input pattern " << first);
        CHECK(differ == 0);
      }
}

void check_backend_fast_math(Engine& engine) {
  KernelSpec s;
  KernelConfig c;
  c.fast_math = true;
  ProblemShape shape;
  shape.n = 100000;
  const ErrorStats e = run_problem(engine, s, c, shape);
  MESSAGE("fast-math SELU float32 on " << engine.backend().info().backend << ": " << e.summary());
  CHECK(e.max_ulps > 2.0);  // the hardware exp(x)-1 loses precision near 0
}

void check_backend_kernel_cache(Engine& engine) {
  KernelSpec s;
  auto a = engine.prepare(s, {});
  auto b = engine.prepare(s, {});
  CHECK(a.get() == b.get());
}

void check_model_configs(Engine& engine, const std::vector<Dtype>& dtypes) {
  const rt::DeviceInfo devices[] = {engine.backend().info(), hopper_device(3350)};
  const TargetLimits& limits = engine.backend().limits();
  std::set<std::string> ran;
  std::size_t configs = 0;
  for (const auto& text : activation_cases())
    for (Dtype dtype : dtypes)
      for (const KernelSpec& spec : specs_of(text, dtype))
        for (const rt::DeviceInfo& dev : devices)
          for (std::uint64_t n : {std::uint64_t{1} << 20, std::uint64_t{1610612736}}) {
            KernelConfig c;
            INFO(to_string(spec) << " | model of " << (dev.name.empty() ? dev.backend : dev.name) << " | n=" << n);
            REQUIRE_NOTHROW(c = resolve_config(spec, device_default_config(spec, dev, n), limits));
            ++configs;
            // A distinct launch shape of this dtype and direction runs once.
            const std::string key = std::string(to_string(spec.dtype)) + to_string(spec.direction) +
                                    to_string(spec.saved) + "|" + to_string(c);
            if (!ran.insert(key).second) continue;
            ProblemShape shape;
            shape.n = 100003;
            KPLAY_CHECK_PROBLEM(engine, spec, c, shape);
          }
  MESSAGE(configs << " model configs checked, " << ran.size() << " of them run");
}

}  // namespace kplay::test
