// The autotuning loop; see tuner.hpp.
#include "tuner.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "check/benchmark.hpp"
#include "check/problem.hpp"
#include "config_lookup.hpp"
#include "engine/launch_geometry.hpp"
#include "kplay/error.hpp"
#include "spec/activations.hpp"
#include "strategies.hpp"
#include "util/hash.hpp"
#include "util/watchdog.hpp"

namespace kplay {

TunerTiming tuner_timing(const rt::DeviceInfo& dev, std::uint64_t bytes_per_set) {
  const std::uint64_t l2 = dev.l2_bytes ? dev.l2_bytes : (64ull << 20);
  TunerTiming t;
  if (bytes_per_set == 0) return t;
  if (bytes_per_set <= l2) {
    t.launches = kWarmLaunches;
    return t;
  }
  std::uint64_t sets = (4 * l2 + bytes_per_set - 1) / bytes_per_set;
  if (dev.memory_bytes)
    sets = std::min<std::uint64_t>(sets, std::max<std::uint64_t>(1, dev.memory_bytes / 4 / bytes_per_set));
  t.sets = static_cast<std::size_t>(std::max<std::uint64_t>(sets, 1));
  return t;
}

namespace {

using Clock = std::chrono::steady_clock;

// One launch on poisoned output, then the sampled check against the double reference: "" or why
// the output is wrong. Every candidate the tuner measures, and verify_config, go through it.
std::string launch_and_check(Engine& engine, const PreparedKernel& k, DeviceProblem& p) {
  p.reset_output(true);
  p.launch(engine, k);
  engine.backend().synchronize();
  const ErrorStats err = p.verify(true);
  return err.mismatches ? "wrong output: " + err.summary() : "";
}

class Bench {
 public:
  // A gated activation's n elements are one row of [1, n] (d = n / 2); a row activation's are
  // `rows` rows (0: one).
  Bench(Engine& engine, const KernelSpec& spec, std::uint64_t n, std::uint64_t rows, std::uint64_t seed)
      : engine_(engine) {
    ProblemShape shape;
    shape.n = n;
    shape.rows = rows;
    shape.seed = seed;
    problems_.push_back(make_problem(engine.backend(), spec, shape));
    // Verified on the check's inputs and timed on ordinary ones (ProblemShape::ordinary), as kplay
    // run and bench time them: the check's specials, tails and edge rows send some kernels down
    // slow or exact paths (an IEEE division's out-of-range case reaches nearly every warp), which
    // would weigh on a candidate's time as no model's data does. Both problems stay allocated,
    // where three sets fit in the device's memory (the timed one, the checked one, the copy's
    // destination); above that (float64's backward beyond 2^30 elements on 80 GB), and for prelu
    // and rrelu, whose inputs have no ordinary form, the checked problem is timed too.
    const std::uint64_t memory = engine.backend().info().memory_bytes;
    const std::uint64_t set_bytes = problems_[0]->bytes_moved();
    const bool fits = memory == 0 || set_bytes <= memory / 3;
    if (resolve_activation(spec.activation).is_row() || (has_ordinary_inputs(spec) && fits)) {
      checked_ = std::move(problems_[0]);
      shape.ordinary = true;
      problems_[0] = make_problem(engine.backend(), spec, shape);
    }
    const TunerTiming timing = tuner_timing(engine.backend().info(), problems_[0]->bytes_moved());
    launches_ = timing.launches;
    for (std::size_t i = 1; i < timing.sets; ++i) {
      shape.seed = seed + i;
      problems_.push_back(make_problem(engine.backend(), spec, shape));
    }
    scratch_ = rt::DeviceBuffer(engine.backend(), problems_[0]->copy_bytes());
  }

  std::size_t sets() const { return problems_.size(); }
  std::uint64_t bytes() const { return problems_[0]->bytes_moved(); }
  std::uint64_t copy_bytes() const { return problems_[0]->copy_bytes(); }

  // Verifies on the first buffer set (a row activation: on its checked problem).
  std::string verify(const PreparedKernel& k) {
    return launch_and_check(engine_, k, checked_ ? *checked_ : *problems_[0]);
  }

  // One sample: a launch on every buffer set in turn (`launches_` times on one set where the
  // problem is timed warm), timed together, per launch. Small kernels are then timed over many
  // microseconds instead of one launch's worth.
  double time_once(const PreparedKernel& k) {
    const double ms = engine_.backend().time_ms([&] {
      for (int i = 0; i < launches_; ++i)
        for (const auto& p : problems_) p->launch(engine_, k);  // prelu's backward: three kernels
    });
    return ms / static_cast<double>(problems_.size() * static_cast<std::size_t>(launches_));
  }

