/* float32 activations evaluated in double, for devices whose FP64 runs at half the FP32 rate
 * (KP_FAST_FP64: H100/H200, A100, V100, CPUs). The routines are purpose-built for 2^-28 to 2^-30
 * relative error (not double's 2^-53; log1p 2^-25.7), so that the one rounding to float gives
 * ~0.5 ulp (0.82 for logsigmoid and softplus) at a fraction of precise_math.h's float-float cost. Coefficients and constants:
 * tools/numerics/fit_fp64_math.py. SASS counts per element: docs/activations.md.
 *
 * The prelude must define KP_D_LO(d) and KP_D_HI(d) (low and high words of a double as int), KP_D_FROM_HILO(hi, lo),
 * KP_D_TABLE (a program-scope constant-memory double array) and KP_RCP_APPROXD(x) (a reciprocal estimate, normal x; refined here by a Newton step),
 * and, for gelu(tanh)'s float half, precise_math.h's KP_AS_FLOAT, KP_RCP_APPROXF and KP_EX2_APPROXF. No
 * division, no libdevice exp/log/erfc, and no float->int conversion: the range reduction reads
 * n from the low word of x log2(e) + 1.5 2^52. */
#ifndef KP_FP64_MATH_H
#define KP_FP64_MATH_H
#if KP_FAST_FP64

/* What the activations return: a float, rounded once here, in a float32 kernel; in a gated
 * float32 kernel (KP_WIDE_F32) the double itself, unrounded, which the kernel multiplies by b in
 * double and rounds once: the product is then within 0.5 ulp plus the routine's relative error
 * times 2^24 (0.56 ulp for 2^-28, 0.81 for log1p's 2^-25.7), where a float act(a) would carry its
 * own error, doubled in ulps of the product, into it. */
#if KP_WIDE_F32
typedef double kp_d_res;
#else
typedef float kp_d_res;
#endif

#define KP_D_LOG2E 0x1.71547652b82fep+0
#define KP_D_LN2 0x1.62e42fefa39efp-1
#define KP_D_SHIFT 0x1.8p+52 /* adding it rounds |v| < 2^51 to an integer, held in the low word */

/* Polynomial coefficients live in constant memory (KP_D_TABLE, from the prelude), lowest order
 * first: a DFMA reads them as an operand where a literal double costs two moves per use. */
#define KP_D_HORNER(p, c, n, x)                                      \
  do {                                                               \
    p = c[(n) - 1];                                                  \
    for (int kp_i_ = (n) - 2; kp_i_ >= 0; --kp_i_) p = fma(p, x, c[kp_i_]); \
  } while (0)

/* e^r - 1 for |r| <= ln2/2 + 1e-3: r + r^2 P(r), rel 2^-27.7 (0.08 ulp of a float result). */
KP_D_TABLE kp_d_expm1_c[6] = {0x1.00000026919b8p-1, 0x1.555554edd5d70p-3, 0x1.5554af5b38578p-5, 0x1.11118ac3a6c00p-7,
                              0x1.6d73e5c91e228p-10, 0x1.a032dcbd1fed8p-13};
KP_FN double kp_d_expm1_poly(double r) {
  double p;
  KP_D_HORNER(p, kp_d_expm1_c, 6, r);
  return fma(r * r, p, r);
}

/* 2^n for t = n + 1.5 2^52 (n in its low word), n in [-1022, 1023]. */
KP_FN double kp_d_pow2_shifted(double t) { return KP_D_FROM_HILO((int)((unsigned)(KP_D_LO(t) + 1023) << 20), 0); }

/* x = n ln2 + r: returns r and stores 2^n in *s. Valid for x in [-708, 708] (2^n normal); other
 * x give garbage that the callers select away. ln2 in one double: |n| ln2 2^-54 < 2^-43. */
KP_FN double kp_d_reduce(double x, double* s) {
  const double t = fma(x, KP_D_LOG2E, KP_D_SHIFT);
  const double n = t - KP_D_SHIFT;
  *s = kp_d_pow2_shifted(t);
  return fma(-n, KP_D_LN2, x);
}

/* e^r for |r| <= ln2/2 + 1e-3 as one polynomial, rel 2^-29.0: e^x needs no relative precision
 * near 0, so the expm1 form (two more FP64 operations) is kept for expm1. */
KP_D_TABLE kp_d_exp_c[7] = {0x1.000000026f7a0p+0, 0x1.0000009eb1daap+0, 0x1.fffffa979c836p-2, 0x1.555406affc71dp-3,
                            0x1.5558a3fba2894p-5, 0x1.126f0bfb5c9dap-7, 0x1.6ab775a074088p-10};

/* e^x = 2^n E(r), r = x - n ln2, for x in [-708, 708]: 2^n added to the exponent as an integer;
 * 9 FP64 operations where 2^n (e^r - 1) + 2^n took 12, which the H200's memory rate cannot feed.
 * x is given as its words (the sign set on them is an integer op, where -fabs(x) costs a DADD).
 * Other x give garbage, for callers that select it away. */
