/* float64 kernels (IEEE, not fast-math): routines at full double precision that cost fewer
 * instructions than the libdevice / OpenCL built-ins they replace. libdevice's erfc, for one, is
 * ~170 SASS instructions, 70 of them moves of literal coefficients (two per double); here every
 * coefficient sits in constant memory (KP_D_TABLE), one uniform load per use, and gelu's two
 * exponentials (erfc's and the density's) are one. Coefficients, and the algorithm run against mpmath:
 * tools/numerics/fit_float64_math.py. Uses the prelude's KP_D_LO, KP_D_HI, KP_D_FROM_HILO, KP_D_TABLE
 * and KP_RCP_APPROXD, as fp64_math.h does. */
#ifndef KP_FLOAT64_MATH_H
#define KP_FLOAT64_MATH_H

#define KP_F64_LOG2E 0x1.71547652b82fep+0
#define KP_F64_LN2_HI 0x1.62e42fefa39efp-1 /* n ln2_hi - v is exact in an fma for |n| <= 1100 */
#define KP_F64_LN2_LO 0x1.abc9e3b39803fp-56
#define KP_F64_SHIFT 0x1.8p+52 /* adding it rounds |v| < 2^51 to an integer, held in the low word */
#define KP_F64_PHI_K 6.0       /* q = (a - K) / (a + K) maps [0, 38.7] into [-1, 0.73] */
#define KP_F64_INV_SQRT_2PI 0x1.9884533d43651p-2

#define KP_F64_HORNER(p, c, n, x)                                           \
  do {                                                                      \
    p = c[(n) - 1];                                                         \
    for (int kp_i_ = (n) - 2; kp_i_ >= 0; --kp_i_) p = fma(p, x, c[kp_i_]); \
  } while (0)

/* 2^k / d for normal d >= 1: the estimate (about 2^-20) and one cubic Newton step (2^-57), with
 * k added to the estimate's exponent (an integer add, exact; none for k = 0). */
KP_FN double kp_f64_rcp_pow2(double d, int k) {
  const double y = KP_RCP_APPROXD(d);
  const double e = fma(-d, y, 1.0);
  const double yk = KP_D_FROM_HILO(KP_D_HI(y) + k * 0x00100000, KP_D_LO(y));
  return fma(yk, fma(e, e, e), yk);
}
KP_FN double kp_f64_rcp(double d) { return kp_f64_rcp_pow2(d, 0); }

/* v 2^n for n in [-2044, 1023] as two exact power-of-two products (one rounding, at the second, if
 * the result is subnormal). */
KP_FN double kp_f64_scale(double v, int n) {
  const int n1 = n >> 1;
  return (v * KP_D_FROM_HILO((n1 + 1023) << 20, 0)) * KP_D_FROM_HILO((n - n1 + 1023) << 20, 0);
}

/* e^r = 1 + r + r^2 P(r) for |r| <= ln2/2: degree 9, abs 2^-56.1. */
KP_D_TABLE kp_f64_exp_c[10] = {0x1.0000000000001p-1, 0x1.5555555555556p-3, 0x1.5555555553d68p-5, 0x1.11111111109b5p-7,
                               0x1.6c16c17889fd3p-10, 0x1.a01a01a7c2f89p-13, 0x1.a019b91463588p-16, 0x1.71de0db2d4e97p-19,
                               0x1.28917ccaf39d3p-22, 0x1.af389f20208c6p-26};
/* v = n ln2 + z + zl for v in [-1400, 20]: returns z (|z| <= ln2/2), stores n and z's rounding
 * error zl (callers that do not read it lose nothing: it folds away inlined). n comes from the
 * low word of v log2(e) + 1.5 2^52; ln2 in two parts, the first exact in the fma. */
