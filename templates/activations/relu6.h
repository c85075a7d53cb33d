/* ReLU6 as torch: hardtanh(x, 0, 6), a clamp that keeps NaN. The backward (hardtanh_backward)
 * passes the gradient strictly inside (0, 6); the output is the clamp, so either may be saved. */
KP_FN KP_C kp_act_forward(KP_C x) {
  return x <= KP_LIT(0.0) ? KP_LIT(0.0) : (x >= KP_LIT(6.0) ? KP_LIT(6.0) : x);
}
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) {
  return (x <= KP_LIT(0.0) || x >= KP_LIT(6.0)) ? KP_LIT(0.0) : g;
}
KP_FN KP_C kp_act_backward_from_output(KP_C g, KP_C y) {
  return (y <= KP_LIT(0.0) || y >= KP_LIT(6.0)) ? KP_LIT(0.0) : g;
}
