// The autotuner's logic without a device (search space, strategies, the tie rule), and end to end
// on OpenCL (PoCL in CI): results are stored, served back, and an interrupted run resumes.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <string>
#include <tuple>

#include "check/problem.hpp"
#include "codegen/template_store.hpp"
#include "device_fixture.hpp"
#include "hopper_device.hpp"
#include "kplay/error.hpp"
#include "temp_templates.hpp"
#include "tuner/config_lookup.hpp"
#include "tuner/default_model.hpp"
#include "tuner/search_space.hpp"
#include "tuner/strategies.hpp"
#include "tuner/tuner.hpp"

using namespace kplay;

namespace {
KernelSpec spec_of(Dtype d) {
  KernelSpec s;
  s.dtype = d;
  return s;
}

rt::Backend& opencl_backend() {
  rt::Backend* be = test::shared_backend("opencl");
  REQUIRE(be != nullptr);
  return *be;
}
KernelDatabase::Options in_memory() {
  KernelDatabase::Options o;
  o.path = ":memory:";
  return o;
}
// A short tuning run: few candidates, three samples each.
TuneOptions short_run(std::uint64_t n, const char* strategy, int budget) {
  TuneOptions o;
  o.n = n;
  o.strategy = strategy;
  o.budget = budget;
  o.repeats = 3;
  return o;
}
// A tuning run's setting: the shared OpenCL device and a database of its own, in memory.
struct OpenClTuning {
  KernelDatabase db{in_memory()};
  Engine engine{opencl_backend(), &db};
};
}  // namespace

TEST_CASE("the search space honours every constraint, per dtype and backend") {
  SearchSpace space;
  TargetLimits cuda;
  const auto f32 = space.enumerate(spec_of(Dtype::f32), cuda);
  CHECK(f32.size() > 100);
  std::set<std::string> seen;
  for (const auto& c : f32) {
    CHECK(c.vec * 4 <= 16);
    CHECK(c.per_thread * c.vec * 4 <= 128);
    CHECK_FALSE(c.fast_math);                 // never searched
    CHECK(seen.insert(to_string(c)).second);  // no duplicates
  }
  for (const auto& c : space.enumerate(spec_of(Dtype::f64), cuda)) CHECK(c.vec >= 1);
  TargetLimits opencl;
  opencl.backend = "opencl";
  opencl.cache_hints = false;
  opencl.max_block = 256;
  for (const auto& c : space.enumerate(spec_of(Dtype::f32), opencl)) {
    CHECK(c.cache == CacheHint::normal);
    CHECK(c.block <= 256);
  }
  CHECK(search_constraints().size() >= 4);
}

TEST_CASE("the tuner times problems that fit in the L2 warm on one buffer set, larger ones cold") {
  rt::DeviceInfo h200;
  h200.l2_bytes = 50ull << 20;
  h200.memory_bytes = 141ull << 30;
  // 2^20 float32 elements forward (4 MB in, 4 MB out): one set, launched back to back.
  const TunerTiming warm = tuner_timing(h200, 8ull << 20);
  CHECK(warm.sets == 1);
  CHECK(warm.launches == kWarmLaunches);
  // 2^22 float32 elements, forward (32 MB) and backward (g, x and grad_in: 48 MB), sit in the
  // H200's L2 between layers, as perf_table times them.
  CHECK(tuner_timing(h200, 32ull << 20).launches == kWarmLaunches);
  CHECK(tuner_timing(h200, 48ull << 20).launches == kWarmLaunches);
  CHECK(tuner_timing(h200, 50ull << 20).launches == kWarmLaunches);
  // Past the L2: enough sets to cover 4x the L2, one launch on each.
  const TunerTiming cold = tuner_timing(h200, (50ull << 20) + 1);
  CHECK(cold.launches == 1);
  CHECK(cold.sets == 4);
  CHECK(tuner_timing(h200, 64ull << 20).sets == 4);  // 200 MB over 64 MB sets
  CHECK(tuner_timing(h200, 96ull << 20).sets == 3);
  CHECK(tuner_timing(h200, 1ull << 30).sets == 1);
  // ... and at most a quarter of the device's memory.
  rt::DeviceInfo small = h200;
  small.memory_bytes = 256ull << 20;
  CHECK(tuner_timing(small, 51ull << 20).sets == 1);  // 64 MB a quarter: one set, not 4
  // A device that reports no L2 size is taken to have 64 MB.
  rt::DeviceInfo unknown;
  CHECK(tuner_timing(unknown, 64ull << 20).launches == kWarmLaunches);
  CHECK(tuner_timing(unknown, (64ull << 20) + 1).launches == 1);
}

