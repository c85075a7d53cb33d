/* Hardswish as torch: x * min(max(x + 3, 0), 6) / 6 (NaN at -inf, as torch's -inf * 0); backward
 * (torch): x < -3 ? 0 : x <= 3 ? g (x / 3 + 1/2) : g, with x / 3 + 1/2 written (2x + 3) / 6, which
 * does not cancel near x = -1.5. The output does not determine the derivative. */
KP_FN KP_C kp_act_forward(KP_C x) {
  const KP_C r = x + KP_LIT(3.0);
  return x * (r <= KP_LIT(0.0) ? KP_LIT(0.0) : (r >= KP_LIT(6.0) ? KP_LIT(6.0) : r)) / KP_LIT(6.0);
}
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) {
  return x < KP_LIT(-3.0) ? KP_LIT(0.0)
                          : (x <= KP_LIT(3.0) ? g * (KP_FMA(KP_LIT(2.0), x, KP_LIT(3.0)) / KP_LIT(6.0)) : g);
}
