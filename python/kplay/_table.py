"""kplay's built-in activations as torch names them, from the registry (kplay._core.builtin_activations(),
src/spec/activations.cpp): torch.nn class <-> kplay activation and its parameters.

Parameter names and defaults are torch's (torch.nn.functional). A parameter at its default is
left out of the activation string, so SELU() is "selu" and LeakyReLU(0.2) is
"leaky_relu(negative_slope=0.2)"; the string goes to kplay unchanged. Needs no torch.
"""
from __future__ import annotations

from typing import Any, Dict, List, NamedTuple, Optional, Tuple

from . import _core

REQUIRED = object()  # a parameter without a default (Threshold's threshold and value)


class Entry(NamedTuple):
    torch_class: str  # torch.nn.<torch_class>, "" where torch has no such module
    activation: str  # kplay's name
    params: Tuple[Tuple[str, Any], ...]  # (torch's parameter name, default or REQUIRED), in torch's order
    inplace: bool  # whether torch's module and function take inplace=
    saves_output: bool  # autograd's default saved tensor is the output (kplay.torch.saves_output)
    # kplay's own parameters, keyword-only and after torch's: accuracy ("exact" or "torch",
    # docs/accuracy.md) where the activation has a torch tier.
    options: Tuple[Tuple[str, Any], ...] = ()


KEYWORD_ONLY = ("accuracy",)  # registry parameters torch's functions and modules do not have


def _entry(a: Dict[str, Any]) -> Entry:
    every = tuple((name, REQUIRED if default is None else default) for name, default, _ in a["parameters"])
    return Entry(a["torch_class"], a["name"], tuple(p for p in every if p[0] not in KEYWORD_ONLY),
                 bool(a["torch_inplace"]), bool(a["saves_output"]),
                 tuple(p for p in every if p[0] in KEYWORD_ONLY))


BUILTINS: List[Entry] = [_entry(a) for a in _core.builtin_activations()]  # every built-in, registry order
TABLE: List[Entry] = [e for e in BUILTINS if e.torch_class]  # those torch.nn has a class for

BY_CLASS: Dict[str, Entry] = {e.torch_class: e for e in TABLE}
BY_ACTIVATION: Dict[str, Entry] = {e.activation: e for e in BUILTINS}


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
    for name, default in entry.params + entry.options if entry else ():
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
    who = entry.torch_class or entry.activation
    if len(args) > len(names):
        raise TypeError(f"{who} takes at most {len(names)} arguments ({len(args)} given)")
    values = dict(zip(names, args))
    for k, v in kwargs.items():
        if k not in names and k not in (n for n, _ in entry.options):
            raise TypeError(f"{who} got an unexpected argument '{k}'")
        if k in values:
            raise TypeError(f"{who} got '{k}' twice")
        values[k] = v
    inplace = bool(values.pop("inplace", False))
    return values, inplace
