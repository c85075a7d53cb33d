// The problem of a row activation (the softmax family): `rows` rows of `cols` elements, fresh
// rows on the host (a kind per row: ordinary, wide spread, +inf, a run of NaN, all -inf, some -inf, the
// dtype's extremes, constant, deep; or, for timing, ordinary rows alone), launched, and every
// element of the checked rows compared with the row reference (src/spec/row_reference.hpp) in ulps;
// the output poisoned first and fenced by guard zones. Rows repeat with a period of whole rows (a
// large problem is generated once on the host and replicated on the device), and the reference of
// each distinct row is computed once. With shape.inner > 1 the rows are strided, as a
// softmax over a dimension that is not the last sees them: the tensor is [rows / inner, cols, inner], row r the
// elements (r / inner, i, r % inner); the period is then whole outer blocks of inner rows.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <random>
#include <vector>

#include "kplay/error.hpp"
#include "parallel.hpp"
#include "problem.hpp"
#include "spec/activations.hpp"
#include "spec/row_reference.hpp"
#include "util/host_dtype.hpp"

namespace kplay {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr std::uint64_t kRowKinds = 9;
// The most output bytes verify() downloads at once.
constexpr std::uint64_t kVerifyRunBytes = 64ull << 20;

std::uint64_t mix(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
double unit(std::uint64_t u) { return static_cast<double>(u >> 11) * 0x1p-53; }

// The float32 forward at torch's accuracy (softmax(accuracy=torch), the family's others) rounds
// x - max to float, as torch's formula does: each result is allowed, beyond the tier's bound in
// ulps, that rounding's cost, 2^-24 |x - max| (softmax's: of itself, relative; log_softmax's, x -
// max - log sum: absolute), and through the sum the row's (2.25 2^-24 of its term-weighted mean
// |x - max|, likewise), as an absolute amount (docs/accuracy.md, "The softmax family at torch's
// accuracy"). Empty for every other kernel.
std::vector<double> tier_allowance(const RowForm& form, const std::vector<double>& x,
                                   const std::vector<long double>& y) {
  double m = -kInf;
  for (double v : x) m = std::max(m, form.negate ? -v : v);
  if (!std::isfinite(m)) return {};  // an edge row: NaN or a -inf max, checked as such
  double sum = 0, weighted = 0;
  for (double v : x) {
    const double d = (form.negate ? -v : v) - m;
    if (!std::isfinite(d)) continue;
    sum += std::exp(d);
    weighted += std::exp(d) * -d;
  }
  const double mean = weighted / sum;
  std::vector<double> a(x.size(), 0.0);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double d = (form.negate ? -x[i] : x[i]) - m;
    const double scale = form.log ? 1.0 : std::fabs(static_cast<double>(y[i]));
    if (std::isfinite(d)) a[i] = scale * 0x1p-24 * (-d + 2.25 * mean);
  }
  return a;
}

// The largest finite value of the dtype.
double largest(Dtype d) {
  switch (d) {
    case Dtype::f16: return 65504.0;
    case Dtype::bf16: return 3.3895313892515355e38;
    case Dtype::f32: return 3.4028234663852886e38;
    default: return std::numeric_limits<double>::max();
  }
}

// The kind of row p: every kind in turn, or (shape.ordinary) the ordinary kind alone.
std::uint64_t row_kind(std::uint64_t p, bool ordinary) { return ordinary ? 0 : p % kRowKinds; }

// Row `p` of the forward input, of kind `kind`, rounded to the dtype.
std::vector<double> input_row(Dtype d, std::uint64_t seed, std::uint64_t p, std::uint64_t cols, std::uint64_t kind) {
  std::vector<double> x(cols);
  const std::uint64_t base = mix(seed ^ mix(p + 1));
  for (std::uint64_t i = 0; i < cols; ++i) {
    const std::uint64_t u = mix(base + i), v = mix(u);
    double val;
    switch (kind) {
      case 1:  // wide spread: most exponentials underflow, a few dominate
        val = std::pow(10.0, -12.0 + 16.0 * unit(v)) * ((u & 1) ? -1 : 1);
        break;
      case 6:  // the dtype's extremes beside ordinary values
        val = (u & 7) == 0 ? largest(d) * ((u & 8) ? -1 : 1) * (0.5 + 0.5 * unit(v)) : -8.0 + 16.0 * unit(v);
        break;
      case 7:  // constant: every result is 1 / cols
        val = 0.75;
        break;
      default:  // ordinary: mixed signs in [-8, 8), one in 8 a tiny magnitude
        val = (u & 7) == 0 ? std::pow(10.0, -12.0 + 11.0 * unit(v)) * ((u & 8) ? -1 : 1) : -8.0 + 16.0 * unit(v);
    }
    x[i] = round_to(d, val);
  }
  const std::uint64_t at = cols ? mix(base ^ 0xabcdef) % cols : 0;
  if (cols == 0) return x;
  switch (kind) {
    case 2: x[at] = kInf; break;  // torch: inf - inf, the whole row NaN
    case 3: {
      // NaN in a quarter of the row from `at` (wrapping), so that some threads', warps' and cluster
      // blocks' shares hold NaN alone beside shares of numbers: the whole row NaN
      const std::uint64_t run = std::max<std::uint64_t>(1, cols / 4);
      for (std::uint64_t i = 0; i < run; ++i) x[(at + i) % cols] = kNaN;
      break;
    }
    case 4: std::fill(x.begin(), x.end(), -kInf); break;  // the whole row NaN
    case 5:                                               // -inf elements of an ordinary row: 0 (log_softmax: -inf)
      for (std::uint64_t i = at; i < cols; i += 3) x[i] = -kInf;
      break;
    case 1:  // and one element 17 to 90 above the rest: sum - 1 below float's rounding of 1, where
             // log_softmax's result next to 0, -log1p(sum - 1), is still a 16-bit number
      x[at] = round_to(d, *std::max_element(x.begin(), x.end()) + 17.0 + 73.0 * unit(mix(base ^ 0x5eed)));
      break;
    case 8: {  // deep: ordinary, and every fifth element from `at` 86 to 94 below the max, whose
               // softmax results lie in float's subnormal range (e^-87.3 = 2^-126), where bfloat16
               // has subnormals of its own down to 2^-133 (e^-92.2)
      const double top = *std::max_element(x.begin(), x.end());
      for (std::uint64_t i = at; i < cols; i += 5) x[i] = round_to(d, top - 86.0 - 8.0 * unit(mix(base + i + 0xdee9)));
      break;
    }
    default: break;
  }
  return x;
}

// The row kind whose incoming gradient cancels the backward formula's terms.
constexpr std::uint64_t kCancellingKind = 5;

// The incoming gradient of row p: ordinary values, in rows of kind 6 an infinite one. In rows of
// kind 5 (ordinary values and -inf) one that makes the result cancel to the dtype's rounding, as
// every element of a well-fitted model's gradient nearly does: log_softmax's g = exp(y) rounded
// (its sum is 1 within roundings, so g - exp(y) sum g is near 0; the gradient of a cross entropy
// whose target is the prediction), softmax's and softmin's a constant (g - sum g y is g (1 - sum
// y)). `y` is the saved output, used in those rows only.
std::vector<double> gradient_row(Dtype d, std::uint64_t seed, std::uint64_t p, std::uint64_t cols, std::uint64_t kind,
                                 const RowForm& form, const std::vector<double>& y) {
  std::vector<double> g(cols);
  if (kind == kCancellingKind) {
    for (std::uint64_t i = 0; i < cols; ++i) g[i] = round_to(d, form.log ? std::exp(y[i]) : 1.5);
    return g;
  }
  const std::uint64_t base = mix(seed ^ mix(p + 0x5151));
  for (std::uint64_t i = 0; i < cols; ++i) {
    const std::uint64_t u = mix(base + i), v = mix(u);
    g[i] =
        round_to(d, (u & 7) == 0 ? std::pow(10.0, -12.0 + 11.0 * unit(v)) * ((u & 8) ? -1 : 1) : -8.0 + 16.0 * unit(v));
  }
  if (kind == 6 && cols) g[mix(base) % cols] = kInf;
  return g;
}

class RowProblem : public DeviceProblem {
 public:
  RowProblem(rt::Backend& backend, const KernelSpec& spec, const ProblemShape& shape)
      : DeviceProblem(backend, spec, shape),
        act_(resolve_activation(spec.activation)),
        esize_(dtype_size(spec.dtype)),
        backward_(spec.direction == Direction::backward) {
    rows_ = shape_.rows ? shape_.rows : 1;
    if (shape_.n % rows_ != 0)
      throw Error(ErrorCode::invalid_argument,
                  std::to_string(shape_.n) + " elements are not " + std::to_string(rows_) + " rows of equal length");
    if (shape_.in_place) throw Error(ErrorCode::invalid_argument, "--in-place is not offered for row activations");
    cols_ = shape_.n / rows_;
    inner_ = std::max<std::uint64_t>(shape_.inner, 1);
    if (rows_ % inner_ != 0)
      throw Error(ErrorCode::invalid_argument,
                  std::to_string(rows_) + " strided rows are not whole blocks of " + std::to_string(inner_));
    // Whole rows per period (strided: whole outer blocks): at least every row kind where the rows
    // are short.
    const std::uint64_t want =
        std::max<std::uint64_t>(kRowKinds, cols_ ? kInputPeriod / std::max<std::uint64_t>(cols_, 1) : 1);
    period_rows_ = std::min<std::uint64_t>(rows_, (want + inner_ - 1) / inner_ * inner_);
    out_ = rt::DeviceBuffer(backend_, (shape_.out_offset + shape_.n + kGuardElements) * esize_);
    in0_ = rt::DeviceBuffer(backend_, (shape_.in_offset + shape_.n) * esize_ + 1);
    if (backward_) in1_ = rt::DeviceBuffer(backend_, (shape_.in_offset + shape_.n) * esize_ + 1);
    upload(in0(), false);
    if (backward_) upload(in1(), true);
    reset_output();
  }

