// Kernels launched on CUDA and checked element by element against the double reference.
// Runs only where a CUDA device is present (ctest's "cuda" test; skipped, with the reason, elsewhere).
#include <doctest/doctest.h>

#include <cmath>

#include "device_checks.hpp"

using namespace kplay;

TEST_SUITE("cuda") {
  TEST_CASE("CUDA: every activation, direction, dtype, size, tail, offset and in-place matches the reference") {
    rt::Backend* be = test::shared_backend("cuda");
    REQUIRE(be != nullptr);
    Engine engine(*be);
    test::check_backend_kernels(engine, {Dtype::f32, Dtype::f16, Dtype::bf16, Dtype::f64});
  }

  TEST_CASE("CUDA: every knob value gives the same, correct result") {
    rt::Backend* be = test::shared_backend("cuda");
    REQUIRE(be != nullptr);
    Engine engine(*be);
    test::check_backend_knobs(engine);
  }

  TEST_CASE("CUDA: fast-math is measurably less precise, and its error is visible") {
    rt::Backend* be = test::shared_backend("cuda");
    REQUIRE(be != nullptr);
    Engine engine(*be);
    test::check_backend_fast_math(engine);
  }

  TEST_CASE("CUDA: a second prepare of the same kernel is served from the in-process cache") {
    rt::Backend* be = test::shared_backend("cuda");
    REQUIRE(be != nullptr);
    Engine engine(*be);
    test::check_backend_kernel_cache(engine);
  }
}
