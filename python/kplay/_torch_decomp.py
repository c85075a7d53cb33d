"""kplay's activation formulas in torch operations, handed to Inductor as decompositions of
kplay::forward and kplay::backward, so that torch.compile can fuse an activation with its
neighbours instead of calling kplay's kernel as an opaque op (kplay.torch.set_compile_mode).

The autograd structure stays kplay's: the graph AOTAutograd traces holds kplay::forward and
kplay::backward with the saved tensor the registry chose, and each is then replaced by its formula
here (forward; backward from the saved input or output), the formulas of templates/activations/.
float16 and bfloat16 are computed in float32 and rounded once to the dtype, as kplay's kernels
do; float32 and float64 in their own type.

The softmax family (kplay::softmax, kplay::softmax_backward) decomposes into torch's own softmax
ops in "decompose" mode, and in "auto" softmax's and softmin's 16-bit forward over rows of up to
SHORT_ROW elements (see its section below). Which graphs decompose
(kplay.torch.set_compile_mode):
  "kernel"     none: every call is kplay's kernel, with kplay's accuracy bounds.
  "decompose"  every built-in activation (user activations keep the kernel: their snippet has no
               torch formula); the bound is then Inductor's evaluation of the formula.
  "auto"       (default) the decomposition where it costs no accuracy: EXACT's activations in
               every dtype (selects and one rounding, the kernel's result), and every built-in
               in float16 and bfloat16 (float32 math rounded once to 16 bits, as the kernel); the
               kernel for float32 and float64 elsewhere, where kplay's bounds beat the formula's.
The mode is read when a graph is compiled, so graphs compiled before a change keep theirs (call
torch._dynamo.reset() to recompile them); a mode other than "auto" is appended to
torch.compiler.config.cache_key_tag, so that the on-disk caches (AOTAutograd's and Inductor's,
keyed on the graph before these decompositions) never hand one mode's compiled code to another.
"""
from __future__ import annotations

import math
import sys
from typing import Any, Callable, Dict, Optional, Tuple

import torch
from torch import Tensor

from . import _table
from ._softmax import check_family

MODES = ("kernel", "decompose", "auto")
_mode = "auto"

# The decomposition computes what the kernel does, rounding included: selects, and at most one
# rounding (x - lambd, x * slope, x * x), in every dtype.
EXACT = frozenset({"relu", "relu6", "relu2", "leaky_relu", "rrelu", "hardtanh", "threshold", "hardshrink",
                   "softshrink"})

_SELU_L = 1.0507009873554804934193349852946
_SELU_LA = 1.7580993408473768599402175208123
_SQRT1_2 = math.sqrt(0.5)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_SQRT_2_PI = math.sqrt(2.0 / math.pi)
_KAPPA = 0.044715


def _gelu_tanh_u(x: Tensor) -> Tensor:
    return _SQRT_2_PI * (x + _KAPPA * x * x * x)


def _gelu_backward(g: Tensor, x: Tensor, p: Dict[str, Any]) -> Tensor:
    if p["approximate"] == "tanh":
        t = torch.tanh(_gelu_tanh_u(x))
        return g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * _SQRT_2_PI * (1 + 3 * _KAPPA * x * x))
    return g * (0.5 * torch.erfc(-x * _SQRT1_2) + x * torch.exp(-0.5 * x * x) * _INV_SQRT_2PI)


def _silu_backward(g: Tensor, z: Tensor) -> Tensor:
    s = torch.sigmoid(z)
    return g * (s * (1 + z * (1 - s)))


def _mish_backward(g: Tensor, x: Tensor) -> Tensor:
    t = torch.tanh(torch.nn.functional.softplus(x))
    return g * (t + x * torch.sigmoid(x) * (1 - t * t))


def _zero(t: Tensor) -> Tensor:
    return torch.zeros_like(t)


Fwd = Callable[[Tensor, Dict[str, Any]], Tensor]
Bwd = Callable[[Tensor, Tensor, Dict[str, Any]], Tensor]

