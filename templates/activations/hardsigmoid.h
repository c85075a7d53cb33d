/* Hardsigmoid as torch: min(max(x + 3, 0), 6) / 6 (NaN stays NaN; x + 3 is exact near -3);
 * backward g / 6 strictly inside (-3, 3), which is (0, 1) for the output. g / 6 is the whole
 * backward result, so KP_DIV6_OUT: in 16 bits one multiply, which rounds every gradient as the
 * division does (narrow_math.h; tests/device_checks.cpp checks all 65536). */
KP_FN KP_C kp_act_forward(KP_C x) {
  const KP_C r = x + KP_LIT(3.0);
  return KP_DIV6_OUT(r <= KP_LIT(0.0) ? KP_LIT(0.0) : (r >= KP_LIT(6.0) ? KP_LIT(6.0) : r));
}
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) {
  return (x > KP_LIT(-3.0) && x < KP_LIT(3.0)) ? KP_DIV6_OUT(g) : KP_LIT(0.0);
}
KP_FN KP_C kp_act_backward_from_output(KP_C g, KP_C y) {
  return (y > KP_LIT(0.0) && y < KP_LIT(1.0)) ? KP_DIV6_OUT(g) : KP_LIT(0.0);
}