  Timing time_kernel(const PreparedKernel& k, int warmup, int repeats) {
    for (int i = 0; i < warmup; ++i) time_once(k);
    std::vector<double> s;
    s.reserve(static_cast<std::size_t>(repeats));
    for (int i = 0; i < repeats; ++i) s.push_back(time_once(k));
    return summarize(s);
  }

  std::vector<double> time_copy(int repeats) {
    std::vector<double> s;
    const std::uint64_t bytes = problems_[0]->copy_bytes();
    for (const auto& p : problems_) p->copy_source();  // allocated before timing, where it is its own
    for (int i = 0; i < repeats; ++i) {
      const double ms = engine_.backend().time_ms([&] {
        for (int l = 0; l < launches_; ++l)
          for (auto& p : problems_) engine_.backend().copy(scratch_.ptr(), p->copy_source(), bytes);
      });
      s.push_back(ms / static_cast<double>(problems_.size() * static_cast<std::size_t>(launches_)));
    }
    return s;
  }

 private:
  Engine& engine_;
  std::vector<std::unique_ptr<DeviceProblem>> problems_;
  std::unique_ptr<DeviceProblem> checked_;  // row activations: the edge rows, verified, not timed
  int launches_ = 1;
  rt::DeviceBuffer scratch_;
};

bool is_row(const KernelSpec& spec) { return resolve_activation(spec.activation).is_row(); }

std::string run_key(const Engine& engine, const KernelSpec& spec, const TuneOptions& o) {
  // A row activation's key names its rows and space; an element-wise key stays as it was.
  const std::string n = is_row(spec) ? std::to_string(o.n) + "/" + std::to_string(o.rows) : std::to_string(o.n);
  return hash_hex({engine.fingerprint(), to_string(spec), n, o.strategy, std::to_string(o.budget),
                   std::to_string(o.seed), std::to_string(o.repeats),
                   is_row(spec) ? o.row_space.describe() : o.space.describe()});
}

template <class F>
void parallel_for(std::size_t count, unsigned threads, const F& body) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t i; (i = next++) < count;) body(i);
  };
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < std::min<std::size_t>(threads, count); ++t) pool.emplace_back(worker);
  for (auto& t : pool) t.join();
}

// The configurations with the widest vector of the space (StrategyDef::widest_vector_only).
std::vector<KernelConfig> widest_vectors(const std::vector<KernelConfig>& space) {
  int widest = 0;
  for (const auto& c : space) widest = std::max(widest, c.vec);
  std::vector<KernelConfig> out;
  for (const auto& c : space)
    if (c.vec == widest) out.push_back(c);
  return out;
}

// Smaller problem for the first ranking of a schedule with StrategyDef::smaller_n_first ("fast",
// whose --help line states these numbers): 1/16 of n when n is large enough that the smaller
// problem still streams from DRAM (the buffers rotate past the L2 either way).
std::uint64_t fidelity_n(std::uint64_t n) { return n >= (1ull << 26) ? n / 16 : 0; }

// Compiles in the background while the search measures: prefetch() queues the configs, one
// binary per group of configs that share it, in the order given, on every host core but one (the
// measuring thread keeps its core, so launches are not delayed inside a timed region);
// prepare() waits only for the configs it is asked about.
class DeviceMeasurer : public CandidateMeasurer {
 public:
  // `timed_out` records a candidate whose launch outlived the watchdog or crashed (true: recorded
  // where a fresh process finds it); it runs on a watchdog thread.
  DeviceMeasurer(Engine& engine, const KernelSpec& spec, const TuneOptions& o, TuneTimes& times,
                 std::function<bool(const KernelConfig&, const watchdog::Failure&)> timed_out)
      : engine_(engine), spec_(spec), o_(o), times_(times), timed_out_(std::move(timed_out)) {
    benches_.push_back(std::make_unique<Bench>(engine, spec, o.n, o.rows, o.seed));
    // Not for rows: a smaller problem of other rows would rank configs that cannot hold these.
    if (find_strategy(o.strategy).smaller_n_first && fidelity_n(o.n) && !is_row(spec))
      benches_.push_back(std::make_unique<Bench>(engine, spec, fidelity_n(o.n), 0, o.seed + 1000));
  }
  ~DeviceMeasurer() override {
    stop_ = true;
    if (background_.joinable()) background_.join();
  }
  int levels() const override { return static_cast<int>(benches_.size()); }

