"""kplay.torch's operators in Python (torch.library.custom_op), for installs without the C++
extension kplay._torch_ops (kplay was built without torch, or for another torch version):
kplay.torch imports this module only then, and says so once. Same ops, schemas, saved-tensor
policy and layouts as the extension (kplay/torch.py's notes); a call costs more host time: the
custom_op machinery per op, and a torch.autograd.Function in eager mode.
"""
from __future__ import annotations

import atexit

from typing import Any, Callable, Dict, List, Optional, Tuple

import torch
import torch.autograd.graph
from torch import Tensor

from . import _core
from ._layout import is_dense, plan
from .torch import saves_output

_DTYPES = {torch.float32: _core.F32, torch.float16: _core.F16, torch.bfloat16: _core.BF16, torch.float64: _core.F64}
_CUDA = _core.BACKEND_CUDA

try:  # what torch.compile's generated code uses: an int, no Stream object
    _raw_stream: Callable[[int], int] = torch._C._cuda_getCurrentRawStream
except AttributeError:  # pragma: no cover
    def _raw_stream(index: int) -> int:
        return torch.cuda.current_stream(index).cuda_stream

# Launchers by (activation, torch dtype, device, backward, saved_output). Made on first use; a
# launcher keeps the activation as it resolved then.
_launchers: Dict[Tuple[str, torch.dtype, int, bool, bool], Any] = {}
# Dropped before the interpreter tears nanobind down, which would otherwise report them as leaks.
atexit.register(_launchers.clear)


def _launcher(activation: str, dtype: torch.dtype, device: int, backward: bool = False,
              saved_output: bool = False) -> Any:
    key = (activation, dtype, device, backward, saved_output)
    launcher = _launchers.get(key)
    if launcher is None:
        code = _DTYPES.get(dtype)
        if code is None:
            raise _core.InvalidArgumentError(
                f"kplay.torch takes float32, float16, bfloat16 or float64 tensors; got {dtype}")
        launcher = _launchers[key] = _core.Launcher.cuda(activation, code, backward, saved_output, device)
    return launcher


def _dtype_code(t: Tensor, what: str) -> int:
    if t.device.type != "cuda":
        raise _core.InvalidArgumentError(f"kplay.torch needs CUDA tensors; {what} is on '{t.device}'")
    code = _DTYPES.get(t.dtype)
    if code is None:
        raise _core.InvalidArgumentError(
            f"kplay.torch takes float32, float16, bfloat16 or float64 tensors; {what} is {t.dtype}")
    return code


def _dense_like(src: Tensor, like: Tensor) -> Tensor:
    """src's values in a tensor with like's (dense) strides."""
    out = torch.empty_like(like)
    out.copy_(src)
    return out


def _launch_forward(x: Tensor, out: Tensor, activation: str) -> None:
    code = _dtype_code(x, "x")
    stream = _raw_stream(x.get_device())
    p = plan(tuple(x.shape), tuple(x.stride()), tuple(out.stride()))
    if p is None:  # broadcast or gapped input: copy into out's dense layout, then in place
        out.copy_(x)
        _core.forward(activation, code, out.data_ptr(), out.data_ptr(), out.numel(), _CUDA, stream)
    elif p[0] == "flat":
        if p[1]:
            _launcher(activation, x.dtype, x.get_device()).launch(x.data_ptr(), 0, out.data_ptr(), p[1], stream, True)
    else:
        _, rows, cols, (ld_in, ld_out) = p
        _core.forward_2d(activation, code, x.data_ptr(), ld_in, out.data_ptr(), ld_out, rows, cols, _CUDA, stream)


# ---- the ops --------------------------------------------------------------------------------

@torch.library.custom_op("kplay::forward", mutates_args=())
def _forward(x: Tensor, activation: str) -> Tensor:
    out = torch.empty_like(x)  # dense: x's strides when x is dense, else contiguous
    _launch_forward(x, out, activation)
    return out


@_forward.register_fake
def _(x: Tensor, activation: str) -> Tensor:
    return torch.empty_like(x)


