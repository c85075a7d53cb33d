"""The polynomial of silu_lean.h: (e^r - 1 - r) / r^2 ~ P(r) of degree 4 on |r| <= ln2/2 (the
reduced argument), weighted least squares on Chebyshev nodes so that the error counted is e^r's
relative one; prints P's float32 coefficients from r^0 up and that error in ulps (needs mpmath).
Usage: python3 docs/experiments/silu_one_wave/fit_lean.py"""
import struct

import mpmath as mp

mp.mp.dps = 40


def f32(v):
    return struct.unpack("f", struct.pack("f", float(v)))[0]


def q(r):
    return mp.mpf(1) / 2 if abs(r) < mp.mpf("1e-15") else (mp.exp(r) - 1 - r) / (r * r)


def main(deg=4, n=400):
    h = mp.log(2) / 2 + mp.mpf("1e-4")
    xs = [h * mp.cos(mp.pi * (i + 0.5) / n) for i in range(n)]
    a, y = mp.matrix(n, deg + 1), mp.matrix(n, 1)
    for i, x in enumerate(xs):
        w = x * x / mp.exp(x)  # an error dP in P is r^2 dP in e^r
        for j in range(deg + 1):
            a[i, j] = w * x**j
        y[i] = w * q(x)
    c = mp.lu_solve(a.T * a, a.T * y)
    cs = [f32(c[j]) for j in range(deg + 1)]
    err = max(abs((sum(mp.mpf(cs[j]) * x**j for j in range(deg + 1)) - q(x)) * x * x / mp.exp(x))
              for x in mp.linspace(-h, h, 2001))
    print(" ".join(repr(v) for v in cs), f"; e^r within {mp.nstr(err / 2**-24, 3)} ulp")


if __name__ == "__main__":
    main()
