/* Hardtanh(min_val, max_val) as torch: a clamp that keeps NaN; the backward passes the gradient
 * strictly inside (min_val, max_val), from the input or the (clamped) output alike. */
KP_FN KP_C kp_act_forward(KP_C x) {
  return x < KP_P_MIN_VAL ? KP_P_MIN_VAL : (x > KP_P_MAX_VAL ? KP_P_MAX_VAL : x);
}
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) {
  return (x <= KP_P_MIN_VAL || x >= KP_P_MAX_VAL) ? KP_LIT(0.0) : g;
}
KP_FN KP_C kp_act_backward_from_output(KP_C g, KP_C y) {
  return (y <= KP_P_MIN_VAL || y >= KP_P_MAX_VAL) ? KP_LIT(0.0) : g;
}
