#!/usr/bin/env python3
"""The softmax family against torch on a CUDA GPU: for each rows x cols shape, dtype and direction,
kplay's row kernel (`kplay run`, its default config, checked against the host reference) and
torch's softmax eager and under torch.compile, each as a percentage of a device-to-device copy of
the bytes the operation must move, timed in the same process as it (forward: read x, write y;
backward from the saved output: read y and g, write grad_in). kplay runs in its own process (the
CLI), so each side's percentage is against its own same-run copy.

    python3 tools/softmax_table.py [--kplay PATH] [--shapes 65536x128,...] [--dtypes f32,bf16]
        [--directions forward,backward] [--ops softmax,log_softmax] [--db FILE] [--json FILE]

A shape runs over its last dimension, or over the one after '@': 32x21x512x512@1 is Softmax2d's
softmax over the channels of a contiguous [N, C, H, W] (kplay's strided rows, `kplay run --dim 1`).

--db FILE: kplay's configs from that kernel database (what `kplay autotune --shape` stored), as a
user's process gets them; without it the untuned default (`--no-db`).
--knobs "KNOBS": a config of one's own instead, as `kplay run` takes its knobs, e.g. --knobs "--row
cluster --cluster 16 --grid grid-stride --block 512 --per-thread 4" (the pipelined cluster kernel
against torch at the same shapes); a shape whose row the config cannot hold reports kplay's message.
"""
from __future__ import annotations

import argparse
import json
import re
import shlex
import statistics
import subprocess
import sys

SHAPES = "65536x128,32768x1024,16384x4096,8192x32768,4096x131072,4096x393216,1024x1048576"


def timed_ms(torch, fn, reps: int) -> float:
    """Median of `reps` calls timed with CUDA events, after warm-up calls."""
    for _ in range(3):
        fn()
    times = []
    for _ in range(reps):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


def torch_side(torch, op: str, dims: list, dim: int, dtype, direction: str, reps: int) -> dict:
    x = torch.randn(*dims, device="cuda", dtype=dtype) * 4
    func = {"softmax": torch.softmax, "log_softmax": torch.log_softmax}[op]
    dst = torch.empty_like(x)
    if direction == "forward":
        copy_src, moved = x, 2
        eager = lambda: func(x, dim)  # noqa: E731
        compiled_fn = torch.compile(lambda t: func(t, dim), dynamic=False)
        compiled = lambda: compiled_fn(x)  # noqa: E731
    else:
        y = func(x, dim)
        g = torch.randn_like(x)
        moved = 3
        backward = (torch.ops.aten._softmax_backward_data if op == "softmax" else
                    torch.ops.aten._log_softmax_backward_data)
        eager = lambda: backward(g, y, dim, dtype)  # noqa: E731
        compiled_fn = torch.compile(lambda gg, yy: backward(gg, yy, dim, dtype), dynamic=False)
        compiled = lambda: compiled_fn(g, y)  # noqa: E731
        copy_src = x
    copy_ms = timed_ms(torch, lambda: dst.copy_(copy_src), reps) * moved / 2  # the same bytes
    out = {"copy_ms": copy_ms}
    for name, fn in (("eager", eager), ("compile", compiled)):
        ms = timed_ms(torch, fn, reps)
        out[name + "_ms"] = ms
        out[name + "_pct"] = 100 * copy_ms / ms
    return out


def kplay_side(kplay: str, op: str, shape: str, dim: int, dtype: str, direction: str, db: str | None,
               knobs: str = "") -> dict:
    cmd = [kplay, "run", "--act", op, "--shape", shape, "--dim", str(dim), "--dtype", dtype, "--direction", direction]
    cmd += ["--db", db] if db else ["--no-db"]
    cmd += shlex.split(knobs)
    r = subprocess.run(cmd, capture_output=True, text=True)
    text = r.stdout + r.stderr
    kernel = re.search(r"^kernel:\s+([0-9.]+) ms", text, re.M)
    ratio = re.search(r"^ratio:\s+([0-9.]+) %", text, re.M)
    config = re.search(r"^config: (.*)$", text, re.M)
    verdict = re.search(r"^verdict: (\w+)", text, re.M)
    if r.returncode != 0 or not (kernel and ratio):
        return {"error": f"exit {r.returncode}: " + text.strip().splitlines()[-1] if text.strip() else "no output"}
    return {"ms": float(kernel.group(1)), "pct": float(ratio.group(1)), "config": config.group(1) if config else "",
            "verdict": verdict.group(1) if verdict else "?"}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kplay", default="kplay")
    ap.add_argument("--shapes", default=SHAPES)
    ap.add_argument("--dtypes", default="f32,bf16")
    ap.add_argument("--directions", default="forward,backward")
    ap.add_argument("--ops", default="softmax")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--db")
    ap.add_argument("--json")
    ap.add_argument("--knobs", default="")
    args = ap.parse_args()
    import torch

    torch_dtypes = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}
    rows_out = []
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}; % of a same-run copy of the bytes moved")
    print(f"{'op':<12}{'shape':<19}{'dtype':<6}{'dir':<9}{'kplay %':>8}{'eager %':>8}{'compile %':>10}"
          f"{'kplay ms':>10}{'eager ms':>10}{'compile ms':>11}  verdict")
    for op in args.ops.split(","):
        for direction in args.directions.split(","):
            for dtype in args.dtypes.split(","):
                for shape in args.shapes.split(","):
                    dims_text, _, dim_text = shape.partition("@")
                    dims = [int(v) for v in dims_text.split("x")]
                    dim = int(dim_text) if dim_text else -1
                    k = kplay_side(args.kplay, op, dims_text, dim, dtype, direction, args.db, args.knobs)
                    t = torch_side(torch, op, dims, dim, torch_dtypes[dtype], direction, args.reps)
                    torch._dynamo.reset()
                    row = {"op": op, "shape": shape, "dtype": dtype, "direction": direction, "kplay": k, "torch": t}
                    rows_out.append(row)
                    if "error" in k:
                        kp, kms, verdict = "-", "-", k["error"][:60]
                    else:
                        kp, kms, verdict = f"{k['pct']:.1f}", f"{k['ms']:.4f}", k["verdict"] + " " + k["config"]
                    print(f"{op:<12}{shape:<19}{dtype:<6}{direction:<9}{kp:>8}{t['eager_pct']:>8.1f}"
                          f"{t['compile_pct']:>10.1f}{kms:>10}{t['eager_ms']:>10.4f}{t['compile_ms']:>11.4f}  {verdict}",
                          flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows_out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
