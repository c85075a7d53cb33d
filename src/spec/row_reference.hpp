// Host reference of the row activations (the softmax family), written from torch's definitions:
// softmax(x)_i = exp(x_i - max) / sum_j exp(x_j - max), log_softmax = x_i - max - log(sum), softmin
// = softmax(-x); backward from the saved output y and the incoming gradient g: softmax
// y (g - sum g y), softmin its negation (softmin is softmax of -x), log_softmax g - exp(y) sum g.
// The max-subtracting formula is torch's, and so are its edges: a row holding +inf or NaN, or
// whose every element is -inf, is NaN throughout; -inf elements of any other row give 0 (log:
// -inf).
//
// T is double for float32 and the 16-bit dtypes and long double for float64 (as reference.hpp);
// sums are compensated (each term's rounding error carried), so the reference's own error is far
// below the kernels' bounds at any row length.
#pragma once
#include <cstddef>

#include "activations.hpp"

namespace kplay::reference {

template <typename T>
void row_forward(const RowForm& form, const double* x, std::size_t n, T* out);

// scale (optional, n values): the magnitude an error of each result is measured against where it
// exceeds the result (verification.hpp, ErrorStats::add), that of the terms that cancel in
// g - sum and g - exp(y) sum, times `cancel` (the relative error the kernel's double arithmetic
// leaves in them, over that of the dtype).
template <typename T>
void row_backward(const RowForm& form, const double* g, const double* y, std::size_t n, T* out, double* scale = nullptr,
                  double cancel = 0);

}  // namespace kplay::reference
