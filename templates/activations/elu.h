/* ELU(alpha) as torch: x <= 0 ? alpha * expm1(x) : x (NaN stays NaN); backward
 * x <= 0 ? g * alpha * exp(x) : g, or from the output y <= 0 ? g * (y + alpha) : g. */
KP_FN KP_C kp_act_forward(KP_C x) { return x <= KP_LIT(0.0) ? KP_P_ALPHA * KP_EXPM1(x) : x; }
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) {
  return x <= KP_LIT(0.0) ? g * (KP_P_ALPHA * KP_EXP(x)) : g;
}
KP_FN KP_C kp_act_backward_from_output(KP_C g, KP_C y) { return y <= KP_LIT(0.0) ? g * (y + KP_P_ALPHA) : g; }
