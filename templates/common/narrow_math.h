/* Math for float16 and bfloat16 results, shared by every backend (the prelude defines KP_FN,
 * KP_FMAF, KP_FABSF, KP_HW_EXPF, KP_HW_LOGF and KP_HW_DIVF: the hardware exponential and
 * logarithm, relative error ~2^-21 and subnormals kept, and a full-range division within 2 ulp).
 * A result rounded to 16 bits needs the float32 math only to ~1e-5 relative (half an ulp of
 * float16 is 4.9e-4), and the library functions would make 16-bit activations compute-bound (8
 * elements per 16 bytes). So: short series where the hardware functions lose relative precision
 * (near 0: expm1, log1p, tanh), the hardware functions elsewhere, and erfc from a rational-exp
 * fit with relative error < 1.2e-7 everywhere (Numerical Recipes' erfcc), so gelu's negative tail
 * keeps its relative precision. Fast-math and the 32/64-bit types keep their own.
 * Where no subnormal can reach the result, the exponential is MUFU.EX2 alone (KP_HW_EXP2F_FTZ)
 * and a reciprocal is MUFU.RCP alone (KP_RCP_APPROXF, relative error 2^-23): the subnormal-keeping
 * exponential and div.full cost 4 and 7 instructions more per element, and 16-bit kernels on an
 * H200 have about 28 issue slots per element before they fall below copy speed. */
#if (KP_DTYPE_F16 || KP_DTYPE_BF16) && !KP_FAST_MATH
/* e^x taken only as a factor of the result (times inputs, gradients or numbers in [0, 2], or
 * inside log1p or erfc, which are e^x there). float16: MUFU.EX2 alone, flushed below 2^-126; its
 * inputs and gradients are below 2^16, so such a result is below 2^-90 and rounds to the same
 * float16 zero, its sign from the other factors as with e^x kept. Not in a gated kernel: there the
 * factor meets b, which may be infinite, and a flushed act(a) (silu(-90) = -7e-38, a normal float)
 * times inf is NaN where torch's float math gives inf. bfloat16 has float's exponent range: e^x
 * keeps its subnormals. */
#define KP_F16_FLUSH_EXP (KP_DTYPE_F16 && !KP_GATED)
KP_FN float kp_exp_factor_narrow(float x) {
#if KP_F16_FLUSH_EXP
  return KP_HW_EXP2F_FTZ(x * 1.44269504088896341f);
#else
  return KP_HW_EXPF(x);
#endif
}
/* Degree-6 Taylor for |x| < 0.5 (truncation <= 4e-6 relative), the hardware exponential elsewhere
 * (flushing is harmless: e^x - 1 is -1 to float precision long before e^x is subnormal). Both
 * are computed and one selected, no branch. */
KP_FN float kp_expm1_narrow(float x) {
  float p = 1.0f / 720.0f;
  p = KP_FMAF(p, x, 1.0f / 120.0f);
  p = KP_FMAF(p, x, 1.0f / 24.0f);
  p = KP_FMAF(p, x, 1.0f / 6.0f);
  p = KP_FMAF(p, x, 0.5f);
  p = KP_FMAF(p, x, 1.0f);
  const float big = KP_HW_EXP2F_FTZ(x * 1.44269504088896341f) - 1.0f;
  return KP_FABSF(x) < 0.5f ? p * x : big;
}
/* u - u^2/2 + u^3/3 - u^4/4 for |u| < 1/64 (truncation < 1e-9 relative), log(1 + u) elsewhere. */
KP_FN float kp_log1p_narrow(float u) {
  float p = -0.25f;
  p = KP_FMAF(p, u, 1.0f / 3.0f);
  p = KP_FMAF(p, u, -0.5f);
  p = KP_FMAF(p, u, 1.0f);
  return KP_FABSF(u) < 0.015625f ? p * u : KP_HW_LOGF(1.0f + u);
}
/* x (1 - x^2/3 + 2x^4/15) for |x| < 1/8 (truncation < 3e-7 relative; a product, so -0 stays
 * -0), 1 - 2 / (e^2|x| + 1) elsewhere with x's sign bit: MUFU.EX2 and MUFU.RCP alone (e^2|x| >=
 * 1.28 is never subnormal, and where it overflows the reciprocal of inf is 0 and the result 1;
 * their ~2^-22 absolute error is < 2e-6 of tanh |x| there). */
KP_FN float kp_tanh_narrow(float x) {
  const float z = x * x;
  const float small = x * KP_FMAF(z, KP_FMAF(z, 2.0f / 15.0f, -1.0f / 3.0f), 1.0f);
  const float e = KP_HW_EXP2F_FTZ(KP_FABSF(x) * 2.88539008177792681f); /* e^2|x| */
  const float big = KP_FMAF(-2.0f, KP_RCP_APPROXF(e + 1.0f), 1.0f);
  return KP_FABSF(x) < 0.125f ? small : KP_AS_FLOAT(KP_AS_INT(big) | (KP_AS_INT(x) & (int)0x80000000));
}
/* erfc(z) = t exp(-z^2 + P(t)), t = 1 / (1 + z/2), for z >= 0; 2 - erfc(-z) below. t is in
 * (0, 1] and flushes to 0 only where exp(-z^2) is 0 too. The exponential keeps subnormal results
 * for bfloat16, which has them; float16's flushes outside gated kernels (kp_exp_factor_narrow:
 * gelu's 0.5 x erfc and g (0.5 erfc + x phi) keep their float16 values and zero signs, x phi
 * being the larger). Taking
 * it 2^24 too large (exponent + 24) and scaling back would save two instructions, but the sum
 * rounds the exponent to 2^-19: 4e-6 relative, which gelu's derivative near its root (-0.75,
 * where Phi(x) + x phi(x) cancels 9 bits) turned into 3.7 float16 ulp. */