KP_FN double kp_d_exp_words_in_range(int hx, int lx, int* hi_out) {
  const double x = KP_D_FROM_HILO(hx, lx);
  const double t = fma(x, KP_D_LOG2E, KP_D_SHIFT);
  const double n = t - KP_D_SHIFT;
  double p;
  KP_D_HORNER(p, kp_d_exp_c, 7, fma(-n, KP_D_LN2, x));
  *hi_out = KP_D_HI(p) + (int)((unsigned)KP_D_LO(t) << 20);
  return p;
}

/* e^x for any x: |x| clamped to 708 on the high word (integer ops: the FP64 pipe is the scarce
 * one), so 2^n stays normal; beyond it the result is 0 (x < -708) or inf (x > 708), and NaN gives
 * 0 or inf too: callers that must return NaN select it from x. */
KP_FN double kp_d_exp_words(int hx, int lx) {
  const int out = (hx & 0x7fffffff) > 0x40862000; /* |x| > 708.00..., or NaN */
  int hi;
  const double p = kp_d_exp_words_in_range(out ? (hx & (int)0x80000000) | 0x40862000 : hx, lx, &hi);
  return KP_D_FROM_HILO(out ? (hx < 0 ? 0 : 0x7ff00000) : hi, out ? 0 : KP_D_LO(p));
}
KP_FN double kp_d_exp(double x) { return kp_d_exp_words(KP_D_HI(x), KP_D_LO(x)); }
/* e^-|x| */
KP_FN double kp_d_exp_neg_abs(double x) { return kp_d_exp_words(KP_D_HI(x) | (int)0x80000000, KP_D_LO(x)); }

/* e^x - 1 for x in [-708, 708], rel 2^-27.7: 2^n (e^r - 1) + (2^n - 1), where 2^n - 1 is exact and
 * no cancellation is left (n != 0 means |x| > ln2/2). Callers clamp x, in float where they can. */
KP_FN double kp_d_expm1_in_range(double x) {
  double s;
  const double m = kp_d_expm1_poly(kp_d_reduce(x, &s));
  return fma(s, m, s - 1.0);
}

/* e^x - 1 for x <= 708 (-1 below -708). */
KP_FN double kp_d_expm1(double x) { return x < -708.0 ? -1.0 : kp_d_expm1_in_range(x); }

/* 2^k / d for normal d in [1, 2^1000]: the estimate (MUFU.RCP64H: about 2^-20 with the low word
 * it leaves unset), k added to its exponent (an integer add, none for k = 0), then one quadratic
 * Newton step (error e -> e^2, 2^-38 at worst: the routines here need 2^-32). */
KP_FN double kp_d_rcp_pow2(double d, int k) {
  const double y = KP_RCP_APPROXD(d);
  const double yk = KP_D_FROM_HILO(KP_D_HI(y) + k * 0x00100000, KP_D_LO(y));
  return fma(yk, fma(-d, y, 1.0), yk);
}
KP_FN double kp_d_rcp(double d) { return kp_d_rcp_pow2(d, 0); }

/* |v| with the sign of x (float bits), for odd functions: on the words of v, one integer op. */
#if KP_WIDE_F32
KP_FN double kp_d_copysign(double v, float x) {
  return KP_D_FROM_HILO((KP_D_HI(v) & 0x7fffffff) | (KP_AS_INT(x) & (int)0x80000000), KP_D_LO(v));
}
#else
KP_FN float kp_d_copysign(float v, float x) {
  return KP_AS_FLOAT((KP_AS_INT(v) & 0x7fffffff) | (KP_AS_INT(x) & (int)0x80000000));
}
#endif

/* sigmoid(x) and sigmoid(-x) from e = exp(-|x|), which never overflows: s = 1/(1+e) on the
 * side of x, e/(1+e) on the other. NaN gives e = 0: the callers select NaN from their input. */
KP_FN double kp_d_sigmoid_parts(double x, double* e, double* r) {
  *e = kp_d_exp_neg_abs(x);
  *r = kp_d_rcp(1.0 + *e);
  return KP_D_HI(x) >= 0 ? *r : *e * *r; /* the sign as an integer test: a DSETP is an FP64 op */
}

KP_FN kp_d_res kp_d_sigmoid(float x) {
  double e, r;
  const kp_d_res y = (kp_d_res)kp_d_sigmoid_parts(x, &e, &r);
  return x != x ? (kp_d_res)x : y;
}

/* x sigmoid(x): at -inf, -inf * 0 = NaN, as torch's x / (1 + exp(-x)). */
KP_FN kp_d_res kp_d_silu(float x) {
  double e, r;
  return (kp_d_res)((double)x * kp_d_sigmoid_parts(x, &e, &r));
}

/* g sigmoid(x) sigmoid(-x) = g e / (1 + e)^2, one rounding. */
KP_FN kp_d_res kp_d_sigmoid_grad(float g, float x) {
  double e, r;
  kp_d_sigmoid_parts(x, &e, &r);
  const kp_d_res d = (kp_d_res)((double)g * e * r * r);
  return x != x ? (kp_d_res)(x + g) : d;
}

