/* Precise float32 building blocks, shared by every backend and by the host harness
 * (tools/numerics). Written only with +, -, *, fma, comparisons, selects and bit casts, so every
 * backend (and the host, compiled with -ffp-contract=off) performs the same IEEE operations and
 * gets the same bits; no float64 and no library transcendental is used, except gelu's one 2^g
 * (KP_EX2_APPROXF, hardware on a GPU), whose last bits differ between backends.
 *
 * The prelude must define:
 *   KP_FN              function qualifiers
 *   KP_FMAF(a, b, c)   fused multiply-add, one rounding
 *   KP_FABSF(x)        |x|
 *   KP_AS_INT(f)       float bits as int      (CUDA __float_as_int, OpenCL as_int)
 *   KP_AS_FLOAT(i)     int bits as float      (CUDA __int_as_float, OpenCL as_float)
 *   KP_RCP_APPROXF(x)  1/x to within ~2 ulp, for normal x in [2^-126, 2^126] (CUDA:
 *                      asm rcp.approx.ftz.f32 or __frcp_rn; OpenCL: 1.0f / x). Every use is
 *                      followed by an fma residual correction, so its last bit does not matter.
 *   KP_EX2_APPROXF(x)  2^x for |x| <= 1/2 to within ~1 ulp (CUDA: ex2.approx.ftz.f32, MUFU.EX2;
 *                      OpenCL: exp2). Used by kp_precise_gelu alone, whose bound includes it.
 *
 * Float-float values: hi + lo with |lo| <= ~ulp(hi), an unevaluated sum carrying ~48 bits.
 * "rel 2^-N" below: max relative error of hi + lo, measured by tools/numerics (its README has
 * the sweeps; every kp_precise_* function is within 1.2 ulp there, most within 0.8, except
 * kp_precise_gelu, float alone: 3.05 on the host, 4.33 on an H200).
 * Needs IEEE compilation: not --use_fast_math / -cl-fast-relaxed-math (reassociation destroys
 * the float-float error terms). fma contraction is harmless. Instruction counts (sm_90 SASS per
 * element): tools/sass_count.sh --fast-fp64 0. */
#ifndef KP_PRECISE_MATH_H
#define KP_PRECISE_MATH_H

/* ln 2 = KP_PM_LN2_1 + KP_PM_LN2_2 + KP_PM_LN2_3; the first two have 16 significant bits, so
 * k * KP_PM_LN2_1 and k * KP_PM_LN2_2 are exact for |k| < 256. */
#define KP_PM_LN2_1 0x1.62e4p-1f
#define KP_PM_LN2_2 0x1.7f7ep-20f
#define KP_PM_LN2_3 -0x1.c610cap-37f
#define KP_PM_LOG2E 0x1.715476p+0f
#define KP_PM_SHIFT 0x1.8p+23f /* adding it rounds |v| < 2^22 to an integer */

/* Two-term sums. kp_fast_two_sum needs |a| >= |b| (or a == 0); both return a + b rounded and
 * store the exact rounding error in *err. */
KP_FN float kp_fast_two_sum(float a, float b, float* err) {
  float s = a + b;
  *err = (a - s) + b;
  return s;
}
KP_FN float kp_two_sum(float a, float b, float* err) {
  float s = a + b;
  float bb = s - a;
  *err = (a - (s - bb)) + (b - bb);
  return s;
}

/* expm1 of the reduced argument: x = k ln2 + r, |r| <= ln2/2 + tiny, r = rh + rl. Returns
 * E = e^r - 1 as a normalised float-float (rel 2^-29) and stores k (an integer-valued float, as
 * the bits of KP_PM_SHIFT + k) in *j. x must be finite with |x| < 200, or NaN. */
