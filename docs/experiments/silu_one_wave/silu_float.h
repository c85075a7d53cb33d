/* float32 silu in float arithmetic alone (no FP64), within 0.787 ulp over every float (at
 * x = -91.87, a subnormal result; float_check.cpp): x / (1 + e) or x e / (1 + e) with
 * e = e^-|x| = 2^n (1 + m), m a float-float from a Cody-Waite reduction (rh + rl) and a degree-7
 * Taylor tail, 1 + e kept as dh + dl, and one residual correction of the quotient. Negative x
 * scale e by 2^40 so that subnormal results round once from a normal quotient. 56 SASS
 * instructions per element (sm_90), against about 34 (15 of them FP64) on kplay's double path
 * and about 20 for torch's formula. The includer defines MB_FN, MB_RCP (a reciprocal within
 * ~1 ulp, e.g. rcp.approx.ftz.f32) and the bit casts MB_AS_FLOAT and MB_AS_INT. */
#ifndef MB_SILU_FLOAT_H
#define MB_SILU_FLOAT_H
MB_FN float silu_fl(float x) {
  const float a = fminf(fabsf(x), 110.0f);
  const float j = fmaf(-a, 1.44269504f, 12582912.0f); /* 0x1.8p23 + n, n = rint(-a log2 e) */
  const float n = j - 12582912.0f;
  const float r1 = fmaf(-n, 0x1.62e4p-1f, -a); /* exact, and so is t */
  const float t = n * 0x1.7f7ep-20f;
  const float rh = r1 - t;
  float rl = (r1 - rh) - t;
  rl = fmaf(-n, -0x1.c610cap-37f, rl); /* -a - n ln2 = rh + rl */
  float q = 1.98412698e-4f;
  q = fmaf(q, rh, 1.38888889e-3f);
  q = fmaf(q, rh, 8.33333358e-3f);
  q = fmaf(q, rh, 4.16666679e-2f);
  q = fmaf(q, rh, 1.66666672e-1f);
  q = fmaf(q, rh, 0.5f);
  const float mt = fmaf(rh * rh, q, fmaf(rl, rh, rl));
  const float mh = rh + mt;
  const float ml = (rh - mh) + mt; /* e^(rh + rl) - 1 = mh + ml, |ml| <= ulp(mh) */
  const int ni = MB_AS_INT(j) - 0x4b400000;
  const float s = ni >= -126 ? MB_AS_FLOAT((ni + 127) << 23) : 0.0f;
  const float S = MB_AS_FLOAT((ni + 40 + 127) << 23);
  const float u = 1.0f + s;
  const float ul = (1.0f - u) + s;
  const float sm = s * mh; /* exact */
  const float dh = u + sm;
  const float dl = fmaf(s, ml, ((u - dh) + sm) + ul);
  const int neg = MB_AS_INT(x) < 0;
  const float xs = x * S;
  const float nh = neg ? fmaf(xs, mh, xs) : x;
  const float nl = neg ? fmaf(xs, ml, fmaf(xs, mh, xs - nh)) : 0.0f;
  const float rc = MB_RCP(dh);
  const float q0 = nh * rc;
  float res = fmaf(-q0, dh, nh);
  res = fmaf(-q0, dl, res + nl);
  float y = fmaf(res, rc, q0);
  y = neg ? y * 0x1p-40f : y;
  y = MB_AS_FLOAT((MB_AS_INT(y) & 0x7fffffff) | (MB_AS_INT(x) & (int)0x80000000));
  return fabsf(x) > 110.0f ? (x > 0.0f ? x : x * 0.0f) : y;
}
#endif
