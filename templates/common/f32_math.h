/* Lean float32 activations: float arithmetic alone, at few instructions, within each
 * activation's documented bound (docs/accuracy.md), for float32 kernels on every device
 * (KP_F32_LEAN, set by codegen; the double routines of fp64_math.h cost FP64 operations and two
 * conversions per element, which at one wave on an H200 made kplay's float32 sigmoid, silu, tanh
 * 15-20 % slower than torch's float formula). A routine belongs here only where it takes fewer
 * issue slots than the routine it replaces: the double one, or the float-float one for a routine
 * taken only where FP64 is slow (docs/activations.md lists float forms measured and not kept).
 * Written only with +, -, *, fma, comparisons, selects, bit casts and one reciprocal estimate
 * (KP_RCP_APPROXF, always followed by an fma residual correction), so the host computes the same
 * bits: tools/numerics/f32_lean_check.cpp proves each function over all 2^32 inputs with this
 * very header, with the reciprocal correctly rounded and 1 ulp off either way
 * (rcp.approx.ftz.f32 is within 1 ulp).
 * The kernels must not contract a * b + c into fma (CUDA: -fmad=false; OpenCL: FP_CONTRACT OFF
 * below): the compensations rely on the roundings as written.
 *
 * The exponential: e^-a = 2^k (1 + t) for a >= 0, k = rint(-a log2 e) by the 1.5 2^23 shift,
 * r = -a - k ln2 by two fmas (the first exact), t = e^r - 1 = r + r^2 P(r), P of degree 4
 * (0.06 ulp of e^r on |r| <= ln2/2). Each of sigmoid, silu and tanh is one quotient: its
 * numerator rounded once (sigmoid and silu, at 2^64 scale, normal down to the subnormal results)
 * or exact (tanh), its denominator an exact float-float, one reciprocal estimate and one residual
 * correction; elu's expm1 is a float-float rounded once after alpha (no division); logsigmoid's
 * log1p(e) is an atanh series in v = e / (2 + e), that quotient formed the same way (its kernels,
 * and softplus' with beta = 1, take it on every device: logsigmoid.h, softplus.h). Proven
 * maxima over every float32 (docs/accuracy.md): sigmoid 1.48, silu 1.79, tanh 1.50, elu 0.76
 * (alpha 1.7: 0.87), logsigmoid and softplus (beta = 1) 1.27 ulp. */
#ifndef KP_F32_MATH_H
#define KP_F32_MATH_H
#ifdef __OPENCL_VERSION__
#pragma OPENCL FP_CONTRACT OFF /* CUDA: -fmad=false (the float32 kernels' precise_options) */
#endif

#define KP_F_SHIFT 0x1.8p+23f /* adding it rounds |v| < 2^22 to an integer in the low bits */

/* t = e^r - 1 for r = -a - k ln2, a in [0, 132.5]; returns the shifted k (KP_F_SHIFT + k). */
#define KP_F_P4 0.001375133404508233f
#define KP_F_P3 0.008368936367332935f
#define KP_F_P2 0.041669536381959915f
#define KP_F_P1 0.166665181517601f
#define KP_F_P0 0.49999988079071045f
KP_FN float kp_f_expm1_reduced(float a, float* t) {
  const float j = KP_FMAF(-a, 0x1.715476p+0f, KP_F_SHIFT);
  const float k = j - KP_F_SHIFT;
  float r = KP_FMAF(k, -0x1.62e43p-1f, -a); /* exact: k ln2_hi has 29 bits, the difference < ln2 */
  r = KP_FMAF(k, 0x1.05c610p-29f, r);     /* ln2 = 0x1.62e43p-1 - 0x1.05c610p-29 */
  float p = KP_F_P4;
  p = KP_FMAF(p, r, KP_F_P3);
  p = KP_FMAF(p, r, KP_F_P2);
  p = KP_FMAF(p, r, KP_F_P1);
  p = KP_FMAF(p, r, KP_F_P0);
  *t = KP_FMAF(r * r, p, r);
  return j;
}

/* The same for e^-2a, a in [0, 9.1], without forming 2a: every value is the one above halved
 * exactly (r/2, the constants scaled by powers of two, so each rounding is the same), and *th is
 * t/2, bit for bit; the caller doubles the scale instead (2^(k+1): free in kp_f_pow2). */