KP_FN float kp_pm_expm1_reduced(float xh, float xl, int ff_arg, float* e_lo, float* j) {
  float jj = KP_FMAF(xh, KP_PM_LOG2E, KP_PM_SHIFT);
  float k = jj - KP_PM_SHIFT;
  float r1 = KP_FMAF(-k, KP_PM_LN2_1, xh); /* exact: k*LN2_1 exact, Sterbenz-like cancellation */
  float t = k * KP_PM_LN2_2;               /* exact */
  float rh0 = r1 - t;
  float rl = (r1 - rh0) - t; /* |r1| >= |t| except where both are tiny */
  rl = KP_FMAF(-k, KP_PM_LN2_3, rl);
  rl = ff_arg ? rl + xl : rl;
  /* A float-float argument can leave |rl| ~ ulp(xh): renormalise, so that rl e^rh ~ rl (1 + rh + s).
   * For a float argument |rl| < 2^-25.9 already (ff_arg is a constant: the test folds away). */
  float rh = ff_arg ? kp_fast_two_sum(rh0, rl, &rl) : rh0;
  /* e^r - 1 = r + r^2/2 + (r^3/2) (1/3 + r P(r)), P fitted on |r| <= ln2/2 (fit_poly.py); the
   * r^2/2 and r^3/6 terms are carried exactly enough that only the r^4 tail rounds as a float. */
  float h = 0.5f * rh;
  float s = rh * h;
  float se = KP_FMAF(rh, h, -s); /* r^2/2 = s + se exactly */
  float sr = s * rh;
  float srl = KP_FMAF(se, rh, KP_FMAF(s, rh, -sr)); /* r^3/2 = sr + srl */
  float p = 4.96362773e-05f;
  p = KP_FMAF(p, rh, 0.000397653785f);
  p = KP_FMAF(p, rh, 0.00277778134f);
  p = KP_FMAF(p, rh, 0.0166666415f);
  p = KP_FMAF(p, rh, 0.0833333358f);
  float el;
  float eh = kp_fast_two_sum(rh, s, &el); /* |s| <= |rh| / 5 */
  el = el + (se + KP_FMAF(rl, eh, rl)); /* rl e^rh, first order in rl */
  el = KP_FMAF(srl, 0x1.555556p-2f, el);
  el = KP_FMAF(sr, -0x1.555556p-27f, el); /* 1/3 = 0x1.555556p-2 - 0x1.555556p-27 */
  el = KP_FMAF(sr * rh, p, el);
  el = KP_FMAF(sr, 0x1.555556p-2f, el);
  *j = jj;
  return kp_fast_two_sum(eh, el, e_lo);
}

/* 2^(k + bias) as two factors (each a normal float) so that hi * s1 * s2 rounds once, also into
 * the subnormal range. j is KP_PM_SHIFT + k with |k| < 250. */
KP_FN void kp_pm_scale_factors(float j, int bias, float* s1, float* s2) {
  int k = KP_AS_INT(j) - KP_AS_INT(KP_PM_SHIFT) + bias;
  int k1 = k >> 1;
  /* unsigned shifts: NaN inputs give garbage k here, and NaN still propagates through hi */
  *s1 = KP_AS_FLOAT((int)((unsigned)(k1 + 127) << 23));
  *s2 = KP_AS_FLOAT((int)((unsigned)(k - k1 + 127) << 23));
}

/* e^(xh + xl) * 2^bias as hi + *lo; ff_arg (a constant) = 0 ignores xl. bias (0..64, meant as a constant) keeps the tails of
 * x * e^x-like products normal: the caller multiplies its final result by 2^-bias. */
KP_FN float kp_pm_exp_scaled(float xh, float xl, int ff_arg, int bias, float* lo) {
  float xc = xh > 90.0f ? 90.0f : xh;
  xc = xc < -160.0f ? -160.0f : xc; /* e^-160 2^64 is still below 2^-150 */
  xl = ff_arg && xc != xh ? 0.0f : xl; /* a clamped (or infinite) argument drops its low part */
  float el, j;
  float eh = kp_pm_expm1_reduced(xc, xl, ff_arg, &el, &j);
  float fl;
  float fh = kp_fast_two_sum(1.0f, eh, &fl);
  fl = fl + el;
  float s1, s2;
  kp_pm_scale_factors(j, bias, &s1, &s2);
  float hi = (fh * s1) * s2;
  *lo = hi > 0x1.fffffep+127f ? 0.0f : (fl * s1) * s2;
  return hi;
}

/* e^(xh + xl) as hi + *lo, rel 2^-30.7 while the result is above 2^-100; smaller results are
 * hi alone, rounded once. Overflow: hi = inf, lo = 0. NaN in, NaN out. xl must be <= ~ulp(xh)
 * (a float-float); pass 0 for a plain float. */
KP_FN float kp_exp_ff2(float xh, float xl, float* lo) { return kp_pm_exp_scaled(xh, xl, 1, 0, lo); }

KP_FN float kp_exp_ff(float x, float* lo) { return kp_pm_exp_scaled(x, 0.0f, 0, 0, lo); }

