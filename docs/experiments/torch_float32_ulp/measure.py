"""torch's own float32 activations on a CUDA GPU, over every float32 input: the largest error in
ulps of the exact result, to set beside kplay's bounds (docs/activations.md) and measured errors
(docs/accuracy.md) where kplay's float32 transcendentals are slower than torch's at one wave
(docs/experiments/silu_one_wave). Every finite input; the reference is torch in float64 on the same GPU, each function
written where float64 keeps its relative accuracy (sigmoid from e^-|x|, gelu from erfc, softplus
from log1p(e^-|x|), tanhshrink's series near 0), so its own error is far below a float32 ulp. Reports the worst input over
all of them and over |x| <= 80 (torch's expf(-x) overflows below -88.7, where silu returns -0
for normal results and sigmoid 0 for subnormal ones), and how many inputs are over 1 and 2 ulp.

    python docs/experiments/torch_float32_ulp/measure.py [--acts silu,sigmoid] [--json FILE]
    python docs/experiments/torch_float32_ulp/measure.py --direction backward [--kplay] [--acts ...]

Backward: torch's own backward kernels (aten's silu_backward, elu_backward, gelu_backward, ...)
with a gradient per input drawn as `kplay check` draws its own (mixed signs, magnitudes 0.25 to 8),
against g f'(x) in float64; judged, as `kplay check` judges, where that exact result is a normal
float32. --kplay measures kplay's accuracy=torch kernel the same way, on the same inputs and
gradients (the wheel installed), beside torch's.
"""
import argparse
import json
import math

import torch
import torch.nn.functional as F

D = torch.float64


def _sigmoid64(x):
    e = torch.exp(-x.abs())
    return torch.where(x >= 0, 1 / (1 + e), e / (1 + e))


def _softplus64(x):
    return torch.log1p(torch.exp(-x.abs())) + x.clamp_min(0)


def _gelu_tanh64(x):  # 0.5 x (1 + tanh(u)) = x sigmoid(2u), no cancellation
    u = math.sqrt(2 / math.pi) * (x + 0.044715 * x * x * x)
    return x * _sigmoid64(2 * u)


def _tanhshrink64(x):  # x - tanh(x) cancels for small x: its series there
    s = x * x
    series = x * s * (1 / 3 + s * (-2 / 15 + s * (17 / 315 + s * (-62 / 2835 + s * 1382 / 155925))))
    return torch.where(x.abs() < 0.1, series, x - torch.tanh(x))


# name: (torch's float32 function, a float64 reference)
CASES = {
    "silu": (F.silu, lambda x: x * _sigmoid64(x)),
    "sigmoid": (torch.sigmoid, _sigmoid64),
    "tanh": (torch.tanh, torch.tanh),
    "softplus": (F.softplus, _softplus64),
    "logsigmoid": (F.logsigmoid, lambda x: -_softplus64(-x)),
    "mish": (F.mish, lambda x: x * torch.tanh(_softplus64(x))),
    "tanhshrink": (F.tanhshrink, _tanhshrink64),
    "elu": (F.elu, lambda x: torch.where(x > 0, x, torch.expm1(x))),
    "selu": (F.selu, lambda x: 1.0507009873554804934193349852946 *
             torch.where(x > 0, x, 1.6732632423543772848170429916717 * torch.expm1(x))),
    "gelu": (F.gelu, lambda x: 0.5 * x * torch.special.erfc(-x / math.sqrt(2))),
    "gelu(approximate=tanh)": (lambda x: F.gelu(x, approximate="tanh"), _gelu_tanh64),
}


def _sig64(x):  # sigmoid(x), sigmoid(-x) without cancellation
    s = _sigmoid64(x)
    return s, _sigmoid64(-x)


def _silu_grad64(x):
    s, sm = _sig64(x)
    return s * (1 + x * sm)


def _gelu_grad64(x):
    return 0.5 * torch.special.erfc(-x / math.sqrt(2)) + x * torch.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)


