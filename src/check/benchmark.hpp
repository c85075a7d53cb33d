// Timing of a prepared kernel against the roofline: a device-to-device copy of the same bytes,
// timed in the same run, interleaved with the kernel so clock or thermal drift hits both alike.
#pragma once
#include <functional>
#include <vector>

#include "engine/engine.hpp"
#include "problem.hpp"

namespace kplay {

struct Timing {
  double median_ms = 0, min_ms = 0, max_ms = 0;
  std::vector<double> samples_ms;
};

Timing summarize(std::vector<double> samples_ms);

struct BenchResult {
  Timing kernel, copy;
  double kernel_gbps = 0;  // bytes the kernel moves (all streams) / median time
  double copy_gbps = 0;    // read + write bytes of the copy / its median time
  double ratio = 0;        // kernel_gbps / copy_gbps
  std::uint64_t kernel_bytes = 0, copy_bytes = 0;
};

// Buffer sets that one timed sample cycles through so that it touches at least 4x the L2 (at most
// 16, within a quarter of the device's memory): the kernel and the copy then read from memory, as
// a large problem does, and no small one is flattered by the cache.
std::size_t buffer_sets(const rt::DeviceInfo& dev, std::uint64_t bytes);

// `sets`: problems of one shape, each with its own buffers; a sample launches the kernel on each
// (its output is overwritten, in place compounds), and the copy moves each one's copy_bytes()
// from its copy_source() to a destination of its own (an element-wise problem: its input's bytes;
// a gated one: half the bytes the kernel moves, so that the copy reads and writes as many as the
// kernel); the times are per set, the samples interleaved.
BenchResult bench_against_copy(Engine& engine, const PreparedKernel& kernel,
                               const std::vector<const DeviceProblem*>& sets, int warmup, int repeats);

// How many launches to time when the user did not say: `repeats`, fewer (at least 3) where one
// launch takes so long that they would pass `budget_ms` (a big problem on a CPU's OpenCL), and
// no warm-up where a launch takes over 100 ms: the launch timed to plan was the warm-up.
struct TimingPlan {
  int warmup = 3, repeats = 15;
};
TimingPlan plan_timing(double launch_ms, TimingPlan wanted, double budget_ms = 2000);

// Sums of the slices' results: a problem too large for the device's memory runs as slices
// (kplay run), each timed on its own; times and bytes add, rates and the ratio follow from them.
BenchResult add_slices(const std::vector<BenchResult>& slices);

}  // namespace kplay
