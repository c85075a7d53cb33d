/* GELU as torch, approximate='none': 0.5 x (1 + erf(x / sqrt 2)), written 0.5 x erfc(-x / sqrt 2)
 * so the negative tail keeps relative precision; approximate='tanh':
 * 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3), written x * sigmoid(2u) for the same
 * reason. At -inf both give NaN, as torch's formula does (-inf * 0). No saved-output backward. */
#define KP_GELU_SQRT1_2 KP_LIT(0.70710678118654752440)
#define KP_GELU_INV_SQRT_2PI KP_LIT(0.39894228040143267794)
#define KP_GELU_SQRT_2_PI KP_LIT(0.79788456080286535588)
#define KP_GELU_KAPPA KP_LIT(0.044715)

/* sigmoid(2u) and sigmoid(-2u) from one exponential that cannot overflow. */
#if (KP_DTYPE_F16 || KP_DTYPE_BF16) && !KP_FAST_MATH
/* 16-bit results (templates/common/narrow_math.h): u = sqrt(2/pi) v, and float16's
 * e = exp(-2|u|) = 2^(-C|v|), C = 2 sqrt(2/pi) log2(e), in one multiply and MUFU.EX2 alone
 * (flushed below 2^-126, as KP_EXP_FACTOR, outside gated kernels); bfloat16 keeps subnormal e,
 * since x e reaches its range (x near -10). 1 + e is in [1, 2]: the reciprocal is MUFU.RCP alone. */
#define KP_GELU_C_LOG2E 2.30220820f /* 2 sqrt(2/pi) log2(e) */
KP_FN void kp_gelu_sig2u(KP_C x, KP_C* s, KP_C* sm) {
  const KP_C v = KP_FMA(KP_GELU_KAPPA * x, x * x, x);
#if KP_F16_FLUSH_EXP
  const KP_C e = KP_HW_EXP2F_FTZ(KP_FABS(v) * -KP_GELU_C_LOG2E);
#else
  const KP_C e = KP_EXP_FACTOR(KP_FABS(v) * (-2.0f * KP_GELU_SQRT_2_PI));
#endif
  const KP_C r = KP_RCP_1P(e);
  *s = v >= 0.0f ? r : e * r;
  *sm = v >= 0.0f ? e * r : r;
}
#else
KP_FN void kp_gelu_sig2u(KP_C x, KP_C* s, KP_C* sm) {
  const KP_C u = KP_GELU_SQRT_2_PI * KP_FMA(KP_GELU_KAPPA * x, x * x, x);
  const KP_C e = KP_EXP(KP_LIT(-2.0) * KP_FABS(u));
  const KP_C r = KP_LIT(1.0) / (KP_LIT(1.0) + e);
  *s = u >= KP_LIT(0.0) ? r : e * r;
  *sm = u >= KP_LIT(0.0) ? e * r : r;
}
#endif

KP_FN KP_C kp_act_forward(KP_C x) {
#if KP_FAST_FP64 && KP_P_APPROXIMATE_TANH
  return kp_d_gelu_tanh(x);  /* exponent in double, quotient in float (templates/common/fp64_math.h) */
#elif KP_F32_IEEE && KP_P_APPROXIMATE_TANH
  return kp_precise_gelu_tanh(x);  /* float-float 2u and sigmoid (precise_math.h) */
#elif KP_FAST_FP64 && KP_WIDE_F32
  return kp_d_gelu(x); /* a gated kernel's: in double, unrounded (templates/common/fp64_math.h) */
#elif KP_F32_IEEE
  return kp_precise_gelu(x);  /* float alone, on every device (precise_math.h) */
#elif KP_TORCH_TIER && KP_P_APPROXIMATE_TANH
  /* float32, accuracy=torch: torch's formula, and so its cancellation for x < 0 (docs/accuracy.md);
   * tanhf's two MUFU operations where x sigmoid(2u) divides: 159 SASS instructions a thread of four
   * elements against 265 (`kplay emit --ptx`, ptxas and nvdisasm for sm_90) */
  const KP_C u = KP_GELU_SQRT_2_PI * (x + KP_GELU_KAPPA * (x * x * x));
#ifdef __OPENCL_VERSION__
  /* tanh(u) rounds to -1 below u = -9.02; PoCL's tanhf gives -1 + 2^-24 there, and x (1 + t) then
   * a huge x 2^-25 where the result is -0 */
  const KP_C t = u < KP_LIT(-9.1) ? KP_LIT(-1.0) : KP_TANH(u);
#else
  /* CUDA's tanhf is -1 from |u| = 9.01 on, as torch's: no test (its branch took 5 of 29 instructions
   * an element and 6 points of copy at 2^20 on the H200) */
  const KP_C t = KP_TANH(u);
#endif
  return KP_LIT(0.5) * x * (KP_LIT(1.0) + t);
#elif KP_TORCH_TIER
  /* float32, accuracy=torch: torch's formula (erff, whose 1 + erf cancels for x < 0, where erfcf
   * keeps the tail at half again the instructions: 186 against 292, counted as above) */
  return x * KP_LIT(0.5) * (KP_LIT(1.0) + KP_ERF(x * KP_GELU_SQRT1_2));
#elif KP_P_APPROXIMATE_TANH
  KP_C s, sm;
  kp_gelu_sig2u(x, &s, &sm);
  return x * s;
#elif KP_DTYPE_F64 && !KP_FAST_MATH
  return kp_f64_gelu(x); /* exp and erfc as one, at full precision (templates/common/float64_math.h) */
#else
  return KP_LIT(0.5) * x * KP_ERFC(-x * KP_GELU_SQRT1_2);
#endif
}

