/* Tanhshrink as torch: x - tanh(x), which cancels near 0: there its odd series
 * x^3/3 - 2x^5/15 + 17x^7/315 - ... (terms fall by 6x each for |x| < 0.625, so eleven reach float
 * precision). Backward g * tanh(x)^2. */
#if KP_FAST_FP64
/* float32, fast FP64: in double, one rounding (templates/common/fp64_math.h). */
KP_FN KP_C kp_act_forward(KP_C x) { return kp_d_tanhshrink(x); }
#elif KP_F32_IEEE
/* float32: templates/common/precise_math.h, float-float where the formula would lose ulps. */
KP_FN KP_C kp_act_forward(KP_C x) { return kp_precise_tanhshrink(x); }
#elif KP_DTYPE_F16 || KP_DTYPE_BF16
/* 16-bit results need ~1e-5 relative (templates/common/narrow_math.h): six series terms below
 * |x| = 0.5 (truncation < 1e-6), and above it (|x| - 1) + 2 / (e^2|x| + 1), whose hardware exp
 * and reciprocal (MUFU alone: e^2|x| >= 2.7 is never subnormal) lose at most 14 * 2^-21 relative
 * at |x| = 0.5 (x - tanh(x) cancels 4 bits there). */
KP_FN KP_C kp_act_forward(KP_C x) {
  const float a = KP_FABSF(x), z = x * x;
  float p = -0.0035921280365724811f;
  p = KP_FMAF(p, z, 0.0088632355299021966f);
  p = KP_FMAF(p, z, -0.021869488536155203f);
  p = KP_FMAF(p, z, 0.053968253968253968f);
  p = KP_FMAF(p, z, -0.13333333333333333f);
  p = KP_FMAF(p, z, 0.33333333333333333f);
  const float big = (a - 1.0f) + 2.0f * KP_RCP_APPROXF(KP_HW_EXP2F_FTZ(a * 2.88539008177792681f) + 1.0f);
  return a < 0.5f ? (x * z) * p : (x < 0.0f ? -big : big);
}
#else
KP_FN KP_C kp_act_forward(KP_C x) {
  if (KP_FABS(x) < KP_LIT(0.625)) {
    const KP_C z = x * x;
#if KP_DTYPE_F64
    /* double precision needs twelve more terms (terms fall by 6x each). */
    KP_C p = KP_LIT(7.713933635359062e-10);
    p = KP_FMA(p, z, KP_LIT(-1.903336833931276e-09));
    p = KP_FMA(p, z, KP_LIT(4.6962953982309016e-09));
    p = KP_FMA(p, z, KP_LIT(-1.1587644432798853e-08));
    p = KP_FMA(p, z, KP_LIT(2.859136662305254e-08));
    p = KP_FMA(p, z, KP_LIT(-7.054636946400968e-08));
    p = KP_FMA(p, z, KP_LIT(1.7406618963571648e-07));
    p = KP_FMA(p, z, KP_LIT(-4.294911078273806e-07));
    p = KP_FMA(p, z, KP_LIT(1.0597268320104654e-06));
    p = KP_FMA(p, z, KP_LIT(-2.6147711512907546e-06));
    p = KP_FMA(p, z, KP_LIT(6.451689215655431e-06));
    p = KP_FMA(p, z, KP_LIT(-1.5918905069328964e-05));
    p = KP_FMA(p, z, KP_LIT(3.927832388331683e-05));
#else
    KP_C p = KP_LIT(3.927832388331683e-05);
#endif
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
#if KP_FAST_FP64
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) { return kp_d_tanhshrink_grad(g, x); }
#elif KP_F32_IEEE
/* float32: g * tanh(x)^2 rounded once, tanh and its square as float-floats (tanh(x) = x to float
 * precision below 2^-12). */
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) {
  float tl, th = kp_pm_tanh_ff(x, &tl);
  if (KP_FABSF(x) < 0x1p-12f) {
    th = x;
    tl = 0.0f;
  }
  /* (g t) t: g t stays normal where the result is, while t^2 alone could be subnormal */
  const float ph = g * th, pl = KP_FMAF(g, th, -ph) + g * tl;
  return KP_FMAF(ph, th, KP_FMAF(ph, tl, pl * th));
}
#else
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) {
  const KP_C t = KP_TANH(x);
  return g * (t * t);
}
#endif
