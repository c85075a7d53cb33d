"""kplay.forward / kplay.backward on any accepted array (see _arrays.py for which)."""
from __future__ import annotations

import atexit
import sys
from typing import Any, Dict, Optional, Tuple

from . import _core
from ._arguments import text
from ._arrays import DTYPE_NAMES, ArrayRef, describe, empty, empty_like
from ._layout import plan

_bad = _core.InvalidArgumentError

# Prepared launchers for torch's fast path, by (activation, dtype code, CUDA device, direction, saved).
_launchers: Dict[Tuple[str, int, int, bool, bool], Any] = {}
atexit.register(_launchers.clear)  # before nanobind's teardown, which would report them as leaks
_torch_codes: Dict[Any, int] = {}


def _name(activation: Any, example: str) -> None:
    """An activation's name: a str (TypeError otherwise) that UTF-8 carries whole."""
    if not isinstance(activation, str):
        raise TypeError(f"activation must be a str such as '{example}', not {type(activation).__name__}")
    text(activation, "activation")


def _torch_fast(activation: str, inputs: Tuple[Any, ...], out: Any, backward: bool = False,
                saved_output: bool = False) -> Any:
    """kplay.forward (inputs = (x,)) or kplay.backward (inputs = (grad_out, saved)) for plain
    contiguous CUDA torch tensors of one dtype, shape and device, on torch's current stream, through
    a cached launcher: torch vouches for device memory and device, this checks the rest (an output
    may be exactly an input, never partly over one). Returns None where the general path must decide
    (other types, layouts, dtypes, mismatches), so that its messages stay the only ones."""
    torch = sys.modules["torch"]
    if not _torch_codes:
        _torch_codes.update({torch.float32: _core.F32, torch.float16: _core.F16, torch.bfloat16: _core.BF16,
                             torch.float64: _core.F64})
    x = inputs[0]
    code = _torch_codes.get(x.dtype)
    if code is None or not x.is_cuda or not x.is_contiguous():
        return None
    device = x.get_device()
    for t in inputs[1:] + ((out,) if out is not None else ()):
        if (type(t) is not torch.Tensor or t.dtype != x.dtype or t.shape != x.shape or not t.is_cuda
                or t.get_device() != device or not t.is_contiguous()):
            return None
    if out is None:
        out = torch.empty_like(x)
    n = x.numel()
    if n:
        dst = out.data_ptr()
        size = n * x.element_size()
        ptrs = [t.data_ptr() for t in inputs]
        for name, src in zip(("grad_out", "saved") if backward else ("x",), ptrs):
            if src != dst and src < dst + size and dst < src + size:
                what = "grad_in" if backward else "out"
                raise _bad(f"{what} partially overlaps {name}; only exact in place ({what} is {name}) is allowed")
        key = (activation, code, device, backward, saved_output)
        launcher = _launchers.get(key)
        if launcher is None:
            launcher = _launchers[key] = _core.Launcher.cuda(activation, code, backward, saved_output, device)
        launcher.launch(ptrs[0], ptrs[1] if backward else 0, dst, n, torch._C._cuda_getCurrentRawStream(device), True)
    return out


def _stream_for(ref: ArrayRef, stream: Optional[int], what: str) -> int:
    """The stream/queue to launch on: the caller's, else the producer's, else the default."""
    if stream is not None:
        if hasattr(stream, "cuda_stream"):  # torch.cuda.Stream
            return int(stream.cuda_stream)
        if hasattr(stream, "int_ptr"):  # pyopencl.CommandQueue
            return int(stream.int_ptr)
        if hasattr(stream, "ptr"):  # cupy.cuda.Stream
            return int(stream.ptr)
        return int(stream)
    if ref.stream is not None:
        return int(ref.stream)
    if ref.backend == _core.BACKEND_OPENCL:
        raise _bad(f"{what} is a pyopencl array without a queue: pass stream=<pyopencl.CommandQueue>")
    return 0  # the legacy default stream


def _check_same(a: ArrayRef, b: ArrayRef, a_name: str, b_name: str) -> None:
    if a.backend != b.backend:
        raise _bad(f"{a_name} and {b_name} are on different backends (CUDA and OpenCL)")
    if a.dtype != b.dtype:
        raise _bad(f"{a_name} is {DTYPE_NAMES[a.dtype]} but {b_name} is {DTYPE_NAMES[b.dtype]}; kplay does not convert")
    if a.shape != b.shape:
        raise _bad(f"{a_name} has shape {a.shape} but {b_name} has shape {b.shape}")
    if a.device >= 0 and b.device >= 0 and a.device != b.device:
        raise _bad(f"{a_name} is on cuda:{a.device} but {b_name} on cuda:{b.device}")
    if a.context and b.context and a.context != b.context:
        raise _bad(f"{a_name} and {b_name} belong to different OpenCL contexts")


