"""Fits the float32 polynomial coefficients of templates/common/precise_math.h and f32_math.h (dev
tool, needs mpmath). Least squares on Chebyshev nodes, relative weighting; prints float-rounded
coefficients.
Usage: python3 tools/numerics/fit_poly.py [logsigmoid]
  logsigmoid: f32_math.h's 2 Q(w) of kp_f_logsigmoid, weighted by what an error of Q costs
  log1p(e) = 2 v (1 + w Q(w)): the relative error of 1 + w Q"""
import mpmath as mp
import struct, sys
mp.mp.dps = 50

def f32(v):
    return struct.unpack('f', struct.pack('f', float(v)))[0]

def fit(fun, a, b, deg, n=400):
    xs = [ (a+b)/2 + (b-a)/2*mp.cos(mp.pi*(i+0.5)/n) for i in range(n)]
    ys = [fun(x) for x in xs]
    A = mp.matrix(n, deg+1); y = mp.matrix(n, 1)
    for i,x in enumerate(xs):
        for j in range(deg+1): A[i,j] = x**j / ys[i]
        y[i] = 1
    c = mp.lu_solve(A.T*A, A.T*y)
    cs = [f32(c[j]) for j in range(deg+1)]
    err = max(abs(sum(mp.mpf(cs[j])*x**j for j in range(deg+1))/fun(x)-1) for x in mp.linspace(a,b,2001))
    return cs, err

def P(r):  # (e^r - 1 - r - r^2/2) / (r^3/2)
    if abs(r) < mp.mpf('1e-20'): return mp.mpf(1)/3
    return (mp.exp(r)-1-r-r*r/2)/(r**3/2)

if __name__ == '__main__' and sys.argv[1:] != ['logsigmoid']:
    h = mp.log(2)/2 + mp.mpf('1e-4')
    for d in (3,4,5):
        cs, err = fit(P, -h, h, d)
        print('expm1 P deg', d, 'rel err %.3g (2^%.1f)' % (err, mp.log(err,2)), [ '%.9g' % c for c in cs])

def Q_log1p(w):  # (atanh(s) - s) / s^3 with w = s^2
    if w < mp.mpf('1e-30'): return mp.mpf(1)/3
    s = mp.sqrt(w); return (mp.atanh(s)-s)/s**3

def T_tanhshrink(w):  # (x - tanh x) / x^3 with w = x^2
    if w < mp.mpf('1e-30'): return mp.mpf(1)/3
    x = mp.sqrt(w); return (x-mp.tanh(x))/x**3

def Phi_erfc(t):  # (1 + 2z) e^(z^2) erfc(z) with t = (z - 2) / (z + 2)
    z = 2*(1+t)/(1-t); return (1+2*z)*mp.exp(z*z)*mp.erfc(z)

def fit_log1p_lean(deg, n=300):
    """2 Q on [0, 1/9], minimizing w (Q_fit - Q) / (1 + w Q); returns the float coefficients of 2 Q
    (lowest first) and the largest relative error of 1 + w Q on a fine grid."""
    a, b = mp.mpf(0), mp.mpf(1)/9
    xs = [(a+b)/2 + (b-a)/2*mp.cos(mp.pi*(i+0.5)/n) for i in range(n)]
    A = mp.matrix(n, deg+1); y = mp.matrix(n, 1)
    for i, w in enumerate(xs):
        wt = w / (1 + w*Q_log1p(w))
        for j in range(deg+1): A[i,j] = w**j * wt
        y[i] = Q_log1p(w) * wt
    c = mp.lu_solve(A.T*A, A.T*y)
    cs = [f32(c[j]) for j in range(deg+1)]
    err = max(abs(w*(sum(mp.mpf(cs[j])*w**j for j in range(deg+1)) - Q_log1p(w))/(1 + w*Q_log1p(w)))
              for w in mp.linspace(a, b, 3001))
    return [f32(2*c) for c in cs], err

if __name__ == '__main__' and sys.argv[1:] == ['logsigmoid']:
    for d in (3,4):
        cs, err = fit_log1p_lean(d)
        print('logsigmoid 2Q deg', d, 'rel err %.3g (2^%.1f)' % (err, mp.log(err,2)), [repr(c) for c in cs])
elif __name__ == '__main__':
    for d in (4,5,6):
        cs, err = fit(Q_log1p, mp.mpf(0), mp.mpf(1)/9, d)
        print('log1p Q deg', d, 'rel err 2^%.1f' % mp.log(err,2), ['%.9g' % c for c in cs])
    for d in (5,6,7):
        cs, err = fit(T_tanhshrink, mp.mpf(0), mp.mpf('0.25'), d)
        print('tanhshrink T deg', d, 'rel err 2^%.1f' % mp.log(err,2), ['%.9g' % c for c in cs])
    for d in (10,12,14):
        cs, err = fit(Phi_erfc, mp.mpf(-1), mp.mpf(10)/14+mp.mpf('0.001'), d, n=600)
        print('erfc Phi deg', d, 'rel err 2^%.1f' % mp.log(err,2), ['%.9g' % c for c in cs])
