"""Near-root polynomials of templates/common/precise_grad.h (dev tool, needs mpmath).
For each derivative f' with a root x0 (x0 = X0_HI + X0_LO + X0_LO2, three floats) it fits
q(d) = f'(X0_HI + d) / (X0_HI + d - x0) on |d| <= w (d = x - X0_HI is exact in float), so that
f'(x) = (d - X0_LO - X0_LO2) q(d); c0 is printed as a float pair (the last Horner step is float-float).
Usage: python3 tools/numerics/fit_grad_roots.py   (imports fit_poly.py from its own folder)"""
import mpmath as mp
from fit_poly import f32
mp.mp.dps = 40

B = mp.sqrt(2 / mp.pi)
K = mp.mpf('0.044715')

def sig(z): return 1 / (1 + mp.exp(-z))
def silu_d(x): s = sig(x); return s * (1 + x * (1 - s))
def gelu_d(x): return mp.ncdf(x) + x * mp.npdf(x)
def gelu_tanh_d(x):
    t = mp.tanh(B * (x + K * x**3))
    return (1 + t) / 2 + x / 2 * (1 - t * t) * B * (1 + 3 * K * x * x)
def mish_d(x):
    t = mp.tanh(mp.log1p(mp.exp(x)))
    return t + x * sig(x) * (1 - t * t)

def fit(fun, x0_guess, w, deg, n=120):
    x0 = mp.findroot(fun, x0_guess)
    hi = f32(x0); lo = f32(x0 - hi); lo2 = f32(x0 - hi - lo)
    q = lambda d: fun(hi + d) / (hi + d - x0)
    xs = [w * mp.cos(mp.pi * (i + 0.5) / n) for i in range(n)]
    A = mp.matrix(n, deg + 1); y = mp.matrix(n, 1)
    for i, d in enumerate(xs):
        v = q(d)
        for j in range(deg + 1): A[i, j] = d**j / v
        y[i] = 1
    c = mp.lu_solve(A.T * A, A.T * y)
    cs = [f32(c[j]) for j in range(deg + 1)]
    c0lo = f32(c[0] - cs[0])
    ev = lambda d: mp.mpf(cs[0]) + c0lo + sum(mp.mpf(cs[j]) * d**j for j in range(1, deg + 1))
    err = max(abs(ev(d) / q(d) - 1) for d in mp.linspace(-w, w, 801))
    return hi, lo, lo2, cs, c0lo, err

if __name__ == '__main__':
    for name, fun, g, w, deg in [('silu', silu_d, -1.28, 1 / 16, 5), ('gelu', gelu_d, -0.75, 0.25, 7),
                                 ('gelu_tanh', gelu_tanh_d, -0.75, 0.125, 6), ('mish', mish_d, -1.19, 0.125, 6)]:
        hi, lo, lo2, cs, c0lo, err = fit(fun, g, w, deg)
        print('%s: X0 %s %s %s  w %g deg %d rel err 2^%.1f' % (name, float.hex(hi), float.hex(lo), float.hex(lo2), w, deg, mp.log(err, 2)))
        print('  c0 %s + %s' % (float.hex(cs[0]), float.hex(c0lo)))
        print('  c1.. (high first): ' + ', '.join('%.9g' % c for c in reversed(cs[1:])))
