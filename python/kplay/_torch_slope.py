"""PReLU and RReLU in training as PyTorch operators (torch.library.custom_op): kplay's per-element
slope kernels (docs/activations.md, "PReLU and RReLU") with autograd and fake kernels, registered
by kplay.torch when the C++ extension kplay._torch_ops does not register them itself
(torch_ops.cpp's PRELU_RRELU_OPS says whether it does):
    torch.ops.kplay.prelu(Tensor x, Tensor weight) -> Tensor
    torch.ops.kplay.prelu_backward(Tensor grad, Tensor x, Tensor weight) -> (Tensor, Tensor)
    torch.ops.kplay.rrelu_train(Tensor x, float lower, float upper, int seed, int offset) -> Tensor
    torch.ops.kplay.rrelu_train_backward(Tensor grad, Tensor x, float lower, float upper, int seed,
                                         int offset) -> Tensor
Operands are made contiguous; outputs are contiguous. PReLU's weight is in x's dtype and has one
element or one per channel of dim 1 (else kplay.InvalidArgumentError, from the fake kernel too,
so torch.compile refuses it at trace time); its gradient has the weight's shape. RReLU in training
saves x and its seed, and backward draws the same slopes again.
"""
from __future__ import annotations

from typing import Any, Callable, Tuple

import torch
from torch import Tensor

from . import _core
from ._slope import prelu_channels

_DTYPES = {torch.float32: _core.F32, torch.float16: _core.F16, torch.bfloat16: _core.BF16, torch.float64: _core.F64}
_CUDA = _core.BACKEND_CUDA

try:
    _raw_stream: Callable[[int], int] = torch._C._cuda_getCurrentRawStream
except AttributeError:  # pragma: no cover
    def _raw_stream(index: int) -> int:
        return torch.cuda.current_stream(index).cuda_stream


def _code(t: Tensor, what: str) -> int:
    code = _DTYPES.get(t.dtype)
    if code is None:
        raise _core.InvalidArgumentError(
            f"kplay.torch takes float32, float16, bfloat16 or float64 tensors; {what} is {t.dtype}")
    return code


def _cuda_code(t: Tensor, what: str) -> int:
    if t.device.type != "cuda":
        raise _core.InvalidArgumentError(f"kplay.torch needs CUDA tensors; {what} is on '{t.device}'")
    return _code(t, what)


def _check_prelu(x: Tensor, weight: Tensor) -> Tuple[int, int]:
    _code(x, "x")
    if weight.dtype != x.dtype:
        raise _core.InvalidArgumentError(f"prelu's weight is {weight.dtype} but x is {x.dtype}; kplay does not convert")
    return prelu_channels(tuple(x.shape), weight.numel())


# ---- prelu --------------------------------------------------------------------------------------

@torch.library.custom_op("kplay::prelu", mutates_args=())
def _prelu(x: Tensor, weight: Tensor) -> Tensor:
    channels, inner = _check_prelu(x, weight)
    code = _cuda_code(x, "x")
    _cuda_code(weight, "weight")
    x, weight = x.contiguous(), weight.contiguous()
    out = torch.empty_like(x, memory_format=torch.contiguous_format)
    if out.numel():
        _core.prelu_forward(code, x.data_ptr(), weight.data_ptr(), out.data_ptr(), out.numel(), channels, inner,
                            _CUDA, _raw_stream(x.get_device()))
    return out


@_prelu.register_fake
def _(x: Tensor, weight: Tensor) -> Tensor:
    _check_prelu(x, weight)
    return torch.empty_like(x, memory_format=torch.contiguous_format)


