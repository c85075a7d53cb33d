// One activation problem on a device, as `kplay run`, the tuner and the tests set it up: device
// buffers with fresh inputs, an output poisoned first and fenced by guard zones, and a check of
// the output against the reference (every element, or a sample that always includes the
// head, the tail and any misaligned edge) plus a check that nothing outside it was written.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/engine.hpp"
#include "runtime/backend.hpp"
#include "verification.hpp"

namespace kplay {

struct ProblemShape {
  std::uint64_t n = 0;           // elements (a gated activation: of its [rows, 2d] input, a and b together)
  std::uint64_t in_offset = 0;   // elements before the input starts (misalignment)
  std::uint64_t out_offset = 0;  // elements before the output starts
  bool in_place = false;         // output written over the (first) input
  std::uint64_t seed = 0;
  // Gated activations only. `rows` rows of d = n / rows / 2 outputs (0: one row). a and b are the
  // halves of one [rows, 2d] tensor, or with two_tensors two tensors of [rows, d] (a backward's
  // gradients alike). pad_*: elements each row's pitch has beyond its data (a slice of a wider
  // tensor), for a's tensor (the one tensor of both), b's, and the output's (the incoming
  // gradient's pitch is pad_b's). In place: the output over a with a's pitch (forward), the
  // gradients over a and b (backward). scale: FP8 output's per-tensor scale.
  std::uint64_t rows = 0;
  bool two_tensors = false;
  std::uint64_t pad_a = 0, pad_b = 0, pad_out = 0;
  double scale = 1;
  // prelu only: the weight's length (1: one weight in all) and the elements after the channel's
  // position (the product of the dimensions after dim 1); n is a multiple of their product.
  std::uint64_t channels = 1, inner = 1;
  // Ordinary inputs, as a model's are: what kplay run, bench and the tuner time, so that a
  // kernel's figure is its speed on data. A checked problem plants specials (NaN, infinities,
  // extremes), edges and tails among its values, and row problems cycle through edge rows (a
  // cancelling gradient too); these send some kernels down slow or exact paths. Ordinary:
  // element-wise and gated problems draw values in [-8, 8) and tiny magnitudes alone
  // (generate_input's `ordinary`), row problems ordinary rows alone; prelu and rrelu keep their
  // check's inputs.
  bool ordinary = false;
};

// One problem on the device, as `kplay run`, the tuner and the tests use it: element-wise
// (Problem) or gated (GatedProblem); make_problem picks.
class DeviceProblem {
 public:
  DeviceProblem(rt::Backend& backend, const KernelSpec& spec, const ProblemShape& shape)
      : backend_(backend), spec_(spec), shape_(shape) {}
  virtual ~DeviceProblem() = default;
  DeviceProblem(const DeviceProblem&) = delete;
  DeviceProblem& operator=(const DeviceProblem&) = delete;

  const ProblemShape& shape() const { return shape_; }
  const KernelSpec& spec() const { return spec_; }
  // What a launch of the problem's kernel takes (the engine picks the flat or general kernel).
  virtual rt::KernelArgs args() const = 0;
  // prelu's backward launches the weight's gradient kernels after args()'s.
  virtual void launch(Engine& engine, const PreparedKernel& kernel, void* stream = nullptr) const {
    engine.launch(kernel, args(), stream);
  }
  // What verify() found beyond ErrorStats, for `kplay run` to print ("" if nothing).
  virtual std::string note() const { return ""; }
  virtual std::uint64_t bytes_moved() const = 0;  // bytes read + written by one pass
  // The roofline: a device-to-device copy of copy_bytes() from copy_source() (benchmark.hpp).
  virtual rt::DevicePtr copy_source() const = 0;
  virtual std::uint64_t copy_bytes() const = 0;
  // Output elements a full verify() checks (a gated backward: both gradients).
  virtual std::uint64_t outputs() const = 0;

  // Fills the output (and guards) with 0xCD bytes, and re-uploads the input when in place.
  // sampled (not in place): only the ranges verify(true) reads, and the guards.
  virtual void reset_output(bool sampled = false) = 0;

  // Compares the output with the reference. sampled: head, tail, and random blocks only; their
  // reference values are computed once and kept, since the tuner verifies every candidate on the
  // same problem. Guard zones are always checked; a write there counts as a mismatch at index n.
  virtual ErrorStats verify(bool sampled) const = 0;