TEST_CASE("exhaustive and random strategies: all, or a deterministic budget, then done") {
  const auto space = SearchSpace{}.enumerate(spec_of(Dtype::f32), TargetLimits{});
  auto ex = make_strategy("exhaustive", space, 10, 1);
  auto batch = ex->next({});
  CHECK(batch.size() == space.size());
  std::vector<Measurement> all;
  for (const auto& c : batch) all.push_back({c, true, 1.0});
  CHECK(ex->next(all).empty());

  auto r1 = make_strategy("random", space, 12, 42)->next({});
  auto r2 = make_strategy("random", space, 12, 42)->next({});
  auto r3 = make_strategy("random", space, 12, 43)->next({});
  CHECK(r1.size() == 12);
  CHECK(std::equal(r1.begin(), r1.end(), r2.begin()));
  CHECK_FALSE(std::equal(r1.begin(), r1.end(), r3.begin()));
  CHECK_THROWS_AS(make_strategy("annealing", space, 10, 1), Error);
}

TEST_CASE("local search walks one knob at a time to the optimum of a synthetic cost") {
  const auto space = SearchSpace{}.enumerate(spec_of(Dtype::f32), TargetLimits{});
  // Cost: best at block 128, per-thread 2, vec 4, one-shot, default cache.
  auto cost = [](const KernelConfig& c) {
    double t = 1.0;
    t += c.block == 128 ? 0 : 0.1 + 0.001 * c.block;
    t += c.per_thread == 2 ? 0 : 0.05 * c.per_thread;
    t += c.vec == 4 ? 0 : 0.3;
    t += c.grid == GridPolicy::one_shot ? 0 : 0.2;
    t += c.cache == CacheHint::normal ? 0 : 0.01;
    return t;
  };
  auto local = make_strategy("local", space, 200, 1);
  std::vector<Measurement> h;
  for (auto batch = local->next(h); !batch.empty(); batch = local->next(h))
    for (const auto& c : batch) h.push_back({c, true, cost(c)});
  const auto best = std::min_element(h.begin(), h.end(), [](auto& a, auto& b) { return a.median_ms < b.median_ms; });
  CHECK(best->config.block == 128);
  CHECK(best->config.per_thread == 2);
  CHECK(best->config.vec == 4);
  CHECK(h.size() < space.size() / 3);    // far fewer measurements than exhaustive
  CHECK(h.front().config.block == 256);  // it starts from the built-in default
}

TEST_CASE("the winner is the simplest config within 1 % of the fastest") {
  std::vector<CandidateResult> c(3);
  c[0].config.per_thread = 4;  // fastest, but not the simplest
  c[0].ok = true;
  c[0].median_ms = 1.000;
  c[1].config.per_thread = 1;  // within 1 %: wins
  c[1].ok = true;
  c[1].median_ms = 1.008;
  c[2].config.per_thread = 1;
  c[2].config.block = 128;  // further from 256: loses the tie to c[1]
  c[2].ok = true;
  c[2].median_ms = 1.005;
  CHECK(pick_winner(c).config.per_thread == 1);
  CHECK(pick_winner(c).config.block == 256);
  c[1].median_ms = 1.02;  // out of the tie: the faster ones decide
  c[2].median_ms = 1.03;
  CHECK(pick_winner(c).config.per_thread == 4);
  for (auto& r : c) r.ok = false;
  CHECK_THROWS_AS(pick_winner(c), Error);
}

