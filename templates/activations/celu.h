/* CELU(alpha) as torch: x <= 0 ? alpha * expm1(x / alpha) : x; backward g * exp(x / alpha) for
 * x <= 0, or from the output g * (y / alpha + 1). */
KP_FN KP_C kp_act_forward(KP_C x) { return x <= KP_LIT(0.0) ? KP_P_ALPHA * KP_EXPM1(x / KP_P_ALPHA) : x; }
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) { return x <= KP_LIT(0.0) ? g * KP_EXP(x / KP_P_ALPHA) : g; }
KP_FN KP_C kp_act_backward_from_output(KP_C g, KP_C y) {
  return y <= KP_LIT(0.0) ? g * (y / KP_P_ALPHA + KP_LIT(1.0)) : g;
}
