"""kplay.softmax, log_softmax and softmin (and their backward) on any accepted array (torch, CuPy,
JAX or pyopencl; see _arrays.py): the row kernel over one dimension, with no copy where the layout
allows it.

An array is read as rows along `dim` when that dimension has unit stride (or length 1) and the other
dimensions fold, in order, into rows of one pitch: the last dimension of a contiguous array, a
column slice x[:, a:b], a transposed matrix along its first dimension, the channels of a
channels-last image; the output is then allocated contiguous with `dim` moved last, viewed back in
the input's dimension order. Else it is read as strided rows when the dimensions after `dim` fold
into one contiguous block of `inner` elements, `dim` steps over such blocks, and the dimensions
before it fold into outer blocks of one pitch: any other dim of a contiguous array ([N, C, H, W]
over dim 1, as Softmax2d takes it); the output is then allocated contiguous like the input. Every
other layout raises InvalidArgumentError here (copy it first); kplay.torch's functions copy such
tensors themselves.
"""
from __future__ import annotations

import math
from typing import Any, Optional, Sequence, Tuple

from . import _core
from ._api import _check_same, _stream_for
from ._arrays import describe, empty

_bad = _core.InvalidArgumentError
FAMILY = ("softmax", "log_softmax", "softmin")
# Every member has a float32 forward at torch's accuracy (accuracy="torch": torch's formula in
# float, within the bound docs/accuracy.md states, "The softmax family at torch's accuracy"), and
# log_softmax a backward too; softmax's and softmin's backward is exact.
ACCURACIES = ("exact", "torch")
_TIER = "(accuracy=torch)"  # the activation text's suffix that names the tier


def family_text(member: str, accuracy: str = "exact") -> str:
    """The activation text of `member` at `accuracy`: "exact" (kplay's bounds) or "torch"."""
    if accuracy not in ACCURACIES:
        raise _bad(f"accuracy must be one of {ACCURACIES}, not {accuracy!r}")
    return member if accuracy == "exact" else member + _TIER


def normalize_dim(dim: Any, ndim: int) -> int:
    """dim as torch takes it (negative counts from the end; a 0-dim array takes 0 or -1)."""
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise TypeError(f"dim must be an int, not {type(dim).__name__}")
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise _bad(f"dim {dim} is out of range for an array of {ndim} dimensions (expected {-n}..{n - 1})")
    return dim % n


def row_layout(shape: Sequence[int], strides: Sequence[int], dim: int) -> Optional[Tuple[int, int, int]]:
    """(rows, cols, pitch) of an array read as rows along `dim` (normalized), in elements; None where
    `dim` has no unit stride or the other dimensions do not fold, in order, into rows of one pitch."""
    if not shape:  # a 0-dim array: one row of one element
        return 1, 1, 1
    cols = shape[dim]
    rows = math.prod(shape) // cols if cols else math.prod(s for k, s in enumerate(shape) if k != dim)
    if rows == 0 or cols == 0:
        return rows, cols, max(cols, 1)
    if cols > 1 and strides[dim] != 1:
        return None
    lead = [(sh, st) for k, (sh, st) in enumerate(zip(shape, strides)) if k != dim and sh != 1]
    if not lead:
        return rows, cols, cols
    for (_, st), (sh_in, st_in) in zip(lead[:-1], lead[1:]):
        if st != st_in * sh_in:
            return None
    pitch = lead[-1][1]
    return (rows, cols, pitch) if pitch >= cols else None


