// The autotuning loop; see tuner.hpp.
#include "tuner.hpp"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <future>
#include <map>
#include <thread>

#include "../benchmark.hpp"
#include "../hash.hpp"
#include "../launch_geometry.hpp"
#include "../problem.hpp"
#include "kplay/error.hpp"
#include "strategies.hpp"

namespace kplay {
namespace {

using Clock = std::chrono::steady_clock;

// Buffer sets to rotate through so the working set is at least 4x the last-level cache.
std::size_t buffer_sets(const rt::DeviceInfo& dev, std::uint64_t bytes_per_set) {
  const std::uint64_t l2 = dev.l2_bytes ? dev.l2_bytes : (64ull << 20);
  if (bytes_per_set == 0) return 1;
  std::uint64_t sets = (4 * l2 + bytes_per_set - 1) / bytes_per_set;
  sets = std::min<std::uint64_t>(sets, 16);
  if (dev.memory_bytes) sets = std::min<std::uint64_t>(sets, std::max<std::uint64_t>(1, dev.memory_bytes / 4 / bytes_per_set));
  return static_cast<std::size_t>(std::max<std::uint64_t>(sets, 1));
}

class Bench {
 public:
  Bench(Engine& engine, const KernelSpec& spec, std::uint64_t n, std::uint64_t seed) : engine_(engine), n_(n) {
    ProblemShape shape;
    shape.n = n;
    shape.seed = seed;
    problems_.push_back(std::make_unique<Problem>(engine.backend(), spec, shape));
    const std::size_t sets = buffer_sets(engine.backend().info(), problems_[0]->bytes_moved());
    for (std::size_t i = 1; i < sets; ++i) {
      shape.seed = seed + i;
      problems_.push_back(std::make_unique<Problem>(engine.backend(), spec, shape));
    }
    scratch_ = rt::DeviceBuffer(engine.backend(), n * dtype_size(spec.dtype));
  }

  std::size_t sets() const { return problems_.size(); }
  std::uint64_t bytes() const { return problems_[0]->bytes_moved(); }

  // Verifies on the first buffer set: poisoned output, then the double reference.
  ErrorStats verify(const PreparedKernel& k) {
    Problem& p = *problems_[0];
    p.reset_output();
    engine_.launch_flat(k, p.out(), p.in0(), p.in1(), n_);
    engine_.backend().synchronize();
    return p.verify(true);
  }

  // One sample: a launch on every buffer set in turn, timed together, per launch. Small kernels
  // are then timed over many microseconds instead of one launch's worth.
  double time_once(const PreparedKernel& k) {
    const double ms = engine_.backend().time_ms([&] {
      for (auto& p : problems_) engine_.launch_flat(k, p->out(), p->in0(), p->in1(), n_);
    });
    return ms / static_cast<double>(problems_.size());
  }

  Timing time_kernel(const PreparedKernel& k, int warmup, int repeats) {
    for (int i = 0; i < warmup; ++i) time_once(k);
    std::vector<double> s;
    s.reserve(static_cast<std::size_t>(std::max(repeats, 0)));
    for (int i = 0; i < repeats; ++i) s.push_back(time_once(k));
    return summarize(s);
  }

  std::vector<double> time_copy(int repeats) {
    std::vector<double> s;
    const std::uint64_t bytes = n_ * dtype_size(problems_[0]->spec().dtype);
    for (int i = 0; i < repeats; ++i) {
      const double ms = engine_.backend().time_ms([&] {
        for (auto& p : problems_) engine_.backend().copy(scratch_.ptr(), p->in0(), bytes);
      });
      s.push_back(ms / static_cast<double>(problems_.size()));
    }
    return s;
  }