KP_FN float kp_f_expm1_reduced_2a(float a, float* th) {
  const float j = KP_FMAF(-a, 0x1.715476p+1f, KP_F_SHIFT);
  const float k = j - KP_F_SHIFT;
  float r = KP_FMAF(k, -0x1.62e43p-2f, -a);
  r = KP_FMAF(k, 0x1.05c610p-30f, r);
  float p = 32.0f * KP_F_P4;
  p = KP_FMAF(p, r, 16.0f * KP_F_P3);
  p = KP_FMAF(p, r, 8.0f * KP_F_P2);
  p = KP_FMAF(p, r, 4.0f * KP_F_P1);
  p = KP_FMAF(p, r, 2.0f * KP_F_P0);
  *th = KP_FMAF(r * r, p, r);
  return j;
}

/* 2^(k + bias) from the shifted k: (bits of j) << 23 is k << 23, the shift's bits falling off. */
KP_FN float kp_f_pow2(float j, int bias) { return KP_AS_FLOAT((int)((unsigned)KP_AS_INT(j) << 23) + ((bias + 127) << 23)); }

/* m sigmoid(x) = m / (1 + e^-x), m = x (silu) or 1 (sigmoid), from e = e^-|x|: x >= 0 gives
 * m 2^64 / (2^64 (1 + e)), x < 0 gives m e 2^64 / (2^64 (1 + e)). At that scale the numerator is
 * normal down to the subnormal results and the quotient needs no scaling back, so a subnormal
 * result is rounded once, by the last fma. The numerator is rounded once, 2^64 (1 + e) = d + dl
 * exactly, and the quotient corrected once against d + dl. Keeping the numerator's rounding
 * error as well (two fmas and an add more) measures 0.94 ulp at most on a sample; dropping dl
 * instead of it, 1.51; dropping both, 2.005. |x| is clamped at 132.5 by a select that lets NaN
 * through: there k = -191, so the scale 2^(k+64) is +0 (exponent field k + 191 = 0), and so is
 * the numerator x e 2^64 of every x below -132.5 (NaN at -inf, as torch), while at -110 it is
 * already below 2^-151. */
KP_FN float kp_f_mul_sigmoid(float m, float x) {
  const float ax = KP_FABSF(x);
  float t;
  const float j = kp_f_expm1_reduced(ax > 132.5f ? 132.5f : ax, &t);
  const float s = kp_f_pow2(j, 64); /* 2^(k+64), or +0 at k = -191 */
  const float ms = m * s;            /* exact: a power of two or zero */
  const float es = KP_FMAF(s, t, s); /* e 2^64 */
  const float d = 0x1p64f + es;
  const float dl = (0x1p64f - d) + es;
  const float nh = x < 0.0f ? KP_FMAF(ms, t, ms) : m * 0x1p64f;
  const float rc = KP_RCP_APPROXF(d); /* d in [2^64, 2^65]: 1 / d is normal */
  const float q0 = nh * rc;
  const float res = KP_FMAF(-q0, dl, KP_FMAF(-q0, d, nh));
  return KP_FMAF(res, rc, q0);
}

/* sigmoid(x); NaN in, NaN out (through e). */
KP_FN float kp_f_sigmoid(float x) { return kp_f_mul_sigmoid(1.0f, x); }

/* silu(x) = x sigmoid(x); q has the sign of x but at -0, where the residual gives +0: the sign
 * bit is or-ed in. -inf gives NaN (-inf * 0), as torch's x / (1 + exp(-x)); beyond 110 the result
 * is x, selected (x 2^64 would overflow). */
KP_FN float kp_f_silu(float x) {
  const float q = kp_f_mul_sigmoid(x, x);
  const float y = KP_AS_FLOAT(KP_AS_INT(q) | (KP_AS_INT(x) & (int)0x80000000));
  return x > 110.0f ? x : y;
}

/* tanh(x) = sign(x) (1 - e) / (1 + e), e = e^-2|x| = s (1 + t): 1 - e = (1 - s) - s t and
 * 1 + e = (1 + s) + s t, each an exact float-float from one fma and its residual (1 -+ s is exact
 * for k >= -23, and the residual's difference by Sterbenz); k = 0 gives -t / (2 + t), t with
 * relative precision, so small |x| keep theirs. |x| clamped at 9.1, where tanh rounds to 1. The
 * quotient is +0 or positive (+0 at x = +-0), so the sign of x is xor-ed in. */
KP_FN float kp_f_tanh(float x) {
  const float ax = KP_FABSF(x);
  float th;
  const float j = kp_f_expm1_reduced_2a(ax > 9.1f ? 9.1f : ax, &th);
  const float s2 = kp_f_pow2(j, 1); /* 2 s: s2 th = s t exactly */
  const float s = s2 * 0.5f;
  const float om = 1.0f - s, op = 1.0f + s;
  const float nh = KP_FMAF(-s2, th, om);
  const float nl = KP_FMAF(-s2, th, om - nh);
  const float dh = KP_FMAF(s2, th, op);
  const float dl = KP_FMAF(s2, th, op - dh);
  const float rc = KP_RCP_APPROXF(dh);
  const float q0 = nh * rc;
  const float res = KP_FMAF(-q0, dl, KP_FMAF(-q0, dh, nh) + nl);
  const float y = KP_FMAF(res, rc, q0);
  return KP_AS_FLOAT(KP_AS_INT(y) ^ (KP_AS_INT(x) & (int)0x80000000)); /* odd; NaN stays NaN */
}

