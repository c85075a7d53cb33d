/* CELU(alpha) as torch: x <= 0 ? alpha * expm1(x / alpha) : x; backward g * exp(x / alpha) for
 * x <= 0, or from the output g * (y / alpha + 1). */
#if KP_FAST_FP64
/* float32, fast FP64: q = x / alpha as x times 1/alpha (folded at compile time) in double, then
 * alpha expm1(q) (fp64_math.h), one rounding; expm1(+-0) = +-0. A negative alpha makes q positive:
 * clamped at 700, where alpha e^q is beyond any float (+-inf, as torch's overflow). */
KP_FN KP_C kp_celu_forward(KP_C x) {
  if (!(x <= 0.0f)) return x;
  const double q0 = (double)x * (1.0 / (double)KP_P_ALPHA);
  const double q = KP_P_ALPHA > 0.0f || q0 < 700.0 ? q0 : 700.0;
  return (kp_d_res)((double)KP_P_ALPHA * (x == 0.0f ? q : kp_d_expm1(q)));
}
#elif KP_F32_IEEE
/* float32: x / alpha as a float-float (1/alpha = inv_hi + inv_lo, folded at compile time), its
 * expm1 as a float-float, times alpha rounded once (precise_math.h): within 1 ulp. */
KP_FN KP_C kp_celu_forward(KP_C x) {
  if (!(x <= KP_LIT(0.0))) return x;
  const float inv_hi = 1.0f / KP_P_ALPHA;
  const float inv_lo = KP_FMAF(-inv_hi, KP_P_ALPHA, 1.0f) / KP_P_ALPHA;
  const float q = x * inv_hi, ql = KP_FMAF(x, inv_hi, -q) + x * inv_lo;
  float lo, hi = kp_expm1_ff2(q, ql, &lo);
  return KP_FMAF(KP_P_ALPHA, hi, KP_P_ALPHA * lo);
}
#else
/* Both sides first, then the select: no branch per element (as selu.h). */
KP_FN KP_C kp_celu_forward(KP_C x) {
  const KP_C neg = KP_P_ALPHA * KP_EXPM1(x / KP_P_ALPHA);
  return x <= KP_LIT(0.0) ? neg : x;
}
#endif
#if KP_F32_LEAN
/* float32 with alpha = 1 (torch's default) is elu's: float arithmetic alone, within 1 ulp
 * (f32_math.h); other alphas keep the path above (alpha is a compile-time constant: the test
 * folds away). */
KP_FN KP_C kp_act_forward(KP_C x) { return KP_P_ALPHA == 1.0f ? kp_f_elu(1.0f, x) : kp_celu_forward(x); }
#else
KP_FN KP_C kp_act_forward(KP_C x) { return kp_celu_forward(x); }
#endif
#if KP_FAST_FP64
/* float32, fast FP64: g e^(x / alpha) in double, one rounding. */
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) {
  if (!(x <= 0.0f)) return g;
  return (kp_d_res)((double)g * kp_d_exp((double)x * (1.0 / (double)KP_P_ALPHA)));
}
#elif KP_F32_IEEE
/* float32: g * e^(x / alpha) rounded once, x / alpha and the exponential as float-floats (the
 * rounding of x / alpha alone would be amplified |x / alpha| times). */
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) {
  if (!(x <= KP_LIT(0.0))) return g;
  const float inv_hi = 1.0f / KP_P_ALPHA;
  const float inv_lo = KP_FMAF(-inv_hi, KP_P_ALPHA, 1.0f) / KP_P_ALPHA;
  const float q = x * inv_hi, ql = KP_FMAF(x, inv_hi, -q) + x * inv_lo;
  const int deep = q < -64.0f; /* e^q at 2^64 scale where it would be subnormal */
  float lo, hi = kp_pm_exp_scaled(q < -200.0f ? -200.0f : q, q < -200.0f ? 0.0f : ql, 1, deep ? 64 : 0, &lo);
  return KP_FMAF(g, hi, g * lo) * (deep ? 0x1p-64f : 1.0f);
}
#elif KP_DTYPE_F64 && !KP_FAST_MATH
/* float64: e^(x / alpha) with x / alpha = q + r, q = x * (1/alpha) and r = (x - q alpha) / alpha by
 * an fma, then e^q (1 + r): the rounding of the quotient alone is amplified |x / alpha| times (7 ulp
 * at alpha = 2.5 against the long double reference). Past |q| = 1e300 (x = -inf) r is 0. */
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) {
  if (!(x <= 0.0)) return g;
  const double inv = 1.0 / KP_P_ALPHA, q = x * inv;
  const double r = KP_FABS(q) < 1e300 ? KP_FMA(-q, KP_P_ALPHA, x) * inv : 0.0;
  const double e = KP_EXP(q);
  return g * KP_FMA(e, r, e);
}
#elif KP_TORCH_TIER
/* float32 accuracy=torch: g e^(x / alpha), with e^q's subnormal tail kept (tier_math.h) */
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) {
  const KP_C q = x / KP_P_ALPHA;
  return x <= KP_LIT(0.0) ? kp_tier_scaled_exp(g, KP_LIT(1.0), q) : g;
}
#else
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) { return x <= KP_LIT(0.0) ? g * KP_EXP(x / KP_P_ALPHA) : g; }
#endif
KP_FN KP_C kp_act_backward_from_output(KP_C g, KP_C y) {
  return y <= KP_LIT(0.0) ? g * (y / KP_P_ALPHA + KP_LIT(1.0)) : g;
}
