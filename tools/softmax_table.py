#!/usr/bin/env python3
"""The softmax family against torch on a CUDA GPU, in one process: for each rows x cols shape, dtype
and direction, kplay's row kernel (kplay.torch, the config its tuning layers give, as a user's call
gets it), torch eager, torch.compile and a device-to-device copy of the bytes the operation must
move (forward: read x, write y; backward from the saved output: read y and g, write grad_in), each
as a percentage of that copy, timed in interleaved rounds. Also each side's largest error in ulps
of the dtype against a float64 reference on the first and last rows.

    python3 tools/softmax_table.py [--shapes 65536x128,...] [--dtypes f32,bf16]
        [--directions forward,backward] [--ops softmax,log_softmax] [--rounds 9] [--json FILE]
        [--kplay PATH [--knobs "KNOBS"]]
    python3 tools/softmax_table.py --markdown FILE.json   # docs/benchmarks.md's table from --json's rows

A shape runs over its last dimension, or over the one after '@': 32x21x512x512@1 is Softmax2d's
softmax over the channels of a contiguous [N, C, H, W] (kplay's strided rows). An op may name
kplay's accuracy, softmax(accuracy=torch) (float32: kplay.torch.softmax(x, dim, accuracy="torch")),
beside torch's op of the same name.

How it times (the element-wise table's method, tools/perf_table.py): each round times kplay, eager,
compile and the copy in turn (the first two swap places every other round), each interval on a GPU
held in a spin while its calls are issued (so host time is not counted) and bracketing `batch`
calls, each on the next of several input sets whose bytes together are at least 4 x L2 (so every
call reads from memory, as the copy does). Outputs are allocated per call, as a user's call does.
WINS: the rounds in which kplay's time was below eager's / compile's. A row is "at or above" torch
where kplay wins at least half the rounds or the medians differ by no more than the spread between
runs (docs/benchmarks.md, "What counts as a tie").

--kplay PATH adds `kplay run`'s own figure (its process, its same-run copy), its verdict against
the host reference and its config; with --knobs, that config instead of the default (CLI only).
KPLAY_DB and KPLAY_SHIPPED_TUNINGS choose the tuning layers for both, as for any kplay process.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import shlex
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from perf_table import interleaved_ms  # noqa: E402

SHAPES = "65536x128,32768x1024,16384x4096,8192x32768,4096x131072,4096x393216,1024x1048576"
SIDES = ("kplay", "eager", "compile", "copy")
CHECK_ELEMENTS = 1 << 24  # elements of the first and of the last rows checked against float64


def sets_for(bytes_per_call: int, l2_bytes: int, free_bytes: int) -> int:
    """Input sets so that one batch touches at least 4 x L2, within a third of the free memory."""
    want = max(1, math.ceil(4 * l2_bytes / max(bytes_per_call, 1)))
    fit = max(1, free_bytes // (3 * max(bytes_per_call, 1)))
    return min(want, fit)


def reference(torch, op: str, direction: str, dim: int, x=None, g=None, y=None):
    """float64 reference of the forward from x, or of the backward from (g, y), and the magnitude
    an error is measured against: the result's, and for the backward at least 2^-24 of the terms
    that cancel (docs/accuracy.md, "Row activations")."""
    if direction == "forward":
        x = x.double()
        ref = torch.log_softmax(x, dim) if op == "log_softmax" else torch.softmax(-x if op == "softmin" else x, dim)
        return ref, ref.abs()
    g, y = g.double(), y.double()
    if op == "log_softmax":
        ref = g - torch.exp(y) * g.sum(dim, keepdim=True)
        terms = g.abs() + torch.exp(y) * g.sum(dim, keepdim=True).abs()
    else:
        s = (g * y).sum(dim, keepdim=True)
        ref = y * (s - g) if op == "softmin" else y * (g - s)
        terms = y.abs() * (g.abs() + (g * y).abs().sum(dim, keepdim=True))
    return ref, torch.maximum(ref.abs(), terms * 2.0**-24)


def error_ulps(torch, got, ref, magnitude, dtype) -> float:
    """The largest |got - ref| in ulps of the dtype at `magnitude` (subnormal: the smallest normal's)."""
    finfo = torch.finfo(dtype)
    ulp = torch.exp2(torch.floor(torch.log2(magnitude.clamp(min=finfo.smallest_normal)))) * finfo.eps
    return torch.nan_to_num((got.double() - ref).abs() / ulp).max().item()


def edge_rows(t, n: int):
    """The first and last n slices of t along dim 0 (rows, or images of a strided shape)."""
    return (t[:n], t[-n:]) if t.shape[0] > n else (t,)


def row(torch, kt, op: str, dims: list, dim: int, dtype, direction: str, rounds: int) -> dict:
    props = torch.cuda.get_device_properties(0)
    free, _ = torch.cuda.mem_get_info()
    elem = torch.empty((), dtype=dtype).element_size()
    numel = math.prod(dims)
    streams = 2 if direction == "forward" else 3
    nsets = sets_for(streams * numel * elem, props.L2_cache_size, free)
    member, _, options = op.partition("(")
    accuracy = "torch" if options == "accuracy=torch)" else "exact"
    torch_fn = {"softmax": torch.softmax, "log_softmax": torch.log_softmax,
                "softmin": torch.nn.functional.softmin}[member]
    xs = [torch.randn(*dims, device="cuda", dtype=dtype) * 4 for _ in range(nsets)]
    dst = [torch.empty_like(xs[0]) for _ in xs]
    if direction == "forward":
        args = [(x,) for x in xs]
        options = {"accuracy": accuracy} if accuracy != "exact" else {}  # exact: the call as a user writes it
        kplay_fn = lambda x: getattr(kt, member)(x, dim, **options)  # noqa: E731
        eager_fn = lambda x: torch_fn(x, dim)  # noqa: E731
        compiled = torch.compile(lambda x: torch_fn(x, dim), dynamic=False)
    else:
        ys = [torch_fn(x, dim) for x in xs]
        del xs
        args = [(torch.randn_like(y), y) for y in ys]
        aten = (torch.ops.aten._log_softmax_backward_data if member == "log_softmax"
                else torch.ops.aten._softmax_backward_data)
        kplay_fn = lambda g, y: torch.ops.kplay.softmax_backward(g, y, dim, op)  # noqa: E731
        if member == "softmin":  # softmin's backward is softmax's, of -g
            eager_fn = lambda g, y: aten(-g, y, dim, dtype)  # noqa: E731
        else:
            eager_fn = lambda g, y: aten(g, y, dim, dtype)  # noqa: E731
        compiled = torch.compile(eager_fn, dynamic=False)
    copy_src = [a[0] for a in args]
    # each call of the batch on the next set; the copy moves 2 of the backward's 3 streams
    state = {"i": 0}

    def cycling(fn):
        def call():
            a = args[state["i"] % nsets]
            state["i"] += 1
            return fn(*a)
        return call

    def copy():
        i = state["i"] % nsets
        state["i"] += 1
        dst[i].copy_(copy_src[i])

    fns = [cycling(kplay_fn), cycling(eager_fn), cycling(compiled), copy]
    for f in fns:  # compile, prepare and tune outside the timed rounds
        f()
    torch.cuda.synchronize()
    times = interleaved_ms(fns, 2, rounds, order="alternate", timing="queued", batch=nsets)
    copy_ms = statistics.median(times[3]) * streams / 2
    out = {"sets": nsets, "copy_ms": copy_ms}
    for name, t in zip(SIDES[:3], times[:3]):
        out[name + "_ms"] = statistics.median(t)
        out[name + "_pct"] = 100 * copy_ms / out[name + "_ms"]
    out["wins_eager"] = sum(k < e for k, e in zip(times[0], times[1]))
    out["wins_compile"] = sum(k < c for k, c in zip(times[0], times[2]))
    out["rounds"] = rounds
    # accuracy on the first set's edge rows: kplay's and torch's eager output against float64
    n = max(1, CHECK_ELEMENTS // max(1, numel // dims[0]))
    for name, fn in (("kplay", kplay_fn), ("eager", eager_fn)):
        got = fn(*args[0])
        worst = 0.0
        for part, sl in zip(edge_rows(got, n), zip(*(edge_rows(a, n) for a in args[0]))):
            ref, magnitude = (reference(torch, member, direction, dim, x=sl[0]) if direction == "forward"
                              else reference(torch, member, direction, dim, g=sl[0], y=sl[1]))
            worst = max(worst, error_ulps(torch, part, ref, magnitude, dtype))
        out[name + "_ulps"] = worst
    return out


def kplay_cli(kplay: str, op: str, shape: str, dim: int, dtype: str, direction: str, knobs: str) -> dict:
    cmd = [kplay, "run", "--act", op, "--shape", shape, "--dim", str(dim), "--dtype", dtype, "--direction", direction]
    cmd += shlex.split(knobs)
    r = subprocess.run(cmd, capture_output=True, text=True)
    text = r.stdout + r.stderr
    ratio = re.search(r"^ratio:\s+([0-9.]+) %", text, re.M)
    config = re.search(r"^config: (.*)$", text, re.M)
    verdict = re.search(r"^verdict: (\w+)", text, re.M)
    if r.returncode != 0 or not ratio:
        last = text.strip().splitlines()[-1] if text.strip() else "no output"
        return {"error": f"exit {r.returncode}: {last}"}
    return {"pct": float(ratio.group(1)), "config": config.group(1) if config else "",
            "verdict": verdict.group(1) if verdict else "?"}


def ulps(v: float) -> str:
    """kplay's error as the tables print it: two decimals where small (0.51), else three digits."""
    return f"{v:.2f}" if v < 100 else f"{v:.3g}"


def print_markdown(rows: list[dict]) -> None:
    """docs/benchmarks.md's softmax table: a line per op, shape and dtype, forward and backward side
    by side (a direction not measured reads "-"), in the order the rows were measured."""
    def ratios(r: dict | None) -> tuple[str, str, str]:
        if r is None:
            return "-", "-", "-"
        return (f"{r['kplay_pct']:.1f} / {r['eager_pct']:.1f} / {r['compile_pct']:.1f}",
                f"{r['wins_eager']}/{r['wins_compile']}", f"{ulps(r['kplay_ulps'])} / {r['eager_ulps']:.3g}")
    by_key: dict[tuple, dict] = {}
    for r in rows:
        by_key.setdefault((r["op"], r["shape"], r["dtype"]), {})[r["direction"]] = r
    print("| op, rows × cols | dtype | forward kplay / eager / compile | wins | backward kplay / eager / compile "
          "| wins | ulps fwd k / e | ulps bwd k / e |")
    print("|---|---|---|---|---|---|---|---|")
    for (op, shape, dtype), sides in by_key.items():
        f, fw, fu = ratios(sides.get("forward"))
        b, bw, bu = ratios(sides.get("backward"))
        print(f"| {op} {shape.replace('x', '×')} | {dtype} | {f} | {fw} | {b} | {bw} | {fu} | {bu} |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", default=SHAPES)
    ap.add_argument("--dtypes", default="f32,bf16")
    ap.add_argument("--directions", default="forward,backward")
    ap.add_argument("--ops", default="softmax")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--json")
    ap.add_argument("--kplay", help="also `kplay run` from this CLI: its ratio, verdict and config")
    ap.add_argument("--knobs", default="", help="with --kplay: knobs for `kplay run` instead of its default")
    ap.add_argument("--markdown", metavar="JSON", help="print docs/benchmarks.md's table from a --json file and stop")
    args = ap.parse_args()
    if args.markdown:
        with open(args.markdown) as f:
            print_markdown(json.load(f))
        return 0
    import torch
    import kplay.torch as kt

    torch_dtypes = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16, "f64": torch.float64}
    rows_out = []
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}; medians in % of a same-run copy of the bytes "
          f"moved, {args.rounds} interleaved rounds; wins: rounds kplay beat eager / compile; ulps against float64")
    print(f"{'op':<28}{'shape':<19}{'dtype':<6}{'dir':<9}{'kplay':>7}{'eager':>7}{'compile':>8}{'wins':>7}"
          f"{'copy ms':>9}{'ulps k/e':>10}      cli")
    for op in args.ops.split(","):
        for direction in args.directions.split(","):
            for dtype in args.dtypes.split(","):
                for shape in args.shapes.split(","):
                    dims_text, _, dim_text = shape.partition("@")
                    dims = [int(v) for v in dims_text.split("x")]
                    dim = int(dim_text) if dim_text else -1
                    t = row(torch, kt, op, dims, dim, torch_dtypes[dtype], direction, args.rounds)
                    torch._dynamo.reset()
                    torch.cuda.empty_cache()
                    cli = (kplay_cli(args.kplay, op, dims_text, dim, dtype, direction, args.knobs)
                           if args.kplay else {})
                    rows_out.append({"op": op, "shape": shape, "dtype": dtype, "direction": direction, **t,
                                     "cli": cli})
                    cli_text = (cli.get("error", "")[:60] or f"{cli['pct']:.1f} {cli['verdict']} {cli['config']}"
                                if cli else "")
                    print(f"{op:<28}{shape:<19}{dtype:<6}{direction:<9}{t['kplay_pct']:>7.1f}{t['eager_pct']:>7.1f}"
                          f"{t['compile_pct']:>8.1f}{t['wins_eager']:>3}/{t['wins_compile']:<3}{t['copy_ms']:>9.4f}"
                          f" {ulps(t['kplay_ulps']):>8}/{t['eager_ulps']:<8.3g} {cli_text}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows_out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