/* expm1(xh + xl) as hi + *lo, rel 2^-29.1 for all inputs below overflow (x > 88.72: hi = inf,
 * lo = 0); -inf gives -1. NaN in, NaN out.
 * Usage (SELU, ELU): with the constant c = c_hi + c_lo (c_hi = (float)c, c_lo = (float)(c - c_hi);
 * SELU: c_hi = 0x1.c212ccp+0f, c_lo = 0x1.903c0cp-26f, lambda = 0x1.0cfabep+0f),
 *   if (x >= 0.0f) return lambda * x;          // >=: selu(-0) = -0 as in torch
 *   float lo, hi = kp_expm1_ff(x, &lo);
 *   return KP_FMAF(c_hi, hi, KP_FMAF(c_hi, lo, c_lo * hi));
 * measured over all 2^32 inputs: max 0.72 ulp (subnormal results), 0.086% of inputs not
 * correctly rounded, none over 1 ulp.
 * CELU, alpha * expm1(x / alpha) with inv = 1/alpha = inv_hi + inv_lo (two floats):
 *   float q = x * inv_hi, ql = KP_FMAF(x, inv_hi, -q) + x * inv_lo;
 *   float lo, hi = kp_expm1_ff2(q, ql, &lo);
 *   return KP_FMAF(alpha, hi, alpha * lo);     // max 0.51 ulp normal, 1.0 ulp subnormal */
KP_FN float kp_pm_expm1_ff(float xh, float xl, int ff_arg, float* lo) {
  float xc = xh > 90.0f ? 90.0f : xh;
  xc = xc < -110.0f ? -110.0f : xc;
  xl = ff_arg && xc != xh ? 0.0f : xl; /* a clamped (or infinite) argument drops its low part */
  float el, j;
  float eh = kp_pm_expm1_reduced(xc, xl, ff_arg, &el, &j);
  /* k != 0: 2^k (1 + E) - 1, with 1 + E = fh + fl. */
  float fl;
  float fh = kp_fast_two_sum(1.0f, eh, &fl);
  fl = fl + el;
  float s1, s2;
  kp_pm_scale_factors(j, 0, &s1, &s2);
  float sf = (fh * s1) * s2; /* exact: 2^k in [2^-160, 2^130], never subnormal where it matters */
  float err;
  float mh = kp_two_sum(sf, -1.0f, &err);
  float ml = KP_FMAF(fl * s1, s2, err);
  int k_is_zero = j == KP_PM_SHIFT;
  *lo = k_is_zero ? el : (mh > 0x1.fffffep+127f ? 0.0f : ml);
  /* e^r - 1 sums +0 and -0 for x = -0: keep the sign of zero */
  return k_is_zero ? (xh == 0.0f ? xh : eh) : mh;
}

KP_FN float kp_expm1_ff2(float xh, float xl, float* lo) { return kp_pm_expm1_ff(xh, xl, 1, lo); }
KP_FN float kp_expm1_ff(float x, float* lo) { return kp_pm_expm1_ff(x, 0.0f, 0, lo); }


/* ---- Shared cores of the activations ------------------------------------------------------- */

/* a * sigmoid(zh + zl) = a / (1 + e^-z), about 0.5 ulp + 2^-28 relative; special values as the
 * formula a / (1 + exp(-z)) gives them (a = -inf, z = -inf: NaN, like torch's silu). For z < 0 the
 * numerator a * e^z is formed at 2^64 scale so that it stays normal down to the subnormal result. */
KP_FN float kp_pm_mul_sigmoid(float a, float zh, float zl, int ff_arg) {
  int neg = zh < 0.0f;
  float ml;
  float mh = kp_pm_exp_scaled(neg ? zh : -zh, neg ? zl : -zl, ff_arg, neg ? 64 : 0, &ml);
  float down = neg ? 0x1p-64f : 1.0f;
  float dl;
  float dh = kp_fast_two_sum(1.0f, mh * down, &dl); /* 1 + e^-|z| */
  dl = KP_FMAF(ml, down, dl);
  float nh = neg ? mh : 1.0f; /* numerator a * (e^z or 1), scaled */
  float ph = a * nh;
  float pl = neg ? KP_FMAF(a, nh, -ph) + a * ml : 0.0f;
  float r = KP_RCP_APPROXF(dh);
  float y0 = ph * r;
  float rho = KP_FMAF(-dh, y0, ph) + KP_FMAF(-dl, y0, pl);
  float y = KP_FMAF(rho, r, y0) * down;
  /* zeros keep their sign, infinities (a = +-inf) pass through */
  return (y0 == 0.0f || KP_FABSF(y0) > 0x1.fffffep+127f) ? y0 * down : y;
}

/* kp_pm_mul_sigmoid for any a: it forms a * 2^64 inside, so a huge a (an incoming gradient near
 * FLT_MAX) is scaled by a power of two into [2^57, 2^58) and back, exactly. One rounding still:
 * multiplying a by a separately rounded sigmoid lost bits where that sigmoid is subnormal and
 * the product is not (tanh backward: 4.75 ulp at |x| = 44.5 with g = 3.4e38). */