# name -> (forward(x, p), backward from the input (g, x, p), backward from the output (g, y, p) or
# None where the kernel alone has it). Each formula is its template's (templates/activations/).
FORMULAS: Dict[str, Tuple[Fwd, Bwd, Optional[Bwd]]] = {
    "relu": (lambda x, p: torch.relu(x),
             lambda g, x, p: torch.where(x > 0, g, _zero(g)),
             lambda g, y, p: torch.where(y > 0, g, _zero(g))),
    "relu6": (lambda x, p: torch.clamp(x, 0.0, 6.0),
              lambda g, x, p: torch.where((x > 0) & (x < 6), g, _zero(g)),
              lambda g, y, p: torch.where((y > 0) & (y < 6), g, _zero(g))),
    "relu2": (lambda x, p: torch.where(x > 0, x * x, torch.where(x != x, x, _zero(x))),
              lambda g, x, p: torch.where(x > 0, g * (2 * x), torch.where(x != x, x, _zero(g))),
              None),
    "leaky_relu": (lambda x, p: torch.where(x > 0, x, x * p["negative_slope"]),
                   lambda g, x, p: torch.where(x > 0, g, g * p["negative_slope"]),
                   lambda g, y, p: torch.where(y > 0, g, g * p["negative_slope"])),
    # rrelu in evaluation: leaky_relu with the mean slope, formed in double as the kernel's constant.
    "rrelu": (lambda x, p: torch.where(x > 0, x, x * ((p["lower"] + p["upper"]) / 2)),
              lambda g, x, p: torch.where(x > 0, g, g * ((p["lower"] + p["upper"]) / 2)),
              lambda g, y, p: torch.where(y > 0, g, g * ((p["lower"] + p["upper"]) / 2))),
    "elu": (lambda x, p: torch.where(x <= 0, p["alpha"] * torch.expm1(x), x),
            lambda g, x, p: torch.where(x <= 0, g * (p["alpha"] * torch.exp(x)), g),
            lambda g, y, p: torch.where(y <= 0, g * (y + p["alpha"]), g)),
    "celu": (lambda x, p: torch.where(x <= 0, p["alpha"] * torch.expm1(x / p["alpha"]), x),
             lambda g, x, p: torch.where(x <= 0, g * torch.exp(x / p["alpha"]), g),
             lambda g, y, p: torch.where(y <= 0, g * (y / p["alpha"] + 1), g)),
    "selu": (lambda x, p: torch.where(x > 0, _SELU_L * x, _SELU_LA * torch.expm1(x)),
             lambda g, x, p: torch.where(x <= 0, g * (_SELU_LA * torch.exp(x)), g * _SELU_L),
             lambda g, y, p: torch.where(y <= 0, g * (y + _SELU_LA), g * _SELU_L)),
    "gelu": (lambda x, p: (x * torch.sigmoid(2 * _gelu_tanh_u(x)) if p["approximate"] == "tanh"
                           else 0.5 * x * torch.erfc(-x * _SQRT1_2)),
             _gelu_backward, None),
    "silu": (lambda x, p: x * torch.sigmoid(x), lambda g, x, p: _silu_backward(g, x), None),
    "quick_gelu": (lambda x, p: x * torch.sigmoid(p["beta"] * x),
                   lambda g, x, p: _silu_backward(g, p["beta"] * x), None),
    "mish": (lambda x, p: x * torch.tanh(torch.nn.functional.softplus(x)), lambda g, x, p: _mish_backward(g, x), None),
    "softplus": (lambda x, p: torch.where(x * p["beta"] > p["threshold"], x,
                                          (torch.clamp_min(p["beta"] * x, 0)
                                           + torch.log1p(torch.exp(-torch.abs(p["beta"] * x)))) / p["beta"]),
                 lambda g, x, p: torch.where(x * p["beta"] > p["threshold"], g, g * torch.sigmoid(p["beta"] * x)),
                 None),
    "softsign": (lambda x, p: x / (1 + torch.abs(x)),
                 lambda g, x, p: g / ((1 + torch.abs(x)) * (1 + torch.abs(x))),
                 lambda g, y, p: g * ((1 - torch.abs(y)) * (1 - torch.abs(y)))),
    "sigmoid": (lambda x, p: torch.sigmoid(x),
                lambda g, x, p: g * torch.sigmoid(x) * (1 - torch.sigmoid(x)),
                lambda g, y, p: g * (y * (1 - y))),
    "tanh": (lambda x, p: torch.tanh(x),
             lambda g, x, p: g * (1 - torch.tanh(x) * torch.tanh(x)),
             lambda g, y, p: g * (1 - y * y)),
    "hardtanh": (lambda x, p: torch.clamp(x, p["min_val"], p["max_val"]),
                 lambda g, x, p: torch.where((x <= p["min_val"]) | (x >= p["max_val"]), _zero(g), g),
                 lambda g, y, p: torch.where((y <= p["min_val"]) | (y >= p["max_val"]), _zero(g), g)),
    "hardsigmoid": (lambda x, p: torch.clamp(x + 3, 0.0, 6.0) / 6,
                    lambda g, x, p: torch.where((x > -3) & (x < 3), g / 6, _zero(g)),
                    lambda g, y, p: torch.where((y > 0) & (y < 1), g / 6, _zero(g))),
    "hardswish": (lambda x, p: x * torch.clamp(x + 3, 0.0, 6.0) / 6,
                  lambda g, x, p: torch.where(x <= -3, _zero(g), torch.where(x < 3, g * ((2 * x + 3) / 6), g)),
                  None),
    "logsigmoid": (lambda x, p: torch.clamp_max(x, 0) - torch.log1p(torch.exp(-torch.abs(x))),
                   lambda g, x, p: g * torch.sigmoid(-x),
                   lambda g, y, p: g * -torch.expm1(y)),
    "tanhshrink": (lambda x, p: x - torch.tanh(x), lambda g, x, p: g * (torch.tanh(x) * torch.tanh(x)), None),
    "softshrink": (lambda x, p: torch.where(x > p["lambd"], x - p["lambd"],
                                            torch.where(x < -p["lambd"], x + p["lambd"], x * 0)),
                   lambda g, x, p: torch.where((x >= -p["lambd"]) & (x <= p["lambd"]), _zero(g), g),
                   lambda g, y, p: torch.where(y == 0, _zero(g), g)),
    "hardshrink": (lambda x, p: torch.where((x >= -p["lambd"]) & (x <= p["lambd"]), _zero(x), x),
                   lambda g, x, p: torch.where((x >= -p["lambd"]) & (x <= p["lambd"]), _zero(g), g),
                   lambda g, y, p: torch.where(y == 0, _zero(g), g)),
    "threshold": (lambda x, p: torch.where(x <= p["threshold"], torch.full_like(x, p["value"]), x),
                  lambda g, x, p: torch.where(x <= p["threshold"], _zero(g), g),
                  None),
}

