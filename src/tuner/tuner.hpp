// The autotuner: finds the fastest correct configuration of one kernel spec at one problem size
// on one device, and records it (with every candidate) in the kernel database.
//
// Candidates compile in parallel, in the background while earlier ones are measured, run on the
// tuner's own buffers (timed as tuner_timing says: warm where a user's tensors sit in L2, cold
// past it), are
// verified against the double reference before their time counts, and are timed with device
// events (warm-up, median, spread). The fastest few are re-measured together (the 4 fastest and
// the 20 simplest within the noise), and the simplest configuration within 1 % of the fastest
// wins, so two runs on one GPU agree. Each measured candidate is saved as progress, so a run
// killed halfway resumes where it stopped.
#pragma once
#include <functional>
#include <optional>
#include <string>

#include "database/kernel_database.hpp"
#include "engine/engine.hpp"
#include "search_space.hpp"

namespace kplay {

// How the tuner times a problem whose buffers (inputs and outputs of one launch) take
// bytes_per_set. Where they fit in the L2, as a user's activation between two layers does,
// `launches` back to back on one set of buffers: warm, as the layers run it and as
// tools/perf_table.py times it against torch. Rotating 16 sets there measured the DRAM's time,
// which is the same for every block size (2^20 float32 elements on the H200: blocks of 64, 128 and
// 256 all 6.7 us), while warm they differ by 5 to 7 points of copy. 2^22 float32 elements forward
// (32 MB of the H200's 50 MB) tuned cold ran 10 of 13 tier rows more than 1.5 points slower, warm,
// than the records of 2^24 (docs/benchmarks.md); its backward (48 MB) runs warm in perf_table too.
// Larger problems rotate through `sets` buffer sets that together cover 4x the L2 (so at most 4,
// and at most a quarter of the device's memory), a launch on each a sample, so that none is
// flattered by the cache it would not have.
struct TunerTiming {
  std::size_t sets = 1;
  int launches = 1;
};
constexpr int kWarmLaunches = 16;
TunerTiming tuner_timing(const rt::DeviceInfo& dev, std::uint64_t bytes_per_set);

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
  // Row activations (the softmax family): n elements as `rows` rows of n / rows (0: one row),
  // searched over row_space instead of space.
  std::uint64_t rows = 0;
  // A name in strategies.hpp's table, whose entry says what the tuner does with it: propose
  // candidates one by one, or run an early-stopping schedule over the whole space.
  // The one-by-one strategies give each candidate 3 samples (2 when even its fastest is more
  // than 5 % slower than the best so far: it cannot be a contender); the contenders then get
  // `repeats` rounds together, up to 2 x `repeats` while an interquartile range exceeds half
  // the 1 % tie window. Candidates compile in the background while others are measured.
  std::string strategy = "exhaustive";
  int budget = 40;  // for strategies with StrategyDef::uses_budget
  std::uint64_t seed = 1;
  int warmup = 2;
  int repeats = 7;
  bool resume = true;
  SearchSpace space;
  RowSearchSpace row_space;
  std::function<void(const TuneProgress&)> progress;
  unsigned compile_threads = 0;  // 0: every host core
  // The config served without tuning (tune() sets untuned_config's: the shipped tuning, else the
  // model's): when it is in the space, no schedule drops it early and it is re-measured with the
  // contenders, so a tuning record is never slower than no tuning for being ranked on a smaller
  // problem or on few samples.
  std::optional<KernelConfig> baseline;
};

// What a tuning run did: where it spent its time (printed by kplay autotune --times, read by the
// GPU script), and whether its result reached the database.
struct TuneTimes {
  double setup_s = 0, compile_s = 0, measure_s = 0, remeasure_s = 0;
  std::size_t binaries = 0;     // distinct binaries compiled (configs differing only in grid share one)
  std::size_t samples = 0;      // timed samples (each a launch per buffer set, or kWarmLaunches on one)
  std::size_t contenders = 0;   // re-measured together ...
  int remeasure_rounds = 0;     // ... for this many interleaved rounds
  double contender_spread = 0;  // their largest interquartile range / median
  // "" when the record (and the progress before it) was written; else why not (a full disk, a
  // read-only file): the returned record is then the only copy of the measurements.
  std::string not_stored;
};