KP_FN float kp_pm_mul_sigmoid_wide(float a, float zh, float zl, int ff_arg) {
  if (KP_FABSF(a) < 0x1p60f) return kp_pm_mul_sigmoid(a, zh, zl, ff_arg);
  const int e = (KP_AS_INT(a) >> 23) & 0xff; /* 187..254 (255: inf, NaN pass through) */
  const float down = KP_AS_FLOAT((311 - e) << 23);
  const float up = KP_AS_FLOAT((e - 57) << 23);
  return kp_pm_mul_sigmoid(a * down, zh, zl, ff_arg) * up;
}

/* tanh(x) as hi + *lo (rel ~2^-27): tanh(|x|) = -E / (2 + E) with E = expm1(-2|x|) in (-1, 0],
 * so the denominator never cancels. Zeros: hi is -0 for both; callers handle tiny |x|. */
KP_FN float kp_pm_tanh_ff(float x, float* lo) {
  float el;
  float eh = kp_expm1_ff(-2.0f * KP_FABSF(x), &el);
  float dl;
  float dh = kp_fast_two_sum(2.0f, eh, &dl);
  dl += el;
  float r = KP_RCP_APPROXF(dh);
  float y0 = eh * r;
  float rho = KP_FMAF(-dh, y0, eh) + KP_FMAF(-dl, y0, el);
  float y1 = rho * r;
  int neg = x < 0.0f;
  *lo = neg ? y1 : -y1;
  return neg ? y0 : -y0;
}

/* log1p(e^-|z|) * 2^bias as hi + *lo (rel ~2^-25), z = zh + zl; bias as for kp_pm_exp_scaled.
 * log1p(t) = 2 atanh(s) = 2 (s + s^3 Q(s^2)) with s = t / (2 + t) in [0, 1/3]. */
KP_FN float kp_pm_log1p_exp_neg_abs(float zh, float zl, int ff_arg, int bias, float* lo) {
  int pos = zh > 0.0f;
  float ml;
  float mh = kp_pm_exp_scaled(pos ? -zh : zh, pos ? -zl : zl, ff_arg, bias, &ml); /* t 2^bias */
  float down = KP_AS_FLOAT((127 - bias) << 23);
  float th = mh * down;
  float dl;
  float dh = kp_fast_two_sum(2.0f, th, &dl);
  dl = KP_FMAF(ml, down, dl);
  float r = KP_RCP_APPROXF(dh);
  float sh = mh * r; /* s 2^bias */
  float sl = (KP_FMAF(-dh, sh, mh) + KP_FMAF(-dl, sh, ml)) * r;
  float su = (sh + sl) * down; /* s, unscaled; corrected, so r's last bits do not matter */
  float w = su * su;
  float q = 0.116094232f;
  q = KP_FMAF(q, w, 0.108538941f);
  q = KP_FMAF(q, w, 0.142961368f);
  q = KP_FMAF(q, w, 0.199998543f);
  q = KP_FMAF(q, w, 0.333333343f);
  *lo = 2.0f * KP_FMAF(sh * w, q, sl);
  return 2.0f * sh;
}

/* ---- Precise float32 activations (forward) -------------------------------------------------- */

/* sigmoid(x) = 1 / (1 + e^-x). */
KP_FN float kp_precise_sigmoid(float x) { return kp_pm_mul_sigmoid(1.0f, x, 0.0f, 0); }

/* silu(x) = x sigmoid(x); silu(-inf) = NaN as in torch (x / (1 + exp(-x))). */
KP_FN float kp_precise_silu(float x) { return kp_pm_mul_sigmoid(x, x, 0.0f, 0); }

/* tanh(x). */
KP_FN float kp_precise_tanh(float x) {
  float lo;
  float hi = kp_pm_tanh_ff(x, &lo);
  return KP_FABSF(x) < 0x1p-12f ? x : hi + lo; /* tanh x = x (1 - x^2/3): x there, zeros too */
}

/* tanhshrink(x) = x - tanh(x): (x - tanh x) / x^3 as a polynomial in x^2 for |x| < 0.5, where
 * the subtraction would cancel; the float-float tanh elsewhere. */