_parsed: Dict[str, Optional[Tuple[str, Dict[str, Any]]]] = {}
_from_output: Dict[str, bool] = {}


def _kplay_takes(activation: str) -> bool:
    """Whether kplay accepts the text (parameters in range, e.g. softshrink's lambd >= 0): a text
    it refuses keeps the kernel, which raises kplay's message; no formula runs in its place.
    Remembers whether backward can start from the output."""
    from . import _core

    try:
        _from_output[activation] = bool(_core.supports_saved_output(activation))
    except _core.Error:
        return False
    return True


def parse(activation: str) -> Optional[Tuple[str, Dict[str, Any]]]:
    """'leaky_relu(negative_slope=0.2)' -> ('leaky_relu', {'negative_slope': 0.2}) with every
    parameter (defaults filled in); None for a user activation or a text kplay would refuse (the
    kernel then says why)."""
    if activation in _parsed:
        return _parsed[activation]
    result = None
    name, _, rest = activation.partition("(")
    name = name.strip()
    entry = _table.BY_ACTIVATION.get(name)
    if entry is not None and name in FORMULAS and (not rest or rest.rstrip().endswith(")")):
        values: Dict[str, Any] = {n: d for n, d in entry.params}
        options = dict(entry.options)  # kplay's own (accuracy): in the result only where given
        ok = True
        for item in filter(None, (s.strip() for s in rest.rstrip().rstrip(")").split(","))):
            key, eq, value = (s.strip() for s in item.partition("="))
            if not eq or (key not in values and key not in options):
                ok = False
                break
            default = values[key] if key in values else options[key]
            try:
                values[key] = float(value) if not isinstance(default, str) else value
            except ValueError:
                ok = False
                break
        if ok and all(v is not _table.REQUIRED for v in values.values()) and _kplay_takes(activation):
            result = (name, values)
    _parsed[activation] = result
    return result


_TAG = "|kplay.compile_mode="


def set_mode(mode: str) -> None:
    global _mode
    if mode not in MODES:
        from . import _core

        raise _core.InvalidArgumentError(f"compile mode must be one of {', '.join(MODES)}; got {mode!r}")
    _mode = mode
    config = torch.compiler.config
    base = config.cache_key_tag.split(_TAG)[0]
    config.cache_key_tag = base if mode == "auto" else f"{base}{_TAG}{mode}"


def mode() -> str:
    return _mode


