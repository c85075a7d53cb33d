/* Precise float32 backward functions: g * f'(x) for silu, gelu (erf and tanh forms) and mish,
 * each within 2 ulp of the exact g * f'(x) wherever that is a normal float (tools/numerics
 * sweeps them; README.md there has the measured maxima). Built on precise_math.h (include it
 * first) with the same rules: only +, -, *, fma (always written as KP_FMAF: CUDA compiles these
 * with --fmad=false), comparisons, selects and bit casts.
 *
 * Pattern: f'(x) is formed as a float-float fh + fl, and the result is g * fh + g * fl rounded
 * once. Where f'(x) is tiny (far negative x) it is formed at 2^64 scale and the product scaled
 * back, so that g * f'(x) keeps its bits down to 2^-126 for |g| <= 2^38 (larger |g|: results
 * just above 2^-126 in the far tails may lose bits, as exp's low part is dropped below 2^-100).
 * The scale is only used where f'(x) < 2^-64, so g * f'(x) * 2^64 cannot overflow. Each derivative has a root
 * where its terms cancel; around it f'(x) = (x - x0) q(x) with q fitted (fit_grad_roots.py).
 * Special values follow torch's formulas: x = +-inf gives NaN (inf * 0), NaN gives NaN; large
 * finite |x| gives g (f' = 1) or +-0 without spurious overflow. */
#ifndef KP_PRECISE_GRAD_H
#define KP_PRECISE_GRAD_H

/* g * f'(x) around a root x0 = X0_HI + x0_lo + x0_lo2 of f' (three floats), d = x - X0_HI exact:
 * f'(x) = (d - x0_lo - x0_lo2) (c0 + d p), c0 = c0h + c0l, p the rest of the polynomial. */
KP_FN float kp_pg_near_root(float g, float d, float x0_lo, float x0_lo2, float p, float c0h,
                            float c0l) {
  float u = d * p;
  float ue = KP_FMAF(d, p, -u);
  float ql;
  float qh = kp_fast_two_sum(c0h, u, &ql); /* |d p| < |c0| / 3 on the windows used */
  ql += ue + c0l;
  float al;
  float ah = kp_two_sum(d, -x0_lo, &al);
  al -= x0_lo2;
  float ph = ah * qh;
  float pl = KP_FMAF(ah, qh, -ph) + KP_FMAF(ah, ql, al * qh);
  return KP_FMAF(g, ph, g * pl);
}

/* g * sigmoid(z) (1 + w sigmoid(-z)) for z = zh + zl, w = wh + wl (float-floats): the shape of
 * silu' (z = w = x) and of gelu_tanh' (z = 2u). For z < -50 (there |w| e^z < 2^-64 for both
 * users) sigmoid(z) is formed at 2^64 scale. */
KP_FN float kp_pg_sigmoid_form(float g, float zh, float zl, int ff_arg, float wh, float wl) {
  int neg = zh < 0.0f;
  int far = zh < -50.0f;
  float up = far ? 0x1p-64f : 1.0f;
  float ml;
  float mh = kp_pm_exp_scaled(-KP_FABSF(zh), neg ? zl : -zl, ff_arg, far ? 64 : 0, &ml); /* t = e^-|z| */
  float dl;
  float dh = kp_fast_two_sum(1.0f, mh * up, &dl); /* 1 + t */
  dl = KP_FMAF(ml, up, dl);
  float r = KP_RCP_APPROXF(dh);
  float a0 = r; /* sigmoid(|z|) = a0 + a1 */
  float a1 = (KP_FMAF(-dh, a0, 1.0f) - dl * a0) * r;
  float b0 = mh * r; /* sigmoid(-|z|), scaled when far, = b0 + b1 */
  float b1 = (KP_FMAF(-dh, b0, mh) + KP_FMAF(-dl, b0, ml)) * r;
  float s0 = neg ? b0 : a0; /* sigmoid(z), scaled when far */
  float s1 = neg ? b1 : a1;
  float q0 = neg ? a0 : b0; /* sigmoid(-z); b is unscaled when z >= 0 */
  float q1 = neg ? a1 : b1;
  float ph = wh * q0;
  float pe = KP_FMAF(wh, q0, -ph) + KP_FMAF(wh, q1, wl * q0);
  float fl;
  float fh = kp_two_sum(1.0f, ph, &fl); /* 1 + w sigmoid(-z) */
  fl += pe;
  float yh = s0 * fh;
  float yl = KP_FMAF(s0, fh, -yh) + KP_FMAF(s0, fl, s1 * fh);
  return KP_FMAF(g, yh, g * yl) * up;
}

