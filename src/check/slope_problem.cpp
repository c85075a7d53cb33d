// The problem of a per-element slope form (make_slope_problem in problem.hpp): prelu, with its
// weight, and training(rrelu), with its seed. Inputs are the element-wise problem's streams (the
// special values and the zero edge first); the slopes come from a weight of mixed signs (prelu)
// or from the same draws the kernel makes (src/spec/slope_noise.hpp), so the reference of each
// element is x > 0 ? x : s x (backward g or s g, torch's branches) in double (long double for
// float64), one rounding from the kernel's. prelu's backward also computes the weight's gradient
// (two more kernels, Layout::wgrad_parts and wgrad_sum), checked against a long double sum with
// the worst-case bound of the kernel's summation order (weight_grad_bound).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kplay/error.hpp"
#include "parallel.hpp"
#include "problem.hpp"
#include "spec/slope_noise.hpp"
#include "util/host_dtype.hpp"

namespace kplay {
namespace {

std::string format_ratio(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

class SlopeProblem : public DeviceProblem {
 public:
  SlopeProblem(rt::Backend& backend, const KernelSpec& spec, const ProblemShape& shape)
      : DeviceProblem(backend, spec, shape), ref_(spec, shape.seed), esize_(dtype_size(spec.dtype)) {
    prelu_ = ref_.act.slope == SlopeForm::weight;
    backward_ = spec.direction == Direction::backward;
    const std::uint64_t c = prelu_ ? std::max<std::uint64_t>(shape_.channels, 1) : 1;
    shape_.channels = c;
    shape_.inner = std::max<std::uint64_t>(shape_.inner, 1);
    if (shape_.n % (c * shape_.inner) != 0)
      throw Error(ErrorCode::invalid_argument, std::to_string(shape_.n) + " elements are not a whole number of " +
                                                   std::to_string(c) + " channels of " + std::to_string(shape_.inner) +
                                                   " elements");
    if (shape_.in_place) shape_.in_offset = shape_.out_offset;
    if (shape_.n > 2 * kInputPeriod) ref_.period = kInputPeriod;
    out_ = rt::DeviceBuffer(backend_, (shape_.out_offset + shape_.n + kGuardElements) * esize_);
    if (!shape_.in_place) in0_ = rt::DeviceBuffer(backend_, (shape_.in_offset + shape_.n) * esize_);
    if (backward_) in1_ = rt::DeviceBuffer(backend_, (shape_.in_offset + shape_.n) * esize_);
    if (prelu_) {
      std::vector<unsigned char> host(c * esize_);
      for (std::uint64_t k = 0; k < c; ++k) store_element(spec.dtype, host.data(), k, weight(k));
      w_ = rt::DeviceBuffer(backend_, c * esize_);
      backend_.upload(w_.ptr(), host.data(), host.size());
    }
    if (prelu_ && backward_) {
      gw_ = rt::DeviceBuffer(backend_, (c + kGuardElements) * esize_);
      ws_ = rt::DeviceBuffer(backend_, std::max<std::uint64_t>(prelu_workspace_bytes(spec.dtype, shape_.n, c), 8));
    }
    if (!shape_.in_place) upload(in0(), false);
    if (backward_) upload(in1(), true);
    reset_output();
  }

  // Mixed signs, zero, above one: 0.25, 0.125, ... -0.5 and a little more for each channel.
  double weight(std::uint64_t k) const {
    return round_to(spec_.dtype, 0.25 - 0.125 * static_cast<double>(k % 7) + 0.001 * static_cast<double>(k % 13));
  }

  rt::DevicePtr out() const { return out_.ptr().at(shape_.out_offset * esize_); }
  rt::DevicePtr in0() const { return shape_.in_place ? out() : in0_.ptr().at(shape_.in_offset * esize_); }
  rt::DevicePtr in1() const { return backward_ ? in1_.ptr().at(shape_.in_offset * esize_) : in0(); }

  rt::KernelArgs args() const override {
    rt::KernelArgs a = flat_args(out(), in0(), in1(), shape_.n);
    a.slope = true;
    a.weight = prelu_ ? w_.ptr() : in0();
    a.inner = shape_.inner;
    a.channels = shape_.channels;
    a.seed = shape_.seed;
    return a;
  }

  void launch(Engine& engine, const PreparedKernel& kernel, void* stream = nullptr) const override {
    if (!(prelu_ && backward_) || shape_.n == 0) return engine.launch(kernel, args(), stream);
    // The weight's gradient first: in place, grad_x is written over the gradient it reads.
    rt::KernelArgs a = args();
    a.parts = prelu_weight_grad_parts(shape_.n, shape_.channels);
    a.out = ws_.ptr();
    a.in0 = in0();  // the incoming gradient
    a.in1 = in1();  // x
    engine.launch(*engine.prepare(spec_, kernel.config, Layout::wgrad_parts), a, stream);
    a.out = gw_.ptr();
    a.in0 = ws_.ptr();
    engine.launch(*engine.prepare(spec_, kernel.config, Layout::wgrad_sum), a, stream);
    engine.launch(kernel, args(), stream);
  }

  // prelu's backward reads g and x twice (the weight's gradient) and writes grad_input.
  std::uint64_t bytes_moved() const override { return (backward_ ? (prelu_ ? 5 : 3) : 2) * shape_.n * esize_; }
  rt::DevicePtr copy_source() const override { return in0(); }
  std::uint64_t copy_bytes() const override { return shape_.n * esize_; }
  std::uint64_t outputs() const override { return shape_.n + (prelu_ && backward_ ? shape_.channels : 0); }

  void reset_output(bool /*sampled*/ = false) override {
    backend_.fill_bytes(out_.ptr(), kPoisonByte, out_.bytes());
    if (gw_.bytes()) backend_.fill_bytes(gw_.ptr(), kPoisonByte, gw_.bytes());
    if (shape_.in_place && shape_.n) {
      backend_.synchronize();
      upload(out(), false);
    }
    backend_.synchronize();
  }

  // The kernel's slope of element i, and the reference of element i.
  double slope(std::uint64_t i) const {
    if (prelu_) return weight(shape_.channels == 1 ? 0 : (i / shape_.inner) % shape_.channels);
    return rrelu_slope(shape_.seed, i, ref_.act.params[0], ref_.act.params[1], spec_.dtype);
  }
  long double expected(std::uint64_t i) const {
    const long double s = slope(i);
    const double x = ref_.x(i);
    if (!backward_) return x > 0 ? static_cast<long double>(x) : static_cast<long double>(x) * s;
    const long double g = ref_.grad(i);
    if (prelu_) return x > 0 ? g : g * s;
    return x <= 0 ? g * s : g;
  }

  ErrorStats verify(bool sampled) const override {
    ErrorStats total(spec_.dtype, ulp_bound(spec_), backward_);
    std::vector<unsigned char> host;
    const std::uint64_t piece = 1u << 22;
    for (const auto& r : verify_ranges(shape_.n, shape_.seed, sampled)) {
      for (std::uint64_t b = r.first; b < r.second; b += piece) {
        const std::uint64_t e = std::min(r.second, b + piece);
        host.resize((e - b) * esize_);
        backend_.download(host.data(), out().at(b * esize_), host.size());
        std::mutex m;
        parallel_for(e - b, [&](std::uint64_t lo, std::uint64_t hi) {
          ErrorStats s(total.dtype, total.bound_ulps, total.backward);
          for (std::uint64_t i = lo; i < hi; ++i)
            s.add(b + i, load_element(spec_.dtype, host.data(), i), expected(b + i));
          std::lock_guard<std::mutex> lock(m);
          total.merge(s);
        });
      }
    }
    // Guard zones: the elements before the output (when offset) and after its end keep the poison.
    std::vector<unsigned char> guard((shape_.out_offset + kGuardElements) * esize_);
    if (shape_.out_offset) backend_.download(guard.data(), out_.ptr(), shape_.out_offset * esize_);
    backend_.download(guard.data() + shape_.out_offset * esize_, out().at(shape_.n * esize_), kGuardElements * esize_);
    if (!std::all_of(guard.begin(), guard.end(), [](unsigned char c) { return c == kPoisonByte; })) {
      ErrorStats bad(total.dtype, total.bound_ulps);
      bad.add(shape_.n, std::numeric_limits<double>::infinity(), 0.0);  // written outside [0, n)
      total.merge(bad);
    }
    if (prelu_ && backward_) total.merge(verify_weight_grad());
    return total;
  }

  std::string note() const override { return note_; }

 private:
  void upload(rt::DevicePtr dst, bool second) const {
    const std::uint64_t generated = ref_.period ? std::min(shape_.n, ref_.period) : shape_.n;
    if (generated == 0) return;
    std::vector<unsigned char> host(generated * esize_);
    // Forward: x; backward: in0 the incoming gradient, in1 x.
    const bool x = !backward_ || second;
    parallel_for(generated, [&](std::uint64_t b, std::uint64_t e) {
      for (std::uint64_t i = b; i < e; ++i) store_element(spec_.dtype, host.data(), i, x ? ref_.x(i) : ref_.grad(i));
    });
    upload_repeated(backend_, dst, host, esize_, shape_.n);
  }

  // The weight's gradient, channel by channel: the exact sum of g x over x > 0 false (long double;
  // the products exact), against the kernel's within the worst case of its order of summation
  // (Higham's recursive-summation bound): each thread adds up to L = ceil(m / (parts * block))
  // products in the compute type (each product one rounding more), a block's tree adds
  // log2(block) levels, the parts are added one by one; then one rounding to the dtype. So
  // |out - exact| <= (L + log2(block) + parts + 1) u sum |g x| + ulp(exact), u = 2^-24 (float
  // accumulation) or 2^-53 (float64). A product or sum beyond the compute type's range is
  // infinite there as in torch: then any infinity or NaN stands.
  ErrorStats verify_weight_grad() const {
    const std::uint64_t c = shape_.channels, n = shape_.n;
    std::vector<unsigned char> host((c + kGuardElements) * esize_);
    backend_.download(host.data(), gw_.ptr(), host.size());
    std::vector<long double> sum(c, 0.0L), mag(c, 0.0L);
    std::vector<bool> overflow(c, false);
    const bool f64 = spec_.dtype == Dtype::f64;
    const long double top = f64 ? 1.7976931348623157e308L : 3.4028234663852886e38L;
    for (std::uint64_t i = 0; i < n; ++i) {
      const double x = ref_.x(i);
      if (x > 0) continue;
      const std::uint64_t k = c == 1 ? 0 : (i / shape_.inner) % c;
      const long double t = static_cast<long double>(x) * ref_.grad(i);
      if (std::fabs(t) > top) overflow[k] = true;
      sum[k] += t;
      mag[k] += std::fabs(t);
    }
    // L for the smallest block (32 threads) and log2 of the largest (1024): every config's bound.
    const std::uint64_t parts = prelu_weight_grad_parts(n, c);
    const std::uint64_t per_part = (n / c + parts - 1) / parts, per_thread = (per_part + 31) / 32;
    const double u = f64 ? 0x1p-53 : 0x1p-24;
    const double gamma = static_cast<double>(per_thread + 10 + parts + 1) * u;
    ErrorStats stats(spec_.dtype, ulp_bound(spec_), true);
    double worst = 0;
    for (std::uint64_t k = 0; k < c; ++k) {
      const double got = load_element(spec_.dtype, host.data(), k);
      const long double exact = sum[k];
      bool ok;
      if (std::isnan(exact)) {
        ok = std::isnan(got);
      } else if (overflow[k] || mag[k] > top || std::isinf(round_to(spec_.dtype, static_cast<double>(exact)))) {
        ok = !std::isfinite(got) || std::fabs(got - static_cast<double>(exact)) <= gamma * mag[k];
      } else {
        const double allowed = static_cast<double>(gamma * mag[k]) + ulp_of(spec_.dtype, static_cast<double>(exact));
        const double err = std::fabs(static_cast<double>(got - exact));
        ok = err <= allowed;
        if (allowed > 0) worst = std::max(worst, err / allowed);
      }
      if (ok)
        ++stats.checked;  // held to the summation bound above, not to the ulp bound add() applies
      else
        stats.add(n + k, std::numeric_limits<double>::infinity(), static_cast<double>(exact));
    }
    const bool intact = std::all_of(host.begin() + static_cast<std::ptrdiff_t>(c * esize_), host.end(),
                                    [](unsigned char b) { return b == kPoisonByte; });
    if (!intact) stats.add(n + c, std::numeric_limits<double>::infinity(), 0.0);
    note_ = "weight gradient: " + std::to_string(c) + " channel(s) in " + std::to_string(parts) +
            " part(s) each, largest error " + format_ratio(worst) + " of the summation bound; " +
            (stats.mismatches ? "FAIL" : "within it");
    return stats;
  }

  ReferenceProblem ref_;
  std::size_t esize_;
  bool prelu_ = false, backward_ = false;
  rt::DeviceBuffer in0_, in1_, out_, w_, gw_, ws_;
  mutable std::string note_;
};

}  // namespace

std::unique_ptr<DeviceProblem> make_slope_problem(rt::Backend& backend, const KernelSpec& spec,
                                                  const ProblemShape& shape) {
  return std::make_unique<SlopeProblem>(backend, spec, shape);
}

}  // namespace kplay