TEST_CASE("the tie window is 1 % for quiet timings and widens with the noise it cannot resolve") {
  // Quiet: the interquartile range under half the window (quiet_against_tie), any round count.
  CHECK(tie_window(0.004, 7) == kTieWindow);
  CHECK(tie_window(0.0, 14) == kTieWindow);
  CHECK(tie_window(0.5, 0) == kTieWindow);
  // Noisy short launches: wider, more so for more noise, less so for more rounds.
  const double noisy = tie_window(0.10, 14);
  CHECK(noisy > kTieWindow);
  CHECK(tie_window(0.20, 14) > noisy);
  CHECK(tie_window(0.10, 28) < noisy);
  // In that window the simpler config wins over a faster-looking one.
  std::vector<CandidateResult> c(2);
  c[0].config.per_thread = 4;
  c[0].config.block = 1024;
  c[0].ok = true;
  c[0].median_ms = 1.00;
  c[1].ok = true;
  c[1].median_ms = 1.04;
  CHECK(pick_winner(c, kTieWindow).config.per_thread == 4);
  CHECK(pick_winner(c, noisy).config.per_thread == 1);
}

TEST_SUITE("opencl") {
  TEST_CASE("OpenCL: autotune end to end stores a verified winner that kplay then serves") {
    OpenClTuning t;
    KernelDatabase& db = t.db;
    Engine& engine = t.engine;
    KernelSpec spec;
    spec.activation = "relu";
    const TuningRecord rec = tune(engine, db, spec, short_run(50000, "local", 5));
    CHECK(rec.candidates.size() == 5);
    CHECK(rec.best_gbps > 0);
    CHECK(rec.copy_gbps > 0);
    for (const auto& c : rec.candidates) CHECK(c.ok);
    const ConfigChoice choice = choose_config(&db, engine, spec, 60000);
    CHECK(choice.config == rec.best);
    CHECK(choice.source.find("tuned on this device") != std::string::npos);
    KernelSpec other = spec;
    other.dtype = Dtype::bf16;
    CHECK(choose_config(&db, engine, other, 60000).source.find("built-in default") != std::string::npos);
  }

  TEST_CASE("OpenCL: the tuner verifies on the check's inputs what it times on ordinary ones") {
    // relu as a plain `x > 0 ? x : 0`, which turns NaN into 0: right on every ordinary input, which
    // holds no NaN, and wrong on the check's, which do.
    test::TempTemplates templates;
    std::string relu = template_text("activations/relu.h");
    const std::string keeps_nan = "(x > KP_LIT(0.0) || x != x)";
    REQUIRE(relu.find(keeps_nan) != std::string::npos);
    relu.replace(relu.find(keeps_nan), keeps_nan.size(), "(x > KP_LIT(0.0))");
    templates.write("activations/relu.h", relu);
    OpenClTuning t;
    KernelSpec spec;
    spec.activation = "relu";
    ProblemShape ordinary;
    ordinary.n = 50000;
    ordinary.ordinary = true;
    const auto p = make_problem(t.engine.backend(), spec, ordinary);
    p->launch(t.engine, *t.engine.prepare(spec, {}));
    t.engine.backend().synchronize();
    CHECK(p->verify(false).mismatches == 0);
    CHECK_THROWS_AS(tune(t.engine, t.db, spec, short_run(50000, "local", 3)), Error);
  }

  TEST_CASE("OpenCL: an accuracy=torch kernel takes the exact kernel's tuning until it is tuned on its own") {
    OpenClTuning t;
    KernelSpec exact, tier;
    exact.activation = "silu";
    tier.activation = "silu(accuracy=torch)";
    TuneOptions o = short_run(50000, "random", 4);
    // Each run's space (and baseline) of one block size, so that the two records differ.
    o.space.blocks = {64};
    o.space.per_thread = {1};
    KernelConfig base;
    base.vec = 4;
    base.block = 64;
    o.baseline = base;
    const TuningRecord exact_rec = tune(t.engine, t.db, exact, o);
    CHECK(exact_rec.best.block == 64);
    const ConfigChoice borrowed = choose_config(&t.db, t.engine, tier, 60000);
    CHECK(borrowed.config == exact_rec.best);
    CHECK(borrowed.layer == "user");
    CHECK(borrowed.source.find("the tuning of 'silu' (none of its own)") != std::string::npos);
    o.space.blocks = {128};
    o.space.per_thread = {2};
    base.block = 128;
    base.per_thread = 2;
    o.baseline = base;
    const TuningRecord tier_rec = tune(t.engine, t.db, tier, o);
    CHECK(tier_rec.best.block == 128);
    CHECK(tier_rec.best.per_thread == 2);
    for (const auto& c : tier_rec.candidates) CHECK(c.ok);  // verified against the tier's own bound
    const ConfigChoice own = choose_config(&t.db, t.engine, tier, 60000);
    CHECK(own.config == tier_rec.best);
    CHECK(own.source.find("none of its own") == std::string::npos);
    CHECK(choose_config(&t.db, t.engine, exact, 60000).config == exact_rec.best);
  }

  TEST_CASE("OpenCL: a tier's backward is tuned as its own text where it has a kernel, else as the exact text") {
    // silu's tier has a backward kernel of its own; hardswish's backward is the exact kernel
    for (const auto& [text, exact_text, own] :
         {std::tuple<const char*, const char*, bool>{"silu(accuracy=torch)", "silu", true},
          {"hardswish(accuracy=torch)", "hardswish", false}}) {
      INFO(text);
      OpenClTuning t;
      KernelSpec tier;
      tier.activation = text;
      tier.direction = Direction::backward;
      const TuningRecord rec = tune(t.engine, t.db, tier, short_run(50000, "random", 3));
      CHECK(rec.spec.activation == (own ? text : exact_text));
      const ConfigChoice served = choose_config(&t.db, t.engine, tier, 60000);
      CHECK(served.config == rec.best);
      CHECK(served.layer == "user");
      const std::string note =
          std::string("the tuning of '") + exact_text + "' (accuracy=torch changes the forward alone)";
      CHECK((served.source.find(note) != std::string::npos) == !own);
      KernelSpec exact = tier;  // the exact text is served the record only where it was tuned as it
      exact.activation = exact_text;
      CHECK((choose_config(&t.db, t.engine, exact, 60000).layer == "user") == !own);
    }
  }

  TEST_CASE("OpenCL: the halving and fast schedules run end to end and store a verified winner") {
    OpenClTuning t;
    KernelDatabase& db = t.db;
    Engine& engine = t.engine;
    KernelSpec spec;
    TuneOptions o;
    o.n = 30000;
    o.repeats = 3;
    o.space.blocks = {64, 128};  // a small space keeps PoCL's compiles short
    o.space.per_thread = {1, 2};
    o.space.vec_bytes = {16};
    for (const char* strategy : {"halving", "fast"}) {
      o.strategy = strategy;
      TuneTimes times;
      const TuningRecord rec = tune(engine, db, spec, o, &times);
      CHECK(rec.strategy == strategy);
      CHECK(rec.candidates.size() == 4 * 3);  // 2 blocks x 2 per-thread x 3 grids
      CHECK(times.binaries <= 4);             // the grid policy shares a binary
      CHECK(rec.best_gbps > 0);
      CHECK(choose_config(&db, engine, spec, o.n).config == rec.best);
    }
  }

  TEST_CASE("OpenCL: a tuning run interrupted halfway resumes from the candidates already measured") {
    OpenClTuning t;
    KernelDatabase& db = t.db;
    Engine& engine = t.engine;
    KernelSpec spec;
    TuneOptions o;
    o.n = 20000;
    o.strategy = "random";
    o.budget = 6;
    o.repeats = 3;
    struct Interrupt {};
    o.progress = [](const TuneProgress& p) {
      if (p.done == 3) throw Interrupt{};  // as if killed after three candidates
    };
    CHECK_THROWS_AS(tune(engine, db, spec, o), Interrupt);
    std::size_t first_done = SIZE_MAX;
    o.progress = [&](const TuneProgress& p) {
      if (first_done == SIZE_MAX) first_done = p.done;
    };
    const TuningRecord rec = tune(engine, db, spec, o);
    CHECK(first_done == 3);  // the three measured before the interruption were not redone
    CHECK(rec.candidates.size() == 6);
  }
}

