"""Per-call host overhead on a small tensor (default 4096 elements), in one process: the direct
kplay.forward (any array), the kplay.torch eager fast path (a cached prepared launcher), the same
with autograd (the eager torch.autograd.Function), the torch custom op through the dispatcher,
a bare prepared launcher call (kplay's floor from Python), and torch.selu beside each. Host time per call = wall time of a burst of calls / count, with the
GPU queue kept from filling by a sync every burst; also the CUDA-event time per call.

    python examples/overhead.py [--n 4096] [--calls 2000]
"""
import argparse
import statistics
import time

import torch

import kplay
import kplay.torch as kt


def per_call_us(fn, calls, rounds=7):
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    results = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        results.append((t1 - t0) / calls * 1e6)
    return statistics.median(results)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--calls", type=int, default=2000)
    args = ap.parse_args()
    x = torch.randn(args.n, device="cuda")
    xg = x.clone().requires_grad_()
    out = torch.empty_like(x)
    launcher = kplay._core.Launcher.cuda("selu", kplay._core.F32, False, False, x.get_device())
    stream = torch.cuda.current_stream().cuda_stream
    xp, op, n = x.data_ptr(), out.data_ptr(), x.numel()
    cases = {
        "Launcher.launch(ints) (prepared, vouched)": lambda: launcher.launch(xp, 0, op, n, stream, True),
        "kplay.forward(act, x, out=out)": lambda: kplay.forward("selu", x, out=out),
        "kplay.torch.selu(x) (eager fast path)": lambda: kt.selu(x),
        "torch.ops.kplay.forward(x, 'selu')": lambda: torch.ops.kplay.forward(x, "selu"),
        "torch.selu(x)": lambda: torch.selu(x),
        "kplay.torch.selu(x), x requires grad": lambda: kt.selu(xg),
        "torch.selu(x), x requires grad": lambda: torch.selu(xg),
    }
    print(f"host time per call, {args.n} float32 elements, {torch.cuda.get_device_name()}")
    times = {}
    for name, fn in cases.items():
        times[name] = per_call_us(fn, args.calls)
        print(f"  {name:<42} {times[name]:6.2f} us")
    ratio = times["kplay.torch.selu(x) (eager fast path)"] / times["torch.selu(x)"]
    print(f"kplay.torch.selu / torch.selu: {ratio:.2f} (goal <= 1, and under 5 us)")


if __name__ == "__main__":
    main()