KP_FN float kp_precise_tanhshrink(float x) {
  float w = x * x;
  float wl = KP_FMAF(x, x, -w);
  float c = x * w; /* x^3 = c + cl */
  float cl = KP_FMAF(x, w, -c) + x * wl;
  float p = 0.00103370706f;
  p = KP_FMAF(p, w, -0.00345658045f);
  p = KP_FMAF(p, w, 0.00884084497f);
  p = KP_FMAF(p, w, -0.0218675602f);
  p = KP_FMAF(p, w, 0.0539681725f);
  p = KP_FMAF(p, w, -0.133333325f);
  /* x^3 (1/3 + w p), the leading term rounded once: 1/3 = 0x1.555556p-2f - 0x1.555556p-27f */
  float small = KP_FMAF(c, 0x1.555556p-2f, KP_FMAF(c, w * p, KP_FMAF(c, -0x1.555556p-27f, cl * 0x1.555556p-2f)));
  float lo;
  float hi = kp_pm_tanh_ff(x, &lo);
  float big = (x - hi) - lo;
  small = x == 0.0f ? 0.0f : small; /* tanhshrink(-0) = -0 - -0 = +0 as in torch */
  return KP_FABSF(x) < 0.5f ? small : big;
}

/* softplus(x) with torch's beta and threshold (compile-time constants in a snippet):
 * x * beta > threshold ? x : log1p(exp(x * beta)) / beta, with x * beta kept as a float-float. */
KP_FN float kp_precise_softplus(float x, float beta, float threshold) {
  float zh = x * beta;
  float zl = KP_FMAF(x, beta, -zh);
  int far = zh < -200.0f; /* also -inf, whose zl is NaN; log1p(e^-200) / beta < 2^-200 */
  zh = far ? -200.0f : zh;
  zl = far ? 0.0f : zl;
  int pos = zh > 0.0f;
  int b = pos ? 0 : 64; /* z < 0: log1p(t) ~ t, formed at 2^64 scale, rounded once at the end */
  float ll;
  float lh = kp_pm_log1p_exp_neg_abs(zh, zl, beta != 1.0f, b, &ll);
  /* max(z, 0) + log1p(e^-|z|) */
  float e;
  float sh = kp_two_sum(pos ? zh : 0.0f, lh, &e);
  float sl = e + ((pos ? zl : 0.0f) + ll);
  float y = sh + sl;
  if (beta != 1.0f) { /* folded away for beta = 1 */
    float ib = 1.0f / beta;
    float y0 = sh * ib;
    float rho = KP_FMAF(-y0, beta, sh) + sl;
    y = KP_FMAF(rho, ib, y0);
  }
  y = y * (pos ? 1.0f : 0x1p-64f);
  return x * beta > threshold ? x : y; /* torch decides on the float product */
}

/* logsigmoid(x) = min(x, 0) - log1p(e^-|x|). */
KP_FN float kp_precise_logsigmoid(float x) {
  int pos = x > 0.0f;
  float ll; /* log1p(e^-|x|), at 2^64 scale for x > 0 where the result is about -e^-x */
  float lh = kp_pm_log1p_exp_neg_abs(x, 0.0f, 0, pos ? 64 : 0, &ll);
  float e;
  float yh = kp_two_sum(pos ? 0.0f : x, -lh, &e);
  float y = (yh + (e - ll)) * (pos ? 0x1p-64f : 1.0f);
  /* +inf: +0 as torch's 0 - log1p(exp(-inf)); -inf: -inf */
  return KP_FABSF(x) > 0x1.fffffep+127f ? (pos ? 0.0f : x) : y;
}

/* mish(x) = x tanh(softplus(x)) = x n / (n + 2) with n = t (t + 2), t = e^x; scaled by 2^64 for
 * x < 0 so that x e^x stays normal. mish(-inf) = NaN as in torch. */
KP_FN float kp_precise_mish(float x) {
  float xc = x > 20.0f ? 20.0f : x; /* tanh(softplus(x)) rounds to 1 long before */
  int neg = xc < 0.0f;
  float ml;
  float mh = kp_pm_exp_scaled(xc, 0.0f, 0, neg ? 64 : 0, &ml); /* t 2^b */
  float down = neg ? 0x1p-64f : 1.0f;
  float al;
  float ah = kp_two_sum(mh * down, 2.0f, &al); /* t + 2 */
  al = KP_FMAF(ml, down, al);
  float nh = mh * ah; /* n 2^b */
  float nl = KP_FMAF(mh, ah, -nh) + KP_FMAF(mh, al, ml * ah);
  float dl;
  float dh = kp_two_sum(nh * down, 2.0f, &dl); /* n + 2 */
  dl = KP_FMAF(nl, down, dl);
  float r = KP_RCP_APPROXF(dh);
  float w0 = nh * r;
  float w1 = (KP_FMAF(-dh, w0, nh) + KP_FMAF(-dl, w0, nl)) * r;
  float y = KP_FMAF(x, w0, x * w1) * down;
  return (x != 0.0f && x <= 20.0f) ? y : x; /* zeros keep their sign; +inf, NaN pass */
}

