// Sweeps float32 inputs through templates/common/precise_math.h (host build, bit-faithful to the
// GPU) and compares with long-double references. See README.md.
#include "host_prelude.h"
#include "precise_math.h"

#include "precise_grad.h"  // needs precise_math.h first: a block of its own keeps include sorting off it

#include <atomic>
#include <cfloat>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

int kp_host_rcp_nudge = 0;
int kp_host_ex2_nudge = 0;

namespace {

// References in long double (x87, 64-bit significand) by default; -DKP_NUMERICS_DOUBLE_REF
// uses double (53 bits: still ~2^-29 ulp resolution, several times faster) for full sweeps.
#ifdef KP_NUMERICS_DOUBLE_REF
using LD = double;
#else
using LD = long double;
#endif

float bits_to_float(uint32_t b) { return kp_host_as_float(static_cast<int>(b)); }
uint32_t float_to_bits(float f) { return static_cast<uint32_t>(kp_host_as_int(f)); }

// A float32 function under test and its long-double reference.
struct UlpTest {
  const char* name;
  float (*fn)(float);
  LD (*ref)(float);
  std::vector<std::pair<float, float>> windows;  // dense positive ranges, swept for +x and -x
  bool normal_only = false;                      // bound only results whose true value is normal (backward functions)
  double bound = 2;                              // ulps; gelu is held to 5 (float alone, docs/activations.md)
};
// A float-float function: hi + lo compared relatively with the reference.
struct FFTest {
  const char* name;
  float (*fn)(float, float*);
  LD (*ref)(float);
  std::vector<std::pair<float, float>> windows;
};

struct Stats {
  double max_err = 0;  // ulps, or relative error for float-float tests
  float worst_x = 0, worst_y = 0;
  LD worst_ref = 0;
  uint64_t n = 0, over_half = 0, over_one = 0, over_two = 0;
  uint64_t nan_bad = 0, inf_bad = 0, zero_sign_bad = 0;
  float nan_x = 0, inf_x = 0, zero_x = 0;
  uint64_t sub_n = 0;  // normal_only tests: results whose true value is subnormal, not bounded
  double sub_max = 0;  // their max error in ulps of 2^-149
  std::vector<double> binade_max = std::vector<double>(512, 0.0);  // by sign and exponent of x
  std::vector<float> binade_x = std::vector<float>(512, 0.0f);
  void merge(const Stats& o) {
    for (size_t i = 0; i < binade_max.size(); ++i)
      if (o.binade_max[i] > binade_max[i]) binade_max[i] = o.binade_max[i], binade_x[i] = o.binade_x[i];
    if (o.max_err > max_err) {
      max_err = o.max_err, worst_x = o.worst_x, worst_y = o.worst_y, worst_ref = o.worst_ref;
    }
    sub_n += o.sub_n;
    if (o.sub_max > sub_max) sub_max = o.sub_max;
    n += o.n, over_half += o.over_half, over_one += o.over_one, over_two += o.over_two;
    if (o.nan_bad && !nan_bad) nan_x = o.nan_x;
    if (o.inf_bad && !inf_bad) inf_x = o.inf_x;
    if (o.zero_sign_bad && !zero_sign_bad) zero_x = o.zero_x;
    nan_bad += o.nan_bad, inf_bad += o.inf_bad, zero_sign_bad += o.zero_sign_bad;
  }
};

// Error of y in ulps of the true result (ulp of a subnormal is 2^-149); special values are
// counted separately and return -1.
double ulp_error(float x, float y, LD ref, Stats& st) {
  if (std::isnan(ref) || std::isnan(y)) {
    if (std::isnan(ref) != std::isnan(y)) {
      if (!st.nan_bad) st.nan_x = x;
      ++st.nan_bad;
    }
    return -1;
  }
  float rf = static_cast<float>(ref);
  if (std::isinf(rf) || std::isinf(y)) {
    if (y == rf) return -1;
    if (std::isinf(y) || std::isinf(ref)) {
      if (!st.inf_bad) st.inf_x = x;
      ++st.inf_bad;
      return -1;
    }
    return static_cast<double>(std::fabs(y - ref) / std::ldexp(1.0L, 104));
  }
  if (y == 0 && rf == 0) {
    // The sign of zero is checked for zero and infinite inputs; where a nonzero true value
    // underflows, torch's float formulas give either sign, so both are accepted.
    bool sign_matters = x == 0 || std::isinf(x);
    if (sign_matters && std::signbit(y) != std::signbit(ref)) {
      if (!st.zero_sign_bad) st.zero_x = x;
      ++st.zero_sign_bad;
    }
    return std::fabs(static_cast<LD>(y) - ref) / std::ldexp(1.0L, -149);
  }
  int e = ref == 0 ? -126 : std::ilogb(ref);
  if (e < -126) e = -126;
  return static_cast<double>(std::fabs(static_cast<LD>(y) - ref) / std::ldexp(1.0L, e - 23));
}

void record(Stats& st, double err, float x, float y, LD ref) {
  ++st.n;
  if (err < 0) return;
  if (err > 0.5) ++st.over_half;
  if (err > 1) ++st.over_one;
  if (err > 2) ++st.over_two;
  size_t b = float_to_bits(x) >> 23;
  if (err > st.binade_max[b]) st.binade_max[b] = err, st.binade_x[b] = x;
  if (err > st.max_err) st.max_err = err, st.worst_x = x, st.worst_y = y, st.worst_ref = ref;
}

void check_ulp(const UlpTest& t, float x, Stats& st) {
  float y = t.fn(x);
  LD ref = t.ref(x);
  double err = ulp_error(x, y, ref, st);
  if (t.normal_only && err >= 0 && std::fabs(ref) < std::ldexp(1.0L, -126)) {
    ++st.n, ++st.sub_n;
    if (err > st.sub_max) st.sub_max = err;
    return;
  }
  record(st, err, x, y, ref);
}

// Relative error of hi + lo where the reference is a normal float; special values must match on hi.
void check_ff(const FFTest& t, float x, Stats& st) {
  float lo = 0;
  float hi = t.fn(x, &lo);
  LD ref = t.ref(x);
  ++st.n;
  if (std::isnan(ref) || std::isnan(hi) || std::isinf(static_cast<float>(ref)) || std::isinf(hi)) {
    if (std::isnan(ref) != std::isnan(hi))
      ++st.nan_bad, st.nan_x = x;
    else if (!std::isnan(ref) && hi != static_cast<float>(ref))
      ++st.inf_bad, st.inf_x = x;
    return;
  }
  // Near and below 2^-126 lo is subnormal or zero: only hi's rounding counts there.
  if (std::fabs(ref) < std::ldexp(1.0L, -100)) return;
  double err = static_cast<double>(std::fabs((static_cast<LD>(hi) + lo - ref) / ref));
  if (err > std::ldexp(1.0, -30)) ++st.over_half;
  if (err > std::ldexp(1.0, -28)) ++st.over_one;
  if (err > std::ldexp(1.0, -24)) ++st.over_two;
  size_t b = float_to_bits(x) >> 23;
  if (err > st.binade_max[b]) st.binade_max[b] = err, st.binade_x[b] = x;
  if (err > st.max_err) st.max_err = err, st.worst_x = x, st.worst_y = hi, st.worst_ref = ref;
}

struct Options {
  bool binades = false;
  uint64_t step = 64;
  bool windows = true;
  unsigned window_log2 = 21;  // at most 2^window_log2 points per window and sign
  unsigned threads = 2;
  std::vector<std::string> only;
  std::vector<float> grad_g;  // incoming gradients for the backward tests (--g); default list in tests.inc
};

// Every step-th bit pattern, then every float of each window (thinned to at most
// 2^window_log2 points per window and sign).
template <class Test, class Check>
Stats sweep(const Test& t, const Options& opt, Check check) {
  std::vector<std::pair<uint64_t, uint64_t>> ranges;  // [begin, end) of bit patterns, stride
  std::vector<uint64_t> strides;
  ranges.push_back({0, uint64_t(1) << 32});
  strides.push_back(opt.step);
  if (opt.windows) {
    for (auto w : t.windows) {
      uint64_t a = float_to_bits(w.first), b = float_to_bits(w.second) + 1;
      uint64_t stride = (b - a) >> opt.window_log2;
      if (stride == 0) stride = 1;
      ranges.push_back({a, b}), strides.push_back(stride);
      ranges.push_back({a | 0x80000000u, b | 0x80000000u}), strides.push_back(stride);
    }
  }
  std::vector<Stats> per(opt.threads);
  std::vector<std::thread> pool;
  for (unsigned ti = 0; ti < opt.threads; ++ti) {
    pool.emplace_back([&, ti] {
      for (size_t r = 0; r < ranges.size(); ++r) {
        uint64_t stride = strides[r];
        uint64_t count = (ranges[r].second - ranges[r].first + stride - 1) / stride;
        for (uint64_t i = ti; i < count; i += opt.threads)
          check(t, bits_to_float(static_cast<uint32_t>(ranges[r].first + i * stride)), per[ti]);
      }
    });
  }
  for (auto& th : pool) th.join();
  Stats all;
  for (auto& s : per) all.merge(s);
  return all;
}

// Worst error per binade of x (sign, exponent), for locating trouble.
void print_binades(const Stats& s, bool relative, double above) {
  for (size_t i = 0; i < s.binade_max.size(); ++i) {
    if (s.binade_max[i] <= above) continue;
    double e = relative ? std::log2(s.binade_max[i]) : s.binade_max[i];
    std::printf("   binade %c2^%-4d max %s%.3f at x=%.9g\n", i >= 256 ? '-' : '+', static_cast<int>(i & 255) - 127,
                relative ? "2^" : "", e, s.binade_x[i]);
  }
}

bool selected(const Options& opt, const char* name) {
  if (opt.only.empty()) return true;
  for (auto& o : opt.only)
    if (o == name) return true;
  return false;
}

void print_ulp(const char* name, const Stats& s) {
  std::printf("%-22s max %9.4f ulp at x=%-16.9g (%a) y=%.9g ref=%.12Lg | >0.5:%" PRIu64 " >1:%" PRIu64 " >2:%" PRIu64
              " nan:%" PRIu64 " inf:%" PRIu64 " -0:%" PRIu64 " | n=%" PRIu64 "\n",
              name, s.max_err, s.worst_x, s.worst_x, s.worst_y, static_cast<long double>(s.worst_ref), s.over_half,
              s.over_one, s.over_two, s.nan_bad, s.inf_bad, s.zero_sign_bad, s.n);
  if (s.sub_n)
    std::printf("%-22s (%" PRIu64 " subnormal results not bounded; their max %.3f ulp of 2^-149)\n", name, s.sub_n,
                s.sub_max);
  if (s.nan_bad) std::printf("%-22s first NaN mismatch at x=%a\n", name, s.nan_x);
  if (s.inf_bad) std::printf("%-22s first inf mismatch at x=%a\n", name, s.inf_x);
  if (s.zero_sign_bad) std::printf("%-22s first signed-zero mismatch at x=%a\n", name, s.zero_x);
  std::fflush(stdout);
}

void print_ff(const char* name, const Stats& s) {
  std::printf("%-22s max rel 2^%.2f at x=%-16.9g (%a) hi=%.9g ref=%.12Lg | >2^-30:%" PRIu64 " >2^-28:%" PRIu64
              " >2^-24:%" PRIu64 " nan:%" PRIu64 " inf:%" PRIu64 " | n=%" PRIu64 "\n",
              name, s.max_err > 0 ? std::log2(s.max_err) : -999.0, s.worst_x, s.worst_x, s.worst_y,
              static_cast<long double>(s.worst_ref), s.over_half, s.over_one, s.over_two, s.nan_bad, s.inf_bad, s.n);
  std::fflush(stdout);
}

}  // namespace

