/* Softsign as torch: x / (1 + |x|) (NaN at ±inf, as torch's formula gives inf / inf);
 * derivative 1 / (1 + |x|)^2, which is (1 - |y|)^2 from the output. */
KP_FN KP_C kp_act_forward(KP_C x) { return x / (KP_LIT(1.0) + KP_FABS(x)); }
#if KP_F32_IEEE
/* float32: g / d^2 with d = 1 + |x| and d^2 as float-floats, one correction step; (g / d) / d where
 * d^2 would overflow. */
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) {
  const float a = KP_FABSF(x);
  if (!(a < 0x1p60f)) return (g / a) / a;
  float dl, dh = kp_two_sum(1.0f, a, &dl);
  const float sh = dh * dh, sl = KP_FMAF(dh, dh, -sh) + 2.0f * dh * dl;
  const float r = g / sh;
  return r + (KP_FMAF(-sh, r, g) - sl * r) / sh;
}
#else
/* (g / d) / d: d * d would overflow for |x| > 1.8e19 where the result is still a normal number. */
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) {
  const KP_C d = KP_LIT(1.0) + KP_FABS(x);
  return (g / d) / d;
}
#endif
KP_FN KP_C kp_act_backward_from_output(KP_C g, KP_C y) {
  const KP_C d = KP_LIT(1.0) - KP_FABS(y);
  return g * (d * d);
}
