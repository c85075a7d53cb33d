// Reference math in double precision; see reference.hpp for why it is separate. Each function
// follows torch's definition, including which branch a boundary value or NaN takes (written next
// to it), so the kernels can be held to torch's edge behaviour. Where an activation's derivative
// does not follow from its output, *_grad_from_output is never registered and returns NaN.
#include "reference.hpp"

#include <cmath>
#include <limits>

namespace kplay::reference {
namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// torch.nn.functional.selu: scale and alpha from Klambauer et al. (2017).
constexpr double kSeluScale = 1.0507009873554804934193349852946;
constexpr double kSeluAlpha = 1.6732632423543772848170429916717;
constexpr double kSqrt1_2 = 0.70710678118654752440084436210485;      // 1/sqrt(2)
constexpr double kInvSqrt2Pi = 0.39894228040143267793994605993438;   // 1/sqrt(2*pi)
constexpr double kSqrt2OverPi = 0.79788456080286535587989211986876;  // sqrt(2/pi)
constexpr double kGeluKappa = 0.044715;

double sigmoid_of(double x) { return x >= 0 ? 1.0 / (1.0 + std::exp(-x)) : std::exp(x) / (1.0 + std::exp(x)); }
// log(1 + e^x) without overflow.
double softplus_of(double x) { return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }
}  // namespace

// relu: torch.relu keeps NaN; the backward (threshold_backward) zeroes where saved <= 0, so a NaN
// saved value passes the gradient.
double relu(double x, const double*) { return std::isnan(x) ? x : (x > 0.0 ? x : 0.0); }
double relu_grad_from_input(double g, double x, const double*) { return x <= 0.0 ? 0.0 : g; }
double relu_grad_from_output(double g, double y, const double*) { return y <= 0.0 ? 0.0 : g; }

// relu6 = hardtanh(x, 0, 6): a clamp that keeps NaN; hardtanh_backward zeroes where
// x <= min_val or x >= max_val.
double relu6(double x, const double*) { return std::isnan(x) ? x : (x <= 0.0 ? 0.0 : (x >= 6.0 ? 6.0 : x)); }
double relu6_grad_from_input(double g, double x, const double*) { return (x <= 0.0 || x >= 6.0) ? 0.0 : g; }
double relu6_grad_from_output(double g, double y, const double*) { return (y <= 0.0 || y >= 6.0) ? 0.0 : g; }

// leaky_relu(negative_slope): x > 0 ? x : x * slope (NaN stays NaN); backward x > 0 ? g : g * slope.
double leaky_relu(double x, const double* p) { return x > 0.0 ? x : x * p[0]; }
double leaky_relu_grad_from_input(double g, double x, const double* p) { return x > 0.0 ? g : g * p[0]; }
double leaky_relu_grad_from_output(double g, double y, const double* p) { return y > 0.0 ? g : g * p[0]; }

// elu(alpha): torch's elu decides on x <= 0: alpha * expm1(x) there, x elsewhere (NaN stays NaN).
double elu(double x, const double* p) { return x <= 0.0 ? p[0] * std::expm1(x) : x; }
double elu_grad_from_input(double g, double x, const double* p) { return x <= 0.0 ? g * p[0] * std::exp(x) : g; }
// From the output (torch's is_result path): y <= 0 ? g * (y + alpha) : g.
double elu_grad_from_output(double g, double y, const double* p) { return y <= 0.0 ? g * (y + p[0]) : g; }

// celu(alpha) = elu with input scale 1/alpha: x <= 0 ? alpha * expm1(x / alpha) : x.
double celu(double x, const double* p) { return x <= 0.0 ? p[0] * std::expm1(x / p[0]) : x; }
double celu_grad_from_input(double g, double x, const double* p) { return x <= 0.0 ? g * std::exp(x / p[0]) : g; }
double celu_grad_from_output(double g, double y, const double* p) { return y <= 0.0 ? g * (y / p[0] + 1.0) : g; }

// selu: scale * elu(x, alpha) with the constants above.
double selu(double x, const double*) { return x <= 0.0 ? kSeluScale * kSeluAlpha * std::expm1(x) : kSeluScale * x; }
double selu_grad_from_input(double g, double x, const double*) {
  return x <= 0.0 ? g * kSeluScale * kSeluAlpha * std::exp(x) : g * kSeluScale;
}
double selu_grad_from_output(double g, double y, const double*) {
  return y <= 0.0 ? g * (y + kSeluScale * kSeluAlpha) : g * kSeluScale;
}

