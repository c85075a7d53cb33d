"""Drop-in torch.nn activation modules backed by kplay: kplay.nn.SELU(), kplay.nn.GELU(approximate="tanh"),
kplay.nn.LeakyReLU(0.2, inplace=True), ... with torch's class names, arguments and defaults: one
for every built-in whose registry entry names a torch.nn class (kplay/_table.py's TABLE). Each
module's `activation` attribute is the kplay string it runs; Activation runs any other (the
built-ins torch has no class for, as Activation("quick_gelu")). from_foreign() gives the module for
a transformers or timm activation class (kplay/_foreign.py). The gated forms: GLU (torch.nn.GLU's),
Gated (act(a) * b for any activation) and GatedMLP (a LLaMA-style MLP around one gated kernel,
which replace_activations makes from Hugging Face's). The softmax family: Softmax, LogSoftmax,
Softmin and Softmax2d (kplay.torch.softmax's row kernel).
"""
from __future__ import annotations

from typing import Any, Optional

import torch

from . import _foreign, _table
from ._softmax import family_text
from . import torch as ktorch

__all__ = ["Activation", "from_torch", "from_foreign"]


class Activation(torch.nn.Module):
    """Any kplay activation string as a module, e.g. Activation("leaky_relu(negative_slope=0.2)")."""

    def __init__(self, activation: str, inplace: bool = False) -> None:
        super().__init__()
        self.activation = activation
        self.inplace = inplace

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.inplace:
            return ktorch.activation_(x, self.activation)
        return ktorch.activation(x, self.activation)

    def extra_repr(self) -> str:
        return f"{self.activation!r}" + (", inplace=True" if self.inplace else "")


def _make_class(entry: _table.Entry) -> type:
    def __init__(self: Activation, *args: Any, **kwargs: Any) -> None:
        values, inplace = _table.bind(entry, args, kwargs)
        Activation.__init__(self, _table.activation_string(entry.activation, values), inplace)
        for name, default in entry.params:  # torch's attributes, for code that reads them
            setattr(self, name, values.get(name, default))

    params = ", ".join(f"{n}={d!r}" if d is not _table.REQUIRED else n for n, d in entry.params)
    if entry.inplace:
        params = (params + ", " if params else "") + "inplace=False"
    doc = f"kplay's torch.nn.{entry.torch_class}({params}): runs kplay activation '{entry.activation}'."
    return type(entry.torch_class, (Activation,), {"__init__": __init__, "__doc__": doc, "__module__": __name__})


for _entry in _table.TABLE:
    globals()[_entry.torch_class] = _make_class(_entry)
    __all__.append(_entry.torch_class)


def from_torch(module: torch.nn.Module) -> Activation:
    """The kplay module equivalent to a torch.nn activation module (same parameters)."""
    entry = _table.BY_CLASS.get(type(module).__name__)
    if entry is None:
        raise TypeError(f"kplay has no counterpart of {type(module).__name__}; it maps "
                        f"{', '.join(e.torch_class for e in _table.TABLE)}")
    kwargs = {name: getattr(module, name) for name, _ in entry.params}
    if entry.inplace:
        kwargs["inplace"] = bool(getattr(module, "inplace", False))
    return globals()[entry.torch_class](**kwargs)


def from_foreign(module: torch.nn.Module) -> Activation:
    """The kplay module equivalent to a transformers or timm activation module (kplay/_foreign.py's
    TABLE): kplay.nn's torch-named class where the activation has one (NewGELUActivation ->
    GELU(approximate="tanh")), else Activation (QuickGELUActivation -> Activation("quick_gelu")).
    The module's `inplace`, where it has one, is kept where kplay's module takes it."""
    row = _foreign.find(module)
    if row is None:
        cls = type(module)
        raise TypeError(f"kplay has no counterpart of {cls.__module__}.{cls.__name__}")
    entry = _table.BY_ACTIVATION[row.activation]
    inplace = bool(getattr(module, "inplace", False))
    if entry.torch_class:
        kwargs = dict(row.params)
        if entry.inplace:
            kwargs["inplace"] = inplace
        return globals()[entry.torch_class](**kwargs)
    return Activation(_foreign.activation_text(row), inplace)


