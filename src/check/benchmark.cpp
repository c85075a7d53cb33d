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

std::size_t buffer_sets(const rt::DeviceInfo& dev, std::uint64_t bytes) {
  const std::uint64_t l2 = dev.l2_bytes ? dev.l2_bytes : (64ull << 20);
  std::uint64_t sets = bytes ? (4 * l2 + bytes - 1) / bytes : 1;
  sets = std::min<std::uint64_t>(sets, 16);
  if (dev.memory_bytes && bytes)
    sets = std::min<std::uint64_t>(sets, std::max<std::uint64_t>(1, dev.memory_bytes / 4 / bytes));
  return static_cast<std::size_t>(std::max<std::uint64_t>(sets, 1));
}

BenchResult bench_against_copy(Engine& engine, const PreparedKernel& kernel,
                               const std::vector<const DeviceProblem*>& sets, int warmup, int repeats) {
  rt::Backend& be = engine.backend();
  const std::uint64_t copy_bytes = sets.front()->copy_bytes();
  std::vector<rt::DevicePtr> sources;
  std::vector<rt::DeviceBuffer> scratch;
  sources.reserve(sets.size());
  scratch.reserve(sets.size());
  for (const DeviceProblem* p : sets) {
    sources.push_back(p->copy_source());  // allocated before timing, where it is its own
    scratch.emplace_back(be, copy_bytes);
  }
  const double per = static_cast<double>(sets.size());
  // Through the problem: prelu's backward is three kernels (the weight's gradient).
  auto run_kernel = [&] {
    for (const DeviceProblem* p : sets) p->launch(engine, kernel);
  };
  auto run_copy = [&] {
    for (std::size_t i = 0; i < sets.size(); ++i) be.copy(scratch[i].ptr(), sources[i], copy_bytes);
  };
  for (int i = 0; i < warmup; ++i) {
    run_kernel();
    run_copy();
  }
  be.synchronize();
  std::vector<double> k, c;
  for (int i = 0; i < repeats; ++i) {
    k.push_back(be.time_ms(run_kernel) / per);
    c.push_back(be.time_ms(run_copy) / per);
  }
  BenchResult r;
  r.kernel = summarize(k);
  r.copy = summarize(c);
  r.kernel_bytes = sets.front()->bytes_moved();
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
