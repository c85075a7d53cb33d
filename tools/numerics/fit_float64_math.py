#!/usr/bin/env python3
"""Coefficients of templates/common/float64_math.h (float64 gelu, gelu', logsigmoid, softplus at
full precision) and their measured error. The polynomials are Chebyshev fits in mpmath at 50
digits (mp.chebyfit):
  exp:   e^r = 1 + r + r^2 P(r) on |r| <= ln2/2, degree 9;
  phi:   T(q) = R(a) (a + 6), R(a) = Phi(-a) exp(a^2/2), q = (a - 6) / (a + 6), a in [0, 38.7],
         degree 21;
  exph:  e^(-u/2) on |u| <= ln2 + 1e-3, degree 11 (gelu forward's exponential; gelu' keeps the
         expm1 form above);
  phi8:  T8(q) / 2, T8(q) = R(a) (a + 5), q = (a - 5) / (a + 5), a in [0, 8.5], degree 17 (gelu
         forward, which takes q = a (2 / (a + 5)) - 1 and R = (T8 / 2) (2 / (a + 5)));
  gelu_g: G(s) = R(a) a, s = 1 / a^2, a in [8.5, 38.7], degree 9 (gelu forward's tail);
  log1p: 2 atanh(s) = 2s + s z P(z), z = s^2 <= 0.1716^2, degree 6; the kernel takes h = 2s, so
         it stores P's coefficients times 2^-3 4^-k (exact).
Then it runs the kernel's algorithm step by step in double (each fma rounded once, the reciprocal
estimate 2^-21 off) on random inputs and prints the worst error in ulps against mpmath:
gelu everywhere, gelu' away from its root at -0.7518 (where the kernel, like torch's formula,
cancels). Usage: python3 tools/numerics/fit_float64_math.py [SAMPLES]   (needs mpmath; ~1 minute)"""
import math
import random
import sys

import mpmath as mp

mp.mp.dps = 50
SQRT2 = mp.sqrt(2)
K = 6
AMAX = mp.mpf(38.7)


def R(a):
    return mp.erfc(a / SQRT2) * mp.exp(a * a / 2) / 2


def fit(f, lo, hi, deg, scale=lambda x: 1):
    """Coefficients (lowest first, as doubles) and the max of |P - f| scale(x) on a grid (log2)."""
    c = [float(v) for v in mp.chebyfit(f, [lo, hi], deg + 1)][::-1]
    grid = [lo + (hi - lo) * mp.mpf(i) / 2000 for i in range(2001)]
    err = max(abs(mp.polyval(c[::-1], x) - f(x)) * scale(x) for x in grid)
    return c, float(mp.log(err, 2))


def fma(a, b, c):
    return float(mp.mpf(a) * mp.mpf(b) + mp.mpf(c))


def horner(c, x):
    p = c[-1]
    for v in reversed(c[:-1]):
        p = fma(p, x, v)
    return p


