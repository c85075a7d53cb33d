/* ReLU squared (transformers' ReLUSquaredActivation; So et al. 2021, "Primer"): relu(x)^2 as
 * torch.square(relu(x)), NaN kept as relu keeps it, +0 for x <= 0. x * x is rounded once: a
 * float16 or bfloat16 input squares exactly in float, so its one rounding is to the 16-bit
 * result. Backward: 2 relu(x) g, torch's pow backward through relu's threshold_backward (0 where
 * x <= 0, NaN where x is NaN), as g (2x) rounded once (2x is exact); where 2x overflows (x >= 2^127
 * in float) as (g x) 2, since torch's 2 * x is inf there at a finite input. No backward from the
 * output: y = x^2 loses x where it overflows (float32 x > 1.8e19, float16 x > 256) or underflows
 * (float16 x < 2^-12 gives y = 0 where 2 g x is not 0), and a 16-bit y's square root in float is
 * not x; torch saves relu(x), the input's equivalent. */
KP_FN KP_C kp_act_forward(KP_C x) { return x > KP_LIT(0.0) ? x * x : (x != x ? x : KP_LIT(0.0)); }

/* 2x - 2x is 0 unless 2x is infinite (or NaN, whose (g x) 2 is NaN too). */
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) {
  const KP_C x2 = x + x;
  return x <= KP_LIT(0.0) ? KP_LIT(0.0) : (x2 - x2 == KP_LIT(0.0) ? g * x2 : (g * x) * KP_LIT(2.0));
}
