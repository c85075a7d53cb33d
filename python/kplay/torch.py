"""kplay activations as PyTorch operators, with autograd, fake kernels (torch.compile) and
CUDA-graph-safe launches.

Design: three generic ops take the activation string, and thin Python wrappers give every
built-in of the registry its name and parameters (torch's, where torch has the activation):
    torch.ops.kplay.forward(Tensor x, str activation) -> Tensor
    torch.ops.kplay.forward_(Tensor(a!) x, str activation) -> ()          (in place)
    torch.ops.kplay.backward(Tensor grad, Tensor saved, str activation, bool saved_output) -> Tensor
    kplay.torch.selu(x), kplay.torch.selu_(x), kplay.torch.leaky_relu(x, negative_slope=0.2), ...
    kplay.torch.activation(x, "leaky_relu(negative_slope=0.2)")
One op per activation string would register a new op for every parameter value; the generic op
keeps the string as a graph constant, so torch.compile specializes on it all the same. The gated
form, out = act(a) * b, has two ops of its own (gated_forward, gated_backward; their block at the
end of this module) behind kplay.torch.gated, swiglu, geglu and glu, and so has the softmax family
(softmax, softmax_backward; kplay/_torch_softmax.py) behind kplay.torch.softmax, log_softmax and
softmin.

Where they run: the C++ extension kplay._torch_ops (python/src/torch_ops*.cpp) registers the ops
with PyTorch's dispatcher, with kernels for CUDA and Meta (fake tensors) and the autograd formula
in C++; they launch kplay's prepared launchers (kplay::Launcher, cached per
activation string, dtype, direction and device) on torch's current stream. Eager calls with and
without grad, torch.ops.kplay.* and compiled graphs all take it; a kplay.torch function adds one
Python call in front. The extension is built against the torch it runs with (pip install
--no-build-isolation . in an environment with torch); where it is absent or was built for another
torch version, kplay/_torch_fallback.py registers the same ops in Python (torch.library.custom_op,
slower per call) and a RuntimeWarning says so once. EXTENSION says which is loaded.

Saved tensor policy, set by each registry entry's saves_output (src/spec/activations.cpp):
autograd saves the forward output only where the derivative follows from it exactly (relu,
leaky_relu with a positive slope, hardtanh, ...: the derivative is a constant chosen by comparing
y) or where torch itself saves the output (sigmoid, tanh). Every other built-in saves the input,
as torch does: recovering the derivative from a rounded output loses accuracy (selu/elu/celu's
negative branch g*(y + lambda*alpha) cancels as y nears -lambda*alpha; in float16 that alone puts
the gradient 40 % off torch's). User activations save the output where
kplay.supports_saved_output(activation) says their snippet allows it. There is no double backward
(kplay::backward has no derivative: differentiating it raises).

torch.compile: the ops trace with fullgraph=True (no graph break). Per activation a compiled graph
runs either kplay's kernel (an opaque call of its out= form, kplay/_torch_inductor.py; kplay's
accuracy bounds) or kplay's formula handed to Inductor as a decomposition, which Inductor fuses
with the neighbouring ops;
set_compile_mode("kernel" | "decompose" | "auto") chooses, "auto" by default
(kplay/_torch_decomp.py says what each mode decomposes and which bound holds).

Layouts: dense tensors (contiguous or permuted, e.g. channels_last) run flat and the output keeps
their strides; row-pitched 2-D views (x[:, a:b], and N-D tensors whose leading dimensions fold
into rows) use kplay's pitched path (kplay::forward_2d) with a dense output; any other layout
(broadcast, gapped inner stride) is first copied to a dense tensor. Backward always works on dense
operands (it copies a non-dense grad or saved tensor). Tensors are float32, float16, bfloat16 or
float64; anything else raises kplay.InvalidArgumentError, and every kplay failure raises kplay's
exception, from eager calls, torch.ops.kplay.* and backward alike.

CPU tensors: every op has a CPU kernel (kplay/_torch_cpu.py) that computes the activation with
torch's own functions and derivatives, so a model after replace_activations runs on the CPU with
the outputs and gradients torch gives it; kplay's kernels are for CUDA tensors.

CUDA graphs: kplay allocates nothing, never synchronizes, and launches on the current
(capturing) stream; outputs come from torch's allocator (the graph's private pool). A kernel's
first use compiles or loads it, which capture forbids: warm up (run the model once) before
capturing. A capture that would need a compile raises kplay.UnsupportedError saying so.

In-place variants (selu_) on a tensor that requires grad: eager mode runs in place and marks x
dirty, as torch's in-place activations do; backward reads x itself where the output is saved (as
torch's relu_), else a copy of x taken first. A leaf or a view, and any call under torch.compile,
runs out of place and copies the result back (x.copy_), so autograd sees a differentiable in-place
update, cloning the input first where backward needs it. Without grad they bump x's version
counter as torch's in-place ops do.
"""
from __future__ import annotations

