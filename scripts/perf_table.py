"""kplay against torch and a device-to-device copy, in one process, for every activation x dtype x
direction: the performance table of docs/benchmarks.md (issue 8) and the untuned-default
comparison with torch (issue 9). Needs the kplay Python package and torch with CUDA.

Each case times kplay (its untuned default unless KPLAY_DB holds a tuning), torch, and a copy of
the same bytes, interleaved (kplay, torch, copy, kplay, ...; --order), median of --repeat after --warmup, with
CUDA events. --output allocated (the default): each of the three allocates its output as a user's call
does (kplay.forward(act, x), torch's own call, x.clone()), so torch's caching allocator hands all
three the same block. --output preallocated: kplay and the copy write one buffer made up front
while torch writes its own, as the tables before session 27 did. Where the output lies against the
input moves a kernel's time by up to a point on the H100 (docs/benchmarks.md, session 27), so
preallocated compares placements as much as kernels. Ratios are bandwidth over the copy's: forward moves 2 streams like the copy, backward
3 (grad, saved, grad_in), so its ratio is 1.5 x copy_ms / kernel_ms. torch's backward is timed as
its autograd backward alone (the forward is run before the timed region).
Prints one tab-separated row per case: ACT DIR DTYPE KPLAY_% TORCH_% WINS KPLAY_MS TORCH_MS COPY_MS
DIFF_TORCH_ULP SM_MHZ SM_MHZ_MIN POWER_W CAPPED_%.
WINS: in how many of the --repeat interleaved rounds kplay's kernel took less time than torch's; a
gap of a few tenths between the medians with WINS near half the rounds is noise, not a loss.
DIFF_TORCH_ULP: the largest difference between kplay and torch on the first million elements, in
ulps of torch's result. A guard against a wrong table, not kplay's error: where torch's formula
cancels (gelu's 1 + erf for x < 0 in float32) it is torch's error. `kplay check` measures kplay's.
SM_MHZ, SM_MHZ_MIN, POWER_W, CAPPED_%: while the case's rounds ran (kplay, torch and copy together),
the median and lowest SM clock, the highest power draw, and the share of samples with a power or
thermal clock limit active (scripts/gpu_clock_monitor.py; "-" without nvidia-smi). On an H200 the
FP64-heavy rows run under its 700 W cap at 1400-1750 MHz (docs/benchmarks.md, session 20).
Usage: perf_table.py [--acts all|'a;b(k=v, ...)'] [--dtypes f32,f16,bf16,f64] [--directions forward,backward]
                     [--shape 4096x393216] [--repeat 15] [--warmup 3]
                     [--order kplay-first|torch-first|alternate] [--timing idle|queued]
                     [--output allocated|preallocated]
"""
import argparse
import math
import sys
import time

import torch
import torch.nn.functional as F

import kplay
from gpu_clock_monitor import ClockMonitor

DT = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "f64": torch.float64}
EPS = {"f32": 2.0 ** -23, "f16": 2.0 ** -10, "bf16": 2.0 ** -7, "f64": 2.0 ** -52}

# The activations of "--acts all", as kplay text (torch.nn's defaults; threshold has none in torch).
ALL = [
    "relu", "relu6", "leaky_relu", "elu", "celu", "selu", "gelu", "gelu(approximate=tanh)", "silu", "mish",
    "softplus", "softsign", "sigmoid", "tanh", "hardtanh", "hardsigmoid", "hardswish", "logsigmoid",
    "tanhshrink", "softshrink", "hardshrink", "threshold(threshold=0.1, value=20)",
]


def torch_fn(spec):
    """kplay activation text, e.g. "softplus(beta=2, threshold=10)", -> the torch callable with the same
    parameters (kplay names its parameters as torch.nn.functional does)."""
    name, _, rest = spec.partition("(")
    name = name.strip()
    fn = {"sigmoid": torch.sigmoid, "tanh": torch.tanh}.get(name) or getattr(F, name, None)
    if fn is None or name.startswith("_"):
        sys.exit("perf_table.py: no torch function for activation %r" % spec)
    kw = {}
    for item in filter(None, (v.strip() for v in rest.rstrip(")").split(","))):
        key, eq, val = item.partition("=")
        if not eq:
            sys.exit("perf_table.py: parameter %r of %r is not key=value" % (item, spec))
        try:
            kw[key.strip()] = float(val)
        except ValueError:
            kw[key.strip()] = val.strip()
    return lambda x: fn(x, **kw)


ORDERS = {
    # the callables' order in each round, by round number: kplay is 0, torch 1, the copy 2
    "kplay-first": lambda it: (0, 1, 2),
    "torch-first": lambda it: (1, 0, 2),
    # each of kplay and torch follows the copy in one round and the other in the next
    "alternate": lambda it: (0, 1, 2) if it % 2 == 0 else (1, 0, 2),
}


# --timing queued: a spin of this many SM cycles (0.5-0.7 ms) ahead of each timed call, longer
# than any call's host time, so the call is queued before its start event fires.
QUEUE_CYCLES = 1_000_000