  rt::DevicePtr out() const { return out_.ptr().at(shape_.out_offset * esize_); }
  rt::DevicePtr in0() const { return in0_.ptr().at(shape_.in_offset * esize_); }
  rt::DevicePtr in1() const { return backward_ ? in1_.ptr().at(shape_.in_offset * esize_) : in0(); }

  rt::KernelArgs args() const override {
    rt::KernelArgs a;
    a.out = out();
    a.in0 = in0();
    a.in1 = in1();
    a.rows = rows_;
    a.cols = cols_;
    a.ld_out = a.ld_in0 = a.ld_in1 = cols_ * inner_;
    a.strided = inner_ > 1;
    a.inner = inner_;
    return a;
  }
  std::uint64_t bytes_moved() const override { return (backward_ ? 3 : 2) * shape_.n * esize_; }
  rt::DevicePtr copy_source() const override { return in0(); }
  std::uint64_t copy_bytes() const override { return shape_.n * esize_; }
  std::uint64_t outputs() const override { return shape_.n; }
  std::string note() const override {
    return "rows: " + std::to_string(rows_) + " of " + std::to_string(cols_) + " elements" +
           (inner_ > 1 ? " (strided: " + std::to_string(inner_) + " apart)" : std::string()) +
           (shape_.ordinary
                ? std::string(", every row ordinary")
                : ", every 9th of a kind: ordinary, wide spread, +inf, NaN, all -inf, some -inf, extremes, constant, "
                  "deep" +
                      std::string(backward_
                                      ? "; the some -inf rows' gradient cancels the result to the dtype's rounding"
                                      : ""));
  }

