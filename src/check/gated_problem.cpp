// A gated activation's problem on the device (make_gated_problem in problem.hpp): a and b as the
// halves of one [rows, 2d] tensor or as two tensors, each with its own row pitch, the incoming
// gradient for backward, and the output (or both gradients) poisoned first; verify() compares
// every output element it reads with the reference (act(a) then one product, verification.hpp)
// and checks that the bytes around the data (offsets, row pads, guard zones) are untouched.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <mutex>
#include <vector>

#include "kplay/error.hpp"
#include "parallel.hpp"
#include "problem.hpp"
#include "self_reference.hpp"
#include "util/host_dtype.hpp"

namespace kplay {
namespace {

// One buffer of `rows` rows of pitch `ld` elements, data in columns [0, cols) of each, starting
// `off` elements in, with kGuardElements after the last row.
struct Tensor {
  rt::DeviceBuffer buffer;
  std::uint64_t off = 0, ld = 0, cols = 0, rows = 0;
  std::size_t esize = 0;
  std::uint64_t elements() const { return off + rows * ld + kGuardElements; }
  std::uint64_t at(std::uint64_t row, std::uint64_t col) const { return off + row * ld + col; }  // element index
  rt::DevicePtr ptr(std::uint64_t row, std::uint64_t col) const { return buffer.ptr().at(at(row, col) * esize); }
};

// rows x d elements at column `col` of a tensor.
struct View {
  Tensor* t = nullptr;
  std::uint64_t col = 0;
};

enum class Stream { a, b, g };

class GatedProblem : public DeviceProblem {
 public:
  GatedProblem(rt::Backend& backend, const KernelSpec& spec, const ProblemShape& shape)
      : DeviceProblem(backend, spec, shape), ref_(spec, shape.seed) {
    gated_dims(shape_, rows_, d_);
    backward_ = spec.direction == Direction::backward;
    ref_.scale = shape.scale;
    ref_.ordinary = shape.ordinary;
    if (spec.out != OutDtype::same && !(shape.scale > 0 && shape.scale < HUGE_VAL))
      throw Error(ErrorCode::invalid_argument, "the FP8 scale must be a finite number above 0");
    if (spec.out != OutDtype::same && shape.in_place)
      throw Error(ErrorCode::invalid_argument, "FP8 output cannot be written in place over its float input");
    if (shape_.in_place) shape_.out_offset = shape_.in_offset;
    const std::size_t es = dtype_size(spec.dtype);
    const std::uint64_t d = d_, in_off = shape_.in_offset, out_off = shape_.out_offset;
    // Inputs.
    if (!shape_.two_tensors) {
      Tensor* x = tensor(in_off, 2 * d + shape_.pad_a, 2 * d, es);
      a_ = {x, 0};
      b_ = {x, d};
    } else {
      a_ = {tensor(in_off, d + shape_.pad_a, d, es), 0};
      b_ = {tensor(in_off, d + shape_.pad_b, d, es), 0};
    }
    if (backward_) g_ = {tensor(in_off, d + shape_.pad_b, d, es), 0};
    // Outputs.
    if (!backward_) {
      out_[0] = shape_.in_place ? a_ : View{tensor(out_off, d + shape_.pad_out, d, out_size(spec)), 0};
    } else if (shape_.in_place) {
      out_[0] = a_;
      out_[1] = b_;
    } else if (!shape_.two_tensors) {
      Tensor* gx = tensor(out_off, 2 * d + shape_.pad_out, 2 * d, es);
      out_[0] = {gx, 0};
      out_[1] = {gx, d};
    } else {
      out_[0] = {tensor(out_off, d + shape_.pad_out, d, es), 0};
      out_[1] = {tensor(out_off, d + shape_.pad_out, d, es), 0};
    }
    upload_inputs();
    reset_output();
  }

  rt::KernelArgs args() const override {
    rt::KernelArgs k;
    k.rows = rows_;
    k.cols = d_;
    k.out = out_[0].t->ptr(0, out_[0].col);
    k.ld_out = out_[0].t->ld;
    const View& in0 = backward_ ? g_ : a_;
    const View& in1 = backward_ ? a_ : b_;
    k.in0 = in0.t->ptr(0, in0.col);
    k.ld_in0 = in0.t->ld;
    k.in1 = in1.t->ptr(0, in1.col);
    k.ld_in1 = in1.t->ld;
    if (backward_) {
      k.gated_backward = true;
      k.out1 = out_[1].t->ptr(0, out_[1].col);
      k.ld_out1 = out_[1].t->ld;
      k.in2 = b_.t->ptr(0, b_.col);
      k.ld_in2 = b_.t->ld;
    }
    if (spec_.out != OutDtype::same) {
      k.scaled = true;
      k.scale = static_cast<float>(shape_.scale);
    }
    return k;
  }