def strided_layout(shape: Sequence[int], strides: Sequence[int], dim: int) -> Optional[Tuple[int, int, int, int]]:
    """(outer, cols, pitch, inner) of an array read as strided rows along `dim` (normalized): the
    dimensions after it fold, in order, into `inner` contiguous elements, its stride is inner, and
    those before it fold into outer blocks of one pitch (>= cols * inner); None otherwise."""
    if not shape:
        return None
    cols = shape[dim]
    inner = math.prod(shape[dim + 1:])
    expect = 1
    for k in reversed(range(dim + 1, len(shape))):
        if shape[k] != 1 and strides[k] != expect:
            return None
        expect *= shape[k]
    if cols > 1 and strides[dim] != inner:
        return None
    span = cols * inner
    lead = [(sh, st) for sh, st in zip(shape[:dim], strides[:dim]) if sh != 1]
    outer = math.prod(shape[:dim])
    if not lead:
        return outer, cols, max(span, 1), inner
    for (_, st), (sh_in, st_in) in zip(lead[:-1], lead[1:]):
        if st != st_in * sh_in:
            return None
    pitch = lead[-1][1]
    return (outer, cols, pitch, inner) if pitch >= span else None


def moved_shape(shape: Sequence[int], dim: int) -> Tuple[int, ...]:
    """The shape with `dim` moved last: the layout of an output the kernel writes contiguously."""
    if not shape:
        return ()
    return tuple(s for k, s in enumerate(shape) if k != dim) + (shape[dim],)


def move_back_order(ndim: int, dim: int) -> Tuple[int, ...]:
    """The permutation that views an array of moved_shape() in the original dimension order."""
    order = list(range(ndim - 1))
    order.insert(dim, ndim - 1)
    return tuple(order)


def _new_output(like: Any, shape: Tuple[int, ...], dim: int, strided: bool = False) -> Any:
    if strided:  # strided rows: contiguous like the input
        return empty(like, shape)
    out = empty(like, moved_shape(shape, dim))
    if len(shape) <= 1 or dim == len(shape) - 1:
        return out
    order = move_back_order(len(shape), dim)
    return out.permute(*order) if hasattr(out, "permute") else out.transpose(order)


def _layout_of(ref: Any, dim: int, name: str, inner: Optional[int] = None) -> Tuple[int, int, int, int]:
    """(rows, cols, pitch, inner) of ref along dim: rows of contiguous elements (inner 1) where it
    reads so, else strided rows (rows: outer blocks). inner: what the other operands have."""
    lay = row_layout(ref.shape, ref.strides, dim)
    got = (lay + (1,)) if lay is not None else strided_layout(ref.shape, ref.strides, dim)
    if got is None:
        raise _bad(f"{name} (shape {ref.shape}, strides {ref.strides}) cannot be read as rows along dim {dim}: that "
                   "dimension needs unit stride and the others must fold into rows of one pitch, or the dimensions "
                   "after it must be contiguous; copy it first (kplay.torch's functions do that for torch tensors)")
    if inner is not None and got[3] != inner:
        raise _bad(f"{name} (shape {ref.shape}, strides {ref.strides}) is not laid out as the other operands along dim "
                   f"{dim}: they are {'strided rows' if inner > 1 else 'rows of contiguous elements'}")
    return got


def _forward(activation: str, x: Any, dim: int, out: Any, stream: Any) -> Any:
    xr = describe(x)
    d = normalize_dim(dim, len(xr.shape))
    rows, cols, ld_x, inner = _layout_of(xr, d, "x")
    if out is None:
        out = _new_output(x, tuple(xr.shape), d, inner > 1)
    orf = describe(out)
    _check_same(xr, orf, "x", "out")
    _, _, ld_y, _ = _layout_of(orf, d, "out", inner)
    if rows == 0 or cols == 0 or inner == 0:
        return out  # nothing to compute (an empty array may have no buffer)
    _core.softmax_forward(activation, xr.dtype, xr.ptr, ld_x, orf.ptr, ld_y, rows, cols, xr.backend,
                          _stream_for(xr, stream, "x"), inner)
    return out