namespace {
// A fixed synthetic timing model instead of a device: a landscape with a flat top (many configs
// within 1 %), a few configs that fail verification or compilation, deterministic jitter per
// sample, and a smaller problem (level 1) whose ranking differs from the full one by up to 3 %.
class SyntheticMeasurer : public CandidateMeasurer {
 public:
  explicit SyntheticMeasurer(int levels) : levels_(levels) {}
  int levels() const override { return levels_; }
  std::vector<std::string> prepare(const std::vector<KernelConfig>& configs) override {
    std::vector<std::string> out;
    for (const auto& c : configs) out.push_back(c.block == 1024 && c.per_thread == 8 ? "does not compile: regs" : "");
    prepared += configs.size();
    return out;
  }
  std::string verify(const KernelConfig& c, int) override {
    return c.block == 512 && c.per_thread == 2 && c.vec == 4 ? "wrong output: 3 mismatches" : "";
  }
  double sample(const KernelConfig& c, int level) override {
    ++samples;
    device_ms += level == 1 ? 1.0 / 16 : 1.0;  // "fast"'s smaller problem is 1/16 of n
    double t = cost(c);
    if (level == 1) t *= 1.0 + 0.03 * static_cast<double>(hash(c) % 100) / 100.0;  // a distorted ranking
    const double jitter = 0.0005 * static_cast<double>((hash(c) + samples * 7919) % 11) / 10.0;
    return t * (1.0 + jitter);
  }
  std::vector<double> copy_samples(int repeats) override { return std::vector<double>(repeats, 1.0); }
  double bytes_moved() const override { return 8e6; }

