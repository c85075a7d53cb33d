// The float designs of this folder on the host, over every float32 input (or every STEP-th): the
// largest error of silu_fl (silu_float.h), silu_lean and sigmoid_lean (silu_lean.h) in ulps of
// the exact result (double references: x / (1 + e^-x), NaN at -inf as torch gives, and
// 1 / (1 + e^-x)), with a correctly rounded reciprocal where the GPU uses rcp.approx (the residual
// correction after it makes the last bit of the reciprocal not matter). No contraction: the host
// performs the IEEE operations written. Exit 0 when silu_fl is within 1 ulp and the lean designs
// within kplay's 2-ulp bound.
//   g++ -O2 -ffp-contract=off -std=c++17 -pthread float_check.cpp -o float_check
//   ./float_check [STEP]           # every float: about 5 minutes on two cores
#include <math.h>  // fabsf, fmaf, fminf as silu_float.h names them

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#define MB_FN static inline
#define MB_RCP(d) (1.0f / (d))
static inline float MB_AS_FLOAT(int i) {
  float f;
  std::memcpy(&f, &i, 4);
  return f;
}
static inline int MB_AS_INT(float f) {
  int i;
  std::memcpy(&i, &f, 4);
  return i;
}
#include "silu_float.h"
#include "silu_lean.h"

static double ulp_error(float y, double ref) {
  if (std::isnan(ref)) return std::isnan(y) ? 0 : 1e9;
  if (std::isnan(y) || std::isinf(ref)) return y == ref ? 0 : 1e9;
  if (ref == 0) return y == 0 && std::signbit(y) == std::signbit(ref) ? 0 : std::fabs(y) / 0x1p-149 + 1;
  const double a = std::fabs(ref);
  return std::fabs(static_cast<double>(y) - ref) / (a < 0x1p-126 ? 0x1p-149 : std::ldexp(1.0, std::ilogb(a) - 23));
}

template <class Design, class Ref>
static double worst_of(const char* name, Design design, Ref reference, std::uint64_t step) {
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<double> worst(threads, 0);
  std::vector<std::uint32_t> at(threads, 0);
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (std::uint64_t b = t * step; b < (std::uint64_t{1} << 32); b += threads * step) {
        const std::uint32_t u = static_cast<std::uint32_t>(b);
        float x;
        std::memcpy(&x, &u, 4);
        const double xd = x;
        const double e = ulp_error(design(x), reference(xd));
        if (e > worst[t]) worst[t] = e, at[t] = u;
      }
    });
  for (auto& th : pool) th.join();
  unsigned w = 0;
  for (unsigned t = 1; t < threads; ++t)
    if (worst[t] > worst[w]) w = t;
  float x;
  std::memcpy(&x, &at[w], 4);
  std::printf("%s: worst %.4f ulp at x = %a (%g), every %llu-th float\n", name, worst[w], x, x,
              static_cast<unsigned long long>(step));
  return worst[w];
}

int main(int argc, char** argv) {
  const std::uint64_t step = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1;
  const auto silu_ref = [](double x) { return std::isinf(x) && x < 0 ? NAN : x / (1.0 + std::exp(-x)); };
  const double fl = worst_of("silu_fl", silu_fl, silu_ref, step);
  const double silu = worst_of("silu_lean", silu_lean, silu_ref, step);
  const double sigmoid = worst_of(
      "sigmoid_lean", sigmoid_lean, [](double x) { return 1.0 / (1.0 + std::exp(-x)); }, step);
  return fl <= 1.0 && silu <= 2.0 && sigmoid <= 2.0 ? 0 : 1;
}