  void reset_output(bool sampled = false) override {
    (void)sampled;
    backend_.fill_bytes(out_.ptr(), kPoisonByte, out_.bytes());
  }

  ErrorStats verify(bool sampled) const override {
    ErrorStats stats(spec_.dtype, act_.bounds().get(spec_.dtype, spec_.direction), backward_);
    if (shape_.n == 0) return stats;
    std::vector<std::uint64_t> rows;
    if (!sampled || rows_ <= 2 * period_rows_ + 64) {
      for (std::uint64_t r = 0; r < rows_; ++r) rows.push_back(r);
    } else {  // every distinct row once, the last row, and 64 more at random
      for (std::uint64_t r = 0; r < period_rows_; ++r) rows.push_back(r);
      rows.push_back(rows_ - 1);
      std::mt19937_64 rng(shape_.seed ^ 0x5eed);
      for (int k = 0; k < 64; ++k) rows.push_back(period_rows_ + rng() % (rows_ - period_rows_));
    }
    // The checked rows' outer blocks (a block is a row where rows are contiguous), a run of
    // consecutive blocks a download, up to kVerifyRunBytes (a download a block would be 65,536
    // blocking copies of 512 bytes for every candidate the tuner verifies at 65536x128).
    const std::uint64_t block = cols_ * inner_;
    const std::uint64_t run_blocks = std::max<std::uint64_t>(1, kVerifyRunBytes / (block * esize_));
    std::vector<unsigned char> host;
    std::sort(rows.begin(), rows.end());
    for (std::size_t i = 0; i < rows.size();) {
      const std::uint64_t b0 = rows[i] / inner_;
      std::uint64_t b1 = b0;
      std::size_t j = i;
      while (j < rows.size() && rows[j] / inner_ <= b1 + 1 && rows[j] / inner_ - b0 < run_blocks)
        b1 = rows[j++] / inner_;
      host.resize((b1 - b0 + 1) * block * esize_);
      backend_.download(host.data(), out().at(b0 * block * esize_), host.size());
      // The run's elements compared on the host's threads, each its own stats, merged (the same
      // counts, maxima and first bad index as one pass).
      std::mutex merging;
      parallel_for((j - i) * cols_, [&](std::uint64_t lo, std::uint64_t hi) {
        ErrorStats part(stats.dtype, stats.bound_ulps, stats.backward);
        const Expected* e = nullptr;
        std::uint64_t held = ~0ull;
        for (std::uint64_t k = lo; k < hi; ++k) {
          const std::uint64_t r = rows[i + k / cols_], c = k % cols_;
          if (k / cols_ != held) {
            held = k / cols_;
            e = &expected(r % period_rows_);
          }
          const std::uint64_t at = (r / inner_ - b0) * block + r % inner_ + c * inner_;
          part.add(b0 * block + at, load_element(spec_.dtype, host.data(), at), e->value[c], e->scale[c],
                   e->allowance.empty() ? 0.0 : e->allowance[c]);
        }
        std::lock_guard<std::mutex> lock(merging);
        stats.merge(part);
      });
      i = j;
    }
    // The guard zones: before the output (its offset) and after it.
    std::vector<unsigned char> guard((shape_.out_offset + kGuardElements) * esize_);
    backend_.download(guard.data(), out_.ptr(), shape_.out_offset * esize_);
    backend_.download(guard.data() + shape_.out_offset * esize_, out().at(shape_.n * esize_), kGuardElements * esize_);
    for (unsigned char b : guard)
      if (b != kPoisonByte) {
        stats.add(shape_.n, 1.0, kNaN);  // a write outside the output
        break;
      }
    return stats;
  }