/* gelu, tanh approximation: 0.5 x (1 + tanh(u)) = x sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3)
 * with 2u as a float-float (its rounding would be amplified |2u| times in the tail). */
#define KP_PM_GELU_C_HI 0x1.988454p+0f  /* 2 sqrt(2/pi) */
#define KP_PM_GELU_C_LO -0x1.857936p-25f
#define KP_PM_GELU_K_HI 0x1.6e4e26p-5f  /* 0.044715 */
#define KP_PM_GELU_K_LO 0x1.a9003ep-30f
KP_FN float kp_precise_gelu_tanh(float x) {
  float xc = x > 20.0f ? 20.0f : x;
  xc = xc < -20.0f ? -20.0f : xc;
  float x2h = xc * xc;
  float x2l = KP_FMAF(xc, xc, -x2h);
  float wh = KP_PM_GELU_K_HI * x2h;
  float wl = KP_FMAF(KP_PM_GELU_K_HI, x2h, -wh) + KP_FMAF(KP_PM_GELU_K_HI, x2l, KP_PM_GELU_K_LO * x2h);
  float vl;
  float vh = kp_two_sum(1.0f, wh, &vl); /* 1 + K x^2; wh <= 17.9 */
  vl += wl;
  float mh = xc * vh;
  float mlo = KP_FMAF(xc, vh, -mh) + xc * vl;
  float uh = KP_PM_GELU_C_HI * mh;
  float ul = KP_FMAF(KP_PM_GELU_C_HI, mh, -uh) + KP_FMAF(KP_PM_GELU_C_HI, mlo, KP_PM_GELU_C_LO * mh);
  return kp_pm_mul_sigmoid(x, uh, ul, 1);
}

/* G(a) = erfc(a) e^(a^2) for a = ah + al in [0, 15] as hi + *lo: Phi(t) / (1 + 2a) with
 * t = (a - 2) / (a + 2) (Shepherd & Laframboise 1981), Phi a degree-12 polynomial (rel 2^-26).
 * Shared by erfc below and by gelu's derivative (precise_grad.h), which reuses e^(-a^2). */
KP_FN float kp_pm_erfc_g(float ah, float al, float* lo) {
  float tn = ah - 2.0f;
  float td = ah + 2.0f;
  float rt = KP_RCP_APPROXF(td);
  float t0 = tn * rt;
  float t = KP_FMAF(KP_FMAF(-td, t0, tn), rt, t0);
  float p = 1.46112552e-05f;
  p = KP_FMAF(p, t, 0.000108700391f);
  p = KP_FMAF(p, t, 0.000165416321f);
  p = KP_FMAF(p, t, -0.000437413371f);
  p = KP_FMAF(p, t, -0.00142958411f);
  p = KP_FMAF(p, t, 0.00126966927f);
  p = KP_FMAF(p, t, 0.00871463306f);
  p = KP_FMAF(p, t, -0.00803440157f);
  p = KP_FMAF(p, t, -0.0542189293f);
  p = KP_FMAF(p, t, 0.164051354f);
  p = KP_FMAF(p, t, -0.166030452f);
  p = KP_FMAF(p, t, -0.0927638263f);
  /* last Horner step as a float-float: Phi = 1.27697837 + t p */
  float u = p * t;
  float ue = KP_FMAF(p, t, -u);
  float pl;
  float ph = kp_fast_two_sum(1.27697837f, u, &pl);
  pl += ue;
  /* G = Phi / (1 + 2a) as a float-float */
  float gdl;
  float gdh = kp_two_sum(1.0f, 2.0f * ah, &gdl);
  gdl = KP_FMAF(2.0f, al, gdl);
  float rg = KP_RCP_APPROXF(gdh);
  float g0 = ph * rg;
  *lo = (KP_FMAF(-gdh, g0, ph) + KP_FMAF(-gdl, g0, pl)) * rg;
  return g0;
}

/* 1 / sqrt 2 and 2 / sqrt(pi) as float-floats, for gelu's derivative (precise_grad.h). */
#define KP_PM_SQRT1_2_HI 0x1.6a09e6p-1f
#define KP_PM_SQRT1_2_LO 0x1.9fcef4p-27f
#define KP_PM_2_SQRTPI_HI 0x1.20dd76p+0f
#define KP_PM_2_SQRTPI_LO -0x1.f7ac92p-25f
/* erf(a) for |a| < 0.5, a = sh + sl, as hi + *lo: a (2/sqrt(pi) + a^2 R(a^2)), R a degree-4 fit.
 * For gelu's derivative (precise_grad.h), where erfc's fit is weakest. */