 protected:
  rt::Backend& backend_;
  KernelSpec spec_;
  ProblemShape shape_;
};

// An element-wise problem (every activation but the gated ones): n contiguous elements.
class Problem : public DeviceProblem {
 public:
  Problem(rt::Backend& backend, const KernelSpec& spec, const ProblemShape& shape);

  rt::DevicePtr out() const;
  rt::DevicePtr in0() const;
  rt::DevicePtr in1() const;  // backward's saved tensor; in0 for forward
  rt::KernelArgs args() const override;
  std::uint64_t bytes_moved() const override;
  rt::DevicePtr copy_source() const override { return in0(); }
  std::uint64_t copy_bytes() const override { return shape_.n * esize_; }
  std::uint64_t outputs() const override { return shape_.n; }
  void reset_output(bool sampled = false) override;
  ErrorStats verify(bool sampled) const override;

 private:
  void upload_inputs();
  // Writes stream 0 (in0) or 1 (in1) of the reference inputs to dst: generated on the host for one
  // period, then replicated on the device.
  void upload_stream(rt::DevicePtr dst, bool second) const;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> check_ranges(bool sampled) const;

  ReferenceProblem ref_;
  std::size_t esize_;
  rt::DeviceBuffer in0_, in1_, out_;
  // The sampled ranges' expected values and error scales (or a user activation's float64 self).
  mutable std::vector<long double> sampled_expected_;
  mutable std::vector<double> sampled_scale_;
  mutable std::vector<double> sampled_allowance_;  // a user activation's (SelfReference), else 0
};

// A gated activation's problem (gated_problem.cpp): a and b, and for backward the incoming
// gradient, in the layout ProblemShape describes; the output (or both gradients) poisoned first,
// checked against the reference, and every byte of the output buffers outside the data (row
// pads, guard zones) checked to be untouched.
std::unique_ptr<DeviceProblem> make_gated_problem(rt::Backend& backend, const KernelSpec& spec,
                                                  const ProblemShape& shape);

// A per-element slope form's problem (slope_problem.cpp): prelu with a weight of shape.channels
// (per channel of shape.inner elements) or training(rrelu) with shape.seed as its seed; prelu's
// backward also computes and checks the weight's gradient.
std::unique_ptr<DeviceProblem> make_slope_problem(rt::Backend& backend, const KernelSpec& spec,
                                                  const ProblemShape& shape);

// A row activation's problem (row_problem.cpp): shape.rows rows of n / rows elements (0: one
// row), the softmax family's edge rows among them, checked row by row against the row reference.
std::unique_ptr<DeviceProblem> make_row_problem(rt::Backend& backend, const KernelSpec& spec,
                                                const ProblemShape& shape);

// The problem of spec: element-wise, gated, per-element slope or row. Throws Error(invalid_argument) for a gated shape
// that does not divide (n not rows times an even number).
std::unique_ptr<DeviceProblem> make_problem(rt::Backend& backend, const KernelSpec& spec, const ProblemShape& shape);

// Whether ProblemShape::ordinary changes a problem of `spec` (every form but prelu and rrelu): where
// it does not, the checked problem is the timed one, not made again.
bool has_ordinary_inputs(const KernelSpec& spec);

// A gated problem's rows and d from its shape (rows 0: one row), checked: Error(invalid_argument)
// naming what does not divide.
void gated_dims(const ProblemShape& shape, std::uint64_t& rows, std::uint64_t& d);

// The ranges of [0, n) that verify() checks: all of it, or (sampled, n > 2^18) the first and last
// 2^16 elements and 64 blocks of 4096 at random (seeded).
std::vector<std::pair<std::uint64_t, std::uint64_t>> verify_ranges(std::uint64_t n, std::uint64_t seed, bool sampled);

// Problems larger than twice this many elements repeat their inputs with this period.
constexpr std::uint64_t kInputPeriod = 1ull << 24;

// Uploads `period` (host elements of esize bytes) to dst, synchronized, then fills dst's first n
// elements by doubling on the device: [0, done) copied after itself until n.
void upload_repeated(rt::Backend& backend, rt::DevicePtr dst, const std::vector<unsigned char>& period,
                     std::size_t esize, std::uint64_t n);

constexpr std::uint64_t kGuardElements = 64;
constexpr unsigned char kPoisonByte = 0xCD;

}  // namespace kplay
