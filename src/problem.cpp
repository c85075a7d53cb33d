// Problem setup and verification; see problem.hpp.
#include "problem.hpp"

#include <algorithm>
#include <limits>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "host_dtype.hpp"
#include "self_reference.hpp"

namespace kplay {
namespace {

unsigned worker_count() { return std::max(1u, std::min(32u, std::thread::hardware_concurrency())); }

// Runs fn(begin, end) over [0, n) split among threads.
template <class Fn>
void parallel_for(std::uint64_t n, Fn fn) {
  const unsigned workers = n < (1u << 16) ? 1u : worker_count();
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

}  // namespace

Problem::Problem(rt::Backend& backend, const KernelSpec& spec, const ProblemShape& shape)
    : backend_(backend), spec_(spec), shape_(shape), ref_(spec, shape.seed), esize_(dtype_size(spec.dtype)) {
  const bool backward = spec.direction == Direction::backward;
  if (shape_.in_place) shape_.in_offset = shape_.out_offset;
  out_ = rt::DeviceBuffer(backend_, (shape_.out_offset + shape_.n + kGuardElements) * esize_);
  if (!shape_.in_place) in0_ = rt::DeviceBuffer(backend_, (shape_.in_offset + shape_.n) * esize_);
  if (backward) in1_ = rt::DeviceBuffer(backend_, (shape_.in_offset + shape_.n) * esize_);
  upload_inputs();
  reset_output();
}

rt::DevicePtr Problem::out() const { return out_.ptr().at(shape_.out_offset * esize_); }
rt::DevicePtr Problem::in0() const { return shape_.in_place ? out() : in0_.ptr().at(shape_.in_offset * esize_); }
rt::DevicePtr Problem::in1() const {
  return spec_.direction == Direction::backward ? in1_.ptr().at(shape_.in_offset * esize_) : in0();
}

std::uint64_t Problem::bytes_moved() const {
  const std::uint64_t streams = spec_.direction == Direction::backward ? 3 : 2;
  return streams * shape_.n * esize_;
}

void Problem::upload_inputs() {
  std::vector<unsigned char> host(shape_.n * esize_);
  auto upload = [&](rt::DevicePtr dst, bool second) {
    parallel_for(shape_.n, [&](std::uint64_t b, std::uint64_t e) {
      for (std::uint64_t i = b; i < e; ++i)
        store_element(spec_.dtype, host.data(), i, second ? ref_.in1(i) : ref_.in0(i));
    });
    if (!host.empty()) backend_.upload(dst, host.data(), host.size());
  };
  // In place, the input lives in the output buffer; reset_output() writes it there.
  if (!shape_.in_place) upload(in0(), false);
  if (spec_.direction == Direction::backward) upload(in1(), true);
}

void Problem::reset_output() {
  backend_.fill_bytes(out_.ptr(), kPoisonByte, out_.bytes());
  if (shape_.in_place && shape_.n) {
    std::vector<unsigned char> host(shape_.n * esize_);
    parallel_for(shape_.n, [&](std::uint64_t b, std::uint64_t e) {
      for (std::uint64_t i = b; i < e; ++i) store_element(spec_.dtype, host.data(), i, ref_.in0(i));
    });
    backend_.upload(out(), host.data(), host.size());
  }
}

ErrorStats Problem::verify(bool sampled) const {
  const std::uint64_t n = shape_.n;
  // Ranges [begin, end) of output elements to check.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
  const std::uint64_t edge = 1u << 16, block = 4096;
  if (!sampled || n <= 4 * edge) {
    ranges.emplace_back(0, n);
  } else {
    ranges.emplace_back(0, edge);
    ranges.emplace_back(n - edge, n);
    std::mt19937_64 rng(shape_.seed ^ 0x5eed);
    for (int k = 0; k < 64; ++k) {
      const std::uint64_t b = edge + rng() % (n - 2 * edge - block);
      ranges.emplace_back(b, b + block);
    }
  }

  ErrorStats total(spec_.dtype, ulp_bound(spec_), spec_.direction == Direction::backward);
  // A user activation is its own reference, in float64 on the device (see self_reference.hpp).
  std::unique_ptr<SelfReference> self;
  if (!ref_.has_reference()) self = std::make_unique<SelfReference>(backend_, spec_);
  std::vector<double> self_in0, self_in1, self_out;
  std::vector<unsigned char> host;
  const std::uint64_t piece = 1u << 24;  // download in pieces to bound host memory
  for (const auto& r : ranges) {
    for (std::uint64_t b = r.first; b < r.second; b += piece) {
      const std::uint64_t e = std::min(r.second, b + piece);
      host.resize((e - b) * esize_);
      backend_.download(host.data(), out().at(b * esize_), host.size());
      if (self) {
        self_in0.resize(e - b);
        self_in1.resize(e - b);
        for (std::uint64_t i = b; i < e; ++i) {
          self_in0[i - b] = ref_.in0(i);
          if (spec_.direction == Direction::backward) self_in1[i - b] = ref_.in1(i);
        }
        self->compute(self_in0, self_in1, self_out);
      }
      std::vector<ErrorStats> parts;
      std::mutex m;
      parallel_for(e - b, [&](std::uint64_t lo, std::uint64_t hi) {
        ErrorStats s(total.dtype, total.bound_ulps, total.backward);
        for (std::uint64_t i = lo; i < hi; ++i)
          s.add(b + i, load_element(spec_.dtype, host.data(), i), self ? self_out[i - b] : ref_.expected(b + i),
                ref_.error_scale(b + i));
        std::lock_guard<std::mutex> lock(m);
        parts.push_back(s);
      });
      for (const auto& s : parts) total.merge(s);
    }
  }

  // Guard zones: the elements before the output (when offset) and after its end keep the poison.
  std::vector<unsigned char> guard((shape_.out_offset + kGuardElements) * esize_);
  if (shape_.out_offset) backend_.download(guard.data(), out_.ptr(), shape_.out_offset * esize_);
  backend_.download(guard.data() + shape_.out_offset * esize_, out().at(n * esize_), kGuardElements * esize_);
  const bool intact = std::all_of(guard.begin(), guard.end(), [](unsigned char c) { return c == kPoisonByte; });
  if (!intact) {
    ErrorStats bad(total.dtype, total.bound_ulps);
    bad.add(n, std::numeric_limits<double>::infinity(), 0.0);  // written outside [0, n)
    total.merge(bad);
  }
  return total;
}

}  // namespace kplay
