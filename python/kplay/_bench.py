"""What kplay's end-to-end benchmarks share (kplay.bench_models, kplay.bench_ddp): round statistics,
the verdict rule, the GPU-time measurement, the compact table and the JSON document.

A row compares torch's activations (A) with kplay's (B) on the same weights, timed in rounds taken
in turns. Its verdict follows the issue's rule: kplay meets torch when its median is not above
torch's by more than the spread of the rounds, the spread being the larger of the two interquartile
ranges (robust against one slow round, which a min-max range is not). Imports torch only inside
the functions that need it, so the modules that use it import (and parse options) without it.
"""
from __future__ import annotations

import json
import math
import platform
import statistics
import sys
import time
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence

NO_CUDA_STATUS = 3  # as `kplay` exits without a device for its backend


def median(xs: Sequence[float]) -> float:
    return float(statistics.median(xs)) if xs else math.nan


def iqr(xs: Sequence[float]) -> float:
    """Interquartile range; 0 for fewer than two values."""
    if len(xs) < 2:
        return 0.0
    q = statistics.quantiles(xs, n=4, method="inclusive")
    return float(q[2] - q[0])


def summary(xs: Sequence[float]) -> Dict[str, Any]:
    """Round times (ms) -> median, interquartile range, min, max and the rounds themselves."""
    return {"median": median(xs), "iqr": iqr(xs), "min": min(xs) if xs else math.nan,
            "max": max(xs) if xs else math.nan, "rounds": [float(x) for x in xs]}


def interleaved(warm: Dict[str, Callable[[], None]], timed: Dict[str, Callable[[], float]], warmup: int,
                rounds: int) -> Dict[str, List[float]]:
    """Runs each variant's warm(): `warmup` times, then `rounds` rounds of timed() for each variant,
    the order reversed every round (A B, B A, ...) so that a drift of the machine's speed falls on
    both alike. Returns each variant's round times."""
    for step in warm.values():
        for _ in range(warmup):
            step()
    out: Dict[str, List[float]] = {name: [] for name in timed}
    order = list(timed)
    for _ in range(rounds):
        for name in order:
            out[name].append(timed[name]())
        order.reverse()
    return out


def verdict(torch_rounds: Sequence[float], kplay_rounds: Sequence[float]) -> Dict[str, Any]:
    """kplay's median over torch's, and whether kplay meets torch (see the module notes)."""
    t, k = median(torch_rounds), median(kplay_rounds)
    spread = max(iqr(torch_rounds), iqr(kplay_rounds))
    return {"ratio": k / t if t > 0 else math.nan, "spread": spread, "met": bool(k <= t + spread)}


def rel_diff(a: float, b: float) -> float:
    """|a - b| relative to |b| (b the reference); 0 where both are 0."""
    if a == b:
        return 0.0
    return abs(a - b) / abs(b) if b != 0 else math.inf


def require_cuda(prog: str, what: str = "training steps") -> Any:
    """torch, where a CUDA device is there; otherwise a message on stderr and exit status 3."""
    try:
        import torch
    except ImportError:
        sys.stderr.write(f"{prog}: needs torch with CUDA (pip install torch); torch is not installed\n")
        raise SystemExit(NO_CUDA_STATUS)
    if not torch.cuda.is_available():
        sys.stderr.write(f"{prog}: needs a CUDA device: torch {torch.__version__} sees none "
                         f"(torch.cuda.is_available() is False). It times {what} on the GPU; "
                         f"nothing was run.\n")
        raise SystemExit(NO_CUDA_STATUS)
    return torch


def environment(torch: Any, device: int = 0) -> Dict[str, Any]:
    """What a reader needs to compare two result files: versions, device, precision settings."""
    import kplay

    props = torch.cuda.get_device_properties(device)
    env: Dict[str, Any] = {
        "time_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "kplay": kplay.__version__,
        "device": props.name,
        "capability": f"{props.major}.{props.minor}",
        "gpus": torch.cuda.device_count(),
        "tf32_matmul": bool(torch.backends.cuda.matmul.allow_tf32),
        "tf32_cudnn": bool(torch.backends.cudnn.allow_tf32),
        "kplay_db": kplay.db_path(),
    }
    return env


def gpu_time(torch: Any, run: Callable[[], None], steps: int) -> Dict[str, Optional[float]]:
    """Per step: the summed duration of the GPU kernels (torch.profiler), the kplay kernels among
    them, and the wall time of the profiled steps; None where the profiler gives no CUDA events
    (no CUPTI). Profiling slows the host, so these are not the timed rounds' figures."""
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    t0 = time.perf_counter()
    try:
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(steps):
                run()
            torch.cuda.synchronize()
    except Exception as e:  # noqa: BLE001
        return {"gpu_ms": None, "kplay_kernel_ms": None, "wall_ms": None, "error": f"{type(e).__name__}: {e}"}
    wall = (time.perf_counter() - t0) * 1e3 / steps
    cuda = torch.autograd.DeviceType.CUDA
    total = kp = 0.0
    kernels = 0
    for e in prof.events():
        if e.device_type != cuda:
            continue
        us = e.time_range.elapsed_us()
        total += us  # copies and fills too: they occupy the GPU as kernels do
        kernels += 1
        if (e.name or "").startswith("kplay_"):  # kplay's entry names (src/codegen)
            kp += us
    if not kernels:
        return {"gpu_ms": None, "kplay_kernel_ms": None, "wall_ms": wall, "error": "no CUDA events (CUPTI?)"}
    return {"gpu_ms": total / 1e3 / steps, "kplay_kernel_ms": kp / 1e3 / steps, "wall_ms": wall}


def fmt(x: Optional[float], spec: str = ".2f") -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return format(x, spec)


def table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A plain fixed-width table (stdout), the first column left-aligned, the others right."""
    rows = [list(map(str, r)) for r in rows]
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))

    return "\n".join([line(headers), line(["-" * w for w in widths])] + [line(r) for r in rows])


def write_json(path: str, document: Dict[str, Any]) -> None:
    """The whole result; NaN written as null so that strict JSON readers take it."""
    def clean(v: Any) -> Any:
        if isinstance(v, float) and not math.isfinite(v):
            return None
        if isinstance(v, dict):
            return {k: clean(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [clean(x) for x in v]
        return v

    with open(path, "w", encoding="utf-8") as f:
        json.dump(clean(document), f, indent=1)
        f.write("\n")


def parse_list(text: str, known: Sequence[str], what: str) -> List[str]:
    """'a,b' -> ['a', 'b'], each one of `known` ('all' for every one); ValueError naming the bad one."""
    if text.strip() == "all":
        return list(known)
    out = [t.strip() for t in text.split(",") if t.strip()]
    for t in out:
        if t not in known:
            raise ValueError(f"unknown {what} '{t}' (known: {', '.join(known)})")
    if not out:
        raise ValueError(f"no {what} given")
    return out