/* -tanh |x| = m / (2 + m), m = expm1(-2|x|) in [-1, 0]: relative precision at every |x|. */
KP_FN double kp_d_neg_tanh_abs(double x) {
  const double m = kp_d_expm1(-2.0 * fabs(x));
  return m * kp_d_rcp(2.0 + m);
}

/* tanh x: |x| clamped at 9.5 in float (tanh rounds to 1 beyond 9.02) and -2|x| formed there
 * (exact), so expm1 needs no range check and no DMUL. */
KP_FN kp_d_res kp_d_tanh(float x) {
  const double m = kp_d_expm1_in_range((double)(-2.0f * (KP_FABSF(x) < 9.5f ? KP_FABSF(x) : 9.5f)));
  const kp_d_res t = kp_d_copysign((kp_d_res)(m * kp_d_rcp(2.0 + m)), x);
  return x != x ? (kp_d_res)x : t;
}

/* g (1 - tanh^2 x) = g 4 e / (1 + e)^2, e = exp(-2|x|): a product, so no cancellation. */
KP_FN kp_d_res kp_d_tanh_grad(float g, float x) {
  const double e = kp_d_exp_neg_abs(2.0 * (double)x);
  const double r = kp_d_rcp(1.0 + e);
  const kp_d_res d = (kp_d_res)((double)g * (4.0 * e) * r * r);
  return x != x ? (kp_d_res)(x + g) : d;
}

/* silu'(x) = s (1 + x (1 - s)) = N / (1 + e)^2 with e = exp(-|x|) and N = 1 + e + x e for
 * x >= 0, e (1 + x + e) for x < 0. 1 + x + e^x vanishes at X0 = -1.2785: within 0.34 of it
 * e^x = E0 e^t, t = x - X0 (exact, Sterbenz), and 1 + x + e^x = (D + t) + E0 expm1(t) with
 * D = 1 + X0 + E0 ~ 2^-53, so the factor keeps its relative precision at the root. The window
 * only changes the reduction (one polynomial serves both). */
#define KP_D_SILU_X0 -0x1.474973c84120bp+0
#define KP_D_SILU_E0 0x1.1d25cf210482fp-2
#define KP_D_SILU_D 0x1.42b5edc36b7fap-53
/* g silu'(xd) for a double argument xd and its float rounding x (the tests on x in float: a DSETP
 * would take the FP64 pipe). xd - X0 is exact near the root (Sterbenz) for any double xd, so
 * quick_gelu passes its exact product beta x here (float x, float beta: 48 bits). */
KP_FN kp_d_res kp_d_silu_grad_at(float g, double xd, float x) {
  const double a = -fabs(xd);
  double s;
  const double rg = kp_d_reduce(a, &s);
  const double t = xd - KP_D_SILU_X0;
  const int near_root = x > (float)KP_D_SILU_X0 - 0.34f && x < (float)KP_D_SILU_X0 + 0.34f;
  const double sc = near_root ? KP_D_SILU_E0 : s;
  const double m = kp_d_expm1_poly(near_root ? t : rg);
  const double e = KP_FABSF(x) > 708.0f ? 0.0 : fma(sc, m, sc);
  const double h = near_root ? fma(KP_D_SILU_E0, m, KP_D_SILU_D + t) : (1.0 + xd) + e; /* 1 + x + e^x */
  const double n = x < 0.0f ? e * h : fma(xd, e, 1.0 + e);
  const double r = kp_d_rcp(1.0 + e);
  return (kp_d_res)((double)g * n * r * r);
}
KP_FN kp_d_res kp_d_silu_grad(float g, float x) { return kp_d_silu_grad_at(g, (double)x, x); }

/* exp(-w/2) for w = x^2 (exact in double) = 2^n E(z), z = w + 2 n ln2 in [-ln2, ln2] (one ln2 double:
 * |2n ln2| 2^-54 < 2^-45 for w <= 225): returns E(z), rel 2^-29.0, and stores n << 20, the 2^n
 * scale as an addend to a high word (an integer op, not a DMUL). w must be <= 1400 (n normal). */
KP_D_TABLE kp_d_gelu_e_c[7] = {0x1.0000000268e3ep+0, -0x1.0000009d5600ep-1, 0x1.fffffaa23acacp-4, -0x1.5554089a9430cp-6,
                               0x1.5558a002def00p-9, -0x1.126e0aad58f00p-12, 0x1.6ab7da9ead800p-16};
KP_D_TABLE kp_d_exp_neg_half_k[2] = {-0.5 * KP_D_LOG2E, 2.0 * KP_D_LN2}; /* operands, not two moves each */
KP_FN double kp_d_exp_neg_half(double w, int* scale_hi) {
  const double t = fma(w, kp_d_exp_neg_half_k[0], KP_D_SHIFT);
  const double n = t - KP_D_SHIFT;
  *scale_hi = (int)((unsigned)KP_D_LO(t) << 20);
  const double z = fma(n, kp_d_exp_neg_half_k[1], w);
  double p;
  KP_D_HORNER(p, kp_d_gelu_e_c, 7, z);
  return p;
}