KP_FN float kp_pm_erf_small_ff(float sh, float sl, float* lo) {
  float w = sh * sh;
  float r = -0.000780204311f;
  r = KP_FMAF(r, w, 0.0052072173f);
  r = KP_FMAF(r, w, -0.0268646181f);
  r = KP_FMAF(r, w, 0.112837866f);
  r = KP_FMAF(r, w, -0.376126379f);
  float eh = sh * KP_PM_2_SQRTPI_HI;
  *lo = KP_FMAF(sh, KP_PM_2_SQRTPI_HI, -eh) +
        KP_FMAF(sl, KP_PM_2_SQRTPI_HI, sh * KP_FMAF(w, r, KP_PM_2_SQRTPI_LO));
  return eh;
}

/* gelu (exact): x Phi(x), in float alone: 31 SASS instructions per element, 2 MUFU.RCP and one
 * MUFU.EX2, where a float-float erfc takes 143 and a double path 40 with 24 FP64, which an H200
 * cannot issue at its memory rate under its power cap. Within 5 ulp, not 1: 3.45 at most over
 * every float on PoCL (its exp2), 4.33 on an H200 (MUFU.EX2 and MUFU.RCP).
 *   y = |x|, Phi(-y) = exp(-y^2/2) / S(y), S(y) = 2 + sqrt(2 pi) y + y F(y), F = N(y) / D(y)
 *   (degrees 3 / 4): near 0 S is 2 + O(y) and at large y sqrt(2 pi) y, so F's roundings weigh
 *   little in S either way (a rational for 1/S itself lost 4 ulp in its Horner sums at y = 10).
 *   exp(-y^2/2) = 2^-n 2^g: y^2 exact as zh + zl, log2(e)/2 as two floats, and n rounded by the
 *   fma that forms the product, so g = n - y^2 log2(e)/2 keeps 2^-26 absolute up to y = 14.5
 *   (float alone would lose 7 bits there); 2^g in hardware (KP_EX2_APPROXF), |g| <= 1/2.
 *   gelu = x - y Phi(-y) for x >= 0, x Phi(-y) for x < 0, carried at 2^26 scale to the last fma
 *   so that results down to 2^-149 round once. Coefficients: tools/numerics/fit_fp64_math.py. */
KP_FN float kp_precise_gelu(float x) {
  const float ax = KP_FABSF(x);
  const float y = ax > 14.5f ? 14.5f : ax; /* beyond, gelu rounds to -0 (x < 0) or x; inf: see the end */
  const float zh = y * y;
  const float zl = KP_FMAF(y, y, -zh);                      /* y^2 = zh + zl */
  const float m = KP_FMAF(zh, 0x1.715476p-1f, KP_PM_SHIFT); /* n = y^2 log2(e) / 2, rounded */
  float g = KP_FMAF(zh, -0x1.715476p-1f, m - KP_PM_SHIFT);  /* exact product, one rounding */
  g = KP_FMAF(zl, -0x1.715476p-1f, g);
  g = KP_FMAF(zh, -0x1.4ae0cp-27f, g); /* exp(-y^2/2) = 2^-n 2^g, |g| <= 1/2 */
  const int n = KP_AS_INT(m) - KP_AS_INT(KP_PM_SHIFT);
  const float e = KP_EX2_APPROXF(g); /* 2^g */
  float fn = -0x1.3b9496p-6f;
  fn = KP_FMAF(fn, y, -0x1.41c15cp-3f);
  fn = KP_FMAF(fn, y, -0x1.1df23cp-1f);
  fn = KP_FMAF(fn, y, -0x1.d25bfp-1f);
  float fd = 0x1.3b9ee6p-7f;
  fd = KP_FMAF(fd, y, 0x1.72f92p-4f);
  fd = KP_FMAF(fd, y, 0x1.934878p-2f);
  fd = KP_FMAF(fd, y, 0x1.d38298p-1f);
  fd = KP_FMAF(fd, y, 1.0f);
  const float f = fn * KP_RCP_APPROXF(fd);
  const float s = KP_FMAF(0x1.40d932p+1f, y, KP_FMAF(y, f, 2.0f)); /* S(y), in [2, 38.4] */
  const float r = KP_RCP_APPROXF(s);
  const float v0 = y * r;
  const float v = KP_FMAF(KP_FMAF(-v0, s, y), r, v0); /* y / S */
  const float u = v * KP_AS_FLOAT(0xbf800000 + ((26 - n) << 23)); /* -y R 2^(26-n), n <= 152 */
  const float w = u * e;                                            /* -y Phi(-y) 2^26 */
  /* x < 0: x Phi(x), with -inf * 0 = NaN as torch's formula; x >= 0 or NaN: x - y Phi(-y) */
  return KP_FMAF(w, 0x1p-26f, x < 0.0f ? x * 0.0f : x);
}

