"""Checks of the plain arguments (numbers, names, paths) the package hands to its extension.

The extension's functions take C++ integers and UTF-8 strings: a float, a bool, a negative or
huge int, or a str with a lone surrogate would otherwise be truncated silently or fail inside
nanobind with a bare "incompatible function arguments". Each check raises InvalidArgumentError
naming the argument, with the bounds of kplay/limits.hpp, which the command line holds its flags
to as well (_core.limits() carries the numbers).
"""
from __future__ import annotations

import operator
from typing import Any, Dict

from . import _core

LIMITS: Dict[str, int] = dict(_core.limits())


def whole(value: Any, name: str, lo: int, hi: int) -> int:
    """value as an int in lo..hi: an int (or a numpy integer), never a bool or a float."""
    if isinstance(value, bool):
        raise _core.InvalidArgumentError(f"{name} must be a whole number, not the bool {value}")
    try:
        v = operator.index(value)
    except TypeError:
        raise _core.InvalidArgumentError(
            f"{name} must be a whole number (an int), not {type(value).__name__} {value!r}") from None
    if not lo <= v <= hi:
        raise _core.InvalidArgumentError(f"{name} = {v}: must be {lo} .. {hi}")
    return v


def text(value: Any, name: str) -> str:
    """value as a str that UTF-8 can carry whole: no lone surrogate, no NUL character."""
    if not isinstance(value, str):
        raise _core.InvalidArgumentError(f"{name} must be a str, not {type(value).__name__} {value!r}")
    if value.isascii() and "\0" not in value:  # the common case, cheap on the launch path
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise _core.InvalidArgumentError(
            f"{name} is not valid text: {e.reason} at character {e.start} ({value!r})") from None
    if "\0" in value:
        raise _core.InvalidArgumentError(f"{name} contains a NUL character ({value!r})")
    return value
