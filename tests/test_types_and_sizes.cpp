// Names, parsers and problem-size parsing: what the command line accepts and refuses.
#include <doctest/doctest.h>

#include "kplay/error.hpp"
#include "kplay/types.hpp"
#include "util/size_parse.hpp"

using namespace kplay;

TEST_CASE("dtype, direction, cache and grid names round-trip") {
  for (Dtype d : {Dtype::f32, Dtype::f16, Dtype::bf16, Dtype::f64}) CHECK(parse_dtype(to_string(d)) == d);
  CHECK(dtype_size(Dtype::f16) == 2);
  CHECK(dtype_size(Dtype::f64) == 8);
  CHECK(parse_direction("backward") == Direction::backward);
  CHECK(parse_cache_hint("streaming") == CacheHint::streaming);
  GridPolicy g = GridPolicy::one_shot;
  int waves = 4;
  parse_grid_policy("grid-stride:8", g, waves);
  CHECK(g == GridPolicy::grid_stride);
  CHECK(waves == 8);
  CHECK(to_string(g, waves) == "grid-stride:8");
  parse_grid_policy("one-shot", g, waves);
  CHECK(g == GridPolicy::one_shot);
}

TEST_CASE("unknown names are refused with the accepted values") {
  CHECK_THROWS_WITH_AS(parse_dtype("f8"), doctest::Contains("f32, f16, bf16 or f64"), Error);
  CHECK_THROWS_WITH_AS(parse_cache_hint("l2"), doctest::Contains("default or streaming"), Error);
  GridPolicy g;
  int w = 1;
  CHECK_THROWS_AS(parse_grid_policy("grid-stride:0", g, w), Error);
  CHECK_THROWS_AS(parse_grid_policy("grid-stride:x", g, w), Error);
  CHECK_THROWS_AS(parse_grid_policy("persistent", g, w), Error);
}

TEST_CASE("--n accepts whole numbers and powers of two with an offset") {
  CHECK(parse_count("0") == 0);
  CHECK(parse_count("1000000") == 1000000);
  CHECK(parse_count("2^31") == (1ull << 31));
  CHECK(parse_count("2^31+5") == (1ull << 31) + 5);
  CHECK(parse_count("2^20-1") == (1ull << 20) - 1);
  for (const char* bad : {"", "-1", "1e6", "12abc", "3^4", "2^63", "2^", "99999999999999999999999", "2^4-17"})
    CHECK_THROWS_WITH_AS(parse_count(bad), doctest::Contains("--n"), Error);
}

TEST_CASE("--shape multiplies its dimensions and refuses malformed text") {
  const auto s = parse_shape("4096x393216");
  REQUIRE(s.size() == 2);
  CHECK(shape_elements(s) == 1610612736ull);
  CHECK(shape_string(s) == "4096x393216");
  CHECK(shape_elements(parse_shape("7")) == 7);
  for (const char* bad : {"", "x", "4096x", "4096xx2", "0x5", "4096*2", "-4x4", "4294967296x4294967296"})
    CHECK_THROWS_WITH_AS(parse_shape(bad), doctest::Contains("--shape"), Error);
}