@torch.library.custom_op("kplay::forward_", mutates_args=("x",))
def _forward_inplace(x: Tensor, activation: str) -> None:
    code = _dtype_code(x, "x")
    stream = _raw_stream(x.get_device())
    p = plan(tuple(x.shape), tuple(x.stride()))
    if p is None:
        tmp = x.contiguous()
        _core.forward(activation, code, tmp.data_ptr(), tmp.data_ptr(), tmp.numel(), _CUDA, stream)
        x.copy_(tmp)
    elif p[0] == "flat":
        if p[1]:
            _launcher(activation, x.dtype, x.get_device()).launch(x.data_ptr(), 0, x.data_ptr(), p[1], stream, True)
    else:
        _, rows, cols, (ld,) = p
        _core.forward_2d(activation, code, x.data_ptr(), ld, x.data_ptr(), ld, rows, cols, _CUDA, stream)


@_forward_inplace.register_fake
def _(x: Tensor, activation: str) -> None:
    return None


@torch.library.custom_op("kplay::backward", mutates_args=())
def _backward(grad: Tensor, saved: Tensor, activation: str, saved_output: bool) -> Tensor:
    _dtype_code(saved, "saved")
    _dtype_code(grad, "grad")
    if grad.dtype != saved.dtype or grad.shape != saved.shape:
        raise _core.InvalidArgumentError(
            f"grad ({grad.dtype}, {tuple(grad.shape)}) and saved ({saved.dtype}, {tuple(saved.shape)}) must match")
    out = torch.empty_like(saved)
    if grad.stride() != out.stride() or not is_dense(grad.shape, grad.stride()):
        grad = _dense_like(grad, out)
    if saved.stride() != out.stride() or not is_dense(saved.shape, saved.stride()):
        saved = _dense_like(saved, out)
    if grad.get_device() != saved.get_device():
        raise _core.InvalidArgumentError(f"grad is on {grad.device} but saved on {saved.device}")
    if out.numel():
        device = out.get_device()
        _launcher(activation, saved.dtype, device, True, saved_output).launch(
            grad.data_ptr(), saved.data_ptr(), out.data_ptr(), out.numel(), _raw_stream(device), True)
    return out


@_backward.register_fake
def _(grad: Tensor, saved: Tensor, activation: str, saved_output: bool) -> Tensor:
    return torch.empty_like(saved)


def _setup_context(ctx: Any, inputs: Any, output: Tensor) -> None:
    x, activation = inputs
    ctx.activation = activation
    ctx.saved_output = saves_output(activation)
    ctx.save_for_backward(output if ctx.saved_output else x)


def _forward_grad(ctx: Any, grad: Tensor):
    (saved,) = ctx.saved_tensors
    return torch.ops.kplay.backward(grad, saved, ctx.activation, ctx.saved_output), None


_forward.register_autograd(_forward_grad, setup_context=_setup_context)


# ---- eager mode: straight to the launchers ---------------------------------------------------

try:  # inside torch.func transforms (vmap, grad) tensors are wrapped: leave them to the ops
    _functorch_active: Callable[[], bool] = torch._C._are_functorch_transforms_active
except AttributeError:  # pragma: no cover
    def _functorch_active() -> bool:
        return False

_is_compiling = torch.compiler.is_compiling
_increment_version = getattr(torch.autograd.graph, "increment_version", None)


def _eager_ok(x: Tensor) -> bool:
    """A plain contiguous CUDA tensor of a kplay dtype, outside compile and functorch: the eager
    path's preconditions, so its launches can vouch for the pointers."""
    return (not _is_compiling() and type(x) is Tensor and x.is_cuda and x.dtype in _DTYPES and x.is_contiguous()
            and not _functorch_active())