/* v 2^n for a normal double v whose result stays normal: n added to the exponent field. */
KP_FN double kp_d_scale(double v, int scale_hi) { return KP_D_FROM_HILO(KP_D_HI(v) + scale_hi, KP_D_LO(v)); }

/* v where keep, else +0, selected as words: as a double select the compiler may make it a float
 * min/max and one more conversion. */
KP_FN double kp_d_or_zero(int keep, double v) { return KP_D_FROM_HILO(keep ? KP_D_HI(v) : 0, keep ? KP_D_LO(v) : 0); }

/* e num / den, den >= 1: the reciprocal estimate and one Newton step folded into the product
 * (e 2^-20 -> 2^-40). */
KP_FN double kp_d_mul_div(double e, double num, double den) {
  const double y = KP_RCP_APPROXD(den);
  const double r = fma(-den, y, 1.0);
  const double q = (e * num) * y;
  return fma(q, r, q);
}

/* gelu'(x) = Phi(x) + x phi(x): exp(-a^2/2) G(a) for x = -a < 0, 1 - exp(-a^2/2) G(a) for x >= 0,
 * G(a) = R(a) - a / sqrt(2 pi), R(a) = Phi(-a) exp(a^2/2) = erfcx(a / sqrt 2) / 2. G vanishes at
 * A0 = 0.7518 (gelu's minimum): G = t K(a) with t = a - A0 (a - A0hi exact by Sterbenz) and
 * K = M(a) / D(a), degrees 5 / 5, smooth through A0, rel 2^-33.5 on [0, 14.5]: relative precision
 * at the root, no window. Outside (-15, 7) the derivative rounds to 0 or 1; at +-inf NaN
 * (0 * inf), as torch's formula. */
#define KP_D_GELU_A0_HI 0x1.80ead197f00b4p-1
#define KP_D_GELU_A0_LO -0x1.13e74c58cada8p-56
KP_D_TABLE kp_d_gelu_m_c[6] = {-0x1.54851a5d39ebep-1, -0x1.b7bc95c4707c9p-1, -0x1.03ae1fdc62418p-1, -0x1.53486a52eab4ep-3,
                               -0x1.ea178e04f7200p-6, -0x1.3d6e3b6aeae00p-9};
KP_D_TABLE kp_d_gelu_dk_c[6] = {0x1.0000000000000p+0, 0x1.8e96568620b2dp+0, 0x1.078aba32d59a0p+0, 0x1.75ba6a2d2fecap-2,
                                0x1.206ce2beef68ep-4, 0x1.8dd72c3de9300p-8};
KP_FN kp_d_res kp_d_gelu_grad(float g, float x) {
  const double xd = x;
  const double a = fabs(xd);
  int scale_hi;
  const double e = kp_d_exp_neg_half(a * a, &scale_hi);
  const double t = (a - KP_D_GELU_A0_HI) - KP_D_GELU_A0_LO;
  double num, den;
  KP_D_HORNER(num, kp_d_gelu_m_c, 6, a);
  KP_D_HORNER(den, kp_d_gelu_dk_c, 6, a);
  const double eg = kp_d_scale(kp_d_mul_div(e, num, den) * t, scale_hi); /* exp(-a^2/2) G(a) */
  const double d = (double)g * (x < 0.0f ? eg : 1.0 - eg);
  return x > -15.0f && x < 7.0f ? (kp_d_res)d : (kp_d_res)((x > 0.0f ? g : g * 0.0f) + g * (x - x));
}

#if KP_WIDE_F32
/* gelu (erf) for a gated kernel, from the derivative's parts: Phi(-a) = exp(-a^2/2) R(a) with
 * R = G + a / sqrt(2 pi), G = t K(a) as above, so gelu = x Phi(-a) for x <= 0 and x - x Phi(-a)
 * above (Phi(-a) <= 1/2: no cancellation). R = G + a c cancels up to a^2 (2^7.7 at 14.5) of K's
 * 2^-33.5: 2^-25.8 relative at worst, 0.79 ulp of the product. K is fitted on [0, 14.5]; below
 * x = -14.5, where act(a) * b still reaches float's range (gelu(-20) = -2^-295 times b near
 * 2^128), the float64 kernel's full routine takes over in a branch, which real activations leave
 * untaken; beyond 14.5 the result is x (Phi(-14.5) = 2^-158). 27 FP64 operations, where the
 * float64 routine alone takes 79 per element. */