KP_FN double kp_f64_reduce(double v, double* zl, int* n) {
  const double t = fma(v, KP_F64_LOG2E, KP_F64_SHIFT);
  const double nd = t - KP_F64_SHIFT;
  const double z1 = fma(-nd, KP_F64_LN2_HI, v); /* exact */
  const double z = fma(-nd, KP_F64_LN2_LO, z1);
  *zl = fma(-nd, KP_F64_LN2_LO, z1 - z);
  *n = KP_D_LO(t);
  return z;
}
/* e^z - 1 for |z| <= ln2/2 + |lo|. */
KP_FN double kp_f64_expm1_reduced(double z) {
  double p;
  KP_F64_HORNER(p, kp_f64_exp_c, 10, z);
  return fma(z * z, p, z);
}
/* e^(v + lo) = (1 + m) 2^n for v in [-1400, 20] and |lo| below ulp(v): returns m (in
 * [-0.3, 0.42]) and stores n. Callers with an exact v pass lo = -0.0, which folds away. */
KP_FN double kp_f64_exp_reduced(double v, double lo, int* n) {
  double zl;
  return kp_f64_expm1_reduced(kp_f64_reduce(v, &zl, n) + lo);
}
/* T(q) = R(a) (a + 6), R(a) = Phi(-a) exp(a^2/2) = erfcx(a / sqrt2) / 2, as a polynomial in
 * q = (a - 6) / (a + 6): the transform of erfcx that N. Juffa's erfc uses (libdevice's), taken in
 * a rather than a / sqrt2 so the argument needs no rounding, and times a + 6 so R = T(q) / (a + 6)
 * reuses q's reciprocal instead of dividing a second time. For a <= 38.7 (q <= 0.73) only:
 * degree 21, abs 2^-53.1 with the coefficients rounded to double (T is in [0.46, 3]). */
KP_D_TABLE kp_f64_phi_c[22] = {
    0x1.8e010d2b8a0e9p-1,  -0x1.66eaa7d09640ep-1, 0x1.234fe3fd925eep-1,  -0x1.a7d6577269cd2p-2, 0x1.1267d7383c611p-2,
    -0x1.38b069dbb2152p-3, 0x1.33e777766dfaap-4,  -0x1.fba9d531085a4p-6, 0x1.48a83bac77201p-7,  -0x1.1764cd66c9411p-9,
    0x1.13bcc19e9c7e2p-15, 0x1.7c57375fc9064p-13, -0x1.0f98c36a8b224p-14, 0x1.20795c1ef607cp-20, 0x1.c860e066bfaf0p-18,
    -0x1.e24aabe61120fp-20, -0x1.d3fd4e124243dp-22, 0x1.47622c24df3d8p-22, 0x1.b96ceb7f0cef5p-27, -0x1.44e459fbdc0f3p-25,
    0x1.aa6210b1ff47ep-35, 0x1.71ea40df1560dp-29};

/* For 0 <= a < 38.7: returns E with exp(-a^2/2) = E 2^n (n in [-1080, 0] stored in *n), and
 * stores R = Phi(-a) exp(a^2/2) in *r: Phi(-a) = E R 2^n, the normal density
 * phi(a) = E 2^n / sqrt(2 pi). a^2 = w + wl exactly, so the exponent loses nothing. (Horner in
 * one chain measured as fast as two or four interleaved chains on the H100.) */
KP_FN double kp_f64_phi_parts(double a, double* r, int* n) {
  const double w = a * a;
  const double m = kp_f64_exp_reduced(-0.5 * w, -0.5 * fma(a, a, -w), n); /* a^2 = w + wl exactly */
  const double rk = kp_f64_rcp(a + KP_F64_PHI_K);
  const double q = (a - KP_F64_PHI_K) * rk; /* within 2 ulp: T' is small, no residual step */
  double tq;
  KP_F64_HORNER(tq, kp_f64_phi_c, 22, q);
  *r = tq * rk;
  return 1.0 + m;
}

/* The sign and the range test on the high word: integer ops, which leave the FP64 pipe to the
 * math (x < 0 includes -0, whose product path keeps its sign). */
#define KP_F64_NEG(x) (KP_D_HI(x) < 0)
#define KP_F64_GELU_IN_RANGE(x) ((KP_D_HI(x) & 0x7fffffff) < 0x40435999) /* |x| < 38.7, not NaN */