/* torch's gelu_backward: none: g (Phi(x) + x phi(x)); tanh: g (s + 2 x s (1 - s) sqrt(2/pi)
 * (1 + 3 kappa x^2)) with s = sigmoid(2u), the same as torch's 0.5 (1 + t) + 0.5 x (1 - t^2) ... */
KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) {
#if KP_FAST_FP64 && KP_P_APPROXIMATE_TANH
  return kp_d_gelu_tanh_grad(g, x);  /* in double, one rounding (templates/common/fp64_math.h) */
#elif KP_F32_IEEE && KP_P_APPROXIMATE_TANH
  return kp_precise_gelu_tanh_grad(g, x);  /* float-float f' (templates/common/precise_grad.h) */
#elif KP_FAST_FP64
  return kp_d_gelu_grad(g, x);  /* in double, one rounding (templates/common/fp64_math.h) */
#elif KP_F32_IEEE
  return kp_precise_gelu_grad(g, x);
#elif KP_TORCH_TIER && KP_P_APPROXIMATE_TANH
  /* float32 accuracy=torch: torch's gelu_backward as written (tanhf, its 1 + t and 1 - t^2), so its
   * error and cost (the sigmoid form below took 105 against torch's 118 % of copy at 2^20 on the
   * H200); beyond |x| = 20 the tail below, which keeps torch's x^2 from overflowing into
   * 0 * inf = NaN past |x| = 1.8e19 (NaN at +-inf, as torch). */
  const KP_C x_sq = x * x;
  const KP_C inner = KP_GELU_SQRT_2_PI * (x + KP_GELU_KAPPA * (x_sq * x));
#ifdef __OPENCL_VERSION__
  /* tanh(u) rounds to -1 below u = -9.01, where CUDA's tanhf gives it and PoCL's -1 + 2^-24 (as the
   * forward, above): then 1 - t^2 is 2^-23 where the exact is below it, 1.9e7 ulp at x = -5.18 */
  const KP_C t = inner < KP_LIT(-9.01) ? KP_LIT(-1.0) : KP_TANH(inner);
#else
  const KP_C t = KP_TANH(inner);
#endif
  const KP_C left = KP_LIT(0.5) * x;
  const KP_C left_derivative = KP_LIT(0.5) * (KP_LIT(1.0) + t);
  const KP_C tanh_derivative = KP_LIT(1.0) - t * t;
  const KP_C inner_derivative = KP_GELU_SQRT_2_PI * (KP_LIT(1.0) + KP_LIT(3.0) * KP_GELU_KAPPA * x_sq);
  const KP_C d = g * (left_derivative + left * tanh_derivative * inner_derivative);
  return KP_FABS(x) > KP_LIT(20.0) ? (x > KP_LIT(0.0) ? g : g * KP_LIT(0.0)) + g * (x - x) : d;
#elif KP_TORCH_TIER
  /* float32 accuracy=torch: torch's gelu_backward as written (erff, whose 0.5 (1 + erf) cancels
   * with x phi(x) near the root at -0.7518 as the erfcf form does, at two thirds of its cost: the
   * erfcf form took 93 against torch's 106 % of copy at 2^20 on the H200, and 9.0e7 ulp at the
   * root's float where torch's formula gives torch's 5.6e7) */
  const KP_C cdf = KP_LIT(0.5) * (KP_LIT(1.0) + KP_ERF(x * KP_GELU_SQRT1_2));
  const KP_C pdf = KP_EXP(KP_LIT(-0.5) * x * x) * KP_GELU_INV_SQRT_2PI;
  return g * (cdf + x * pdf);
#elif KP_P_APPROXIMATE_TANH
  KP_C s, sm;
  kp_gelu_sig2u(x, &s, &sm);
  const KP_C du = KP_GELU_SQRT_2_PI * KP_FMA(KP_LIT(3.0) * KP_GELU_KAPPA * x, x, KP_LIT(1.0));
  const KP_C inner = g * (s * KP_FMA(KP_LIT(2.0) * x * sm, du, KP_LIT(1.0)));
  /* Beyond |x| = 20 (1e100 in double, whose tail stays normal far longer) the derivative is 1 or
   * 0 to the type's precision, and x^3 would overflow (inner is then NaN, and not taken). NaN at
   * +-inf, as torch's 0.5 x (1 - t^2) ... gives (inf * 0). Computed first and selected, no
   * branch per element (as selu.h). */
#if KP_DTYPE_F64
  const bool tail = KP_FABS(x) > 1e100;
#else
  const bool tail = KP_FABS(x) > KP_LIT(20.0);
#endif
  return tail ? (x > KP_LIT(0.0) ? g : g * KP_LIT(0.0)) + g * (x - x) : inner;
#elif KP_DTYPE_F64 && !KP_FAST_MATH
  return kp_f64_gelu_grad(g, x);
#else
  const KP_C pdf = KP_GELU_INV_SQRT_2PI * KP_EXP(KP_LIT(-0.5) * x * x);
  return g * KP_FMA(x, pdf, KP_LIT(0.5) * KP_ERFC(-x * KP_GELU_SQRT1_2));
#endif
}