def _gelu_tanh_grad64(x):  # s + 2 x s (1 - s) u', s = sigmoid(2u)
    u = math.sqrt(2 / math.pi) * (x + 0.044715 * x * x * x)
    s, sm = _sig64(2 * u)
    return s + 2 * x * s * sm * math.sqrt(2 / math.pi) * (1 + 3 * 0.044715 * x * x)


def _mish_grad64(x):  # t + x s sech^2(softplus x), with n = e^x (e^x + 2): t = n / (n + 2), sech^2 = 4 (n + 1) / (n + 2)^2
    e = torch.exp(x.clamp(max=300.0))
    n = e * (e + 2)
    d = n + 2
    return torch.where(x > 300, 1.0, n / d + x * _sigmoid64(x) * (4 * (n + 1) / d / d))


_LAMBDA, _ALPHA = 1.0507009873554804934193349852946, 1.6732632423543772848170429916717
_A = torch.ops.aten
# name: (torch's float32 backward kernel (g, x), f'(x) in float64); each at its default parameters
BACKWARD = {
    "silu": (_A.silu_backward, _silu_grad64),
    "elu": (lambda g, x: _A.elu_backward(g, 1.0, 1.0, 1.0, False, x), lambda x: torch.where(x > 0, 1.0, torch.exp(x))),
    "celu": (lambda g, x: _A.elu_backward(g, 1.0, 1.0, 1.0, False, x), lambda x: torch.where(x > 0, 1.0, torch.exp(x))),
    "selu": (lambda g, x: _A.elu_backward(g, _ALPHA, _LAMBDA, 1.0, False, x),
             lambda x: torch.where(x > 0, _LAMBDA, _LAMBDA * _ALPHA * torch.exp(x))),
    "gelu": (lambda g, x: _A.gelu_backward(g, x, approximate="none"), _gelu_grad64),
    "gelu(approximate=tanh)": (lambda g, x: _A.gelu_backward(g, x, approximate="tanh"), _gelu_tanh_grad64),
    "softplus": (lambda g, x: _A.softplus_backward(g, x, 1.0, 20.0),
                 lambda x: torch.where(x > 20, 1.0, _sigmoid64(x))),
    "logsigmoid": (lambda g, x: _A.log_sigmoid_backward(g, x, _A.log_sigmoid_forward(x)[1]),
                   lambda x: _sigmoid64(-x)),
    "mish": (_A.mish_backward, _mish_grad64),
}


def _gradients(start, n):
    """mixed signs, magnitudes 2^k (1 + u) for k in -2..2, u in [0, 1): kplay check's kind"""
    gen = torch.Generator(device="cuda").manual_seed(start)
    u = torch.rand(n, device="cuda", generator=gen, dtype=D)
    k = torch.randint(-2, 3, (n,), device="cuda", generator=gen).to(D)
    sign = torch.where(torch.rand(n, device="cuda", generator=gen) < 0.5, -1.0, 1.0).to(D)
    return (sign * torch.exp2(k) * (1 + u)).to(torch.float32)


def _kplay_backward(name):
    import kplay.torch as kt

    def grad(g, x):
        xr = x.detach().requires_grad_()
        y = kt.activation(xr, name.replace(")", ", accuracy=torch)") if "(" in name else name + "(accuracy=torch)")
        return torch.autograd.grad(y, xr, g)[0]
    return grad


def measure_backward(name, with_kplay, chunk=1 << 27):
    torch_fn, ref_fn = BACKWARD[name]
    fns = {"torch": torch_fn}
    if with_kplay:
        fns["kplay"] = _kplay_backward(name)
    worst = {k: (0.0, 0.0) for k in fns}
    over2 = {k: 0 for k in fns}
    for start in range(0, 1 << 32, chunk):
        bits = torch.arange(start, start + chunk, device="cuda", dtype=torch.int64)
        x = (bits - (1 << 32) * (bits >= (1 << 31))).to(torch.int32).view(torch.float32)
        g = _gradients(start, chunk)
        ref = g.to(D) * ref_fn(x.to(D))
        judged = torch.isfinite(x) & (ref.abs() >= 2.0**-126)  # kplay check judges normal results
        for k, fn in fns.items():
            e = torch.where(judged, ulps(fn(g, x), ref), torch.zeros_like(ref))
            over2[k] += int((e > 2).sum())
            i = int(torch.argmax(e))
            if float(e[i]) > worst[k][0]:
                worst[k] = (float(e[i]), float(x[i]))
    return {"activation": name, **{f"{k}_max_ulp": worst[k][0] for k in fns}, **{f"{k}_at": worst[k][1] for k in fns},
            **{f"{k}_over_2_ulp": over2[k] for k in fns}}