/* ---- Precise float32 derivatives (backward helpers; the snippet multiplies by the gradient) --- */

/* sigmoid'(x) * scale, scale a power of two (a constant), as t / (1 + t)^2 with t = e^-|x| at
 * 2^64 scale (the derivative is subnormal beyond |x| ~ 87). */
KP_FN float kp_pm_sigmoid_grad(float x, float scale) {
  float ml;
  float mh = kp_pm_exp_scaled(-KP_FABSF(x), 0.0f, 0, 64, &ml); /* t 2^64 */
  float dl;
  float dh = kp_fast_two_sum(1.0f, mh * 0x1p-64f, &dl);
  dl = KP_FMAF(ml, 0x1p-64f, dl);
  float qh = dh * dh; /* (1 + t)^2 */
  float ql = KP_FMAF(dh, dh, -qh) + 2.0f * dh * dl;
  float r = KP_RCP_APPROXF(qh);
  float y0 = mh * r;
  float rho = KP_FMAF(-qh, y0, mh) + KP_FMAF(-ql, y0, ml);
  return KP_FMAF(rho, r, y0) * (scale * 0x1p-64f);
}

/* d/dx sigmoid(x) = sigmoid(x) (1 - sigmoid(x)); also logsigmoid'(x) = sigmoid(-x) and
 * softplus'(x) = sigmoid(beta x) are kp_precise_sigmoid. */
KP_FN float kp_precise_sigmoid_grad(float x) { return kp_pm_sigmoid_grad(x, 1.0f); }

/* d/dx tanh(x) = 1 - tanh(x)^2 = 4 sigmoid'(2x). */
KP_FN float kp_precise_tanh_grad(float x) { return kp_pm_sigmoid_grad(2.0f * x, 4.0f); }

/* d/dx silu(x) = sigmoid(x) (1 + x sigmoid(-x)), torch's silu_backward (NaN at +-inf like it).
 * 1 + x sigmoid(-x) vanishes at x = -1.2785: it is formed as a float-float. */
KP_FN float kp_precise_silu_derivative(float x) {
  float ml;
  float mh = kp_pm_exp_scaled(-KP_FABSF(x), 0.0f, 0, 64, &ml); /* t 2^64, t = e^-|x| */
  float dl;
  float dh = kp_fast_two_sum(1.0f, mh * 0x1p-64f, &dl); /* 1 + t */
  dl = KP_FMAF(ml, 0x1p-64f, dl);
  float r = KP_RCP_APPROXF(dh);
  float a0 = r; /* sigmoid(|x|) = a0 + a1 */
  float a1 = (KP_FMAF(-dh, a0, 1.0f) - dl * a0) * r;
  float b0 = mh * r; /* sigmoid(-|x|) 2^64 = b0 + b1 */
  float b1 = (KP_FMAF(-dh, b0, mh) + KP_FMAF(-dl, b0, ml)) * r;
  int neg = x < 0.0f;
  float s0 = neg ? b0 : a0; /* sigmoid(x), scaled by 2^64 when x < 0 */
  float s1 = neg ? b1 : a1;
  float q0 = neg ? a0 : b0 * 0x1p-64f; /* sigmoid(-x), unscaled */
  float q1 = neg ? a1 : b1 * 0x1p-64f;
  float p = x * q0;
  float pe = KP_FMAF(x, q0, -p) + x * q1;
  float fl;
  float fh = kp_two_sum(1.0f, p, &fl);
  fl += pe;
  float y = KP_FMAF(s0, fh, KP_FMAF(s0, fl, s1 * fh)) * (neg ? 0x1p-64f : 1.0f);
  /* Within 1/16 of the root x0 the factor's absolute error (~2^-31, from e^x) would dominate:
   * Taylor series about x0 = X0_HI + X0_LO in d = x - x0 (x - X0_HI is exact there). */
  float d = x - -0x1.474974p+0f;
  float q = -0.00660658914f;
  q = KP_FMAF(q, d, -0.0152226552f);
  q = KP_FMAF(q, d, 0.0188748142f);
  q = KP_FMAF(q, d, 0.146648797f);
  q = KP_FMAF(q, d, 0.217811706f);
  float near_root = KP_FMAF(d, q, -0x1.bdf6fap-27f * q);
  return KP_FABSF(d) < 0.0625f ? near_root : y;
}

#endif
