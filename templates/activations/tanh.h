/* Tanh as torch; torch's tanh_backward uses the output: g * (1 - y^2) (one rounding with fma).
 * From the input, 1 - tanh^2 = 4 e / (1 + e)^2 with e = exp(-2|x|), exact where tanh rounds to 1. */
#if KP_F32_LEAN
/* float32: float arithmetic alone, within 2 ulp (templates/common/f32_math.h). */
KP_FN KP_C kp_act_forward(KP_C x) { return kp_f_tanh(x); }
#elif KP_FAST_FP64
/* float32, fast FP64: in double, one rounding (templates/common/fp64_math.h). */
KP_FN KP_C kp_act_forward(KP_C x) { return kp_d_tanh(x); }
#elif KP_F32_IEEE
/* float32: templates/common/precise_math.h, float-float where the formula would lose ulps. */
KP_FN KP_C kp_act_forward(KP_C x) { return kp_precise_tanh(x); }
#elif KP_DTYPE_F64 && !KP_FAST_MATH
/* float64: expm1 and one quotient, coefficients in constant memory (float64_math.h). */
KP_FN KP_C kp_act_forward(KP_C x) { return kp_f64_tanh(x); }
#else
KP_FN KP_C kp_act_forward(KP_C x) { return KP_TANH(x); }
#endif
#if KP_FAST_FP64
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) { return kp_d_tanh_grad(g, x); }
#elif KP_F32_IEEE
/* float32: 1 - tanh^2 = 4 sigmoid(2x) sigmoid(-2x), two single roundings (precise_math.h). */
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) {
  /* 4 g sigmoid(2x) sigmoid(-2x): the factor 4 first, so that no intermediate is subnormal where
   * the result is not, and last for a huge g, which 4 g would overflow */
  const int huge = !(KP_FABSF(g) < 0x1p120f);
  const float r = kp_pm_mul_sigmoid_wide(kp_pm_mul_sigmoid_wide(huge ? g : 4.0f * g, 2.0f * x, 0.0f, 0), -2.0f * x, 0.0f, 0);
  return huge ? 4.0f * r : r;
}
#else
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) {
  const KP_C e = KP_EXP(KP_LIT(-2.0) * KP_FABS(x));
  const KP_C d = KP_LIT(1.0) + e;
  return g * (KP_LIT(4.0) * e / (d * d));
}
#endif
KP_FN KP_C kp_act_backward_from_output(KP_C g, KP_C y) { return g * KP_FMA(-y, y, KP_LIT(1.0)); }
