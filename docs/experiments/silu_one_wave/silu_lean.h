/* float32 sigmoid and silu in float arithmetic alone, within kplay's 2-ulp bound (over every
 * float: silu 1.093 ulp, sigmoid 1.0004; float_check.cpp) and with torch's special values: how
 * close to the cost of torch's x / (1 + expf(-x)) a float design within the bound comes.
 * e = e^-|x| = 2^k (1 + t): a Cody-Waite reduction in two FMAs, t = r + r^2 P(r) with P of degree
 * 4 (fit_lean.py: 0.06 ulp of e^r); 1 + e = d + dl exactly; the numerator (x or 1 for x >= 0,
 * x e or e for x < 0, formed at 2^64 so that subnormal results round once) as nh + nl; one
 * quotient with a residual correction. The two compensations are what the bound costs: the same
 * exponential rounded to 2^k (1 + t), d = 1 + e and one IEEE division measure 3.34 ulp (silu).
 * Against silu_float.h it leaves out the float-float argument and the longer polynomial, which
 * bought 0.79 ulp for 56 instructions per element; this is about 40 (sm_90), kplay's double path
 * 34 (14 of them FP64). The includer defines MB_FN, MB_RCP (a reciprocal within ~1 ulp),
 * MB_AS_FLOAT and MB_AS_INT. */
#ifndef MB_SILU_LEAN_H
#define MB_SILU_LEAN_H
/* m: the numerator for x >= 0 (x for silu, 1 + 0 x for sigmoid, so that NaN propagates) */
MB_FN float mb_lean_mul_sigmoid(float x, float m) {
  const float a = fminf(fabsf(x), 110.0f);
  const float j = fmaf(-a, 1.44269504f, 12582912.0f); /* 0x1.8p23 + k, k = rint(-a log2 e) */
  const float k = j - 12582912.0f;
  float r = fmaf(k, -0x1.62e43p-1f, -a);
  r = fmaf(k, 0x1.05c610p-29f, r); /* -a - k ln2 */
  float p = 0.001375133404508233f;
  p = fmaf(p, r, 0.008368936367332935f);
  p = fmaf(p, r, 0.041669536381959915f);
  p = fmaf(p, r, 0.166665181517601f);
  p = fmaf(p, r, 0.49999988079071045f);
  const float t = fmaf(r * r, p, r); /* e^r - 1 */
  const int ki = MB_AS_INT(j) - 0x4b400000;
  const float s = MB_AS_FLOAT((ki + 127 > 0 ? ki + 127 : 0) << 23); /* 2^k, 0 below 2^-126 */
  const float S = MB_AS_FLOAT((ki + 127 + 64) << 23);               /* 2^(k + 64) */
  const float e = fmaf(s, t, s);
  const float d = 1.0f + e;
  const float dl = (1.0f - d) + e; /* 1 + e = d + dl */
  const int neg = x < 0.0f;
  const float ms = m * S;
  const float nh = neg ? fmaf(ms, t, ms) : m;
  const float nl = neg ? fmaf(ms, t, ms - nh) : 0.0f;
  const float rc = MB_RCP(d);
  const float q0 = nh * rc;
  float res = fmaf(-q0, d, nh);
  res = fmaf(-q0, dl, res + nl);
  const float y = fmaf(res, rc, q0);
  return neg ? y * 0x1p-64f : y;
}
MB_FN float silu_lean(float x) {
  float y = mb_lean_mul_sigmoid(x, x);
  y = MB_AS_FLOAT((MB_AS_INT(y) & 0x7fffffff) | (MB_AS_INT(x) & (int)0x80000000)); /* silu(-0) = -0 */
  return fabsf(x) > 110.0f ? (x > 0.0f ? x : x * 0.0f) : y;                        /* -inf: NaN, as torch */
}
MB_FN float sigmoid_lean(float x) {
  const float y = mb_lean_mul_sigmoid(x, fmaf(x, 0.0f, 1.0f));
  return fabsf(x) > 110.0f ? (x > 0.0f ? 1.0f : 0.0f) : y;
}
#endif