/* g * silu'(x) about its root x0 = -1.2785 = KP_PG_SILU_X0 + 0x1.bdf6fap-27 + 0x1.03945ap-53, for
 * x = X0 + d + dl (d exact, dl a low part, 0 for a float x). */
#define KP_PG_SILU_X0 -0x1.474974p+0f
KP_FN float kp_pg_silu_near_root(float g, float d, float dl) {
  float p = 0.000126846498f;
  p = KP_FMAF(p, d, -0.00660191197f);
  p = KP_FMAF(p, d, -0.0152226519f);
  p = KP_FMAF(p, d, 0.0188748073f);
  p = KP_FMAF(p, d, 0.146648794f);
  return kp_pg_near_root(g, d, 0x1.bdf6fap-27f, 0x1.03945ap-53f - dl, p, 0x1.be141p-3f, 0x1.2af1b2p-33f);
}

/* g * silu'(x) = g sigmoid(x) (1 + x sigmoid(-x)), torch's silu_backward; root x0 = -1.2785. */
KP_FN float kp_precise_silu_grad(float g, float x) {
  float d = x - KP_PG_SILU_X0;
  float near_root = kp_pg_silu_near_root(g, d, 0.0f);
  float y = kp_pg_sigmoid_form(g, x, 0.0f, 0, x, 0.0f);
  return KP_FABSF(d) < 0.0625f ? near_root : y;
}

/* g * quick_gelu'(x) = g silu'(z), z = beta x = zh + zl exact (a product of two floats), beta > 0:
 * silu's float-float form and its root, in z. Near the root d = zh - X0 is exact (Sterbenz) and zl
 * joins its low part: the float x nearest the root (beta = 1.702f) has |z - z0| = 2^-28.3, where
 * rounding z would cost 2^4 of the derivative's bits. z > 109: silu'(z) rounds to 1, so g (+inf:
 * NaN, as torch's inf * 0); z < -204: |g silu'(z)| < 2^-150 for every float g, and z is clamped
 * there (zl = 0), so that an overflowed beta x (zl infinite) does not reach the float-float. */
KP_FN float kp_precise_quick_gelu_grad(float g, float x, float beta) {
  const float z = beta * x;
  const int low = z < -204.0f;
  const float zh = low ? -204.0f : z;
  const float zl = low ? 0.0f : KP_FMAF(beta, x, -z);
  float y = kp_pg_sigmoid_form(g, zh, zl, 1, zh, zl);
  const float d = zh - KP_PG_SILU_X0;
  float dl;
  const float dh = kp_two_sum(d, zl, &dl);
  const float near_root = kp_pg_silu_near_root(g, dh, dl);
  y = KP_FABSF(d) < 0.0625f ? near_root : y;
  y = z > 109.0f ? g : y;
  return KP_FABSF(x) > 0x1.fffffep+127f ? x - x : y; /* a select: y + (x - x) would make -0 +0 */
}

/* g * gelu_tanh'(x), torch's formula 0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 k x^2),
 * t = tanh(u), u = sqrt(2/pi) (x + k x^3), k = 0.044715: with 1 + t = 2 sigmoid(2u) it is
 * sigmoid(2u) (1 + w sigmoid(-2u)), w = 2 sqrt(2/pi) x (1 + 3 k x^2). Root x0 = -0.7518.
 * Large finite |x| gives g or +-0 (torch's float formula gives NaN once x^2 overflows). */