  void prefetch(const std::vector<KernelConfig>& configs) override {
    if (background_.joinable()) background_.join();  // the previous batch is prepared by now
    std::vector<std::vector<KernelConfig>> groups = new_groups(configs);
    if (groups.empty()) return;
    const unsigned cores = o_.compile_threads ? o_.compile_threads : std::max(1u, std::thread::hardware_concurrency());
    const unsigned threads = std::max(1u, cores > 1 ? cores - 1 : 1u);
    background_ = std::thread([this, groups = std::move(groups), threads] {
      parallel_for(groups.size(), threads, [&](std::size_t i) {
        if (!stop_) prepare_group(groups[i]);
      });
    });
  }

  std::vector<std::string> prepare(const std::vector<KernelConfig>& configs) override {
    std::vector<std::vector<KernelConfig>> groups = new_groups(configs);  // not prefetched
    parallel_for(groups.size(), o_.compile_threads, [&](std::size_t i) { prepare_group(groups[i]); });
    std::vector<std::string> out;
    std::unique_lock<std::mutex> lock(mutex_);
    for (const auto& c : configs) {
      const std::string key = request_key(spec_, c);
      ready_.wait(lock, [&] { return slots_.at(key).done; });
      out.push_back(slots_.at(key).error);
    }
    return out;
  }

  std::string verify(const KernelConfig& c, int level) override {
    const PreparedKernel& k = kernel(c);
    const watchdog::Activity doing = candidate(c);
    return benches_.at(static_cast<std::size_t>(level))->verify(k);
  }
  double sample(const KernelConfig& c, int level) override {
    const PreparedKernel& k = kernel(c);
    const watchdog::Activity doing = candidate(c);
    return benches_.at(static_cast<std::size_t>(level))->time_once(k);
  }
  std::vector<double> copy_samples(int repeats) override { return benches_[0]->time_copy(repeats); }
  double bytes_moved() const override { return static_cast<double>(benches_[0]->bytes()); }
  double copy_bytes_moved() const { return 2.0 * static_cast<double>(benches_[0]->copy_bytes()); }

 private:
  struct Slot {
    bool done = false;
    std::string error;  // "" or why it does not compile
    std::shared_ptr<const PreparedKernel> kernel;
  };

  // What the watchdog says and records if this candidate's launch never ends or crashes.
  watchdog::Activity candidate(const KernelConfig& c) const {
    return watchdog::Activity("candidate " + to_string(c),
                              [this, c](const watchdog::Failure& f) { return timed_out_ && timed_out_(c, f); });
  }

  // The configs not yet queued, grouped by the binary they share (first appearance order), each
  // now marked pending.
  std::vector<std::vector<KernelConfig>> new_groups(const std::vector<KernelConfig>& configs) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::vector<KernelConfig>> groups;
    std::map<std::string, std::size_t> group_of;
    for (const auto& c : configs) {
      const std::string key = request_key(spec_, c);
      if (slots_.count(key)) continue;
      slots_[key] = Slot{};
      const std::string id = request_key(spec_, binary_identity(spec_, c));
      auto it = group_of.find(id);
      if (it == group_of.end()) {
        it = group_of.emplace(id, groups.size()).first;
        groups.emplace_back();
        if (binaries_.insert(id).second) ++times_.binaries;
      }
      groups[it->second].push_back(c);
    }
    return groups;
  }

  // One compile for the group's binary, then the group's configs load it.
  void prepare_group(const std::vector<KernelConfig>& group) {
    std::string error;
    try {
      engine_.prepare(spec_, binary_identity(spec_, group.front()));
    } catch (const std::exception& e) {  // a background thread must not let anything escape
      error = std::string("does not compile: ") + e.what();
    }
    for (const auto& c : group) {
      Slot slot;
      slot.error = error;
      if (error.empty()) {
        try {
          slot.kernel = engine_.prepare(spec_, c);
        } catch (const std::exception& e) {
          slot.error = std::string("does not compile: ") + e.what();
        }
      }
      slot.done = true;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        slots_[request_key(spec_, c)] = std::move(slot);
      }
      ready_.notify_all();
    }
  }

  const PreparedKernel& kernel(const KernelConfig& c) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = slots_.find(request_key(spec_, c));
      if (it != slots_.end() && it->second.done && it->second.kernel) return *it->second.kernel;
    }
    const std::vector<std::string> error = prepare({c});
    if (!error[0].empty()) throw Error(ErrorCode::compile_failed, error[0]);
    std::lock_guard<std::mutex> lock(mutex_);
    return *slots_.at(request_key(spec_, c)).kernel;
  }

  Engine& engine_;
  KernelSpec spec_;
  const TuneOptions& o_;
  TuneTimes& times_;
  std::function<bool(const KernelConfig&, const watchdog::Failure&)> timed_out_;
  std::vector<std::unique_ptr<Bench>> benches_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::map<std::string, Slot> slots_;  // request key -> its compile, pending or done
  std::set<std::string> binaries_;     // binary identities queued
  std::thread background_;
  std::atomic<bool> stop_{false};
};

