// How `kplay run` times problems that are large for the device: fewer timed launches where one
// launch is long, and the sums over the slices of a problem the device cannot hold at once.
#include <doctest/doctest.h>

#include "check/benchmark.hpp"

using namespace kplay;

TEST_CASE("timing keeps the asked launches when they are short, and at least three when they are long") {
  const TimingPlan asked{3, 15};
  const TimingPlan gpu = plan_timing(4.2, asked);  // a full-size float32 kernel on a GPU
  CHECK(gpu.repeats == 15);
  CHECK(gpu.warmup == 3);
  const TimingPlan cpu = plan_timing(500, asked);
  CHECK(cpu.repeats == 4);  // 2 s of launches
  CHECK(cpu.warmup == 0);
  CHECK(plan_timing(20000, asked).repeats == 3);
  CHECK(plan_timing(20000, TimingPlan{3, 2}).repeats == 2);  // never more than asked
  CHECK(plan_timing(0, asked).repeats == 15);                // no estimate: as asked
}

TEST_CASE("slices add their times and bytes; the rates follow from the sums") {
  BenchResult a, b;
  a.kernel.median_ms = 2;
  a.copy.median_ms = 1;
  a.kernel_bytes = a.copy_bytes = 2'000'000;
  b.kernel.median_ms = 6;
  b.copy.median_ms = 3;
  b.kernel_bytes = b.copy_bytes = 6'000'000;
  const BenchResult sum = add_slices({a, b});
  CHECK(sum.kernel.median_ms == doctest::Approx(8));
  CHECK(sum.copy.median_ms == doctest::Approx(4));
  CHECK(sum.kernel_bytes == 8'000'000);
  CHECK(sum.kernel_gbps == doctest::Approx(1.0));  // 8 MB in 8 ms
  CHECK(sum.ratio == doctest::Approx(0.5));
}
