/* Sigmoid as torch: 1 / (1 + exp(-x)), from exp(-|x|) so that neither tail overflows or loses
 * relative precision; torch's sigmoid_backward uses the output: g * y * (1 - y). */
#if KP_F32_LEAN
/* float32: float arithmetic alone, within 2 ulp (templates/common/f32_math.h). */
KP_FN KP_C kp_act_forward(KP_C x) { return kp_f_sigmoid(x); }
#elif KP_FAST_FP64
/* float32, fast FP64: in double, one rounding (templates/common/fp64_math.h). */
KP_FN KP_C kp_act_forward(KP_C x) { return kp_d_sigmoid(x); }
#elif KP_F32_IEEE
/* float32: templates/common/precise_math.h, float-float where the formula would lose ulps. */
KP_FN KP_C kp_act_forward(KP_C x) { return kp_precise_sigmoid(x); }
#else
KP_FN KP_C kp_act_forward(KP_C x) {
  const KP_C e = KP_EXP_FACTOR(-KP_FABS(x));
  return KP_DIV_1P(x >= KP_LIT(0.0) ? KP_LIT(1.0) : e, e);
}
#endif
#if KP_FAST_FP64
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) { return kp_d_sigmoid_grad(g, x); }
#elif KP_F32_IEEE
/* float32: (g * sigmoid(x)) * sigmoid(-x), two single roundings (precise_math.h). A huge g
 * (>= 2^60, which kp_pm_mul_sigmoid cannot take) is scaled by 2^-64 and back, exactly, where
 * |x| < 64 keeps the scaled product normal; the _wide fallback would round twice per factor. */
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) {
  if (KP_FABSF(g) >= 0x1p60f && KP_FABSF(g) <= 0x1.fffffep+127f && KP_FABSF(x) < 64.0f)
    return kp_pm_mul_sigmoid(kp_pm_mul_sigmoid(g * 0x1p-64f, x, 0.0f, 0), -x, 0.0f, 0) * 0x1p64f;
  return kp_pm_mul_sigmoid_wide(kp_pm_mul_sigmoid_wide(g, x, 0.0f, 0), -x, 0.0f, 0);
}
#else
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) {
  const KP_C e = KP_EXP_FACTOR(-KP_FABS(x));
  return g * KP_DIV_1P_SQ(e, e);
}
#endif
KP_FN KP_C kp_act_backward_from_output(KP_C g, KP_C y) { return g * (y * (KP_LIT(1.0) - y)); }
