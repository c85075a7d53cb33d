"""Activation modules of other libraries that compute a kplay built-in: transformers' and timm's
classes, recognized by their defining module and class name (kplay.torch.replace_activations swaps
them for kplay.nn modules). A small explicit table, since these are foreign classes, not built-ins;
each row was read against its library's source (transformers 5.24, transformers/activations.py;
timm 1.0.31, timm/layers/activations.py and activations_me.py). Needs no torch.

A class is mapped where it computes the activation's function: its definition and its autograd
derivative, branch points included, not its roundings (NewGELUActivation spells the tanh formula
in torch ops, each rounded to the dtype; kplay's gelu(approximate=tanh) is within its ulp bound of
the exact value). The classes of ACT2CLS that are torch.nn's own (nn.ReLU, nn.SiLU, ...: transformers
aliases SiLUActivation to nn.SiLU in some versions) go by kplay's torch.nn table (_table.py).
LEFT_ALONE says why each other activation class of these libraries stays as it is.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, NamedTuple, Optional, Tuple

TRANSFORMERS = "transformers.activations"  # the module and its submodules
TIMM = "timm.layers"  # timm >= 0.9 (timm.models.layers re-exports it); older timm is not read here


class Foreign(NamedTuple):
    prefix: str  # the class's __module__ is this module or one below it
    cls: str  # the class's __name__
    activation: str  # kplay's built-in
    params: Tuple[Tuple[str, Any], ...]  # its parameters, torch's names (_table.activation_string)
    note: str  # what the class computes, from its source
    when: Optional[Callable[[Any], bool]] = None  # None: every instance; else which instances


_TANH = (("approximate", "tanh"),)


def _not_inplace(module: Any) -> bool:
    return not getattr(module, "inplace", False)


TABLE = (
    # transformers.activations
    Foreign(TRANSFORMERS, "GELUActivation", "gelu", (),
            "nn.functional.gelu; with use_gelu_python=True x * 0.5 * (1 + erf(x / sqrt(2))), the same function"),
    Foreign(TRANSFORMERS, "NewGELUActivation", "gelu", _TANH,
            "0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) in torch ops (GPT-2's gelu_new)"),
    Foreign(TRANSFORMERS, "GELUTanh", "gelu", _TANH,
            "nn.functional.gelu(approximate='tanh'), or the tanh formula with use_gelu_tanh_python=True"),
    Foreign(TRANSFORMERS, "PytorchGELUTanh", "gelu", _TANH,
            "GELUTanh's name before transformers 5 (an alias of it since)"),
    Foreign(TRANSFORMERS, "AccurateGELUActivation", "gelu", _TANH,
            "NewGELUActivation's formula with sqrt(2/pi) precomputed as a Python float"),
    Foreign(TRANSFORMERS, "FastGELUActivation", "gelu", _TANH,
            "0.5 x (1 + tanh(x 0.7978845608 (1 + 0.044715 x^2))): sqrt(2/pi) to 10 digits (3.6e-12 relative), "
            "which rounds to the same float as sqrt(2/pi), so float32 and the 16-bit dtypes compute gelu(tanh); "
            "in float64 the two differ by |2u| 3.6e-12 relative (below 2e-11 for |x| < 3)"),
    Foreign(TRANSFORMERS, "QuickGELUActivation", "quick_gelu", (), "input * torch.sigmoid(1.702 * input)"),
    Foreign(TRANSFORMERS, "SiLUActivation", "silu", (), "nn.functional.silu"),
    Foreign(TRANSFORMERS, "MishActivation", "mish", (), "nn.functional.mish"),
    Foreign(TRANSFORMERS, "ReLUSquaredActivation", "relu2", (), "torch.square(nn.functional.relu(input))"),
    # timm.layers.activations and activations_me (timm's factory prefers torch.nn's SiLU, Mish,
    # Hardswish and Hardsigmoid where torch has them; these are its own)
    Foreign(TIMM, "GELU", "gelu", (), "F.gelu(input)"),
    Foreign(TIMM, "GELUTanh", "gelu", _TANH, "F.gelu(input, approximate='tanh')"),
    Foreign(TIMM, "QuickGELU", "quick_gelu", (), "x * torch.sigmoid(1.702 * x)"),
    Foreign(TIMM, "Swish", "silu", (), "x.mul(x.sigmoid()), in place with inplace=True"),
    Foreign(TIMM, "SwishMe", "silu", (), "x * sigmoid(x), backward g sigmoid(x) (1 + x (1 - sigmoid(x)))"),
    Foreign(TIMM, "Mish", "mish", (),
            "x.mul(F.softplus(x).tanh()): softplus's threshold (x above 20) moves tanh by e^-3x, below 2^-80"),
    Foreign(TIMM, "MishMe", "mish", (), "Mish's forward, backward t + x sigmoid(x) (1 - t^2), t = tanh(softplus(x))"),
    Foreign(TIMM, "Sigmoid", "sigmoid", (), "x.sigmoid(), or x.sigmoid_()"),
    Foreign(TIMM, "Tanh", "tanh", (), "x.tanh(), or x.tanh_()"),
    Foreign(TIMM, "HardSwish", "hardswish", (),
            "x * F.relu6(x + 3) / 6: relu6's backward is 0 at x + 3 = 0 and 6, torch's hardswish backward at -3 and 3"),
    Foreign(TIMM, "HardSigmoid", "hardsigmoid", (),
            "F.relu6(x + 3) / 6 (its backward 0 at x = -3 and 3, as torch's hardsigmoid); not with inplace=True",
            _not_inplace),
)

LEFT_ALONE: Dict[Tuple[str, str], str] = {
    (TRANSFORMERS, "ClippedGELUActivation"): "clip(gelu(x), min, max) (gelu_10): no built-in clips gelu",
    (TRANSFORMERS, "LinearActivation"): "the identity",
    (TRANSFORMERS, "LaplaceActivation"): "0.5 (1 + erf((x - mu) / (sigma sqrt(2)))): no built-in",
    (TRANSFORMERS, "SqrtSoftplusActivation"): "sqrt(softplus(x)): no built-in",
    (TRANSFORMERS, "XIELUActivation"): "trainable parameters",
    (TIMM, "HardSigmoid"): "with inplace=True x.add_(3).clamp_(0, 6).div_(6): clamp's backward at x = -3 and 3 is "
                           "g / 6 where torch's clamp passes the gradient at its bounds (torch 2.11), 0 where it "
                           "does not (2.15): torch's hardsigmoid (and kplay's) give 0 in both",
    (TIMM, "HardSigmoidMe"): "its backward is g / 6 on -3 <= x <= 3, bounds included (torch's: 0 at -3 and 3)",
    (TIMM, "HardSwishMe"): "its backward is g (x / 3 + 1/2) on -3 <= x <= 3 (torch's: 0 at -3, g at 3)",
    (TIMM, "HardMish"): "0.5 x clamp(x + 2, 0, 2): no built-in",
    (TIMM, "HardMishMe"): "HardMish: no built-in",
    (TIMM, "PReLU"): "a learned weight",
}


def _in(module_name: str, prefix: str) -> bool:
    return module_name == prefix or module_name.startswith(prefix + ".")


_BY_NAME: Dict[str, Tuple[Foreign, ...]] = {}
for _row in TABLE:
    _BY_NAME[_row.cls] = _BY_NAME.get(_row.cls, ()) + (_row,)


def find(module: Any) -> Optional[Foreign]:
    """The row for `module` (an instance) where its class is one of TABLE's and the row takes this
    instance; None otherwise."""
    cls = type(module)
    for row in _BY_NAME.get(cls.__name__, ()):
        if _in(cls.__module__, row.prefix) and (row.when is None or row.when(module)):
            return row
    return None


def activation_text(row: Foreign) -> str:
    """The kplay activation string a row maps to, e.g. 'gelu(approximate=tanh)'."""
    from . import _table

    return _table.activation_string(row.activation, dict(row.params))