/* gelu(x) = x Phi(x), Phi(-a) = e^(-u/2) 2^n R(a) for a = |x| < 38.7 (beyond, gelu rounds to x
 * or -0; NaN at -inf, as torch's -inf * 0): a^2 = w + wl exactly, n = round(-a^2 log2(e) / 2),
 * u = a^2 + 2 n ln2 (|u| <= ln2) in one polynomial of degree 11. R(a) = erfcx(a / sqrt 2) / 2:
 * for a < 8.5 (T8(q) / 2) (2 / (a + 5)), q = (a - 5) / (a + 5), degree 17 (gelu''s T refitted
 * on the range where nearly all data lies); for x in (-38.7, -8.5] G(s) / a, s = 1 / a^2, a
 * Chebyshev fit of the asymptotic expansion, degree 9, in a branch (x >= 8.5 rounds to x). Then
 * x - a Phi(-a) (or -0 - a Phi(-a)) in one fma, 2^n added to the exponent as an integer (normal
 * for a < 8.5); the tail adds 2^(n+128) and multiplies by 2^-128 last, so subnormal results come
 * out right.
 * 43 FP64 operations per element off the tail (48 in one path over [0, 38.7]). On one H200, in
 * one process: 80-82 % of copy on randn x 3 (torch 82-84) against 70-71 for the one path; on
 * `kplay run`'s mix, where every warp takes the tail too, 69-70 against 72-73.
 * tools/numerics/fit_float64_math.py: 3.9 ulp at worst against mpmath (4.5 with q = (a - K8) rk). */
KP_D_TABLE kp_f64_exph_c[12] = {
    0x1.0000000000000p+0,  -0x1.0000000000000p-1, 0x1.0000000000011p-3,  -0x1.555555555555bp-6,
    0x1.555555554efa4p-9,  -0x1.111111110f1c9p-12, 0x1.6c16c18839f39p-16, -0x1.a01a01b169a92p-20,
    0x1.a0199106a53a4p-24, -0x1.71ddf50e90bd6p-28, 0x1.28b49eba9d19ep-32, -0x1.af63d988375e2p-37};
/* -log2(e) / 2, 2 ln2 in two parts (the first exact in an fma for |n| <= 1100): operands */
KP_D_TABLE kp_f64_gelu_red_c[3] = {-0x1.71547652b82fep-1, 0x1.62e42fefa39efp+0, 0x1.abc9e3b39803fp-55};
#define KP_F64_GELU_K8 5.0
KP_D_TABLE kp_f64_phi8_c[18] = { /* T8 / 2 */
    0x1.89d3abe1f95aep-2,   -0x1.54ad03f27ca03p-2, 0x1.fb31653876ea4p-3,   -0x1.410ed5f877ccdp-3,
    0x1.51f6329f05937p-4,   -0x1.1b1c254a79eaap-5, 0x1.54b4d501e595ep-7,   -0x1.88591519ae459p-10,
    -0x1.a25093c61867ep-12, 0x1.1dafc1bbf4fa7p-12, -0x1.f1bbac4b4a0d7p-16, -0x1.a0f1642af010fp-16,
    0x1.15ca3772e721ap-17,  0x1.c5fb22ccc9d33p-20, -0x1.fce9a6dc23d65p-20, -0x1.5126aa3a45833p-21,
    0x1.54c35cc3e0d4fp-26,  0x1.917aeeab9948ap-26};
KP_D_TABLE kp_f64_gelu_g_c[10] = {
    0x1.9884533d43640p-2,  -0x1.9884533d35e89p-2, 0x1.32633e5d4bb40p+0,  -0x1.7efc037951ff0p+2,
    0x1.4f1a98130a5ddp+5,  -0x1.78c65ce89342ep+8, 0x1.0107e479c6012p+12, -0x1.8a220ae90f684p+15,
    0x1.1c23b722c3239p+19, -0x1.001dc4fce3ee2p+22};