class _EagerActivation(torch.autograd.Function):
    """The op's autograd in eager mode, without the dispatcher: forward and backward call the
    launchers directly. Saves what saves_output() says, like the op."""

    @staticmethod
    def forward(ctx: Any, x: Tensor, activation: str) -> Tensor:  # type: ignore[override]
        out = torch.empty_like(x)
        device = x.get_device()
        if x.numel():
            _launcher(activation, x.dtype, device).launch(x.data_ptr(), 0, out.data_ptr(), x.numel(),
                                                          _raw_stream(device), True)
        ctx.activation = activation
        ctx.saved_output = saves_output(activation)
        ctx.save_for_backward(out if ctx.saved_output else x)
        return out

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx: Any, grad: Tensor):  # type: ignore[override]
        (saved,) = ctx.saved_tensors
        if type(grad) is not Tensor or grad.dtype != saved.dtype or grad.device != saved.device:
            return torch.ops.kplay.backward(grad, saved, ctx.activation, ctx.saved_output), None
        grad = grad.contiguous()  # e.g. the expanded ones of sum().backward()
        out = torch.empty_like(saved)
        if out.numel():
            device = out.get_device()
            _launcher(ctx.activation, saved.dtype, device, True, ctx.saved_output).launch(
                grad.data_ptr(), saved.data_ptr(), out.data_ptr(), out.numel(), _raw_stream(device), True)
        return out, None


class _EagerActivationInPlace(_EagerActivation):
    """In place with autograd, for activations that save their output (x becomes the output and is
    what backward reads), as torch's relu_ does; the others clone (see activation_)."""

    @staticmethod
    def forward(ctx: Any, x: Tensor, activation: str) -> Tensor:  # type: ignore[override]
        device = x.get_device()
        if x.numel():
            _launcher(activation, x.dtype, device).launch(x.data_ptr(), 0, x.data_ptr(), x.numel(),
                                                          _raw_stream(device), True)
        ctx.mark_dirty(x)
        ctx.activation = activation
        ctx.saved_output = True
        ctx.save_for_backward(x)
        return x


# ---- the functions users call ---------------------------------------------------------------

def activation(x: Tensor, activation: str) -> Tensor:
    """activation(x) for any kplay activation string, e.g. "selu" or "leaky_relu(negative_slope=0.2)".

    In eager mode a contiguous CUDA tensor skips the dispatcher: it launches straight through a
    cached kplay launcher, through _EagerActivation when it needs a gradient (the per-call host
    cost is then kplay's alone); everything else (torch.compile, tensor subclasses, functorch,
    other layouts) goes through the op.
    """
    if _eager_ok(x):  # the hot path of eager models: kept to a few attribute reads and one call
        if x.requires_grad and torch.is_grad_enabled():
            return _EagerActivation.apply(x, activation)
        out = torch.empty_like(x)
        n = x.numel()
        if n:
            device = x.get_device()
            launcher = _launchers.get((activation, x.dtype, device, False, False))
            if launcher is None:
                launcher = _launcher(activation, x.dtype, device)
            launcher.launch(x.data_ptr(), 0, out.data_ptr(), n, _raw_stream(device), True)
        return out
    return torch.ops.kplay.forward(x, activation)


def activation_(x: Tensor, activation: str) -> Tensor:
    """In place; returns x. See the module notes for tensors that require grad."""
    if x.requires_grad and torch.is_grad_enabled():
        if _eager_ok(x):
            keep_x = saves_output(activation)
            # A leaf or a view goes out of place: x.copy_ refuses a leaf before anything is
            # written, and handles views; in place the kernel would run before autograd's check.
            if keep_x and not x.is_leaf and not x._is_view():
                return _EagerActivationInPlace.apply(x, activation)
            # Where the input is saved, the copy back would overwrite it: clone it.
            return x.copy_(_EagerActivation.apply(x if keep_x else x.clone(), activation))
        # Under torch.compile the saved-output query (a C++ call) would break the graph: clone.
        keep_x = not _is_compiling() and saves_output(activation)
        y = torch.ops.kplay.forward(x if keep_x else x.clone(), activation)
        return x.copy_(y)
    if _increment_version is not None and _eager_ok(x):
        n = x.numel()
        if n:
            device = x.get_device()
            _launcher(activation, x.dtype, device).launch(x.data_ptr(), 0, x.data_ptr(), n, _raw_stream(device), True)
        if not x.is_inference():  # as torch's in-place ops do, so autograd sees the change
            _increment_version(x)
        return x
    torch.ops.kplay.forward_(x, activation)
    return x


# ---- gated activations: out = act(a) * b (the C++ notes, python/src/torch_ops_gated.cpp) -----