  std::uint64_t bytes_moved() const override {
    const std::uint64_t m = rows_ * d_, es = dtype_size(spec_.dtype);
    return backward_ ? 5 * m * es : 2 * m * es + m * out_size(spec_);
  }
  // The copy moves as many bytes as the kernel: half of them read, half written.
  std::uint64_t copy_bytes() const override { return bytes_moved() / 2 / 16 * 16; }
  rt::DevicePtr copy_source() const override {
    for (const auto& t : tensors_)
      if (t->buffer.bytes() >= copy_bytes()) return t->buffer.ptr();
    if (!copy_source_.bytes()) copy_source_ = rt::DeviceBuffer(backend_, copy_bytes());
    return copy_source_.ptr();
  }
  std::uint64_t outputs() const override { return rows_ * d_ * (backward_ ? 2 : 1); }

  void reset_output(bool sampled = false) override {
    if (shape_.in_place) {
      upload_inputs();
      return;
    }
    for (Tensor* t : output_tensors()) {
      if (!sampled) {
        backend_.fill_bytes(t->buffer.ptr(), kPoisonByte, t->buffer.bytes());
        continue;
      }
      // Only what verify(true) reads: the rows of the sampled ranges, and the guards.
      for (const auto& r : verify_ranges(rows_ * d_, shape_.seed, true)) {
        if (r.second <= r.first) continue;
        const std::uint64_t r0 = r.first / d_, r1 = (r.second - 1) / d_;
        backend_.fill_bytes(t->ptr(r0, 0), kPoisonByte, ((r1 - r0) * t->ld + t->cols) * t->esize);
      }
      if (t->off) backend_.fill_bytes(t->buffer.ptr(), kPoisonByte, t->off * t->esize);
      const std::uint64_t end = t->at(rows_ - 1, t->cols);
      backend_.fill_bytes(t->buffer.ptr().at(end * t->esize), kPoisonByte, (t->elements() - end) * t->esize);
    }
  }

  ErrorStats verify(bool sampled) const override;

 private:
  Tensor* tensor(std::uint64_t off, std::uint64_t ld, std::uint64_t cols, std::size_t esize) {
    auto t = std::make_unique<Tensor>();
    t->off = off;
    t->ld = ld;
    t->cols = cols;
    t->rows = rows_;
    t->esize = esize;
    t->buffer = rt::DeviceBuffer(backend_, t->elements() * esize);
    tensors_.push_back(std::move(t));
    return tensors_.back().get();
  }

  std::vector<Tensor*> output_tensors() const {
    std::vector<Tensor*> out;
    for (int o = 0; o < (backward_ ? 2 : 1); ++o)
      if (std::find(out.begin(), out.end(), out_[o].t) == out.end()) out.push_back(out_[o].t);
    return out;
  }

  double input(Stream s, std::uint64_t i) const {
    return s == Stream::a ? ref_.x(i) : s == Stream::b ? ref_.b(i) : ref_.grad(i);
  }

  // Each input tensor whole: poison everywhere, the inputs in their views.
  void upload_inputs() {
    std::vector<std::pair<View, Stream>> views = {{a_, Stream::a}, {b_, Stream::b}};
    if (backward_) views.emplace_back(g_, Stream::g);
    for (const auto& t : tensors_) {
      bool holds_input = false;
      for (const auto& v : views) holds_input |= v.first.t == t.get();
      if (!holds_input) continue;
      std::vector<unsigned char> host(t->buffer.bytes(), kPoisonByte);
      for (const auto& [v, s] : views) {
        if (v.t != t.get()) continue;
        parallel_for(rows_ * d_, [&, v = v, s = s](std::uint64_t lo, std::uint64_t hi) {
          for (std::uint64_t i = lo; i < hi; ++i)
            store_element(spec_.dtype, host.data(), t->at(i / d_, v.col + i % d_), input(s, i));
        });
      }
      backend_.upload(t->buffer.ptr(), host.data(), host.size());
    }
    backend_.synchronize();
  }

