// Problem setup and verification; see problem.hpp.
#include "problem.hpp"

#include <algorithm>
#include <limits>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "kplay/error.hpp"
#include "parallel.hpp"
#include "self_reference.hpp"
#include "spec/activations.hpp"
#include "util/host_dtype.hpp"

namespace kplay {
Problem::Problem(rt::Backend& backend, const KernelSpec& spec, const ProblemShape& shape)
    : DeviceProblem(backend, spec, shape), ref_(spec, shape.seed), esize_(dtype_size(spec.dtype)) {
  const bool backward = spec.direction == Direction::backward;
  if (shape_.in_place) shape_.in_offset = shape_.out_offset;
  if (shape_.n > 2 * kInputPeriod) ref_.period = kInputPeriod;
  ref_.ordinary = shape_.ordinary;
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

rt::KernelArgs Problem::args() const { return flat_args(out(), in0(), in1(), shape_.n); }

bool has_ordinary_inputs(const KernelSpec& spec) {
  return resolve_activation(spec.activation).slope == SlopeForm::none;
}

std::unique_ptr<DeviceProblem> make_problem(rt::Backend& backend, const KernelSpec& spec, const ProblemShape& shape) {
  const ResolvedActivation act = resolve_activation(spec.activation);
  if (act.gated) return make_gated_problem(backend, spec, shape);
  if (act.slope != SlopeForm::none) return make_slope_problem(backend, spec, shape);
  if (act.is_row()) return make_row_problem(backend, spec, shape);
  return std::make_unique<Problem>(backend, spec, shape);
}

void gated_dims(const ProblemShape& shape, std::uint64_t& rows, std::uint64_t& d) {
  rows = shape.rows ? shape.rows : 1;
  if (shape.n % rows != 0)
    throw Error(ErrorCode::invalid_argument,
                std::to_string(shape.n) + " elements are not " + std::to_string(rows) + " rows of equal length");
  const std::uint64_t last = shape.n / rows;
  if (last % 2 != 0)
    throw Error(ErrorCode::invalid_argument,
                "a gated activation's input is [..., 2d]: its last dimension must be even (a, then b), got " +
                    std::to_string(last));
  d = last / 2;
}

std::uint64_t Problem::bytes_moved() const {
  const std::uint64_t streams = spec_.direction == Direction::backward ? 3 : 2;
  return streams * shape_.n * esize_;
}

void Problem::upload_stream(rt::DevicePtr dst, bool second) const {
  const std::uint64_t generated = ref_.period ? std::min(shape_.n, ref_.period) : shape_.n;
  if (generated == 0) return;
  std::vector<unsigned char> host(generated * esize_);
  parallel_for(generated, [&](std::uint64_t b, std::uint64_t e) {
    for (std::uint64_t i = b; i < e; ++i)
      store_element(spec_.dtype, host.data(), i, second ? ref_.in1(i) : ref_.in0(i));
  });
  upload_repeated(backend_, dst, host, esize_, shape_.n);
}

void upload_repeated(rt::Backend& backend, rt::DevicePtr dst, const std::vector<unsigned char>& period,
                     std::size_t esize, std::uint64_t n) {
  backend.upload(dst, period.data(), period.size());
  backend.synchronize();
  for (std::uint64_t done = period.size() / esize; done < n;) {
    const std::uint64_t count = std::min(done, n - done);
    backend.copy(dst.at(done * esize), dst, count * esize);
    done += count;
  }
  backend.synchronize();
}

void Problem::upload_inputs() {
  // In place, the input lives in the output buffer; reset_output() writes it there.
  if (!shape_.in_place) upload_stream(in0(), false);
  if (spec_.direction == Direction::backward) upload_stream(in1(), true);
}

void Problem::reset_output(bool sampled) {
  if (sampled && !shape_.in_place) {
    // Only what verify(true) reads: the sampled ranges and the guard zones (the tuner verifies
    // hundreds of candidates; poisoning gigabytes each time cost more than their launch).
    for (const auto& r : check_ranges(true))
      backend_.fill_bytes(out().at(r.first * esize_), kPoisonByte, (r.second - r.first) * esize_);
    if (shape_.out_offset) backend_.fill_bytes(out_.ptr(), kPoisonByte, shape_.out_offset * esize_);
    backend_.fill_bytes(out().at(shape_.n * esize_), kPoisonByte, kGuardElements * esize_);
    return;
  }
  backend_.fill_bytes(out_.ptr(), kPoisonByte, out_.bytes());
  if (shape_.in_place && shape_.n) {
    backend_.synchronize();
    upload_stream(out(), false);
  }
}

std::vector<std::pair<std::uint64_t, std::uint64_t>> verify_ranges(std::uint64_t n, std::uint64_t seed, bool sampled) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
  const std::uint64_t edge = 1u << 16, block = 4096;
  if (!sampled || n <= 4 * edge) {
    ranges.emplace_back(0, n);
  } else {
    ranges.emplace_back(0, edge);
    ranges.emplace_back(n - edge, n);
    std::mt19937_64 rng(seed ^ 0x5eed);
    for (int k = 0; k < 64; ++k) {
      const std::uint64_t b = edge + rng() % (n - 2 * edge - block);
      ranges.emplace_back(b, b + block);
    }
  }
  return ranges;
}

std::vector<std::pair<std::uint64_t, std::uint64_t>> Problem::check_ranges(bool sampled) const {
  return verify_ranges(shape_.n, shape_.seed, sampled);
}

ErrorStats Problem::verify(bool sampled) const {
  const std::uint64_t n = shape_.n;
  const auto ranges = check_ranges(sampled);
  std::uint64_t checked = 0;
  for (const auto& r : ranges) checked += r.second - r.first;

  // A user activation is its own reference, in float64 on the device (see self_reference.hpp).
  std::unique_ptr<SelfReference> self;
  // Expected values, error scales and allowances of [b, e), written from `at` on.
  auto reference = [&](std::uint64_t b, std::uint64_t e, std::vector<long double>& expected, std::vector<double>& scale,
                       std::vector<double>& allowance, std::size_t at) {
    expected.resize(at + (e - b));
    scale.resize(at + (e - b));
    allowance.resize(at + (e - b), 0.0);
    if (!ref_.has_reference()) {
      if (!self) self = std::make_unique<SelfReference>(backend_, spec_);
      std::vector<double> in0(e - b), in1(e - b), out, moved;
      for (std::uint64_t i = b; i < e; ++i) {
        in0[i - b] = ref_.in0(i);
        if (spec_.direction == Direction::backward) in1[i - b] = ref_.in1(i);
      }
      self->compute(in0, in1, out, &moved);
      std::copy(out.begin(), out.end(), expected.begin() + static_cast<std::ptrdiff_t>(at));
      std::copy(moved.begin(), moved.end(), allowance.begin() + static_cast<std::ptrdiff_t>(at));
    }
    parallel_for(e - b, [&](std::uint64_t lo, std::uint64_t hi) {
      for (std::uint64_t i = lo; i < hi; ++i) {
        if (ref_.has_reference()) expected[at + i] = ref_.expected(b + i);
        scale[at + i] = ref_.error_scale(b + i);
      }
    });
  };
  // The tuner verifies every candidate on the same sampled ranges: their reference is kept.
  const bool keep = sampled && checked <= (1u << 20);
  if (keep && sampled_expected_.size() != checked) {
    sampled_expected_.clear();
    sampled_scale_.clear();
    sampled_allowance_.clear();
    for (const auto& r : ranges)
      reference(r.first, r.second, sampled_expected_, sampled_scale_, sampled_allowance_, sampled_expected_.size());
  }

  ErrorStats total(spec_.dtype, ulp_bound(spec_), spec_.direction == Direction::backward);
  // Element i of `got` is output index index[i] (sampled) or base + i (index null).
  auto compare = [&](const unsigned char* got, const std::uint64_t* index, std::uint64_t base,
                     const long double* expected, const double* scale, const double* allowance, std::uint64_t count) {
    std::vector<ErrorStats> parts;
    std::mutex m;
    parallel_for(count, [&](std::uint64_t lo, std::uint64_t hi) {
      ErrorStats s(total.dtype, total.bound_ulps, total.backward);
      for (std::uint64_t i = lo; i < hi; ++i)
        s.add(index ? index[i] : base + i, load_element(spec_.dtype, got, i), expected[i], scale[i], allowance[i]);
      std::lock_guard<std::mutex> lock(m);
      parts.push_back(s);
    });
    for (const auto& s : parts) total.merge(s);
  };
  std::vector<unsigned char> host;
  std::vector<std::uint64_t> index;
  if (keep) {
    // Every sampled range downloaded into one buffer, then compared in one parallel pass.
    host.resize(checked * esize_);
    index.reserve(checked);
    std::size_t at = 0;
    for (const auto& r : ranges) {
      backend_.download(host.data() + at * esize_, out().at(r.first * esize_), (r.second - r.first) * esize_);
      for (std::uint64_t i = r.first; i < r.second; ++i) index.push_back(i);
      at += r.second - r.first;
    }
    compare(host.data(), index.data(), 0, sampled_expected_.data(), sampled_scale_.data(), sampled_allowance_.data(),
            checked);
  } else {
    std::vector<long double> piece_expected;
    std::vector<double> piece_scale, piece_allowance;
    const std::uint64_t piece = 1u << 24;  // download in pieces to bound host memory
    for (const auto& r : ranges) {
      for (std::uint64_t b = r.first; b < r.second; b += piece) {
        const std::uint64_t e = std::min(r.second, b + piece);
        host.resize((e - b) * esize_);
        backend_.download(host.data(), out().at(b * esize_), host.size());
        piece_allowance.clear();
        reference(b, e, piece_expected, piece_scale, piece_allowance, 0);
        compare(host.data(), nullptr, b, piece_expected.data(), piece_scale.data(), piece_allowance.data(), e - b);
      }
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
