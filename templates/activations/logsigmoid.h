/* LogSigmoid as torch: min(x, 0) - log1p(exp(-|x|)); derivative sigmoid(-x), which is
 * -expm1(y) from the output. */
#if KP_F32_LEAN
/* float32: float arithmetic alone, within 2 ulp (templates/common/f32_math.h), 38.8 SASS
 * instructions an element against the double routine's 33.0 with 18 FP64 operations and 4
 * conversions, and the float-float routine's 89 (docs/activations.md). */
KP_FN KP_C kp_act_forward(KP_C x) { return kp_f_logsigmoid(x); }
#elif KP_FAST_FP64
/* float32 without KP_F32_LEAN (KPLAY_F32_LEAN=0), fast FP64: in double, one rounding (fp64_math.h). */
KP_FN KP_C kp_act_forward(KP_C x) { return kp_d_logsigmoid(x); }
#elif KP_F32_IEEE
/* float32: templates/common/precise_math.h, float-float where the formula would lose ulps. */
KP_FN KP_C kp_act_forward(KP_C x) { return kp_precise_logsigmoid(x); }
#elif KP_DTYPE_F64 && !KP_FAST_MATH
/* float64: exp and log1p as one routine (templates/common/float64_math.h), cheaper than libdevice's. */
KP_FN KP_C kp_act_forward(KP_C x) { return kp_f64_logsigmoid(x); }
#else
KP_FN KP_C kp_act_forward(KP_C x) {
  return (x < KP_LIT(0.0) ? x : KP_LIT(0.0)) - KP_LOG1P(KP_EXP(-KP_FABS(x)));
}
#endif
#if KP_FAST_FP64
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) { return kp_d_mul_sigmoid(g, x, -(double)x); }
#elif KP_F32_IEEE
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) { return kp_pm_mul_sigmoid_wide(g, -x, 0.0f, 0); }
#elif KP_DTYPE_F64 && !KP_FAST_MATH
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) { return kp_f64_mul_sigmoid(g, -x); }
#elif KP_TORCH_TIER
/* float32 accuracy=torch: g sigmoid(-x), with e^-x's subnormal tail kept (tier_math.h) */
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) { return kp_tier_mul_sigmoid(g, -x); }
#else
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) {
  const KP_C e = KP_EXP_FACTOR(-KP_FABS(x));
  return g * KP_DIV_1P(x < KP_LIT(0.0) ? KP_LIT(1.0) : e, e);
}
#endif
KP_FN KP_C kp_act_backward_from_output(KP_C g, KP_C y) { return g * -KP_EXPM1(y); }
