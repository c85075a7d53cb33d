"""kplay: JIT-generated, autotuned element-wise activation kernels for CUDA and OpenCL.

    import kplay
    y = kplay.forward("selu", x)                      # x: torch/CuPy/JAX CUDA array or pyopencl array
    g = kplay.backward("selu", grad_y, y, saved_output=True)
    y = kplay.gated_forward("silu", x)                # SwiGLU of x = [..., 2d]: silu(a) * b in one kernel
    p = kplay.softmax(x, dim=-1)                      # the softmax family: softmax, log_softmax, softmin

Importing kplay needs neither a GPU nor torch. kplay.torch (torch custom ops with autograd),
kplay.nn (drop-in modules) and kplay.plot (matplotlib charts) are imported on demand.
Failures raise kplay.Error (a RuntimeError) or one of its subclasses, with kplay's message.
"""
from __future__ import annotations

from typing import Any, Dict, List

from . import _core
from ._api import backward, forward, gated_backward, gated_forward
from ._slope import prelu, prelu_backward, rrelu, rrelu_backward
from ._softmax import log_softmax, log_softmax_backward, softmax, softmax_backward, softmin, softmin_backward
from ._core import CompileError, Error, InvalidArgumentError, NoDeviceError, UnsupportedError
from .database import db_clear, db_export, db_import, db_path, db_stats, db_tunings

__version__ = _core.version()

__all__ = [
    "forward", "backward", "gated_forward", "gated_backward", "prelu", "prelu_backward", "rrelu", "rrelu_backward",
    "softmax", "log_softmax", "softmin", "softmax_backward", "log_softmax_backward", "softmin_backward",
    "activations", "supports_saved_output", "devices", "backends", "autotune",
    "db_path", "db_stats", "db_tunings", "db_export", "db_import", "db_clear",
    "Error", "InvalidArgumentError", "NoDeviceError", "UnsupportedError", "CompileError", "__version__",
]


def activations() -> List[str]:
    """Names of the built-in activations, e.g. ['selu', 'relu', ...]."""
    return list(_core.activations())


def supports_saved_output(activation: str) -> bool:
    """Whether backward can start from the forward output (saved_output=True) for this activation."""
    from ._arguments import text

    return bool(_core.supports_saved_output(text(activation, "activation")))


def backends() -> List[Dict[str, Any]]:
    """Every backend kplay knows: {'backend', 'available', 'status', 'devices': [...]}; never raises."""
    return list(_core.backends())


def devices() -> List[Dict[str, Any]]:
    """Every usable device ({'backend', 'index', 'name', 'arch', 'memory_bytes', ...}); [] when
    there is none (backends() says why)."""
    return [d for b in _core.backends() for d in b["devices"]]


def autotune(activation: str, n: int, dtype: str = "f32", direction: str = "forward", saved: str = "input",
             backend: str = "auto", device: int = 0, strategy: str = "exhaustive", budget: int = 40,
             warmup: int = 2, repeats: int = 7, resume: bool = True, db: str = "") -> Dict[str, Any]:
    """Finds the fastest correct configuration for (activation, dtype, direction) at size n on one
    device, stores it with every candidate in the kernel database (db: path, "" = default), and
    returns the record as `kplay autotune --json` prints it. Later calls of any process use it.
    backend "auto" picks as `kplay autotune` does (CUDA where it has a device, else OpenCL); the
    numbers are held to the command line's bounds (InvalidArgumentError naming the argument)."""
    import json

    from ._arguments import LIMITS, text, whole

    names = {"activation": activation, "dtype": dtype, "direction": direction, "saved": saved, "backend": backend,
             "strategy": strategy, "db": db}
    for name, value in names.items():
        text(value, name)
    if not isinstance(resume, bool):
        raise InvalidArgumentError(f"resume must be True or False, not {type(resume).__name__} {resume!r}")
    return json.loads(_core.autotune(
        activation, whole(n, "n", 1, LIMITS["max_elements"]), dtype, direction, saved, backend,
        whole(device, "device", 0, LIMITS["max_device"]), strategy, whole(budget, "budget", 1, LIMITS["max_budget"]),
        whole(warmup, "warmup", 0, LIMITS["max_launches"]),
        whole(repeats, "repeats", LIMITS["min_repeats"], LIMITS["max_launches"]), resume, db))
