"""kplay.prelu / kplay.rrelu and their backwards on any accepted array (torch, CuPy, pyopencl; see
_arrays.py): the per-element slope forms of kplay (docs/activations.md, "PReLU and RReLU"). Inputs
are taken dense and contiguous; PReLU's channel is dim 1 as in torch."""
from __future__ import annotations

import math
from typing import Any, Optional, Tuple

from . import _core
from ._api import _check_same, _stream_for
from ._arguments import whole
from ._arrays import ArrayRef, describe, empty, empty_like

_bad = _core.InvalidArgumentError
ESIZE = {_core.F32: 4, _core.F16: 2, _core.BF16: 2, _core.F64: 8}


def _contiguous(r: ArrayRef, name: str) -> None:
    expected, step = [], 1
    for size in reversed(r.shape):
        expected.append(step)
        step *= size
    if math.prod(r.shape):
        for size, st, want in zip(r.shape, r.strides, reversed(expected)):
            if size > 1 and st != want:
                raise _bad(f"{name} must be contiguous (strides {r.strides}); copy it first")


def prelu_channels(shape: Tuple[int, ...], weight_size: int) -> Tuple[int, int]:
    """(channels, inner) of a PReLU over an input of `shape` with a weight of `weight_size` elements,
    as torch: one weight for every element, or one per channel of dim 1 (none for a 0-d or 1-d
    input); anything else raises kplay.InvalidArgumentError."""
    channels = shape[1] if len(shape) >= 2 else 1
    if weight_size == 1:
        return 1, 1
    if weight_size != channels:
        where = (f"input of shape {tuple(shape)} has {channels} channels (dim 1)" if len(shape) >= 2
                 else f"input of shape {tuple(shape)} has no channel dimension, so the weight needs one element")
        raise _bad(f"prelu's weight has {weight_size} elements but the {where}: a weight has one element or one "
                   "per channel")
    return channels, math.prod(shape[2:])


def prelu(x: Any, weight: Any, out: Any = None, stream: Any = None) -> Any:
    """out = x > 0 ? x : weight[c] * x, c the channel (dim 1) of each element, or weight[0] for a
    one-element weight. Returns out (allocated like x when None; it may be x itself)."""
    xr, wr = describe(x), describe(weight)
    channels, inner = prelu_channels(tuple(xr.shape), math.prod(wr.shape))
    if out is None:
        out = empty_like(x)
    orf = xr if out is x else describe(out)
    _check_same(xr, orf, "x", "out")
    if wr.dtype != xr.dtype or wr.backend != xr.backend:
        raise _bad("weight must be of x's dtype and backend")
    for r, name in ((xr, "x"), (orf, "out"), (wr, "weight")):
        _contiguous(r, name)
    if xr.size == 0:  # nothing to compute, as numpy and torch on empty arrays
        return out
    _core.prelu_forward(xr.dtype, xr.ptr, wr.ptr, orf.ptr, math.prod(xr.shape), channels, inner, xr.backend,
                        _stream_for(xr, stream, "x"))
    return out


def prelu_backward(grad_out: Any, x: Any, weight: Any, stream: Any = None) -> Tuple[Any, Any]:
    """(grad_x, grad_weight) of prelu: grad_x = x > 0 ? g : weight[c] g, grad_weight[c] = the sum of
    g x over channel c where x > 0 is false, in a fixed order (deterministic), accumulated in
    float32 (float64 for float64 arrays)."""
    gr, xr, wr = describe(grad_out), describe(x), describe(weight)
    _check_same(gr, xr, "grad_out", "x")
    channels, inner = prelu_channels(tuple(xr.shape), math.prod(wr.shape))
    if wr.dtype != xr.dtype or wr.backend != xr.backend:
        raise _bad("weight must be of x's dtype and backend")
    for r, name in ((gr, "grad_out"), (xr, "x"), (wr, "weight")):
        _contiguous(r, name)
    n = math.prod(xr.shape)
    grad_x, grad_w = empty_like(x), empty_like(weight)
    work = _core.prelu_workspace_bytes(xr.dtype, n, channels, inner)
    workspace = empty(x, (max(-(-work // ESIZE[xr.dtype]), 1),))
    _core.prelu_backward(xr.dtype, gr.ptr, xr.ptr, wr.ptr, describe(grad_x).ptr, describe(grad_w).ptr,
                         describe(workspace).ptr, n, channels, inner, xr.backend, _stream_for(gr, stream, "grad_out"))
    return grad_x, grad_w


def rrelu(x: Any, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False, seed: int = 0,
          offset: int = 0, out: Any = None, stream: Any = None) -> Any:
    """RReLU: evaluation (training=False) is leaky_relu with the slope (lower + upper) / 2; training
    multiplies each x <= 0 by a slope drawn uniformly in [lower, upper] from (seed, offset + i),
    which rrelu_backward draws again. Returns out."""
    xr = describe(x)
    if out is None:
        out = empty_like(x)
    orf = xr if out is x else describe(out)
    _check_same(xr, orf, "x", "out")
    _contiguous(xr, "x")
    _contiguous(orf, "out")
    seed, offset = whole(seed, "seed", 0, 2**64 - 1), whole(offset, "offset", 0, 2**64 - 1)
    if xr.size == 0:
        return out
    _core.rrelu_forward(xr.dtype, xr.ptr, orf.ptr, math.prod(xr.shape), float(lower), float(upper), bool(training),
                        seed, offset, xr.backend, _stream_for(xr, stream, "x"))
    return out


def rrelu_backward(grad_out: Any, x: Any, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
                   seed: int = 0, offset: int = 0, grad_in: Optional[Any] = None, stream: Any = None) -> Any:
    """grad_in = grad_out times rrelu's slope of each x (1 where x > 0), the same draws as rrelu's
    with the same seed and offset. Returns grad_in."""
    gr, xr = describe(grad_out), describe(x)
    _check_same(gr, xr, "grad_out", "x")
    if grad_in is None:
        grad_in = empty_like(grad_out)
    ir = gr if grad_in is grad_out else describe(grad_in)
    _check_same(gr, ir, "grad_out", "grad_in")
    for r, name in ((gr, "grad_out"), (xr, "x"), (ir, "grad_in")):
        _contiguous(r, name)
    seed, offset = whole(seed, "seed", 0, 2**64 - 1), whole(offset, "offset", 0, 2**64 - 1)
    if gr.size == 0:
        return grad_in
    _core.rrelu_backward(gr.dtype, gr.ptr, xr.ptr, ir.ptr, math.prod(xr.shape), float(lower), float(upper),
                         bool(training), seed, offset, gr.backend, _stream_for(gr, stream, "grad_out"))
    return grad_in