def interleaved_ms(fns, warmup, repeat, order="kplay-first", timing="idle"):
    """Interleaved timing of several callables; returns each one's list of ms, round by round.
    timing "idle": the start event is recorded on an idle GPU, so each time includes the call's
    host time up to its launch (a few µs: a few tenths of a percent of a 16-bit row at the default
    shape). "queued": the GPU spins while the call is issued, so the events bracket its kernels."""
    times = [[] for _ in fns]
    for it in range(warmup + repeat):
        for k in ORDERS[order](it):
            fn = fns[k]
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            if timing == "queued":
                torch.cuda._sleep(QUEUE_CYCLES)
            a.record()
            fn()
            b.record()
            b.synchronize()
            if it >= warmup:
                times[k].append(a.elapsed_time(b))
    return times


def median(t):
    return sorted(t)[len(t) // 2]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--acts", default="all")
    p.add_argument("--dtypes", default="f32,f16,bf16,f64")
    p.add_argument("--directions", default="forward,backward")
    p.add_argument("--shape", default="4096x393216")
    p.add_argument("--repeat", type=int, default=15)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--order", choices=sorted(ORDERS), default="kplay-first")
    p.add_argument("--timing", choices=("idle", "queued"), default="idle")
    p.add_argument("--output", choices=("allocated", "preallocated"), default="allocated")
    a = p.parse_args()
    acts = ALL if a.acts == "all" else [v.strip() for v in a.acts.split(";") if v.strip()]
    fns = {act: torch_fn(act) for act in acts}  # unknown names fail here, before any timing
    shape = tuple(int(v) for v in a.shape.split("x"))
    print("device: %s, torch %s, kplay %s, order %s, timing %s, output %s" % (
        torch.cuda.get_device_name(), torch.__version__, kplay.__version__, a.order, a.timing, a.output))
    print("ACT\tDIR\tDTYPE\tKPLAY_%\tTORCH_%\tWINS\tKPLAY_MS\tTORCH_MS\tCOPY_MS\tDIFF_TORCH_ULP"
          "\tSM_MHZ\tSM_MHZ_MIN\tPOWER_W\tCAPPED_%", flush=True)
    uuid = getattr(torch.cuda.get_device_properties(torch.cuda.current_device()), "uuid", None)
    monitor = ClockMonitor("GPU-%s" % uuid if uuid is not None else torch.cuda.current_device())
    for dname in a.dtypes.split(","):
        dt = DT[dname]
        g = torch.Generator(device="cuda").manual_seed(1)
        x = torch.randn(shape, device="cuda", dtype=dt, generator=g) * 3  # mixed signs, both tails
        # preallocated: kplay's output and the copy's destination, made once
        out = torch.empty_like(x) if a.output == "preallocated" else None
        for direction in a.directions.split(","):
            grad = torch.randn(shape, device="cuda", dtype=dt, generator=g) if direction == "backward" else None
            for act in acts:
                fn = fns[act]
                y = xr = ref = mine = kk = rr = None  # freed after each case, also when it fails (out of memory)
                try:
                    if direction == "forward":
                        kfn = lambda: kplay.forward(act, x, out=out)
                        tfn = lambda: fn(x)
                        scale = 1.0
                    else:
                        kfn = lambda: kplay.backward(act, grad, x, grad_in=out)
                        xr = x.detach().requires_grad_(True)
                        y = fn(xr)
                        tfn = lambda: torch.autograd.grad(y, xr, grad, retain_graph=True)
                        scale = 1.5
                    cfn = (lambda: out.copy_(x)) if out is not None else (lambda: x.clone())
                    kfn()
                    torch.cuda.synchronize()
                    t0 = time.monotonic()
                    kt, tt, ct = interleaved_ms([kfn, tfn, cfn], a.warmup, a.repeat, a.order, a.timing)
                    clocks = monitor.summary(t0, time.monotonic())
                    k_ms, t_ms, c_ms = median(kt), median(tt), median(ct)
                    wins = sum(1 for k, t in zip(kt, tt) if k < t)
                    mine = kfn()  # a preallocated out held the copy
                    ref = tfn() if direction == "forward" else tfn()[0]
                    kk = mine.reshape(-1)[: 1 << 20].double()
                    rr = ref.reshape(-1)[: 1 << 20].double()
                    both = torch.isfinite(kk) & torch.isfinite(rr)
                    ulp = ((kk - rr).abs()[both] / (rr.abs()[both].clamp_min(torch.finfo(dt).tiny) * EPS[dname])).max().item()
                    clock_cols = "%d\t%d\t%.0f\t%.0f" % (clocks[0], clocks[1], clocks[2], 100 * clocks[3]) if clocks else "-\t-\t-\t-"
                    print("%s\t%s\t%s\t%.1f\t%.1f\t%d/%d\t%.4f\t%.4f\t%.4f\t%.3g\t%s" % (
                        act, direction, dname, 100 * scale * c_ms / k_ms, 100 * scale * c_ms / t_ms, wins, a.repeat,
                        k_ms, t_ms, c_ms, ulp, clock_cols), flush=True)
                except Exception as e:  # keep going: one failing case must not hide the table
                    print("%s\t%s\t%s\tERROR %s" % (act, direction, dname, str(e).splitlines()[0][:160]), flush=True)
                y = xr = ref = mine = kk = rr = None
                torch.cuda.empty_cache()
            del grad
        del x, out
        torch.cuda.empty_cache()
    monitor.close()


if __name__ == "__main__":
    sys.exit(main())
