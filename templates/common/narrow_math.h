/* Math for float16 and bfloat16 results, shared by every backend (the prelude defines KP_FN,
 * KP_FMAF, KP_FABSF and KP_HW_EXPF, the hardware exponential). A result rounded to 16 bits needs
 * the float32 math only to ~1e-5 relative (half an ulp of float16 is 4.9e-4), and the library
 * expm1 would make 16-bit SELU compute-bound (8 elements per 16 bytes). So: a degree-6 Taylor
 * polynomial for |x| < 0.5 (truncation <= 4e-6 relative, precise near 0 where exp(x)-1 is not),
 * the hardware exponential elsewhere. Fast-math and the 32/64-bit types keep their own. */
#if (KP_DTYPE_F16 || KP_DTYPE_BF16) && !KP_FAST_MATH
KP_FN float kp_expm1_narrow(float x) {
  float p = 1.0f / 720.0f;
  p = KP_FMAF(p, x, 1.0f / 120.0f);
  p = KP_FMAF(p, x, 1.0f / 24.0f);
  p = KP_FMAF(p, x, 1.0f / 6.0f);
  p = KP_FMAF(p, x, 0.5f);
  p = KP_FMAF(p, x, 1.0f);
  return KP_FABSF(x) < 0.5f ? p * x : KP_HW_EXPF(x) - 1.0f;
}
#undef KP_EXPM1
#undef KP_EXP
#define KP_EXPM1(x) kp_expm1_narrow(x)
#define KP_EXP(x) KP_HW_EXPF(x)
#endif