  static double cost(const KernelConfig& c) {
    double t = 1.0;
    t += c.vec == 4 ? 0 : 0.4 / c.vec;
    t += c.block >= 1024 ? 0.09 : 0.0;
    t += c.block == 64 ? 0.004 : 0.0;                   // inside the tie window: block 64 never beats simpler ones
    t += c.per_thread == 2 ? 0 : 0.003 * c.per_thread;  // the fastest is pt 2, pt 1 within 1 %
    t += c.grid == GridPolicy::one_shot ? 0 : 0.08 + 0.005 * c.waves;
    t += c.cache == CacheHint::normal ? 0 : 0.002;
    return t;
  }
  std::size_t samples = 0, prepared = 0;
  double device_ms = 0;  // what the samples would cost on a device

 private:
  static std::uint64_t hash(const KernelConfig& c) {
    return static_cast<std::uint64_t>(c.vec * 7 + c.block * 13 + c.per_thread * 31 + c.waves * 101 +
                                      (c.cache == CacheHint::streaming) * 997);
  }
  int levels_;
};

SearchOutcome synthetic_search(const std::string& strategy, SyntheticMeasurer& m) {
  TuneOptions o;
  o.strategy = strategy;
  o.repeats = 7;
  return search(m, SearchSpace{}.enumerate(spec_of(Dtype::f32), TargetLimits{}), o);
}
}  // namespace

TEST_CASE("early stopping picks exhaustive's winner on a synthetic timing model with far fewer samples") {
  SyntheticMeasurer ex_m(1), halving_m(1), fast_m(2);
  const SearchOutcome ex = synthetic_search("exhaustive", ex_m);
  const SearchOutcome halving = synthetic_search("halving", halving_m);
  const SearchOutcome fast = synthetic_search("fast", fast_m);
  // The winner is the simplest within 1 % of the fastest: per-thread 1 beats the faster pt 2.
  CHECK(ex.winner.config.per_thread == 1);
  CHECK(ex.winner.config.vec == 4);
  CHECK(ex.winner.config.block == 256);
  CHECK(halving.winner.config == ex.winner.config);
  CHECK(fast.winner.config == ex.winner.config);
  // Every candidate is accounted for, and the wrong or uncompilable ones are rejected with a reason.
  const std::size_t space = SearchSpace{}.enumerate(spec_of(Dtype::f32), TargetLimits{}).size();
  // Against every candidate at 2 warm-ups + 7 repeats: exhaustive takes 3 samples of each (2 of
  // the clearly slower) and re-measures the contenders; halving spends its samples on the (here
  // many) contenders; fast ranks at a smaller n, so its samples cost less device time.
  const std::size_t full = space * (2 + 7);
  CHECK(ex_m.samples < full / 2);
  CHECK(halving_m.samples < full);
  CHECK(fast_m.device_ms < ex_m.device_ms);
  for (const auto* out : {&ex, &halving, &fast}) {
    CHECK(out->candidates.size() == space);
    std::size_t wrong = 0, uncompiled = 0;
    for (const auto& c : out->candidates) {
      wrong += c.rejection.rfind("wrong output", 0) == 0;
      uncompiled += c.rejection.rfind("does not compile", 0) == 0;
      if (c.rejection.rfind("wrong output", 0) == 0) CHECK_FALSE(c.ok);
    }
    CHECK(wrong > 0);
    CHECK(uncompiled > 0);
  }
}