/* e^(-a^2/2) = E 2^n: returns E, stores t (n in its low word) */
KP_FN double kp_f64_gelu_exp(double a, double* t) {
  const double w = a * a;
  *t = fma(w, kp_f64_gelu_red_c[0], KP_F64_SHIFT);
  const double nd = *t - KP_F64_SHIFT;
  const double u = fma(nd, kp_f64_gelu_red_c[2], fma(nd, kp_f64_gelu_red_c[1], w)) + fma(a, a, -w);
  double e;
  KP_F64_HORNER(e, kp_f64_exph_c, 12, u);
  return e;
}
KP_FN double kp_f64_gelu_tail(double x) {
  const int hx = KP_D_HI(x), ha = hx & 0x7fffffff;
  if (hx >= 0 || ha >= 0x40435999) return hx < 0 ? x * 0.0 : x; /* x >= 8.5, x <= -38.7, NaN */
  const double a = -x;
  double t, r;
  const double e = kp_f64_gelu_exp(a, &t);
  const double s = kp_f64_rcp(a * a);
  KP_F64_HORNER(r, kp_f64_gelu_g_c, 10, s);
  const double m = e * (r * (a * s));
  const double sm =
      KP_D_FROM_HILO(KP_D_HI(m) + (int)((unsigned)(KP_D_LO(t) + 128) << 20), KP_D_LO(m));
  return (x * sm) * 0x1p-128;
}
KP_FN double kp_f64_gelu(double x) {
  const int hx = KP_D_HI(x);
  if ((hx & 0x7fffffff) >= 0x40210000) return kp_f64_gelu_tail(x);
  const double a = fabs(x);
  double t, r;
  const double e = kp_f64_gelu_exp(a, &t);
  /* q = a (2 / (a + K8)) - 1 takes a exactly, so q is right to its last bits near a = 0, where
   * x - a Phi(-a) cancels by half ((a - K8) rk gives 4.5 ulp at x = 3e-15), in one fma where
   * that takes two operations. */
  const double rk2 = kp_f64_rcp_pow2(a + KP_F64_GELU_K8, 1);
  KP_F64_HORNER(r, kp_f64_phi8_c, 18, fma(a, rk2, -1.0));
  const double m = e * (r * rk2);
  const double sm = KP_D_FROM_HILO(KP_D_HI(m) + (int)((unsigned)KP_D_LO(t) << 20), KP_D_LO(m));
  const int neg = hx < 0;
  return fma(-a, sm, KP_D_FROM_HILO(neg ? (int)0x80000000 : hx, neg ? 0 : KP_D_LO(x)));
}

/* gelu'(x) = Phi(x) + x phi(x): E (R - a / sqrt(2 pi)) 2^n for x = -a < 0, one minus that for
 * x >= 0. The difference cancels next to gelu's minimum (a = 0.7518), as it does in torch's
 * formula; the test metric allows for it there (docs/activations.md). At +-inf NaN (inf * 0), as
 * torch's. */
KP_FN double kp_f64_gelu_grad(double g, double x) {
  double r;
  int n;
  const double a = fabs(x);
  const double e = kp_f64_phi_parts(a, &r, &n);
  const double gs = e * fma(-a, KP_F64_INV_SQRT_2PI, r); /* gelu'(-a) 2^-n */
  const int neg = KP_F64_NEG(x);
  const double s = kp_f64_scale(neg ? g * gs : gs, n);
  const double d = neg ? s : g * (1.0 - s);
  return KP_F64_GELU_IN_RANGE(x) ? d : (neg ? g * 0.0 : g) + g * (x - x);
}

/* log1p(f) = 2 atanh(f / (2 + f)) = h + h^3 P(h^2), h = f / (1 + f/2) (twice atanh's argument,
 * so a subnormal f passes through unhalved), for |h| <= 0.3432: degree 6, abs 2^-57.5 against h
 * (the atanh series' fit in s = h/2, its coefficients scaled by powers of two). */
KP_D_TABLE kp_f64_log1p_c[7] = {0x1.5555555555558p-4, 0x1.999999999523ep-7, 0x1.2492492e03734p-9, 0x1.c71c62ce599c7p-12,
                                0x1.7462bb40a0181p-14, 0x1.39fd85b6dc092p-16, 0x1.2b62d7ad6afd1p-18};
#define KP_F64_SQRT2_M1 0x1.a827999fcef32p-2

/* log1p(e^(-a + al)) for a >= 0 (NaN stays NaN), al the low part of -a (|al| <= ulp(a) / 2; -0.0
 * for an exact a, which folds away): w = E 2^n as in kp_f64_phi_parts (0 past a = 745.2), then
 * for w > sqrt2 - 1 log1p(w) = ln2 + log1p((w - 1) / 2), both reductions exact, so |h| <= 0.3432
 * and one atanh polynomial serves. */
