"""SwiGLU, out = silu(a) * b, on CUDA: torch eager, torch.compile, kplay.torch.gated and a copy of
the same bytes, forward and backward, in one process:
`python -m kplay.bench_gated [--shapes ...] [--dtypes bf16,f32] [--rounds N] [--reps N] [--json PATH]`.

Each shape is the packed input [rows, 2d] (a its first half, b its second, vLLM's layout):
LLaMA-7B's MLP (4096 x 2*11008), Mistral-7B's (16384 x 2*14336) and decode steps of 1, 8 and 64
tokens x 2*14336. The variants, per shape, dtype and direction:
  torch     F.silu(a) * b, eager; backward: torch.autograd.grad of it (silu's backward, the products,
            the two slices' gradients into one of x's shape)
  compile   the same function under torch.compile (Inductor's fused kernels, forward and backward)
  kplay     kplay.torch.gated(x, "silu"): one kernel each way
  copy      a device-to-device copy of as many bytes as the gated kernel moves (forward: a and b read,
            out written, 3d elements per row; backward: g, a and b read, grad_a and grad_b written, 5d),
            i.e. a copy of half that traffic, which reads and writes it
Times are CUDA-event times of --reps back-to-back calls per round, --rounds rounds taken in turns
with the order reversed every round (kplay._bench.interleaved); the table gives the median per
call in µs, the gated traffic over that time in GB/s, and the copy's time over the variant's (%
of copy: 100 % is the copy's speed). The decode sizes fit in L2 and are launch-bound: their
figures are per-call costs, not bandwidth. --json writes every round.

Without a CUDA device it says so and exits with status 3, having run nothing.
"""
from __future__ import annotations

import argparse
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from . import _bench

SHAPES = ("4096x22016", "16384x28672", "1x28672", "8x28672", "64x28672")
DTYPES = {"bf16": "bfloat16", "f32": "float32", "f16": "float16"}
VARIANTS = ("torch", "compile", "kplay", "copy")


def parse_shape(text: str) -> Tuple[int, int]:
    rows, _, cols = text.lower().partition("x")
    try:
        r, c = int(rows), int(cols)
    except ValueError:
        raise ValueError(f"a shape is ROWSxCOLS, e.g. 4096x22016; got '{text}'") from None
    if r < 1 or c < 2 or c % 2:
        raise ValueError(f"shape {text}: rows must be >= 1 and the columns (2d) even and >= 2")
    return r, c


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m kplay.bench_gated", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shapes", default=",".join(SHAPES), help="comma-separated ROWSx2D (default: %(default)s)")
    p.add_argument("--dtypes", default="bf16,f32",
                   help=f"comma-separated of {', '.join(DTYPES)} (default: %(default)s)")
    p.add_argument("--directions", default="forward,backward", help="forward, backward or both (default)")
    p.add_argument("--rounds", type=int, default=7, help="timed rounds per variant (default %(default)s)")
    p.add_argument("--reps", type=int, default=0,
                   help="calls per round (default 0: as many as take about 2 ms, between 3 and 200)")
    p.add_argument("--device", type=int, default=0, help="CUDA device index")
    p.add_argument("--json", metavar="PATH", help="write the whole result here")
    args = p.parse_args(argv)
    try:
        args.shapes = [parse_shape(s) for s in args.shapes.split(",") if s.strip()]
        args.dtypes = _bench.parse_list(args.dtypes, list(DTYPES), "dtype")
        args.directions = _bench.parse_list(args.directions, ["forward", "backward"], "direction")
    except ValueError as e:
        p.error(str(e))
    if not args.shapes:
        p.error("no shape given")
    if args.rounds < 1 or args.reps < 0:
        p.error("--rounds must be at least 1 and --reps at least 0")
    return args


def _silu_mul(x: Any) -> Any:
    import torch.nn.functional as F

    d = x.shape[-1] // 2
    return F.silu(x[..., :d]) * x[..., d:]


def _calls(torch: Any, rows: int, cols: int, dtype: Any, direction: str, compiled: Callable[[Any], Any],
           device: Any) -> Tuple[Dict[str, Callable[[], Any]], int]:
    """Each variant's call on fresh operands, and the bytes the gated kernel moves per call."""
    import kplay.torch as kt

    d = cols // 2
    gen = torch.Generator(device=device).manual_seed(0)
    x = torch.randn(rows, cols, device=device, dtype=dtype, generator=gen)
    size = torch.tensor([], dtype=dtype).element_size()
    moved = (3 if direction == "forward" else 5) * rows * d * size
    src = torch.empty(moved // 2 // size, device=device, dtype=dtype)
    dst = torch.empty_like(src)
    if direction == "forward":
        calls = {"torch": lambda: _silu_mul(x), "compile": lambda: compiled(x), "kplay": lambda: kt.gated(x, "silu"),
                 "copy": lambda: dst.copy_(src)}
        return calls, moved
    g = torch.randn(rows, d, device=device, dtype=dtype, generator=gen)
    xg = x.requires_grad_()
    ys = {"torch": _silu_mul(xg), "compile": compiled(xg), "kplay": kt.gated(xg, "silu")}

    def grad(y: Any) -> Callable[[], Any]:
        return lambda: torch.autograd.grad(y, xg, g, retain_graph=True)[0]

    calls = {name: grad(y) for name, y in ys.items()}
    calls["copy"] = lambda: dst.copy_(src)
    return calls, moved


def _check(calls: Dict[str, Callable[[], Any]]) -> float:
    """The largest difference of kplay's result from torch eager's, relative to its largest value (a
    sanity check that the timed calls compute the same thing)."""
    want, got = calls["torch"]().double(), calls["kplay"]().double()
    scale = want.abs().max().item() or 1.0
    return float((got - want).abs().max().item() / scale)


def _timer(torch: Any, call: Callable[[], Any], reps: int) -> Callable[[], float]:
    def timed() -> float:
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps):
            call()
        stop.record()
        stop.synchronize()
        return start.elapsed_time(stop) * 1e3 / reps  # µs per call

    return timed


