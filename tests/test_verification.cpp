// Test inputs and error accounting: the checks themselves must be able to fail.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "check/verification.hpp"

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

TEST_CASE("ordinary inputs keep the mix of signs and tiny magnitudes, and leave out the specials and tails") {
  for (InputStream stream : {InputStream::x, InputStream::grad, InputStream::b}) {
    int negative = 0, positive = 0, tiny = 0, same = 0, beyond = 0;
    for (std::uint64_t i = 0; i < 10000; ++i) {
      const double o = generate_input(Dtype::f32, 5, stream, i, true);
      REQUIRE(std::isfinite(o));
      REQUIRE(std::fabs(o) < 8.0);
      negative += o < 0;
      positive += o > 0;
      tiny += o != 0 && std::fabs(o) < 1e-3;
      const double c = generate_input(Dtype::f32, 5, stream, i);
      same += o == c;
      beyond += !(std::fabs(c) < 8.0);  // the check's own stream: specials (NaN too) and tails
    }
    CHECK(negative > 3000);
    CHECK(positive > 3000);
    CHECK(tiny > 500);
    CHECK(same > 7000);   // the ordinary values where the check has them
    CHECK(beyond > 300);  // what ordinary leaves out
  }
}

TEST_CASE("a reference problem of ordinary inputs plants no special value, edge or gated pair") {
  KernelSpec s;
  s.activation = "gated(softplus)";
  s.dtype = Dtype::f32;
  ReferenceProblem check(s, 3), ordinary(s, 3);
  ordinary.ordinary = true;
  REQUIRE_FALSE(check.pairs.empty());
  bool special = false;
  for (std::uint64_t i = 0; i < special_value_count() + check.edges.size() + check.pairs.size(); ++i) {
    special |= !(std::fabs(check.x(i)) < 8.0) || !(std::fabs(check.b(i)) < 8.0);
    CHECK(std::fabs(ordinary.x(i)) < 8.0);
    CHECK(std::fabs(ordinary.b(i)) < 8.0);
  }
  CHECK(special);
}

TEST_CASE("gradients are never infinite") {
  for (std::uint64_t i = 0; i < 5000; ++i)
    for (Dtype d : {Dtype::f32, Dtype::f16, Dtype::bf16, Dtype::f64})
      REQUIRE_FALSE(std::isinf(generate_input(d, 7, InputStream::grad, i)));
}

TEST_CASE("ErrorStats flags NaN where a number is due, a lost NaN, and values over the ulp bound") {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  ErrorStats s(Dtype::f32, 2.0);
  s.add(0, 1.0, 1.0);
  s.add(1, nan, nan);
  s.add(2, inf, inf);
  s.add(3, inf, 3.5e38);  // overflow is the correctly rounded float result
  CHECK(s.mismatches == 0);
  s.add(4, 0.0, nan);  // NaN turned into 0 (the relu bug)
  CHECK(s.mismatches == 1);
  CHECK(s.first_bad == 4);
  s.add(5, 1.0 + 3 * 0x1p-23, 1.0);  // 3 ulp
  CHECK(s.mismatches == 2);
  s.add(6, 1.0 + 2 * 0x1p-23, 1.0);  // 2 ulp: within the bound
  CHECK(s.mismatches == 2);
  ErrorStats u(Dtype::f32, 2.0);
  u.add(0, 0.75 + 0x1p-24, 0.75);
  CHECK(u.max_ulps == 1.0);
  s.add(7, 0.0, 2e-38);  // a normal result lost to zero is a mismatch
  CHECK(s.mismatches == 3);
  s.add(8, 0.0, 3 * 0x1p-149);  // forward: a subnormal result is held to the bound too (3 ulp)
  CHECK(s.mismatches == 4);
  CHECK(std::isinf(s.max_rel_error));
  CHECK(s.summary().find("4 over 2 ulp") != std::string::npos);
  ErrorStats b(Dtype::f32, 2.0, true);
  b.add(0, -0.0, -1.2458e-43);  // backward: both below the smallest normal float are equal
  CHECK(b.mismatches == 0);
}