def _backward(activation: str, grad_out: Any, y: Any, dim: int, grad_in: Any, stream: Any) -> Any:
    gr, yr = describe(grad_out), describe(y)
    _check_same(gr, yr, "grad_out", "y")
    d = normalize_dim(dim, len(yr.shape))
    rows, cols, ld_y, inner = _layout_of(yr, d, "y")
    _, _, ld_g, _ = _layout_of(gr, d, "grad_out", inner)
    if grad_in is None:
        grad_in = _new_output(y, tuple(yr.shape), d, inner > 1)
    ir = describe(grad_in)
    _check_same(yr, ir, "y", "grad_in")
    _, _, ld_i, _ = _layout_of(ir, d, "grad_in", inner)
    if rows == 0 or cols == 0 or inner == 0:
        return grad_in
    _core.softmax_backward(activation, yr.dtype, yr.ptr, ld_y, gr.ptr, ld_g, ir.ptr, ld_i, rows, cols, yr.backend,
                           _stream_for(gr, stream, "grad_out"), inner)
    return grad_in


def softmax(x: Any, dim: int = -1, *, out: Any = None, stream: Any = None, accuracy: str = "exact") -> Any:
    """torch.softmax(x, dim) on x's device: exp(x - max) / sum(exp(x - max)) along `dim`, each row
    read once where it fits on chip (docs/activations.md, "The softmax family"). out: allocated when
    None; it may not be x. accuracy: "exact" (kplay's bounds) or "torch" (float32: torch's formula
    in float, faster; docs/accuracy.md, "The softmax family at torch's accuracy"). Returns out.
    See the module notes for the layouts taken without a copy."""
    return _forward(family_text("softmax", accuracy), x, dim, out, stream)


def log_softmax(x: Any, dim: int = -1, *, out: Any = None, stream: Any = None, accuracy: str = "exact") -> Any:
    """torch.log_softmax(x, dim): x - max - log(sum(exp(x - max))) along `dim`. As softmax()."""
    return _forward(family_text("log_softmax", accuracy), x, dim, out, stream)


def softmin(x: Any, dim: int = -1, *, out: Any = None, stream: Any = None, accuracy: str = "exact") -> Any:
    """torch.nn.functional.softmin(x, dim): softmax(-x) along `dim`. As softmax()."""
    return _forward(family_text("softmin", accuracy), x, dim, out, stream)


def softmax_backward(grad_out: Any, y: Any, dim: int = -1, *, grad_in: Any = None, stream: Any = None,
                     accuracy: str = "exact") -> Any:
    """The gradient of softmax from its output y, as torch saves it: y * (grad_out - sum(grad_out * y))
    along `dim`. grad_in: allocated when None. accuracy: as the forward's ("torch": float32; the
    exact kernel all the same but log_softmax's, torch's formula in float). Returns grad_in."""
    return _backward(family_text("softmax", accuracy), grad_out, y, dim, grad_in, stream)


def log_softmax_backward(grad_out: Any, y: Any, dim: int = -1, *, grad_in: Any = None, stream: Any = None,
                         accuracy: str = "exact") -> Any:
    """The gradient of log_softmax from its output y: grad_out - exp(y) * sum(grad_out) along `dim`."""
    return _backward(family_text("log_softmax", accuracy), grad_out, y, dim, grad_in, stream)


def softmin_backward(grad_out: Any, y: Any, dim: int = -1, *, grad_in: Any = None, stream: Any = None,
                     accuracy: str = "exact") -> Any:
    """The gradient of softmin from its output y: y * (sum(grad_out * y) - grad_out) along `dim`."""
    return _backward(family_text("softmin", accuracy), grad_out, y, dim, grad_in, stream)


def check_family(activation: str) -> str:
    """The member an activation text names ("softmax" for "softmax(accuracy=torch)"); raises for
    any other text."""
    member = activation[:-len(_TIER)] if activation.endswith(_TIER) else activation
    if member not in FAMILY:
        raise _bad(f"'{activation}' is not one of the softmax family ({', '.join(FAMILY)}, each with or "
                   f"without {_TIER})")
    return member


def is_tier(activation: str) -> bool:
    return activation != check_family(activation)


__all__ = ["softmax", "log_softmax", "softmin", "softmax_backward", "log_softmax_backward", "softmin_backward"]
