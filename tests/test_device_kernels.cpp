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
    KernelSpec s;
    KernelConfig c;
    c.fast_math = true;
    ProblemShape shape;
    shape.n = 100000;
    const ErrorStats e = test::run_problem(engine, s, c, shape);
    MESSAGE("fast-math SELU float32: " << e.summary());
    CHECK(e.max_rel_error > tolerance(Dtype::f32));  // __expf(x)-1 loses precision near 0
  }

  TEST_CASE("CUDA: a second prepare of the same kernel is served from the in-process cache") {
    rt::Backend* be = test::shared_backend("cuda");
    REQUIRE(be != nullptr);
    Engine engine(*be);
    KernelSpec s;
    auto a = engine.prepare(s, {});
    auto b = engine.prepare(s, {});
    CHECK(a.get() == b.get());
  }
}
