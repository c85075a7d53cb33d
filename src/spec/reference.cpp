// Reference math in double and in long double (reference.hpp says which serves which dtype);
// see reference.hpp for why it is separate. Each function follows torch's definition, including
// which branch a boundary value or NaN takes (written next to it), so the kernels can be held to
// torch's edge behaviour. *_grad_from_output exists only where the derivative follows from the
// output (KPLAY_REF_OUT in the table at the end).
//
// In long double, what is left is the functions' own error (glibc's expl, erfcl, ... a few 2^-64)
// and roundings that a formula amplifies: gelu's erfc argument is carried in two parts (below);
// gelu(tanh)'s tail amplifies u's roundings |2u| times (2^-64 each: 0.85 double ulp at x = -20.6
// against mpmath, where the float64 kernels are 1,500 ulp off); x - tanh x keeps 56 bits or more
// (0.21 double ulp near |x| = 0.1); the derivatives with a root (silu, mish, gelu) cancel near it
// as in double, 11 bits later (verification.cpp measures their error against |grad| * 2^-16
// there). Elsewhere on [-40, 40] mpmath finds 0.002 double ulp at most.
#include "reference.hpp"

#include <cmath>

namespace kplay::reference {
namespace {
// Constants to 64 bits; the double instantiation uses their double roundings, which are the
// double literals the reference had before it was a template (checked below).
// torch.nn.functional.selu: scale and alpha from Klambauer et al. (2017).
constexpr long double kSeluScale = 1.0507009873554804934193349852946L;
constexpr long double kSeluAlpha = 1.6732632423543772848170429916717L;
constexpr long double kSqrt1_2 = 0.70710678118654752440084436210485L;      // 1/sqrt(2)
constexpr long double kInvSqrt2Pi = 0.39894228040143267793994605993438L;   // 1/sqrt(2*pi)
constexpr long double kSqrt2OverPi = 0.79788456080286535587989211986876L;  // sqrt(2/pi)
constexpr long double kGeluKappa = 0.044715L;
constexpr long double kSqrt1_2Lo = 1.8950325588932570796550e-20L;  // 1/sqrt(2) - kSqrt1_2
constexpr long double k2OverSqrtPi = 1.1283791670955125738961589031215452L;
static_assert(static_cast<double>(kSeluScale) == 1.0507009873554804934193349852946 &&
                  static_cast<double>(kSeluAlpha) == 1.6732632423543772848170429916717 &&
                  static_cast<double>(kSqrt1_2) == 0.70710678118654752440084436210485 &&
                  static_cast<double>(kInvSqrt2Pi) == 0.39894228040143267793994605993438 &&
                  static_cast<double>(kSqrt2OverPi) == 0.79788456080286535587989211986876 &&
                  static_cast<double>(kGeluKappa) == 0.044715,
              "the double reference's constants");
template <typename T>
T sigmoid_of(T x) {
  const T e = std::exp(x >= 0 ? -x : x);  // one call (the compiler keeps both of two: errno)
  return x >= 0 ? 1.0 / (1.0 + e) : e / (1.0 + e);
}
// log(1 + e^x) without overflow.
template <typename T>
T softplus_of(T x) {
  return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
}

// The rounding error of the long double product p = a * b, exactly: Dekker's product with the
// factors split at 32 bits (glibc's fmal is a software routine, 40 times slower).
long double product_error(long double a, long double b, long double p) {
  auto split = [](long double v, long double& hi, long double& lo) {
    const long double c = 4294967297.0L * v;  // 2^32 + 1
    hi = c - (c - v);
    lo = v - hi;
  };
  long double ah, al, bh, bl;
  split(a, ah, al);
  split(b, bh, bl);
  return ((ah * bh - p) + ah * bl + al * bh) + al * bl;
}

// erfc(-x / sqrt 2) = 2 Phi(x). erfc(z) ~ e^(-z^2) turns a relative error e of its argument into
// 2 z^2 e: in double, -x / sqrt 2 rounded is 1,476 ulp of gelu at x = -36.5526, and rounded to
// long double it would still be 0.7 ulp of a double. So in long double z = zh + zl, zl the
// product's rounding error plus x times the constant's own, and erfc(z) = erfc(zh) -
// zl (2 / sqrt pi) e^(-zh^2) (the next term is ~zl^2 z: nothing). Left: erfcl's own few 2^-64.
double erfc_neg_x_sqrt1_2(double x) { return std::erfc(-x * static_cast<double>(kSqrt1_2)); }
long double erfc_neg_x_sqrt1_2(long double x) {
  const long double zh = -x * kSqrt1_2;
  if (!std::isfinite(zh)) return std::erfc(zh);
  const long double zl = product_error(-x, kSqrt1_2, zh) - x * kSqrt1_2Lo;
  return std::erfc(zh) - zl * k2OverSqrtPi * std::exp(-zh * zh);
}
// e^(-x^2 / 2), whose argument's rounding counts x^2 / 2 times; in long double x^2 = h + l
// exactly (0.3 double ulp at x = -37 otherwise): e^(-h/2) (1 - l/2).
double exp_neg_half_sq(double x) { return std::exp(-0.5 * x * x); }
long double exp_neg_half_sq(long double x) {
  const long double h = x * x;
  if (!std::isfinite(h)) return std::exp(-0.5L * h);
  return std::exp(-0.5L * h) * (1.0L - 0.5L * product_error(x, x, h));
}
// The rounding error of the product p = a * b: none in double, where the references of float32
// and the 16-bit dtypes multiply two floats (48 bits at most); in long double (float64: two
// doubles) product_error's.
double rounding_error_of_product(double, double, double) { return 0.0; }
long double rounding_error_of_product(long double a, long double b, long double p) {
  return std::isfinite(p) ? product_error(a, b, p) : 0.0L;
}
}  // namespace

// relu: torch.relu keeps NaN; the backward (threshold_backward) zeroes where saved <= 0, so a NaN
// saved value passes the gradient.
template <typename T>
T relu(T x, const double*) {
  return std::isnan(x) ? x : (x > 0.0 ? x : 0.0);
}
template <typename T>
T relu_grad_from_input(T g, T x, const double*) {
  return x <= 0.0 ? 0.0 : g;
}
template <typename T>
T relu_grad_from_output(T g, T y, const double*) {
  return y <= 0.0 ? 0.0 : g;
}

// relu6 = hardtanh(x, 0, 6): a clamp that keeps NaN; hardtanh_backward zeroes where
// x <= min_val or x >= max_val.
template <typename T>
T relu6(T x, const double*) {
  return std::isnan(x) ? x : (x <= 0.0 ? 0.0 : (x >= 6.0 ? 6.0 : x));
}
template <typename T>
T relu6_grad_from_input(T g, T x, const double*) {
  return (x <= 0.0 || x >= 6.0) ? 0.0 : g;
}
template <typename T>
T relu6_grad_from_output(T g, T y, const double*) {
  return (y <= 0.0 || y >= 6.0) ? 0.0 : g;
}

// leaky_relu(negative_slope): x > 0 ? x : x * slope (NaN stays NaN); backward x > 0 ? g : g * slope.
template <typename T>
T leaky_relu(T x, const double* p) {
  return x > 0.0 ? x : x * p[0];
}
template <typename T>
T leaky_relu_grad_from_input(T g, T x, const double* p) {
  return x > 0.0 ? g : g * p[0];
}
template <typename T>
T leaky_relu_grad_from_output(T g, T y, const double* p) {
  return y > 0.0 ? g : g * p[0];
}

// rrelu(lower, upper) in evaluation, as torch's F.rrelu(training=False): leaky_relu with the mean
// slope (lower + upper) / 2. (Training draws a slope per element: src/spec/slope_noise.hpp.)
template <typename T>
T rrelu(T x, const double* p) {
  const T slope = (T(p[0]) + T(p[1])) / 2;
  return x > 0.0 ? x : x * slope;
}
template <typename T>
T rrelu_grad_from_input(T g, T x, const double* p) {
  const T slope = (T(p[0]) + T(p[1])) / 2;
  return x > 0.0 ? g : g * slope;
}
template <typename T>
T rrelu_grad_from_output(T g, T y, const double* p) {
  const T slope = (T(p[0]) + T(p[1])) / 2;
  return y > 0.0 ? g : g * slope;
}

// elu(alpha): torch's elu decides on x <= 0: alpha * expm1(x) there, x elsewhere (NaN stays NaN).
template <typename T>
T elu(T x, const double* p) {
  return x <= 0.0 ? p[0] * std::expm1(x) : x;
}
template <typename T>
T elu_grad_from_input(T g, T x, const double* p) {
  return x <= 0.0 ? g * p[0] * std::exp(x) : g;
}
// From the output (torch's is_result path): y <= 0 ? g * (y + alpha) : g.
template <typename T>
T elu_grad_from_output(T g, T y, const double* p) {
  return y <= 0.0 ? g * (y + p[0]) : g;
}

// celu(alpha) = elu with input scale 1/alpha: x <= 0 ? alpha * expm1(x / alpha) : x.
template <typename T>
T celu(T x, const double* p) {
  return x <= 0.0 ? p[0] * std::expm1(x / p[0]) : x;
}
template <typename T>
T celu_grad_from_input(T g, T x, const double* p) {
  return x <= 0.0 ? g * std::exp(x / p[0]) : g;
}
template <typename T>
T celu_grad_from_output(T g, T y, const double* p) {
  return y <= 0.0 ? g * (y / p[0] + 1.0) : g;
}

// selu: scale * elu(x, alpha) with the constants above.
template <typename T>
T selu(T x, const double*) {
  return x <= 0.0 ? T(kSeluScale) * T(kSeluAlpha) * std::expm1(x) : T(kSeluScale) * x;
}
template <typename T>
T selu_grad_from_input(T g, T x, const double*) {
  return x <= 0.0 ? g * T(kSeluScale) * T(kSeluAlpha) * std::exp(x) : g * T(kSeluScale);
}
template <typename T>
T selu_grad_from_output(T g, T y, const double*) {
  return y <= 0.0 ? g * (y + T(kSeluScale) * T(kSeluAlpha)) : g * T(kSeluScale);
}

// gelu(approximate): p[0] = 0 for 'none' (x * Phi(x), written with erfc so the negative tail keeps
// its relative precision), 1 for 'tanh' (0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))).
template <typename T>
T gelu(T x, const double* p) {
  if (p[0] == 0) return 0.5 * x * erfc_neg_x_sqrt1_2(x);
  const T u = T(kSqrt2OverPi) * (x + T(kGeluKappa) * x * x * x);
  // 1 + tanh(u) = 2 sigmoid(2u), which keeps relative precision where tanh(u) is near -1.
  return x * sigmoid_of(2.0 * u);
}
// torch's gelu_backward: none: g * (Phi(x) + x * phi(x)); tanh: the derivative of the tanh form,
// 0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 kappa x^2) with t = tanh(u).
template <typename T>
T gelu_grad_from_input(T g, T x, const double* p) {
  if (p[0] == 0) return g * (0.5 * erfc_neg_x_sqrt1_2(x) + x * T(kInvSqrt2Pi) * exp_neg_half_sq(x));
  // Past |x| = 1e100 the derivative is 1 or 0 in double, and the formula below would give NaN
  // (0 * inf) once x^3 overflows, as torch's float64 one does for finite |x| > 1.3e154: the limit,
  // as the kernels' snippet, is the definition; +-inf stay NaN (x - x).
  if (std::fabs(x) > 1e100) return (x > 0.0 ? g : g * 0.0) + g * (x - x);
  const T u = T(kSqrt2OverPi) * (x + T(kGeluKappa) * x * x * x);
  const T s = sigmoid_of(2.0 * u);      // 0.5 (1 + t)
  const T sech2 = 4.0 * s * (1.0 - s);  // 1 - t^2
  return g * (s + 0.5 * x * sech2 * T(kSqrt2OverPi) * (1.0 + 3.0 * T(kGeluKappa) * x * x));
}

// silu: x * sigmoid(x); backward g * s * (1 + x * (1 - s)).
template <typename T>
T silu(T x, const double*) {
  return x * sigmoid_of(x);
}
template <typename T>
T silu_grad_from_input(T g, T x, const double*) {
  const T s = sigmoid_of(x);
  return g * s * (1.0 + x * sigmoid_of(-x));
}

// quick_gelu(beta): x * sigmoid(beta x), transformers' QuickGELUActivation and timm's QuickGELU at
// beta = 1.702 (torch: input * torch.sigmoid(1.702 * input)); TensorFlow's silu(x, beta). beta
// arrives as torch rounds its Python float for the tensor (ParamType::compute: float below
// float64). z = beta x is taken exact: sigmoid's tail multiplies z's rounding error zl by |z|, so
// the long double instantiation adds it to first order (0.7 double ulp at x = -745 without), and
// in double it is 0 (a float beta times a float x). The derivative is silu'(z) =
// s (1 + z sigmoid(-z)), s = sigmoid(z), and zl enters through silu''(z) = s sm (2 + z (sm - s)).
// NaN at -inf (forward and backward) and +inf (backward), as torch's formula (inf * 0).
template <typename T>
T quick_gelu(T x, const double* p) {
  const T z = x * T(p[0]);
  // Beyond |z| = 1e4 sigmoid is 0 or 1 either way, and zl no longer small against 1.
  const T zl = std::fabs(z) < 1e4 ? rounding_error_of_product(x, T(p[0]), z) : T(0);
  return x * sigmoid_of(z) * (1.0 + zl * sigmoid_of(-z));
}
template <typename T>
T quick_gelu_grad_from_input(T g, T x, const double* p) {
  const T z = x * T(p[0]);
  // Beyond |z| = 1e4 the derivative is 1 or a negative zero in both types, and z may have
  // overflowed in double (x near 1e308) where it has not in long double: the limit, and NaN at
  // +-inf (x - x).
  if (std::fabs(z) > 1e4) return std::isinf(x) ? g * (x - x) : (z > 0.0 ? g : g * -0.0);
  const T zl = rounding_error_of_product(x, T(p[0]), z);
  const T s = sigmoid_of(z), sm = sigmoid_of(-z);
  return g * s * (1.0 + z * sm) + g * zl * (s * sm * (2.0 + z * (sm - s)));  // silu's, then zl's term
}

// relu2: relu(x)^2, transformers' ReLUSquaredActivation (torch.square(relu(x))); NaN stays NaN
// (relu keeps it), x <= 0 gives +0. Backward 2 relu(x) g: torch's pow backward g * (2 r), r =
// relu(x), through threshold_backward (zero where r <= 0; a NaN r passes g * NaN). 2x is exact
// here, where torch's float 2 * r is inf past 2^127 at a finite input: the definition, not that.
// No derivative from the output: y = x^2 does not keep x where it overflows or underflows.
template <typename T>
T relu2(T x, const double*) {
  return x > 0.0 ? x * x : (std::isnan(x) ? x : 0.0);
}
template <typename T>
T relu2_grad_from_input(T g, T x, const double*) {
  return x <= 0.0 ? 0.0 : 2.0 * (g * x);  // g x is exact in double for float inputs
}

// mish: x * tanh(softplus(x)) (torch uses log1p(exp(x)), no threshold); backward
// g * (t + x * sigmoid(x) * (1 - t^2)) with t = tanh(softplus(x)).
template <typename T>
T mish(T x, const double*) {
  return x * std::tanh(softplus_of(x));
}
template <typename T>
T mish_grad_from_input(T g, T x, const double*) {
  const T sp = softplus_of(x);
  const T t = std::tanh(sp);
  // 1 - t^2 = sech^2(sp) = 4 e^{-2 sp} / (1 + e^{-2 sp})^2, exact where t rounds to 1.
  const T e = std::exp(-2.0 * sp);
  const T sech2 = 4.0 * e / ((1.0 + e) * (1.0 + e));
  return g * (t + x * sigmoid_of(x) * sech2);
}

// softplus(beta, threshold): x * beta > threshold ? x : log1p(exp(beta * x)) / beta. torch
// compares the product as its float64 kernel rounds it, so the long double instantiation too
// compares x * beta in double (x is a double there); the formulas take the product exact.
template <typename T>
T softplus(T x, const double* p) {
  return static_cast<double>(x) * p[0] > p[1] ? x : softplus_of(x * p[0]) / p[0];
}
// backward (torch): z = exp(x * beta); x * beta > threshold ? g : g * z / (z + 1).
template <typename T>
T softplus_grad_from_input(T g, T x, const double* p) {
  return static_cast<double>(x) * p[0] > p[1] ? g : g * sigmoid_of(x * p[0]);
}
// From the output: sigmoid(beta x) = 1 - exp(-beta y).
template <typename T>
T softplus_grad_from_output(T g, T y, const double* p) {
  return static_cast<double>(y) * p[0] > p[1] ? g : g * -std::expm1(-y * p[0]);
}

// softsign: x / (1 + |x|); derivative 1 / (1 + |x|)^2 = (1 - |y|)^2.
template <typename T>
T softsign(T x, const double*) {
  return x / (1.0 + std::fabs(x));
}
template <typename T>
T softsign_grad_from_input(T g, T x, const double*) {
  const T d = 1.0 + std::fabs(x);
  return g / (d * d);
}
template <typename T>
T softsign_grad_from_output(T g, T y, const double*) {
  const T d = 1.0 - std::fabs(y);
  return g * d * d;
}

// sigmoid: 1 / (1 + exp(-x)); torch's sigmoid_backward uses the output: g * y * (1 - y).
template <typename T>
T sigmoid(T x, const double*) {
  return sigmoid_of(x);
}
template <typename T>
T sigmoid_grad_from_input(T g, T x, const double*) {
  return g * sigmoid_of(x) * sigmoid_of(-x);
}
template <typename T>
T sigmoid_grad_from_output(T g, T y, const double*) {
  return g * y * (1.0 - y);
}

// tanh; torch's tanh_backward uses the output: g * (1 - y^2).
template <typename T>
T tanh(T x, const double*) {
  return std::tanh(x);
}
template <typename T>
T tanh_grad_from_input(T g, T x, const double*) {
  if (std::isinf(x)) return g * 0.0;
  const T e = std::exp(-2.0 * std::fabs(x));  // 1 - tanh^2 = 4e / (1 + e)^2, no cancellation
  return g * 4.0 * e / ((1.0 + e) * (1.0 + e));
}
template <typename T>
T tanh_grad_from_output(T g, T y, const double*) {
  return g * (1.0 - y * y);
}

// hardtanh(min_val, max_val): a clamp that keeps NaN; backward zero where x <= min or x >= max.
template <typename T>
T hardtanh(T x, const double* p) {
  return std::isnan(x) ? x : (x < p[0] ? p[0] : (x > p[1] ? p[1] : x));
}
template <typename T>
T hardtanh_grad_from_input(T g, T x, const double* p) {
  return (x <= p[0] || x >= p[1]) ? 0.0 : g;
}
template <typename T>
T hardtanh_grad_from_output(T g, T y, const double* p) {
  return (y <= p[0] || y >= p[1]) ? 0.0 : g;
}

// hardsigmoid: min(max(x + 3, 0), 6) / 6, NaN stays NaN; backward g / 6 where -3 < x < 3.
template <typename T>
T hardsigmoid(T x, const double*) {
  if (std::isnan(x)) return x;
  const T r = x + 3.0;
  return (r <= 0.0 ? 0.0 : (r >= 6.0 ? 6.0 : r)) / 6.0;
}
template <typename T>
T hardsigmoid_grad_from_input(T g, T x, const double*) {
  return (x > -3.0 && x < 3.0) ? g / 6.0 : 0.0;
}
template <typename T>
T hardsigmoid_grad_from_output(T g, T y, const double*) {
  return (y > 0.0 && y < 1.0) ? g / 6.0 : 0.0;
}

// hardswish: x * min(max(x + 3, 0), 6) / 6; backward (torch 2.11): x <= -3 ? 0 : x < 3 ? g (x/3 + 1/2) : g.
template <typename T>
T hardswish(T x, const double*) {
  if (std::isnan(x)) return x;
  const T r = x + 3.0;
  // x >= 3 is x itself: torch's x * 6 / 6 overflows to inf past 3e307 (float: 5.7e37), an
  // artifact at a finite input that the kernels do not copy (docs/activations.md).
  if (r >= 6.0) return x;
  return x * (r <= 0.0 ? 0.0 : r) / 6.0;
}
template <typename T>
T hardswish_grad_from_input(T g, T x, const double*) {
  // x / 3 + 1/2 written (2x + 3) / 6: exact near x = -1.5, where the sum would cancel.
  return x <= -3.0 ? 0.0 : (x < 3.0 ? g * ((2.0 * x + 3.0) / 6.0) : g);
}

// logsigmoid: -softplus(-x); its derivative sigmoid(-x) = 1 - e^y = -expm1(y).
template <typename T>
T logsigmoid(T x, const double*) {
  return -softplus_of(-x);
}
template <typename T>
T logsigmoid_grad_from_input(T g, T x, const double*) {
  return g * sigmoid_of(-x);
}
template <typename T>
T logsigmoid_grad_from_output(T g, T y, const double*) {
  return g * -std::expm1(y);
}

// tanhshrink: x - tanh(x); backward g * tanh(x)^2.
template <typename T>
T tanhshrink(T x, const double*) {
  if (std::isinf(x)) return x;
  // x - tanh x cancels near 0: a series there, and long double elsewhere so that the result
  // keeps more than double precision (it loses up to 8 bits for |x| near 0.1: 56 are left, which
  // the long double instantiation returns unrounded).
  const long double lx = x;
  if (std::fabs(x) < 0.1) {  // x^3/3 - 2x^5/15 + 17x^7/315 - ...: terms fall by 250x each
    const long double c[] = {1.0L / 3,         -2.0L / 15,          17.0L / 315,          -62.0L / 2835,
                             1382.0L / 155925, -21844.0L / 6081075, 929569.0L / 638512875};
    long double s = 0, term = lx;
    for (long double ci : c) {
      term *= lx * lx;
      s += ci * term;
    }
    return static_cast<T>(s);
  }
  return static_cast<T>(lx - std::tanh(lx));
}
template <typename T>
T tanhshrink_grad_from_input(T g, T x, const double*) {
  const T t = std::tanh(x);
  return g * t * t;
}

// hardshrink(lambd): -l <= x <= l ? 0 : x (NaN stays NaN); backward likewise with g. A negative l
// (torch takes any) makes the band empty: the identity, and g everywhere. From the output only
// for l >= 0 (the registry's output_determines_grad): below, y == 0 at x = 0 passes g in torch.
template <typename T>
T hardshrink(T x, const double* p) {
  return (x >= -p[0] && x <= p[0]) ? 0.0 : x;
}
template <typename T>
T hardshrink_grad_from_input(T g, T x, const double* p) {
  return (x >= -p[0] && x <= p[0]) ? 0.0 : g;
}
template <typename T>
T hardshrink_grad_from_output(T g, T y, const double*) {
  return y == 0.0 ? 0.0 : g;
}

// softshrink(lambd): x > l ? x - l : x < -l ? x + l : x * 0 (torch multiplies by zero so NaN
// stays NaN, and a negative x inside the band gives -0); backward zero where -l <= x <= l, the
// same band as hardshrink's (torch's two backward kernels are the same test).
template <typename T>
T softshrink(T x, const double* p) {
  return x > p[0] ? x - p[0] : (x < -p[0] ? x + p[0] : x * 0.0);
}
template <typename T>
T softshrink_grad_from_input(T g, T x, const double* p) {
  return hardshrink_grad_from_input(g, x, p);
}
template <typename T>
T softshrink_grad_from_output(T g, T y, const double* p) {
  return hardshrink_grad_from_output(g, y, p);
}

// threshold(threshold, value): x <= threshold ? value : x (NaN stays NaN); backward
// x <= threshold ? 0 : g.
template <typename T>
T threshold(T x, const double* p) {
  return x <= p[0] ? p[1] : x;
}
template <typename T>
T threshold_grad_from_input(T g, T x, const double* p) {
  return x <= p[0] ? 0.0 : g;
}

// Every built-in's reference under its registry name, which is how the registry finds it.
// KPLAY_REF_OUT: the derivative also follows from the output (name_grad_from_output).
namespace {
struct Named {
  const char* name;
  Functions functions;
};
// `n` names a function template: parenthesized, it could not take its template arguments.
// clang-format off
// NOLINTBEGIN(bugprone-macro-parentheses)
#define KPLAY_REF_WITH(n, out, out_ld) \
  Named{#n, Functions{n<double>, n##_grad_from_input<double>, out, \
                      n<long double>, n##_grad_from_input<long double>, out_ld}}
#define KPLAY_REF(n) KPLAY_REF_WITH(n, nullptr, nullptr)
#define KPLAY_REF_OUT(n) KPLAY_REF_WITH(n, n##_grad_from_output<double>, n##_grad_from_output<long double>)
// NOLINTEND(bugprone-macro-parentheses)
// clang-format on
const std::vector<Named>& table() {
  // clang-format off
  static const std::vector<Named> t = {
      KPLAY_REF_OUT(relu),
      KPLAY_REF_OUT(relu6),
      KPLAY_REF(relu2),
      KPLAY_REF_OUT(leaky_relu),
      KPLAY_REF_OUT(rrelu),
      KPLAY_REF_OUT(elu),
      KPLAY_REF_OUT(celu),
      KPLAY_REF_OUT(selu),
      KPLAY_REF(gelu),
      KPLAY_REF(silu),
      KPLAY_REF(mish),
      KPLAY_REF(quick_gelu),
      KPLAY_REF_OUT(softplus),
      KPLAY_REF_OUT(softsign),
      KPLAY_REF_OUT(sigmoid),
      KPLAY_REF_OUT(tanh),
      KPLAY_REF_OUT(hardtanh),
      KPLAY_REF_OUT(hardsigmoid),
      KPLAY_REF(hardswish),
      KPLAY_REF_OUT(logsigmoid),
      KPLAY_REF(tanhshrink),
      KPLAY_REF_OUT(softshrink),
      KPLAY_REF_OUT(hardshrink),
      KPLAY_REF(threshold),
  };
  // clang-format on
  return t;
}
#undef KPLAY_REF_WITH
#undef KPLAY_REF
#undef KPLAY_REF_OUT
}  // namespace

const Functions* find(const std::string& name) {
  for (const Named& n : table())
    if (name == n.name) return &n.functions;
  return nullptr;
}

std::vector<std::string> names() {
  std::vector<std::string> out;
  for (const Named& n : table()) out.emplace_back(n.name);
  return out;
}

template double selu<double>(double, const double*);
template long double selu<long double>(long double, const double*);

}  // namespace kplay::reference