@torch.compiler.assume_constant_result  # a constant of the graph when kplay.torch asks under torch.compile
def decomposes(activation: str, dtype: torch.dtype) -> bool:
    """Whether a compiled graph computes this activation with its formula (the mode's choice)."""
    if _mode == "kernel":
        return False
    parsed = parse(activation)
    if parsed is None:
        return False
    return _mode == "decompose" or parsed[0] in EXACT or dtype in (torch.float16, torch.bfloat16)


def _compute(t: Tensor) -> Tensor:
    return t.float() if t.dtype in (torch.float16, torch.bfloat16) else t


def forward(x: Tensor, activation: str) -> Any:
    if not decomposes(activation, x.dtype):
        return NotImplemented
    name, p = parse(activation)  # type: ignore[misc]
    return FORMULAS[name][0](_compute(x), p).to(x.dtype)


def backward(grad: Tensor, saved: Tensor, activation: str, saved_output: bool) -> Any:
    if not decomposes(activation, saved.dtype) or grad.dtype != saved.dtype:
        return NotImplemented
    name, p = parse(activation)  # type: ignore[misc]
    if saved_output and not _from_output[activation]:
        return NotImplemented  # kplay refuses this backward: the kernel op says so
    fn = FORMULAS[name][2] if saved_output else FORMULAS[name][1]
    if fn is None:
        return NotImplemented
    return fn(_compute(grad), _compute(saved), p).to(saved.dtype)


_registered = False


def register() -> None:
    """Adds forward and backward to Inductor's decomposition table (once; imports Inductor)."""
    global _registered
    if _registered:
        return
    from torch._inductor import decomposition as inductor

    from torch._inductor import lowering

    for op, fn in ((torch.ops.kplay.forward.default, forward), (torch.ops.kplay.backward.default, backward)):
        inductor.decompositions[op] = fn
    # Where the decomposition declines (NotImplemented: the kernel is kept), Inductor lowers the op
    # to a call of its kernel; made here, since Inductor makes no lowering of its own for an op
    # that is in its decomposition table. With the C++ extension, the call is the kernel's out=
    # form (_torch_inductor.py); with the Python operators, Inductor's fallback, the op itself.
    if hasattr(sys.modules.get("kplay._torch_ops"), "forward_out"):
        from . import _torch_inductor

        _torch_inductor.register(lowering)
    else:
        for op in (torch.ops.kplay.forward.default, torch.ops.kplay.backward.default):
            lowering.make_fallback(op, warn=False, override_decomp=True)
    _register_gated(inductor, lowering)
    _register_softmax(inductor, lowering)
    # Inductor hands AOTAutograd a copy of its table made at its first compile in the process
    # (select_decomp_table: fast_random_decomps is cached); where a graph without kplay was
    # compiled before this, that copy lacks kplay's formulas and every later graph would keep the
    # kernel whatever the mode. Dropping the copy makes the next compile take the table as it is.
    cached = getattr(inductor, "fast_random_decomps", None)
    if cached is not None and hasattr(cached, "cache_clear"):
        cached.cache_clear()
    _registered = True


# ---- gated activations: kplay::gated_forward and kplay::gated_backward --------------------------
#
# gated(ACT) decomposes into ACT's formula times b: forward act(a) * b, backward grad_a =
# (g * act'(a)) * b and grad_b = g * act(a) (one [..., 2d] gradient where the input was). The
# kernel computes float32 in double and rounds act(a) * b once, so in float32 and float64 "auto"
# decomposes only the activations that are selects (the product is then the one rounding, as in
# the kernel); float16 and bfloat16 compute in float32 and round once, as the kernel does, and
# decompose for every built-in. FP8 output always keeps the kernel.
GATED_EXACT = frozenset({"relu", "relu6", "hardtanh", "threshold", "hardshrink"})


def _gated_inner(activation: str) -> str:
    text = activation.strip()
    return text[len("gated("):-1].strip() if text.startswith("gated(") and text.endswith(")") else text


@torch.compiler.assume_constant_result
def gated_decomposes(activation: str, dtype: torch.dtype) -> bool:
    """Whether a compiled graph computes gated(activation) with its formula (the mode's choice)."""
    if _mode == "kernel":
        return False
    parsed = parse(_gated_inner(activation))
    if parsed is None:
        return False
    return _mode == "decompose" or parsed[0] in GATED_EXACT or dtype in (torch.float16, torch.bfloat16)


def _gated_operands(x: Tensor, b: Optional[Tensor]) -> Tuple[Tensor, Tensor]:
    if b is not None:
        return x, b
    d = x.shape[-1] // 2
    return x[..., :d], x[..., d:]