KP_FN double kp_f64_log1p_exp_neg_lo(double a, double al) {
  int n;
  const double m = kp_f64_exp_reduced(-a, al, &n); /* sets n before kp_f64_scale reads it */
  const double w0 = kp_f64_scale(1.0 + m, n);
  const double w = a > 745.2 ? 0.0 : w0;
  const int big = w > KP_F64_SQRT2_M1;
  const double f = big ? (w - 1.0) * 0.5 : w;
  /* h = f / (1 + f/2) to about half an ulp: 1 + f/2 = d + dl exactly, and one residual step */
  const double d = fma(0.5, f, 1.0);
  const double dl = fma(0.5, f, 1.0 - d);
  const double r = kp_f64_rcp(d);
  const double h0 = f * r;
  const double h = fma(r, fma(-h0, dl, fma(-h0, d, f)), h0);
  const double hh = h * h;
  double q;
  KP_F64_HORNER(q, kp_f64_log1p_c, 7, hh);
  const double l = fma(h * hh, q, h);
  return big ? KP_F64_LN2_HI + (l + KP_F64_LN2_LO) : l;
}
KP_FN double kp_f64_log1p_exp_neg(double a) { return kp_f64_log1p_exp_neg_lo(a, -0.0); }

/* logsigmoid(x) = min(x, 0) - log1p(e^-|x|), torch's formula, with no cancellation in it (the
 * two terms have one sign); -0 gives -ln2 like 0. */
KP_FN double kp_f64_logsigmoid(double x) {
  return (KP_F64_NEG(x) ? x : 0.0) - kp_f64_log1p_exp_neg(fabs(x));
}

/* g sigmoid(z): g / (1 + w) for z >= 0 and g e^z / (1 + w) for z < 0, w = e^-|z| = (1 + m) 2^n.
 * The numerator (g, or g (1 + m) as a double-double) over 1 + w = d + dl (exact) in one residual
 * step: within about 0.6 ulp. The 2^n is applied last (two exact products), so g e^z keeps its
 * precision where e^z alone would be subnormal (z < -708). Past |z| = 1400 sigmoid is 1 or below
 * 2^-2000: g, or g * 0. _lo: -|z| carries a low part al (|al| <= ulp(z) / 2), for a z that is a
 * rounded product (softplus' beta x), whose rounding e^z would multiply by |z|. */
KP_FN double kp_f64_mul_sigmoid_lo(double g, double z, double al) {
  const double a = fabs(z);
  int n;
  const double m = kp_f64_exp_reduced(-a, al, &n); /* e^(-a + al) 2^-n - 1 */
  const int neg = KP_F64_NEG(z);
  const double ge = fma(g, m, g);
  const double hi = neg ? ge : g;
  const double lo = neg ? fma(g, m, g - ge) : 0.0; /* g - ge is exact: ge / g in [0.7, 1.42] */
  const double w = kp_f64_scale(1.0 + m, n);
  const double d = 1.0 + w;
  const double dl = (1.0 - d) + w;
  const double rd = kp_f64_rcp(d);
  const double q0 = hi * rd;
  const double q = fma(rd, fma(-q0, dl, fma(-q0, d, hi) + lo), q0);
  const double v = neg ? kp_f64_scale(q, n) : q;
  return a > 1400.0 ? (neg ? g * 0.0 : g) : v;
}
KP_FN double kp_f64_mul_sigmoid(double g, double z) { return kp_f64_mul_sigmoid_lo(g, z, -0.0); }

/* g silu'(z) = g s (1 + z (1 - s)), s = sigmoid(z), for z with the low part al of -|z| (as
 * kp_f64_mul_sigmoid_lo takes it): quick_gelu's derivative at z = beta x. With w = e^-|z| =
 * (1 + m) 2^n and r = 1 / (1 + w): for z >= 0, (1 + w + z w) r^2 (at most 1.1); for z < 0,
 * (1 + m) (1 + z + w) r^2 2^n, z's low part inside 1 + z + w (1 + z is exact near the root at
 * z = -1.2785, which cancels there as silu's does: 2^17 ulp, verification.hpp). 2^n is applied in
 * two steps: up to 2^-11 before g, so that the factor g meets is below 1 (no overflow for a g near
 * the largest double), the rest after, so that g w keeps its precision where w alone is
 * subnormal (z < -708). Past |z| = 1400, g or g * -0; x carries +-inf to NaN, as torch's inf * 0. */
