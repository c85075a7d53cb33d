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

// "exhaustive": every configuration. "random": `budget` of them, drawn with `seed`.
// "local": start from the built-in default, measure the neighbours that differ in one knob by one
// step, move to the fastest, and stop when no neighbour is faster (at most `budget` measured).
// Throws Error(invalid_argument) for another name.
std::unique_ptr<SearchStrategy> make_strategy(const std::string& name, std::vector<KernelConfig> space, int budget,
                                              std::uint64_t seed);

}  // namespace kplay
