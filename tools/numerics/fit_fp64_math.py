#!/usr/bin/env python3
"""Coefficients of templates/common/fp64_math.h: the float32 activations evaluated in double on
devices with fast FP64; and of kp_precise_gelu (precise_math.h, float alone), which needs this
script's rational fit. Each polynomial is fitted by weighted least squares on Chebyshev nodes
with Lawson reweighting (near-minimax) against mpmath at 40 digits, for relative error; the
script prints each fit's measured max error (log2) on a fine grid, then the C constants.
Usage: python3 tools/numerics/fit_fp64_math.py   (needs numpy, mpmath)"""
import mpmath as mp
import numpy as np

mp.mp.dps = 40


def fit(f, scale, lo, hi, deg, n=800, iters=12, odd_free=True):
    """Coefficients c[0..deg] of sum c_i x^i ~ f(x) minimising max |P - f| / |scale| on [lo, hi]."""
    k = np.arange(n)
    x = 0.5 * (lo + hi) + 0.5 * (hi - lo) * np.cos(np.pi * (k + 0.5) / n)
    y = np.array([float(f(mp.mpf(v))) for v in x])
    s = np.abs(np.array([float(scale(mp.mpf(v))) for v in x]))
    w = np.ones(n) / n
    for _ in range(iters):
        a = np.vander(x, deg + 1, increasing=True) / s[:, None] * np.sqrt(w)[:, None]
        c = np.linalg.lstsq(a, y / s * np.sqrt(w), rcond=None)[0]
        e = np.abs(np.polyval(c[::-1], x) - y) / s
        w = w * e
        w /= w.sum()
    xx = np.linspace(lo, hi, 4001)
    yy = np.array([float(f(mp.mpf(v))) for v in xx])
    ss = np.abs(np.array([float(scale(mp.mpf(v))) for v in xx]))
    err = np.max(np.abs(np.polyval(c[::-1], xx) - yy) / ss)
    return c, float(np.log2(err))


def show(name, c, err):
    print(f"/* {name}: max relative error 2^{err:.1f} */")
    print(", ".join(f"{float(v).hex()}" for v in c))


def expm1_poly():
    # expm1(r) = r + r^2 P(r) on |r| <= ln2/2 (+ a margin for the silu window); the error of
    # expm1 is r^2 dP, relative to expm1(r).
    h = float(mp.log(2) / 2) + 1e-3
    f = lambda r: (mp.expm1(r) - r) / r**2 if r != 0 else mp.mpf(0.5)
    rel = lambda r: mp.expm1(r) / r**2 if r != 0 else mp.mpf(1)
    c, e = fit(f, rel, -h, h, 5, iters=60)
    show("expm1: P(r), expm1(r) = r + r^2 P(r), |r| <= ln2/2", c, e)


def exp_polys():
    # e^r on |r| <= ln2/2 (kp_d_exp) as a direct polynomial: e^x needs no relative precision near
    # 0, so not the expm1 form. (gelu(tanh)'s 2^r is the hardware's MUFU.EX2, KP_EX2_APPROXF in
    # fp64_math.h: no fit.)
    h = float(mp.log(2) / 2) + 1e-3
    c, e = fit(mp.exp, mp.exp, -h, h, 6, iters=60)
    show("exp: E(r) = e^r, |r| <= ln2/2", c, e)


def silu_root():
    # f'(x) of silu has the factor 1 + x + e^x (x < 0), zero at X0: e^x = E0 e^t with t = x - X0
    # (exact in double for float x near X0) and 1 + x + e^x = D + t + E0 expm1(t).
    x0 = mp.findroot(lambda x: 1 + x + mp.exp(x), -1.28)
    x0d = float(x0)
    e0 = mp.exp(mp.mpf(x0d))
    d = 1 + mp.mpf(x0d) + e0
    print("/* silu: X0, E0 = e^X0, D = 1 + X0 + e^X0 */")
    print(x0d.hex(), float(e0).hex(), float(d).hex())


if __name__ == "__main__":
    expm1_poly()
    exp_polys()
    silu_root()