TEST_CASE("ulps: the spacing of the dtype at the exact result") {
  CHECK(ulp_of(Dtype::f32, 1.0) == 0x1p-23);
  CHECK(ulp_of(Dtype::f32, 1.9999) == 0x1p-23);
  CHECK(ulp_of(Dtype::f32, 0.75) == 0x1p-24);
  CHECK(ulp_of(Dtype::f32, 1e-40) == 0x1p-149);  // subnormal spacing
  CHECK(ulp_of(Dtype::f16, 1.0) == 0x1p-10);
  CHECK(ulp_of(Dtype::bf16, 1.0) == 0x1p-7);
  CHECK(ulp_of(Dtype::f64, 1.0) == 0x1p-52);
  // A long double reference just below a power of two is in the binade below it (its double
  // rounding is not), and an error of 0.75 ulp reads 0.75.
  CHECK(ulp_of(Dtype::f64, 2.0L - 0x1p-60L) == 0x1p-52);
  CHECK(ulp_of(Dtype::f64, -0x1p-1022L + 0x1p-1080L) == 0x1p-1074);
  CHECK(ulp_error(Dtype::f64, 1.0, 1.0L + 0.75L * 0x1p-52L) == 0.75);
  CHECK(ulp_error(Dtype::f32, 1.0 + 0x1p-23, 1.0) == 1.0);
  CHECK(std::isinf(ulp_error(Dtype::f32, 1.0, std::nan(""))));
}

TEST_CASE("the reference problem: saved output is the rounded forward output; edges are planted") {
  KernelSpec spec;
  spec.direction = Direction::backward;
  spec.saved = Saved::output;
  ReferenceProblem p(spec, 5);
  for (std::uint64_t i = 40; i < 60; ++i) {
    const double x = p.x(i);
    CHECK(p.in1(i) == static_cast<double>(static_cast<float>(p.forward(x))));
  }
  KernelSpec t;
  t.activation = "threshold(threshold=0.1, value=20)";
  t.dtype = Dtype::f16;
  ReferenceProblem q(t, 5);
  const double edge = 0.0999755859375;  // 0.1 rounded to float16
  bool at = false, above = false, below = false;
  for (std::uint64_t i = 0; i < 100; ++i) {
    at |= q.x(i) == edge;
    above |= q.x(i) == edge + 0x1p-14;  // the next float16 up
    below |= q.x(i) == edge - 0x1p-14;
  }
  CHECK(at);
  CHECK(above);
  CHECK(below);
}

TEST_CASE("the bounds per activation, dtype and direction, as the tests and docs state them") {
  KernelSpec s;
  s.activation = "selu";
  CHECK(ulp_bound(s) == 1.0);  // SELU, ELU and CELU: one ulp in float32
  s.activation = "gelu";
  CHECK(ulp_bound(s) == 5.0);  // float alone, 2^g in hardware (precise_math.h): 4.33 measured
  s.activation = "gelu(approximate=tanh)";
  CHECK(ulp_bound(s) == 3.0);  // exponent in double, quotient in float: 2.65 measured
  s.direction = Direction::backward;
  s.activation = "gelu";
  CHECK(ulp_bound(s) == 2.0);
  s.direction = Direction::forward;
  s.dtype = Dtype::bf16;
  CHECK(ulp_bound(s) == 1.0);  // 16-bit results: one ulp
  s.dtype = Dtype::f64;        // gelu's float64 forward: the parameter decides (gelu(tanh)'s tail)
  CHECK(ulp_bound(s) == 8.0);
  s.activation = "gelu(approximate=tanh)";
  CHECK(ulp_bound(s) == 4096.0);
  s.direction = Direction::backward;
  CHECK(ulp_bound(s) == 0x1p18);
  s.activation = "gelu";
  CHECK(ulp_bound(s) == 0x1p18);
  s.direction = Direction::forward;
  s.activation = "relu";
  s.dtype = Dtype::f32;
  CHECK(ulp_bound(s) == 0.5);  // exact (correctly rounded: it is the input)
}
