/* ELU(alpha) as torch: x <= 0 ? alpha * expm1(x) : x (NaN stays NaN); backward
 * x <= 0 ? g * alpha * exp(x) : g, or from the output y <= 0 ? g * (y + alpha) : g. */
#if KP_F32_LEAN
/* float32: float arithmetic alone, alpha expm1(x) rounded once, within 1 ulp (f32_math.h). */
KP_FN KP_C kp_act_forward(KP_C x) { return kp_f_elu(KP_P_ALPHA, x); }
#elif KP_FAST_FP64
/* float32, fast FP64: alpha expm1(x) in double (fp64_math.h), one rounding; expm1(+-0) = +-0. */
KP_FN KP_C kp_act_forward(KP_C x) {
  if (!(x <= 0.0f)) return x;
  const double e = x == 0.0f ? (double)x : kp_d_expm1((double)x);
  return (kp_d_res)((double)KP_P_ALPHA * e);
}
#elif KP_F32_IEEE
/* float32: alpha * expm1(x) rounded once (expm1 as a float-float, precise_math.h): within 1 ulp. */
KP_FN KP_C kp_act_forward(KP_C x) {
  if (!(x <= KP_LIT(0.0))) return x;
  float lo, hi = kp_expm1_ff(x, &lo);
  return KP_FMAF(KP_P_ALPHA, hi, KP_P_ALPHA * lo);
}
#else
/* Both sides first, then the select: no branch per element (as selu.h). */
KP_FN KP_C kp_act_forward(KP_C x) {
  const KP_C neg = KP_P_ALPHA * KP_EXPM1(x);
  return x <= KP_LIT(0.0) ? neg : x;
}
#endif
#if KP_FAST_FP64
/* float32, fast FP64: g alpha e^x in double, one rounding. The forward's float form has a
 * backward counterpart (e^x and g alpha as float-floats, up to 1.53 ulp over every float with
 * four gradients each) at 51.5 SASS instructions an element against this path's 38.8 with 10 FP64
 * operations: on the H200 it ran 2-4 points of copy slower at 2^24 and no faster at 2^20, so
 * the backward stays here (elu, celu and selu alike). */
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) {
  if (!(x <= 0.0f)) return g;
  return (kp_d_res)((double)g * ((double)KP_P_ALPHA * kp_d_exp((double)x)));
}
#elif KP_F32_IEEE
/* float32: g * alpha * e^x rounded once (g * alpha and e^x as float-floats). */
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) {
  if (!(x <= KP_LIT(0.0))) return g;
  /* below x = -64, e^x at 2^64 scale: it would be subnormal in float and lose its low bits */
  const int deep = x < -64.0f;
  float lo, hi = kp_pm_exp_scaled(x < -200.0f ? -200.0f : x, 0.0f, 0, deep ? 64 : 0, &lo);
  const float down = deep ? 0x1p-64f : 1.0f;
  /* a huge g would overflow g * alpha: then (alpha * e^x) first, rounded once */
  if (!(KP_FABSF(g) < 0x1p100f)) return g * (KP_FMAF(KP_P_ALPHA, hi, KP_P_ALPHA * lo) * down);
  const float ah = g * KP_P_ALPHA, al = KP_FMAF(g, KP_P_ALPHA, -ah);
  return KP_FMAF(ah, hi, KP_FMAF(ah, lo, al * hi)) * down;
}
#elif KP_TORCH_TIER
/* float32 accuracy=torch: g alpha e^x in float, with e^x's subnormal tail kept and no overflow of
 * g alpha (templates/common/tier_math.h) */
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) {
  return x <= KP_LIT(0.0) ? kp_tier_scaled_exp(g, KP_P_ALPHA, x) : g;
}
#else
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) {
  return x <= KP_LIT(0.0) ? g * (KP_P_ALPHA * KP_EXP(x)) : g;
}
#endif
KP_FN KP_C kp_act_backward_from_output(KP_C g, KP_C y) { return y <= KP_LIT(0.0) ? g * (y + KP_P_ALPHA) : g; }