def rational_fit(f, scale, lo, hi, p, q, n=600, iters=40):
    """N (degree p) and D (degree q, D(0) = 1) with N/D ~ f minimising max |N/D - f| / |f| * scale
    on [lo, hi]: linearised least squares (N - f D ~ 0, weighted by 1/(f D_previous)) with Lawson
    reweighting towards the minimax."""
    k = np.arange(n)
    x = 0.5 * (lo + hi) + 0.5 * (hi - lo) * np.cos(np.pi * (k + 0.5) / n)
    y = np.array([float(f(mp.mpf(v))) for v in x])
    s = np.array([scale(v) for v in x])
    w = np.ones(n) / n
    den = np.ones(n)
    for _ in range(iters):
        a = np.hstack([np.vander(x, p + 1, increasing=True), -y[:, None] * np.vander(x, q + 1, increasing=True)[:, 1:]])
        wt = np.sqrt(w) * s / (np.abs(y) * den)
        c = np.linalg.lstsq(a * wt[:, None], y * wt, rcond=None)[0]
        num_c, den_c = c[: p + 1], np.concatenate([[1.0], c[p + 1 :]])
        den = np.polyval(den_c[::-1], x)
        e = np.abs(np.polyval(num_c[::-1], x) / den - y) / np.abs(y) * s
        w = w * e
        w /= w.sum()
    xx = np.linspace(lo, hi, 8001)
    yy = np.array([float(f(mp.mpf(v))) for v in xx])
    ss = np.array([scale(v) for v in xx])
    dd = np.polyval(den_c[::-1], xx)
    assert dd.min() > 0, "D has a root in the interval"
    err = np.max(np.abs(np.polyval(num_c[::-1], xx) / dd - yy) / np.abs(yy) * ss)
    return num_c, den_c, float(np.log2(err))


def gelu_exp():
    # exp(-w/2), w = x^2 exact: -w/2 = n ln2 + r, and e^r = E(z) with z = -2r = w + 2 n ln2, |z| <= ln2.
    h = float(mp.log(2)) + 1e-3
    f = lambda z: mp.exp(-z / 2)
    c, e = fit(f, f, -h, h, GELU_E_DEGREE)
    show(f"gelu: E(z) = e^(-z/2), |z| <= ln2, degree {GELU_E_DEGREE}", c, e)


def tail_scale(v):
    # Weight of a relative error where the float result |v| is subnormal: only 2^-149 absolute counts.
    return min(1.0, float(abs(v)) / 2.0**-126)


def gelu_float():
    # kp_precise_gelu (precise_math.h), float alone: Phi(-a) = exp(-a^2/2) / S(a), S(a) = 1 / R(a) =
    # 2 + S2PF a + a F(a), S2PF = sqrt(2 pi) rounded to float (so the kernel's constant is exact),
    # F = N / D, degrees 3 / 4; F's relative error counts in S by a F / S (its share), the weight here.
    # exp(-a^2/2) = 2^-n 2^g with 2^g from the hardware (MUFU.EX2, KP_EX2_APPROXF): no fit.
    s2pf = mp.mpf(float(np.float32(float(mp.sqrt(2 * mp.pi)))))
    r = lambda a: mp.erfc(a / mp.sqrt(2)) / 2 * mp.exp(a * a / 2)
    f = lambda a: (1 / r(a) - s2pf * a - 2) / a if a > 1e-6 else -(s2pf - 4 / mp.sqrt(2 * mp.pi))
    w = lambda a: float(abs(a * f(mp.mpf(a))) * r(mp.mpf(a))) + 1e-30
    num, den, e = rational_fit(f, w, 0.0, 14.5, 3, 4)
    show("gelu (float): F = N / D, N(a), a in [0, 14.5], degree 3, error weighted by a F / S", num, e)
    show("gelu (float): D(a), degree 4, D(0) = 1", den, e)


def gelu_root():
    # gelu'(-a) = exp(-a^2/2) G(a), G(a) = R(a) - a / sqrt(2 pi), vanishes at A0 = 0.7518: G = t K(a)
    # with t = a - A0 (as (a - A0hi) - A0lo) and K = M(a) / D(a) smooth through A0 (-> -1/sqrt(2 pi)).
    c2pi = 1 / mp.sqrt(2 * mp.pi)
    g = lambda a: mp.erfc(a / mp.sqrt(2)) / 2 * mp.exp(a * a / 2) - a * c2pi
    a0 = mp.findroot(g, 0.75)
    a0h = float(a0)
    a0l = float(a0 - mp.mpf(a0h))
    kf = lambda a: g(a) / (a - a0) if abs(a - a0) > 1e-25 else mp.diff(g, a0)
    sc = lambda a: tail_scale(mp.exp(-a * a / 2) * g(a)) if a > 1 else 1.0
    num, den, e = rational_fit(kf, sc, 0.0, 14.5, 5, 5)
    print("/* gelu: A0 = A0hi + A0lo, root of G */")
    print(a0h.hex(), a0l.hex())
    show("gelu: K = M / D, M(a), a in [0, 14.5], degree 5", num, e)
    show("gelu: D(a) of K, degree 5, D(0) = 1", den, e)


GELU_E_DEGREE = 6

if __name__ == "__main__":
    gelu_exp()
    gelu_float()
    gelu_root()


def log1p_rational():
    # log1p(w) for w = e^-|z| in [0, 1] (softplus and logsigmoid): w N(w) / D(w), relative.
    f = lambda w: mp.log1p(w) / w if w != 0 else mp.mpf(1)
    num, den, e = rational_fit(f, lambda v: 1.0, 0.0, 1.0, 2, 3, n=800)
    show("log1p: N(w), log1p(w) = w N / D, w in [0, 1], degree 2", num, e)
    show("log1p: D(w), degree 3, D(0) = 1", den, e)