  // Expected values, error scales and allowances of outputs [b, e) (logical indices), written from `at`.
  void reference(std::uint64_t b, std::uint64_t e, std::vector<long double> (&expected)[2],
                 std::vector<double> (&scale)[2], std::vector<double> (&allowance)[2], std::size_t at) const;

  ReferenceProblem ref_;
  std::uint64_t rows_ = 0, d_ = 0;
  bool backward_ = false;
  std::vector<std::unique_ptr<Tensor>> tensors_;
  View a_, b_, g_, out_[2];
  mutable rt::DeviceBuffer copy_source_;
  mutable std::unique_ptr<SelfReference> self_;
  mutable std::vector<long double> sampled_expected_[2];
  mutable std::vector<double> sampled_scale_[2], sampled_allowance_[2];
};

void GatedProblem::reference(std::uint64_t b, std::uint64_t e, std::vector<long double> (&expected)[2],
                             std::vector<double> (&scale)[2], std::vector<double> (&allowance)[2],
                             std::size_t at) const {
  const int outs = backward_ ? 2 : 1;
  for (int o = 0; o < outs; ++o) {
    expected[o].resize(at + (e - b));
    scale[o].resize(at + (e - b));
    allowance[o].resize(at + (e - b), 0.0);
  }
  if (!ref_.has_reference()) {
    // A user activation: the same snippet's float64 gated kernel (self_reference.hpp).
    if (!self_) self_ = std::make_unique<SelfReference>(backend_, spec_);
    std::vector<double> g(backward_ ? e - b : 0), a(e - b), bv(e - b), out0, out1, al0, al1;
    for (std::uint64_t i = b; i < e; ++i) {
      a[i - b] = ref_.x(i);
      bv[i - b] = ref_.b(i);
      if (backward_) g[i - b] = ref_.grad(i);
    }
    self_->compute_gated(g, a, bv, out0, out1, &al0, backward_ ? &al1 : nullptr);
    const double top = spec_.out != OutDtype::same ? fp8_max(spec_.out) : 0;
    for (std::uint64_t k = 0; k < e - b; ++k) {
      double v = out0[k];
      if (top > 0) {  // FP8: divided by the scale and clamped, as the reference does
        v /= shape_.scale;
        v = v > top ? top : (v < -top ? -top : v);
        al0[k] /= shape_.scale;
      }
      expected[0][at + k] = v;
      allowance[0][at + k] = al0[k];
      if (backward_) {
        expected[1][at + k] = out1[k];
        allowance[1][at + k] = al1[k];
      }
    }
  }
  parallel_for(e - b, [&](std::uint64_t lo, std::uint64_t hi) {
    for (std::uint64_t k = lo; k < hi; ++k) {
      const std::uint64_t i = b + k;
      const double g = backward_ ? ref_.grad(i) : 0.0, a = ref_.x(i), bv = ref_.b(i);
      for (int o = 0; o < outs; ++o) {
        if (ref_.has_reference()) expected[o][at + k] = ref_.gated_expected(i, o);
        const double sc = ref_.gated_error_scale(g, a, bv, o);  // FP8: only an undetermined result's
        scale[o][at + k] = spec_.out != OutDtype::same && sc != kUndetermined ? 0.0 : sc;
      }
    }
  });
}

ErrorStats GatedProblem::verify(bool sampled) const {
  const std::uint64_t m = rows_ * d_;
  const int outs = backward_ ? 2 : 1;
  const auto ranges = verify_ranges(m, shape_.seed, sampled);
  std::uint64_t checked = 0;
  for (const auto& r : ranges) checked += r.second - r.first;
  // The tuner verifies every candidate on the same sampled ranges: their reference is kept.
  const bool keep = sampled && checked <= (1u << 20);
  if (keep && sampled_expected_[0].size() != checked) {
    for (int o = 0; o < 2; ++o) {
      sampled_expected_[o].clear();
      sampled_scale_[o].clear();
      sampled_allowance_[o].clear();
    }
    for (const auto& r : ranges)
      reference(r.first, r.second, sampled_expected_, sampled_scale_, sampled_allowance_, sampled_expected_[0].size());
  }

  ErrorStats total(spec_.dtype, ulp_bound(spec_), backward_, spec_.out);
  std::mutex merge;
  // Outputs [b, e) of output o against expected[...] from `at`: the rows they span in one download.
  auto compare = [&](int o, std::uint64_t b, std::uint64_t e, const long double* expected, const double* scale,
                     const double* allowance) {
    if (e <= b) return;
    const View& v = out_[o];
    const Tensor& t = *v.t;
    const std::uint64_t r0 = b / d_, r1 = (e - 1) / d_;
    std::vector<unsigned char> host(((r1 - r0) * t.ld + d_) * t.esize);
    backend_.download(host.data(), t.ptr(r0, v.col), host.size());
    parallel_for(e - b, [&](std::uint64_t lo, std::uint64_t hi) {
      ErrorStats s(total.dtype, total.bound_ulps, total.backward, total.out_type);
      for (std::uint64_t k = lo; k < hi; ++k) {
        const std::uint64_t i = b + k;
        const std::uint64_t at = (i / d_ - r0) * t.ld + i % d_;
        const double got = spec_.out != OutDtype::same ? fp8_to_double(spec_.out, host[at])
                                                       : load_element(spec_.dtype, host.data(), at);
        s.add(static_cast<std::uint64_t>(o) * m + i, got, expected[k], scale[k], allowance[k]);
      }
      std::lock_guard<std::mutex> lock(merge);
      total.merge(s);
    });
  };
  if (keep) {
    std::size_t at = 0;
    for (const auto& r : ranges) {
      for (int o = 0; o < outs; ++o)
        compare(o, r.first, r.second, sampled_expected_[o].data() + at, sampled_scale_[o].data() + at,
                sampled_allowance_[o].data() + at);
      at += r.second - r.first;
    }
  } else {
    std::vector<long double> expected[2];
    std::vector<double> scale[2], allowance[2];
    const std::uint64_t piece = d_ ? std::max<std::uint64_t>(d_, (1u << 22) / d_ * d_) : 1;  // whole rows
    for (const auto& r : ranges)
      for (std::uint64_t b = r.first; b < r.second; b += piece) {
        const std::uint64_t e = std::min(r.second, b + piece);
        for (int o = 0; o < 2; ++o) allowance[o].clear();
        reference(b, e, expected, scale, allowance, 0);
        for (int o = 0; o < outs; ++o) compare(o, b, e, expected[o].data(), scale[o].data(), allowance[o].data());
      }
  }

  // Bytes outside the data: before the first row and after the last row's data always; every row's
  // pad too when every element was checked.
  bool intact = true;
  for (const Tensor* t : output_tensors()) {
    auto poisoned = [&](std::uint64_t from, std::uint64_t count) {
      if (!count) return true;
      std::vector<unsigned char> bytes(count * t->esize);
      backend_.download(bytes.data(), t->buffer.ptr().at(from * t->esize), bytes.size());
      return std::all_of(bytes.begin(), bytes.end(), [](unsigned char c) { return c == kPoisonByte; });
    };
    const std::uint64_t end = t->at(rows_ - 1, t->cols);
    intact = intact && poisoned(0, t->off) && poisoned(end, t->elements() - end);
    if (!sampled && t->ld > t->cols) {
      const std::uint64_t rows_per = std::max<std::uint64_t>(1, (1u << 22) / t->ld);
      for (std::uint64_t r = 0; r + 1 < rows_ && intact; r += rows_per) {
        const std::uint64_t r1 = std::min(rows_ - 1, r + rows_per);  // pads of rows [r, r1)
        std::vector<unsigned char> bytes((r1 - r) * t->ld * t->esize);
        backend_.download(bytes.data(), t->ptr(r, 0), bytes.size());
        for (std::uint64_t k = 0; k < r1 - r && intact; ++k)
          for (std::uint64_t c = t->cols * t->esize; c < t->ld * t->esize; ++c)
            if (bytes[k * t->ld * t->esize + c] != kPoisonByte) intact = false;
      }
    }
  }
  if (!intact) {
    ErrorStats bad(total.dtype, total.bound_ulps);
    bad.add(outputs(), std::numeric_limits<double>::infinity(), 0.0);  // written outside the data
    total.merge(bad);
  }
  return total;
}

}  // namespace

std::unique_ptr<DeviceProblem> make_gated_problem(rt::Backend& backend, const KernelSpec& spec,
                                                  const ProblemShape& shape) {
  return std::make_unique<GatedProblem>(backend, spec, shape);
}

}  // namespace kplay
