/* Softsign as torch: x / (1 + |x|) (NaN at ±inf, as torch's formula gives inf / inf);
 * derivative 1 / (1 + |x|)^2, which is (1 - |y|)^2 from the output. */
KP_FN KP_C kp_act_forward(KP_C x) { return x / (KP_LIT(1.0) + KP_FABS(x)); }
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) {
  const KP_C d = KP_LIT(1.0) + KP_FABS(x);
  return g / (d * d);
}
KP_FN KP_C kp_act_backward_from_output(KP_C g, KP_C y) {
  const KP_C d = KP_LIT(1.0) - KP_FABS(y);
  return g * (d * d);
}