// gelu(approximate): p[0] = 0 for 'none' (x * Phi(x), written with erfc so the negative tail keeps
// its relative precision), 1 for 'tanh' (0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))).
double gelu(double x, const double* p) {
  if (p[0] == 0) return 0.5 * x * std::erfc(-x * kSqrt1_2);
  const double u = kSqrt2OverPi * (x + kGeluKappa * x * x * x);
  // 1 + tanh(u) = 2 sigmoid(2u), which keeps relative precision where tanh(u) is near -1.
  return x * sigmoid_of(2.0 * u);
}
// torch's gelu_backward: none: g * (Phi(x) + x * phi(x)); tanh: the derivative of the tanh form,
// 0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 kappa x^2) with t = tanh(u).
double gelu_grad_from_input(double g, double x, const double* p) {
  if (p[0] == 0) return g * (0.5 * std::erfc(-x * kSqrt1_2) + x * kInvSqrt2Pi * std::exp(-0.5 * x * x));
  // Past |x| = 1e100 the derivative is 1 or 0 in double, and the formula below would give NaN
  // (0 * inf) once x^3 overflows, as torch's float64 one does for finite |x| > 1.3e154: the limit,
  // as the kernels' snippet, is the definition; +-inf stay NaN (x - x).
  if (std::fabs(x) > 1e100) return (x > 0.0 ? g : g * 0.0) + g * (x - x);
  const double u = kSqrt2OverPi * (x + kGeluKappa * x * x * x);
  const double s = sigmoid_of(2.0 * u);      // 0.5 (1 + t)
  const double sech2 = 4.0 * s * (1.0 - s);  // 1 - t^2
  return g * (s + 0.5 * x * sech2 * kSqrt2OverPi * (1.0 + 3.0 * kGeluKappa * x * x));
}
double gelu_grad_from_output(double, double, const double*) { return kNaN; }

// silu: x * sigmoid(x); backward g * s * (1 + x * (1 - s)).
double silu(double x, const double*) { return x * sigmoid_of(x); }
double silu_grad_from_input(double g, double x, const double*) {
  const double s = sigmoid_of(x);
  return g * s * (1.0 + x * sigmoid_of(-x));
}
double silu_grad_from_output(double, double, const double*) { return kNaN; }

// mish: x * tanh(softplus(x)) (torch uses log1p(exp(x)), no threshold); backward
// g * (t + x * sigmoid(x) * (1 - t^2)) with t = tanh(softplus(x)).
double mish(double x, const double*) { return x * std::tanh(softplus_of(x)); }
double mish_grad_from_input(double g, double x, const double*) {
  const double t = std::tanh(softplus_of(x));
  // 1 - t^2 = sech^2(sp) = 4 e^{-2 sp} / (1 + e^{-2 sp})^2, exact where t rounds to 1.
  const double e = std::exp(-2.0 * softplus_of(x));
  const double sech2 = 4.0 * e / ((1.0 + e) * (1.0 + e));
  return g * (t + x * sigmoid_of(x) * sech2);
}
double mish_grad_from_output(double, double, const double*) { return kNaN; }

// softplus(beta, threshold): x * beta > threshold ? x : log1p(exp(beta * x)) / beta.
double softplus(double x, const double* p) { return x * p[0] > p[1] ? x : softplus_of(x * p[0]) / p[0]; }
// backward (torch): z = exp(x * beta); x * beta > threshold ? g : g * z / (z + 1).
double softplus_grad_from_input(double g, double x, const double* p) {
  return x * p[0] > p[1] ? g : g * sigmoid_of(x * p[0]);
}
// From the output: sigmoid(beta x) = 1 - exp(-beta y).
double softplus_grad_from_output(double g, double y, const double* p) {
  return y * p[0] > p[1] ? g : g * -std::expm1(-y * p[0]);
}

// softsign: x / (1 + |x|); derivative 1 / (1 + |x|)^2 = (1 - |y|)^2.
double softsign(double x, const double*) { return x / (1.0 + std::fabs(x)); }
double softsign_grad_from_input(double g, double x, const double*) {
  const double d = 1.0 + std::fabs(x);
  return g / (d * d);
}
double softsign_grad_from_output(double g, double y, const double*) {
  const double d = 1.0 - std::fabs(y);
  return g * d * d;
}

// sigmoid: 1 / (1 + exp(-x)); torch's sigmoid_backward uses the output: g * y * (1 - y).
double sigmoid(double x, const double*) { return sigmoid_of(x); }
double sigmoid_grad_from_input(double g, double x, const double*) { return g * sigmoid_of(x) * sigmoid_of(-x); }
double sigmoid_grad_from_output(double g, double y, const double*) { return g * y * (1.0 - y); }

// tanh; torch's tanh_backward uses the output: g * (1 - y^2).
double tanh(double x, const double*) { return std::tanh(x); }
double tanh_grad_from_input(double g, double x, const double*) {
  if (std::isinf(x)) return g * 0.0;
  const double e = std::exp(-2.0 * std::fabs(x));  // 1 - tanh^2 = 4e / (1 + e)^2, no cancellation
  return g * 4.0 * e / ((1.0 + e) * (1.0 + e));
}
double tanh_grad_from_output(double g, double y, const double*) { return g * (1.0 - y * y); }

