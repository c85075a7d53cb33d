/* SELU, with torch's constants (Klambauer et al. 2017).
 * forward:  y = lambda * x                    for x > 0
 *           y = lambda * alpha * expm1(x)     for x <= 0  (expm1 keeps precision near 0)
 * backward: dx = g * lambda                   for x > 0
 *           dx = g * lambda * alpha * exp(x)  for x <= 0, which equals g * (y + lambda * alpha),
 *           so the derivative follows from the saved output as well as from the input.
 * Shared by every backend: the prelude defines KP_C (compute type), KP_LIT (literal of that type),
 * KP_EXP, KP_EXPM1 and KP_FN (function qualifiers). NaN propagates on every branch. */
#define KP_SELU_LAMBDA KP_LIT(1.0507009873554804934193349852946)
#define KP_SELU_LAMBDA_ALPHA KP_LIT(1.7580993408473768599402175208123)

#if KP_FAST_FP64
/* float32, fast FP64: lambda alpha expm1(x) in double (fp64_math.h), one rounding (none in a
 * gated kernel: kp_d_res); expm1(+-0) is +-0 itself, which the polynomial would make +0. lambda x
 * in float, as lambda's float-float 0x1.0cfabep+0f - 0x1.2adddap-25f (rounded once, inf kept): in
 * a mixed-sign warp both branches run, and two conversions and a DMUL more kept SELU at 91 % of
 * copy on the H200. A gated kernel takes lambda x in double, unrounded, for the product. elu's
 * float form (f32_math.h) with lambda and lambda alpha as float-floats holds 0.92 ulp over every
 * float but ran at 92 % of copy at 2^24 on the H200 against this path's 97 (79.6 against 73 at
 * 2^20): selu stays here. */
KP_FN KP_C kp_act_forward(KP_C x) {
  if (!(x <= 0.0f)) {
#if KP_WIDE_F32
    /* a gated kernel: lambda x unrounded, for the product with b */
    return 1.0507009873554804934193349852946 * (double)x;
#else
    /* below 2^-96 the low part's product would lose bits to underflow: in double there */
    if (x < 0x1p-96f) return (float)(1.0507009873554804934193349852946 * (double)x);
    return x > 0x1.fffffep+127f ? x : KP_FMAF(0x1.0cfabep+0f, x, -0x1.2adddap-25f * x);
#endif
  }
  /* clamped in float: below -20 the result rounds to -lambda alpha */
  const kp_d_res y = (kp_d_res)(1.7580993408473768599402175208123 * kp_d_expm1_in_range((double)(x > -20.0f ? x : -20.0f)));
  return x == 0.0f ? x : y;
}
#elif KP_F32_IEEE
/* float32: lambda * alpha * expm1(x) rounded once, expm1 as a float-float and lambda * alpha as
 * 0x1.c212ccp+0f + 0x1.903c0cp-26f (templates/common/precise_math.h): within 1 ulp everywhere,
 * where the plain product rounds twice (2.27 ulp, as torch). */
KP_FN KP_C kp_act_forward(KP_C x) {
  /* lambda as 0x1.0cfabep+0f - 0x1.2adddap-25f too: lambda * x rounded once. */
  if (x > KP_LIT(0.0)) return x > 0x1.fffffep+127f ? x : KP_FMAF(0x1.0cfabep+0f, x, -0x1.2adddap-25f * x);
  float lo, hi = kp_expm1_ff(x, &lo);
  return KP_FMAF(0x1.c212ccp+0f, hi, KP_FMAF(0x1.c212ccp+0f, lo, 0x1.903c0cp-26f * hi));
}
#else
/* Both sides first, then the select: written as a conditional of the two expressions, NVVM
 * branches per element, which serializes the elements' exponentials (float16, with
 * narrow_math.h's expm1: 24.2 instructions per element against 13.1, tools/sass_count.sh --dtype f16;
 * 86 % of copy against 99 % on an H200). */
KP_FN KP_C kp_act_forward(KP_C x) {
  const KP_C neg = KP_SELU_LAMBDA_ALPHA * KP_EXPM1(x);
#if KP_TORCH_TIER
  /* float32 accuracy=torch: lambda x rounded once (the float-float of the exact branch), since the
   * rounded lambda takes x >= 3.2386e38, whose result is finite, to inf (torch's product does) */
  const KP_C pos = x > 0x1.fffffep+127f ? x : KP_FMAF(0x1.0cfabep+0f, x, -0x1.2adddap-25f * x);
#else
  const KP_C pos = KP_SELU_LAMBDA * x;
#endif
  return x > KP_LIT(0.0) ? pos : neg;
}
#endif

/* The backward passes decide on `<= 0` as torch's elu_backward does: a NaN saved value takes
 * the lambda branch there, so we match it. */
#if KP_FAST_FP64
/* float32, fast FP64: g lambda, or g lambda alpha e^x, in double and rounded once. */
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) {
  if (!(x <= 0.0f)) return (kp_d_res)(1.0507009873554804934193349852946 * (double)g);
  return (kp_d_res)((double)g * (1.7580993408473768599402175208123 * kp_d_exp((double)x)));
}
#elif KP_F32_IEEE
/* float32: g * lambda * alpha * e^x rounded once (g * lambda * alpha and e^x as float-floats). */
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) {
  if (!(x <= KP_LIT(0.0))) return KP_FMAF(0x1.0cfabep+0f, g, -0x1.2adddap-25f * g);
  /* below x = -64, e^x at 2^64 scale: it would be subnormal in float and lose its low bits */
  const int deep = x < -64.0f;
  float lo, hi = kp_pm_exp_scaled(x < -200.0f ? -200.0f : x, 0.0f, 0, deep ? 64 : 0, &lo);
  const float down = deep ? 0x1p-64f : 1.0f;
  /* a huge g would overflow g * lambda * alpha: then (lambda * alpha * e^x) first, rounded once */
  if (!(KP_FABSF(g) < 0x1p100f)) return g * (KP_FMAF(0x1.c212ccp+0f, hi, KP_FMAF(0x1.c212ccp+0f, lo, 0x1.903c0cp-26f * hi)) * down);
  const float ah = g * 0x1.c212ccp+0f, al = KP_FMAF(g, 0x1.c212ccp+0f, -ah) + g * 0x1.903c0cp-26f;
  return KP_FMAF(ah, hi, KP_FMAF(ah, lo, al * hi)) * down;
}
#elif KP_TORCH_TIER
/* float32 accuracy=torch: g lambda alpha e^x in float, with e^x's subnormal tail kept and no
 * overflow of g lambda alpha (templates/common/tier_math.h; the generic formula below rounds a
 * subnormal e^x twice: 11.7 ulp over every float on the H200, torch's 9.7) */
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) {
  return x <= KP_LIT(0.0) ? kp_tier_scaled_exp(g, KP_SELU_LAMBDA_ALPHA, x) : g * KP_SELU_LAMBDA;
}
#else
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) {
  return x <= KP_LIT(0.0) ? g * (KP_SELU_LAMBDA_ALPHA * KP_EXP(x)) : g * KP_SELU_LAMBDA;
}
#endif

KP_FN KP_C kp_act_backward_from_output(KP_C g, KP_C y) {
  return y <= KP_LIT(0.0) ? g * (y + KP_SELU_LAMBDA_ALPHA) : g * KP_SELU_LAMBDA;
}
