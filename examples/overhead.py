"""Per-call host overhead on a small tensor (default 4096 elements), in one process: the direct
kplay.forward (any array), the kplay.torch eager fast path, the torch custom op through the
dispatcher, and torch.selu. Host time per call = wall time of a burst of calls / count, with the
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
    out = torch.empty_like(x)
    cases = {
        "kplay.forward(act, x, out=out)": lambda: kplay.forward("selu", x, out=out),
        "kplay.torch.selu(x) (eager fast path)": lambda: kt.selu(x),
        "torch.ops.kplay.forward(x, 'selu')": lambda: torch.ops.kplay.forward(x, "selu"),
        "torch.selu(x)": lambda: torch.selu(x),
    }
    print(f"host time per call, {args.n} float32 elements, {torch.cuda.get_device_name()}")
    for name, fn in cases.items():
        print(f"  {name:<42} {per_call_us(fn, args.calls):6.2f} us")


if __name__ == "__main__":
    main()