// hardtanh(min_val, max_val): a clamp that keeps NaN; backward zero where x <= min or x >= max.
double hardtanh(double x, const double* p) { return std::isnan(x) ? x : (x < p[0] ? p[0] : (x > p[1] ? p[1] : x)); }
double hardtanh_grad_from_input(double g, double x, const double* p) { return (x <= p[0] || x >= p[1]) ? 0.0 : g; }
double hardtanh_grad_from_output(double g, double y, const double* p) { return (y <= p[0] || y >= p[1]) ? 0.0 : g; }

// hardsigmoid: min(max(x + 3, 0), 6) / 6, NaN stays NaN; backward g / 6 where -3 < x < 3.
double hardsigmoid(double x, const double*) {
  if (std::isnan(x)) return x;
  const double r = x + 3.0;
  return (r <= 0.0 ? 0.0 : (r >= 6.0 ? 6.0 : r)) / 6.0;
}
double hardsigmoid_grad_from_input(double g, double x, const double*) { return (x > -3.0 && x < 3.0) ? g / 6.0 : 0.0; }
double hardsigmoid_grad_from_output(double g, double y, const double*) { return (y > 0.0 && y < 1.0) ? g / 6.0 : 0.0; }

// hardswish: x * min(max(x + 3, 0), 6) / 6; backward (torch 2.11): x <= -3 ? 0 : x < 3 ? g (x/3 + 1/2) : g.
double hardswish(double x, const double*) {
  if (std::isnan(x)) return x;
  const double r = x + 3.0;
  // x >= 3 is x itself: torch's x * 6 / 6 overflows to inf past 3e307 (float: 5.7e37), an
  // artifact at a finite input that the kernels do not copy (docs/activations.md).
  if (r >= 6.0) return x;
  return x * (r <= 0.0 ? 0.0 : r) / 6.0;
}
double hardswish_grad_from_input(double g, double x, const double*) {
  // x / 3 + 1/2 written (2x + 3) / 6: exact near x = -1.5, where the sum would cancel.
  return x <= -3.0 ? 0.0 : (x < 3.0 ? g * ((2.0 * x + 3.0) / 6.0) : g);
}
double hardswish_grad_from_output(double, double, const double*) { return kNaN; }

// logsigmoid: -softplus(-x); its derivative sigmoid(-x) = 1 - e^y = -expm1(y).
double logsigmoid(double x, const double*) { return -softplus_of(-x); }
double logsigmoid_grad_from_input(double g, double x, const double*) { return g * sigmoid_of(-x); }
double logsigmoid_grad_from_output(double g, double y, const double*) { return g * -std::expm1(y); }

// tanhshrink: x - tanh(x); backward g * tanh(x)^2.
double tanhshrink(double x, const double*) {
  if (std::isinf(x)) return x;
  // x - tanh x cancels near 0: a series there, and long double elsewhere so that the result
  // keeps more than double precision (it loses up to 8 bits for |x| near 0.1).
  const long double lx = x;
  if (std::fabs(x) < 0.1) {  // x^3/3 - 2x^5/15 + 17x^7/315 - ...: terms fall by 250x each
    const long double c[] = {1.0L / 3,         -2.0L / 15,          17.0L / 315,          -62.0L / 2835,
                             1382.0L / 155925, -21844.0L / 6081075, 929569.0L / 638512875};
    long double s = 0, term = lx;
    for (long double ci : c) {
      term *= lx * lx;
      s += ci * term;
    }
    return static_cast<double>(s);
  }
  return static_cast<double>(lx - std::tanh(lx));
}
double tanhshrink_grad_from_input(double g, double x, const double*) {
  const double t = std::tanh(x);
  return g * t * t;
}
double tanhshrink_grad_from_output(double, double, const double*) { return kNaN; }

// softshrink(lambd): x > l ? x - l : x < -l ? x + l : x * 0 (torch multiplies by zero so NaN
// stays NaN, and a negative x inside the band gives -0); backward zero where -l <= x <= l.
double softshrink(double x, const double* p) { return x > p[0] ? x - p[0] : (x < -p[0] ? x + p[0] : x * 0.0); }
double softshrink_grad_from_input(double g, double x, const double* p) { return (x >= -p[0] && x <= p[0]) ? 0.0 : g; }
double softshrink_grad_from_output(double g, double y, const double*) { return y == 0.0 ? 0.0 : g; }

// hardshrink(lambd): -l <= x <= l ? 0 : x (NaN stays NaN); backward likewise with g.
double hardshrink(double x, const double* p) { return (x >= -p[0] && x <= p[0]) ? 0.0 : x; }
double hardshrink_grad_from_input(double g, double x, const double* p) { return (x >= -p[0] && x <= p[0]) ? 0.0 : g; }
double hardshrink_grad_from_output(double g, double y, const double*) { return y == 0.0 ? 0.0 : g; }

// threshold(threshold, value): x <= threshold ? value : x (NaN stays NaN); backward
// x <= threshold ? 0 : g.
double threshold(double x, const double* p) { return x <= p[0] ? p[1] : x; }
double threshold_grad_from_input(double g, double x, const double* p) { return x <= p[0] ? 0.0 : g; }
double threshold_grad_from_output(double, double, const double*) { return kNaN; }

}  // namespace kplay::reference
