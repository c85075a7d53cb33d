/* Mish as torch: x * tanh(softplus(x)) with softplus = log1p(exp(x)). With n = e^x (e^x + 2),
 * tanh(log1p(e^x)) = n / (n + 2): one exponential, no cancellation. Above x = 20 the factor is 1
 * to well under float precision. At -inf the result is NaN, as torch's formula gives (-inf * 0).
 * Backward (torch): g * (t + x * sigmoid(x) * (1 - t^2)), with 1 - t^2 = 4 (n + 1) / (n + 2)^2. */
#if KP_FAST_FP64
/* float32, fast FP64: in double, one rounding (templates/common/fp64_math.h). */
KP_FN KP_C kp_act_forward(KP_C x) { return kp_d_mish(x); }
#elif KP_F32_IEEE
/* float32: templates/common/precise_math.h, float-float where the formula would lose ulps. */
KP_FN KP_C kp_act_forward(KP_C x) { return kp_precise_mish(x); }
#elif KP_DTYPE_F64 && !KP_FAST_MATH
/* float64: the same quotient with e^x's 2^n applied last, so the tail below x = -708.4 keeps its
 * precision (templates/common/float64_math.h). */
KP_FN KP_C kp_act_forward(KP_C x) { return kp_f64_mish(x); }
#else
/* Computed first and selected above x = 20 (where n overflows and the quotient is NaN), no
 * branch per element (as selu.h). */
KP_FN KP_C kp_act_forward(KP_C x) {
  const KP_C e = KP_EXP_FACTOR(x);
  const KP_C n = e * (e + KP_LIT(2.0));
  const KP_C y = x * KP_DIV_BOUNDED(n, n + KP_LIT(2.0));
  return x > KP_LIT(20.0) ? x : y;
}
#endif
#if KP_FAST_FP64
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) { return kp_d_mish_grad(g, x); }
#elif KP_F32_IEEE
/* float32: g * f'(x) rounded once, f' in float-float (templates/common/precise_grad.h). */
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) { return kp_precise_mish_grad(g, x); }
#else
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) {
  const KP_C e = KP_EXP(x);
  const KP_C n = e * (e + KP_LIT(2.0));
  const KP_C d = KP_DIV_BOUNDED(KP_LIT(1.0), n + KP_LIT(2.0));
  const KP_C t = n * d;
  const KP_C sech2 = KP_LIT(4.0) * (n + KP_LIT(1.0)) * d * d;
  const KP_C s = KP_DIV_BOUNDED(e, KP_LIT(1.0) + e);
  const KP_C dx = g * KP_FMA(x * s, sech2, t);
  /* above x = 20: g; NaN at +inf, as torch's x * s * (1 - t^2). Selected, no branch (as selu.h). */
  return x > KP_LIT(20.0) ? g + g * (x - x) : dx;
}
#endif