 private:
  Engine& engine_;
  std::uint64_t n_;
  std::vector<std::unique_ptr<Problem>> problems_;
  rt::DeviceBuffer scratch_;
};

std::string run_key(const Engine& engine, const KernelSpec& spec, const TuneOptions& o) {
  return hash_hex({engine.fingerprint(), to_string(spec), std::to_string(o.n), o.strategy, std::to_string(o.budget),
                   std::to_string(o.seed), std::to_string(o.repeats), o.space.describe()});
}

// Compiles every config in parallel (NVRTC and the engine are thread-safe).
std::vector<std::pair<std::shared_ptr<const PreparedKernel>, std::string>> compile_all(
    Engine& engine, const KernelSpec& spec, const std::vector<KernelConfig>& configs) {
  std::vector<std::pair<std::shared_ptr<const PreparedKernel>, std::string>> out(configs.size());
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t i; (i = next++) < configs.size();) {
      try {
        out[i].first = engine.prepare(spec, configs[i]);
      } catch (const Error& e) {
        out[i].second = std::string("does not compile: ") + e.what();
      }
    }
  };
  const unsigned threads = std::max(1u, std::min<unsigned>(8, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < std::min<std::size_t>(threads, configs.size()); ++t) pool.emplace_back(worker);
  for (auto& t : pool) t.join();
  return out;
}

}  // namespace

const CandidateResult& pick_winner(const std::vector<CandidateResult>& c, double tie) {
  const CandidateResult* fastest = nullptr;
  for (const auto& r : c)
    if (r.ok && (!fastest || r.median_ms < fastest->median_ms)) fastest = &r;
  if (!fastest) throw Error(ErrorCode::verification_failed, "no candidate produced correct output");
  const CandidateResult* pick = fastest;
  for (const auto& r : c)
    if (r.ok && r.median_ms <= fastest->median_ms * (1.0 + tie) && simpler(r.config, pick->config)) pick = &r;
  return *pick;
}

