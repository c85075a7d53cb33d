"""The CPU kernels of kplay.torch's operators: torch's own computation of each activation, so that a
model after replace_activations still runs on CPU tensors (evaluation, export, tests) with the
outputs and gradients it had before the swap. kplay.torch registers them (torch.library) for
every kplay op, over the C++ extension's and over the Python operators alike; the CUDA and
Meta (fake) kernels stay theirs, and so does autograd (the saved tensor of the registry's policy,
kplay/torch.py's notes).

Forward is torch.nn.functional's function with the activation's parameters (the expression of
transformers' module for the two torch has no function for: relu2, quick_gelu). Backward is the
derivative torch's autograd computes for that function: aten's *_backward op where torch has one
(what autograd itself calls), from the saved input or from the saved output as the op is asked;
the chain rule of torch's own formulas for the composed ones (softsign, tanhshrink, relu2,
quick_gelu, and act(a) * b of the gated ops). Autograd cannot run inside a kernel (the dispatcher
excludes it there), so each chain is written out, in the order torch's derivatives compute it.
A backward from the output that torch has no op for (softsign, logsigmoid, softshrink, ...: torch
saves their input) is kplay's formula (kplay/_torch_decomp.py), in float32 for 16-bit types.

User activations (a snippet of code) have no torch function: on CPU tensors they raise
kplay.UnsupportedError. RReLU in training draws its slopes with torch's CPU generator seeded from
the op's seed and offset, and backward draws them again: uniform in [lower, upper] as on CUDA,
but not the CUDA kernel's draws.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor

from . import _core
from . import _torch_decomp
from ._slope import prelu_channels

A = torch.ops.aten
_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64)
_SELU_ALPHA = 1.6732632423543772848170429916717  # aten's selu: elu(x, alpha, scale)
_SELU_SCALE = 1.0507009873554804934193349852946

P = Dict[str, Any]

# name -> forward(x, p): what the torch module kplay replaces computes.
FORWARD: Dict[str, Callable[[Tensor, P], Tensor]] = {
    "relu": lambda x, p: F.relu(x),
    "relu6": lambda x, p: F.relu6(x),
    "relu2": lambda x, p: torch.square(F.relu(x)),  # transformers' ReLUSquaredActivation
    "leaky_relu": lambda x, p: F.leaky_relu(x, p["negative_slope"]),
    "rrelu": lambda x, p: F.rrelu(x, p["lower"], p["upper"], training=False),
    "elu": lambda x, p: F.elu(x, p["alpha"]),
    "celu": lambda x, p: F.celu(x, p["alpha"]),
    "selu": lambda x, p: F.selu(x),
    "gelu": lambda x, p: F.gelu(x, approximate=p["approximate"]),
    "silu": lambda x, p: F.silu(x),
    "quick_gelu": lambda x, p: x * torch.sigmoid(p["beta"] * x),  # transformers' QuickGELUActivation
    "mish": lambda x, p: F.mish(x),
    "softplus": lambda x, p: F.softplus(x, p["beta"], p["threshold"]),
    "softsign": lambda x, p: F.softsign(x),
    "sigmoid": lambda x, p: torch.sigmoid(x),
    "tanh": lambda x, p: torch.tanh(x),
    "hardtanh": lambda x, p: F.hardtanh(x, p["min_val"], p["max_val"]),
    "hardsigmoid": lambda x, p: F.hardsigmoid(x),
    "hardswish": lambda x, p: F.hardswish(x),
    "logsigmoid": lambda x, p: F.logsigmoid(x),
    "tanhshrink": lambda x, p: F.tanhshrink(x),
    "softshrink": lambda x, p: F.softshrink(x, p["lambd"]),
    "hardshrink": lambda x, p: F.hardshrink(x, p["lambd"]),
    "threshold": lambda x, p: F.threshold(x, p["threshold"], p["value"]),
}


def _celu_input_scale(p: P) -> float:
    return 1.0 / float(torch.tensor(p["alpha"], dtype=torch.float32))  # torch's celu derivative: 1 / float(alpha)


def _relu2_backward(g: Tensor, x: Tensor, p: P) -> Tensor:
    r = F.relu(x)  # square(r) = pow(r, 2): pow's derivative g * (2 * r^1), then relu's from its result
    return A.threshold_backward(g * (2.0 * r), r, 0)


def _quick_gelu_backward(g: Tensor, x: Tensor, p: P) -> Tensor:
    s = torch.sigmoid(p["beta"] * x)  # x * s: mul's two derivatives, s's through sigmoid and beta * x
    return g * s + A.sigmoid_backward(g * x, s) * p["beta"]


def _softsign_backward(g: Tensor, x: Tensor, p: P) -> Tensor:
    d = x.abs() + 1  # x / d: div's derivatives for its numerator and (through abs) its denominator
    return g / d + (-g * ((x / d) / d)) * x.sgn()


def _tanhshrink_backward(g: Tensor, x: Tensor, p: P) -> Tensor:
    return g + A.tanh_backward(-g, torch.tanh(x))  # x - tanh(x)


def _logsigmoid_backward(g: Tensor, x: Tensor, p: P) -> Tensor:
    _, buffer = A.log_sigmoid_forward(x)
    return A.log_sigmoid_backward(g, x, buffer)


# name -> backward(grad, x, p) from the saved input.
BACKWARD_FROM_INPUT: Dict[str, Callable[[Tensor, Tensor, P], Tensor]] = {
    "relu": lambda g, x, p: A.threshold_backward(g, x, 0),
    "relu6": lambda g, x, p: A.hardtanh_backward(g, x, 0.0, 6.0),
    "relu2": _relu2_backward,
    "leaky_relu": lambda g, x, p: A.leaky_relu_backward(g, x, p["negative_slope"], False),
    "rrelu": lambda g, x, p: A.leaky_relu_backward(g, x, (p["lower"] + p["upper"]) / 2, False),
    "elu": lambda g, x, p: A.elu_backward(g, p["alpha"], 1, 1, False, x),
    "celu": lambda g, x, p: A.elu_backward(g, p["alpha"], 1, _celu_input_scale(p), False, x),
    "selu": lambda g, x, p: A.elu_backward(g, _SELU_ALPHA, _SELU_SCALE, 1, False, x),
    "gelu": lambda g, x, p: A.gelu_backward(g, x, approximate=p["approximate"]),
    "silu": lambda g, x, p: A.silu_backward(g, x),
    "quick_gelu": _quick_gelu_backward,
    "mish": lambda g, x, p: A.mish_backward(g, x),
    "softplus": lambda g, x, p: A.softplus_backward(g, x, p["beta"], p["threshold"]),
    "softsign": _softsign_backward,
    "sigmoid": lambda g, x, p: A.sigmoid_backward(g, torch.sigmoid(x)),
    "tanh": lambda g, x, p: A.tanh_backward(g, torch.tanh(x)),
    "hardtanh": lambda g, x, p: A.hardtanh_backward(g, x, p["min_val"], p["max_val"]),
    "hardsigmoid": lambda g, x, p: A.hardsigmoid_backward(g, x),
    "hardswish": lambda g, x, p: A.hardswish_backward(g, x),
    "logsigmoid": _logsigmoid_backward,
    "tanhshrink": _tanhshrink_backward,
    "softshrink": lambda g, x, p: A.softshrink_backward(g, x, p["lambd"]),
    "hardshrink": lambda g, x, p: A.hardshrink_backward(g, x, p["lambd"]),
    "threshold": lambda g, x, p: A.threshold_backward(g, x, p["threshold"]),
}

# name -> backward(grad, y, p) from the saved output, where torch has the op (its in-place forms
# and sigmoid and tanh save their result). The piecewise-linear ones read only which piece y is
# on, which is x's piece.
BACKWARD_FROM_OUTPUT: Dict[str, Callable[[Tensor, Tensor, P], Tensor]] = {
    "relu": lambda g, y, p: A.threshold_backward(g, y, 0),
    "relu6": lambda g, y, p: A.hardtanh_backward(g, y, 0.0, 6.0),
    "leaky_relu": lambda g, y, p: A.leaky_relu_backward(g, y, p["negative_slope"], True),
    "rrelu": lambda g, y, p: A.leaky_relu_backward(g, y, (p["lower"] + p["upper"]) / 2, True),
    "elu": lambda g, y, p: A.elu_backward(g, p["alpha"], 1, 1, True, y),
    "celu": lambda g, y, p: A.elu_backward(g, p["alpha"], 1, _celu_input_scale(p), True, y),
    "selu": lambda g, y, p: A.elu_backward(g, _SELU_ALPHA, _SELU_SCALE, 1, True, y),
    "sigmoid": lambda g, y, p: A.sigmoid_backward(g, y),
    "tanh": lambda g, y, p: A.tanh_backward(g, y),
    "hardtanh": lambda g, y, p: A.hardtanh_backward(g, y, p["min_val"], p["max_val"]),
    "hardshrink": lambda g, y, p: A.hardshrink_backward(g, y, p["lambd"]),
}


def _check_dtype(t: Tensor, what: str) -> None:
    if t.dtype not in _DTYPES:
        raise _core.InvalidArgumentError(
            f"kplay.torch takes float32, float16, bfloat16 or float64 tensors; {what} is {t.dtype}")


def _parse(activation: str) -> Tuple[str, P]:
    """(name, parameters) of a built-in; kplay's error for a text it refuses, and UnsupportedError
    for a user activation, which has no torch function to run on the CPU."""
    parsed = _torch_decomp.parse(activation)
    if parsed is None:
        _core.supports_saved_output(activation)  # raises kplay's message for a text kplay refuses
        raise _core.UnsupportedError(
            f"'{activation}' is a user activation: kplay.torch runs it on CUDA tensors only (on the CPU it "
            "computes the built-in activations with torch's own functions)")
    return parsed


# ---- kplay::forward, forward_, backward ----------------------------------------------------------

def forward(x: Tensor, activation: str) -> Tensor:
    _check_dtype(x, "x")
    name, p = _parse(activation)
    if p.get("accuracy", "exact") != "exact" and x.dtype != torch.float32:  # as the CUDA kernels refuse it
        raise _core.InvalidArgumentError(
            f"accuracy={p['accuracy']} is a float32 tier; {x.dtype} kernels have one accuracy (drop it)")
    return FORWARD[name](x, p)


def forward_(x: Tensor, activation: str) -> None:
    x.copy_(forward(x, activation))


def backward(grad: Tensor, saved: Tensor, activation: str, saved_output: bool) -> Tensor:
    _check_dtype(saved, "saved")
    _check_dtype(grad, "grad")
    if grad.dtype != saved.dtype or grad.shape != saved.shape:
        raise _core.InvalidArgumentError(
            f"grad ({grad.dtype}, {tuple(grad.shape)}) and saved ({saved.dtype}, {tuple(saved.shape)}) must match")
    name, p = _parse(activation)
    if not saved_output:
        return BACKWARD_FROM_INPUT[name](grad, saved, p)
    if not _core.supports_saved_output(activation):
        raise _core.InvalidArgumentError(f"'{activation}' has no backward from its output; save its input")
    fn = BACKWARD_FROM_OUTPUT.get(name)
    if fn is not None:
        return fn(grad, saved, p)
    from_output = _torch_decomp.FORMULAS[name][2]
    assert from_output is not None  # kplay takes the output only where its formula has it
    compute = torch.float32 if saved.dtype in (torch.float16, torch.bfloat16) else saved.dtype
    return from_output(grad.to(compute), saved.to(compute), p).to(saved.dtype)


# ---- kplay::gated_forward, gated_backward: act(a) * b ---------------------------------------------

def _gated_operands(x: Tensor, b: Optional[Tensor]) -> Tuple[Tensor, Tensor]:
    _check_dtype(x, "a" if b is not None else "x")
    if x.dim() == 0:
        raise _core.InvalidArgumentError("a gated activation takes [..., 2d] or [..., d] tensors; x has no dimensions")
    if b is None:
        if x.shape[-1] % 2:
            raise _core.InvalidArgumentError(f"x's last dimension must be even ([..., 2d]: a is its first half, b its "
                                             f"second), got {x.shape[-1]}")
        d = x.shape[-1] // 2
        return x[..., :d], x[..., d:]
    if b.dtype != x.dtype:
        raise _core.InvalidArgumentError(f"a is {x.dtype} but b is {b.dtype}; kplay does not convert")
    if b.shape != x.shape:
        raise _core.InvalidArgumentError(f"a has shape {list(x.shape)} but b has shape {list(b.shape)}")
    return x, b


def gated_forward(x: Tensor, b: Optional[Tensor], activation: str, out_dtype: Optional[torch.dtype] = None,
                  scale: float = 1.0) -> Tensor:
    a, bb = _gated_operands(x, b)
    name, p = _parse(_torch_decomp._gated_inner(activation))
    if out_dtype is None or out_dtype == x.dtype:
        if scale != 1.0:
            raise _core.InvalidArgumentError(f"scale is for FP8 output (out_dtype torch.float8_e4m3fn or "
                                             f"torch.float8_e5m2); got scale {scale} without it")
        return FORWARD[name](a, p) * bb  # as a gated MLP computes act_fn(gate_proj(x)) * up_proj(x)
    if out_dtype not in (torch.float8_e4m3fn, torch.float8_e5m2):
        raise _core.InvalidArgumentError(f"out_dtype must be None, the input's dtype, torch.float8_e4m3fn or "
                                         f"torch.float8_e5m2; got {out_dtype}")
    if not 0 < scale <= 3.4e38:
        raise _core.InvalidArgumentError(f"the FP8 scale must be a finite number above 0 (got {scale})")
    top = torch.finfo(out_dtype).max  # saturating, as the kernel's conversion
    y = FORWARD[name](a.float(), p) * bb.float() / scale
    return y.clamp(-top, top).to(out_dtype)


def gated_backward(grad: Tensor, x: Tensor, b: Optional[Tensor], activation: str) -> List[Tensor]:
    a, bb = _gated_operands(x, b)
    _check_dtype(grad, "grad")
    if grad.dtype != x.dtype:
        raise _core.InvalidArgumentError(f"grad is {grad.dtype} but the inputs are {x.dtype}")
    if grad.shape != a.shape:
        raise _core.InvalidArgumentError(f"grad has shape {list(grad.shape)}; expected {list(a.shape)}")
    name, p = _parse(_torch_decomp._gated_inner(activation))
    # act(a) * b: mul's derivatives grad * b and grad * act(a), then act's from its input.
    grad_a = BACKWARD_FROM_INPUT[name](grad * bb, a, p)
    grad_b = grad * FORWARD[name](a, p)
    return [grad_a, grad_b] if b is not None else [torch.cat([grad_a, grad_b], dim=-1)]


# ---- kplay::prelu, prelu_backward, rrelu_train, rrelu_train_backward -------------------------------

def _prelu_weight(x: Tensor, weight: Tensor) -> Tensor:
    """weight shaped to broadcast over x, as torch's prelu shapes it before its kernel."""
    _check_dtype(x, "x")
    if weight.dtype != x.dtype:
        raise _core.InvalidArgumentError(f"prelu's weight is {weight.dtype} but x is {x.dtype}; kplay does not convert")
    prelu_channels(tuple(x.shape), weight.numel())
    if x.dim() == weight.dim():
        return weight
    return weight.reshape([weight.numel() if i == 1 else 1 for i in range(x.dim())])