// A candidate whose fastest sample is this much slower than the best median is sampled no
// further (after 2 samples); the contenders' noise window (contenders_of) is at most a few per cent.
constexpr double kClearlySlower = 0.05;
// Samples per candidate in the one-by-one strategies: enough for a median and a spread that
// place it inside or outside the contenders' window, which is then re-measured (tune/search).
constexpr int kSamplesEach = 3;

// The largest interquartile range of the contenders' samples, relative to their median.
double relative_spread(const std::vector<std::vector<double>>& samples) {
  double worst = 0;
  for (std::vector<double> s : samples) {
    if (s.empty()) continue;
    std::sort(s.begin(), s.end());
    const double q1 = s[s.size() / 4], q3 = s[(3 * s.size()) / 4], median = s[s.size() / 2];
    worst = std::max(worst, median > 0 ? (q3 - q1) / median : 1.0);
  }
  return worst;
}

// True when more rounds would not move a median across the tie window: the standard error of a
// median of n samples is about 1.25 sigma / sqrt(n), and sigma about IQR / 1.35, so at n = 7 an
// interquartile range under half the window puts the error of a difference of two medians at a
// quarter of it. Long launches of a large problem are this quiet after `repeats` rounds, so they
// stop there; short, jittery launches get up to 2 x repeats.
bool quiet_against_tie(const std::vector<std::vector<double>>& samples, double tie) {
  for (const auto& s : samples)
    if (s.size() < 4) return false;
  return relative_spread(samples) <= 0.5 * tie;
}

}  // namespace

double tie_window(double relative_iqr, int rounds) {
  // Two standard errors of a difference of two medians of `rounds` samples (1.3 IQR / sqrt(n),
  // from quiet_against_tie's figures): below that, which contender is faster is not known, and
  // the simplest one is picked as for a tie. Quiet launches (a large problem) keep kTieWindow;
  // short, jittery ones (2^20 elements, a few microseconds) get the window their noise allows.
  if (rounds < 1) return kTieWindow;
  return std::max(kTieWindow, 2.6 * relative_iqr / std::sqrt(static_cast<double>(rounds)));
}

namespace {

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// The configurations to re-measure together: the 4 fastest and the 20 simplest within the noise
// window of the fastest. The top of the landscape is often flat (dozens of configs within 1 %),
// so which few are fastest is noise; the simplest ones make the tie rule see the same
// candidates in every run.
std::vector<CandidateResult> contenders_of(const std::vector<CandidateResult>& results) {
  const CandidateResult* fastest = nullptr;
  for (const auto& r : results)
    if (r.ok && (!fastest || r.median_ms < fastest->median_ms)) fastest = &r;
  if (!fastest) return {};
  const double noise = std::max(0.02, 2.0 * fastest->spread_ms / fastest->median_ms);
  std::vector<CandidateResult> window;
  for (const auto& r : results)
    if (r.ok && r.median_ms <= fastest->median_ms * (1.0 + noise)) window.push_back(r);
  std::sort(window.begin(), window.end(),
            [](const CandidateResult& a, const CandidateResult& b) { return a.median_ms < b.median_ms; });
  std::vector<CandidateResult> out(window.begin(), window.begin() + std::min<std::size_t>(4, window.size()));
  std::vector<CandidateResult> rest(window.begin() + static_cast<std::ptrdiff_t>(out.size()), window.end());
  std::stable_sort(rest.begin(), rest.end(),
                   [](const CandidateResult& a, const CandidateResult& b) { return simpler(a.config, b.config); });
  for (std::size_t i = 0; i < rest.size() && i < 20; ++i) out.push_back(rest[i]);
  return out;
}

// Successive halving over repeats: every survivor gets more samples each round (1, 1, 2, 4, ...),
// then the slower half is dropped, except that the contenders (4 fastest and 20 simplest within
// the noise window) always survive, so the tie rule later sees what exhaustive would show it.
// Ends when a round drops nothing or the survivors have `repeats` samples.
struct Halving {
  CandidateMeasurer& m;
  const TuneOptions& o;
  TuneTimes& times;
  std::function<void(std::size_t, std::size_t, const std::string&)> report;