KP_FN double kp_f64_silu_grad_lo(double g, double z, double al, double x) {
  const double a = fabs(z);
  int n;
  const double m = kp_f64_exp_reduced(-a, al, &n); /* sets n before kp_f64_scale reads it */
  const double w = kp_f64_scale(1.0 + m, n);
  const double r = kp_f64_rcp(1.0 + w);
  const double pos = g * (fma(z, w, 1.0 + w) * r * r);
  const int k = n > -11 ? n : -11;
  const double q = kp_f64_scale(((1.0 + m) * ((1.0 + z) + (al + w))) * r * r, k);
  const double neg = kp_f64_scale(g * q, n - k);
  const int negz = KP_F64_NEG(z);
  const double limit = x - x != 0.0 ? g * (x - x) : (negz ? g * -0.0 : g); /* +-inf: NaN */
  return a > 1400.0 ? limit : (negz ? neg : pos);
}

/* mish(x) = x t, t = tanh(log1p(e^x)) = p / (p + 2), p = e (e + 2), e = e^x = E 2^n (E = 1 + m):
 * t = 2^n E (e + 2) / (p + 2), with p + 2 in one fma and the 2^n applied last (two exact products),
 * so x t keeps its precision where e^x alone would be subnormal (x < -708.4, where the result is
 * not for x > -714.3: 358 ulp on PoCL that way); e itself only meets 2, so its rounding there does
 * not count. Above x = 20 t is 1 (x); below -1400 x * 0 (-0, NaN at -inf, as torch's). */
KP_FN double kp_f64_mish(double x) {
  int n;
  const double big_e = 1.0 + kp_f64_exp_reduced(x, -0.0, &n); /* n <= 29 for x <= 20 */
  const double e = kp_f64_scale(big_e, n);
  const double t = big_e * (e + 2.0) / fma(e, e + 2.0, 2.0); /* t 2^-n */
  const double y = kp_f64_scale(x * t, n);
  return x > 20.0 ? x : (x < -1400.0 ? x * 0.0 : y);
}

/* tanh x = -m / (2 + m) with the sign of x, m = expm1(-2|x|) in (-1, 0]: e^(-2|x|) = (1 + m0) 2^n,
 * with the reduction's rounding error zl kept, so m = 2^n (m0 + zl (1 + m0))
 * + (2^n - 1) comes out as a double-double (2^n m0 is exact, 2^n - 1 too). 2 + m = d + dl exactly,
 * and the quotient takes one residual step: within 2 ulp (the H200's libdevice tanh, also 2 ulp, costs
 * two moves per literal coefficient and streamed at 87 % of copy against torch's 95 %). |x| is
 * clamped at 20 on the high word (tanh rounds to 1 past 19.1, and 2^n stays normal); NaN is selected
 * back. */
KP_FN double kp_f64_tanh(double x) {
  const int hx = KP_D_HI(x);
  const int ha = hx & 0x7fffffff;
  const double v = -2.0 * (ha >= 0x40340000 ? 20.0 : KP_D_FROM_HILO(ha, KP_D_LO(x))); /* -2 min(|x|, 20) */
  double zl;
  int n;
  const double m0 = kp_f64_expm1_reduced(kp_f64_reduce(v, &zl, &n));
  const double s = KP_D_FROM_HILO((n + 1023) << 20, 0);
  const double m = fma(s, m0, s - 1.0);
  const double ml = fma(s, fma(zl, m0, zl), fma(s, m0, (s - 1.0) - m)); /* |s - 1| >= |s m0| unless s = 1 */
  const double d = 2.0 + m;
  const double dl = ((2.0 - d) + m) + ml; /* 2 - d is exact: |m| <= 1 */
  const double r = kp_f64_rcp(d);
  const double q0 = -m * r;
  const double q = fma(r, fma(-q0, dl, fma(-q0, d, -m) - ml), q0);
  const double y = KP_D_FROM_HILO((KP_D_HI(q) & 0x7fffffff) | (hx & (int)0x80000000), KP_D_LO(q));
  return x != x ? x : y;
}
#endif /* KP_FLOAT64_MATH_H */