#define KP_PG_GELU_K3_HI 0x1.12ba9ep-3f /* 3 * 0.044715 */
#define KP_PG_GELU_K3_LO -0x1.c13fd0p-28f
KP_FN float kp_precise_gelu_tanh_grad(float g, float x) {
  float xc = x > 10.0f ? 10.0f : x; /* x > 10: f' rounds to 1 */
  xc = xc < -20.0f ? -20.0f : xc;   /* x < -20: f' < 2^-800 */
  float x2h = xc * xc;
  float x2l = KP_FMAF(xc, xc, -x2h);
  /* 2u = C x (1 + k x^2) as a float-float (as kp_precise_gelu_tanh) */
  float kh = KP_PM_GELU_K_HI * x2h;
  float kl = KP_FMAF(KP_PM_GELU_K_HI, x2h, -kh) + KP_FMAF(KP_PM_GELU_K_HI, x2l, KP_PM_GELU_K_LO * x2h);
  float vl;
  float vh = kp_two_sum(1.0f, kh, &vl);
  vl += kl;
  float mh = xc * vh;
  float mlo = KP_FMAF(xc, vh, -mh) + xc * vl;
  float zh = KP_PM_GELU_C_HI * mh;
  float zl = KP_FMAF(KP_PM_GELU_C_HI, mh, -zh) + KP_FMAF(KP_PM_GELU_C_HI, mlo, KP_PM_GELU_C_LO * mh);
  /* w = C x (1 + 3k x^2) */
  float jh = KP_PG_GELU_K3_HI * x2h;
  float jl = KP_FMAF(KP_PG_GELU_K3_HI, x2h, -jh) + KP_FMAF(KP_PG_GELU_K3_HI, x2l, KP_PG_GELU_K3_LO * x2h);
  float nl;
  float nh = kp_two_sum(1.0f, jh, &nl);
  nl += jl;
  float oh = xc * nh;
  float ol = KP_FMAF(xc, nh, -oh) + xc * nl;
  float wh = KP_PM_GELU_C_HI * oh;
  float wl = KP_FMAF(KP_PM_GELU_C_HI, oh, -wh) + KP_FMAF(KP_PM_GELU_C_HI, ol, KP_PM_GELU_C_LO * oh);
  float y = kp_pg_sigmoid_form(g, zh, zl, 1, wh, wl);
  float d = x - -0x1.8142ap-1f;
  float p = 0.00524910586f;
  p = KP_FMAF(p, d, 0.019616235f);
  p = KP_FMAF(p, d, -0.0166194439f);
  p = KP_FMAF(p, d, -0.113943964f);
  p = KP_FMAF(p, d, -0.015782848f);
  p = KP_FMAF(p, d, 0.387518436f);
  float near_root = kp_pg_near_root(g, d, 0x1.85a06cp-27f, 0x1.a9ea48p-52f, p, 0x1.b8baccp-2f, 0x1.c222a2p-27f);
  y = KP_FABSF(d) < 0.125f ? near_root : y;
  y = x > 10.0f ? g : y;
  return y + (x - x); /* +-inf: NaN, as torch's inf * 0 */
}

/* g * gelu'(x) = g (Phi(x) + x phi(x)), Phi(x) = erfc(-a) / 2, x phi(x) = a e^(-a^2) / sqrt(pi),
 * a = x / sqrt 2; x < -10 at 2^64 scale. Root x0 = -0.7518. */
KP_FN float kp_precise_gelu_grad(float g, float x) {
  float sh = x * KP_PM_SQRT1_2_HI; /* a = sh + sl */
  float sl = KP_FMAF(x, KP_PM_SQRT1_2_HI, -sh) + x * KP_PM_SQRT1_2_LO;
  int neg = x < 0.0f;
  int far = x < -10.0f;
  int bias = far ? 64 : 0;
  float ah = KP_FABSF(sh);
  float al = neg ? -sl : sl;
  int clamp = ah > 15.0f; /* G(15) e^-225 = 0; also infinities, whose al is NaN */
  float gl;
  float gh = kp_pm_erfc_g(clamp ? 15.0f : ah, clamp ? 0.0f : al, &gl);
  /* e^(-a^2), a^2 as a float-float: shared by erfc(|a|) = e^(-a^2) G and x phi(x) */
  float a2h = sh * sh;
  float a2l = KP_FMAF(sh, sh, -a2h) + 2.0f * sh * sl;
  float el;
  float eh = kp_pm_exp_scaled(-a2h, -a2l, 1, bias, &el);
  float qh = eh * gh; /* erfc(|a|), scaled when far */
  float ql = KP_FMAF(eh, gh, -qh) + KP_FMAF(eh, gl, el * gh);
  /* Phi = erfc(|a|) / 2 for x < 0, 1 - erfc(a) / 2 for x >= 0 */
  float tl;
  float th = kp_fast_two_sum(neg ? 0.0f : 1.0f, neg ? 0.5f * qh : -0.5f * qh, &tl);
  tl += neg ? 0.5f * ql : -0.5f * ql;
  /* |a| < 0.5: Phi = (1 + erf(a)) / 2, erf(a) = a (2/sqrt(pi) + a^2 R(a^2)) (kp_pm_erf_small_ff)
   * (erfc's fit is weakest there) */
  float erl;
  float erh = kp_pm_erf_small_ff(sh, sl, &erl);
  float cl;
  float ch = kp_fast_two_sum(0.5f, 0.5f * erh, &cl);
  cl = KP_FMAF(0.5f, erl, cl);
  int small = ah < 0.5f;
  th = small ? ch : th;
  tl = small ? cl : tl;
  /* e^(-a^2) / sqrt(pi) */
  float mh = eh * (0.5f * KP_PM_2_SQRTPI_HI);
  float ml = KP_FMAF(eh, 0.5f * KP_PM_2_SQRTPI_HI, -mh) + KP_FMAF(eh, 0.5f * KP_PM_2_SQRTPI_LO, el * (0.5f * KP_PM_2_SQRTPI_HI));
  float nh = sh * mh; /* x phi(x), -inf * 0 = NaN for x = -inf */
  float nl = KP_FMAF(sh, mh, -nh) + KP_FMAF(sh, ml, sl * mh);
  float fl;
  float fh = kp_two_sum(th, nh, &fl);
  fl += tl + nl;
  float y = KP_FMAF(g, fh, g * fl) * (far ? 0x1p-64f : 1.0f);
  float d = x - -0x1.80ead2p-1f;
  float p = -0.00219278387f;
  p = KP_FMAF(p, d, 0.00444719661f);
  p = KP_FMAF(p, d, 0.0194181949f);
  p = KP_FMAF(p, d, -0.0147679476f);
  p = KP_FMAF(p, d, -0.114008144f);
  p = KP_FMAF(p, d, -0.0181997176f);
  p = KP_FMAF(p, d, 0.388284981f);
  float near_root = kp_pg_near_root(g, d, 0x1.a03fd4p-27f, -0x1.eec18cp-52f, p, 0x1.b9d99p-2f, -0x1.5361d6p-27f);
  y = KP_FABSF(d) < 0.25f ? near_root : y;
  y = x > 10.0f ? g : y; /* Phi(x) + x phi(x) rounds to 1 */
  return y + (x - x);    /* +inf: NaN, as torch's inf * 0 */
}