  // Verifies (a wrong kernel's time never counts), then halves; returns survivors with medians.
  std::vector<CandidateResult> run(std::vector<CandidateResult> alive, int level, std::size_t keep_at_least,
                                   std::vector<CandidateResult>& rejected) {
    std::vector<CandidateResult> checked;
    for (auto& r : alive) {
      auto t0 = Clock::now();
      r.rejection = m.prepare({r.config})[0];  // waits for the background compile, if any
      times.compile_s += seconds_since(t0);
      if (r.rejection.empty()) r.rejection = m.verify(r.config, level);
      if (!r.rejection.empty()) {
        r.ok = false;
        rejected.push_back(r);
        continue;
      }
      r.ok = true;
      m.sample(r.config, level);  // warm-up
      checked.push_back(r);
    }
    std::vector<std::vector<double>> samples(checked.size());
    alive = checked;
    for (int round = 0, taken = 0; !alive.empty(); ++round) {
      const int more = round == 0 ? 1 : std::min(1 << (round - 1), std::max(1, o.repeats - taken));
      report(alive.size(), static_cast<std::size_t>(round), level ? "halving at a smaller n" : "halving");
      for (int k = 0; k < more; ++k)
        for (std::size_t i = 0; i < alive.size(); ++i) {
          samples[i].push_back(m.sample(alive[i].config, level));
          ++times.samples;
        }
      taken += more;
      for (std::size_t i = 0; i < alive.size(); ++i) {
        const Timing t = summarize(samples[i]);
        alive[i].median_ms = t.median_ms;
        alive[i].spread_ms = samples[i].size() > 2 ? t.max_ms - t.min_ms : 0;
      }
      if (taken >= o.repeats || alive.size() <= keep_at_least) break;
      std::vector<std::size_t> order(alive.size());
      for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
      std::stable_sort(order.begin(), order.end(),
                       [&](std::size_t a, std::size_t b) { return alive[a].median_ms < alive[b].median_ms; });
      std::vector<bool> keep(alive.size(), false);
      const std::size_t half = std::max(keep_at_least, (alive.size() + 1) / 2);
      for (std::size_t i = 0; i < half && i < order.size(); ++i) keep[order[i]] = true;
      for (const auto& c : contenders_of(alive))
        for (std::size_t i = 0; i < alive.size(); ++i)
          if (alive[i].config == c.config) keep[i] = true;
      for (std::size_t i = 0; i < alive.size(); ++i)
        if (o.baseline && alive[i].config == *o.baseline) keep[i] = true;
      std::vector<CandidateResult> next;
      std::vector<std::vector<double>> next_samples;
      for (std::size_t i = 0; i < alive.size(); ++i) {
        if (keep[i]) {
          next.push_back(alive[i]);
          next_samples.push_back(samples[i]);
        } else {
          alive[i].rejection = "dropped early: slower than half of round " + std::to_string(round + 1);
          dropped.push_back(alive[i]);
        }
      }
      if (next.size() == alive.size()) break;
      alive = std::move(next);
      samples = std::move(next_samples);
    }
    return alive;
  }
  std::vector<CandidateResult> dropped;  // measured, kept in the record with their partial medians
};

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

SearchOutcome search(CandidateMeasurer& m, const std::vector<KernelConfig>& space, const TuneOptions& o,
                     std::vector<CandidateResult> results, const std::function<void(const CandidateResult&)>& save,
                     TuneTimes* times_out) {
  if (o.repeats < 3 || o.warmup < 0) throw Error(ErrorCode::invalid_argument, "--repeat must be >= 3, --warmup >= 0");
  if (space.empty()) throw Error(ErrorCode::invalid_config, "the search space is empty");
  TuneTimes local_times;
  TuneTimes& times = times_out ? *times_out : local_times;
  const StrategyDef& def = find_strategy(o.strategy);
  const bool early = !def.one_by_one();
  std::unique_ptr<SearchStrategy> strategy;
  if (!early) strategy = make_strategy(def.name, space, o.budget, o.seed);

  const auto start = Clock::now();
  std::size_t measured_here = 0;
  TuneProgress progress;
  auto report = [&](std::size_t done, std::size_t pending) {
    if (!o.progress) return;
    progress.done = done;
    progress.total = done + pending;
    const double per = measured_here ? seconds_since(start) / static_cast<double>(measured_here) : 0;
    progress.eta_seconds = per * static_cast<double>(pending);
    o.progress(progress);
  };
  auto note_best = [&](const CandidateResult& r) {
    const double gbps = r.ok && r.median_ms > 0 ? m.bytes_moved() / (r.median_ms * 1e6) : 0;
    if (r.ok && (!progress.have_best || gbps > progress.best_gbps)) {
      progress.have_best = true;
      progress.best = r.config;
      progress.best_gbps = gbps;
    }
  };
  for (const auto& r : results) note_best(r);

  if (early) {
    progress.phase = "compile";
    report(0, space.size());
    const auto t0 = Clock::now();
    const double compile_before = times.compile_s;  // waits inside the rounds count as compile
    m.prefetch(space);                              // compiles while the first round measures what is ready
    std::vector<CandidateResult> alive, rejected;
    for (const auto& c : space) {
      CandidateResult r;
      r.config = c;
      alive.push_back(r);
    }
    Halving h{m, o, times, {}, {}};
    h.report = [&](std::size_t survivors, std::size_t round, const std::string& phase) {
      progress.phase = phase + ", round " + std::to_string(round + 1);
      measured_here = round;
      report(space.size() - survivors, survivors);
    };
    if (m.levels() > 1) alive = h.run(alive, 1, 24, rejected);  // rank at the smaller n first
    alive = h.run(alive, 0, 4, rejected);
    results = rejected;
    results.insert(results.end(), h.dropped.begin(), h.dropped.end());
    for (auto& r : results)
      if (r.rejection.rfind("dropped early", 0) == 0) r.ok = false;  // partial times never compete
    results.insert(results.end(), alive.begin(), alive.end());
    for (const auto& r : alive) note_best(r);
    times.measure_s += seconds_since(t0) - (times.compile_s - compile_before);
  } else {
    std::vector<Measurement> history;
    history.reserve(results.size());
    double best_ms = 0;  // the fastest verified median so far (resumed results count)
    for (const auto& r : results) {
      history.push_back({r.config, r.ok, r.median_ms});
      if (r.ok && r.median_ms > 0 && (best_ms <= 0 || r.median_ms < best_ms)) best_ms = r.median_ms;
    }
    progress.phase = "measure";
    for (std::vector<KernelConfig> batch; !(batch = strategy->next(history)).empty();) {
      m.prefetch(batch);  // compiles in the background, in order, while the loop below measures
      for (std::size_t i = 0; i < batch.size(); ++i) {
        report(results.size(), batch.size() - i);
        CandidateResult r;
        r.config = batch[i];
        auto t0 = Clock::now();
        r.rejection = m.prepare({r.config})[0];
        times.compile_s += seconds_since(t0);
        t0 = Clock::now();
        if (r.rejection.empty()) r.rejection = m.verify(r.config, 0);
        if (r.rejection.empty()) {
          // The verification launch is the first warm-up. A candidate gets kSamplesEach samples,
          // fewer when clearly slower; the contenders get more, together, below.
          for (int w = 1; w < o.warmup; ++w) m.sample(r.config, 0);
          std::vector<double> s;
          s.reserve(static_cast<std::size_t>(kSamplesEach));
          for (int k = 0; k < kSamplesEach; ++k) {
            s.push_back(m.sample(r.config, 0));
            // Even its fastest sample clearly slower than the best median: never a contender.
            if (k >= 1 && best_ms > 0 && *std::min_element(s.begin(), s.end()) > best_ms * (1.0 + kClearlySlower))
              break;
          }
          times.samples += s.size();
          const Timing t = summarize(s);
          r.ok = true;
          r.median_ms = t.median_ms;
          r.spread_ms = t.max_ms - t.min_ms;
          if (best_ms <= 0 || r.median_ms < best_ms) best_ms = r.median_ms;
        }
        if (save) save(r);
        results.push_back(r);
        history.push_back({r.config, r.ok, r.median_ms});
        note_best(r);
        ++measured_here;
        times.measure_s += seconds_since(t0);
      }
    }
  }
  report(results.size(), 0);

  // Contenders within the noise of the fastest are re-measured together, interleaved.
  const auto t_re = Clock::now();
  std::vector<CandidateResult> contenders = contenders_of(results);
  if (contenders.empty()) throw Error(ErrorCode::verification_failed, "no candidate produced correct output");
  if (o.baseline) {  // the untuned default competes in the same interleaved rounds
    auto is_baseline = [&](const CandidateResult& r) { return r.ok && r.config == *o.baseline; };
    const auto it = std::find_if(results.begin(), results.end(), is_baseline);
    if (it != results.end() && std::none_of(contenders.begin(), contenders.end(), is_baseline))
      contenders.push_back(*it);
  }
  progress.phase = "re-measure";
  report(results.size(), 0);
  {
    std::vector<std::vector<double>> samples(contenders.size());
    for (std::size_t i = 0; i < contenders.size(); ++i) m.sample(contenders[i].config, 0);  // warm after the others
    int round = 0;
    while (round < 2 * o.repeats && (round < o.repeats || !quiet_against_tie(samples, kTieWindow))) {
      for (std::size_t i = 0; i < contenders.size(); ++i) samples[i].push_back(m.sample(contenders[i].config, 0));
      ++round;
    }
    times.samples += static_cast<std::size_t>(round) * contenders.size();
    times.remeasure_rounds = round;
    times.contender_spread = relative_spread(samples);
    times.contenders = contenders.size();
    for (std::size_t i = 0; i < contenders.size(); ++i) {
      const Timing t = summarize(samples[i]);
      contenders[i].median_ms = t.median_ms;
      contenders[i].spread_ms = t.max_ms - t.min_ms;
    }
  }
  times.remeasure_s += seconds_since(t_re);
  SearchOutcome out;
  out.winner = pick_winner(contenders, tie_window(times.contender_spread, times.remeasure_rounds));
  for (auto& r : results)  // the record keeps the re-measured times of the contenders
    for (const auto& c : contenders)
      if (r.config == c.config) r = c;
  for (auto& r : results) r.gbps = r.ok && r.median_ms > 0 ? m.bytes_moved() / (r.median_ms * 1e6) : 0;
  out.winner.gbps = m.bytes_moved() / (out.winner.median_ms * 1e6);
  out.candidates = std::move(results);
  out.strategy = def.name;
  return out;
}

bool ended_the_process(const CandidateResult& c) {
  return !c.ok && (c.rejection.rfind(kTimedOut, 0) == 0 || c.rejection.rfind(kCrashed, 0) == 0);
}

std::vector<KernelConfig> with_baseline(std::vector<KernelConfig> space, const KernelConfig& baseline) {
  if (std::find(space.begin(), space.end(), baseline) == space.end()) space.push_back(baseline);
  return space;
}

TuningRecord tune(Engine& engine, KernelDatabase& db, const KernelSpec& asked, const TuneOptions& o,
                  TuneTimes* times_out) {
  const KernelSpec spec = tuning_spec(asked);  // a tier's backward may be the exact kernel
  if (o.n == 0) throw Error(ErrorCode::invalid_argument, "cannot tune for 0 elements");
  if (o.repeats < 3 || o.warmup < 0) throw Error(ErrorCode::invalid_argument, "--repeat must be >= 3, --warmup >= 0");
  const StrategyDef& def = find_strategy(o.strategy);
  const TargetLimits& limits = engine.backend().limits();
  const bool row = is_row(spec);
  const std::uint64_t rows = o.rows ? o.rows : 1;
  if (row && o.n % rows)
    throw Error(ErrorCode::invalid_argument,
                std::to_string(o.n) + " elements are not " + std::to_string(rows) + " rows of equal length");
  std::vector<KernelConfig> space =
      row ? o.row_space.enumerate(spec, limits, rows, o.n / rows) : o.space.enumerate(spec, limits);
  if (def.widest_vector_only) space = widest_vectors(space);
  if (space.empty()) throw Error(ErrorCode::invalid_config, "the search space is empty for " + to_string(spec));
  if (def.one_by_one()) make_strategy(def.name, space, o.budget, o.seed);  // checks the budget
  TuneOptions options = o;
  // The untuned config: what choose_row_config serves without the user's database (the shipped
  // tuning where it holds these rows, else the row default), or untuned_config's.
  if (!options.baseline)
    options.baseline = resolve_config(spec,
                                      row ? choose_row_config(nullptr, engine, spec, rows, o.n / rows).config
                                          : untuned_config(engine, spec, o.n).config,
                                      limits);
  space = with_baseline(std::move(space), *options.baseline);
  const std::string key = run_key(engine, spec, o);
  TuneTimes local_times;
  TuneTimes& times = times_out ? *times_out : local_times;

  // Writes to the database: the first that fails (disk full, read-only) ends the writing for this
  // job, and the measurements stay in the record returned.
  auto store = [&](const std::function<void()>& write) {
    if (!times.not_stored.empty()) return;
    try {
      write();
    } catch (const Error& e) {
      if (e.code() != ErrorCode::io_failed) throw;
      times.not_stored = e.what();
    }
  };
  if (!o.resume) store([&] { db.clear_progress(key); });  // an interrupted run's candidates are not resumed

  // Candidates measured by an interrupted run of the same job. Resume applies to the strategies
  // that measure candidate by candidate; the early-stopping schedules take seconds and start over,
  // but skip the candidates that timed out, as every strategy does.
  const bool resumable = def.one_by_one();
  std::vector<CandidateResult> progress = o.resume ? db.load_progress(key) : std::vector<CandidateResult>{};
  std::vector<CandidateResult> timed_out;
  bool finished_any = false;
  for (const auto& c : progress) {
    if (ended_the_process(c)) timed_out.push_back(c);
    finished_any = finished_any || c.ok;
  }
  for (const auto& t : timed_out)
    if (t.config == *options.baseline)
      throw Error(ErrorCode::runtime_failed,
                  "the default config " + to_string(t.config) +
                      (timed_out.size() > 1 ? " and " + std::to_string(timed_out.size() - 1) + " other candidate(s)"
                                            : std::string()) +
                      " of " + to_string(spec) +
                      (t.rejection.rfind(kCrashed, 0) == 0
                           ? " crashed the process: the kernel most likely crashes in every config"
                           : " ran longer than --timeout: the kernel most likely never ends"));
  std::vector<CandidateResult> resumed = resumable ? progress : std::vector<CandidateResult>{};
  if (!resumable)
    for (const auto& t : timed_out) space.erase(std::remove(space.begin(), space.end(), t.config), space.end());

  const std::string timeout_text = [] {
    char text[64];
    std::snprintf(text, sizeof text, "%s: still running after --timeout (%g s)", kTimedOut,
                  watchdog::timeout_seconds());
    return std::string(text);
  }();
  // Runs on a watchdog thread while this one waits on the device forever, or on the crash reporter
  // while the faulting thread is held in its signal handler.
  auto record_timeout = [&db, &times, key, timeout_text](const KernelConfig& c, const watchdog::Failure& f) {
    if (!times.not_stored.empty() || !db.persistent()) return false;
    CandidateResult r;
    r.config = c;
    r.rejection = f.crashed() ? std::string(kCrashed) + ": the kernel crashed the process (signal " +
                                    std::to_string(f.signal) + ")"
                              : timeout_text;
    db.save_progress(key, r);
    return true;
  };

  const auto t_setup = Clock::now();
  DeviceMeasurer measurer(engine, spec, options, times, record_timeout);
  std::vector<double> copy_samples = measurer.copy_samples(o.repeats);
  times.setup_s += seconds_since(t_setup);
  // Candidates timed out and none finished: the default config goes first. Should it never end
  // either, the watchdog records it and the next process fails the job (above).
  if (!timed_out.empty() && !finished_any) measurer.verify(*options.baseline, 0);

  SearchOutcome found = search(
      measurer, space, options, resumed, [&](const CandidateResult& r) { store([&] { db.save_progress(key, r); }); },
      &times);
  if (!resumable) found.candidates.insert(found.candidates.end(), timed_out.begin(), timed_out.end());

  const std::vector<double> more_copy = measurer.copy_samples(o.repeats);
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
  rec.best = found.winner.config;
  rec.best_ms = found.winner.median_ms;
  rec.best_gbps = found.winner.gbps;
  rec.copy_gbps = measurer.copy_bytes_moved() / (copy.median_ms * 1e6);
  rec.strategy = found.strategy;
  rec.created_unix = static_cast<std::int64_t>(std::time(nullptr));
  rec.candidates = found.candidates;
  store([&] { db.put_device(rec.fingerprint, dev); });
  store([&] { db.save_tuning(rec); });
  store([&] { db.clear_progress(key); });
  return rec;
}

std::string verify_config(Engine& engine, const KernelSpec& spec, const KernelConfig& config, std::uint64_t n,
                          std::uint64_t seed, std::uint64_t rows) {
  ProblemShape shape;
  shape.n = n;
  shape.rows = rows;
  shape.seed = seed;
  const auto problem = make_problem(engine.backend(), spec, shape);
  return launch_and_check(engine, *engine.prepare(spec, config), *problem);
}

KernelConfig binary_identity(const KernelSpec& spec, KernelConfig c) {
  if (is_row(spec)) return c;
  c.grid = GridPolicy::one_shot;
  c.waves = 0;
  return c;
}

}  // namespace kplay