def gated_forward(x: Tensor, b: Optional[Tensor], activation: str, out_dtype: Optional[torch.dtype] = None,
                  scale: float = 1.0) -> Any:
    if (out_dtype is not None and out_dtype != x.dtype) or not gated_decomposes(activation, x.dtype):
        return NotImplemented
    name, p = parse(_gated_inner(activation))  # type: ignore[misc]
    a, bb = _gated_operands(x, b)
    return (FORMULAS[name][0](_compute(a), p) * _compute(bb)).to(x.dtype)


def gated_backward(grad: Tensor, x: Tensor, b: Optional[Tensor], activation: str) -> Any:
    if grad.dtype != x.dtype or not gated_decomposes(activation, x.dtype):
        return NotImplemented
    name, p = parse(_gated_inner(activation))  # type: ignore[misc]
    fwd, bwd_in, _ = FORMULAS[name]
    a, bb = _gated_operands(x, b)
    g, a = _compute(grad), _compute(a)
    grad_a = (bwd_in(g, a, p) * _compute(bb)).to(x.dtype)
    grad_b = (g * fwd(a, p)).to(x.dtype)
    return [grad_a, grad_b] if b is not None else [torch.cat([grad_a, grad_b], dim=-1)]


def _register_gated(inductor: Any, lowering: Any) -> None:
    for op, fn in ((torch.ops.kplay.gated_forward.default, gated_forward),
                   (torch.ops.kplay.gated_backward.default, gated_backward)):
        inductor.decompositions[op] = fn
        lowering.make_fallback(op, warn=False, override_decomp=True)


# ---- the softmax family: kplay::softmax and kplay::softmax_backward ---------------------------
#
# "decompose" hands them to Inductor as torch's own ops (aten._softmax, _log_softmax and their
# backward from the saved output, in kplay's output layout), which Inductor fuses with their
# neighbours; "kernel" keeps kplay's row kernel, and so does "auto" but for one case. In float32
# the kernel is exact (0.5 ulp) where torch's formula is 13-20 ulp (log_softmax: hundreds near 0).
# In float16 and bfloat16 torch's forward computes in float32 and rounds once, as the kernel does,
# and over short rows Inductor's was the faster on the H200 (bfloat16 32768x1024: 97.8 % of copy
# against 83.4; 65536x128 a tie, 93.1 against 92.4), so "auto" hands it softmax's and softmin's
# 16-bit forward of rows up to SHORT_ROW elements; from 16384x4096 up the kernel wins (78.2 against
# 40.6). Not log_softmax's: near 0 torch's log of a float sum near 1 loses the bits that the
# kernel's log1p of the compensated sum keeps. The 16-bit backward stays the kernel's: torch's
# errs by 2^-10 of the terms that cancel, and Inductor's, though faster up to 8192x32768, is no
# more exact (docs/benchmarks.md, "Softmax").
SHORT_ROW = 1024


@torch.compiler.assume_constant_result
def softmax_decomposes() -> bool:
    """Whether a compiled graph computes the softmax family with torch's ops (the mode's choice)."""
    return _mode == "decompose"


@torch.compiler.assume_constant_result
def _auto_mode() -> bool:
    return _mode == "auto"


def _short_16bit_row(x: Tensor, dim: int) -> bool:
    if x.dtype not in (torch.float16, torch.bfloat16) or x.dim() == 0:
        return False
    return bool(x.shape[dim] <= SHORT_ROW)


def softmax_forward(x: Tensor, dim: int, activation: str) -> Any:
    short = check_family(activation) != "log_softmax" and _short_16bit_row(x, dim)
    if not (softmax_decomposes() or (_auto_mode() and short)):
        return NotImplemented
    from . import _torch_softmax

    return _torch_softmax._cpu_softmax(x, dim, activation)  # torch's ops, on any device


def softmax_backward(grad: Tensor, y: Tensor, dim: int, activation: str) -> Any:
    if not softmax_decomposes() or grad.dtype != y.dtype:
        return NotImplemented
    from . import _torch_softmax

    return _torch_softmax._cpu_softmax_backward(grad, y, dim, activation)


def _register_softmax(inductor: Any, lowering: Any) -> None:
    for op, fn in ((torch.ops.kplay.softmax.default, softmax_forward),
                   (torch.ops.kplay.softmax_backward.default, softmax_backward)):
        inductor.decompositions[op] = fn
        lowering.make_fallback(op, warn=False, override_decomp=True)
