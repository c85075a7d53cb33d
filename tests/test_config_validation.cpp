// Config validation names the knob and the allowed values.
#include <doctest/doctest.h>

#include "codegen/config_validation.hpp"
#include "kplay/error.hpp"

using namespace kplay;

namespace {
KernelSpec selu(Dtype d = Dtype::f32) {
  KernelSpec s;
  s.dtype = d;
  return s;
}
}  // namespace

TEST_CASE("vec = 0 picks the widest vector within 16 bytes for each dtype") {
  TargetLimits lim;
  CHECK(resolve_config(selu(Dtype::f32), {}, lim).vec == 4);
  CHECK(resolve_config(selu(Dtype::f16), {}, lim).vec == 8);
  CHECK(resolve_config(selu(Dtype::bf16), {}, lim).vec == 8);
  CHECK(resolve_config(selu(Dtype::f64), {}, lim).vec == 2);
}

TEST_CASE("invalid knobs are refused with the flag's name") {
  TargetLimits lim;
  KernelConfig c;
  c.vec = 8;
  CHECK_THROWS_WITH_AS(resolve_config(selu(), c, lim),
                       doctest::Contains("--vec 8: a vector of 8 x f32 is wider than 16 bytes"), Error);
  c = {};
  c.vec = 3;
  CHECK_THROWS_WITH_AS(resolve_config(selu(), c, lim), doctest::Contains("not a power of two"), Error);
  c = {};
  c.block = 48;
  CHECK_THROWS_WITH_AS(resolve_config(selu(), c, lim), doctest::Contains("--block 48"), Error);
  c.block = 2048;
  CHECK_THROWS_WITH_AS(resolve_config(selu(), c, lim), doctest::Contains("32..1024"), Error);
  c = {};
  c.per_thread = 0;
  CHECK_THROWS_WITH_AS(resolve_config(selu(), c, lim), doctest::Contains("--per-thread 0"), Error);
  c = {};
  c.grid = GridPolicy::grid_stride;
  c.waves = 0;
  CHECK_THROWS_WITH_AS(resolve_config(selu(), c, lim), doctest::Contains("waves"), Error);
  c = {};
  c.late_gradient = true;  // a forward kernel reads no gradient
  CHECK_THROWS_WITH_AS(resolve_config(selu(), c, lim), doctest::Contains("--late-gradient"), Error);
  KernelSpec backward = selu();
  backward.direction = Direction::backward;
  CHECK(resolve_config(backward, c, lim).late_gradient);
}

TEST_CASE("device and backend limits apply") {
  TargetLimits lim;
  lim.backend = "opencl";
  lim.max_block = 512;
  lim.cache_hints = false;
  KernelConfig c;
  c.block = 1024;
  CHECK_THROWS_WITH_AS(resolve_config(selu(), c, lim), doctest::Contains("allows at most 512"), Error);
  c = {};
  c.cache = CacheHint::streaming;
  CHECK_THROWS_WITH_AS(resolve_config(selu(), c, lim),
                       doctest::Contains("--cache streaming: the opencl backend has no cache hints"), Error);
  lim.dtypes = {Dtype::f32};
  CHECK_THROWS_WITH_AS(resolve_config(selu(Dtype::f64), {}, lim), doctest::Contains("cannot do dtype f64"), Error);
}

TEST_CASE("unknown activations are refused before anything else") {
  KernelSpec s;
  s.activation = "swish";
  CHECK_THROWS_WITH_AS(resolve_config(s, {}, TargetLimits{}), doctest::Contains("unknown activation 'swish'"), Error);
}

TEST_CASE("the built-in default: one vector per thread, four for 16-bit types; float32 blocks of 128") {
  CHECK(default_config(selu(Dtype::f32)).block == 128);
  CHECK(default_config(selu(Dtype::f64)).block == 256);
  CHECK(default_config(selu(Dtype::f32)).per_thread == 1);
  CHECK(default_config(selu(Dtype::f64)).per_thread == 1);
  CHECK(default_config(selu(Dtype::f16)).per_thread == 4);
  CHECK(default_config(selu(Dtype::bf16)).per_thread == 4);
  CHECK(default_config(selu(Dtype::bf16)).block == 256);
}