TEST_CASE("every strategy of the table runs through search(), and the table names them all") {
  std::set<std::string> names;
  for (const auto& def : strategies()) {
    CAPTURE(def.name);
    CHECK(names.insert(def.name).second);
    CHECK(std::string(def.summary).size() > 0);
    CHECK(strategy_names().find(def.name) != std::string::npos);
    SyntheticMeasurer m(def.smaller_n_first ? 2 : 1);
    const SearchOutcome out = synthetic_search(def.name, m);
    CHECK(out.strategy == def.name);
    CHECK(out.winner.ok);
    if (def.one_by_one()) {
      CHECK(make_strategy(def.name, SearchSpace{}.enumerate(spec_of(Dtype::f32), TargetLimits{}), 10, 1)->name() ==
            def.name);
    } else {
      CHECK(out.candidates.size() == SearchSpace{}.enumerate(spec_of(Dtype::f32), TargetLimits{}).size());
    }
  }
  try {
    find_strategy("annealing");
    FAIL("an unknown strategy was accepted");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find(strategy_names()) != std::string::npos);
  }
  SyntheticMeasurer unused(1);
  CHECK_THROWS_AS(synthetic_search("annealing", unused), Error);
}

TEST_CASE("the contenders get more rounds only while their timings are noisy against the tie window") {
  // The same landscape with +-3 % jitter per sample: medians of 7 could cross the 1 % window.
  class Noisy : public SyntheticMeasurer {
   public:
    Noisy() : SyntheticMeasurer(1) {}
    double sample(const KernelConfig& c, int level) override {
      const double t = SyntheticMeasurer::sample(c, level);
      return t * (1.0 + 0.03 * static_cast<double>((samples * 2654435761u) % 7) / 6.0);
    }
  };
  TuneOptions o;
  o.strategy = "exhaustive";
  o.repeats = 7;
  const auto space = SearchSpace{}.enumerate(spec_of(Dtype::f32), TargetLimits{});
  SyntheticMeasurer quiet_m(1);
  Noisy noisy_m;
  TuneTimes quiet, noisy;
  const SearchOutcome a = search(quiet_m, space, o, {}, {}, &quiet);
  search(noisy_m, space, o, {}, {}, &noisy);
  CHECK(quiet.contenders > 4);
  CHECK(quiet.remeasure_rounds == o.repeats);
  CHECK(noisy.remeasure_rounds == 2 * o.repeats);
  CHECK(noisy.contender_spread > 0.005);
  CHECK(quiet.contender_spread <= 0.005);
  CHECK(a.winner.config.per_thread == 1);  // still exhaustive's pick at the full schedule (above)
}

TEST_CASE("the untuned default is never dropped early and competes in the re-measure") {
  // The default ranks last at the smaller problem (1.5 x its time) and is the fastest at n by 3 %:
  // "fast" ranks at n/16 first and would drop it there.
  class DefaultWins : public SyntheticMeasurer {
   public:
    explicit DefaultWins(KernelConfig d) : SyntheticMeasurer(2), default_(d) {}
    double sample(const KernelConfig& c, int level) override {
      const double t = SyntheticMeasurer::sample(c, level);
      if (!(c == default_)) return t;
      return level == 1 ? t * 1.5 : t * 0.97;
    }
    KernelConfig default_;
  };
  KernelConfig d;
  d.vec = 4;
  d.block = 64;
  d.per_thread = 4;
  d.waves = 0;  // as resolve_config leaves a one-shot config
  const auto space = SearchSpace{}.enumerate(spec_of(Dtype::f32), TargetLimits{});
  REQUIRE(std::find(space.begin(), space.end(), d) != space.end());
  TuneOptions o;
  o.strategy = "fast";
  o.repeats = 7;
  DefaultWins without_m(d), with_m(d);
  const SearchOutcome without = search(without_m, space, o);
  CHECK_FALSE(without.winner.config == d);  // ranked out at the smaller problem
  o.baseline = d;
  const SearchOutcome with = search(with_m, space, o);
  CHECK(with.winner.config == d);
  o.strategy = "halving";  // halving at n alone keeps it too
  DefaultWins halving_m(d);
  CHECK(search(halving_m, space, o).winner.config == d);
}