def prelu(x: Tensor, weight: Tensor) -> Tensor:
    return A._prelu_kernel(x, _prelu_weight(x, weight))


def prelu_backward(grad: Tensor, x: Tensor, weight: Tensor) -> Tuple[Tensor, Tensor]:
    w = _prelu_weight(x, weight)
    if grad.shape != x.shape or grad.dtype != x.dtype:
        raise _core.InvalidArgumentError(
            f"grad ({grad.dtype}, {tuple(grad.shape)}) and x ({x.dtype}, {tuple(x.shape)}) must match")
    grad_x, grad_w = A._prelu_kernel_backward(grad, x, w)
    # x's shape, summed to the broadcast weight's as autograd's engine sums a broadcast input's gradient
    return grad_x, grad_w.sum_to_size(w.shape).reshape(weight.shape)


def _check_bounds(lower: float, upper: float) -> None:
    if not lower <= upper:
        raise _core.InvalidArgumentError(
            f"rrelu's lower ({lower}) must be <= upper ({upper}), as torch's rrelu requires")


def _rrelu_slopes(x: Tensor, lower: float, upper: float, seed: int, offset: int) -> Tensor:
    """Every element's slope, uniform in [lower, upper], the same for the same (seed, offset)."""
    generator = torch.Generator(device="cpu")
    generator.manual_seed((seed + offset * 0x9E3779B97F4A7C15) % 2**64)
    return torch.empty(x.shape, dtype=x.dtype).uniform_(lower, upper, generator=generator)


