"""kplay activations as PyTorch custom ops, with autograd, fake kernels (torch.compile) and
CUDA-graph-safe launches.

Design: three generic ops take the activation string, and thin Python wrappers give every
built-in of the registry its name and parameters (torch's, where torch has the activation):
    torch.ops.kplay.forward(Tensor x, str activation) -> Tensor
    torch.ops.kplay.forward_(Tensor(a!) x, str activation) -> ()          (in place)
    torch.ops.kplay.backward(Tensor grad, Tensor saved, str activation, bool saved_output) -> Tensor
    kplay.torch.selu(x), kplay.torch.selu_(x), kplay.torch.leaky_relu(x, negative_slope=0.2), ...
    kplay.torch.activation(x, "leaky_relu(negative_slope=0.2)")
One op per activation string would register a new op for every parameter value; the generic op
keeps the string as a graph constant, so torch.compile specializes on it all the same.

Saved tensor policy, set by each registry entry's saves_output (src/spec/activations.cpp):
autograd saves the forward output only where the derivative follows from it exactly (relu,
leaky_relu with a positive slope, hardtanh, ...: the derivative is a constant chosen by comparing
y) or where torch itself saves the output (sigmoid, tanh). Every other built-in saves the input,
as torch does: recovering the derivative from a rounded output loses accuracy (selu/elu/celu's
negative branch g*(y + lambda*alpha) cancels as y nears -lambda*alpha; in float16 that alone puts
the gradient 40 % off torch's). User activations save the output where
kplay.supports_saved_output(activation) says their snippet allows it.

Eager and compiled paths: in eager mode a plain CUDA tensor goes straight to a prepared kplay
launcher (kplay._core.Launcher, one per activation, dtype, direction and device, cached here),
through a torch.autograd.Function when it needs a gradient, so an eager call pays neither the
dispatcher nor kplay's per-call activation lookup. torch.compile, opcheck, tensor subclasses,
functorch transforms and non-contiguous layouts go through the torch.library ops below, which
launch through the same launchers where the layout is flat.

Launches go on torch's current stream of the tensor's device. Layouts: dense tensors (contiguous
or permuted, e.g. channels_last) run flat and the output keeps their strides; row-pitched 2-D
views (x[:, a:b], and N-D tensors whose leading dimensions fold into rows) use kplay's pitched
path (kplay::forward_2d) with a contiguous output; any other layout (broadcast, gapped inner
stride) is first copied to a dense tensor. Backward always works on dense operands (it copies a
non-dense grad or saved tensor). Tensors must be CUDA tensors of float32, float16, bfloat16 or
float64; anything else raises kplay.InvalidArgumentError.

CUDA graphs: kplay allocates nothing, never synchronizes, and launches on the current
(capturing) stream; outputs come from torch's allocator (the graph's private pool). A kernel's
first use compiles or loads it, which capture forbids: warm up (run the model once) before
capturing. A capture that would need a compile raises kplay.UnsupportedError saying so.

In-place variants (selu_) on a tensor that requires grad: where the output is saved, eager mode
runs in place and marks x dirty (as torch's relu_); otherwise, and under torch.compile, they run
out of place and copy the result back (x.copy_), so autograd sees a differentiable in-place
update, cloning the input first where backward needs it. Without grad they bump x's version
counter as torch's in-place ops do.
"""
from __future__ import annotations

import atexit

from typing import Any, Callable, Dict, Tuple

import torch
import torch.autograd.graph
from torch import Tensor

from . import _core
from . import _foreign
from . import _table
from ._layout import is_dense, plan

__all__ = ["activation", "activation_", "replace_activations", "saves_output"]

_DTYPES = {torch.float32: _core.F32, torch.float16: _core.F16, torch.bfloat16: _core.BF16, torch.float64: _core.F64}
_CUDA = _core.BACKEND_CUDA

try:  # what torch.compile's generated code uses: an int, no Stream object
    _raw_stream: Callable[[int], int] = torch._C._cuda_getCurrentRawStream
except AttributeError:  # pragma: no cover
    def _raw_stream(index: int) -> int:
        return torch.cuda.current_stream(index).cuda_stream

# Built-ins that save their input (the registry's saves_output is false); for the others C++ has
# the last word (leaky_relu saves its output only with a positive slope).
_INPUT_SAVERS = frozenset(e.activation for e in _table.BUILTINS if not e.saves_output)
_saves_output_cache: Dict[str, bool] = {}


def saves_output(activation: str) -> bool:
    """Whether autograd keeps the forward output (True) or the input (False) for backward; see the
    module notes for the policy."""
    r = _saves_output_cache.get(activation)
    if r is None:
        name = activation.split("(", 1)[0].strip()
        if name in _INPUT_SAVERS:
            _core.supports_saved_output(activation)  # raises for bad parameters, as the other branch does
            r = False
        else:
            r = bool(_core.supports_saved_output(activation))
        _saves_output_cache[activation] = r
    return r


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


def _make_functions(entry: _table.Entry) -> None:
    # A call without arguments (kt.selu(x)) skips binding and formatting: its string is fixed.
    plain = (None if any(d is _table.REQUIRED for _, d in entry.params)
             else _table.activation_string(entry.activation, {}))

    def fn(x: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        if plain is not None and not args and not kwargs:
            return activation(x, plain)
        values, inplace = _table.bind(entry, args, kwargs)
        act = _table.activation_string(entry.activation, values)
        return activation_(x, act) if inplace else activation(x, act)

    def fn_(x: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        values, _ = _table.bind(entry, args, kwargs)
        return activation_(x, _table.activation_string(entry.activation, values))

    params = ", ".join(f"{n}={d!r}" if d is not _table.REQUIRED else n for n, d in entry.params)
    fn.__name__, fn_.__name__ = entry.activation, entry.activation + "_"
    fn.__doc__ = (f"kplay's {entry.activation}(x{', ' + params if params else ''})"
                  + (" with torch's parameters." if entry.torch_class else "."))
    fn_.__doc__ = f"In-place {entry.activation}; returns x."
    globals()[fn.__name__] = fn
    globals()[fn_.__name__] = fn_
    __all__.extend([fn.__name__, fn_.__name__])


for _entry in _table.BUILTINS:  # every built-in, torch class or not
    _make_functions(_entry)


def replace_activations(model: torch.nn.Module, only_available: bool = True) -> torch.nn.Module:
    """Swaps every activation module of `model` (recursively, in place) that kplay computes for its
    kplay.nn counterpart with the same parameters, and returns the model: torch.nn's classes
    (kplay/_table.py) and transformers' and timm's activation classes (NewGELUActivation,
    QuickGELUActivation, ...: kplay/_foreign.py, which also says which it leaves alone and why).
    only_available=True keeps the original module where this kplay build lacks the activation
    (kplay.activations())."""
    from . import nn as knn

    available = set(_core.activations())
    for name, child in list(model.named_children()):
        cls = type(child)
        if cls.__module__.startswith("torch.nn"):
            entry = _table.BY_CLASS.get(cls.__name__)
            activation, make = (entry.activation, knn.from_torch) if entry is not None else (None, None)
        else:
            row = _foreign.find(child)
            activation, make = (row.activation, knn.from_foreign) if row is not None else (None, None)
        if activation is not None and (activation in available or not only_available):
            setattr(model, name, make(child))
        else:
            replace_activations(child, only_available)
    return model
