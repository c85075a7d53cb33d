// Test inputs and error accounting: the checks themselves must be able to fail.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "verification.hpp"

using namespace kplay;

TEST_CASE("inputs are fresh per seed, reproducible, mixed-sign, and lead with the special values") {
  int negative = 0, positive = 0, tiny = 0, differ = 0;
  for (std::uint64_t i = 0; i < 10000; ++i) {
    const double a = generate_input(Dtype::f32, 1, InputStream::x, i);
    CHECK_EQ(std::isnan(a) ? 0.0 : a, std::isnan(a) ? 0.0 : generate_input(Dtype::f32, 1, InputStream::x, i));
    if (a < 0) ++negative;
    if (a > 0) ++positive;
    if (a != 0 && std::fabs(a) < 1e-3) ++tiny;
    const double b = generate_input(Dtype::f32, 2, InputStream::x, i);
    if (!(a == b) && !(std::isnan(a) && std::isnan(b))) ++differ;
  }
  CHECK(negative > 3000);
  CHECK(positive > 3000);
  CHECK(tiny > 500);
  CHECK(differ > 9000);
  bool nan = false, inf = false, negzero = false;
  for (std::uint64_t i = 0; i < special_value_count(); ++i) {
    const double v = generate_input(Dtype::f32, 99, InputStream::x, i);
    nan |= std::isnan(v);
    inf |= std::isinf(v);
    negzero |= (v == 0 && std::signbit(v));
  }
  CHECK(nan);
  CHECK(inf);
  CHECK(negzero);
}

TEST_CASE("gradients are never infinite") {
  for (std::uint64_t i = 0; i < 5000; ++i)
    for (Dtype d : {Dtype::f32, Dtype::f16, Dtype::bf16, Dtype::f64})
      REQUIRE_FALSE(std::isinf(generate_input(d, 7, InputStream::grad, i)));
}

TEST_CASE("ErrorStats flags NaN where a number is due, a lost NaN, and out-of-tolerance values") {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  ErrorStats s(Dtype::f32);
  s.add(0, 1.0, 1.0);
  s.add(1, nan, nan);
  s.add(2, inf, inf);
  s.add(3, inf, 3.5e38);  // overflow is the correctly rounded float result
  CHECK(s.mismatches == 0);
  s.add(4, 0.0, nan);  // NaN turned into 0 (the relu bug)
  CHECK(s.mismatches == 1);
  CHECK(s.first_bad == 4);
  s.add(5, 1.0 + 1e-6, 1.0);
  CHECK(s.mismatches == 2);
  s.add(6, 1.0 + 1e-7, 1.0);  // within 2 ulp
  CHECK(s.mismatches == 2);
  s.add(7, -0.0, -1.2458e-43);  // both below the smallest normal float: equal
  CHECK(s.mismatches == 2);
  s.add(8, 0.0, 2e-38);  // a normal result lost to zero is a mismatch
  CHECK(s.mismatches == 3);
  CHECK(std::isinf(s.max_rel_error));
  CHECK(s.summary().find("3 mismatches") != std::string::npos);
}

TEST_CASE("the reference problem: saved output is the rounded forward output") {
  KernelSpec spec;
  spec.direction = Direction::backward;
  spec.saved = Saved::output;
  ReferenceProblem p(spec, 5);
  for (std::uint64_t i = 40; i < 60; ++i) {
    const double x = generate_input(Dtype::f32, 5, InputStream::x, i);
    CHECK(p.in1(i) == static_cast<double>(static_cast<float>(p.act->forward(x))));
  }
}

TEST_CASE("the tolerances per dtype, as the device tests apply them") {
  CHECK(tolerance(Dtype::f32) == 2.4e-7);   // 2 ulp of float32
  CHECK(tolerance(Dtype::f64) == 8.9e-16);  // 4 ulp of float64: CUDA's exp/expm1 plus two roundings
  CHECK(tolerance(Dtype::f16) == 1.0e-3);   // 1 ulp of float16: float32 math, one rounding
  CHECK(tolerance(Dtype::bf16) == 7.9e-3);  // 1 ulp of bfloat16
  // Relative to max(|ref|, smallest normal); backward from the saved output relative to |grad|.
}