import os
import sys
import warnings

from typing import Any, Dict, Optional

import torch
from torch import Tensor

from . import _core
from . import _foreign
from . import _table
from . import _torch_decomp

__all__ = ["activation", "activation_", "replace_activations", "saves_output", "set_compile_mode", "compile_mode",
           "register_decompositions", "EXTENSION"]

# Built-ins that save their input (the registry's saves_output is false); for the others C++ has
# the last word (leaky_relu saves its output only with a positive slope).
_INPUT_SAVERS = frozenset(e.activation for e in _table.BUILTINS if not e.saves_output)
_saves_output_cache: Dict[str, bool] = {}


@torch.compiler.assume_constant_result  # a constant of the graph under torch.compile
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


def _load_extension() -> str:
    """Imports kplay._torch_ops where it was built for this torch; the reason it was not, else."""
    if os.environ.get("KPLAY_TORCH_OPS", "") == "python":
        return "KPLAY_TORCH_OPS=python asks for the Python operators"
    try:
        from . import _torch_ops_build
    except ImportError:
        return ("this kplay was built without torch (pip install . builds in an isolated environment); "
                "pip install --no-build-isolation . in an environment with torch builds them")
    # The release must match; the local tag (+cu130, +cpu: which CUDA torch was built for) does not
    # change the C++ interface the extension uses (libc10, libtorch_cpu, libtorch_python).
    if _torch_ops_build.TORCH_VERSION.split("+")[0] != torch.__version__.split("+")[0]:
        return (f"they were built for torch {_torch_ops_build.TORCH_VERSION} and this is torch {torch.__version__}, "
                "whose C++ ABI may differ; reinstall kplay with pip install --no-build-isolation . to rebuild them")
    try:
        from . import _torch_ops  # noqa: F401  (registers the ops)
    except ImportError as e:
        return f"kplay._torch_ops does not load: {e}"
    return ""


_why_not = _load_extension()
EXTENSION: bool = not _why_not  # the C++ operators are registered (else the Python ones)
if not EXTENSION:
    warnings.warn(f"kplay.torch: using the Python operators, slower per call than the C++ ones: {_why_not}",
                  RuntimeWarning, stacklevel=2)
    from . import _torch_fallback

_forward = torch.ops.kplay.forward.default
_forward_ = torch.ops.kplay.forward_.default
if EXTENSION:  # eager calls: the extension's entry points, straight to the dispatcher's typed call
    from ._torch_ops import forward as _forward_raw, forward_ as _forward_raw_
_is_compiling = torch.compiler.is_compiling

if "torch._inductor.decomposition" in sys.modules:  # Inductor is there already: no import to save
    _torch_decomp.register()


def set_compile_mode(mode: str) -> None:
    """How graphs compiled from now on run kplay's activations: "kernel" (kplay's kernel, an opaque
    op), "decompose" (kplay's formula as torch operations that Inductor fuses with its
    neighbours) or "auto" (the default: the formula where it costs no accuracy, else the kernel);
    kplay/_torch_decomp.py has the details. Graphs compiled earlier keep theirs: call
    torch._dynamo.reset() to recompile them."""
    _torch_decomp.set_mode(mode)


def compile_mode() -> str:
    """The mode set_compile_mode() set ("auto" by default)."""
    return _torch_decomp.mode()


def register_decompositions() -> None:
    """Hands Inductor kplay's formulas now (it imports Inductor). kplay.torch's functions do it when
    torch.compile first traces one of them; a graph that calls torch.ops.kplay.* directly, with no
    kplay.torch call traced before it in the process, needs this call first to decompose."""
    _torch_decomp.register()


@torch.compiler.assume_constant_result
def _prepare_compile(activation: str) -> bool:
    # Runs once per traced call, at trace time: Inductor's table gets kplay's formulas before
    # AOTAutograd reads it (importing Inductor eagerly would cost every import of kplay.torch).
    _torch_decomp.register()
    return True


# ---- the functions users call ---------------------------------------------------------------

