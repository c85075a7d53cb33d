// See device_checks.hpp.
#include "device_checks.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "activation_cases.hpp"
#include "codegen/config_validation.hpp"
#include "hopper_device.hpp"
#include "spec/activations.hpp"
#include "spec/slope_noise.hpp"
#include "spec/user_activations.hpp"
#include "tuner/default_model.hpp"
#include "util/host_dtype.hpp"

namespace kplay::test {

Engine& shared_engine(const std::string& backend) {
  // After the backends' slots (shared_backend constructs them first), so destroyed before them.
  static std::map<std::string, std::unique_ptr<Engine>> engines;
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  std::unique_ptr<Engine>& e = engines[backend];
  if (!e) {
    rt::Backend* be = shared_backend(backend);
    REQUIRE(be != nullptr);
    e = std::make_unique<Engine>(*be);
  }
  return *e;
}

void prepare_in_parallel(const std::vector<KernelWarmup::Job>& jobs) {
  std::vector<const KernelWarmup::Job*> distinct;
  std::set<std::string> seen;
  for (const KernelWarmup::Job& j : jobs)  // the engine's own key: a duplicate would only wait on its build
    if (seen.insert(request_key(j.spec, j.config, j.layout)).second) distinct.push_back(&j);
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t i; (i = next++) < distinct.size();) {
      try {
        distinct[i]->engine->prepare(distinct[i]->spec, distinct[i]->config, distinct[i]->layout);
      } catch (...) {  // the test's own prepare reports it
      }
    }
  };
  const std::size_t n = std::min<std::size_t>(std::max(1u, std::thread::hardware_concurrency()), distinct.size());
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < n; ++t) threads.emplace_back(worker);
  for (std::thread& t : threads) t.join();
}

std::vector<std::string> torch_tier_cases() {
  std::vector<std::string> out;
  for (const auto& text : activation_cases()) {
    if (resolve_activation(text).act->torch_tier_forward <= 0) continue;
    const std::size_t close = text.rfind(')');
    out.push_back(close == std::string::npos ? text + "(accuracy=torch)" : text.substr(0, close) + ", accuracy=torch)");
  }
  return out;
}

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

namespace {
// Every float32 direction of an activation text at a short and a long size, aligned and not.
void check_f32_directions(Engine& engine, const std::string& text) {
  for (const KernelSpec& spec : specs_of(text, Dtype::f32))
    for (std::uint64_t n : {std::uint64_t{7}, std::uint64_t{65537}})
      for (std::uint64_t off : {std::uint64_t{0}, std::uint64_t{1}}) {
        ProblemShape shape;
        shape.n = n;
        shape.in_offset = off;
        KPLAY_CHECK_PROBLEM(engine, spec, KernelConfig{}, shape);
      }
}
}  // namespace

void check_backend_f32_transcendentals(Engine& engine) {
  for (const auto& text : activation_cases()) {
    const std::string name = resolve_activation(text).act->name;
    static const std::set<std::string> two_paths = {"gelu",     "silu",       "quick_gelu", "sigmoid", "tanh", "mish",
                                                    "softplus", "logsigmoid", "tanhshrink", "selu",    "elu",  "celu"};
    if (two_paths.count(name)) check_f32_directions(engine, text);
  }
}