#include "tests.inc"

int main(int argc, char** argv) {
  Options opt;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--full") {
      opt.step = 1, opt.windows = false;
    } else if (a == "--step" && i + 1 < argc) {
      opt.step = std::strtoull(argv[++i], nullptr, 10);
      if (opt.step == 0) opt.step = 1;
    } else if (a == "--threads" && i + 1 < argc) {
      opt.threads = static_cast<unsigned>(std::strtoul(argv[++i], nullptr, 10));
      if (opt.threads == 0) opt.threads = 1;
    } else if (a == "--rcp-nudge" && i + 1 < argc) {
      kp_host_rcp_nudge = std::atoi(argv[++i]);
    } else if (a == "--ex2-nudge" && i + 1 < argc) {
      kp_host_ex2_nudge = std::atoi(argv[++i]);
    } else if (a == "--window-log2" && i + 1 < argc) {
      opt.window_log2 = static_cast<unsigned>(std::strtoul(argv[++i], nullptr, 10));
      if (opt.window_log2 > 31) opt.window_log2 = 31;
    } else if (a == "--no-windows") {
      opt.windows = false;
    } else if (a == "--g" && i + 1 < argc) {
      opt.grad_g.push_back(std::strtof(argv[++i], nullptr));
    } else if (a == "--binades") {
      opt.binades = true;
    } else if (a == "--list") {
      list_tests();
      return 0;
    } else if (a[0] != '-') {
      opt.only.push_back(a);
    } else {
      std::fprintf(stderr,
                   "usage: %s [--full | --step N] [--no-windows | --window-log2 N] [--threads N] [--rcp-nudge ULPS] "
                   "[--ex2-nudge ULPS] "
                   "[--g GRAD]... [--binades] [--list] "
                   "[test ...]\n",
                   argv[0]);
      return 2;
    }
  }
  return run_all(opt) ? 0 : 1;
}
