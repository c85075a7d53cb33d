// Search strategies: each proposes the next batch of configurations from what has been measured.
// Two methods, as small as KTT's: next() and name(). Deterministic for a given seed.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "kplay/types.hpp"

namespace kplay {

struct Measurement {
  KernelConfig config;
  bool ok = false;  // false: rejected (compile error, wrong output)
  double median_ms = 0;
};

class SearchStrategy {
 public:
  virtual ~SearchStrategy() = default;
  // Configurations to measure next, none already in `history`; empty when the search is over.
  virtual std::vector<KernelConfig> next(const std::vector<Measurement>& history) = 0;
  virtual std::string name() const = 0;
};

// Every strategy `--strategy` takes, in one table: its name, a line for --help, and what the
// tuner does with it (tuner.cpp). A one-by-one strategy has `make`: its SearchStrategy proposes
// candidates, each measured in turn and saved as progress, so a killed run resumes. The others
// are early-stopping schedules over the whole space (successive halving over repeats, tuner.cpp),
// which take seconds and start over.
struct StrategyDef {
  const char* name;
  const char* summary;
  std::unique_ptr<SearchStrategy> (*make)(std::vector<KernelConfig> space, int budget, std::uint64_t seed);
  bool uses_budget = false;         // --budget caps the candidates measured
  bool widest_vector_only = false;  // searches the widest vector of the space alone
  bool smaller_n_first = false;     // ranks at a smaller problem first where n is large
  bool one_by_one() const { return make != nullptr; }
};

// exhaustive, random, local, halving, fast.
const std::vector<StrategyDef>& strategies();

// The entry named `name`; throws Error(invalid_argument) naming the known ones for another.
const StrategyDef& find_strategy(const std::string& name);

// "exhaustive, random, local, halving or fast".
std::string strategy_names();

// The SearchStrategy of a one-by-one strategy ("exhaustive": every configuration; "random":
// `budget` of them, drawn with `seed`; "local": start from the built-in default, measure the
// neighbours that differ in one knob by one step, move to the fastest, and stop when no neighbour
// is faster, at most `budget` measured). Throws Error(invalid_argument) for a budget below 1, an
// unknown name, or an early-stopping schedule.
std::unique_ptr<SearchStrategy> make_strategy(const std::string& name, std::vector<KernelConfig> space, int budget,
                                              std::uint64_t seed);

}  // namespace kplay
