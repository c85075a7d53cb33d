/* Hardshrink(lambd) as torch: -l <= x <= l ? 0 : x (NaN stays NaN); backward zero in the band,
 * which is exactly where the output is 0. */
KP_FN KP_C kp_act_forward(KP_C x) { return (x >= -KP_P_LAMBD && x <= KP_P_LAMBD) ? KP_LIT(0.0) : x; }
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) {
  return (x >= -KP_P_LAMBD && x <= KP_P_LAMBD) ? KP_LIT(0.0) : g;
}
KP_FN KP_C kp_act_backward_from_output(KP_C g, KP_C y) { return y == KP_LIT(0.0) ? KP_LIT(0.0) : g; }
