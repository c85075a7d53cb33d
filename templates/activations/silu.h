/* SiLU (swish) as torch: x * sigmoid(x); backward g * s * (1 + x (1 - s)). The sigmoid comes
 * from exp(-|x|), which never overflows, so x * e^x stays a normal number deep in the negative
 * tail instead of flushing to zero; at -inf the result is NaN, as torch's x / (1 + exp(-x)). */
#if KP_F32_LEAN
/* float32: float arithmetic alone, within 2 ulp (templates/common/f32_math.h). */
KP_FN KP_C kp_act_forward(KP_C x) { return kp_f_silu(x); }
#elif KP_FAST_FP64
/* float32, fast FP64: in double, one rounding (templates/common/fp64_math.h). */
KP_FN KP_C kp_act_forward(KP_C x) { return kp_d_silu(x); }
#elif KP_F32_IEEE
/* float32: templates/common/precise_math.h, float-float where the formula would lose ulps. */
KP_FN KP_C kp_act_forward(KP_C x) { return kp_precise_silu(x); }
#elif KP_DTYPE_F64 && !KP_FAST_MATH
/* float64: x sigmoid(x) with the 2^n of e^x applied last (float64_math.h): x e^x alone rounds
 * e^x to a subnormal for x < -708.4, where the result is not (358 ulp on PoCL that way). */
KP_FN KP_C kp_act_forward(KP_C x) { return kp_f64_mul_sigmoid(x, x); }
#elif KP_TORCH_TIER
/* float32, accuracy=torch: x times the reciprocal of 1 + e, which lies in [1, 2], so that MUFU.RCP
 * alone gives it (2^-23 relative); the quotient below, IEEE division with its range check, holds
 * 36 registers where this holds 32 (ptxas -v), and at one wave on sm_90 its blocks no longer all
 * fit: a second, partial wave ran, 86 against torch's 90 % of copy at 2^20. */
KP_FN KP_C kp_act_forward(KP_C x) {
  const KP_C e = KP_EXP(-KP_FABS(x));
  const KP_C r = KP_RCP_APPROXF(KP_LIT(1.0) + e);
  return x >= KP_LIT(0.0) ? x * r : (x * e) * r;
}
#else
KP_FN KP_C kp_act_forward(KP_C x) {
  const KP_C e = KP_EXP_FACTOR(-KP_FABS(x));
  return KP_DIV_1P(x >= KP_LIT(0.0) ? x : x * e, e);
}
#endif
#if KP_FAST_FP64
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) { return kp_d_silu_grad(g, x); }
#elif KP_F32_IEEE
/* float32: g * f'(x) rounded once, f' in float-float (a fit near its root at -1.2785, where
 * s + x s (1 - s) cancels): templates/common/precise_grad.h. */
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) { return kp_precise_silu_grad(g, x); }
#else
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) {
  const KP_C e = KP_EXP_FACTOR(-KP_FABS(x));
  const KP_C r = KP_RCP_1P(e);
  const KP_C s = x >= KP_LIT(0.0) ? r : e * r;   /* sigmoid(x) */
  const KP_C sm = x >= KP_LIT(0.0) ? e * r : r;  /* sigmoid(-x) = 1 - s */
  return g * (s * KP_FMA(x, sm, KP_LIT(1.0)));
}
#endif