KP_D_TABLE kp_d_gelu_inv_sqrt_2pi[1] = {0x1.9884533d43651p-2}; /* an operand, not two moves */
KP_FN double kp_d_gelu(float x) {
  const double xd = x;
  if (x < -14.5f) return kp_f64_gelu(xd); /* -inf too: NaN, as torch */
  const double a = fabs(xd);
  int scale_hi;
  const double e = kp_d_exp_neg_half(a * a, &scale_hi);
  const double t = (a - KP_D_GELU_A0_HI) - KP_D_GELU_A0_LO;
  double num, den;
  KP_D_HORNER(num, kp_d_gelu_m_c, 6, a);
  KP_D_HORNER(den, kp_d_gelu_dk_c, 6, a);
  const double r = fma(a, kp_d_gelu_inv_sqrt_2pi[0], kp_d_mul_div(t, num, den)); /* R(a) */
  const double phi = kp_d_scale(e * r, scale_hi);                                 /* Phi(-a) */
  return x > 14.5f ? xd : (x <= 0.0f ? xd * phi : fma(-xd, phi, xd));
}
#endif

/* GELU (approximate='tanh'), x sigmoid(2u), 2u = C2 (x + k x^3), C2 = 2 sqrt(2/pi): the exponent
 * in double, the rest in float. e = e^-|2u| = 2^(-|x| v) with v = (C2 + C2 k x^2) log2(e) > 0: the
 * fmas that round |x| v to n and take r = -|x| v - n form the product themselves, so 2u is never
 * formed. Then 2^r is MUFU.EX2 (KP_EX2_APPROXF) and x / (1 + e) or x e / (1 + e) one corrected
 * quotient of float-float parts, with e carried at 2^64 scale (n clamped at -160, where x e is 0).
 * 5 FP64 operations per element where an all-double routine takes 16: 40 SASS instructions
 * against 36, but at the H200's 700 W cap it runs at a higher clock (median 1845 MHz against 1710)
 * and about 1 point nearer the copy (`tools/perf_table.py --acts 'gelu(approximate=tanh)' --dtypes
 * f32 --directions forward`, SM_MHZ column). 2.65 ulp at most over every float on an H200, 1.72
 * on PoCL (bound 3; the all-double routine meets 2). |x| is clamped at 20 on the high word (there
 * |2u| log2(e) = 870 and x sigmoid(2u) already rounds to x or -0); -inf: -inf * 0 = NaN, as
 * torch. */
#define KP_D_GELUT_C2L 0x1.26aec21bce75ap+1  /* C2 log2(e) */
#define KP_D_GELUT_C2KL 0x1.a5a7cf7572a98p-4 /* C2 k log2(e), k = 0.044715 */
#if !KP_WIDE_F32 /* a gated kernel's, all in double, follows gelu(tanh)' */
KP_FN float kp_d_gelu_tanh(float x) {
  const double xd = x;
  const int ha = KP_D_HI(xd) & 0x7fffffff;
  const double a = ha > 0x40340000 ? 20.0 : KP_D_FROM_HILO(ha, KP_D_LO(xd)); /* min(|x|, 20) */
  const double v = fma(KP_D_GELUT_C2KL, a * a, KP_D_GELUT_C2L);
  const double t = fma(-a, v, KP_D_SHIFT);
  const double n = t - KP_D_SHIFT;
  const float r = (float)fma(-a, v, -n); /* e = 2^n 2^r, |r| <= 1/2 */
  const int k = KP_D_LO(t) < -160 ? -160 : KP_D_LO(t);
  const float es = KP_EX2_APPROXF(r) * KP_AS_FLOAT((k + 64 + 127) << 23); /* e 2^64, normal */
  const float e = es * 0x1p-64f;
  const float d = 1.0f + e;
  const float dl = (1.0f - d) + e; /* 1 + e = d + dl exactly */
  const bool pos = x >= 0.0f;               /* x / (1 + e), else x e / (1 + e) */
  const float ph = pos ? x : x * es;
  const float pl = pos ? 0.0f : KP_FMAF(x, es, -ph); /* x or x e 2^64 = ph + pl */
  const float rd = KP_RCP_APPROXF(d);
  const float q0 = ph * rd;
  const float q = KP_FMAF(KP_FMAF(-d, q0, ph) + KP_FMAF(-dl, q0, pl), rd, q0);
  const float y = pos ? q : q * 0x1p-64f;
  /* x itself at +-0 and beyond 20, where the residual would turn -0 into +0 and inf into NaN */
  return x < -20.0f ? x * 0.0f : (x == 0.0f || x > 20.0f ? x : y);
}
#endif

/* log1p(e^-|x|) = p / D for |x| <= 700 (other x: garbage, selected away by the callers), as its
 * parts: p = w N(w) returned, w = e^-|x|, and 1 / D(w) stored in *rd, so that a caller's addend
 * joins the last product in one fma. N / D has degrees 2 / 3 on [0, 1], rel 2^-25.7: logsigmoid
 * and softplus measure 0.824 ulp at worst over every float in [-120, 120]. Degrees 3 / 3 (2^-30.0,
 * 0.544 ulp) cost one FP64 operation more, and with the separate addend two more: at 20 FP64
 * operations per element these kernels reached 94-95 % of copy on the H200, at 18 100 %. */
