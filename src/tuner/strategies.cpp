// The search strategies and their table; see strategies.hpp.
#include "strategies.hpp"

#include <algorithm>
#include <random>

#include "kplay/error.hpp"

namespace kplay {
namespace {

bool measured(const std::vector<Measurement>& history, const KernelConfig& c) {
  return std::any_of(history.begin(), history.end(), [&](const Measurement& m) { return m.config == c; });
}

std::vector<KernelConfig> unmeasured(const std::vector<KernelConfig>& configs, const std::vector<Measurement>& h) {
  std::vector<KernelConfig> out;
  for (const auto& c : configs)
    if (!measured(h, c)) out.push_back(c);
  return out;
}

class Exhaustive : public SearchStrategy {
 public:
  explicit Exhaustive(std::vector<KernelConfig> space) : space_(std::move(space)) {}
  std::vector<KernelConfig> next(const std::vector<Measurement>& h) override { return unmeasured(space_, h); }
  std::string name() const override { return "exhaustive"; }

 private:
  std::vector<KernelConfig> space_;
};

class RandomSample : public SearchStrategy {
 public:
  RandomSample(std::vector<KernelConfig> space, int budget, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::shuffle(space.begin(), space.end(), rng);
    if (static_cast<int>(space.size()) > budget) space.resize(static_cast<std::size_t>(budget));
    picked_ = std::move(space);
  }
  std::vector<KernelConfig> next(const std::vector<Measurement>& h) override { return unmeasured(picked_, h); }
  std::string name() const override { return "random"; }

 private:
  std::vector<KernelConfig> picked_;
};

int knobs_differing(const KernelConfig& a, const KernelConfig& b) {
  return (a.vec != b.vec) + (a.block != b.block) + (a.per_thread != b.per_thread) +
         (a.grid != b.grid || a.waves != b.waves) + (a.cache != b.cache) + (a.row != b.row) + (a.cluster != b.cluster) +
         (a.row_threads != b.row_threads);
}

class LocalSearch : public SearchStrategy {
 public:
  LocalSearch(std::vector<KernelConfig> space, int budget) : space_(std::move(space)), budget_(budget) {}

  std::vector<KernelConfig> next(const std::vector<Measurement>& h) override {
    if (space_.empty() || static_cast<int>(h.size()) >= budget_) return {};
    if (h.empty()) return {start()};
    // The fastest so far is the centre; its one-knob neighbours come next.
    const Measurement* best = nullptr;
    for (const auto& m : h)
      if (m.ok && (!best || m.median_ms < best->median_ms)) best = &m;
    if (!best) return {};
    std::vector<KernelConfig> out;
    for (const auto& c : space_)
      if (knobs_differing(c, best->config) == 1 && !measured(h, c)) out.push_back(c);
    const int room = budget_ - static_cast<int>(h.size());
    if (static_cast<int>(out.size()) > room) out.resize(static_cast<std::size_t>(room));
    return out;  // empty: every neighbour of the best is measured, so it is a local optimum
  }
  std::string name() const override { return "local"; }

 private:
  KernelConfig start() const {
    // The built-in default (widest vector, block 256, one vector per thread, one-shot).
    for (const auto& c : space_)
      if (c.block == 256 && c.per_thread == 1 && c.grid == GridPolicy::one_shot && c.cache == CacheHint::normal &&
          c.vec == std::max_element(space_.begin(), space_.end(), [](auto& a, auto& b) { return a.vec < b.vec; })->vec)
        return c;
    return space_.front();
  }
  std::vector<KernelConfig> space_;
  int budget_;
};

std::unique_ptr<SearchStrategy> make_exhaustive(std::vector<KernelConfig> space, int, std::uint64_t) {
  return std::make_unique<Exhaustive>(std::move(space));
}
std::unique_ptr<SearchStrategy> make_random(std::vector<KernelConfig> space, int budget, std::uint64_t seed) {
  return std::make_unique<RandomSample>(std::move(space), budget, seed);
}
std::unique_ptr<SearchStrategy> make_local(std::vector<KernelConfig> space, int budget, std::uint64_t) {
  return std::make_unique<LocalSearch>(std::move(space), budget);
}

}  // namespace

const std::vector<StrategyDef>& strategies() {
  // "fast": narrower vectors never won a streaming kernel in exhaustive runs, and they triple the
  // compiles; the smaller problem (tuner.cpp, fidelity_n) still streams from DRAM.
  static const std::vector<StrategyDef> table = {
      {"exhaustive", "every configuration, one by one", make_exhaustive},
      {"random", "--budget configurations drawn with --seed", make_random, /*uses_budget=*/true},
      {"local", "one knob at a time from the default until no neighbour is faster, at most --budget", make_local,
       /*uses_budget=*/true},
      {"halving", "successive halving over repeats, the whole space at once", nullptr},
      {"fast", "halving over the widest vector alone, ranked at n/16 first when n >= 2^26", nullptr,
       /*uses_budget=*/false, /*widest_vector_only=*/true, /*smaller_n_first=*/true},
  };
  return table;
}

std::string strategy_names() {
  const auto& all = strategies();
  std::string out;
  for (std::size_t i = 0; i < all.size(); ++i)
    out += (i == 0 ? "" : i + 1 == all.size() ? " or " : ", ") + std::string(all[i].name);
  return out;
}

const StrategyDef& find_strategy(const std::string& name) {
  for (const auto& s : strategies())
    if (name == s.name) return s;
  throw Error(ErrorCode::invalid_argument, "unknown strategy '" + name + "' (expected " + strategy_names() + ")");
}

std::unique_ptr<SearchStrategy> make_strategy(const std::string& name, std::vector<KernelConfig> space, int budget,
                                              std::uint64_t seed) {
  if (budget < 1) throw Error(ErrorCode::invalid_argument, "--budget must be at least 1");
  const StrategyDef& s = find_strategy(name);
  if (!s.one_by_one())
    throw Error(ErrorCode::invalid_argument, "strategy '" + name + "' is an early-stopping schedule, run by tune()");
  return s.make(std::move(space), budget, seed);
}

}  // namespace kplay