def _reps(torch: Any, call: Callable[[], Any]) -> int:
    """Calls per round: about 2 ms of them, 3 to 200."""
    t = _timer(torch, call, 3)()
    return max(3, min(200, int(2000 / max(t, 1e-3))))


def run_row(torch: Any, rows: int, cols: int, dtype_name: str, direction: str, compiled: Callable[[Any], Any],
            args: argparse.Namespace, device: Any) -> Dict[str, Any]:
    dtype = getattr(torch, DTYPES[dtype_name])
    calls, moved = _calls(torch, rows, cols, dtype, direction, compiled, device)
    row: Dict[str, Any] = {"shape": f"{rows}x{cols}", "dtype": dtype_name, "direction": direction,
                           "bytes": moved, "kplay_vs_torch_rel_diff": _check(calls)}
    for call in calls.values():  # compile, load, warm
        call()
    torch.cuda.synchronize()
    reps = args.reps or max(_reps(torch, c) for c in calls.values())
    rounds = _bench.interleaved({}, {n: _timer(torch, c, reps) for n, c in calls.items()}, 0, args.rounds)
    row["reps"] = reps
    copy_us = _bench.median(rounds["copy"])
    for name in VARIANTS:
        s = _bench.summary(rounds[name])
        s["gb_s"] = moved / (s["median"] * 1e-6) / 1e9 if s["median"] > 0 else float("nan")
        s["of_copy"] = copy_us / s["median"] if s["median"] > 0 else float("nan")
        row[name] = s
    del calls
    torch.cuda.empty_cache()
    return row


HEADERS = ("shape", "dtype", "dir", "torch µs", "compile µs", "kplay µs", "copy µs", "kplay GB/s", "copy GB/s",
           "torch %copy", "compile %copy", "kplay %copy", "kplay/compile", "diff")


_DIR = {"forward": "fwd", "backward": "bwd"}


def table_row(row: Dict[str, Any]) -> List[str]:
    f = _bench.fmt
    if row.get("error"):
        return ([row["shape"], row["dtype"], _DIR[row["direction"]]] + ["-"] * (len(HEADERS) - 4)
                + [row["error"][:60]])
    t, c, k, cp = (row[n] for n in VARIANTS)
    return [row["shape"], row["dtype"], _DIR[row["direction"]], f(t["median"], ".1f"), f(c["median"], ".1f"),
            f(k["median"], ".1f"), f(cp["median"], ".1f"), f(k["gb_s"], ".0f"), f(cp["gb_s"], ".0f"),
            f(t["of_copy"], ".0%"), f(c["of_copy"], ".0%"), f(k["of_copy"], ".0%"),
            f(k["median"] / c["median"] if c["median"] else float("nan"), ".3f"),
            f(row["kplay_vs_torch_rel_diff"], ".1e")]


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    torch = _bench.require_cuda("kplay.bench_gated", "gated kernels")
    import kplay.torch  # noqa: F401  (fails here, before any work, where kplay.torch cannot load)

    torch.cuda.set_device(args.device)
    device = torch.device("cuda", args.device)
    torch._dynamo.config.cache_size_limit = max(torch._dynamo.config.cache_size_limit, 4 * len(args.shapes))
    compiled = torch.compile(_silu_mul, dynamic=False)
    start = time.perf_counter()
    command = "python -m kplay.bench_gated " + " ".join(sys.argv[1:] if argv is None else argv)
    doc: Dict[str, Any] = {"command": command, "environment": _bench.environment(torch, args.device),
                           "settings": {k: v for k, v in vars(args).items() if k != "json"}, "rows": []}
    for dtype_name in args.dtypes:
        for direction in args.directions:
            for rows, cols in args.shapes:
                try:
                    row = run_row(torch, rows, cols, dtype_name, direction, compiled, args, device)
                except Exception as e:  # noqa: BLE001  (one failing row says so; the others run)
                    row = {"shape": f"{rows}x{cols}", "dtype": dtype_name, "direction": direction,
                           "error": f"{type(e).__name__}: {e}"}
                doc["rows"].append(row)
                print(_bench.table(HEADERS, [table_row(row)]).splitlines()[-1], flush=True)
    doc["total_s"] = time.perf_counter() - start
    print()
    print(_bench.table(HEADERS, [table_row(r) for r in doc["rows"]]))
    print("µs: median per call over the rounds; GB/s: the gated kernel's bytes (forward 3d, backward 5d elements "
          "per row) over the time; %copy: a copy of those bytes' time over the variant's; kplay/compile: time ratio; "
          "diff: kplay's largest difference from torch eager's result, relative to its largest value")
    print(f"total {doc['total_s']:.0f} s")
    if args.json:
        _bench.write_json(args.json, doc)
        print(f"wrote {args.json}")
    return 1 if any(r.get("error") for r in doc["rows"]) else 0


if __name__ == "__main__":
    sys.exit(main())