def _layout(refs, names):
    p = plan(refs[0].shape, *(r.strides for r in refs))
    if p is None:
        raise _bad(f"kplay takes {', '.join(names)} either dense with equal strides (contiguous) or as row-pitched "
                   f"2-D views with unit column stride; got strides {[r.strides for r in refs]}: copy to "
                   "contiguous first")
    return p


def forward(activation: str, x: Any, out: Any = None, stream: Any = None) -> Any:
    """out = activation(x) on x's device; out=None allocates an array like x (torch, CuPy, pyopencl).

    activation is a name or a name with parameters, e.g. "leaky_relu(negative_slope=0.2)", passed
    to kplay unchanged. out may be x itself (in place). The launch goes on `stream` (an int handle,
    torch.cuda.Stream, cupy Stream or pyopencl CommandQueue), else the stream the array came
    with (torch's current stream, __cuda_array_interface__'s stream, the pyopencl array's queue),
    else CUDA's legacy default stream. Returns out.
    """
    _name(activation, "selu")
    torch = sys.modules.get("torch")
    if stream is None and torch is not None and type(x) is torch.Tensor:
        done = _torch_fast(activation, (x,), out)
        if done is not None:
            return done
    xr = describe(x)
    if out is None:
        out = empty_like(x)
    orf = xr if out is x else describe(out)
    _check_same(xr, orf, "x", "out")
    if xr.size == 0:  # nothing to compute: out as it is, like numpy and torch on empty arrays
        return out
    s = _stream_for(xr, stream, "x")
    p = _layout((xr, orf), ("x", "out"))
    if p[0] == "flat":
        _core.forward(activation, xr.dtype, xr.ptr, orf.ptr, p[1], xr.backend, s)
    else:
        _, rows, cols, (ld_in, ld_out) = p
        _core.forward_2d(activation, xr.dtype, xr.ptr, ld_in, orf.ptr, ld_out, rows, cols, xr.backend, s)
    return out


def backward(activation: str, grad_out: Any, saved: Any, saved_output: bool = False, grad_in: Any = None,
             stream: Any = None) -> Any:
    """grad_in = grad_out * activation'(x), where saved is the forward input x, or its output y when
    saved_output=True (only where supports_saved_output(activation)). Returns grad_in."""
    _name(activation, "selu")
    torch = sys.modules.get("torch")
    if stream is None and torch is not None and type(grad_out) is torch.Tensor and type(saved) is torch.Tensor:
        done = _torch_fast(activation, (grad_out, saved), grad_in, True, bool(saved_output))
        if done is not None:
            return done
    gr = describe(grad_out)
    sr = describe(saved)
    _check_same(gr, sr, "grad_out", "saved")
    if grad_in is None:
        grad_in = empty_like(grad_out)
    ir = gr if grad_in is grad_out else describe(grad_in)
    _check_same(gr, ir, "grad_out", "grad_in")
    if gr.size == 0:
        return grad_in
    s = _stream_for(gr, stream, "grad_out")
    p = _layout((gr, sr, ir), ("grad_out", "saved", "grad_in"))
    if p[0] == "flat":
        _core.backward(activation, gr.dtype, gr.ptr, sr.ptr, bool(saved_output), ir.ptr, p[1], gr.backend, s)
    else:
        _, rows, cols, (ld_g, ld_s, ld_out) = p
        if ld_g != ld_s:
            raise _bad("grad_out and saved must share one row pitch (kplay's 2-D path has one input pitch)")
        _core.backward_2d(activation, gr.dtype, gr.ptr, sr.ptr, bool(saved_output), ld_g, ir.ptr, ld_out, rows,
                          cols, gr.backend, s)
    return grad_in


def _rows(ref: ArrayRef, name: str) -> Tuple[int, int, int]:
    """(rows, last, pitch) of an array taken as rows of its last dimension: unit stride along it,
    the leading dimensions folding into rows of one pitch; InvalidArgumentError otherwise."""
    shape, strides = ref.shape, ref.strides
    if not shape:
        raise _bad(f"{name} has no dimensions; a gated activation takes [..., 2d] or [..., d] arrays")
    last = shape[-1]
    rows = ref.size // last if last else 0
    if ref.size == 0:
        return rows, last, max(last, 1)
    if last > 1 and strides[-1] != 1:
        raise _bad(f"{name} must have unit stride along its last dimension (got strides {strides}): copy it first")
    lead = [(sh, st) for sh, st in zip(shape[:-1], strides[:-1]) if sh != 1]
    if not lead:
        return rows, last, last
    for (_, st), (sh_in, st_in) in zip(lead[:-1], lead[1:]):
        if st != st_in * sh_in:
            raise _bad(f"{name}'s leading dimensions do not fold into rows of one pitch (strides {strides}): copy it "
                       "first")
    pitch = lead[-1][1]
    if pitch < last:
        raise _bad(f"{name}'s rows overlap (pitch {pitch} below its last dimension {last})")
    return rows, last, pitch