_FP8_OUT = {torch.float8_e4m3fn: _core.OUT_F8E4M3, torch.float8_e5m2: _core.OUT_F8E5M2}
# Launchers of gated(ACT) by (activation, dtype, device, backward, FP8 output code).
_gated_launchers: Dict[Tuple[str, torch.dtype, int, bool, int], Any] = {}
atexit.register(_gated_launchers.clear)


def _gated_launcher(activation: str, dtype: torch.dtype, device: int, backward: bool, out_code: int = 0) -> Any:
    key = (activation, dtype, device, backward, out_code)
    launcher = _gated_launchers.get(key)
    if launcher is None:
        text = activation if activation.lstrip().startswith("gated(") else f"gated({activation})"
        launcher = _gated_launchers[key] = _core.Launcher.cuda(text, _DTYPES[dtype], backward, False, device,
                                                               out_code)
    return launcher


def _rows_pitch(t: Tensor) -> Optional[int]:
    """The row pitch of t as rows of its last dimension (kplay::gated's operand); None where its
    leading dimensions do not fold into one pitch or its last stride is not 1."""
    d = t.shape[-1]
    if t.numel() == 0:
        return d
    if d != 1 and t.stride(-1) != 1:
        return None
    lead = [(n, s) for n, s in zip(t.shape[:-1], t.stride()[:-1]) if n != 1]
    if not lead:
        return d
    for (_, s), (n_in, s_in) in zip(lead[:-1], lead[1:]):
        if s != s_in * n_in:
            return None
    return lead[-1][1] if lead[-1][1] >= d else None


def _as_rows(t: Tensor) -> Tuple[Tensor, int]:
    p = _rows_pitch(t)
    if p is None:
        t = t.contiguous()
        p = t.shape[-1]
    return t, p


def _gated_d(x: Tensor, b: Optional[Tensor]) -> int:
    if x.dtype not in _DTYPES:
        raise _core.InvalidArgumentError(
            f"kplay.torch takes float32, float16, bfloat16 or float64 tensors; {'a' if b is not None else 'x'} is "
            f"{x.dtype}")
    if x.dim() == 0:
        raise _core.InvalidArgumentError("a gated activation takes [..., 2d] or [..., d] tensors; x has no dimensions")
    if b is None:
        if x.shape[-1] % 2:
            raise _core.InvalidArgumentError(f"x's last dimension must be even ([..., 2d]: a is its first half, b its "
                                             f"second), got {x.shape[-1]}")
        return x.shape[-1] // 2
    if b.dtype != x.dtype:
        raise _core.InvalidArgumentError(f"a is {x.dtype} but b is {b.dtype}; kplay does not convert")
    if b.shape != x.shape:
        raise _core.InvalidArgumentError(f"a has shape {list(x.shape)} but b has shape {list(b.shape)}")
    if b.device != x.device:
        raise _core.InvalidArgumentError(f"a is on {x.device} but b on {b.device}")
    return x.shape[-1]


def _gated_output(x: Tensor, out_dtype: Optional[torch.dtype], scale: float) -> Tuple[torch.dtype, int]:
    if out_dtype is None or out_dtype == x.dtype:
        if scale != 1.0:
            raise _core.InvalidArgumentError(f"scale is for FP8 output (out_dtype torch.float8_e4m3fn or "
                                             f"torch.float8_e5m2); got scale {scale} without it")
        return x.dtype, 0
    if out_dtype not in _FP8_OUT:
        raise _core.InvalidArgumentError(f"out_dtype must be None, the input's dtype, torch.float8_e4m3fn or "
                                         f"torch.float8_e5m2; got {out_dtype}")
    if not (0 < scale <= 3.4e38):
        raise _core.InvalidArgumentError(f"the FP8 scale must be a finite number above 0 (got {scale})")
    return out_dtype, _FP8_OUT[out_dtype]


def _check_cuda(x: Tensor, b: Optional[Tensor]) -> None:
    _dtype_code(x, "a" if b is not None else "x")
    if b is not None:
        _dtype_code(b, "b")