void check_backend_torch_tier(Engine& engine) {
  for (const auto& text : torch_tier_cases()) check_f32_directions(engine, text);
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
  const rt::DeviceBuffer dv(be, 2 * n), dg(be, 2 * n), dout(be, 2 * n), dhalf(be, 2 * n);
  be.upload(dv.ptr(), v.data(), 2 * n);
  be.upload(dg.ptr(), g.data(), 2 * n);
  for (const char* act : {"hardswish", "hardsigmoid"})
    for (Dtype dtype : {Dtype::f16, Dtype::bf16}) {
      // A backward pass again with the saved tensor 0.5 everywhere (inside both functions' middle
      // piece, as input and as output), so that every gradient pattern goes through the division.
      const std::vector<std::uint16_t> half(n, to_16(dtype, 0.5f));
      be.upload(dhalf.ptr(), half.data(), 2 * n);
      for (const KernelSpec& spec : specs_of(act, dtype))
        for (const bool at_half : {false, true}) {
          const bool fwd = spec.direction == Direction::forward;
          if (fwd && at_half) continue;
          const std::vector<std::uint16_t>& saved = at_half ? half : v;
          auto k = engine.prepare(spec, KernelConfig{});
          engine.launch_flat(*k, dout.ptr(), fwd ? dv.ptr() : dg.ptr(), at_half ? dhalf.ptr() : dv.ptr(), n);
          be.download(out.data(), dout.ptr(), 2 * n);
          std::uint64_t differ = 0, first = n;
          for (std::uint64_t i = 0; i < n; ++i) {
            const float want = sixths_formula(spec, from_16(dtype, g[i]), from_16(dtype, saved[i]));
            const float got = from_16(dtype, out[i]);
            const bool same = std::isnan(want) ? std::isnan(got) : out[i] == to_16(dtype, want);
            if (!same && differ++ == 0) first = i;
          }
          INFO(to_string(spec) << std::string(at_half ? ", saved 0.5" : "") << ": first difference at input pattern "
                               << first);
          CHECK(differ == 0);
        }
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

namespace {
// The gated spec of `text` in one direction.
KernelSpec gated_spec_of(const std::string& text, Dtype dtype, Direction dir) {
  KernelSpec spec;
  spec.activation = resolve_activation("gated(" + text + ")").canonical;
  spec.dtype = dtype;
  spec.direction = dir;
  return spec;
}
}  // namespace

// Compiles every (spec, config) on all host cores before the checks launch them one by one.
void prefetch(Engine& engine, const std::vector<std::pair<KernelSpec, KernelConfig>>& kernels) {
  std::vector<KernelWarmup::Job> jobs;
  for (const auto& [spec, config] : kernels) jobs.push_back({&engine, spec, config, Layout::flat});
  prepare_in_parallel(jobs);
}

void check_backend_gated(Engine& engine, const std::vector<Dtype>& dtypes, bool every_dtype) {
  // The general kernel only: one compile per spec on PoCL, which compiles slowly.
  KernelConfig general;
  general.flat = false;
  // Which activation case runs in which dtype, and the full matrix's dtypes (below).
  auto case_dtypes = [&](std::size_t turn) {
    std::vector<Dtype> out;
    for (std::size_t k = 0; k < dtypes.size(); ++k)
      if (every_dtype || k == turn % dtypes.size()) out.push_back(dtypes[k]);
    return out;
  };
  struct Full {
    const char* text;
    std::vector<Dtype> dtypes;
    bool flat;  // the flat kernel too (contiguous tensors)
  };
  std::vector<Full> full = {{"silu", dtypes, true}};
  for (const char* text : {"relu", "gelu(approximate=tanh)"}) {
    std::vector<Dtype> ds;
    for (std::size_t k = 0; k < dtypes.size(); ++k)
      if (every_dtype || k % 2 == (text[0] == 'r' ? 0u : 1u)) ds.push_back(dtypes[k]);
    full.push_back({text, ds, every_dtype});
  }
  {
    std::vector<std::pair<KernelSpec, KernelConfig>> kernels;
    std::size_t turn = 0;
    for (const auto& text : activation_cases()) {
      for (Dtype dtype : case_dtypes(turn++))
        for (int dir = 0; dir < 2; ++dir)
          if (dir == 0 || resolve_activation(text).has_backward())
            kernels.emplace_back(gated_spec_of(text, dtype, dir ? Direction::backward : Direction::forward), general);
    }
    for (const Full& f : full)
      for (Dtype dtype : f.dtypes)
        for (int dir = 0; dir < 2; ++dir) {
          const KernelSpec spec = gated_spec_of(f.text, dtype, dir ? Direction::backward : Direction::forward);
          kernels.emplace_back(spec, general);
          if (f.flat) kernels.emplace_back(spec, KernelConfig{});
        }
    prefetch(engine, kernels);
  }
  std::size_t turn = 0;
  for (const auto& text : activation_cases()) {
    const ResolvedActivation act = resolve_activation(text);
    for (Dtype dtype : case_dtypes(turn++)) {
      for (int dir = 0; dir < 2; ++dir) {
        if (dir == 1 && !act.has_backward()) continue;
        const KernelSpec spec = gated_spec_of(text, dtype, dir ? Direction::backward : Direction::forward);
        // [rows, 2d] with an odd d, a pitch past 2d and the input one element off the vector; then
        // two tensors with their own pitches and the output off the vector.
        ProblemShape packed;
        packed.rows = 5;
        packed.n = 5 * 2 * 37;
        packed.pad_a = 3;
        packed.pad_out = 2;
        packed.in_offset = 1;
        KPLAY_CHECK_PROBLEM(engine, spec, general, packed);
        ProblemShape split;
        split.rows = 3;
        split.n = 3 * 2 * 300;
        split.two_tensors = true;
        split.pad_a = 1;
        split.pad_b = 8;
        split.out_offset = 1;
        KPLAY_CHECK_PROBLEM(engine, spec, general, split);
      }
    }
  }
  // The full matrix for three: silu (SwiGLU) in every dtype, a select and a parameterized heavy one
  // in every other dtype (all of them where every_dtype).
  for (const Full& f : full)
    for (Dtype dtype : f.dtypes)
      for (int dir = 0; dir < 2; ++dir) {
        const KernelSpec spec = gated_spec_of(f.text, dtype, dir ? Direction::backward : Direction::forward);
        const std::uint64_t per16 = 16 / dtype_size(dtype);
        // Every tail of d below the vector (and d = 0), rows of packed and split layouts.
        for (std::uint64_t d = 0; d <= per16 + 1; ++d)
          for (bool two : {false, true}) {
            ProblemShape shape;
            shape.rows = 3;
            shape.n = 3 * 2 * d;
            shape.two_tensors = two;
            KPLAY_CHECK_PROBLEM(engine, spec, general, shape);
          }
        // Every element offset of the input and the output below 16 bytes, with pads, one layout each.
        for (std::uint64_t off = 0; off < per16; ++off) {
          ProblemShape shape;
          shape.rows = 4;
          shape.n = 4 * 2 * 131;
          shape.in_offset = off;
          shape.out_offset = (off * 3) % per16;
          shape.two_tensors = off % 2;
          shape.pad_a = off;
          shape.pad_b = 2 * off + 1;
          shape.pad_out = off % 3;
          KPLAY_CHECK_PROBLEM(engine, spec, general, shape);
        }
        // In place (the output over a; the gradients over a and b), both layouts.
        for (bool two : {false, true}) {
          ProblemShape shape;
          shape.rows = 6;
          shape.n = 6 * 2 * 250;
          shape.two_tensors = two;
          shape.in_place = true;
          shape.pad_a = two ? 0 : 5;
          KPLAY_CHECK_PROBLEM(engine, spec, general, shape);
        }
        // One row of two contiguous tensors: the flat kernel, and its tail; and one large row.
        for (std::uint64_t n : {std::uint64_t{2 * 1021}, std::uint64_t{2 * 65537}}) {
          ProblemShape shape;
          shape.n = n;
          shape.two_tensors = true;
          KPLAY_CHECK_PROBLEM(engine, spec, f.flat ? KernelConfig{} : general, shape);
        }
      }
  // A user snippet as ACT: checked against itself in float64 (self_reference.hpp).
  const std::string snippet =
      "KP_FN KP_C kp_act_forward(KP_C x) { return x / (KP_LIT(1.0) + KP_EXP(-x)); }\n"
      "KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) {\n"
      "  const KP_C s = KP_LIT(1.0) / (KP_LIT(1.0) + KP_EXP(-x));\n"
      "  return g * s * (KP_LIT(1.0) + x * (KP_LIT(1.0) - s));\n"
      "}\n";
  register_user_activation("gated_test_swish", snippet);
  if (std::find(dtypes.begin(), dtypes.end(), Dtype::f64) != dtypes.end())
    for (Dtype dtype : {Dtype::f32, Dtype::bf16})
      for (int dir = 0; dir < 2; ++dir) {
        const KernelSpec spec =
            gated_spec_of("gated_test_swish", dtype, dir ? Direction::backward : Direction::forward);
        ProblemShape shape;
        shape.rows = 7;
        shape.n = 7 * 2 * 45;
        shape.pad_a = 1;
        KPLAY_CHECK_PROBLEM(engine, spec, general, shape);
      }
}

void check_backend_gated_fp8(Engine& engine) {
  KernelConfig general;
  general.flat = false;
  std::vector<KernelSpec> specs;
  for (const char* text : {"silu", "gelu", "relu2"})
    for (Dtype dtype : {Dtype::f32, Dtype::f16, Dtype::bf16, Dtype::f64})
      for (OutDtype out : {OutDtype::f8e4m3, OutDtype::f8e5m2}) {
        specs.push_back(gated_spec_of(text, dtype, Direction::forward));
        specs.back().out = out;
      }
  std::vector<std::pair<KernelSpec, KernelConfig>> kernels;
  for (const auto& spec : specs) {
    kernels.emplace_back(spec, general);
    kernels.emplace_back(spec, KernelConfig{});
  }
  prefetch(engine, kernels);
  for (const auto& spec : specs)
    for (double scale : {1.0, 0.37, 1e-3}) {
      // Packed with an odd d and offsets (the general kernel), and two contiguous tensors (the flat one).
      ProblemShape packed;
      packed.rows = 9;
      packed.n = 9 * 2 * 203;
      packed.in_offset = 1;
      packed.out_offset = 3;
      packed.pad_out = 5;
      packed.scale = scale;
      KPLAY_CHECK_PROBLEM(engine, spec, general, packed);
      ProblemShape flat;
      flat.n = 2 * 100003;
      flat.two_tensors = true;
      flat.scale = scale;
      KPLAY_CHECK_PROBLEM(engine, spec, KernelConfig{}, flat);
    }
}

}  // namespace kplay::test

namespace kplay::test {

namespace {
std::vector<float> launch_f32(Engine& engine, const KernelSpec& spec, const std::vector<float>& in0,
                              const std::vector<float>& in1, std::uint64_t seed, std::uint64_t counter,
                              std::uint64_t offset = 0) {
  rt::Backend& be = engine.backend();
  const std::uint64_t n = in0.size() - offset, bytes = in0.size() * 4;
  rt::DeviceBuffer a(be, bytes), b(be, bytes), out(be, bytes);
  be.upload(a.ptr(), in0.data(), bytes);
  if (!in1.empty()) be.upload(b.ptr(), in1.data(), bytes);
  auto k = engine.prepare(spec, {});
  rt::KernelArgs args =
      flat_args(*k, out.ptr().at(offset * 4), a.ptr().at(offset * 4), (in1.empty() ? a : b).ptr().at(offset * 4), n);
  args.slope = resolve_activation(spec.activation).slope != SlopeForm::none;
  args.weight = a.ptr();
  args.seed = seed;
  args.counter = counter;
  engine.launch(*k, args);
  be.synchronize();
  std::vector<float> host(in0.size(), 0.0f);
  be.download(host.data() + offset, out.ptr().at(offset * 4), n * 4);
  return host;
}
}  // namespace

void check_backend_slope(Engine& engine, const std::vector<Dtype>& dtypes) {
  for (Dtype d : dtypes) {
    for (Direction dir : {Direction::forward, Direction::backward}) {
      KernelSpec spec;
      spec.activation = "prelu";
      spec.dtype = d;
      spec.direction = dir;
      ProblemShape per_channel;  // [2, 5, 37]: channel = (i / 37) % 5
      per_channel.n = 2 * 5 * 37;
      per_channel.channels = 5;
      per_channel.inner = 37;
      KPLAY_CHECK_PROBLEM(engine, spec, KernelConfig{}, per_channel);
      ProblemShape single;  // one weight for 3001 elements: the gradient in one sum
      single.n = 3001;
      KPLAY_CHECK_PROBLEM(engine, spec, KernelConfig{}, single);
      ProblemShape big_single;  // 2^18 + 3 elements: the weight's gradient in 17 parts
      big_single.n = (1u << 18) + 3;
      if (d == Dtype::f32) KPLAY_CHECK_PROBLEM(engine, spec, KernelConfig{}, big_single);
      ProblemShape misaligned = per_channel;  // the general kernel
      misaligned.in_offset = 1;
      misaligned.out_offset = 3;
      if (d == Dtype::f32) KPLAY_CHECK_PROBLEM(engine, spec, KernelConfig{}, misaligned);
      ProblemShape in_place = per_channel;  // backward: the weight's gradient reads g before grad_x replaces it
      in_place.in_place = true;
      if (d == Dtype::f32) KPLAY_CHECK_PROBLEM(engine, spec, KernelConfig{}, in_place);
      spec.activation = "training(rrelu(lower=0.1, upper=0.6))";
      KPLAY_CHECK_PROBLEM(engine, spec, KernelConfig{}, single);
      if (d == Dtype::f32) KPLAY_CHECK_PROBLEM(engine, spec, KernelConfig{}, misaligned);
    }
  }

  // Evaluation: torch's leaky_relu with the slope (lower + upper) / 2 formed in double.
  const double lower = 0.1, upper = 0.6;
  const std::uint64_t n = 1u << 16;
  std::vector<float> x(n), none;
  for (std::uint64_t i = 0; i < n; ++i) x[i] = static_cast<float>(generate_input(Dtype::f32, 7, InputStream::x, i));
  KernelSpec eval;
  eval.activation = "rrelu(lower=0.1, upper=0.6)";
  const std::vector<float> y_eval = launch_f32(engine, eval, x, none, 0, 0);
  const float mean = static_cast<float>((lower + upper) / 2);
  std::uint64_t differ = 0;
  for (std::uint64_t i = 0; i < n; ++i) {
    const float want = x[i] > 0 ? x[i] : x[i] * mean;
    if (!(std::memcmp(&want, &y_eval[i], 4) == 0 || (std::isnan(want) && std::isnan(y_eval[i])))) ++differ;
  }
  CHECK_MESSAGE(differ == 0, differ << " of " << n << " rrelu evaluation outputs differ from x * float(mean slope)");

  // Training: x = -1 everywhere, so each output is minus its slope.
  KernelSpec train;
  train.activation = "training(rrelu(lower=0.1, upper=0.6))";
  const std::vector<float> minus_one(n, -1.0f);
  const std::uint64_t seed = 0x1234abcdull;
  const std::vector<float> y1 = launch_f32(engine, train, minus_one, none, seed, 0);
  const std::vector<float> y2 = launch_f32(engine, train, minus_one, none, seed, 0);
  const std::vector<float> y3 = launch_f32(engine, train, minus_one, none, seed + 1, 0);
  CHECK(std::memcmp(y1.data(), y2.data(), n * 4) == 0);  // same seed, same slopes
  std::uint64_t same_as_other_seed = 0, outside = 0, not_host = 0;
  std::vector<double> u(n);
  for (std::uint64_t i = 0; i < n; ++i) {
    const float s = -y1[i];
    if (y3[i] == y1[i]) ++same_as_other_seed;
    if (!(s >= static_cast<float>(lower) && s <= static_cast<float>(upper))) ++outside;
    if (static_cast<double>(s) != rrelu_slope(seed, i, lower, upper, Dtype::f32)) ++not_host;
    u[i] = (static_cast<double>(s) - lower) / (upper - lower);
  }
  CHECK(outside == 0);
  CHECK(not_host == 0);
  // Two draws of 24 bits agree by chance about once in 2^24 / (upper - lower) float steps.
  CHECK_MESSAGE(same_as_other_seed < 8, same_as_other_seed << " slopes equal under another seed");
  // Uniform on [lower, upper]: the Kolmogorov-Smirnov statistic below its 1 % critical value
  // 1.628 / sqrt(n), and the lag-1 correlation within 4 standard deviations (1 / sqrt(n)) of 0.
  std::vector<double> sorted = u;
  std::sort(sorted.begin(), sorted.end());
  double ks = 0;
  for (std::uint64_t i = 0; i < n; ++i) {
    const double v = std::min(std::max(sorted[i], 0.0), 1.0);
    ks = std::max({ks, std::fabs(static_cast<double>(i + 1) / n - v), std::fabs(v - static_cast<double>(i) / n)});
  }
  CHECK_MESSAGE(ks < 1.628 / std::sqrt(static_cast<double>(n)), "KS statistic " << ks);
  double mean_u = 0, var = 0, cov = 0;
  for (double v : u) mean_u += v / n;
  for (std::uint64_t i = 0; i < n; ++i) {
    var += (u[i] - mean_u) * (u[i] - mean_u);
    if (i + 1 < n) cov += (u[i] - mean_u) * (u[i + 1] - mean_u);
  }
  CHECK_MESSAGE(std::fabs(cov / var) < 4 / std::sqrt(static_cast<double>(n)), "lag-1 correlation " << cov / var);
  // The second half launched alone, its counter starting at n / 2, draws what the whole drew.
  const std::vector<float> half = launch_f32(engine, train, minus_one, none, seed, n / 2, n / 2);
  CHECK(std::memcmp(half.data() + n / 2, y1.data() + n / 2, n / 2 * 4) == 0);

  // Backward recomputes forward's slopes: with g = 1 it writes the slope itself where x <= 0 (and 1
  // elsewhere), and forward's output is x times it.
  KernelSpec train_bwd = train;
  train_bwd.direction = Direction::backward;
  const std::vector<float> ones(n, 1.0f);
  const std::vector<float> y = launch_f32(engine, train, x, none, seed, 0);
  const std::vector<float> slopes = launch_f32(engine, train_bwd, ones, x, seed, 0);
  std::uint64_t inconsistent = 0;
  for (std::uint64_t i = 0; i < n; ++i) {
    if (std::isnan(x[i])) continue;
    const float want_y = x[i] <= 0 ? x[i] * slopes[i] : x[i];
    const bool slope_ok = x[i] <= 0 ? slopes[i] >= static_cast<float>(lower) && slopes[i] <= static_cast<float>(upper)
                                    : slopes[i] == 1.0f;
    if (!slope_ok || std::memcmp(&want_y, &y[i], 4) != 0) ++inconsistent;
  }
  CHECK_MESSAGE(inconsistent == 0, inconsistent << " backward slopes disagree with the forward output");
}

}  // namespace kplay::test