KP_D_TABLE kp_d_log1p_n_c[3] = {0x1.ffffff5cea53ep-1, 0x1.bc009ccee88acp-1, 0x1.faefbe6d1b0cep-4};
KP_D_TABLE kp_d_log1p_d_c[4] = {0x1.0000000000000p+0, 0x1.5e002dbda1f86p+0, 0x1.e56f62332bbc9p-2, 0x1.fd73573229420p-6};
KP_FN double kp_d_log1p_exp_neg_abs_parts(double x, double* rd) {
  /* e^-|x| as kp_d_exp_words_in_range computes it, with -|x| as operand modifiers of its two
   * fmas (free there; as a value, -|x| would cost an integer op and a move) */
  const double t = fma(-fabs(x), KP_D_LOG2E, KP_D_SHIFT);
  const double n = t - KP_D_SHIFT;
  double p;
  KP_D_HORNER(p, kp_d_exp_c, 7, fma(-n, KP_D_LN2, -fabs(x)));
  /* 2^n added to the exponent, unchecked: beyond |x| = 700 the callers select */
  const double w = KP_D_FROM_HILO(KP_D_HI(p) + (int)((unsigned)KP_D_LO(t) << 20), KP_D_LO(p));
  double num, den;
  KP_D_HORNER(num, kp_d_log1p_n_c, 3, w);
  KP_D_HORNER(den, kp_d_log1p_d_c, 4, w);
  *rd = kp_d_rcp(den);
  return w * num;
}

/* softplus(x) = x if x beta > threshold (torch decides on the float product), else
 * (max(z, 0) + log1p(e^-|z|)) / beta with z = x beta exact in double: no cancellation. */
KP_FN kp_d_res kp_d_softplus(float x, float beta, float threshold) {
  const float zf = x * beta;
  const double z = (double)x * beta;
  /* |z| clamped at 700 on the high word (one integer op): beyond it e^-|z| stays a normal double
   * that rounds away against max(z, 0), so the result needs no select (NaN: the addend has it) */
  const int hz = KP_D_HI(z) & 0x7fffffff;
  double rd;
  const double p = kp_d_log1p_exp_neg_abs_parts(KP_D_FROM_HILO(hz < 0x4085e000 ? hz : 0x4085e000, KP_D_LO(z)), &rd);
  const double y = fma(p, rd, kp_d_or_zero(!(zf <= 0.0f), z));
  return zf > threshold ? (kp_d_res)x : (kp_d_res)(beta == 1.0f ? y : y * (1.0 / (double)beta));
}
/* g sigmoid(z), z = x beta: softplus' (and logsigmoid' with beta = -1); NaN from x. */
KP_FN kp_d_res kp_d_mul_sigmoid(float g, float x, double z) {
  double e, r;
  const kp_d_res d = (kp_d_res)((double)g * kp_d_sigmoid_parts(z, &e, &r));
  return x != x ? (kp_d_res)(x + g) : d;
}

/* logsigmoid(x) = min(x, 0) - log1p(e^-|x|): both terms of one sign. +inf: +0, -inf: -inf. */
KP_FN kp_d_res kp_d_logsigmoid(float x) {
  const double xd = x;
  double rd;
  const double p = kp_d_log1p_exp_neg_abs_parts(xd, &rd); /* unconditionally: a select, not a branch */
  /* min(x, 0) selected in float and converted: 33 instructions per element over a copy, where
   * kp_d_or_zero on the double's words took 40 (register moves around the two selects) */
  const kp_d_res y = (kp_d_res)fma(-p, rd, (double)(x < 0.0f ? x : 0.0f));
  /* beyond |x| = 700 (and NaN) in float, where a select costs one instruction, not two */
  return KP_FABSF(x) < 700.0f ? y : (kp_d_res)(x >= 0.0f ? 0.0f : x);
}

/* mish(x) = x tanh(softplus(x)) = x n / (n + 2), n = e^x (e^x + 2); e^x clamped at 40, where the
 * ratio is 1 in double (NaN: x carries it). -inf: -inf * 0 = NaN, as torch; -0 keeps its sign. */
KP_FN kp_d_res kp_d_mish(float x) {
  const double xd = x;
  const double e = kp_d_exp(x < 40.0f ? xd : 40.0); /* a float test: no DSETP on the FP64 pipe */
  const double n = e * (e + 2.0);
  return (kp_d_res)(xd * (n * kp_d_rcp(n + 2.0)));
}

/* tanhshrink(x) = x - tanh x = x^3 S(a), a = |x|, S = (a - tanh a) / a^3 = N(a) / D(a), degrees
 * 6 / 7, rel 2^-32.2 on [0, 11]: relative precision everywhere, no cancellation, no exp. Beyond
 * |x| = 11, tanh x is +-1 to 2^-34 of the result: x -+ 1, rounded once in float (inf, NaN too).
 * tanhshrink(-0) = +0, as torch's -0 - -0. */
KP_D_TABLE kp_d_tanhshrink_n_c[7] = {0x1.5555555479607p-2, 0x1.0ae2621cf6f19p-5, 0x1.85e6a4b837d3cp-6, 0x1.01b0a7f482f37p-9,
                                     0x1.7d65c9ea6d476p-12, 0x1.08c4c446e1800p-16, -0x1.710d833000000p-29};
