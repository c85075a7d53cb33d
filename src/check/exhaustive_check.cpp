// See exhaustive_check.hpp.
#include "exhaustive_check.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "kplay/error.hpp"
#include "parallel.hpp"
#include "self_reference.hpp"
#include "spec/slope_noise.hpp"
#include "util/host_dtype.hpp"
#include "verification.hpp"

namespace kplay {
namespace {
constexpr std::uint64_t kChunk = 1ull << 24;  // elements per device round trip

std::uint64_t mix(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// The value of bit pattern `bits` in dtype d.
double from_bits(Dtype d, std::uint64_t bits) {
  switch (d) {
    case Dtype::f32: {
      const auto u = static_cast<std::uint32_t>(bits);
      float f;
      std::memcpy(&f, &u, 4);
      return f;
    }
    case Dtype::f64: {
      double v;
      std::memcpy(&v, &bits, 8);
      return v;
    }
    case Dtype::f16: return half_bits_to_float(static_cast<std::uint16_t>(bits));
    case Dtype::bf16: return bf16_bits_to_float(static_cast<std::uint16_t>(bits));
  }
  return 0;
}

// `ref` in double, or long double for float64; `scale`: the magnitude a backward error is measured
// against, as the tests measure it (ReferenceProblem::error_scale), where that exceeds the exact
// result.
template <typename T>
void add(SweepStats& s, Dtype d, bool backward, double bound, double x, double out, T ref, double scale,
         double allowance, OutDtype fp8 = OutDtype::same) {
  ++s.checked;
  const bool out_nan = std::isnan(out), ref_nan = std::isnan(ref);
  double ulps;
  if (out_nan || ref_nan) {
    if (out_nan == ref_nan) return;
    ++s.nan_mismatch;
    ulps = INFINITY;
  } else if (fp8 != OutDtype::same) {  // FP8: the clamped exact value, in ulps of the format
    const double r = static_cast<double>(ref);
    ulps = std::fabs(out - r) / fp8_ulp(fp8, std::max(std::fabs(r), scale));
  } else if (std::isinf(out) || std::isinf(static_cast<double>(ref))) {
    if (out == round_to(d, static_cast<double>(ref))) return;
    ++s.inf_mismatch;
    ulps = INFINITY;
  } else {
    if (out == 0 && ref == 0 && std::signbit(out) != std::signbit(ref)) ++s.signed_zero_mismatch;
    // The bound holds for normal results: backward ones, and float64 ones where the kernel's result
    // is below the smallest normal number too (the device's double library flushes some), as ErrorStats.
    const bool tiny = std::fabs(ref) < min_normal(d);
    if (tiny && (backward || (d == Dtype::f64 && std::fabs(out) < min_normal(d)))) {
      ++s.subnormal_skipped;
      return;
    }
    // `allowance`: a self-referenced result's conditioning, counted as exact (ErrorStats::add).
    const T diff = std::fabs(out - ref) - allowance;
    ulps = diff <= 0 ? 0.0 : static_cast<double>(diff / ulp_of(d, std::max<T>(std::fabs(ref), scale)));
  }
  s.over_half += ulps > 0.5;
  s.over_one += ulps > 1;
  s.over_two += ulps > 2;
  s.over_bound += ulps > bound;
  if (ulps > s.max_ulps || (s.checked == 1 && ulps >= s.max_ulps)) {
    s.max_ulps = ulps;
    s.worst_input = x;
    s.worst_out = out;
    s.worst_ref = static_cast<double>(ref);
  }
}
}  // namespace

void SweepStats::merge(const SweepStats& o) {
  checked += o.checked;
  if (o.max_ulps > max_ulps) {
    max_ulps = o.max_ulps;
    worst_input = o.worst_input;
    worst_out = o.worst_out;
    worst_ref = o.worst_ref;
  }
  over_half += o.over_half;
  over_one += o.over_one;
  over_two += o.over_two;
  over_bound += o.over_bound;
  nan_mismatch += o.nan_mismatch;
  inf_mismatch += o.inf_mismatch;
  signed_zero_mismatch += o.signed_zero_mismatch;
  subnormal_skipped += o.subnormal_skipped;
}

double sweep_gradient(Dtype dtype, std::uint64_t i) {
  const double u = static_cast<double>(mix(i) >> 11) * 0x1.0p-53;  // [0, 1)
  return round_to(
      dtype, (u < 0.5 ? -1.0 : 1.0) * std::ldexp(1.0 + 2 * std::fmod(u, 0.5), static_cast<int>(mix(i + 7) % 5) - 2));
}

namespace {
// A gated activation's sweep: input a of element e is input e % inputs, b = sweep_gradient(e + 2^40)
// (its own mixed-sign values), and for backward g = sweep_gradient(e); a, b (and g) and the
// outputs are separate tensors, flat. Both gradients of a backward are judged.
template <class InputBits>
void gated_sweep(Engine& engine, const KernelSpec& spec, const KernelConfig& config, const SweepOptions& options,
                 const ReferenceProblem& ref, SweepResult& result, std::uint64_t inputs, const InputBits& input_bits) {
  rt::Backend& backend = engine.backend();
  const Dtype d = spec.dtype;
  const bool backward = spec.direction == Direction::backward;
  const std::uint64_t total = inputs * result.gradients;
  auto kernel = engine.prepare(spec, config);
  std::unique_ptr<SelfReference> self;
  if (result.self_referenced) self = std::make_unique<SelfReference>(backend, spec);
  const std::size_t es = dtype_size(d), oes = out_size(spec);
  const std::uint64_t chunk = std::min(kChunk, total);
  rt::DeviceBuffer da(backend, chunk * es), db(backend, chunk * es), dg(backend, backward ? chunk * es : 8);
  rt::DeviceBuffer o0(backend, chunk * oes), o1(backend, backward ? chunk * es : 8);
  std::vector<unsigned char> ha(chunk * es), hb(chunk * es), hg(backward ? chunk * es : 0), h0(chunk * oes),
      h1(backward ? chunk * es : 0);
  std::vector<double> xs(chunk), sa, sb, sg, self0, self1, al0, al1;
  const unsigned workers = std::max(1u, std::thread::hardware_concurrency());
  constexpr std::uint64_t kOtherStream = 1ull << 40;
  for (std::uint64_t base = 0; base < total; base += chunk) {
    const std::uint64_t n = std::min(chunk, total - base);
    auto fill = [&](std::uint64_t lo, std::uint64_t hi) {
      for (std::uint64_t k = lo; k < hi; ++k) {
        xs[k] = from_bits(d, input_bits((base + k) % inputs));
        store_element(d, ha.data(), k, xs[k]);
        store_element(d, hb.data(), k, sweep_gradient(d, base + k + kOtherStream));
        if (backward) store_element(d, hg.data(), k, sweep_gradient(d, base + k));
      }
    };
    split_among(workers, n, [&](unsigned, std::uint64_t lo, std::uint64_t hi) { fill(lo, hi); });
    backend.upload(da.ptr(), ha.data(), n * es);
    backend.upload(db.ptr(), hb.data(), n * es);
    if (backward) backend.upload(dg.ptr(), hg.data(), n * es);
    rt::KernelArgs args;
    args.out = o0.ptr();
    args.in0 = backward ? dg.ptr() : da.ptr();
    args.in1 = backward ? da.ptr() : db.ptr();
    if (backward) {
      args.gated_backward = true;
      args.out1 = o1.ptr();
      args.in2 = db.ptr();
    }
    if (spec.out != OutDtype::same) {
      args.scaled = true;
      args.scale = static_cast<float>(ref.scale);
    }
    args.rows = 1;
    args.cols = args.ld_out = args.ld_in0 = args.ld_in1 = args.ld_out1 = args.ld_in2 = n;
    engine.launch(*kernel, args);
    backend.synchronize();
    backend.download(h0.data(), o0.ptr(), n * oes);
    if (backward) backend.download(h1.data(), o1.ptr(), n * es);
    if (self) {
      sa.resize(n);
      sb.resize(n);
      sg.resize(backward ? n : 0);
      for (std::uint64_t k = 0; k < n; ++k) {
        sa[k] = load_element(d, ha.data(), k);
        sb[k] = load_element(d, hb.data(), k);
        if (backward) sg[k] = load_element(d, hg.data(), k);
      }
      self->compute_gated(sg, sa, sb, self0, self1, &al0, backward ? &al1 : nullptr);
    }
    std::vector<SweepStats> parts(workers);
    auto compare = [&](auto real, unsigned w, std::uint64_t lo, std::uint64_t hi) {
      using T = decltype(real);
      SweepStats& s = parts[w];
      for (std::uint64_t k = lo; k < hi; ++k) {
        const double a = xs[k], b = load_element(d, hb.data(), k), g = backward ? load_element(d, hg.data(), k) : 0;
        for (int o = 0; o < (backward ? 2 : 1); ++o) {
          double out;
          if (o == 0 && spec.out != OutDtype::same)
            out = fp8_to_double(spec.out, h0[k]);
          else
            out = load_element(d, o == 0 ? h0.data() : h1.data(), k);
          T r;
          double allowance = 0;
          if (self) {
            r = o == 0 ? self0[k] : self1[k];
            allowance = o == 0 ? al0[k] : al1[k];
            if (spec.out != OutDtype::same) {
              const double top = fp8_max(spec.out);
              r = r / ref.scale;
              r = r > top ? top : (r < -top ? -top : r);
              allowance /= ref.scale;
            }
          } else {
            r = ref.gated_as<T>(g, a, b, o);
          }
          const double scale = spec.out != OutDtype::same ? 0.0 : ref.gated_error_scale(g, a, b, o);  // b is finite
          add(s, d, backward, result.bound, a, out, r, scale, allowance, spec.out);
        }
      }
    };
    split_among(workers, n, [&](unsigned w, std::uint64_t lo, std::uint64_t hi) {
      d == Dtype::f64 ? compare(0.0L, w, lo, hi) : compare(0.0, w, lo, hi);
    });
    for (const auto& p : parts) result.stats.merge(p);
    if (options.progress) options.progress(static_cast<double>(base + n) / static_cast<double>(total), result.stats);
  }
}
}  // namespace

SweepResult exhaustive_check(Engine& engine, const KernelSpec& spec, const KernelConfig& config,
                             const SweepOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  rt::Backend& backend = engine.backend();
  ReferenceProblem ref(spec, options.seed);
  ref.scale = options.scale;
  SweepResult result;
  result.bound = options.bound > 0 ? options.bound : ulp_bound(spec);
  result.self_referenced = !ref.has_reference();
  const Dtype d = spec.dtype;
  const bool backward = spec.direction == Direction::backward;
  const bool ranged = (d == Dtype::f32 || d == Dtype::f64) && options.range_lo <= options.range_hi;
  if (options.range_lo <= options.range_hi && !ranged)
    throw Error(ErrorCode::invalid_argument, "an input range is for float32 and float64 only");
  // float64 always samples: in a range, values uniform in it (a tail is a sliver of the bit patterns).
  const bool sampled = d == Dtype::f64 || (!ranged && options.force_sample);
  // A range walks float32 in order: key -n..n is the n-th float below/above +0.
  auto float_key = [](double v) {
    const auto f = static_cast<float>(v);
    std::uint32_t b;
    std::memcpy(&b, &f, 4);
    return (b & 0x80000000u) ? -static_cast<std::int64_t>(b & 0x7fffffffu) : static_cast<std::int64_t>(b);
  };
  const std::int64_t key_lo = ranged && !sampled ? float_key(options.range_lo) : 0;
  const std::uint64_t inputs = ranged && !sampled ? static_cast<std::uint64_t>(float_key(options.range_hi) - key_lo + 1)
                               : sampled          ? options.sample
                               : d == Dtype::f32  ? (1ull << 32)
                                                  : (1ull << 16);
  if (inputs == 0) throw Error(ErrorCode::invalid_argument, "a sweep needs at least one input (a sample of 0)");
  const bool narrow = d == Dtype::f16 || d == Dtype::bf16;
  // A gated activation pairs each input a with values of b (and of g for backward): "gradients"
  // are b's values per input then, forward too.
  const bool per_input = backward || ref.act.gated;
  if (options.gradients > 0 && !per_input)
    throw Error(ErrorCode::invalid_argument, "gradients per input are for a backward or gated sweep");
  result.gradients = !per_input ? 1 : options.gradients > 0 ? options.gradients : narrow ? 64 : 1;
  if (result.gradients > (1ull << 40) / inputs)
    throw Error(ErrorCode::invalid_argument,
                std::to_string(result.gradients) + " gradients per input: over 2^40 elements");
  const std::uint64_t total = inputs * result.gradients;  // element e: input e % inputs
  const std::uint64_t bits_mask = d == Dtype::f32 ? 0xffffffffull : d == Dtype::f64 ? ~0ull : 0xffffull;
  result.exhaustive = !sampled;
  auto input_bits = [&](std::uint64_t i) -> std::uint64_t {
    if (ranged && sampled) {
      const double u = static_cast<double>(mix(options.seed * 0x100000001ull + i) >> 11) * 0x1.0p-53;  // [0, 1)
      const double x = std::min(options.range_hi, options.range_lo + (options.range_hi - options.range_lo) * u);
      std::uint64_t b;
      std::memcpy(&b, &x, 8);
      return b;
    }
    if (ranged) {
      const std::int64_t k = key_lo + static_cast<std::int64_t>(i);
      return k >= 0 ? static_cast<std::uint64_t>(k) : (0x80000000ull | static_cast<std::uint64_t>(-k));
    }
    return sampled ? mix(options.seed * 0x100000001ull + i) & bits_mask : i;
  };

  if (ref.act.gated) {
    gated_sweep(engine, spec, config, options, ref, result, inputs, input_bits);
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return result;
  }
  auto kernel = engine.prepare(spec, config);
  // The per-element slope forms: prelu with eight weights of mixed signs, one per channel of one
  // element (element k takes weight k % 8), training(rrelu) with the sweep's seed and each
  // element's index in the sweep (slope.h); the reference multiplies by that slope.
  const SlopeForm form = ref.act.slope;
  std::vector<double> weights;
  rt::DeviceBuffer weight_buffer;
  if (form == SlopeForm::weight) {
    for (double w : {0.25, -0.5, 0.0, 1.5, 0.01, -3.0, 0.75, 2.0}) weights.push_back(round_to(d, w));
    std::vector<unsigned char> hw(weights.size() * dtype_size(d));
    for (std::size_t k = 0; k < weights.size(); ++k) store_element(d, hw.data(), k, weights[k]);
    weight_buffer = rt::DeviceBuffer(backend, hw.size());
    backend.upload(weight_buffer.ptr(), hw.data(), hw.size());
  }
  std::uint64_t slope_base = 0;
  auto slope_of = [&](std::uint64_t k) {
    return form == SlopeForm::weight
               ? weights[k % weights.size()]
               : rrelu_slope(options.seed, slope_base + k, ref.act.params[0], ref.act.params[1], d);
  };
  std::unique_ptr<SelfReference> self;
  if (result.self_referenced) self = std::make_unique<SelfReference>(backend, spec);
  const std::size_t es = dtype_size(d);
  const std::uint64_t chunk = std::min(kChunk, total);
  rt::DeviceBuffer in0(backend, chunk * es), in1(backend, chunk * es), out(backend, chunk * es);
  std::vector<unsigned char> h0(chunk * es), h1(chunk * es), hout(chunk * es);
  std::vector<double> xs(chunk), self_in0, self_in1, self_out, self_allowance;
  const unsigned workers = std::max(1u, std::thread::hardware_concurrency());

  for (std::uint64_t base = 0; base < total; base += chunk) {
    const std::uint64_t n = std::min(chunk, total - base);
    auto fill = [&](std::uint64_t lo, std::uint64_t hi) {
      for (std::uint64_t k = lo; k < hi; ++k) {
        const double x = from_bits(d, input_bits((base + k) % inputs));
        xs[k] = x;
        if (!backward) {
          store_element(d, h0.data(), k, x);
        } else {
          store_element(d, h0.data(), k, sweep_gradient(d, base + k));
          const bool from_output = spec.saved == Saved::output && ref.has_reference();
          store_element(d, h1.data(), k, from_output ? round_to(d, static_cast<double>(ref.forward(x))) : x);
        }
      }
    };
    split_among(workers, n, [&](unsigned, std::uint64_t lo, std::uint64_t hi) { fill(lo, hi); });
    backend.upload(in0.ptr(), h0.data(), n * es);
    if (backward) backend.upload(in1.ptr(), h1.data(), n * es);
    slope_base = base;
    if (form == SlopeForm::none) {
      engine.launch_flat(*kernel, out.ptr(), in0.ptr(), backward ? in1.ptr() : in0.ptr(), n);
    } else {
      rt::KernelArgs a = flat_args(*kernel, out.ptr(), in0.ptr(), in1.ptr(), n);
      a.slope = true;
      a.weight = form == SlopeForm::weight ? weight_buffer.ptr() : in0.ptr();
      a.channels = form == SlopeForm::weight ? weights.size() : 1;
      a.seed = options.seed;
      a.counter = base;
      engine.launch(*kernel, a);
    }
    backend.synchronize();
    backend.download(hout.data(), out.ptr(), n * es);
    if (self) {
      self_in0.resize(n);
      self_in1.resize(n);
      for (std::uint64_t k = 0; k < n; ++k) {
        self_in0[k] = load_element(d, h0.data(), k);
        if (backward) self_in1[k] = load_element(d, h1.data(), k);
      }
      self->compute(self_in0, self_in1, self_out, &self_allowance);
    }
    std::vector<SweepStats> parts(workers);
    // In T, the reference's type: long double for float64, double for the other dtypes.
    auto compare = [&](auto real, unsigned w, std::uint64_t lo, std::uint64_t hi) {
      using T = decltype(real);
      SweepStats& s = parts[w];
      for (std::uint64_t k = lo; k < hi; ++k) {
        const double o = load_element(d, hout.data(), k);
        T r;
        double scale = 0;
        if (form != SlopeForm::none) {
          const T sl = static_cast<T>(slope_of(k)), x = static_cast<T>(xs[k]);
          if (!backward) {
            r = xs[k] > 0 ? x : x * sl;
          } else {
            const T g = static_cast<T>(load_element(d, h0.data(), k));
            const bool sloped = form == SlopeForm::weight ? !(xs[k] > 0) : xs[k] <= 0;
            r = sloped ? g * sl : g;
          }
        } else if (!backward) {
          r = self ? self_out[k] : ref.forward_as<T>(xs[k]);
          if (self) scale = self_reference_floor(d);
        } else {
          const double g = load_element(d, h0.data(), k), sv = load_element(d, h1.data(), k);
          r = self ? self_out[k] : ref.grad_as<T>(g, sv);
          scale = ref.error_scale(g, sv);
        }
        add(s, d, backward, result.bound, xs[k], o, r, scale, self ? self_allowance[k] : 0.0);
      }
    };
    split_among(workers, n, [&](unsigned w, std::uint64_t lo, std::uint64_t hi) {
      d == Dtype::f64 ? compare(0.0L, w, lo, hi) : compare(0.0, w, lo, hi);
    });
    for (const auto& p : parts) result.stats.merge(p);
    if (options.progress) options.progress(static_cast<double>(base + n) / static_cast<double>(total), result.stats);
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return result;
}

}  // namespace kplay
