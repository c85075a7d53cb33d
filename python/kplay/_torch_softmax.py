"""The softmax family as PyTorch operators, behind kplay.torch.softmax, log_softmax and softmin;
registered here (torch.library.custom_op) where the C++ extension kplay._torch_ops does not register
them itself (python/src/torch_ops.cpp, its SOFTMAX_OPS), and their CPU kernels for either:
    torch.ops.kplay.softmax(Tensor x, int dim, str activation) -> Tensor
    torch.ops.kplay.softmax_backward(Tensor grad, Tensor y, int dim, str activation) -> Tensor
activation is "softmax", "log_softmax" or "softmin". Autograd saves the output y, as torch does, and
its backward is kplay's row kernel from y: y (g - sum(g y)), softmin y (sum(g y) - g), log_softmax
g - exp(y) sum(g). There is no double backward (differentiating the backward raises).

CUDA tensors run kplay's row kernel through a prepared kplay::Launcher on torch's current stream.
A contiguous input over a dim that is not the last (dim 1 of a contiguous [N, C, H, W], as
Softmax2d takes it) is read where it is as strided rows, [outer, cols, inner], and its output is
contiguous like it (a backward's gradient is made contiguous too). Otherwise an operand is read
where it is when `dim` has unit stride and the other dimensions fold into rows of one pitch
(kplay/_softmax.py: the last dimension of a contiguous tensor, a column slice, a channels-last
image's channels); any other (broadcast or gapped strides) is first copied with `dim` moved last,
which costs an extra read and write of that operand, and the output is contiguous with `dim` moved
last, viewed in the input's dimension order. The fake kernel gives torch.compile the same strides:
no graph break. CPU tensors take torch's own softmax and its
backward ops (kplay/_torch_cpu.py's policy): a model after replace_activations runs on the CPU with
torch's outputs and gradients. Tensors are float32, float16, bfloat16 or float64.
"""
from __future__ import annotations

import atexit
import math
import sys
from typing import Any, Callable, Dict, Tuple

import torch
from torch import Tensor

from . import _core
from ._softmax import check_family, is_tier, move_back_order, moved_shape, normalize_dim, row_layout

A = torch.ops.aten
_DTYPES = {torch.float32: _core.F32, torch.float16: _core.F16, torch.bfloat16: _core.BF16, torch.float64: _core.F64}

try:
    _raw_stream: Callable[[int], int] = torch._C._cuda_getCurrentRawStream
except AttributeError:  # pragma: no cover
    def _raw_stream(index: int) -> int:
        return torch.cuda.current_stream(index).cuda_stream

# Prepared launchers by (activation, dtype code, CUDA device, backward).
_launchers: Dict[Tuple[str, int, int, bool], Any] = {}
atexit.register(_launchers.clear)  # before nanobind's teardown, which would report them as leaks


def _code(t: Tensor, what: str) -> int:
    code = _DTYPES.get(t.dtype)
    if code is None:
        raise _core.InvalidArgumentError(
            f"kplay.torch takes float32, float16, bfloat16 or float64 tensors; {what} is {t.dtype}")
    return code


def _dim(t: Tensor, dim: int) -> int:
    return normalize_dim(dim, t.dim())


def _strided(t: Tensor, dim: int) -> bool:
    """Whether a softmax along dim of t takes strided rows: t contiguous and dim not its last."""
    return t.dim() > 1 and dim != t.dim() - 1 and t.is_contiguous()


def _strided_layout(t: Tensor, dim: int) -> Tuple[int, int, int, int]:
    """(outer, cols, pitch, inner) of a contiguous t along dim: [outer, cols, inner]."""
    outer, inner = math.prod(t.shape[:dim]), math.prod(t.shape[dim + 1:])
    return outer, t.shape[dim], max(t.shape[dim] * inner, 1), inner


def _dim_last(like: Tensor, dim: int) -> Tensor:
    """A tensor of like's shape, contiguous with dim moved last, viewed in like's dimension order:
    rows along dim of one pitch, whatever like's layout."""
    out = like.new_empty(moved_shape(tuple(like.shape), dim))
    if like.dim() <= 1 or dim == like.dim() - 1:
        return out
    return out.permute(*move_back_order(like.dim(), dim))


def _output(like: Tensor, dim: int) -> Tensor:
    """A tensor of like's shape in the layout the kernel writes: contiguous where like takes strided
    rows, else _dim_last."""
    if _strided(like, dim):
        return torch.empty_like(like, memory_format=torch.contiguous_format)
    return _dim_last(like, dim)


def _rows(t: Tensor, dim: int) -> Tuple[Tensor, int, int, int]:
    """(tensor, rows, cols, pitch): t itself where it reads as rows along dim, else a copy that does."""
    lay = row_layout(tuple(t.shape), tuple(t.stride()), dim)
    if lay is None:
        # dim moved last, contiguous: an extra read and write of t (also a contiguous t along a dim
        # that is not its last: the gradient of an output that was not written as strided rows)
        t = _dim_last(t, dim).copy_(t)
        lay = row_layout(tuple(t.shape), tuple(t.stride()), dim)
    return (t,) + lay


def _launcher(activation: str, code: int, device: int, backward: bool) -> Any:
    key = (activation, code, device, backward)
    launcher = _launchers.get(key)
    if launcher is None:
        launcher = _launchers[key] = _core.Launcher.cuda(activation, code, backward, backward, device)
    return launcher


def _check_cuda(t: Tensor, what: str) -> None:
    if t.device.type != "cuda":
        raise _core.InvalidArgumentError(f"kplay.torch's softmax kernels need CUDA tensors; {what} is on '{t.device}'")


# ---- the operators, where the C++ extension does not register them (its SOFTMAX_OPS) ---------

