"""The 21 activations as torch names them: torch.nn class -> kplay activation and its parameters.

Parameter names and defaults are torch's (torch.nn.functional). A parameter at its default is
left out of the activation string, so SELU() is "selu" and LeakyReLU(0.2) is
"leaky_relu(negative_slope=0.2)"; the string goes to kplay unchanged. Needs no torch.
"""
from __future__ import annotations

from typing import Any, Dict, List, NamedTuple, Optional, Tuple

REQUIRED = object()  # a parameter without a default (Threshold's threshold and value)


class Entry(NamedTuple):
    torch_class: str  # torch.nn.<torch_class>
    activation: str  # kplay's name
    params: Tuple[Tuple[str, Any], ...]  # (torch's parameter name, default), in torch's order
    inplace: bool  # whether torch's module and function take inplace=


TABLE: List[Entry] = [
    Entry("ReLU", "relu", (), True),
    Entry("ReLU6", "relu6", (), True),
    Entry("LeakyReLU", "leaky_relu", (("negative_slope", 0.01),), True),
    Entry("ELU", "elu", (("alpha", 1.0),), True),
    Entry("CELU", "celu", (("alpha", 1.0),), True),
    Entry("SELU", "selu", (), True),
    Entry("GELU", "gelu", (("approximate", "none"),), False),
    Entry("SiLU", "silu", (), True),
    Entry("Mish", "mish", (), True),
    Entry("Softplus", "softplus", (("beta", 1.0), ("threshold", 20.0)), False),
    Entry("Softsign", "softsign", (), False),
    Entry("Sigmoid", "sigmoid", (), False),
    Entry("Tanh", "tanh", (), False),
    Entry("Hardtanh", "hardtanh", (("min_val", -1.0), ("max_val", 1.0)), True),
    Entry("Hardsigmoid", "hardsigmoid", (), True),
    Entry("Hardswish", "hardswish", (), True),
    Entry("LogSigmoid", "logsigmoid", (), False),
    Entry("Tanhshrink", "tanhshrink", (), False),
    Entry("Softshrink", "softshrink", (("lambd", 0.5),), False),
    Entry("Hardshrink", "hardshrink", (("lambd", 0.5),), False),
    Entry("Threshold", "threshold", (("threshold", REQUIRED), ("value", REQUIRED)), True),
]

BY_CLASS: Dict[str, Entry] = {e.torch_class: e for e in TABLE}
BY_ACTIVATION: Dict[str, Entry] = {e.activation: e for e in TABLE}


def _format(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(float(value))
    return str(value)


def activation_string(activation: str, values: Optional[Dict[str, Any]] = None) -> str:
    """'leaky_relu', {'negative_slope': 0.2} -> 'leaky_relu(negative_slope=0.2)'; defaults left out."""
    entry = BY_ACTIVATION.get(activation)
    values = dict(values or {})
    parts = []
    for name, default in entry.params if entry else ():
        if name not in values:
            if default is REQUIRED:
                raise TypeError(f"{activation} needs the parameter '{name}'")
            continue
        value = values.pop(name)
        if default is REQUIRED or value != default:
            parts.append(f"{name}={_format(value)}")
    if values:
        raise TypeError(f"{activation} has no parameter(s) {sorted(values)}")
    return f"{activation}({', '.join(parts)})" if parts else activation


def bind(entry: Entry, args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Tuple[Dict[str, Any], bool]:
    """torch-style (*args, **kwargs) of a module or function -> (parameter values, inplace)."""
    names = [n for n, _ in entry.params] + (["inplace"] if entry.inplace else [])
    if len(args) > len(names):
        raise TypeError(f"{entry.torch_class} takes at most {len(names)} arguments ({len(args)} given)")
    values = dict(zip(names, args))
    for k, v in kwargs.items():
        if k not in names:
            raise TypeError(f"{entry.torch_class} got an unexpected argument '{k}'")
        if k in values:
            raise TypeError(f"{entry.torch_class} got '{k}' twice")
        values[k] = v
    inplace = bool(values.pop("inplace", False))
    return values, inplace
