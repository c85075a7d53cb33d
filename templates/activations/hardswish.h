/* Hardswish as torch: x * min(max(x + 3, 0), 6) / 6 (NaN at -inf, as torch's -inf * 0); backward
 * (torch 2.11): x <= -3 ? 0 : x < 3 ? g (x / 3 + 1/2) : g (the bounds take the outer pieces' slopes),
 * with x / 3 + 1/2 written (2x + 3) / 6, which does not cancel near x = -1.5. The output does not determine the derivative. */
/* x * 6 / 6 would overflow for x > FLT_MAX / 6: above 3 the result is x itself; below -3 it is
 * x * 0 (NaN at -inf, -0 elsewhere, as torch's formula gives). Selects, not early returns: the
 * branch per element of a 16-bit vector held the H200 at 96.2 % of copy (block 128, one vector
 * per thread), 100.0 % with selects.
 * NaN fails both tests and comes through the middle piece. */
KP_FN KP_C kp_act_forward(KP_C x) {
  const KP_C mid = KP_DIV6_OUT(x * (x + KP_LIT(3.0)));
  return x >= KP_LIT(3.0) ? x : (x <= KP_LIT(-3.0) ? x * KP_LIT(0.0) : mid);
}
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) {
  return x <= KP_LIT(-3.0) ? KP_LIT(0.0)
                           : (x < KP_LIT(3.0) ? g * KP_DIV6(KP_FMA(KP_LIT(2.0), x, KP_LIT(3.0))) : g);
}
