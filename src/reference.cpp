// Reference math in double precision; see reference.hpp for why it is separate.
#include "reference.hpp"

#include <cmath>

namespace kplay::reference {
namespace {
// torch.nn.functional.selu: scale and alpha from Klambauer et al. (2017).
constexpr double kSeluScale = 1.0507009873554804934193349852946;
constexpr double kSeluAlpha = 1.6732632423543772848170429916717;
}  // namespace

double selu(double x) {
  if (std::isnan(x)) return x;
  return x > 0.0 ? kSeluScale * x : kSeluScale * (kSeluAlpha * std::expm1(x));
}

// torch's elu_backward decides on `x <= 0`, so a NaN saved value takes the positive branch.
double selu_grad_from_input(double grad, double x) {
  return x <= 0.0 ? grad * kSeluScale * kSeluAlpha * std::exp(x) : grad * kSeluScale;
}

double selu_grad_from_output(double grad, double y) {
  return y <= 0.0 ? grad * (y + kSeluScale * kSeluAlpha) : grad * kSeluScale;
}

double relu(double x) {
  if (std::isnan(x)) return x;  // torch.relu keeps NaN
  return x > 0.0 ? x : 0.0;
}

// torch's threshold_backward: zero where the saved value is <= 0, the gradient elsewhere (NaN too).
double relu_grad_from_input(double grad, double x) { return x <= 0.0 ? 0.0 : grad; }
double relu_grad_from_output(double grad, double y) { return y <= 0.0 ? 0.0 : grad; }

}  // namespace kplay::reference