def tanhshrink_rational():
    # x - tanh x = x^3 S(a), a = |x| in [0, 11] (beyond, tanh is +-1 to 2^-34 of the result):
    # S = (a - tanh a) / a^3 = N(a) / D(a), relative.
    f = lambda a: (a - mp.tanh(a)) / a**3 if a != 0 else mp.mpf(1) / 3
    num, den, e = rational_fit(f, lambda v: 1.0, 0.0, 11.0, 6, 7, n=600, iters=60)
    show("tanhshrink: N(a), x - tanh x = x^3 N / D, a in [0, 11], degree 6", num, e)
    show("tanhshrink: D(a), degree 7, D(0) = 1", den, e)



if __name__ == "__main__":
    log1p_rational()
    tanhshrink_rational()


def gelu_tanh_constants():
    # The forward's base-2 exponent: -|2u| log2(e) = -|x| v, v = C2L + C2KL x^2 (C2 = 2 sqrt(2/pi),
    # k = 0.044715, rounded as the kernel's doubles). gelu_tanh'(x) (kp_d_gelu_tanh_grad) uses the
    # same e = 2^w, w = x v, and h = 1 + e + xdu2, xdu2 = x (C2 + 3 C2 k x^2), which vanishes near
    # X1 = -0.7517. Within 0.2 of the float X1F: e = E1 2^d, d = x v - W1 (W1 = X1F v(X1F) as
    # hi + lo, E1 = 2^W1), and h = E1 m + ((xdu2 - C) + DELTA), m = 2^d - 1, C = -(1 + E1)
    # rounded and DELTA = 1 + E1 + C exactly: h's absolute error stays near 2^-52 where h
    # crosses zero. m = r Q(r) for |r| <= 1/2 (+ margin): relative precision as r -> 0.
    c2 = mp.mpf(float(2 * mp.sqrt(2 / mp.pi)))
    k = mp.mpf(0.044715)
    c2l = mp.mpf(float(c2 / mp.log(2)))
    c2kl = mp.mpf(float(c2 * k / mp.log(2)))
    print("/* gelu(tanh): C2 log2(e), C2 k log2(e) */")
    print(float(c2l).hex(), float(c2kl).hex())
    c23k = float(3 * c2 * k)
    h = lambda x: 1 + mp.power(2, x * (c2l + c2kl * x * x)) + x * (c2 + 3 * c2 * k * x * x)
    x1f = float(np.float32(float(mp.findroot(h, -0.75))))
    w1 = mp.mpf(x1f) * (c2l + c2kl * mp.mpf(x1f) ** 2)
    w1h = float(w1)
    w1l = float(w1 - mp.mpf(w1h))
    e1 = float(mp.power(2, w1))
    cc = float(-(1 + mp.mpf(e1)))
    delta = 1 + mp.mpf(e1) + mp.mpf(cc)
    assert float(delta) == delta
    print("/* gelu(tanh)': X1F, W1 hi and lo, E1, C, DELTA, 3 C2 k */")
    print(x1f.hex(), w1h.hex(), w1l.hex(), e1.hex(), cc.hex(), float(delta).hex(), c23k.hex())
    q = lambda r: (mp.power(2, r) - 1) / r if r != 0 else mp.log(2)
    c, e = fit(q, q, -0.5 - 2e-3, 0.5 + 2e-3, 6, iters=60)
    show("exp2m1: Q(r) = (2^r - 1) / r, |r| <= 1/2", c, e)


def mish_root():
    # mish'(x) = e h / d^2, e = e^x, d = e^2 + 2e + 2, h = P(e) + 4x (1 + e), P(e) = (e+2)(e^2+2e+2),
    # zero at X1: with e = E1 + eps (eps = E1 expm1(t), t = x - X1),
    # h = D1 + eps (A + eps (B + eps)) + 4 t (1 + e), A = P'(E1) + 4 X1, B = 3 E1 + 4, for every x
    # (eps = e - E1 away from X1). The kernel takes h / 4: it stores D1, A and B over 4.
    p = lambda e: (e + 2) * (e * e + 2 * e + 2)
    h = lambda x: p(mp.exp(x)) + 4 * x * (1 + mp.exp(x))
    x1 = float(mp.findroot(h, -1.19))
    e1 = mp.exp(mp.mpf(x1))
    d1 = p(e1) + 4 * x1 * (1 + e1)
    a = 3 * e1**2 + 8 * e1 + 6 + 4 * x1
    b = 3 * e1 + 4
    print("/* mish: X1, E1; D1, A, B over 4 */")
    print(x1.hex(), float(e1).hex(), float(d1 / 4).hex(), float(a / 4).hex(), float(b / 4).hex())


if __name__ == "__main__":
    gelu_tanh_constants()
    mish_root()