def rrelu_train(x: Tensor, lower: float, upper: float, seed: int, offset: int) -> Tensor:
    _check_bounds(lower, upper)
    _check_dtype(x, "x")
    return torch.where(x <= 0, x * _rrelu_slopes(x, lower, upper, seed, offset), x)  # torch's rrelu: x <= 0


def rrelu_train_backward(grad: Tensor, x: Tensor, lower: float, upper: float, seed: int, offset: int) -> Tensor:
    _check_bounds(lower, upper)
    _check_dtype(x, "x")
    if grad.shape != x.shape or grad.dtype != x.dtype:
        raise _core.InvalidArgumentError(
            f"grad ({grad.dtype}, {tuple(grad.shape)}) and x ({x.dtype}, {tuple(x.shape)}) must match")
    return torch.where(x <= 0, grad * _rrelu_slopes(x, lower, upper, seed, offset), grad)


KERNELS = {
    "forward": forward, "forward_": forward_, "backward": backward,
    "gated_forward": gated_forward, "gated_backward": gated_backward,
    "prelu": prelu, "prelu_backward": prelu_backward,
    "rrelu_train": rrelu_train, "rrelu_train_backward": rrelu_train_backward,
}


def register() -> None:
    """Registers the CPU kernel of every kplay op (once: kplay.torch calls it on import)."""
    for op, fn in KERNELS.items():
        torch.library.register_kernel(f"kplay::{op}", "cpu", fn)