@torch.library.custom_op("kplay::gated_forward", mutates_args=())
def _gated_forward(x: Tensor, b: Optional[Tensor], activation: str, out_dtype: Optional[torch.dtype] = None,
                   scale: float = 1.0) -> Tensor:
    _check_cuda(x, b)
    d = _gated_d(x, b)
    dtype, out_code = _gated_output(x, out_dtype, scale)
    out = torch.empty(x.shape[:-1] + (d,), dtype=dtype, device=x.device)
    if out.numel():
        device = x.get_device()
        xa, pa = _as_rows(x)
        if b is None:
            pb_ptr, pb = xa.data_ptr() + d * xa.element_size(), pa
        else:
            xb, pb = _as_rows(b)
            pb_ptr = xb.data_ptr()
        _gated_launcher(activation, x.dtype, device, False, out_code).launch_gated_forward(
            xa.data_ptr(), 0, pa, pb_ptr, 0, pb, out.data_ptr(), 0, d, out.numel() // d, d, _raw_stream(device), True,
            0, scale)
    return out


@_gated_forward.register_fake
def _(x: Tensor, b: Optional[Tensor], activation: str, out_dtype: Optional[torch.dtype] = None,
      scale: float = 1.0) -> Tensor:
    d = _gated_d(x, b)
    return x.new_empty(x.shape[:-1] + (d,), dtype=_gated_output(x, out_dtype, scale)[0])


def _gated_grad_check(grad: Tensor, x: Tensor, d: int) -> None:
    want = x.shape[:-1] + (d,)
    if grad.dtype != x.dtype:
        raise _core.InvalidArgumentError(f"grad is {grad.dtype} but the inputs are {x.dtype}")
    if grad.shape != want:
        raise _core.InvalidArgumentError(f"grad has shape {list(grad.shape)}; expected {list(want)}")


@torch.library.custom_op("kplay::gated_backward", mutates_args=())
def _gated_backward(grad: Tensor, x: Tensor, b: Optional[Tensor], activation: str) -> List[Tensor]:
    _check_cuda(x, b)
    _dtype_code(grad, "grad")
    d = _gated_d(x, b)
    _gated_grad_check(grad, x, d)
    if grad.device != x.device:
        raise _core.InvalidArgumentError(f"grad is on {grad.device} but the inputs on {x.device}")
    out = [torch.empty(x.shape, dtype=x.dtype, device=x.device) for _ in range(1 if b is None else 2)]
    if grad.numel():
        device = x.get_device()
        g, pg = _as_rows(grad)
        xa, pa = _as_rows(x)
        if b is None:
            pb_ptr, pb = xa.data_ptr() + d * xa.element_size(), pa
            ga, gb, ld = out[0].data_ptr(), out[0].data_ptr() + d * xa.element_size(), 2 * d
        else:
            xb, pb = _as_rows(b)
            pb_ptr = xb.data_ptr()
            ga, gb, ld = out[0].data_ptr(), out[1].data_ptr(), d
        _gated_launcher(activation, x.dtype, device, True).launch_gated_backward(
            g.data_ptr(), 0, pg, xa.data_ptr(), 0, pa, pb_ptr, 0, pb, ga, 0, ld, gb, 0, ld, grad.numel() // d, d,
            _raw_stream(device), True)
    return out


@_gated_backward.register_fake
def _(grad: Tensor, x: Tensor, b: Optional[Tensor], activation: str) -> List[Tensor]:
    d = _gated_d(x, b)
    _gated_grad_check(grad, x, d)
    return [torch.empty_like(x, memory_format=torch.contiguous_format) for _ in range(1 if b is None else 2)]


def _gated_setup_context(ctx: Any, inputs: Any, output: Tensor) -> None:
    x, b, activation, out_dtype, _ = inputs
    if out_dtype is not None and out_dtype != x.dtype:
        raise _core.InvalidArgumentError(
            f"FP8 output (out_dtype {out_dtype}) has no backward: call it under torch.no_grad() or "
            "torch.inference_mode(), or on inputs that do not require grad")
    ctx.activation = activation
    ctx.two = b is not None
    ctx.save_for_backward(x, b)


def _gated_forward_grad(ctx: Any, grad: Tensor):
    x, b = ctx.saved_tensors
    r = torch.ops.kplay.gated_backward(grad, x, b if ctx.two else None, ctx.activation)
    return r[0], (r[1] if ctx.two else None), None, None, None


_gated_forward.register_autograd(_gated_forward_grad, setup_context=_gated_setup_context)