# ---- gated activations ---------------------------------------------------------------------------

__all__ += ["GLU", "Gated", "GatedMLP"]


class GLU(torch.nn.Module):
    """kplay's torch.nn.GLU(dim=-1): x halved along dim into u and v, u * sigmoid(v)
    (kplay.torch.glu: gated(sigmoid) in one kernel)."""

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ktorch.glu(x, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Gated(torch.nn.Module):
    """act(a) * b as a module (kplay.torch.gated): Gated("silu")(x) on x of shape [..., 2d], or
    Gated("silu")(a, b)."""

    def __init__(self, activation: str = "silu") -> None:
        super().__init__()
        self.activation = activation

    def forward(self, x: torch.Tensor, b: Optional[torch.Tensor] = None) -> torch.Tensor:
        return ktorch.gated(x, b, self.activation)

    def extra_repr(self) -> str:
        return repr(self.activation)


class GatedMLP(torch.nn.Module):
    """A LLaMA-style gated MLP, down_proj(act(gate_proj(x)) * up_proj(x)), with act(a) * b as one
    kplay kernel (forward and backward). kplay.torch.replace_activations makes it from Hugging
    Face's LlamaMLP, MistralMLP, Qwen2MLP, GemmaMLP, ... (from_module): the same Linear children,
    so the weights and their names stay as they were; act_fn is kplay's module of the activation,
    kept for code that reads it (forward computes it inside the fused kernel)."""

    def __init__(self, gate_proj: torch.nn.Module, up_proj: torch.nn.Module, down_proj: torch.nn.Module,
                 activation: str = "silu") -> None:
        super().__init__()
        self.gate_proj = gate_proj
        self.up_proj = up_proj
        self.down_proj = down_proj
        self.activation = activation
        self.act_fn = Activation(activation)

    @classmethod
    def from_module(cls, module: torch.nn.Module, activation: str) -> "GatedMLP":
        """The fused MLP over `module`'s own gate_proj, up_proj and down_proj, with its plain
        attributes (config, hidden_size, ...) and its training flag."""
        fused = cls(module.gate_proj, module.up_proj, module.down_proj, activation)
        act = getattr(module, "act_fn", None)
        if isinstance(act, torch.nn.Module):
            try:  # kplay.nn's torch-named class where there is one (SiLU, GELU(approximate="tanh"), ...)
                fused.act_fn = (act if isinstance(act, Activation) else
                                from_torch(act) if type(act).__module__.startswith("torch.nn") else from_foreign(act))
            except TypeError:
                pass
        for key, value in vars(module).items():
            if not key.startswith("_") and key != "training" and not hasattr(fused, key):
                setattr(fused, key, value)
        fused.replaced = f"{type(module).__module__}.{type(module).__name__}"
        return fused.train(module.training)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(ktorch.gated(self.gate_proj(x), self.up_proj(x), self.activation))

    def extra_repr(self) -> str:
        return f"activation={self.activation!r}"


# ---- PReLU and RReLU: a learned weight, and training's random slopes -----------------------------

class PReLU(torch.nn.Module):
    """kplay's torch.nn.PReLU(num_parameters=1, init=0.25): x > 0 ? x : weight[c] * x with a learned
    weight of num_parameters elements (1, or the input's channels, dim 1)."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.num_parameters = num_parameters
        self.init = init
        self.weight = torch.nn.Parameter(torch.empty(num_parameters, device=device, dtype=dtype).fill_(init))

    @classmethod
    def from_torch(cls, module: torch.nn.PReLU) -> "PReLU":
        """kplay's module in place of torch's, taking over its weight Parameter (its values, and the
        place an optimizer made earlier holds)."""
        new = cls.__new__(cls)
        torch.nn.Module.__init__(new)
        new.num_parameters = module.num_parameters
        new.init = getattr(module, "init", 0.25)
        new.weight = module.weight
        return new

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ktorch.prelu(x, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class RReLU(Activation):
    """kplay's torch.nn.RReLU(lower=1/8, upper=1/3, inplace=False): in training a slope per element,
    uniform in [lower, upper], drawn in the kernel from a seed taken from torch's random state
    (kplay.torch.rrelu_seed) and drawn again by backward; in evaluation the mean slope, as torch.
    `activation` is the evaluation's kplay string."""

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False) -> None:
        super().__init__(_table.activation_string("rrelu", {"lower": float(lower), "upper": float(upper)}), inplace)
        self.lower = lower
        self.upper = upper

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ktorch.rrelu(x, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}" + (", inplace=True" if self.inplace else "")