KP_D_TABLE kp_d_tanhshrink_d_c[8] = {0x1.0000000000000p+0, 0x1.9053907bda893p-4, 0x1.e2b4dfd82e307p-2, 0x1.709304b046e66p-5,
                                     0x1.c691428089728p-6, 0x1.22e116be4fc9dp-9, 0x1.94c03f125a168p-12, 0x1.056ab84268900p-16};
KP_FN kp_d_res kp_d_tanhshrink(float x) {
  const double xd = x;
  const double a = fabs(xd);
  double num, den;
  KP_D_HORNER(num, kp_d_tanhshrink_n_c, 7, a);
  KP_D_HORNER(den, kp_d_tanhshrink_d_c, 8, a);
  const kp_d_res y = (kp_d_res)kp_d_mul_div(xd * (xd * xd), num, den);
  /* x -+ 1: rounded in float, exact in double */
  return x == 0.0f ? (kp_d_res)0.0f : (x < 11.0f && x > -11.0f ? y : (kp_d_res)x - (x > 0.0f ? 1.0f : -1.0f));
}

/* tanhshrink'(x) = tanh^2 x: g t t in double, one rounding. */
KP_FN kp_d_res kp_d_tanhshrink_grad(float g, float x) {
  const double t = kp_d_neg_tanh_abs(x);
  return (kp_d_res)((double)g * t * t);
}

/* gelu(tanh)'(x) = s (1 + 2x sm du), s = sigmoid(2u), sm = 1 - s, du = sqrt(2/pi) (1 + 3k x^2):
 * N r^2 with e = exp(-|2u|), r = 1/(1 + e), N = 1 + e + 2x du e for u >= 0 and e h, h =
 * 1 + e + 2x du, for u < 0. In base 2, as the forward: -|2u| log2(e) = -|x| v, v = C2L + C2KL x^2,
 * so 2u is never formed; 2x du = x (C2 + 3 C2 k x^2). h vanishes at X1 = -0.7517 (gelu's
 * minimum): within 0.2 of the float X1F, e = E1 2^d with d = x v - W1 (W1 = X1F v(X1F) in two
 * parts, E1 = 2^W1) and h = E1 m + ((2x du - C) + DELTA), m = 2^d - 1, C = -(1 + E1) rounded,
 * DELTA = 1 + E1 + C exactly (2x du - C is exact by Sterbenz): h's absolute error stays near
 * 2^-52 where it crosses zero, 2^-26.8 relative at the float nearest X1. Both sides take
 * m = r Q(r), r in [-1/2, 1/2]. The tests on x are float compares (a DSETP is an FP64-pipe op);
 * beyond |x| = 20 e is 0 (|2u| > 1000) and the derivative rounds to g or 0; +-inf: NaN, as torch.
 * Constants: tools/numerics/fit_fp64_math.py. */
#define KP_D_GELUT_X1F -0x1.8142a00000000p-1f
#define KP_D_GELUT_DELTA -0x1.0000000000000p-54 /* an immediate operand: its low word is 0 */
/* -W1hi, -W1lo, E1, -C, C2 = 2 sqrt(2/pi), 3 C2 k: operands from constant memory, where literal
 * doubles cost two moves each */
KP_D_TABLE kp_d_gelut_k[6] = {0x1.c6b3cd3f745ebp+0, 0x1.3e7d85d9a2cb3p-58, 0x1.2af64e3aa07b3p-2, 0x1.4abd938ea81edp+0,
                              0x1.9884533d43651p+0, 0x1.b6676bf7450f1p-3};
KP_D_TABLE kp_d_exp2m1_c[7] = {0x1.62e42fefd4b7ap-1, 0x1.ebfbe0470cba4p-3, 0x1.c6b08cacc4000p-5, 0x1.3b2a19b993900p-7,
                               0x1.5d88c0caed480p-10, 0x1.4441de8fbb4a0p-13, 0x1.ffcbd54840a00p-17};
KP_FN kp_d_res kp_d_gelu_tanh_grad(float g, float x) {
  const double xd = x;
  const double x2 = xd * xd;
  const double v = fma(KP_D_GELUT_C2KL, x2, KP_D_GELUT_C2L);
  const double t = fma(-fabs(xd), v, KP_D_SHIFT);
  const double n = t - KP_D_SHIFT;
  const int near_root = x > KP_D_GELUT_X1F - 0.2f && x < KP_D_GELUT_X1F + 0.2f;
  const double r = near_root ? fma(xd, v, kp_d_gelut_k[0]) + kp_d_gelut_k[1] : fma(-fabs(xd), v, -n);
  double q;
  KP_D_HORNER(q, kp_d_exp2m1_c, 7, r);
  const double m = r * q;
  const double sc = near_root ? kp_d_gelut_k[2] : kp_d_pow2_shifted(t);
  const double e = KP_FABSF(x) > 20.0f ? 0.0 : fma(sc, m, sc);
  const double xdu2 = xd * fma(kp_d_gelut_k[5], x2, kp_d_gelut_k[4]); /* 2 x du */
  const double e1 = 1.0 + e;
  const double h = near_root ? fma(kp_d_gelut_k[2], m, (xdu2 + kp_d_gelut_k[3]) + KP_D_GELUT_DELTA) : e1 + xdu2;
  const double num = x < 0.0f ? e * h : fma(xdu2, e, e1);
  const double rc = kp_d_rcp(e1);
  return (kp_d_res)((double)g * num * rc * rc);
}