/* g * mish'(x), torch: t + x s (1 - t^2), t = tanh(softplus(x)), s = sigmoid(x). With e = e^x,
 * n = e (e + 2), D = n + 2: t = n / D and f' = e H / (D^2 / 4), H = (e + 2) D / 4 + x (1 + e).
 * x < -50 at 2^64 scale. Root x0 = -1.1923. */
KP_FN float kp_precise_mish_grad(float g, float x) {
  float xc = x > 20.0f ? 20.0f : x; /* x > 20: f' rounds to 1 */
  int far = xc < -50.0f;
  float down = far ? 0x1p-64f : 1.0f;
  float el;
  float eh = kp_pm_exp_scaled(xc, 0.0f, 0, far ? 64 : 0, &el); /* e, scaled when far */
  float uh = eh * down; /* e unscaled, only added to 1 and 2 */
  float ul = el * down;
  float al;
  float ah = kp_two_sum(uh, 2.0f, &al); /* e + 2 */
  al += ul;
  float bl;
  float bh = kp_two_sum(uh, 1.0f, &bl); /* 1 + e */
  bl += ul;
  float nh = uh * ah; /* n */
  float nl = KP_FMAF(uh, ah, -nh) + KP_FMAF(uh, al, ul * ah);
  float dl;
  float dh = kp_two_sum(nh, 2.0f, &dl); /* D */
  dl += nl;
  float ph = ah * dh; /* (e + 2) D */
  float pl = KP_FMAF(ah, dh, -ph) + KP_FMAF(ah, dl, al * dh);
  float xh = xc * bh; /* x (1 + e); x = -inf: -inf, then 0 * -inf = NaN as in torch */
  float xl = KP_FMAF(xc, bh, -xh) + xc * bl;
  float hl;
  float hh = kp_two_sum(0.25f * ph, xh, &hl);
  hl += KP_FMAF(0.25f, pl, xl);
  float mh = eh * hh; /* e H, scaled when far */
  float ml = KP_FMAF(eh, hh, -mh) + KP_FMAF(eh, hl, el * hh);
  float qh = dh * dh; /* D^2 */
  float ql = KP_FMAF(dh, dh, -qh) + 2.0f * dh * dl;
  qh *= 0.25f;
  ql *= 0.25f;
  float r = KP_RCP_APPROXF(qh);
  float y0 = mh * r;
  float y1 = (KP_FMAF(-qh, y0, mh) + KP_FMAF(-ql, y0, ml)) * r;
  float y = KP_FMAF(g, y0, g * y1) * down;
  float d = x - -0x1.31432cp+0f;
  float p = 0.00109439681f;
  p = KP_FMAF(p, d, -0.00333365635f);
  p = KP_FMAF(p, d, -0.0158210658f);
  p = KP_FMAF(p, d, -0.0202720333f);
  p = KP_FMAF(p, d, 0.0419078209f);
  p = KP_FMAF(p, d, 0.204731271f);
  float near_root = kp_pg_near_root(g, d, -0x1.a25b08p-29f, -0x1.bf3192p-55f, p, 0x1.115accp-2f, -0x1.65f11ep-27f);
  y = KP_FABSF(d) < 0.125f ? near_root : y;
  y = x > 20.0f ? g : y;
  return y + (x - x); /* +inf: NaN, as torch's inf * 0 */
}

#endif