def activation(x: Tensor, activation: str) -> Tensor:
    """activation(x) for any kplay activation string, e.g. "selu" or "leaky_relu(negative_slope=0.2)".

    Calls torch.ops.kplay.forward, whose autograd (C++) saves what saves_output() says.
    """
    if not EXTENSION:
        return _torch_fallback.activation(x, activation)
    if _is_compiling():
        _prepare_compile(activation)
        return _forward(x, activation)
    return _forward_raw(x, activation)


def activation_(x: Tensor, activation: str) -> Tensor:
    """In place; returns x. See the module notes for tensors that require grad."""
    if not EXTENSION:
        return _torch_fallback.activation_(x, activation)
    if _is_compiling():
        _prepare_compile(activation)
        if x.requires_grad and torch.is_grad_enabled():
            # Out of place and copied back: x.copy_ is a differentiable in-place update.
            return x.copy_(_forward(x if saves_output(activation) else x.clone(), activation))
        if _torch_decomp.decomposes(activation, x.dtype):
            return x.copy_(_forward(x, activation))  # the formula, fused with the copy
        _forward_(x, activation)
        return x
    _forward_raw_(x, activation)
    return x


def _make_functions(entry: _table.Entry) -> None:
    # A call without arguments (kt.selu(x)) skips binding and formatting: its string is fixed.
    plain = (None if any(d is _table.REQUIRED for _, d in entry.params)
             else _table.activation_string(entry.activation, {}))

    def fn(x: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        if plain is not None and not args and not kwargs:
            if EXTENSION and not _is_compiling():  # kt.selu(x), eager: straight to the C++ op
                return _forward_raw(x, plain)
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


def replace_activations(model: torch.nn.Module, only_available: bool = True,
                        gated_mlp: bool = True) -> torch.nn.Module:
    """Swaps every activation module of `model` (recursively, in place) that kplay computes for its
    kplay.nn counterpart with the same parameters, and returns the model: torch.nn's classes
    (kplay/_table.py; Softmax, LogSoftmax, Softmin and Softmax2d, kplay.nn's row modules) and transformers' and timm's activation classes (NewGELUActivation,
    QuickGELUActivation, ...: kplay/_foreign.py, which also says which it leaves alone and why),
    and torch.nn.GLU for kplay.nn.GLU. gated_mlp=True also swaps each LLaMA-style gated MLP
    (down_proj(act_fn(gate_proj(x)) * up_proj(x)): LlamaMLP, MistralMLP, Qwen2MLP, GemmaMLP, ...;
    gated_mlp_activation() says what is taken) for kplay.nn.GatedMLP, the same Linear children
    (weights, names) around one fused gated kernel. only_available=True keeps the original module
    where this kplay build lacks the activation (kplay.activations())."""
    from . import nn as knn

    available = set(_core.activations())
    for name, child in list(model.named_children()):
        fused = _gated_replacement(child, available, only_available, gated_mlp)
        if fused is not None:  # torch.nn.GLU, or a gated MLP as one kernel (their block below)
            setattr(model, name, fused)
            continue
        row = knn.softmax_from_torch(child)
        if row is not None:  # torch.nn.Softmax, LogSoftmax, Softmin, Softmax2d
            setattr(model, name, row)
            continue
        cls = type(child)
        if isinstance(child, torch.nn.PReLU) and cls.__module__.startswith("torch.nn"):
            setattr(model, name, knn.PReLU.from_torch(child))  # takes over its weight Parameter
            continue
        if cls.__module__.startswith("torch.nn"):
            entry = _table.BY_CLASS.get(cls.__name__)
            activation, make = (entry.activation, knn.from_torch) if entry is not None else (None, None)
        else:
            row = _foreign.find(child)
            activation, make = (row.activation, knn.from_foreign) if row is not None else (None, None)
        if activation is not None and (activation in available or not only_available):
            setattr(model, name, make(child))
        else:
            replace_activations(child, only_available, gated_mlp)
    return model


# ---- gated activations: out = act(a) * b ------------------------------------------------------
#
# torch.ops.kplay.gated_forward(x, b, activation, out_dtype=None, scale=1.) and gated_backward
# (python/src/torch_ops_gated.cpp): b None takes x as [..., 2d] (a its first half, b its
# second, vLLM's layout), else x is a and b is b, both [..., d] (Hugging Face's gate_proj and
# up_proj outputs). Each operand is read as rows of its last dimension with its own row pitch: a
# column slice (x[..., :d] of a wider tensor) is read where it is, no copy; other layouts are
# copied first. Autograd saves a and b, and its backward is one kernel writing both gradients (the
# packed form: one [..., 2d] gradient). FP8 output is forward only.

_gated_forward = torch.ops.kplay.gated_forward.default
if EXTENSION:  # eager calls without FP8 output: the extension's entry point, straight to the typed call
    from ._torch_ops import gated_forward as _gated_raw

__all__ += ["gated", "swiglu", "geglu", "glu", "gated_mlp_activation"]


def gated(x: Tensor, b: Any = None, activation: Optional[str] = None, *, out_dtype: Optional[torch.dtype] = None,
          scale: float = 1.0) -> Tensor:
    """act(a) * b in one kernel: gated(x) and gated(x, "gelu") take x of shape [..., 2d] (a its first
    half along the last dimension, b its second) and return [..., d]; gated(a, b, "silu") takes two
    tensors of one shape. activation: any kplay activation text, "silu" by default (SwiGLU).
    out_dtype=torch.float8_e4m3fn or torch.float8_e5m2 writes fp8(act(a) * b / scale), saturating
    (CUDA sm_89 and newer; forward only, no autograd)."""
    if isinstance(b, str):
        if activation is not None:
            raise TypeError("gated() got the activation twice: as b and as activation=")
        activation, b = b, None
    if activation is None:
        activation = "silu"
    elif not isinstance(activation, str):
        raise TypeError(f"activation must be a str such as 'silu', not {type(activation).__name__}")
    if _is_compiling():
        _prepare_compile(activation)
    elif EXTENSION and out_dtype is None and scale == 1.0:
        return _gated_raw(x, b, activation)
    return _gated_forward(x, b, activation, out_dtype, scale)


def swiglu(x: Tensor, b: Optional[Tensor] = None, *, out_dtype: Optional[torch.dtype] = None,
           scale: float = 1.0) -> Tensor:
    """silu(a) * b: gated(x, b, "silu")."""
    return gated(x, b, "silu", out_dtype=out_dtype, scale=scale)


def geglu(x: Tensor, b: Optional[Tensor] = None, approximate: str = "none", *,
          out_dtype: Optional[torch.dtype] = None, scale: float = 1.0) -> Tensor:
    """gelu(a) * b, with torch's gelu's approximate ("none" or "tanh"): gated(x, b, "gelu")."""
    if approximate not in ("none", "tanh"):
        raise _core.InvalidArgumentError(f"approximate must be 'none' or 'tanh'; got {approximate!r}")
    act = "gelu" if approximate == "none" else "gelu(approximate=tanh)"
    return gated(x, b, act, out_dtype=out_dtype, scale=scale)


def glu(x: Tensor, dim: int = -1) -> Tensor:
    """torch.nn.functional.glu: x halved along dim into u and v, u * sigmoid(v). torch puts the
    sigmoid on the second half, so this is gated(sigmoid) with a = v and b = u, read as column
    slices of x where dim is the last dimension; another dim is moved last and copied once."""
    if not isinstance(x, Tensor) or x.dim() == 0:
        raise _core.InvalidArgumentError("glu halves a dimension: it takes a tensor of at least one dimension")
    ndim = x.dim()
    if not -ndim <= dim < ndim:
        raise _core.InvalidArgumentError(f"dim {dim} is out of range for a tensor of {ndim} dimensions")
    dim %= ndim
    n = x.shape[dim]
    if n % 2:
        raise _core.InvalidArgumentError(f"glu halves dimension {dim}, which must be even; its size is {n}")
    if x.device.type == "cpu":  # torch's own glu (its kernel's sigmoid, to the last bit)
        return torch.nn.functional.glu(x, dim)
    t = x if dim == ndim - 1 else x.movedim(dim, -1).contiguous()
    h = n // 2
    out = gated(t[..., h:], t[..., :h], "sigmoid")
    return out if dim == ndim - 1 else out.movedim(-1, dim)


# ---- replace_activations: LLaMA-style gated MLPs ------------------------------------------------

_gated_forward_source: Dict[type, bool] = {}


def _computes_gated_mlp(cls: type) -> bool:
    """Whether cls.forward(self, x) is `return self.down_proj(self.act_fn(self.gate_proj(x)) *
    self.up_proj(x))` (or assigns that to a name and returns it): Hugging Face's LlamaMLP,
    MistralMLP, Qwen2MLP, GemmaMLP, ... Read from its source once per class; a forward whose
    source is not there (compiled, generated) is not taken."""
    known = _gated_forward_source.get(cls)
    if known is not None:
        return known
    import ast
    import inspect
    import textwrap

    ok = False
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls.forward)))
        fn = tree.body[0]
        if isinstance(fn, ast.FunctionDef) and len(fn.args.args) == 2 and not (
                fn.args.vararg or fn.args.kwarg or fn.args.kwonlyargs or fn.args.posonlyargs or fn.decorator_list):
            x = fn.args.args[1].arg
            want = ast.dump(ast.parse(f"self.down_proj(self.act_fn(self.gate_proj({x})) * self.up_proj({x}))",
                                      mode="eval").body)
            body = [s for s in fn.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
            if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None:
                ok = ast.dump(body[0].value) == want
            elif (len(body) == 2 and isinstance(body[0], ast.Assign) and len(body[0].targets) == 1
                  and isinstance(body[0].targets[0], ast.Name) and isinstance(body[1], ast.Return)
                  and isinstance(body[1].value, ast.Name)):
                ok = body[1].value.id == body[0].targets[0].id and ast.dump(body[0].value) == want
    except (OSError, TypeError, SyntaxError, IndexError):
        ok = False
    _gated_forward_source[cls] = ok
    return ok


def _activation_of(module: Any) -> Optional[str]:
    """The kplay activation text a module computes (torch.nn's classes, transformers' and timm's,
    kplay.nn's own); None where kplay has none."""
    from . import nn as knn

    if isinstance(module, knn.Activation):
        return module.activation
    cls = type(module)
    if cls.__module__.startswith("torch.nn"):
        entry = _table.BY_CLASS.get(cls.__name__)
        if entry is None:
            return None
        return _table.activation_string(entry.activation, {n: getattr(module, n) for n, _ in entry.params})
    row = _foreign.find(module)
    return _foreign.activation_text(row) if row is not None else None


def gated_mlp_activation(module: torch.nn.Module) -> Optional[str]:
    """The activation of a LLaMA-style gated MLP, down_proj(act_fn(gate_proj(x)) * up_proj(x)),
    found by its structure: gate_proj, up_proj and down_proj torch.nn.Linear children of matching
    widths, an act_fn that kplay computes, and a forward that is that expression (its source);
    None for any other module."""
    lin = torch.nn.Linear
    gate, up, down = (getattr(module, n, None) for n in ("gate_proj", "up_proj", "down_proj"))
    if not (isinstance(gate, lin) and isinstance(up, lin) and isinstance(down, lin)):
        return None
    if (gate.in_features, gate.out_features) != (up.in_features, up.out_features) or \
            down.in_features != gate.out_features:
        return None
    act = getattr(module, "act_fn", None)
    if not isinstance(act, torch.nn.Module) or not _computes_gated_mlp(type(module)):
        return None
    return _activation_of(act)


def _gated_replacement(module: torch.nn.Module, available: Any, only_available: bool,
                       gated_mlp: bool) -> Optional[torch.nn.Module]:
    """kplay's module for torch.nn.GLU (kplay.nn.GLU) or, with gated_mlp, a LLaMA-style gated MLP
    (kplay.nn.GatedMLP); None for any other module."""
    from . import nn as knn

    if type(module) is torch.nn.GLU:
        return knn.GLU(module.dim) if "sigmoid" in available or not only_available else None
    text = gated_mlp_activation(module) if gated_mlp else None
    if text is None or (only_available and text.split("(", 1)[0].strip() not in available):
        return None
    return knn.GatedMLP.from_module(module, text)


# ---- PReLU and RReLU (kplay/_torch_slope.py: their ops) ----------------------------------------

if not (EXTENSION and getattr(sys.modules.get("kplay._torch_ops"), "PRELU_RRELU_OPS", 0)):
    from . import _torch_slope  # noqa: E402,F401  (registers torch.ops.kplay.prelu, rrelu_train, backwards)

__all__.extend(["prelu", "rrelu_seed"])  # rrelu and rrelu_ are the registry's, redefined below


def prelu(x: Tensor, weight: Tensor) -> Tensor:
    """torch.nn.functional.prelu: x > 0 ? x : weight[c] * x, c the channel (dim 1), or weight's one
    element for every x. A weight of any other length raises kplay.InvalidArgumentError (a
    ValueError). Gradients for x and weight; the weight's is deterministic (docs/activations.md)."""
    return torch.ops.kplay.prelu(x, weight)


def rrelu_seed(generator: Any = None) -> int:
    """A seed for RReLU's training draws from torch's random state: `generator`, else torch's default
    CPU generator, which torch.manual_seed seeds (so a seeded run repeats; the draws are kplay's,
    not torch's Philox stream). A CUDA generator costs a synchronization (.item())."""
    device = generator.device if generator is not None else "cpu"
    return int(torch.randint(0, 2**62, (), generator=generator, device=device).item())


def rrelu(x: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False, inplace: bool = False,
          *, generator: Any = None, seed: Any = None) -> Tensor:
    """torch.nn.functional.rrelu. Evaluation (training=False): leaky_relu with the slope
    (lower + upper) / 2, exactly as torch. Training: each x <= 0 times its own slope, uniform in
    [lower, upper], drawn in the kernel from `seed` (else rrelu_seed(generator)) and the element's
    index, and drawn again by backward: nothing but x is saved. Under torch.compile drawing the
    seed (.item()) breaks the graph: pass seed= to keep one graph."""
    if not lower <= upper:
        raise _core.InvalidArgumentError(
            f"rrelu's lower ({lower}) must be <= upper ({upper}), as torch's rrelu requires")
    if not training:
        text = _table.activation_string("rrelu", {"lower": float(lower), "upper": float(upper)})
        return activation_(x, text) if inplace else activation(x, text)
    s = rrelu_seed(generator) if seed is None else int(seed)
    if inplace:
        # Backward reads x: the op takes a copy where x needs its gradient, as torch's rrelu_ keeps
        # its noise apart from x.
        needs = x.requires_grad and torch.is_grad_enabled()
        return x.copy_(torch.ops.kplay.rrelu_train(x.clone() if needs else x, float(lower), float(upper), s, 0))
    return torch.ops.kplay.rrelu_train(x, float(lower), float(upper), s, 0)


def rrelu_(x: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False, *,
           generator: Any = None, seed: Any = None) -> Tensor:
    """In-place rrelu; returns x."""
    return rrelu(x, lower, upper, training, True, generator=generator, seed=seed)


# ---- the softmax family (kplay/_torch_softmax.py: its ops, layouts and CPU kernels) ------------

from . import _softmax, _torch_softmax  # noqa: E402,F401  (registers torch.ops.kplay.softmax, softmax_backward)

__all__.extend(["softmax", "log_softmax", "softmin"])


def _row_op(x: Tensor, dim: Any, dtype: Optional[torch.dtype], activation: str) -> Tensor:
    if dtype is not None:
        x = x.to(dtype)  # torch's dtype=: the input cast before the operation
    return torch.ops.kplay.softmax(x, dim, activation)


def softmax(x: Tensor, dim: int, dtype: Optional[torch.dtype] = None, *, accuracy: str = "exact") -> Tensor:
    """torch.softmax(x, dim, dtype=None) by kplay's row kernel, with autograd from the saved output.
    accuracy="torch" (float32; keyword only) takes torch's formula in float for the forward, faster
    than the exact kernel and within the bound docs/accuracy.md states ("The softmax family at
    torch's accuracy"); the backward stays exact (log_softmax's: torch's formula too).
    No copy where x is contiguous (any dim: one not the last is read as strided rows, and the output
    is contiguous), or where dim has unit stride with the other dimensions folding into rows of one
    pitch (a channels-last image's channels: the output keeps that layout); any other layout
    (broadcast or gapped strides) is first copied with dim moved last: an extra read and write of
    the input, and the output keeps that layout (dim last in memory)."""
    return _row_op(x, dim, dtype, _softmax.family_text("softmax", accuracy))


def log_softmax(x: Tensor, dim: int, dtype: Optional[torch.dtype] = None, *, accuracy: str = "exact") -> Tensor:
    """torch.log_softmax(x, dim, dtype=None); layouts, copies and accuracy as softmax()."""
    return _row_op(x, dim, dtype, _softmax.family_text("log_softmax", accuracy))


def softmin(x: Tensor, dim: int, dtype: Optional[torch.dtype] = None, *, accuracy: str = "exact") -> Tensor:
    """torch.nn.functional.softmin(x, dim, dtype=None): softmax(-x); layouts, copies and accuracy as
    softmax()."""
    return _row_op(x, dim, dtype, _softmax.family_text("softmin", accuracy))


from . import _torch_cpu  # noqa: E402  (after every op above is registered)

_torch_cpu.register()