/* e^-a - 1 for a in [0, 16.9] as the float-float hi + *lo, from e^-a = s e^r, s = 2^k <= 1,
 * r = -a - k ln2 = rh + rl (rh exact by the first fma, rl = k ln2's low part) and
 * e^r - 1 = r + r^2 P(r) (kp_f_expm1_reduced's polynomial): (s - 1) + s rh is split exactly into
 * hi + lo (s - 1 is exact for k >= -24, a <= 16.98; s rh is rh scaled; their difference sm1 - hi
 * is exact by Sterbenz, |s rh| <= 0.35 s keeping hi within a factor 2 of s - 1 for k <= -1, and
 * k = 0 gives hi = rh = -a, lo = 0), then s (rl + r^2 P) joins lo. Rounding t = e^r - 1 to one
 * float instead, or dropping rl, costs up to half an ulp of the result each: alpha t then measured
 * 1.53 ulp for alpha = 1.7. One rounding of alpha (hi + lo) by the caller makes elu's forward
 * (docs/accuracy.md). Beyond 16.9 the caller selects: e^-a is below 2^-25 past 25 ln 2 =
 * 17.33, where the result rounds to -1, and between the two the value at 16.9 rounds to the same
 * float, -1 + 2^-24. */
KP_FN float kp_f_expm1_neg(float a, float* lo) {
  const float ac = a > 16.9f ? 16.9f : a;
  const float j = KP_FMAF(-ac, 0x1.715476p+0f, KP_F_SHIFT);
  const float k = j - KP_F_SHIFT;
  const float rh = KP_FMAF(k, -0x1.62e43p-1f, -ac); /* exact, as in kp_f_expm1_reduced */
  const float rl = k * 0x1.05c610p-29f;
  const float r = rh + rl;
  float p = KP_F_P4;
  p = KP_FMAF(p, r, KP_F_P3);
  p = KP_FMAF(p, r, KP_F_P2);
  p = KP_FMAF(p, r, KP_F_P1);
  /* r^2 P(r) = r^2 P0 + r^2 (r p): r^2 exact as rr + rrl, P0 applied by fmas, so that only the
   * smaller term r p (|r p| <= 0.06 against P0 = 0.5) carries P's roundings (with r^2 and P
   * rounded, alpha 1.7 measured 1.008 ulp) */
  const float rr = r * r, rrl = KP_FMAF(r, r, -rr);
  const float q = KP_FMAF(rr, KP_F_P0, KP_FMAF(rr, r * p, KP_FMAF(rrl, KP_F_P0, rl)));
  const float s = kp_f_pow2(j, 0);
  const float sm1 = s - 1.0f;
  const float hi = KP_FMAF(s, rh, sm1);
  *lo = KP_FMAF(s, q, KP_FMAF(s, rh, sm1 - hi));
  return hi;
}

/* alpha expm1(x) for x <= 0, rounded once; -0 gives alpha * -0 (expm1(-0) = -0), below -17.33
 * the result is -alpha (alpha (-1 + e^x) with e^x < 2^-25: the sum rounds to -1 first, as the
 * double path gives). */
KP_FN float kp_f_mul_expm1_neg(float alpha, float x) {
  float lo;
  const float hi = kp_f_expm1_neg(-x, &lo);
  const float y = KP_FMAF(alpha, hi, alpha * lo);
  return x == 0.0f ? alpha * x : x < -17.3287f ? -alpha : y;
}

/* elu(alpha) forward; NaN stays NaN (neither side of the select takes it). */
KP_FN float kp_f_elu(float alpha, float x) { return x <= 0.0f ? kp_f_mul_expm1_neg(alpha, x) : x; }

/* 2^64 log1p(e), e = e^-a for a >= 0 (or NaN), rounded once: logsigmoid's and softplus' common
 * part. e = 2^k (1 + t) is kept at 2^64 scale as the exact float-float eh + el, so that it keeps its
 * bits where e is subnormal (a > 87.3); 2 + e is the exact float-float dh + dl.
 * log1p(e) = 2 atanh(v) = 2 v (1 + w Q(w)), v = e / (2 + e) <= 1/3, w = v^2 <= 1/9, Q of degree 3
 * (relative error of 1 + w Q below 5.2e-9: tools/numerics/fit_poly.py logsigmoid). v = q0 + vl at
 * 2^64 scale from one reciprocal estimate and one residual against the float-float quotient, so
 * that L = 2 q0 + (2 vl + 2 v w Q) is rounded once (w from v = q0 + vl rounded: from q0 alone, the
 * estimate's error through w Q cost 0.37 ulp). a is clamped at 132.5 by a select that lets NaN
 * through: there the scale 2^(k+64) is +0, and so is L. */