def _gated_inputs(x: Any, a: Any, b: Any, what: str):
    """The operands (ArrayRef, offset, pitch) of a and b, rows, d and the [..., d] shape."""
    if (x is None) == (a is None and b is None) or (x is None and (a is None or b is None)):
        raise TypeError(f"{what} takes either x ([..., 2d]: a then b) or both a and b ([..., d] each)")
    if x is not None:
        xr = describe(x)
        rows, last, pitch = _rows(xr, "x")
        if last % 2:
            raise _bad(f"x's last dimension must be even ([..., 2d]: a is its first half, b its second), got {last}")
        d = last // 2
        return (xr, 0, pitch), (xr, d, pitch), rows, d, tuple(xr.shape[:-1]) + (d,)
    ar, br = describe(a), describe(b)
    _check_same(ar, br, "a", "b")
    rows, d, pa = _rows(ar, "a")
    _, _, pb = _rows(br, "b")
    return (ar, 0, pa), (br, 0, pb), rows, d, tuple(ar.shape)


def _gated_output(like: Any, ref: ArrayRef, given: Any, shape: Tuple[int, ...], name: str):
    """(array, ArrayRef, pitch) of an output: `given`, checked, or a new one of `shape`."""
    arr = empty(like, shape) if given is None else given
    r = describe(arr)
    if r.backend != ref.backend or r.dtype != ref.dtype:
        raise _bad(f"{name} must be a {DTYPE_NAMES[ref.dtype]} array of the inputs' backend")
    if tuple(r.shape) != tuple(shape):
        raise _bad(f"{name} has shape {r.shape}; expected {shape}")
    _, _, pitch = _rows(r, name)
    return arr, r, pitch


def gated_forward(activation: str, x: Any = None, *, a: Any = None, b: Any = None, out: Any = None,
                  stream: Any = None) -> Any:
    """out = activation(a) * b in one kernel (activation "silu": SwiGLU; "gated(silu)" alike), from one
    [..., 2d] array x (a its first half along the last dimension, b its second) or from two [..., d]
    arrays a and b of one shape, each with its own row pitch (a column slice needs no copy). out:
    [..., d], allocated when None; it may be a itself (in place). Returns out. FP8 output: the raw
    _core.gated_forward with out_dtype."""
    _name(activation, "silu")
    (ar, aoff, pa), (br, boff, pb), rows, d, shape = _gated_inputs(x, a, b, "gated_forward")
    out, orf, po = _gated_output(x if x is not None else a, ar, out, shape, "out")
    if rows * d == 0:
        return out
    s = _stream_for(ar, stream, "x" if x is not None else "a")
    _core.gated_forward(activation, ar.dtype, ar.ptr, aoff, pa, br.ptr, boff, pb, orf.ptr, 0, po, rows, d,
                        ar.backend, s)
    return out


def gated_backward(activation: str, grad_out: Any, x: Any = None, *, a: Any = None, b: Any = None,
                   grad_x: Any = None, grad_a: Any = None, grad_b: Any = None, stream: Any = None) -> Any:
    """grad_a = grad_out * activation'(a) * b and grad_b = grad_out * activation(a), in one kernel.
    With x ([..., 2d]) returns grad_x of x's shape (grad_a its first half, grad_b its second);
    with a and b returns (grad_a, grad_b). Gradients may be written over the inputs (grad_x is x,
    or grad_a is a and grad_b is b)."""
    _name(activation, "silu")
    (ar, aoff, pa), (br, boff, pb), rows, d, shape = _gated_inputs(x, a, b, "gated_backward")
    gr = describe(grad_out)
    if gr.backend != ar.backend or gr.dtype != ar.dtype:
        raise _bad(f"grad_out must be a {DTYPE_NAMES[ar.dtype]} array of the inputs' backend")
    if tuple(gr.shape) != shape:
        raise _bad(f"grad_out has shape {gr.shape}; expected {shape}")
    _, _, pg = _rows(gr, "grad_out")
    s = _stream_for(gr, stream, "grad_out")
    if x is not None:
        grad_x, xr, px = _gated_output(x, ar, grad_x, tuple(ar.shape), "grad_x")
        if rows * d == 0:
            return grad_x
        _core.gated_backward(activation, ar.dtype, gr.ptr, 0, pg, ar.ptr, aoff, pa, br.ptr, boff, pb, xr.ptr, 0, px,
                             xr.ptr, d, px, rows, d, ar.backend, s)
        return grad_x
    grad_a, gar, pga = _gated_output(a, ar, grad_a, shape, "grad_a")
    grad_b, gbr, pgb = _gated_output(a, ar, grad_b, shape, "grad_b")
    if rows * d == 0:
        return grad_a, grad_b
    _core.gated_backward(activation, ar.dtype, gr.ptr, 0, pg, ar.ptr, aoff, pa, br.ptr, boff, pb, gar.ptr, 0, pga,
                         gbr.ptr, 0, pgb, rows, d, ar.backend, s)
    return grad_a, grad_b