__all__.append("PReLU")  # RReLU is in already: the registry's class, replaced by this one


# ---- the softmax family --------------------------------------------------------------------------

__all__ += ["Softmax", "LogSoftmax", "Softmin", "Softmax2d", "softmax_from_torch"]


def _implicit_dim(name: str, ndim: int) -> int:
    """torch's choice where dim is None (deprecated there, with its warning): 0 for 0-, 1- and 3-D
    inputs, else 1."""
    get = getattr(torch.nn.functional, "_get_softmax_dim", None)
    if get is not None:
        return get(name, ndim, 5)
    return 0 if ndim in (0, 1, 3) else 1


class _RowModule(torch.nn.Module):
    activation = ""  # "softmax", "log_softmax" or "softmin"

    def __init__(self, dim: Optional[int] = None, *, accuracy: str = "exact") -> None:
        super().__init__()
        self.dim = dim
        self.accuracy = accuracy
        self._text = family_text(self.activation, accuracy)  # raises for an accuracy not "exact" or "torch"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dim = self.dim if self.dim is not None else _implicit_dim(self.activation, x.dim())
        return torch.ops.kplay.softmax(x, dim, self._text)

    def extra_repr(self) -> str:
        return f"dim={self.dim}" + (f", accuracy={self.accuracy!r}" if self.accuracy != "exact" else "")


class Softmax(_RowModule):
    """kplay's torch.nn.Softmax(dim=None): softmax along dim by kplay's row kernel
    (kplay.torch.softmax says which layouts it reads without a copy). accuracy="torch" (keyword
    only; LogSoftmax and Softmin too): float32's forward by torch's formula in float
    (docs/accuracy.md)."""
    activation = "softmax"


class LogSoftmax(_RowModule):
    """kplay's torch.nn.LogSoftmax(dim=None)."""
    activation = "log_softmax"


class Softmin(_RowModule):
    """kplay's torch.nn.Softmin(dim=None): softmax of -x."""
    activation = "softmin"


class Softmax2d(torch.nn.Module):
    """kplay's torch.nn.Softmax2d(): softmax over the channels (dim -3) of a [C, H, W] or [N, C, H, W]
    input. A contiguous tensor's channels are read where they are as strided rows (the output
    contiguous), a channels-last tensor's as rows (the output channels-last)."""
    activation = "softmax"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {x.dim()}D instead")
        return torch.ops.kplay.softmax(x, -3, "softmax")


_ROW_CLASSES = {torch.nn.Softmax: Softmax, torch.nn.LogSoftmax: LogSoftmax, torch.nn.Softmin: Softmin}


def softmax_from_torch(module: torch.nn.Module) -> Optional[torch.nn.Module]:
    """kplay's module for torch.nn.Softmax, LogSoftmax, Softmin (the same dim) or Softmax2d; None for
    any other module."""
    cls = type(module)
    if cls is torch.nn.Softmax2d:
        return Softmax2d()
    mine = _ROW_CLASSES.get(cls)
    return mine(getattr(module, "dim", None)) if mine is not None else None
