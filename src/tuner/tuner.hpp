// The autotuner: finds the fastest correct configuration of one kernel spec at one problem size
// on one device, and records it (with every candidate) in the kernel database.
//
// Candidates compile in parallel, run on the tuner's own buffers (rotated so that sizes that fit
// in L2 are not flattered by the cache), are verified against the double reference before their
// time counts, and are timed with device events (warm-up, median, spread). The fastest few are
// re-measured together (the 4 fastest and the 20 simplest within the noise), and the simplest
// configuration within 1 % of the fastest wins, so two runs on one GPU agree. Each measured candidate is saved as progress, so a run killed halfway
// resumes where it stopped.
#pragma once
#include <functional>
#include <string>

#include "../database/kernel_database.hpp"
#include "../engine.hpp"
#include "search_space.hpp"

namespace kplay {

struct TuneProgress {
  std::size_t done = 0, total = 0;  // total may grow (local search)
  bool have_best = false;
  KernelConfig best;
  double best_gbps = 0;
  double eta_seconds = 0;
  std::string phase;  // "measure", "re-measure"
};

struct TuneOptions {
  std::uint64_t n = 0;
  std::string strategy = "exhaustive";
  int budget = 40;  // random and local
  std::uint64_t seed = 1;
  int warmup = 2;
  int repeats = 7;
  bool resume = true;
  SearchSpace space;
  std::function<void(const TuneProgress&)> progress;
};

// Throws Error for bad options or when no candidate survives. `db` may be in memory.
TuningRecord tune(Engine& engine, KernelDatabase& db, const KernelSpec& spec, const TuneOptions& options);

// Deterministic final choice among re-measured contenders (exposed for tests): the simplest
// configuration whose median is within `tie` (relative) of the fastest.
const CandidateResult& pick_winner(const std::vector<CandidateResult>& remeasured, double tie = 0.01);

}  // namespace kplay