KP_FN float kp_erfc_narrow(float z) {
  const float a = KP_FABSF(z);
  const float t = KP_RCP_APPROXF(KP_FMAF(0.5f, a, 1.0f));
  float p = 0.17087277f;
  p = KP_FMAF(p, t, -0.82215223f);
  p = KP_FMAF(p, t, 1.48851587f);
  p = KP_FMAF(p, t, -1.13520398f);
  p = KP_FMAF(p, t, 0.27886807f);
  p = KP_FMAF(p, t, -0.18628806f);
  p = KP_FMAF(p, t, 0.09678418f);
  p = KP_FMAF(p, t, 0.37409196f);
  p = KP_FMAF(p, t, 1.00002368f);
  p = KP_FMAF(p, t, -1.26551223f);
  const float r = t * kp_exp_factor_narrow(KP_FMAF(-a, a, p));
  return z >= 0.0f ? r : 2.0f - r;
}
/* v / 6 rounded to float as the IEEE division rounds it (hardswish, hardsigmoid), without the
 * division's reciprocal, range check and slow-path call (no measurable speed change on the
 * H200): q = v RN(1/6), its residual exact in an fma, one correction
 * (Markstein). Bit-equal to v / 6.0f for every float whose quotient is normal (checked over all
 * 2^32; 16-bit inputs never give a subnormal one); the residual is formed as 6q - v and negated
 * so that v = -0 keeps its sign. */
KP_FN float kp_div6_narrow(float v) {
  const float q = v * (1.0f / 6.0f);
  const float r = KP_FMAF(6.0f, q, -v);
  return r == r ? KP_FMAF(-r, 1.0f / 6.0f, q) : q; /* +-inf and NaN: r is NaN, q is the quotient */
}
#undef KP_EXPM1
#undef KP_EXP
#undef KP_LOG
#undef KP_LOG1P
#undef KP_TANH
#undef KP_ERFC
#undef KP_DIV6
#undef KP_DIV6_OUT
#define KP_EXPM1(x) kp_expm1_narrow(x)
#define KP_EXP(x) KP_HW_EXPF(x)
#define KP_LOG(x) KP_HW_LOGF(x)
#define KP_LOG1P(x) kp_log1p_narrow(x)
#define KP_TANH(x) kp_tanh_narrow(x)
#define KP_ERFC(x) kp_erfc_narrow(x)
#define KP_DIV6(x) kp_div6_narrow(x)
/* A quotient that is the 16-bit output (hardswish and hardsigmoid forward, hardsigmoid's g / 6
 * backward): v RN(1/6) rounds to the same float16 and bfloat16 as v / 6 for every input and every
 * 16-bit g (the all-65536 test checks each), where hardswish's g (2x + 3) / 6 does not (9 float16,
 * 2 bfloat16 inputs). One multiply. */
#define KP_DIV6_OUT(x) ((x) * (1.0f / 6.0f))
#define KP_EXP_FACTOR(x) kp_exp_factor_narrow(x)
/* a / (1 + e) and a / (1 + e)^2 for e = exp(-|x|) in [0, 1]: 1 + e is in [1, 2], so its
 * reciprocal is MUFU.RCP alone (2^-23 relative) where div.full adds a range check and a scaling. */
#define KP_RCP_1P(e) KP_RCP_APPROXF(1.0f + (e))
#define KP_DIV_1P(a, e) ((a) * KP_RCP_1P(e))
#define KP_DIV_1P_SQ(a, e) ((a) * (KP_RCP_1P(e) * KP_RCP_1P(e)))
/* a / b for b in [1, 2^126] (mish's n + 2 and 1 + e^x below its x = 20 cut; above it the
 * kernel selects another value): MUFU.RCP alone, as above. */
#define KP_DIV_BOUNDED(a, b) ((a) * KP_RCP_APPROXF(b))
#else
/* The same helpers for the other kernels: the snippets' formulas as written. */
#define KP_EXP_FACTOR(x) KP_EXP(x)
#define KP_RCP_1P(e) (KP_LIT(1.0) / (KP_LIT(1.0) + (e)))
#define KP_DIV_1P(a, e) ((a) / (KP_LIT(1.0) + (e)))
#define KP_DIV_1P_SQ(a, e) ((a) / ((KP_LIT(1.0) + (e)) * (KP_LIT(1.0) + (e))))
#define KP_DIV_BOUNDED(a, b) ((a) / (b))
#endif
