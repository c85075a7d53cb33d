// Kernel-versus-copy timing; see benchmark.hpp.
#include "benchmark.hpp"

#include <algorithm>

namespace kplay {

Timing summarize(std::vector<double> s) {
  Timing t;
  if (s.empty()) return t;
  t.samples_ms = s;
  std::sort(s.begin(), s.end());
  t.min_ms = s.front();
  t.max_ms = s.back();
  t.median_ms = s.size() % 2 ? s[s.size() / 2] : 0.5 * (s[s.size() / 2 - 1] + s[s.size() / 2]);
  return t;
}

BenchResult bench_against_copy(Engine& engine, const PreparedKernel& kernel, const DeviceProblem& problem, int warmup,
                               int repeats) {
  rt::Backend& be = engine.backend();
  const std::uint64_t copy_bytes = problem.copy_bytes();
  rt::DeviceBuffer scratch(be, copy_bytes);
  const rt::DevicePtr source = problem.copy_source();
  // Through the problem: prelu's backward is three kernels (the weight's gradient).
  auto run_kernel = [&] { problem.launch(engine, kernel); };
  auto run_copy = [&] { be.copy(scratch.ptr(), source, copy_bytes); };
  for (int i = 0; i < warmup; ++i) {
    run_kernel();
    run_copy();
  }
  be.synchronize();
  std::vector<double> k, c;
  for (int i = 0; i < repeats; ++i) {
    k.push_back(be.time_ms(run_kernel));
    c.push_back(be.time_ms(run_copy));
  }
  BenchResult r;
  r.kernel = summarize(k);
  r.copy = summarize(c);
  r.kernel_bytes = problem.bytes_moved();
  r.copy_bytes = 2 * copy_bytes;
  r.kernel_gbps = r.kernel.median_ms > 0 ? r.kernel_bytes / (r.kernel.median_ms * 1e6) : 0;
  r.copy_gbps = r.copy.median_ms > 0 ? r.copy_bytes / (r.copy.median_ms * 1e6) : 0;
  r.ratio = r.copy_gbps > 0 ? r.kernel_gbps / r.copy_gbps : 0;
  return r;
}

TimingPlan plan_timing(double launch_ms, TimingPlan wanted, double budget_ms) {
  TimingPlan p = wanted;
  if (launch_ms <= 0) return p;
  const int fit = static_cast<int>(budget_ms / launch_ms);
  p.repeats = std::max(std::min(wanted.repeats, fit), std::min(wanted.repeats, 3));
  if (launch_ms > 100) p.warmup = 0;  // the launch that was timed to plan has warmed up
  return p;
}

BenchResult add_slices(const std::vector<BenchResult>& slices) {
  if (slices.size() == 1) return slices.front();
  BenchResult r;
  for (const BenchResult& s : slices) {
    for (auto [sum, part] : {std::pair{&r.kernel, &s.kernel}, std::pair{&r.copy, &s.copy}}) {
      sum->median_ms += part->median_ms;
      sum->min_ms += part->min_ms;
      sum->max_ms += part->max_ms;
    }
    r.kernel_bytes += s.kernel_bytes;
    r.copy_bytes += s.copy_bytes;
  }
  r.kernel_gbps = r.kernel.median_ms > 0 ? r.kernel_bytes / (r.kernel.median_ms * 1e6) : 0;
  r.copy_gbps = r.copy.median_ms > 0 ? r.copy_bytes / (r.copy.median_ms * 1e6) : 0;
  r.ratio = r.copy_gbps > 0 ? r.kernel_gbps / r.copy_gbps : 0;
  return r;
}

}  // namespace kplay