TuningRecord tune(Engine& engine, KernelDatabase& db, const KernelSpec& spec, const TuneOptions& o) {
  if (o.n == 0) throw Error(ErrorCode::invalid_argument, "cannot tune for 0 elements");
  if (o.repeats < 3 || o.warmup < 0) throw Error(ErrorCode::invalid_argument, "--repeat must be >= 3, --warmup >= 0");
  const std::vector<KernelConfig> space = o.space.enumerate(spec, engine.backend().limits());
  if (space.empty()) throw Error(ErrorCode::invalid_config, "the search space is empty for " + to_string(spec));
  auto strategy = make_strategy(o.strategy, space, o.budget, o.seed);
  const std::string key = run_key(engine, spec, o);
  const std::uint64_t esize = dtype_size(spec.dtype);

  Bench bench(engine, spec, o.n, o.seed);
  std::vector<double> copy_samples = bench.time_copy(o.repeats);

  std::vector<CandidateResult> results = o.resume ? db.load_progress(key) : std::vector<CandidateResult>{};
  std::vector<Measurement> history;
  history.reserve(results.size());
  for (const auto& r : results) history.push_back({r.config, r.ok, r.median_ms});

  const auto start = Clock::now();
  std::size_t measured_here = 0;
  TuneProgress progress;
  auto report = [&](std::size_t pending) {
    if (!o.progress) return;
    progress.done = results.size();
    progress.total = results.size() + pending;
    const double per = measured_here ? std::chrono::duration<double>(Clock::now() - start).count() / measured_here : 0;
    progress.eta_seconds = per * pending;
    o.progress(progress);
  };
  auto note_best = [&](const CandidateResult& r) {
    if (r.ok && (!progress.have_best || r.gbps > progress.best_gbps)) {
      progress.have_best = true;
      progress.best = r.config;
      progress.best_gbps = r.gbps;
    }
  };
  for (const auto& r : results) note_best(r);
  progress.phase = "measure";

  for (std::vector<KernelConfig> batch; !(batch = strategy->next(history)).empty();) {
    auto compiled = compile_all(engine, spec, batch);
    for (std::size_t i = 0; i < batch.size(); ++i) {
      report(batch.size() - i);
      CandidateResult r;
      r.config = batch[i];
      if (!compiled[i].first) {
        r.rejection = compiled[i].second;
      } else {
        const PreparedKernel& k = *compiled[i].first;
        const ErrorStats err = bench.verify(k);
        if (err.mismatches) {
          r.rejection = "wrong output: " + err.summary();
        } else {
          const Timing t = bench.time_kernel(k, o.warmup, o.repeats);
          r.ok = true;
          r.median_ms = t.median_ms;
          r.spread_ms = t.max_ms - t.min_ms;
          r.gbps = bench.bytes() / (t.median_ms * 1e6);
        }
      }
      db.save_progress(key, r);
      results.push_back(r);
      history.push_back({r.config, r.ok, r.median_ms});
      note_best(r);
      ++measured_here;
    }
  }
  report(0);

  // Contenders within the noise of the fastest are re-measured together, interleaved.
  const CandidateResult* fastest = nullptr;
  for (const auto& r : results)
    if (r.ok && (!fastest || r.median_ms < fastest->median_ms)) fastest = &r;
  if (!fastest) throw Error(ErrorCode::verification_failed, "no candidate of " + to_string(spec) + " produced correct output");
  const double noise = std::max(0.02, 2.0 * fastest->spread_ms / fastest->median_ms);
  // The top of the landscape is often flat (dozens of configs within 1 %), so which few are
  // fastest is noise. Re-measuring the 4 fastest plus the 20 simplest within the noise window
  // lets the tie rule see the same simple candidates in every run.
  std::vector<CandidateResult> window;
  for (const auto& r : results)
    if (r.ok && r.median_ms <= fastest->median_ms * (1.0 + noise)) window.push_back(r);
  std::sort(window.begin(), window.end(),
            [](const CandidateResult& a, const CandidateResult& b) { return a.median_ms < b.median_ms; });
  std::vector<CandidateResult> contenders(window.begin(), window.begin() + std::min<std::size_t>(4, window.size()));
  std::vector<CandidateResult> rest(window.begin() + static_cast<std::ptrdiff_t>(contenders.size()), window.end());
  std::stable_sort(rest.begin(), rest.end(),
                   [](const CandidateResult& a, const CandidateResult& b) { return simpler(a.config, b.config); });
  for (std::size_t i = 0; i < rest.size() && i < 20; ++i) contenders.push_back(rest[i]);
  progress.phase = "re-measure";
  report(0);
  {
    std::vector<std::shared_ptr<const PreparedKernel>> kernels;
    kernels.reserve(contenders.size());
    for (const auto& c : contenders) kernels.push_back(engine.prepare(spec, c.config));
    std::vector<std::vector<double>> samples(contenders.size());
    for (int round = 0; round < 2 * o.repeats; ++round)
      for (std::size_t i = 0; i < contenders.size(); ++i) samples[i].push_back(bench.time_once(*kernels[i]));
    for (std::size_t i = 0; i < contenders.size(); ++i) {
      const Timing t = summarize(samples[i]);
      contenders[i].median_ms = t.median_ms;
      contenders[i].spread_ms = t.max_ms - t.min_ms;
      contenders[i].gbps = bench.bytes() / (t.median_ms * 1e6);
    }
  }
  const CandidateResult winner = pick_winner(contenders);
  for (auto& r : results)  // the record keeps the re-measured times of the contenders
    for (const auto& c : contenders)
      if (r.config == c.config) r = c;

  const std::vector<double> more_copy = bench.time_copy(o.repeats);
  copy_samples.insert(copy_samples.end(), more_copy.begin(), more_copy.end());
  const Timing copy = summarize(copy_samples);

  const rt::DeviceInfo& dev = engine.backend().info();
  TuningRecord rec;
  rec.fingerprint = engine.fingerprint();
  rec.backend = dev.backend;
  rec.device_name = dev.name;
  rec.arch = dev.arch;
  rec.spec = spec;
  rec.n = o.n;
  rec.size_bucket = size_bucket(o.n);
  rec.best = winner.config;
  rec.best_ms = winner.median_ms;
  rec.best_gbps = winner.gbps;
  rec.copy_gbps = 2.0 * o.n * esize / (copy.median_ms * 1e6);
  rec.strategy = strategy->name();
  rec.created_unix = static_cast<std::int64_t>(std::time(nullptr));
  rec.candidates = results;
  db.put_device(rec.fingerprint, dev);
  db.save_tuning(rec);
  db.clear_progress(key);
  return rec;
}

}  // namespace kplay