 private:
  struct Expected {
    std::vector<long double> value;
    std::vector<double> scale;
    std::vector<double> allowance;  // the torch tier's (tier_allowance); else empty
  };

  // The forward input of distinct row p, and for backward the saved output (the reference's
  // forward, rounded to the dtype as the forward kernel stored it) and the incoming gradient.
  std::vector<double> saved_output(std::uint64_t p) const {
    const std::vector<double> x = input_row(spec_.dtype, shape_.seed, p, cols_, kind(p));
    std::vector<double> y(cols_);
    std::vector<long double> yl(cols_);
    reference::row_forward<long double>(act_.act->row_form, x.data(), cols_, yl.data());
    for (std::uint64_t i = 0; i < cols_; ++i) y[i] = round_to(spec_.dtype, static_cast<double>(yl[i]));
    return y;
  }
  std::uint64_t kind(std::uint64_t p) const { return row_kind(p, shape_.ordinary); }
  std::vector<double> gradient(std::uint64_t p, const std::vector<double>& y) const {
    return gradient_row(spec_.dtype, shape_.seed, p, cols_, kind(p), act_.act->row_form, y);
  }
  std::vector<double> host_row(std::uint64_t p, bool second) const {
    if (!backward_) return input_row(spec_.dtype, shape_.seed, p, cols_, kind(p));
    if (second) return saved_output(p);
    return gradient(p, kind(p) == kCancellingKind ? saved_output(p) : std::vector<double>());
  }

