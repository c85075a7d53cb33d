// Exhaustive proof of templates/common/f32_math.h on the host: every float32 bit pattern (or
// every STEP-th) through each lean function, against a double reference, in ulps of the exact
// result (2^-149 below the normal range). The header is compiled here exactly as the kernels
// compile it (no contraction: this file is built with -ffp-contract=off), with one difference the
// proof covers: the GPU's reciprocal estimate (rcp.approx.ftz.f32, within 1 ulp) is replaced by
// the correctly rounded reciprocal and by its neighbours one ulp up and down, and each input's
// error is the worst of the three. NaN, infinities and signed zeros must match the reference
// (torch's values). Exit 1 when a function exceeds its bound (docs/accuracy.md), 2 on bad usage.
//   kplay_f32_lean_check [--step N] [--range LO:HI] [--threads N] [FUNCTION ...]
// FUNCTION: sigmoid, silu, tanh, div6, elu, elu(0.5), elu(1.7), logsigmoid, softplus. Default: all.
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#define KP_FN static inline
#define KP_FMAF(a, b, c) std::fmaf(a, b, c)
#define KP_FABSF(x) std::fabs(x)
#define KP_FMINF(a, b) std::fmin(a, b)

namespace {
int as_int(float f) {
  int i;
  std::memcpy(&i, &f, sizeof i);
  return i;
}
float as_float(int i) {
  float f;
  std::memcpy(&f, &i, sizeof f);
  return f;
}
thread_local int rcp_nudge = 0;  // ulps added to the correctly rounded reciprocal
float rcp(float x) { return as_float(as_int(1.0f / x) + rcp_nudge); }
}  // namespace

#define KP_AS_INT(f) as_int(f)
#define KP_AS_FLOAT(i) as_float(i)
#define KP_RCP_APPROXF(x) rcp(x)
#include "f32_math.h"

namespace {

// The references: torch's formulas in double (53 bits: errors near 2^-29 ulp of a float).
double ref_sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double ref_silu(double x) { return std::isinf(x) && x < 0 ? NAN : x / (1.0 + std::exp(-x)); }
double ref_tanh(double x) { return std::tanh(x); }
double ref_logsigmoid(double x) { return (x < 0 ? x : 0.0) - std::log1p(std::exp(-std::fabs(x))); }
double ref_softplus(double x) { return x > 20 ? x : std::log1p(std::exp(x)); }  // beta 1, threshold 20
double ref_div6(double x) { return x / 6.0; }  // 2^-53 relative; a float quotient's tie is exact
double ref_elu(double x, double alpha) { return x <= 0 ? alpha * std::expm1(x) : x; }
double ref_elu1(double x) { return ref_elu(x, 1.0); }
double ref_elu_half(double x) { return ref_elu(x, 0.5); }
double ref_elu_17(double x) { return ref_elu(x, static_cast<double>(1.7f)); }
// elu's alpha is a compile-time float in the kernels: 1 (torch's default) and two others.
float elu1(float x) { return kp_f_elu(1.0f, x); }
float elu_half(float x) { return kp_f_elu(0.5f, x); }
float elu_17(float x) { return kp_f_elu(1.7f, x); }
float softplus1(float x) { return kp_f_softplus1(x, 20.0f); }  // torch's defaults

struct Forward {
  const char* name;
  float (*fn)(float);
  double (*ref)(double);
  double bound;  // ulps, docs/accuracy.md
};
const Forward kForward[] = {
    {"sigmoid", kp_f_sigmoid, ref_sigmoid, 2},
    {"silu", kp_f_silu, ref_silu, 2},
    {"tanh", kp_f_tanh, ref_tanh, 2},
    {"div6", kp_f_div6, ref_div6, 0.5},  // hardsigmoid's and hardswish's division by 6
    {"elu", elu1, ref_elu1, 1},
    {"elu(0.5)", elu_half, ref_elu_half, 1},
    {"elu(1.7)", elu_17, ref_elu_17, 1},
    {"logsigmoid", kp_f_logsigmoid, ref_logsigmoid, 2},
    {"softplus", softplus1, ref_softplus, 2},
};

struct Stats {
  double max = 0;
  float at = 0;
  uint64_t n = 0, over_half = 0, over_one = 0, special_bad = 0;
  float special_at = 0;
  void merge(const Stats& o) {
    if (o.max > max) max = o.max, at = o.at;
    if (o.special_bad && !special_bad) special_at = o.special_at;
    n += o.n, over_half += o.over_half, over_one += o.over_one, special_bad += o.special_bad;
  }
};

// Error of y in ulps of ref; -1 for a NaN, infinity or signed-zero mismatch.
double ulp_error(float y, double ref) {
  if (std::isnan(ref) || std::isnan(y)) return std::isnan(ref) && std::isnan(y) ? 0 : -1;
  if (std::isinf(ref) || std::isinf(y)) return static_cast<double>(y) == ref ? 0 : -1;
  if (ref == 0 && y == 0) return std::signbit(y) == std::signbit(ref) ? 0 : -1;
  const double a = std::fabs(ref);
  const double ulp = a < 0x1p-126 ? 0x1p-149 : std::ldexp(1.0, std::ilogb(a) - 23);
  return std::fabs(static_cast<double>(y) - ref) / ulp;
}

void record(Stats& s, double err, float x) {
  ++s.n;
  if (err < 0) {
    if (!s.special_bad) s.special_at = x;
    ++s.special_bad;
    return;
  }
  if (err > 0.5) ++s.over_half;
  if (err > 1) ++s.over_one;
  if (err > s.max) s.max = err, s.at = x;
}

// Bit patterns [first, last], both ends included.
struct Span {
  uint32_t first, last;
};
uint32_t bits(float f) { return static_cast<uint32_t>(as_int(f)); }
// The spans of every float in [lo, hi] (lo <= hi): negative floats' patterns grow with magnitude.
std::vector<Span> spans_of(float lo, float hi) {
  if (lo >= 0) return {{bits(lo), bits(hi)}};
  if (hi <= 0) return {{bits(hi), bits(lo)}};
  return {{0, bits(hi)}, {0x80000000u, bits(lo)}};
}

template <class Body>
Stats sweep(const std::vector<Span>& spans, uint64_t step, unsigned threads, Body body) {
  std::vector<Stats> per(threads);
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (const Span& sp : spans)
        for (uint64_t b = sp.first + t * step; b <= sp.last; b += threads * step)
          body(as_float(static_cast<int>(static_cast<uint32_t>(b))), per[t]);
      // a thinned sweep still checks the special values and the ends of each binade's range
      if (step > 1 && t == 0)
        for (uint32_t b : {0x00000000u, 0x80000000u, 0x00000001u, 0x80000001u, 0x007fffffu, 0x807fffffu, 0x7f7fffffu,
                           0xff7fffffu, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00000u})
          body(as_float(static_cast<int>(b)), per[t]);
    });
  for (auto& th : pool) th.join();
  Stats all;
  for (const auto& s : per) all.merge(s);
  return all;
}

