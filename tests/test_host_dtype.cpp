// Host conversions of the 16-bit dtypes: exact round trips and round-to-nearest-even.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "util/host_dtype.hpp"

using namespace kplay;

TEST_CASE("every float16 value survives float16 -> float -> float16") {
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const float f = half_bits_to_float(static_cast<std::uint16_t>(h));
    if (std::isnan(f)) continue;
    CAPTURE(h);
    REQUIRE(float_to_half_bits(f) == h);
  }
}

TEST_CASE("float16 rounding: ties to even, overflow to infinity, subnormals") {
  CHECK(half_bits_to_float(float_to_half_bits(1.0f)) == 1.0f);
  CHECK(float_to_half_bits(65504.0f) == 0x7bff);
  CHECK(float_to_half_bits(65520.0f) == 0x7c00);               // halfway to the next: rounds to inf
  CHECK(float_to_half_bits(1.0f + 1.0f / 2048) == 0x3c00);     // tie: even (1.0)
  CHECK(float_to_half_bits(1.0f + 3.0f / 2048) == 0x3c02);     // tie: even (up)
  CHECK(half_bits_to_float(0x0001) == std::ldexp(1.0f, -24));  // smallest subnormal
  CHECK(float_to_half_bits(std::ldexp(1.0f, -26)) == 0x0000);  // below half of it: 0
  CHECK(std::isnan(half_bits_to_float(float_to_half_bits(std::nanf("")))));
}

TEST_CASE("bfloat16 rounds to nearest even and keeps NaN") {
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const float f = bf16_bits_to_float(static_cast<std::uint16_t>(h));
    if (std::isnan(f)) continue;
    REQUIRE(float_to_bf16_bits(f) == h);
  }
  CHECK(float_to_bf16_bits(1.0f + std::ldexp(1.0f, -8)) == 0x3f80);  // tie: even
  CHECK(std::isnan(bf16_bits_to_float(float_to_bf16_bits(std::nanf("")))));
}

TEST_CASE("round_to and min_normal per dtype") {
  CHECK(round_to(Dtype::f32, 0.1) == static_cast<double>(0.1f));
  CHECK(round_to(Dtype::f64, 0.1) == 0.1);
  CHECK(min_normal(Dtype::f16) == std::ldexp(1.0, -14));
}
