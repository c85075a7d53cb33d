// kplay/limits.hpp — the bounds a request to kplay is held to, one set for every way in: the
// command line's flags (src/cli/), kplay::autotune (kplay/admin.hpp) and the Python package,
// which reads these numbers from its extension, so that no way in accepts what another refuses.
#pragma once

#include <cstdint>

namespace kplay {

// The most elements a problem may have (`--n`, `--shape`, TuneRequest::n): 2^48, beyond every
// device's memory and far beyond what a run can finish; larger counts would also overflow byte
// sizes.
constexpr std::uint64_t kMaxElements = 1ull << 48;
// Untimed (warmup) and timed (repeat) launches one measurement may ask for: a bound keeps a typo
// from asking for hours of launches.
constexpr int kMaxLaunches = 10000;
// A tuning takes the median of at least this many timed launches per candidate.
constexpr int kMinTuneRepeats = 3;
// The most candidates a budgeted strategy may try (`--budget`, TuneRequest::budget).
constexpr int kMaxTuneBudget = 1 << 20;

}  // namespace kplay
