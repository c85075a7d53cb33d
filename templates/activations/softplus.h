/* Softplus(beta, threshold) as torch: x * beta > threshold ? x : log1p(exp(beta x)) / beta,
 * computed as max(bx, 0) + log1p(exp(-|bx|)) so that no exponential overflows for large
 * thresholds. Backward g * sigmoid(beta x) (g above the threshold); from the output,
 * sigmoid(beta x) = -expm1(-beta y). */
#if KP_F32_LEAN
/* float32 with beta = 1 (torch's default): -logsigmoid(-x) in float alone (f32_math.h, within 2
 * ulp); other betas in double where FP64 is fast, else float-float (beta is a compile-time
 * constant: the test folds away). */
KP_FN KP_C kp_act_forward(KP_C x) {
#if KP_FAST_FP64
  return KP_P_BETA == 1.0f ? kp_f_softplus1(x, KP_P_THRESHOLD) : kp_d_softplus(x, KP_P_BETA, KP_P_THRESHOLD);
#else
  return KP_P_BETA == 1.0f ? kp_f_softplus1(x, KP_P_THRESHOLD) : kp_precise_softplus(x, KP_P_BETA, KP_P_THRESHOLD);
#endif
}
#elif KP_FAST_FP64
/* float32 without KP_F32_LEAN (KPLAY_F32_LEAN=0), fast FP64: in double, one rounding (fp64_math.h). */
KP_FN KP_C kp_act_forward(KP_C x) { return kp_d_softplus(x, KP_P_BETA, KP_P_THRESHOLD); }
#elif KP_F32_IEEE
/* float32: templates/common/precise_math.h, float-float where the formula would lose ulps. */
KP_FN KP_C kp_act_forward(KP_C x) { return kp_precise_softplus(x, KP_P_BETA, KP_P_THRESHOLD); }
#elif KP_DTYPE_F64 && !KP_FAST_MATH
/* float64: log1p(exp(-|bx|)) as one routine (templates/common/float64_math.h), with beta x = bx + bl
 * exact: e^bx alone multiplies bx's rounding by |bx| (beta = 0.7: 512 ulp at x = -770). The
 * threshold compares bx, as torch does. */
KP_FN KP_C kp_act_forward(KP_C x) {
  const double bx = x * KP_P_BETA;
  if (bx > KP_P_THRESHOLD) return x;
  const int pos = bx > 0.0;
  /* beta a power of two (codegen's KP_P_BETA_POW2): beta x is exact, bl is zero, and carrying it
   * cost 2-6 points of copy rate on an H200 */
#if KP_P_BETA_POW2
  return ((pos ? bx : 0.0) + kp_f64_log1p_exp_neg(fabs(bx))) / KP_P_BETA;
#else
  const double bl = KP_FMA(x, KP_P_BETA, -bx);
  const double l = kp_f64_log1p_exp_neg_lo(fabs(bx), pos ? -bl : bl);
  return (pos ? bx + (bl + l) : l) / KP_P_BETA;
#endif
}
#else
/* Both sides computed and one selected (no early return): the branch per element held 16-bit
 * softplus at 95 % of copy on the H100 in blocks of 256, where the others reach 100 %. Above the
 * threshold sp is finite or +inf, never NaN, and not taken. */
KP_FN KP_C kp_act_forward(KP_C x) {
  const KP_C bx = x * KP_P_BETA;
  const KP_C sp = (bx > KP_LIT(0.0) ? bx : KP_LIT(0.0)) + KP_LOG1P(KP_EXP_FACTOR(-KP_FABS(bx)));
  return bx > KP_P_THRESHOLD ? x : sp / KP_P_BETA;
}
#endif
#if KP_FAST_FP64
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) {
  return x * KP_P_BETA > KP_P_THRESHOLD ? g : kp_d_mul_sigmoid(g, x, (double)x * KP_P_BETA);
}
#elif KP_F32_IEEE
/* float32: g * sigmoid(beta x) rounded once, beta x as a float-float (precise_math.h). */
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) {
  const float bh = x * KP_P_BETA, bl = KP_FMAF(x, KP_P_BETA, -bh);
  if (bh > KP_P_THRESHOLD) return g;
  return kp_pm_mul_sigmoid_wide(g, bh, bl, 1);
}
#elif KP_DTYPE_F64 && !KP_FAST_MATH
/* float64: g sigmoid(bx + bl), beta x = bx + bl exact, with e^bx never subnormal on its own
 * (float64_math.h); bx alone cost 8.5 ulp for beta = 0.7. */
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) {
  const double bx = x * KP_P_BETA;
#if KP_P_BETA_POW2
  return bx > KP_P_THRESHOLD ? g : kp_f64_mul_sigmoid(g, bx);
#else
  const double bl = KP_FMA(x, KP_P_BETA, -bx);
  return bx > KP_P_THRESHOLD ? g : kp_f64_mul_sigmoid_lo(g, bx, KP_F64_NEG(bx) ? bl : -bl);
#endif
}
#elif KP_TORCH_TIER
/* float32 accuracy=torch: g sigmoid(beta x), beta x rounded as torch rounds it, with e^(beta x)'s
 * subnormal tail kept (templates/common/tier_math.h) */
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) {
  const KP_C bx = x * KP_P_BETA;
  return bx > KP_P_THRESHOLD ? g : kp_tier_mul_sigmoid(g, bx);
}
#else
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) {
  const KP_C bx = x * KP_P_BETA;
  if (bx > KP_P_THRESHOLD) return g;
  const KP_C e = KP_EXP_FACTOR(-KP_FABS(bx));
  return g * KP_DIV_1P(bx >= KP_LIT(0.0) ? KP_LIT(1.0) : e, e);
}
#endif
KP_FN KP_C kp_act_backward_from_output(KP_C g, KP_C y) {
  const KP_C by = y * KP_P_BETA;
  return by > KP_P_THRESHOLD ? g : g * -KP_EXPM1(-by);
}
