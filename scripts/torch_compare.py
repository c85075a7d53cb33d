#!/usr/bin/env python3
"""torch.nn.functional activations against a same-run device copy, for side-by-side reading with
`kplay run` / scripts/gpu_issue9.sh. Rotated buffers (enough sets to cover 4x the L2), CUDA events,
median of 15 after 3 warm-ups. Backward is autograd's time minus the forward's (an estimate of
the backward kernel alone; torch has no public per-activation backward call). Prints one tab-separated row per case:
    torch  ACT  DIRECTION  DTYPE  RATIO_%  KERNEL_MS  COPY_MS
Usage: scripts/torch_compare.py [--acts selu,relu] [--dtypes f32,f16,bf16,f64] [--shape 4096x393216]
       [--directions forward,backward]
"""
import argparse
import statistics

import torch
import torch.nn.functional as F

DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "f64": torch.float64}


def timed(fn, sets, warmup=3, repeats=15):
    for _ in range(warmup):
        for s in sets:
            fn(s)
    samples = []
    for _ in range(repeats):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for s in sets:
            fn(s)
        b.record()
        torch.cuda.synchronize()
        samples.append(a.elapsed_time(b) / len(sets))
    return statistics.median(samples)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--acts", default="selu,relu")
    p.add_argument("--dtypes", default="f32,f16,bf16,f64")
    p.add_argument("--directions", default="forward,backward")
    p.add_argument("--shape", default="4096x393216")
    a = p.parse_args()
    shape = [int(v) for v in a.shape.split("x")]
    n = 1
    for v in shape:
        n *= v
    l2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 64 << 20)
    for dt_name in a.dtypes.split(","):
        dt = DTYPES[dt_name]
        nbytes = n * torch.tensor([], dtype=dt).element_size()
        for direction in a.directions.split(","):
            streams = 2 if direction == "forward" else 3
            count = max(1, min(16, -(-4 * l2 // (streams * nbytes))))
            free = torch.cuda.mem_get_info()[0]
            count = max(1, min(count, int(free * 0.8 // (streams * nbytes + nbytes))))
            sets = [dict(x=torch.randn(shape, device="cuda", dtype=dt), g=torch.randn(shape, device="cuda", dtype=dt)
                         if direction == "backward" else None, out=torch.empty(shape, device="cuda", dtype=dt))
                    for _ in range(count)]
            scratch = torch.empty(shape, device="cuda", dtype=dt)
            copy_ms = timed(lambda s: scratch.copy_(s["x"]), sets)
            copy_gbps = 2 * nbytes / (copy_ms * 1e6)
            for act in a.acts.split(","):
                fn = getattr(F, act)
                if direction == "forward":
                    def run(s, fn=fn):
                        return fn(s["x"])
                else:
                    def run(s, fn=fn):
                        x = s["x"].detach().requires_grad_(True)
                        return torch.autograd.grad(fn(x), x, s["g"])[0]
                ms = timed(run, sets)
                moved = streams * nbytes
                if direction == "backward":  # autograd also runs the forward: report it, do not hide it
                    fwd_ms = timed(lambda s: fn(s["x"]), sets)
                    ms = max(ms - fwd_ms, 1e-9)
                ratio = moved / (ms * 1e6) / copy_gbps
                print("torch\t%s\t%s\t%s\t%.1f\t%.4f\t%.4f" % (act, direction, dt_name, 100 * ratio, ms, copy_ms),
                      flush=True)
            del sets, scratch
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