#if KP_WIDE_F32
/* gelu(tanh) for a gated kernel, whose product with b wants act(a) unrounded: the float
 * quotient above holds 3 ulp, which the product would double. The same reduction carried on in
 * double: e = 2^n (1 + m), m = 2^r - 1 = r Q(r) as in the derivative, and x / (1 + e) or
 * x e / (1 + e) with kp_d_rcp (relative error about 2^-29; 19 FP64 operations). |x| clamped at 20
 * on the high word (e <= 2^-870, n normal); below -20 the result is x * 0 (-0, and NaN at -inf as
 * torch), beyond 20 the quotient is x. */
KP_FN double kp_d_gelu_tanh(float x) {
  const double xd = x;
  const int ha = KP_D_HI(xd) & 0x7fffffff;
  const double a = ha > 0x40340000 ? 20.0 : KP_D_FROM_HILO(ha, KP_D_LO(xd)); /* min(|x|, 20) */
  const double v = fma(KP_D_GELUT_C2KL, a * a, KP_D_GELUT_C2L);
  const double t = fma(-a, v, KP_D_SHIFT);
  const double n = t - KP_D_SHIFT;
  const double r = fma(-a, v, -n); /* -|x| v = n + r, |r| <= 1/2 */
  double q;
  KP_D_HORNER(q, kp_d_exp2m1_c, 7, r);
  const double sc = kp_d_pow2_shifted(t);
  const double e = fma(sc, r * q, sc);
  const double y = (x >= 0.0f ? xd : xd * e) * kp_d_rcp(1.0 + e);
  return x < -20.0f ? (double)(x * 0.0f) : y;
}
#endif

/* mish'(x) = t + x s sech^2(softplus x) = e h / d^2 with e = e^x, d = e^2 + 2e + 2 and
 * h = (e + 2)(e^2 + 2e + 2) + 4x (1 + e), which vanishes at X1 = -1.1924. With eps = e - E1
 * (E1 = e^X1) and t = x - X1, h = D1 + eps (A + eps (B + eps)) + 4t (1 + e) for every x: D1 is
 * 2^-52 and the other two terms have t's sign, so nothing cancels once eps is exact. Within 0.3
 * of X1, eps = E1 expm1(t) (t exact); elsewhere 2^n (1 + m) - E1, one fma over 2^n - E1. One
 * formula where a separate one near the root takes 8 FP64 operations more: 27 per element, on
 * the H200 93.7-95.9 % of copy against 85.2-87.0 (`kplay run --no-db --act mish --direction
 * backward --shape 4096x393216`). The kernel
 * takes h / 4 and 2 / d (the estimate's exponent raised by one). Beyond x = 40 the derivative is
 * 1 in double (g; NaN at +inf as torch's x s (1 - t^2)); -inf: NaN. */
#define KP_D_MISH_X1 -0x1.31432c0d12d84p+0
#define KP_D_MISH_E1 0x1.36c4202fc3ecdp-2
KP_D_TABLE kp_d_mish_k[3] = {0x1.663338c1d3548p-54, 0x1.f79bbdfa95d4fp-1, 0x1.3a44c608f4bc6p+0}; /* D1, A, B over 4 */
KP_FN kp_d_res kp_d_mish_grad(float g, float x) {
  const double xd = x;
  const double xc = x < 40.0f ? xd : 40.0; /* the tests on x in float: no DSETP on the FP64 pipe */
  double s;
  const double rg = kp_d_reduce(xc, &s);
  const double t = xd - KP_D_MISH_X1;
  const int near_root = x > (float)KP_D_MISH_X1 - 0.3f && x < (float)KP_D_MISH_X1 + 0.3f;
  const double m = kp_d_expm1_poly(near_root ? t : rg);
  const double sc = near_root ? KP_D_MISH_E1 : s;
  const int under = x < -708.0f;
  const double e = under ? 0.0 : fma(sc, m, sc);
  const double eps = under ? -KP_D_MISH_E1 : fma(sc, m, sc - KP_D_MISH_E1);
  const double hq = fma(t, 1.0 + e, fma(eps, fma(eps, fma(eps, 0.25, kp_d_mish_k[2]), kp_d_mish_k[1]), kp_d_mish_k[0]));
  const double q2 = kp_d_rcp_pow2(fma(e, e + 2.0, 2.0), 1); /* 2 / d */
  return x > 40.0f ? (kp_d_res)(g + g * (x - x)) : (kp_d_res)((double)g * e * hq * q2 * q2);
}

#endif /* KP_FAST_FP64 */
#endif /* KP_FP64_MATH_H */