// A candidate whose kernel outlived the watchdog's timeout (util/watchdog.hpp) is saved as tuning
// progress, rejected with a reason that starts with this, before the process ends; a tune() of the
// same run in a fresh process skips it, whatever the strategy. While no candidate has finished,
// that tune() first tries the device's default config: when it times out too, the job fails in
// the next process (its kernel most likely never ends) instead of trying every candidate.
constexpr const char* kTimedOut = "timed out";
// Likewise a candidate whose kernel crashed the process (a user snippet's bad store on PoCL, which
// runs kernels in kplay's process), recorded by the watchdog's crash reporter.
constexpr const char* kCrashed = "crashed";
// Whether a candidate's record says it ended its process (timed out or crashed): never run again.
bool ended_the_process(const CandidateResult& c);

// How candidates are measured: on the device (the default) or, in tests, a synthetic model.
// Level 0 is the tuned size; level 1, where levels() == 2, is a smaller problem for "fast".
class CandidateMeasurer {
 public:
  virtual ~CandidateMeasurer() = default;
  virtual int levels() const { return 1; }
  // Starts compiling these configs in the background, in order (a measurer may ignore it).
  virtual void prefetch(const std::vector<KernelConfig>& /*configs*/) {}
  // Compiles every config not yet compiled (in parallel) and waits for those prefetched; returns,
  // per config, "" or why it does not compile.
  virtual std::vector<std::string> prepare(const std::vector<KernelConfig>& configs) = 0;
  // Runs the prepared config on poisoned output and checks it: "" or why it is wrong.
  virtual std::string verify(const KernelConfig& config, int level) = 0;
  // One timed sample, in ms per launch; warm-up launches are the caller's.
  virtual double sample(const KernelConfig& config, int level) = 0;
  virtual std::vector<double> copy_samples(int repeats) = 0;  // at level 0
  virtual double bytes_moved() const = 0;                     // per launch at level 0
};

struct SearchOutcome {
  std::vector<CandidateResult> candidates;  // every candidate, contenders with re-measured times
  CandidateResult winner;
  std::string strategy;
};

// The space with `baseline` added when it is not in it already: the device default may use knobs
// the space does not search (the general kernel, a late gradient), and it always competes.
std::vector<KernelConfig> with_baseline(std::vector<KernelConfig> space, const KernelConfig& baseline);

// The search itself, on any measurer: strategy or early-stopping schedule, then re-measurement
// of the contenders and the tie rule. `resumed` are candidates already measured (exhaustive,
// random, local); `save` is called for each new one.
SearchOutcome search(CandidateMeasurer& measurer, const std::vector<KernelConfig>& space, const TuneOptions& options,
                     std::vector<CandidateResult> resumed = {},
                     const std::function<void(const CandidateResult&)>& save = {}, TuneTimes* times = nullptr);

// Throws Error for bad options or when no candidate survives. `db` may be in memory. A write the
// database refuses (Error(io_failed): disk full, read-only) does not fail the tuning: the rest of
// the job writes nothing, and times->not_stored says why.
TuningRecord tune(Engine& engine, KernelDatabase& db, const KernelSpec& spec, const TuneOptions& options,
                  TuneTimes* times = nullptr);

// Runs one configuration once, on a fresh problem of n elements (a row activation: `rows` rows of
// n / rows, 0: one row) with the tuner's inputs (seed),
// and checks its output against the double reference as the tuner checks every candidate: "" or
// why it is wrong. A whole table uses it to verify each winner on the identical devices that
// share its tuning record but did not measure it.
std::string verify_config(Engine& engine, const KernelSpec& spec, const KernelConfig& config, std::uint64_t n,
                          std::uint64_t seed, std::uint64_t rows = 0);

// The config whose binary a candidate shares (exposed for tests): the element-wise kernels' grid
// policy changes their launch, not their code, so configs that differ only in it are compiled
// once, as their one-shot form. A row kernel's source holds it (KP_PREFETCH: persistent groups and
// the pipelined cluster kernel), so a row config is its own: under its one-shot form a pipelined
// config would compile a kernel it never runs, and one with --recompute-terms, which only the
// pipelined kernel takes, would be rejected as not compiling, and its whole group with it.
KernelConfig binary_identity(const KernelSpec& spec, KernelConfig config);

// Deterministic final choice among re-measured contenders (exposed for tests): the simplest
// configuration whose median is within `tie` (relative) of the fastest.
constexpr double kTieWindow = 0.01;
const CandidateResult& pick_winner(const std::vector<CandidateResult>& remeasured, double tie = kTieWindow);
// The tie window of a re-measure whose contenders' largest interquartile range was
// `relative_iqr` (of their medians) over `rounds` rounds: kTieWindow, or wider where the noise
// leaves the order of the medians unknown.
double tie_window(double relative_iqr, int rounds);

}  // namespace kplay