def main():
    h = mp.log(2) / 2 + mp.mpf("1e-6")
    exp_c, exp_err = fit(lambda r: (mp.exp(r) - 1 - r) / r**2 if r else mp.mpf(0.5), -h, h, 9, lambda r: r * r)
    qmax = (AMAX - K) / (AMAX + K)
    phi_c, phi_err = fit(lambda q: R(K * (1 + q) / (1 - q)) * (K * (1 + q) / (1 - q) + K), -1, qmax, 21)
    print(f"/* exp: abs 2^{exp_err:.1f} on e^r; phi: abs 2^{phi_err:.1f} on T */")
    print("kp_f64_exp_c[10] = {" + ", ".join(v.hex() for v in exp_c) + "};")
    print("kp_f64_phi_c[22] = {" + ", ".join(v.hex() for v in phi_c) + "};")
    hh = mp.log(2) + mp.mpf("1e-3")
    exph_c, exph_err = fit(lambda u: mp.exp(-u / 2), -hh, hh, 11)
    print(f"/* exph: abs 2^{exph_err:.1f} */")
    print("kp_f64_exph_c[12] = {" + ", ".join(v.hex() for v in exph_c) + "};")
    K8, A8 = 5, mp.mpf(8.5)
    phi8_c, phi8_err = fit(lambda q: R(K8 * (1 + q) / (1 - q)) * (K8 * (1 + q) / (1 - q) + K8), -1, (A8 - K8) / (A8 + K8), 17)
    g_c, g_err = fit(lambda s: R(1 / mp.sqrt(s)) / mp.sqrt(s), 1 / AMAX**2, 1 / A8**2, 9)
    print(f"/* phi8: abs 2^{phi8_err:.1f} on T8; gelu_g: abs 2^{g_err:.1f} on G */")
    print("kp_f64_phi8_c[18] = {" + ", ".join((v / 2).hex() for v in phi8_c) + "};")
    print("kp_f64_gelu_g_c[10] = {" + ", ".join(v.hex() for v in g_c) + "};")
    smax = mp.mpf(0.1716) + mp.mpf("1e-4")
    atanh_p = lambda z: 2 * (mp.atanh(mp.sqrt(z)) / mp.sqrt(z) - 1) / z if z else mp.mpf(2) / 3
    log1p_c, log1p_err = fit(atanh_p, 0, smax**2, 6, lambda z: z / 2)
    print(f"/* log1p: abs 2^{log1p_err:.1f} against 2s */")
    print("kp_f64_log1p_c[7] = {" + ", ".join((v / 8 / 4**k).hex() for k, v in enumerate(log1p_c)) + "};")

    log2e, ln2_hi = float(1 / mp.log(2)), float(mp.log(2))
    ln2_lo, shift = float(mp.log(2) - mp.mpf(ln2_hi)), 1.5 * 2.0**52
    inv_sqrt_2pi = float(1 / mp.sqrt(2 * mp.pi))

    def rcp(d):  # the hardware estimate (about 2^-20), then the cubic Newton step
        y = float(1 / mp.mpf(d)) * (1 + 2.0**-21)
        e = fma(-d, y, 1.0)
        return fma(y, fma(e, e, e), y)

    def parts(a):
        w = a * a
        wl = fma(a, a, -w)
        t = fma(w, -0.5 * log2e, shift)
        nd = t - shift
        z = fma(-nd, ln2_lo, fma(-nd, ln2_hi, -0.5 * w))
        z = fma(-0.5, wl, z)
        e = 1.0 + fma(z * z, horner(exp_c, z), z)
        rk = rcp(a + K)
        return e, horner(phi_c, (a - K) * rk) * rk, int(nd)

    def scale(v, n):
        return (v * 2.0 ** (n >> 1)) * 2.0 ** (n - (n >> 1))

    two_ln2_hi = 2 * ln2_hi
    two_ln2_lo = float(2 * mp.log(2) - mp.mpf(two_ln2_hi))

    def gelu(x):
        a = abs(x)
        if a >= 38.7 or x >= 8.5:
            return x if x > 0 else x * 0.0
        w = a * a
        t = fma(w, -0.5 * log2e, shift)
        nd = t - shift
        e = horner(exph_c, fma(nd, two_ln2_lo, fma(nd, two_ln2_hi, w)) + fma(a, a, -w))
        if a < 8.5:
            rk2 = 2.0 * rcp(a + K8)  # 2 / (a + K8): the exponent of the estimate plus one
            m = e * (horner([c / 2 for c in phi8_c], fma(a, rk2, -1.0)) * rk2) * 2.0 ** int(nd)
            return fma(-a, m, x if x >= 0 else -0.0)
        s = rcp(a * a)  # the tail, x <= -8.5
        m = e * (horner(g_c, s) * (a * s)) * 2.0 ** (int(nd) + 128)
        return (x * m) * 2.0**-128

    def gelu_grad(x):
        a = abs(x)
        e, r, n = parts(a)
        gs = e * fma(-a, inv_sqrt_2pi, r)
        s = scale(gs, n)
        return s if x < 0 else 1.0 - s

    def ulp(v):
        v = abs(v)
        return 2.0**-1074 if v < 2.0**-1022 else 2.0 ** (math.frexp(v)[1] - 53)

    def err(got, exact):
        return float(abs(mp.mpf(got) - exact)) / ulp(float(exact))

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    rng = random.Random(1)
    xs = [rng.uniform(-38.7, 38.7) for _ in range(n)] + [rng.uniform(-4, 4) for _ in range(n)]
    xs += [rng.uniform(-38.7, -30) for _ in range(n // 4)]
    xs += [rng.choice((-1, 1)) * 10 ** rng.uniform(-300, 0) for _ in range(n // 4)]
    worst_f = max((err(gelu(x), mp.mpf(x) * mp.erfc(-mp.mpf(x) / SQRT2) / 2), x) for x in xs)
    def grad_exact(x):
        x = mp.mpf(x)
        return mp.erfc(-x / SQRT2) / 2 + x * mp.exp(-x * x / 2) / mp.sqrt(2 * mp.pi)
    worst_b = max((err(gelu_grad(x), grad_exact(x)), x) for x in xs
                  if abs(x + 0.7518) > 0.15 and abs(x) < 38)
    print(f"gelu:  max {worst_f[0]:.2f} ulp at x = {worst_f[1]!r} ({len(xs)} inputs)")
    print(f"gelu': max {worst_b[0]:.2f} ulp at x = {worst_b[1]!r} (|x + 0.7518| > 0.15)")


if __name__ == "__main__":
    main()
