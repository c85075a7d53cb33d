/* Tanhshrink as torch: x - tanh(x), which cancels near 0: there its odd series
 * x^3/3 - 2x^5/15 + 17x^7/315 - ... (terms fall by 6x each for |x| < 0.625, so eleven reach float
 * precision). Backward g * tanh(x)^2. */
#if KP_DTYPE_F32 && !KP_FAST_MATH
/* float32: templates/common/precise_math.h, float-float where the formula would lose ulps. */
KP_FN KP_C kp_act_forward(KP_C x) { return kp_precise_tanhshrink(x); }
#else
KP_FN KP_C kp_act_forward(KP_C x) {
  if (KP_FABS(x) < KP_LIT(0.625)) {
    const KP_C z = x * x;
    KP_C p = KP_LIT(3.927832388331683e-05);
    p = KP_FMA(p, z, KP_LIT(-9.691537956929451e-05));
    p = KP_FMA(p, z, KP_LIT(0.00023912911424355248));
    p = KP_FMA(p, z, KP_LIT(-0.000590027440945586));
    p = KP_FMA(p, z, KP_LIT(0.0014558343870513183));
    p = KP_FMA(p, z, KP_LIT(-0.003592128036572481));
    p = KP_FMA(p, z, KP_LIT(0.008863235529902197));
    p = KP_FMA(p, z, KP_LIT(-0.021869488536155203));
    p = KP_FMA(p, z, KP_LIT(0.05396825396825397));
    p = KP_FMA(p, z, KP_LIT(-0.13333333333333333));
    p = KP_FMA(p, z, KP_LIT(0.3333333333333333));
    return (x * z) * p;
  }
  return x - KP_TANH(x);
}
#endif
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) {
  const KP_C t = KP_TANH(x);
  return g * (t * t);
}