#define KP_F_LQ0 0.6666641235351562f /* 2 Q: the 2 of 2 v w Q folded in */
#define KP_F_LQ1 0.4002161920070648f
#define KP_F_LQ2 0.280008465051651f
#define KP_F_LQ3 0.28015124797821045f
KP_FN float kp_f_log1p_exp_neg64(float a) {
  float t;
  const float j = kp_f_expm1_reduced(a > 132.5f ? 132.5f : a, &t);
  const float s = kp_f_pow2(j, 64);         /* 2^(k+64), or +0 at k = -191 */
  const float eh = KP_FMAF(s, t, s);        /* e 2^64, rounded */
  const float el = KP_FMAF(s, t, s - eh);   /* its error, exact: s t is exact and s - eh by Sterbenz */
  const float er = eh * 0x1p-64f;           /* e, exact where it matters (beside 2) */
  const float dh = 2.0f + er;
  const float dl = KP_FMAF(el, 0x1p-64f, (2.0f - dh) + er); /* 2 - dh + er exact (Fast2Sum) */
  const float rc = KP_RCP_APPROXF(dh);      /* dh in [2, 3] */
  const float q0 = eh * rc;
  const float res = KP_FMAF(-q0, dl, KP_FMAF(-q0, dh, eh) + el);
  const float vl = res * rc;
  const float v = q0 + vl;                  /* for w Q alone (q0 is off by the estimate's error) */
  const float vr = v * 0x1p-64f;            /* where it is not exact, w Q is below 2^-120 */
  const float w = vr * vr;
  float q = KP_F_LQ3;
  q = KP_FMAF(q, w, KP_F_LQ2);
  q = KP_FMAF(q, w, KP_F_LQ1);
  q = KP_FMAF(q, w, KP_F_LQ0);
  return KP_FMAF(2.0f, q0, KP_FMAF(2.0f, vl, (v * w) * q));
}

/* logsigmoid(x) = min(x, 0) - log1p(e^-|x|), rounded by one fma: x >= 132.5 (and +inf) gives
 * 0 - 0 = +0, as torch's min(x, 0) - log1p(exp(-x)); -inf gives -inf; NaN stays NaN. */
KP_FN float kp_f_logsigmoid(float x) {
  return KP_FMAF(kp_f_log1p_exp_neg64(KP_FABSF(x)), -0x1p-64f, x < 0.0f ? x : 0.0f);
}

/* softplus(x) for beta = 1 (torch's default) = max(x, 0) + log1p(e^-|x|), rounded by one fma
 * (+0 below -132.5 and at -inf, as torch's log1p(exp(x))); x itself above the threshold, as torch. */
KP_FN float kp_f_softplus1(float x, float threshold) {
  const float y = KP_FMAF(kp_f_log1p_exp_neg64(KP_FABSF(x)), 0x1p-64f, x > 0.0f ? x : 0.0f);
  return x > threshold ? x : y;
}

/* v / 6 to the nearest float in four operations, where div.rn.f32 takes about ten and a branch
 * (hardsigmoid and hardswish divide by 6, forward and backward): q = v RN(1/6), the remainder
 * 6q - v exact by an fma, one correction q - r RN(1/6). Within 0.5 ulp for every float
 * (f32_lean_check div6): the correctly rounded quotient itself but for exact ties below 2^-125
 * (subnormal quotients), where it may take the other neighbour, also 0.5 ulp away. An infinite
 * v's remainder is NaN, which the min makes FLT_MAX: the correction then leaves q's infinity. The
 * remainder is 6q - v, not v - 6q, so that a zero v's is -0 and the correction keeps v's sign
 * (q - (-0) RN(1/6) is -0 for v = -0, +0 for +0). NaN stays NaN. Every result equals the six-
 * operation form's (a select for the infinite v, v's sign or-ed in), which this replaced: 8.0
 * instructions an element for hardsigmoid's forward instead of 10.5 (tools/sass_count.sh). */
KP_FN float kp_f_div6(float v) {
  const float c = 0x1.555556p-3f; /* RN(1/6) */
  const float q = v * c;
  const float r = KP_FMINF(KP_FMAF(q, 6.0f, -v), 0x1.fffffep+127f);
  return KP_FMAF(-r, c, q);
}

#endif /* KP_F32_MATH_H */
