// Input generation and error accounting; see verification.hpp.
#include "verification.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "util/host_dtype.hpp"

namespace kplay {
namespace {
std::uint64_t splitmix64(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double unit(std::uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; }

const double kInf = std::numeric_limits<double>::infinity();
const double kSpecials[] = {
    0.0,
    -0.0,
    kInf,
    -kInf,
    std::numeric_limits<double>::quiet_NaN(),
    -std::numeric_limits<double>::quiet_NaN(),
    1e-30,
    -1e-30,  // tiny normals (f32), underflow in f16
    1.4e-45,
    -1.4e-45,  // f32 subnormal
    1e-8,
    -1e-8,
    3e-5,
    -3e-5,  // where exp(x)-1 loses all precision
    1.0,
    -1.0,
    0.5,
    -0.5,
    3.4e38,
    -3.4e38,  // near FLT_MAX (inf in f16/overflow in selu)
    65504.0,
    -65504.0,  // f16 max
    -87.0,
    -104.0,
    88.0,
    700.0,
    -745.0,
    -709.5,
    -713.5,  // f64: e^x subnormal, x e^x not (silu, mish)
    1e-300,
    -1e-300,  // f64 tiny
    20.0,
    -20.0,
    44.0,
    -9.5,
    -13.0,  // softplus threshold, exp(2x) overflow, gelu tails
};

int mantissa_bits(Dtype d) {
  switch (d) {
    case Dtype::f32: return 24;
    case Dtype::f16: return 11;
    case Dtype::bf16: return 8;
    case Dtype::f64: return 53;
  }
  return 24;
}
}  // namespace

std::size_t special_value_count() { return sizeof(kSpecials) / sizeof(kSpecials[0]); }

double generate_input(Dtype dtype, std::uint64_t seed, InputStream stream, std::uint64_t i, bool ordinary) {
  const std::uint64_t base = splitmix64(seed ^ (static_cast<std::uint64_t>(stream) * 0xd1b54a32d192ed03ull));
  const std::size_t nspecial = special_value_count();
  // Incoming gradients are finite or NaN: an infinite gradient times a derivative that underflows
  // in float (inf * 0 = NaN) has no float answer to compare with the double reference.
  auto finish = [&](double v) {
    const double r = round_to(dtype, v);
    return (stream == InputStream::grad && std::isinf(r)) ? round_to(dtype, 1e4) : r;
  };
  if (i < nspecial && !ordinary) return finish(kSpecials[i]);
  const std::uint64_t u = splitmix64(base + i * 0x9e3779b97f4a7c15ull);
  const std::uint64_t v = splitmix64(u);
  unsigned cat = static_cast<unsigned>(u & 63u);
  if (ordinary && (cat == 0 || (cat >= 12 && cat < 16))) cat = 16;  // no special, no tail
  double x;
  if (cat == 0) {
    x = kSpecials[(u >> 8) % nspecial];
  } else if (cat < 12) {  // tiny magnitudes, both signs: 1e-12 .. 1e-1
    x = std::pow(10.0, -12.0 + 11.0 * unit(v));
    if (u & 0x100) x = -x;
  } else if (cat < 16) {  // the tails, both signs: 8 .. 128
    x = 8.0 * std::pow(16.0, unit(v));
    if (u & 0x100) x = -x;
  } else {  // mixed signs, uniform in [-8, 8)
    x = -8.0 + 16.0 * unit(v);
  }
  return finish(x);
}

std::vector<double> edge_values(const ResolvedActivation& act, Dtype dtype) {
  std::vector<double> out;
  if (!act.act->edges) return out;
  const std::vector<double> p = params_for(act, dtype);
  for (double e : act.act->edges(p.data())) {
    const double r = round_to(dtype, e);
    out.push_back(r);
    out.push_back(next_toward(dtype, r, kInf));
    out.push_back(next_toward(dtype, r, -kInf));
  }
  return out;
}

std::vector<std::pair<double, double>> gated_pairs(Dtype dtype) {
  std::vector<std::pair<double, double>> out;
  for (double a : {-90.0, -10.0625})
    for (double b : {kInf, -kInf}) out.emplace_back(round_to(dtype, a), b);
  return out;
}

double ulp_of(Dtype dtype, double v) {
  const int p = mantissa_bits(dtype);
  const int emin = dtype == Dtype::f64 ? -1022 : (dtype == Dtype::f16 ? -14 : -126);
  const double a = std::fabs(v);
  const int e =
      a == 0 || std::isnan(a) ? emin : std::max(std::ilogb(std::min(a, std::numeric_limits<double>::max())), emin);
  return std::ldexp(1.0, e - p + 1);
}

double ulp_of(Dtype dtype, long double v) {
  // v's double rounding, or the double below it where that rounding carried |v| up to a power of two.
  const double d = std::fabs(static_cast<double>(v));
  return ulp_of(dtype, d > std::fabs(v) ? std::nextafter(d, 0.0) : d);
}

double ulp_error(Dtype dtype, double out, long double ref) {
  if (std::isnan(ref) || std::isnan(out)) return (std::isnan(ref) && std::isnan(out)) ? 0.0 : kInf;
  if (std::isinf(out) || std::isinf(ref)) return out == round_to(dtype, static_cast<double>(ref)) ? 0.0 : kInf;
  return static_cast<double>(std::fabs(out - ref) / ulp_of(dtype, ref));
}

ReferenceProblem::ReferenceProblem(const KernelSpec& s, std::uint64_t sd)
    : spec(s),
      seed(sd),
      act(resolve_activation(s.activation)),
      params(params_for(act, s.dtype, s.direction)),
      edges(edge_values(act, s.dtype)) {
  if (act.gated) pairs = gated_pairs(s.dtype);
}

double ReferenceProblem::x(std::uint64_t i) const {
  if (period) i %= period;
  if (ordinary) return generate_input(spec.dtype, seed, InputStream::x, i, true);
  const std::size_t nspecial = special_value_count();
  if (i >= nspecial && i - nspecial < edges.size()) return edges[i - nspecial];
  if (i >= nspecial + edges.size() && i - nspecial - edges.size() < pairs.size())
    return pairs[i - nspecial - edges.size()].first;
  return generate_input(spec.dtype, seed, InputStream::x, i);
}

double ReferenceProblem::grad(std::uint64_t i) const {
  return generate_input(spec.dtype, seed, InputStream::grad, period ? i % period : i, ordinary);
}

double ReferenceProblem::in0(std::uint64_t i) const { return spec.direction == Direction::forward ? x(i) : grad(i); }

double ReferenceProblem::b(std::uint64_t i) const {
  if (period) i %= period;
  if (ordinary) return generate_input(spec.dtype, seed, InputStream::b, i, true);
  const std::size_t nspecial = special_value_count();
  // The special values in the reverse order of a's: each special a meets another special b.
  if (i >= nspecial + edges.size() && i - nspecial - edges.size() < pairs.size())
    return pairs[i - nspecial - edges.size()].second;
  const std::uint64_t k = i < nspecial ? nspecial - 1 - i : i;
  return generate_input(spec.dtype, seed, InputStream::b, k);
}

double ReferenceProblem::fp8_limit() const { return fp8_max(spec.out); }

long double ReferenceProblem::gated_expected(std::uint64_t i, int output) const {
  const double g = spec.direction == Direction::backward ? grad(i) : 0.0;
  return f64() ? gated_as<long double>(g, x(i), b(i), output) : gated_as<double>(g, x(i), b(i), output);
}

double ReferenceProblem::gated_error_scale(double g, double a, double bv, int output) const {
  // The compute type's smallest normal number: float for 16-bit kernels, double for the others
  // (a float32 gated kernel computes in double).
  const bool narrow = spec.dtype == Dtype::f16 || spec.dtype == Dtype::bf16;
  const double m = narrow ? min_normal(Dtype::f32) : min_normal(Dtype::f64);
  const double ab = std::fabs(bv), ag = std::fabs(g);
  if (!has_reference()) {  // checked against itself in float64: at least the floor, times the factor
    const double floor = self_reference_floor(spec.dtype);
    if (spec.direction == Direction::forward) return ab * floor;
    return output == 0 ? ag * ab * floor : ag * floor;
  }
  const Activation& f = *act.act;
  // An infinite b times a factor that underflows in the compute type is 0 * inf there (NaN, as
  // torch gives) where the exact product is infinite: undetermined (kUndetermined). float32 takes
  // float's smallest normal number here: its double routines end their range there or later
  // (e^x is 0 below -708, so silu(-710) = -2^-1015 is 0), and torch's float32 act(a) is subnormal
  // or 0 below it.
  const double m_inf = spec.dtype == Dtype::f64 ? m : min_normal(Dtype::f32);
  if (spec.direction == Direction::forward || output == 1) {
    const double fa = std::fabs(f.forward(a, params.data()));
    const double factor = spec.direction == Direction::forward ? ab : ag;
    if (fa < m_inf && std::isinf(factor)) return kUndetermined;
    return fa < m ? factor * m : 0.0;
  }
  const double own = error_scale(g, a) * ab;  // the derivative's own rules (underflow, roots)
  const double ga = std::fabs(f.grad_from_input(g, a, params.data()));
  if (ga < m_inf && std::isinf(ab)) return kUndetermined;
  return std::max(own, ga < m ? ab * m : 0.0);
}

double ReferenceProblem::in1(std::uint64_t i) const {
  const double xi = x(i);
  if (spec.saved == Saved::input) return xi;
  // A user activation's saved-output derivative is checked against itself in float64 (rounding,
  // not the formula), so any sample of values serves as the saved outputs.
  if (!has_reference()) return xi;
  // The output as the forward kernel stored it; any value near it serves, since the kernel and the
  // reference both take this one: in float64 the double reference's, which costs less.
  return round_to(spec.dtype, act.act->forward(xi, params.data()));
}

long double ReferenceProblem::expected(std::uint64_t i) const {
  return spec.direction == Direction::forward ? forward(in0(i)) : grad(in0(i), in1(i));
}

double self_reference_perturbation(Dtype dtype) { return dtype == Dtype::f64 ? 0x1p-52 : 0x1p-23; }
double self_reference_floor(Dtype dtype) { return dtype == Dtype::f64 ? 0x1p-511 : 0x1p-63; }

double ReferenceProblem::error_scale(std::uint64_t i) const {
  if (spec.direction != Direction::backward) return has_reference() ? 0.0 : self_reference_floor(spec.dtype);
  return spec.saved == Saved::output ? std::fabs(in0(i)) : error_scale(in0(i), in1(i));
}

double ReferenceProblem::error_scale(double grad, double saved) const {
  const double g = std::fabs(grad);
  if (spec.saved == Saved::output) return g;
  if (!has_reference()) return g * self_reference_floor(spec.dtype);
  // From the input: a derivative that underflows in the dtype (SELU's lambda*alpha*exp(x) for
  // x = -104 in float) is exact only to about min_normal, so a huge gradient times it (3.4e38 *
  // 1.2e-45 = 4e-7) is exact only relative to |grad| * min_normal.
  const double d = std::fabs(act.act->grad_from_input(1.0, saved, params.data()));
  // float64: near a root of the derivative (mish, silu, gelu) the kernels' formulas cancel, as
  // torch's do, and lose relative precision (an input near mish's root reached 2^21 ulp): wherever
  // the derivative is below 2^-16, tails included, the error counts against |grad| * 2^-16.
  if (spec.dtype == Dtype::f64 && d < 0x1p-16) return g * 0x1p-16;
  return d < min_normal(spec.dtype) ? g * min_normal(spec.dtype) : 0.0;
}

ErrorStats::ErrorStats(Dtype d, double bound, bool bwd, OutDtype o)
    : dtype(d), out_type(o), bound_ulps(bound), backward(bwd) {}

void ErrorStats::add(std::uint64_t index, double out, long double ref, double scale, double allowance) {
  ++checked;
  double ulps, rel;
  const double r = static_cast<double>(ref);
  if (scale == kUndetermined) {
    // 0 * inf in the compute type: a NaN or an infinite (FP8: saturated) result both stand.
    const bool stands = !std::isfinite(out) || (out_type != OutDtype::same && std::fabs(out) == fp8_max(out_type));
    ulps = rel = stands ? 0.0 : kInf;
  } else if (out_type != OutDtype::same) {
    // FP8: the reference is the exact value, clamped; NaN must meet NaN.
    if (std::isnan(r) || std::isnan(out)) {
      ulps = rel = (std::isnan(r) && std::isnan(out)) ? 0.0 : kInf;
    } else {
      const double mag = std::max(std::fabs(r), scale);
      ulps = std::fabs(out - r) / fp8_ulp(out_type, mag);
      rel = std::fabs(out - r) / std::max(mag, fp8_ulp(out_type, 0.0));
    }
  } else if (std::isnan(r) || std::isnan(out) || std::isinf(r) || std::isinf(out)) {
    ulps = rel = ulp_error(dtype, out, ref);
  } else if ((allowance > 0 && std::fabs(out - ref) <= allowance) ||
             ((backward || dtype == Dtype::f64) && std::fabs(r) < min_normal(dtype) &&
              std::fabs(out) < min_normal(dtype))) {
    // Within the allowance (a self-referenced result's conditioning), or both in the underflow
    // range: a float intermediate that underflows (exp(-104) -> 0) can give 0 where the exact
    // result is subnormal. The difference is below the smallest normal number.
    ulps = rel = 0.0;
  } else if (dtype != Dtype::f64) {  // the reference is a double: double arithmetic, which costs less
    const double mag = std::max(std::fabs(r), scale);
    const double diff = std::fabs(out - r) - allowance;
    ulps = diff / ulp_of(dtype, mag);
    rel = diff / std::max(mag, min_normal(dtype));
  } else {
    const long double mag = std::max<long double>(std::fabs(ref), scale);
    const long double diff = std::fabs(out - ref) - allowance;
    ulps = static_cast<double>(diff / ulp_of(dtype, mag));
    rel = static_cast<double>(diff / std::max<long double>(mag, min_normal(dtype)));
  }
  max_ulps = std::max(max_ulps, ulps);
  max_rel_error = std::max(max_rel_error, rel);
  if (ulps > bound_ulps) {
    if (mismatches == 0 || index < first_bad) {
      first_bad = index;
      first_bad_out = out;
      first_bad_ref = r;
    }
    ++mismatches;
  }
}

void ErrorStats::merge(const ErrorStats& o) {
  max_ulps = std::max(max_ulps, o.max_ulps);
  max_rel_error = std::max(max_rel_error, o.max_rel_error);
  checked += o.checked;
  if (o.mismatches && (mismatches == 0 || o.first_bad < first_bad)) {
    first_bad = o.first_bad;
    first_bad_out = o.first_bad_out;
    first_bad_ref = o.first_bad_ref;
  }
  mismatches += o.mismatches;
}

std::string ErrorStats::summary() const {
  char buf[256];
  std::snprintf(buf, sizeof buf, "max %.3g ulp (rel %.3g) over %llu elements, %llu over %.3g ulp", max_ulps,
                max_rel_error, static_cast<unsigned long long>(checked), static_cast<unsigned long long>(mismatches),
                bound_ulps);
  std::string s = buf;
  if (mismatches) {
    std::snprintf(buf, sizeof buf, " (first at %llu: got %.9g, expected %.9g)",
                  static_cast<unsigned long long>(first_bad), first_bad_out, first_bad_ref);
    s += buf;
  }
  return s;
}

double ulp_bound(const KernelSpec& spec) {
  if (spec.out != OutDtype::same) return kFp8BoundUlps;
  return resolve_activation(spec.activation).bounds().get(spec.dtype, spec.direction);
}

}  // namespace kplay