def _check_grad(grad: Tensor, y: Tensor) -> None:
    if grad.shape != y.shape or grad.dtype != y.dtype:
        raise _core.InvalidArgumentError(
            f"grad ({grad.dtype}, {tuple(grad.shape)}) and y ({y.dtype}, {tuple(y.shape)}) must match")


EXTENSION_OPS = bool(getattr(sys.modules.get("kplay._torch_ops"), "SOFTMAX_OPS", 0))

if not EXTENSION_OPS:
    @torch.library.custom_op("kplay::softmax", mutates_args=(),
                             schema="(Tensor x, int dim, str activation) -> Tensor")
    def _softmax(x: Tensor, dim: int, activation: str) -> Tensor:
        check_family(activation)
        code = _code(x, "x")
        _check_cuda(x, "x")
        d = _dim(x, dim)
        out = _output(x, d)
        if x.numel() and _strided(x, d):
            outer, cols, ld, inner = _strided_layout(x, d)
            device = x.get_device()
            _launcher(activation, code, device, False).launch_rows(x.data_ptr(), ld, 0, ld, out.data_ptr(), ld, outer,
                                                                   cols, _raw_stream(device), True, inner)
        elif x.numel():
            x, rows, cols, ld_x = _rows(x, d)
            _, _, ld_y = row_layout(tuple(out.shape), tuple(out.stride()), d)
            device = x.get_device()
            _launcher(activation, code, device, False).launch_rows(x.data_ptr(), ld_x, 0, ld_x, out.data_ptr(), ld_y,
                                                                   rows, cols, _raw_stream(device), True)
        return out

    @_softmax.register_fake
    def _(x: Tensor, dim: int, activation: str) -> Tensor:
        check_family(activation)
        _code(x, "x")
        return _output(x, _dim(x, dim))

    @torch.library.custom_op("kplay::softmax_backward", mutates_args=(),
                             schema="(Tensor grad, Tensor y, int dim, str activation) -> Tensor")
    def _softmax_backward(grad: Tensor, y: Tensor, dim: int, activation: str) -> Tensor:
        check_family(activation)
        code = _code(y, "y")
        _check_grad(grad, y)
        _check_cuda(y, "y")
        _check_cuda(grad, "grad")
        if grad.device != y.device:
            raise _core.InvalidArgumentError(f"grad is on {grad.device} but y on {y.device}")
        d = _dim(y, dim)
        out = _output(y, d)
        if y.numel() and _strided(y, d):
            outer, cols, ld, inner = _strided_layout(y, d)
            grad = grad.contiguous()  # the gradient in y's layout: a copy only where it is not
            device = y.get_device()
            _launcher(activation, code, device, True).launch_rows(grad.data_ptr(), ld, y.data_ptr(), ld,
                                                                  out.data_ptr(), ld, outer, cols,
                                                                  _raw_stream(device), True, inner)
        elif y.numel():
            grad, rows, cols, ld_g = _rows(grad, d)
            y, _, _, ld_y = _rows(y, d)
            _, _, ld_o = row_layout(tuple(out.shape), tuple(out.stride()), d)
            device = y.get_device()
            _launcher(activation, code, device, True).launch_rows(grad.data_ptr(), ld_g, y.data_ptr(), ld_y,
                                                                  out.data_ptr(), ld_o, rows, cols, _raw_stream(device),
                                                                  True)
        return out

    @_softmax_backward.register_fake
    def _(grad: Tensor, y: Tensor, dim: int, activation: str) -> Tensor:
        check_family(activation)
        _code(y, "y")
        _check_grad(grad, y)
        return _output(y, _dim(y, dim))

    def _setup(ctx: Any, inputs: Any, output: Tensor) -> None:
        _, dim, activation = inputs
        ctx.save_for_backward(output)
        ctx.dim, ctx.activation = dim, activation

    def _grad(ctx: Any, grad: Tensor):
        (y,) = ctx.saved_tensors
        return torch.ops.kplay.softmax_backward(grad, y, ctx.dim, ctx.activation), None, None

    _softmax.register_autograd(_grad, setup_context=_setup)


# ---- CPU: torch's own computation -------------------------------------------------------------

def _as_fake(t: Tensor, like: Tensor, d: int) -> Tensor:
    """t, the result for input `like`, in the layout the fake kernel promises for it (compiled graphs
    rely on it)."""
    out = _output(like, d)
    return t if out.stride() == t.stride() else out.copy_(t)


def _cpu_softmax(x: Tensor, dim: int, activation: str) -> Tensor:
    member = check_family(activation)
    _code(x, "x")
    if is_tier(activation) and x.dtype != torch.float32:  # as the CUDA kernels refuse it
        raise _core.InvalidArgumentError(
            f"accuracy=torch is a float32 tier; {x.dtype} kernels have one accuracy (drop it)")
    d = _dim(x, dim)
    if member == "log_softmax":
        return _as_fake(A._log_softmax(x, d, False), x, d)
    return _as_fake(A._softmax(A.neg(x) if member == "softmin" else x, d, False), x, d)


def _cpu_softmax_backward(grad: Tensor, y: Tensor, dim: int, activation: str) -> Tensor:
    member = check_family(activation)
    _code(y, "y")
    _check_grad(grad, y)
    d = _dim(y, dim)
    if member == "log_softmax":
        return _as_fake(A._log_softmax_backward_data(grad, y, d, y.dtype), y, d)
    g = A._softmax_backward_data(grad, y, d, y.dtype)
    return _as_fake(A.neg(g) if member == "softmin" else g, y, d)  # softmin(x) = softmax(-x): the chain rule's -1


torch.library.register_kernel("kplay::softmax", "cpu", _cpu_softmax)
torch.library.register_kernel("kplay::softmax_backward", "cpu", _cpu_softmax_backward)
