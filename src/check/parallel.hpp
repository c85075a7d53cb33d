// Host work of the checks split among threads: reference values and comparisons over millions of
// elements.
#pragma once
#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace kplay {

inline unsigned check_worker_count() { return std::max(1u, std::min(32u, std::thread::hardware_concurrency())); }

// Runs fn(begin, end) over [0, n) split among threads (one thread below 2^16 elements).
template <class Fn>
void parallel_for(std::uint64_t n, Fn fn) {
  const unsigned workers = n < (1u << 16) ? 1u : check_worker_count();
  if (workers == 1) {
    fn(std::uint64_t{0}, n);
    return;
  }
  std::vector<std::thread> threads;
  const std::uint64_t step = (n + workers - 1) / workers;
  for (unsigned w = 0; w < workers; ++w) {
    const std::uint64_t b = std::min<std::uint64_t>(n, w * step), e = std::min<std::uint64_t>(n, b + step);
    threads.emplace_back([=] { fn(b, e); });
  }
  for (auto& t : threads) t.join();
}

// Runs fn(w, begin, end) for w in [0, workers), [begin, end) the w-th of `workers` equal parts of
// [0, n), each on its own thread; fn keeps per-worker state by w (the exhaustive sweeps' parts).
template <class Fn>
void split_among(unsigned workers, std::uint64_t n, Fn fn) {
  std::vector<std::thread> threads;
  for (unsigned w = 0; w < workers; ++w)
    threads.emplace_back([&fn, w, workers, n] { fn(w, n * w / workers, n * (w + 1) / workers); });
  for (auto& t : threads) t.join();
}

}  // namespace kplay