def ulps(y, ref):
    """|y - ref| in ulps of the float32 result ref (2^-149 below the normal range); infinite where
    exactly one is NaN, 0 where both are, or where y is the infinity that ref rounds to."""
    a = ref.abs()
    e = torch.floor(torch.log2(a.clamp_min(2.0**-126)))
    ulp = torch.exp2(e - 23)
    err = (y.to(D) - ref).abs() / ulp
    both_nan = torch.isnan(y) & torch.isnan(ref)
    same = (y.to(D) == ref) | (torch.isinf(y) & (y == ref.to(torch.float32)))  # ref rounds to inf
    err = torch.where(both_nan | same, torch.zeros_like(err), err)
    return torch.where(torch.isnan(err), torch.full_like(err, float("inf")), err)


def measure(name, chunk=1 << 28):
    f32, f64 = CASES[name]
    worst = {"all": (0.0, 0.0), "|x|<=80": (0.0, 0.0)}
    over1 = over2 = 0
    for start in range(0, 1 << 32, chunk):
        bits = torch.arange(start, start + chunk, device="cuda", dtype=torch.int64)
        x = (bits - (1 << 32) * (bits >= (1 << 31))).to(torch.int32).view(torch.float32)
        e = ulps(f32(x), f64(x.to(D)))
        e = torch.where(torch.isfinite(x), e, torch.zeros_like(e))  # NaN and infinities: docs/activations.md
        over1 += int((e > 1).sum())
        over2 += int((e > 2).sum())
        for key, mask in (("all", None), ("|x|<=80", x.abs() <= 80)):
            m = e if mask is None else torch.where(mask, e, torch.zeros_like(e))
            i = int(torch.argmax(m))
            if float(m[i]) > worst[key][0]:
                worst[key] = (float(m[i]), float(x[i]))
    return {"activation": name, "max_ulp": worst["all"][0], "at": worst["all"][1],
            "max_ulp_abs_x_le_80": worst["|x|<=80"][0], "at_abs_x_le_80": worst["|x|<=80"][1],
            "inputs_over_1_ulp": over1, "inputs_over_2_ulp": over2}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--acts", default=",".join(CASES))
    ap.add_argument("--json")
    ap.add_argument("--direction", choices=["forward", "backward"], default="forward")
    ap.add_argument("--kplay", action="store_true", help="backward: kplay's accuracy=torch kernel beside torch's")
    args = ap.parse_args()
    rows = []
    if args.direction == "backward":
        acts = args.acts if args.acts != ",".join(CASES) else ",".join(BACKWARD)
        print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}: float32 backward, every input")
        for name in acts.split(","):
            r = measure_backward(name, args.kplay)
            rows.append(r)
            print(" ".join(f"{k}={v:.6g}" if isinstance(v, float) else f"{k}={v}" for k, v in r.items()), flush=True)
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows}, f, indent=1)
        return
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}: torch's float32 activations, every input")
    print(f"{'activation':24s} {'max ulp':>12s} {'at':>12s} {'|x|<=80':>9s} {'at':>12s} {'>1 ulp':>11s} {'>2 ulp':>11s}")
    for name in args.acts.split(","):
        r = measure(name)
        rows.append(r)
        print(f"{name:24s} {r['max_ulp']:12.4g} {r['at']:12.6g} {r['max_ulp_abs_x_le_80']:9.4g} "
              f"{r['at_abs_x_le_80']:12.6g} {r['inputs_over_1_ulp']:11d} {r['inputs_over_2_ulp']:11d}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
