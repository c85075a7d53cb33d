/* Hardshrink(lambd) as torch: -l <= x <= l ? 0 : x (NaN stays NaN); backward zero in the band.
 * A negative l (torch takes any) leaves the band empty: x and g pass everywhere. For l >= 0 the
 * band is exactly where the output is 0; for l < 0 the output 0 at x = 0 is outside it, and the
 * registry refuses backward from the output (output_determines_grad). */
KP_FN KP_C kp_act_forward(KP_C x) { return (x >= -KP_P_LAMBD && x <= KP_P_LAMBD) ? KP_LIT(0.0) : x; }
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) {
  return (x >= -KP_P_LAMBD && x <= KP_P_LAMBD) ? KP_LIT(0.0) : g;
}
KP_FN KP_C kp_act_backward_from_output(KP_C g, KP_C y) { return y == KP_LIT(0.0) ? KP_LIT(0.0) : g; }