TEST_CASE("the device model's default is a candidate of the search space, for every dtype and direction") {
  const rt::DeviceInfo h200 = test::hopper_device(4800);
  for (Dtype dt : {Dtype::f32, Dtype::f16, Dtype::bf16, Dtype::f64})
    for (Direction dir : {Direction::forward, Direction::backward})
      for (const char* act : {"relu", "hardswish", "selu", "gelu"})
        for (std::uint64_t n : {std::uint64_t{1} << 20, std::uint64_t{1610612736}}) {
          KernelSpec s = spec_of(dt);
          s.activation = act;
          s.direction = dir;
          const KernelConfig d = resolve_config(s, device_default_config(s, h200, n), TargetLimits{});
          const auto space = SearchSpace{}.enumerate(s, TargetLimits{});
          CAPTURE(to_string(s));
          CHECK(std::find(space.begin(), space.end(), d) != space.end());
        }
}

TEST_CASE("a baseline outside the search space (general kernel, late gradient) joins it, once") {
  KernelSpec s = spec_of(Dtype::f16);
  s.direction = Direction::backward;
  const auto space = SearchSpace{}.enumerate(s, TargetLimits{});
  KernelConfig late = space.front();
  late.late_gradient = true;
  late.flat = false;
  REQUIRE(std::find(space.begin(), space.end(), late) == space.end());
  const auto with = with_baseline(space, late);
  CHECK(with.size() == space.size() + 1);
  CHECK(std::count(with.begin(), with.end(), late) == 1);
  CHECK(with_baseline(with, late).size() == with.size());
  CHECK(with_baseline(space, space.back()).size() == space.size());
}

TEST_CASE("--space replaces the knobs it names; the general kernel and a late gradient can be searched") {
  const SearchSpace all;
  const SearchSpace ship =
      SearchSpace::parse("grid=one-shot;cache=default kernel=flat,general gradient=early,late per-thread=1,2", all);
  CHECK(ship.blocks == all.blocks);  // not named: kept
  CHECK(ship.per_thread == std::vector<int>{1, 2});
  CHECK(ship.grids.size() == 1);
  CHECK(ship.caches == std::vector<CacheHint>{CacheHint::normal});
  KernelSpec fwd = spec_of(Dtype::f16), bwd = fwd;
  bwd.direction = Direction::backward;
  const auto f = ship.enumerate(fwd, TargetLimits{}), b = ship.enumerate(bwd, TargetLimits{});
  // vec 2, 4, 8 x 5 blocks x 2 per-thread x 2 kernels; backward also both gradients (forward has none)
  CHECK(f.size() == 3 * 5 * 2 * 2);
  CHECK(b.size() == 2 * f.size());
  CHECK(std::none_of(f.begin(), f.end(), [](const KernelConfig& c) { return c.late_gradient; }));
  CHECK(std::any_of(b.begin(), b.end(), [](const KernelConfig& c) { return c.late_gradient && !c.flat; }));
  // The run key names the new knobs only when they are searched, so older keys stay the same.
  CHECK(all.describe().find("kernel=") == std::string::npos);
  CHECK(ship.describe().find("kernel=flat,general,") != std::string::npos);
  CHECK(ship.describe().find("gradient=early,late,") != std::string::npos);
  // Simplest first: the flat kernel before the general one, the gradient first before late.
  KernelConfig flat, general, late;
  general.flat = false;
  late.late_gradient = true;
  CHECK(simpler(flat, general));
  CHECK(simpler(flat, late));
  for (const char* bad : {"blocks=64", "block=48", "block=", "kernel=wide", "gradient=first", "grid=diagonal",
                          "cache=l1", "per-thread=0", "vec-bytes=32", "block"})
    CHECK_THROWS_AS(SearchSpace::parse(bad, all), Error);
}

TEST_CASE("the early-stopping schedules never let a wrong kernel win, even the fastest") {
  class WrongFastest : public SyntheticMeasurer {
   public:
    WrongFastest() : SyntheticMeasurer(1) {}
    std::string verify(const KernelConfig& c, int) override { return c.per_thread == 2 ? "wrong output: NaN" : ""; }
  };
  for (const char* strategy : {"exhaustive", "halving"}) {
    WrongFastest m;
    const SearchOutcome out = synthetic_search(strategy, m);
    CHECK(out.winner.config.per_thread != 2);
    CHECK(out.winner.ok);
  }
}
