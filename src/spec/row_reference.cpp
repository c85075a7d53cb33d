// Host reference of the row activations; see row_reference.hpp.
#include "row_reference.hpp"

#include <cmath>
#include <limits>

namespace kplay::reference {
namespace {

// A sum with each addition's rounding error carried (Neumaier): within about one rounding of the
// exact sum whatever the row length.
template <typename T>
struct Compensated {
  T sum = 0, carry = 0;
  void add(T v) {
    const T t = sum + v;
    carry += std::fabs(sum) >= std::fabs(v) ? (sum - t) + v : (v - t) + sum;
    sum = t;
  }
  // Where the sum is not finite (an infinite gradient), the plain sum, as torch's is.
  T value() const { return std::isfinite(sum) ? sum + carry : sum; }
};

template <typename T>
T exp_of(T v) {
  if constexpr (sizeof(T) > sizeof(double)) return expl(v);
  return std::exp(v);
}

template <typename T>
T log_of(T v) {
  if constexpr (sizeof(T) > sizeof(double)) return logl(v);
  return std::log(v);
}

}  // namespace

template <typename T>
void row_forward(const RowForm& form, const double* x, std::size_t n, T* out) {
  const T inf = std::numeric_limits<T>::infinity();
  // torch's max ignores nothing: NaN and +inf make x - max NaN somewhere, and so the sum and the
  // whole row. The max itself is taken over the numbers; NaN reaches the row through the sum.
  T m = -inf;
  for (std::size_t i = 0; i < n; ++i) {
    const T v = form.negate ? -static_cast<T>(x[i]) : static_cast<T>(x[i]);
    if (v > m) m = v;
  }
  Compensated<T> s;
  for (std::size_t i = 0; i < n; ++i) {
    const T v = form.negate ? -static_cast<T>(x[i]) : static_cast<T>(x[i]);
    s.add(exp_of(v - m));  // -inf - -inf (every element -inf) is NaN, as in torch
  }
  const T sum = s.value();
  // Near 1 (one element dominates) as log1p of the exact excess over 1, so that results near 0
  // keep their precision.
  const T log_sum = sum >= 1 && sum < 2 ? std::log1p((s.sum - 1) + s.carry) : log_of(sum);
  for (std::size_t i = 0; i < n; ++i) {
    const T v = form.negate ? -static_cast<T>(x[i]) : static_cast<T>(x[i]);
    out[i] = form.log ? (v - m) - log_sum : exp_of(v - m) / sum;
  }
}

template <typename T>
void row_backward(const RowForm& form, const double* g, const double* y, std::size_t n, T* out, double* scale,
                  double cancel) {
  // softmax and softmin sum g y, log_softmax sums g; the products of double inputs are exact in
  // long double only for float32 and narrower, so float64's are split (fma) into two terms.
  Compensated<T> s, magnitude;
  for (std::size_t i = 0; i < n; ++i) {
    if (form.log) {
      s.add(static_cast<T>(g[i]));
      magnitude.add(std::fabs(static_cast<T>(g[i])));
    } else {
      const T p = static_cast<T>(g[i]) * static_cast<T>(y[i]);
      s.add(p);
      if constexpr (sizeof(T) > sizeof(double)) {
        s.add(std::fma(static_cast<T>(g[i]), static_cast<T>(y[i]), -p));
      }
      magnitude.add(std::fabs(p));
    }
  }
  const T sum = s.value();
  for (std::size_t i = 0; i < n; ++i) {
    const T gi = static_cast<T>(g[i]), yi = static_cast<T>(y[i]);
    if (form.log) {
      const T e = exp_of(yi);
      out[i] = gi - e * sum;
      if (scale) scale[i] = static_cast<double>((std::fabs(gi) + e * std::fabs(sum)) * static_cast<T>(cancel));
    } else {
      out[i] = form.negate ? yi * (sum - gi) : yi * (gi - sum);
      if (scale)
        scale[i] = static_cast<double>(std::fabs(yi) * (std::fabs(gi) + magnitude.value()) * static_cast<T>(cancel));
    }
  }
}

template void row_forward<double>(const RowForm&, const double*, std::size_t, double*);
template void row_forward<long double>(const RowForm&, const double*, std::size_t, long double*);
template void row_backward<double>(const RowForm&, const double*, const double*, std::size_t, double*, double*, double);
template void row_backward<long double>(const RowForm&, const double*, const double*, std::size_t, long double*,
                                        double*, double);

}  // namespace kplay::reference
