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
#include "self_reference.hpp"
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
         double allowance) {
  ++s.checked;
  const bool out_nan = std::isnan(out), ref_nan = std::isnan(ref);
  double ulps;
  if (out_nan || ref_nan) {
    if (out_nan == ref_nan) return;
    ++s.nan_mismatch;
    ulps = INFINITY;
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

SweepResult exhaustive_check(Engine& engine, const KernelSpec& spec, const KernelConfig& config,
                             const SweepOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  rt::Backend& backend = engine.backend();
  const ReferenceProblem ref(spec, options.seed);
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
  if (options.gradients > 0 && !backward)
    throw Error(ErrorCode::invalid_argument, "gradients per input are for a backward sweep");
  result.gradients = !backward ? 1 : options.gradients > 0 ? options.gradients : narrow ? 64 : 1;
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

  auto kernel = engine.prepare(spec, config);
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
    std::vector<std::thread> pool;
    for (unsigned w = 0; w < workers; ++w) pool.emplace_back(fill, n * w / workers, n * (w + 1) / workers);
    for (auto& t : pool) t.join();
    pool.clear();
    backend.upload(in0.ptr(), h0.data(), n * es);
    if (backward) backend.upload(in1.ptr(), h1.data(), n * es);
    engine.launch_flat(*kernel, out.ptr(), in0.ptr(), backward ? in1.ptr() : in0.ptr(), n);
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
        if (!backward) {
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
    for (unsigned w = 0; w < workers; ++w)
      pool.emplace_back([&, w] {
        const std::uint64_t lo = n * w / workers, hi = n * (w + 1) / workers;
        d == Dtype::f64 ? compare(0.0L, w, lo, hi) : compare(0.0, w, lo, hi);
      });
    for (auto& t : pool) t.join();
    for (const auto& p : parts) result.stats.merge(p);
    if (options.progress) options.progress(static_cast<double>(base + n) / static_cast<double>(total), result.stats);
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return result;
}

}  // namespace kplay
