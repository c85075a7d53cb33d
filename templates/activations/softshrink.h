/* Softshrink(lambd) as torch: x > l ? x - l : x < -l ? x + l : x * 0 (torch multiplies by zero,
 * so NaN stays NaN and a negative x inside the band gives -0). Backward: zero where
 * -l <= x <= l; from the output, zero where y == 0 (the band maps to 0 and nothing else does). */
KP_FN KP_C kp_act_forward(KP_C x) {
  return x > KP_P_LAMBD ? x - KP_P_LAMBD : (x < -KP_P_LAMBD ? x + KP_P_LAMBD : x * KP_LIT(0.0));
}
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) {
  return (x >= -KP_P_LAMBD && x <= KP_P_LAMBD) ? KP_LIT(0.0) : g;
}
KP_FN KP_C kp_act_backward_from_output(KP_C g, KP_C y) { return y == KP_LIT(0.0) ? KP_LIT(0.0) : g; }