bool report(const char* name, const char* what, const Stats& s, double bound) {
  const bool ok = s.max <= bound && s.special_bad == 0;
  std::printf("%-10s %-14s max %.4f ulp at x = %a (%.9g) | >0.5: %" PRIu64 " >1: %" PRIu64
              " special mismatches: %" PRIu64 " | n = %" PRIu64 " | bound %g: %s\n",
              name, what, s.max, s.at, s.at, s.over_half, s.over_one, s.special_bad, s.n, bound, ok ? "ok" : "FAIL");
  if (s.special_bad) std::printf("%-10s first special-value mismatch at x = %a\n", name, s.special_at);
  std::fflush(stdout);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t step = 1;
  std::vector<Span> spans = {{0, 0xffffffffu}};
  unsigned threads = 1;
  std::vector<std::string> only;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--step" && i + 1 < argc) {
      step = std::strtoull(argv[++i], nullptr, 10);
    } else if (a == "--range" || a.rfind("--range=", 0) == 0) {
      // a negative LO needs the = form: "--range=-140:-100"
      const char* v = a == "--range" ? (i + 1 < argc ? argv[++i] : "") : argv[i] + 8;
      char* end = nullptr;
      const float lo = std::strtof(v, &end);
      const float hi = end != v && *end == ':' ? std::strtof(end + 1, &end) : NAN;
      if (*end != '\0' || !(lo <= hi)) {
        std::fprintf(stderr, "%s: --range takes LO:HI with LO <= HI, e.g. --range=-140:-100\n", argv[0]);
        return 2;
      }
      spans = spans_of(lo, hi);
    } else if (a == "--threads" && i + 1 < argc) {
      threads = static_cast<unsigned>(std::strtoul(argv[++i], nullptr, 10));
    } else if (a[0] != '-') {
      only.push_back(a);
    } else {
      std::fprintf(stderr, "usage: %s [--step N] [--range LO:HI] [--threads N] [FUNCTION ...]\n", argv[0]);
      return 2;
    }
  }
  if (step == 0 || threads == 0) {
    std::fprintf(stderr, "%s: --step and --threads take a positive integer\n", argv[0]);
    return 2;
  }
  for (const auto& o : only) {
    bool known = false;
    for (const auto& f : kForward) known = known || o == f.name;
    if (!known) {
      std::string names;
      for (const auto& f : kForward) names += std::string(names.empty() ? "" : ", ") + f.name;
      std::fprintf(stderr, "%s: no function '%s' (%s)\n", argv[0], o.c_str(), names.c_str());
      return 2;
    }
  }
  const auto wanted = [&](const char* name) {
    if (only.empty()) return true;
    for (const auto& o : only)
      if (o == name) return true;
    return false;
  };
  bool ok = true;
  for (const auto& f : kForward) {
    if (!wanted(f.name)) continue;
    const Stats s = sweep(spans, step, threads, [&](float x, Stats& st) {
      const double ref = f.ref(x);
      double worst = 0;
      for (int nudge = -1; nudge <= 1; ++nudge) {
        rcp_nudge = nudge;
        const double e = ulp_error(f.fn(x), ref);
        worst = e < 0 || worst < 0 ? -1 : std::fmax(worst, e);
      }
      rcp_nudge = 0;
      record(st, worst, x);
    });
    ok = report(f.name, "forward", s, f.bound) && ok;
  }
  return ok ? 0 : 1;
}