@torch.library.custom_op("kplay::prelu_backward", mutates_args=())
def _prelu_backward(grad: Tensor, x: Tensor, weight: Tensor) -> Tuple[Tensor, Tensor]:
    channels, inner = _check_prelu(x, weight)
    code = _cuda_code(x, "x")
    _cuda_code(grad, "grad")
    if grad.shape != x.shape or grad.dtype != x.dtype:
        raise _core.InvalidArgumentError(
            f"grad ({grad.dtype}, {tuple(grad.shape)}) and x ({x.dtype}, {tuple(x.shape)}) must match")
    grad, x, weight = grad.contiguous(), x.contiguous(), weight.contiguous()
    grad_x = torch.empty_like(x)
    grad_w = torch.empty_like(weight)
    n = x.numel()
    if n == 0:
        return grad_x, grad_w.zero_()  # a sum over no elements (torch's empty samples)
    work = _core.prelu_workspace_bytes(code, n, channels, inner)
    workspace = torch.empty(max(work, 8), dtype=torch.uint8, device=x.device)
    _core.prelu_backward(code, grad.data_ptr(), x.data_ptr(), weight.data_ptr(), grad_x.data_ptr() if n else 0,
                         grad_w.data_ptr(), workspace.data_ptr(), n, channels, inner, _CUDA,
                         _raw_stream(x.get_device()))
    return grad_x, grad_w


@_prelu_backward.register_fake
def _(grad: Tensor, x: Tensor, weight: Tensor) -> Tuple[Tensor, Tensor]:
    _check_prelu(x, weight)
    return (torch.empty_like(x, memory_format=torch.contiguous_format),
            torch.empty_like(weight, memory_format=torch.contiguous_format))


def _prelu_setup(ctx: Any, inputs: Any, output: Tensor) -> None:
    x, weight = inputs
    ctx.save_for_backward(x, weight)


def _prelu_grad(ctx: Any, grad: Tensor):
    x, weight = ctx.saved_tensors
    grad_x, grad_w = torch.ops.kplay.prelu_backward(grad, x, weight)
    return grad_x, grad_w


_prelu.register_autograd(_prelu_grad, setup_context=_prelu_setup)


# ---- rrelu in training ------------------------------------------------------------------------

def _check_bounds(lower: float, upper: float) -> None:
    if not lower <= upper:
        raise _core.InvalidArgumentError(
            f"rrelu's lower ({lower}) must be <= upper ({upper}), as torch's rrelu requires")


@torch.library.custom_op("kplay::rrelu_train", mutates_args=())
def _rrelu_train(x: Tensor, lower: float, upper: float, seed: int, offset: int) -> Tensor:
    _check_bounds(lower, upper)
    code = _cuda_code(x, "x")
    x = x.contiguous()
    out = torch.empty_like(x)
    if out.numel():
        _core.rrelu_forward(code, x.data_ptr(), out.data_ptr(), out.numel(), lower, upper, True, seed, offset, _CUDA,
                            _raw_stream(x.get_device()))
    return out


@_rrelu_train.register_fake
def _(x: Tensor, lower: float, upper: float, seed: int, offset: int) -> Tensor:
    _check_bounds(lower, upper)
    _code(x, "x")
    return torch.empty_like(x, memory_format=torch.contiguous_format)


@torch.library.custom_op("kplay::rrelu_train_backward", mutates_args=())
def _rrelu_train_backward(grad: Tensor, x: Tensor, lower: float, upper: float, seed: int, offset: int) -> Tensor:
    code = _cuda_code(x, "x")
    _cuda_code(grad, "grad")
    if grad.shape != x.shape or grad.dtype != x.dtype:
        raise _core.InvalidArgumentError(
            f"grad ({grad.dtype}, {tuple(grad.shape)}) and x ({x.dtype}, {tuple(x.shape)}) must match")
    grad, x = grad.contiguous(), x.contiguous()
    out = torch.empty_like(x)
    if out.numel():
        _core.rrelu_backward(code, grad.data_ptr(), x.data_ptr(), out.data_ptr(), out.numel(), lower, upper, True,
                             seed, offset, _CUDA, _raw_stream(x.get_device()))
    return out


@_rrelu_train_backward.register_fake
def _(grad: Tensor, x: Tensor, lower: float, upper: float, seed: int, offset: int) -> Tensor:
    return torch.empty_like(x, memory_format=torch.contiguous_format)


def _rrelu_setup(ctx: Any, inputs: Any, output: Tensor) -> None:
    x, lower, upper, seed, offset = inputs
    ctx.save_for_backward(x)
    ctx.args = (lower, upper, seed, offset)


def _rrelu_grad(ctx: Any, grad: Tensor):
    (x,) = ctx.saved_tensors
    return torch.ops.kplay.rrelu_train_backward(grad, x, *ctx.args), None, None, None, None


_rrelu_train.register_autograd(_rrelu_grad, setup_context=_rrelu_setup)
