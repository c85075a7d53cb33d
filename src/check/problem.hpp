// One activation problem on a device, as `kplay run`, the tuner and the tests set it up: device
// buffers with fresh inputs, an output poisoned first and fenced by guard zones, and a check of
// the output against the reference (every element, or a sample that always includes the
// head, the tail and any misaligned edge) plus a check that nothing outside it was written.
#pragma once
#include <cstdint>
#include <string>

#include "runtime/backend.hpp"
#include "verification.hpp"

namespace kplay {

struct ProblemShape {
  std::uint64_t n = 0;           // elements
  std::uint64_t in_offset = 0;   // elements before the input starts (misalignment)
  std::uint64_t out_offset = 0;  // elements before the output starts
  bool in_place = false;         // output written over the (first) input
  std::uint64_t seed = 0;
};

class Problem {
 public:
  Problem(rt::Backend& backend, const KernelSpec& spec, const ProblemShape& shape);

  rt::DevicePtr out() const;
  rt::DevicePtr in0() const;
  rt::DevicePtr in1() const;          // backward's saved tensor; in0 for forward
  std::uint64_t bytes_moved() const;  // element bytes read + written by one pass
  const ProblemShape& shape() const { return shape_; }
  const KernelSpec& spec() const { return spec_; }

  // Fills the output (and guards) with 0xCD bytes, and re-uploads the input when in place.
  // sampled (not in place): only the ranges verify(true) reads, and the guards.
  void reset_output(bool sampled = false);

  // Compares the output with the reference. sampled: head, tail, and random blocks only; their
  // reference values are computed once and kept, since the tuner verifies every candidate on the
  // same problem. Guard zones are always checked; a write there counts as a mismatch at index n.
  ErrorStats verify(bool sampled) const;

 private:
  void upload_inputs();
  // Writes stream 0 (in0) or 1 (in1) of the reference inputs to dst: generated on the host for one
  // period, then replicated on the device.
  void upload_stream(rt::DevicePtr dst, bool second) const;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> check_ranges(bool sampled) const;

  rt::Backend& backend_;
  KernelSpec spec_;
  ProblemShape shape_;
  ReferenceProblem ref_;
  std::size_t esize_;
  rt::DeviceBuffer in0_, in1_, out_;
  // The sampled ranges' expected values and error scales (or a user activation's float64 self).
  mutable std::vector<long double> sampled_expected_;
  mutable std::vector<double> sampled_scale_;
  mutable std::vector<double> sampled_allowance_;  // a user activation's (SelfReference), else 0
};

// Problems larger than twice this many elements repeat their inputs with this period.
constexpr std::uint64_t kInputPeriod = 1ull << 24;

constexpr std::uint64_t kGuardElements = 64;
constexpr unsigned char kPoisonByte = 0xCD;

}  // namespace kplay