  void upload(rt::DevicePtr dst, bool second) const {
    const std::uint64_t generated = period_rows_ * cols_;
    if (generated == 0) return;
    std::vector<unsigned char> host(generated * esize_);
    parallel_for(period_rows_, [&](std::uint64_t b, std::uint64_t e) {
      for (std::uint64_t p = b; p < e; ++p) {
        const std::vector<double> row = host_row(p, second);
        const std::uint64_t start = p / inner_ * cols_ * inner_ + p % inner_;
        for (std::uint64_t i = 0; i < cols_; ++i) store_element(spec_.dtype, host.data(), start + i * inner_, row[i]);
      }
    });
    upload_repeated(backend_, dst, host, esize_, shape_.n);
  }

  // The reference of distinct row p, computed once (the tuner verifies many candidates).
  const Expected& expected(std::uint64_t p) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = expected_.find(p);
    if (it != expected_.end()) return it->second;
    Expected e;
    e.value.resize(cols_);
    e.scale.assign(cols_, 0.0);
    const bool f64 = spec_.dtype == Dtype::f64;
    // Backward: g - sum cancels; the kernel's double arithmetic leaves about 2^-52 of the terms'
    // magnitude there, which counts against 2^-24 of it (float32 and narrower: a fraction of an
    // ulp of float) and against the magnitude itself for float64 (docs/accuracy.md).
    const double cancel = f64 ? 1.0 : 0x1p-24;
    if (!backward_) {
      const std::vector<double> x = input_row(spec_.dtype, shape_.seed, p, cols_, kind(p));
      if (f64) {
        reference::row_forward<long double>(act_.act->row_form, x.data(), cols_, e.value.data());
      } else {
        std::vector<double> v(cols_);
        reference::row_forward<double>(act_.act->row_form, x.data(), cols_, v.data());
        for (std::uint64_t i = 0; i < cols_; ++i) e.value[i] = v[i];
      }
      if (spec_.dtype == Dtype::f32 && act_.torch_tier_kernel(Direction::forward))
        e.allowance = tier_allowance(act_.act->row_form, x, e.value);
    } else {
      const std::vector<double> y = saved_output(p), g = gradient(p, y);
      if (f64) {
        reference::row_backward<long double>(act_.act->row_form, g.data(), y.data(), cols_, e.value.data(),
                                             e.scale.data(), cancel);
      } else {
        std::vector<double> v(cols_);
        reference::row_backward<double>(act_.act->row_form, g.data(), y.data(), cols_, v.data(), e.scale.data(),
                                        cancel);
        for (std::uint64_t i = 0; i < cols_; ++i) e.value[i] = v[i];
      }
    }
    return expected_.emplace(p, std::move(e)).first->second;
  }

  ResolvedActivation act_;
  std::size_t esize_;
  bool backward_;
  std::uint64_t rows_ = 1, cols_ = 0, inner_ = 1, period_rows_ = 1;
  rt::DeviceBuffer in0_, in1_, out_;
  mutable std::mutex mutex_;
  mutable std::map<std::uint64_t, Expected> expected_;
};

}  // namespace

std::unique_ptr<DeviceProblem> make_row_problem(rt::Backend& backend, const KernelSpec& spec,
                                                const ProblemShape& shape) {
  return std::make_unique<RowProblem>(backend, spec, shape);
}

}  // namespace kplay
